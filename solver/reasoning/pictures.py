"""The compatibility matrix of two fields: `compatibility` computes it (for every pair of values
of two fields, whether the request with both pinned holds under the rules, and for a pair that does
not, the minimal reason) into a `Matrix`, which writes its own JSON document; its other formats
(text, Markdown, CSV, HTML) are `solver/render/matrix.py`'s, through the formats table. A cell asks
the rules directly, as `check --strict` would: a pair that only works because an adjustment would
replace one of its values is shown as not working, with that rule as the reason. Must not import
networkx or python-constraint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from solver.budget import Budget
from solver.errors import InputIssue, InvalidInput
from solver.model import Pack, Pin, Scalar
from solver.reasoning.conflicts import Item, minimal_reason
from solver.values import show as _show

__all__ = ["Matrix", "compatibility"]


@dataclass(frozen=True)
class Matrix:
    """Rows × columns; `reasons[(row, col)]` is the minimal reason of each pair that fails, and
    `warned[(row, col)]` the warn rules a working pair breaks (the launcher takes it, and it is
    expected to fail)."""

    pack: Pack
    row_field: str
    col_field: str
    rows: tuple[Scalar, ...]
    cols: tuple[Scalar, ...]
    reasons: dict[tuple[Scalar, Scalar], tuple[Item, ...]]
    warned: dict[tuple[Scalar, Scalar], tuple[str, ...]] = field(default_factory=dict)

    def ok(self, row: Scalar, col: Scalar) -> bool:
        return (row, col) not in self.reasons

    def shown_reason(self, row: Scalar, col: Scalar) -> tuple[Item, ...]:
        """The reason of a failing cell without the cell's own row and column values (its
        position already says them), so one footnote serves a whole row or column."""
        axes = {(self.row_field, row), (self.col_field, col)}
        return tuple(
            i for i in self.reasons[(row, col)] if not (i.kind == "pin" and (i.name, i.value) in axes)
        )

    def footnotes(self) -> list[tuple[Item, ...]]:
        """The distinct shown reasons, first seen first (row by row): what text and Markdown number."""
        seen: list[tuple[Item, ...]] = []
        for row in self.rows:
            for col in self.cols:
                if not self.ok(row, col) and self.shown_reason(row, col) not in seen:
                    seen.append(self.shown_reason(row, col))
        return seen

    def warnings(self) -> list[tuple[str, ...]]:
        """The distinct warn-rule sets of working cells, first seen first (numbered after the
        footnotes of the failing cells)."""
        seen: list[tuple[str, ...]] = []
        for row in self.rows:
            for col in self.cols:
                rules = self.warned.get((row, col))
                if rules and rules not in seen:
                    seen.append(rules)
        return seen

    def to_json(self) -> dict[str, Any]:
        cells = []
        for row in self.rows:
            for col in self.cols:
                cell: dict[str, Any] = {"row": row, "column": col, "ok": self.ok(row, col)}
                if not cell["ok"]:
                    cell["reason"] = _reason_json(self.reasons[(row, col)])
                elif (row, col) in self.warned:
                    cell["warned"] = {"rules": list(self.warned[(row, col)])}
                cells.append(cell)
        return {
            "schema": 1,
            "status": "matrix",
            "pack": {"name": self.pack.name, "version": self.pack.version},
            "row": {"field": self.row_field, "values": list(self.rows)},
            "column": {"field": self.col_field, "values": list(self.cols)},
            "cells": cells,
        }


def _reason_json(items: Sequence[Item]) -> dict[str, Any]:
    return {
        "pins": [{"field": i.name, "value": i.value, "source": i.source} for i in items if i.kind == "pin"],
        "rules": [i.name for i in items if i.kind == "rule"],
    }


def compatibility(
    pack: Pack,
    row_field: str,
    col_field: str,
    pins: Mapping[str, Pin] | None = None,
    *,
    budget: Budget | None = None,
) -> Matrix:
    """Which (row value, column value) pairs hold under the rules with `pins`; why the others fail.

    Raises `InvalidInput` when a field is unknown, both are the same, or `pins` fixes one of them
    (the matrix varies it), and `Unsatisfiable` when `pins` alone already conflict; `budget`: the
    search steps the whole matrix may spend (`solver.budget`), else `SolverBudgetExceeded`.
    """
    from solver import progress
    from solver.reasoning.resolution import plan_for, resolve_pins

    pins = dict(pins or {})
    issues = []
    for name in (row_field, col_field):
        if name not in pack.fields:
            from solver.inputs.pins import _unknown_field

            issues.append(_unknown_field(pack, name, None))
        elif name in pins:
            issues.append(
                InputIssue(
                    field=name,
                    value=pins[name].value,
                    message=(
                        f"{name} is a matrix axis, so the matrix tries each of its values; "
                        f"drop --set {name}={_show(pins[name].value)}"
                    ),
                )
            )
    if row_field == col_field and not issues:
        issues.append(
            InputIssue(
                field=col_field,
                value=None,
                message=f"the two matrix fields must differ (both are {row_field})",
            )
        )
    if issues:
        raise InvalidInput(issues)
    cp = plan_for(pack).within(budget).compiled
    values = {n: p.value for n, p in pins.items()}
    if cp.satisfiable(values, task="checking the matrix inputs") is None:
        # raises Unsatisfiable with the full explanation
        resolve_pins(pack, pins, reasons=False, budget=cp.budget)
    sources = {n: p.source for n, p in pins.items()}
    kind = {n: "fact" if pack.fields[n].kind == "fact" else "user" for n in (row_field, col_field)}
    rows, cols = cp.domains[row_field], cp.domains[col_field]

    def why(name: str, value: Scalar, background: Mapping[str, Scalar]) -> tuple[Item, ...]:
        found = minimal_reason(cp, name, value, background, {**sources, **kind})
        return tuple(found or ())

    # A value the inputs exclude on its own fails its whole row or column, for its own reason
    # (the other axis plays no part in it, so a per-cell reason would not find it).
    def dead(name: str, value: Scalar) -> bool:
        progress.advance()
        return cp.satisfiable({**values, name: value}, task="filling the matrix") is None

    progress.phase("rows and columns", len(rows) + len(cols))  # a terminal's progress line
    dead_rows = {r: why(row_field, r, values) for r in rows if dead(row_field, r)}
    dead_cols = {c: why(col_field, c, values) for c in cols if dead(col_field, c)}
    reasons: dict[tuple[Scalar, Scalar], tuple[Item, ...]] = {}
    progress.phase("cells", len(rows) * len(cols))
    for col in cols:
        background = {**values, col_field: col}
        for row in rows:
            progress.advance()
            if row in dead_rows or col in dead_cols:
                reasons[(row, col)] = dead_rows.get(row) or dead_cols[col]
                continue
            if cp.satisfiable({**background, row_field: row}, task="filling the matrix"):
                continue
            reasons[(row, col)] = why(row_field, row, background)
    warned = _warned(
        pack, values, row_field, col_field, [(r, c) for c in cols for r in rows if (r, c) not in reasons]
    )
    return Matrix(pack, row_field, col_field, tuple(rows), tuple(cols), reasons, warned)


def _warned(
    pack: Pack,
    values: Mapping[str, Scalar],
    row_field: str,
    col_field: str,
    cells: list[tuple[Scalar, Scalar]],
) -> dict[tuple[Scalar, Scalar], tuple[str, ...]]:
    """The warn rules each working cell breaks whatever the fields left open hold."""
    from solver.reasoning.resolution import plan_for

    plan = plan_for(pack)
    rules = dict.fromkeys([*plan.warn_rules.get(row_field, ()), *plan.warn_rules.get(col_field, ())])
    conditions = plan.compiled.warn_rules
    settled = plan.settled({n: v for n, v in values.items() if n not in (row_field, col_field)})
    out: dict[tuple[Scalar, Scalar], tuple[str, ...]] = {}
    for row, col in cells:
        cell = {**settled, row_field: row, col_field: col}
        broken = tuple(rid for rid in rules if conditions[rid].partial(cell) is False)
        if broken:
            out[(row, col)] = broken
    return out
