"""Pictures of a pack: the compatibility matrix of two fields, and the field graph as SVG.

Owns `compatibility` (for every pair of values of two fields, whether the request with both pinned
holds under the rules, and for a pair that does not, the minimal reason), its renderings (text,
Markdown, CSV, HTML, JSON), the `confsolve matrix` command, and `dot_to_svg` (Graphviz `dot`, when
it is on PATH). A cell asks the rules directly, as `check --strict` would: a pair that only works
because an adjustment would replace one of its values is shown as not working, with that rule as
the reason. Uses the public API; must not import networkx or python-constraint.
"""

from __future__ import annotations

import csv
import html
import io
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from solver.budget import Budget
from solver.errors import InputIssue, InvalidInput
from solver.model import Pack, Pin, Scalar
from solver.reasoning.conflicts import Item, minimal_reason
from solver.values import show as _show

__all__ = ["FORMATS", "Matrix", "compatibility", "dot_to_svg", "render"]

FORMATS = ("text", "markdown", "csv", "html")
OK, NO, WARN = "✓", "✗", "⚠"
DOT_TIMEOUT_SECONDS = 60.0


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


# --- renderings -----------------------------------------------------------------------------


def _reason_text(pack: Pack, items: Sequence[Item]) -> str:
    parts = []
    for item in items:
        if item.kind == "pin":
            parts.append(f"{item.name}={_show(item.value)}" if item.value is not None else item.name)
        else:
            parts.append(f"{item.name} ({pack.rule(item.name).because.rstrip('.')})")
    return "; ".join(parts) or "the inputs exclude it"


def _grid(m: Matrix, mark: Callable[[Scalar, Scalar], str]) -> list[list[str]]:
    head = [f"{m.row_field} \\ {m.col_field}"] + [_show(c) for c in m.cols]
    return [head] + [[_show(r)] + [mark(r, c) for c in m.cols] for r in m.rows]


def _warning_text(pack: Pack, rules: Sequence[str]) -> str:
    return "; ".join(f"{rid} ({pack.rule(rid).because.rstrip('.')})" for rid in rules)


def _marker(m: Matrix) -> Callable[[Scalar, Scalar], str]:
    notes = m.footnotes()
    number = {reason: i for i, reason in enumerate(notes, 1)}
    warn_number = {rules: i for i, rules in enumerate(m.warnings(), len(notes) + 1)}

    def mark(row: Scalar, col: Scalar) -> str:
        if not m.ok(row, col):
            return f"{NO} [{number[m.shown_reason(row, col)]}]"
        rules = m.warned.get((row, col))
        return f"{WARN} [{warn_number[rules]}]" if rules else OK

    return mark


def _footnote_lines(m: Matrix, style: str) -> list[str]:
    texts = [_reason_text(m.pack, reason) for reason in m.footnotes()]
    texts += [f"{WARN} works, with a warning: {_warning_text(m.pack, rules)}" for rules in m.warnings()]
    return [f"{i}. {text}" if style == "markdown" else f"  [{i}] {text}" for i, text in enumerate(texts, 1)]


def render(m: Matrix, fmt: str) -> str:
    """The matrix as text, markdown, csv or html (each ✗ with its minimal reason)."""
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([_cell(m.row_field), _cell(m.col_field), "resolves", "reason"])
        for row in m.rows:
            for col in m.cols:
                ok = m.ok(row, col)
                reason = "" if ok else _reason_text(m.pack, m.reasons[(row, col)])
                if ok and (row, col) in m.warned:
                    reason = f"warning: {_warning_text(m.pack, m.warned[(row, col)])}"
                writer.writerow([_cell(_show(row)), _cell(_show(col)), "yes" if ok else "no", _cell(reason)])
        return out.getvalue()
    if fmt == "html":
        return _html(m)
    grid = _grid(m, _marker(m))
    if fmt == "markdown":
        lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in grid]
        lines.insert(1, "|" + "---|" * len(grid[0]))
        notes = _footnote_lines(m, "markdown")
        return "\n".join(lines + (["", *notes] if notes else [])) + "\n"
    if fmt == "text":
        widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in grid
        ]
        notes = _footnote_lines(m, "text")
        header = "why not, and warnings:" if m.warnings() else "why not:"
        return "\n".join(lines + (["", header, *notes] if notes else [])) + "\n"
    raise ValueError(f"unknown matrix format {fmt!r}; use one of {', '.join(FORMATS)}")


_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run: one that starts like a formula (=, +, -, @, a tab
    or a carriage return) gets a leading apostrophe, unless it is a plain number (OWASP's advice
    on CSV injection)."""
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def _html(m: Matrix) -> str:
    esc = html.escape
    title = f"{m.pack.name} {m.pack.version}: {m.row_field} × {m.col_field}"
    lines = [
        "<!doctype html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 8px;"
        "text-align:center}td.ok{background:#dfd}td.no{background:#fdd;cursor:help}"
        "td.warn{background:#ffd;cursor:help}</style>",
        "</head><body>",
        f"<table><caption>{esc(title)}</caption>",
        "<tr><th>"
        + esc(f"{m.row_field} \\ {m.col_field}")
        + "</th>"
        + "".join(f"<th>{esc(_show(c))}</th>" for c in m.cols)
        + "</tr>",
    ]
    for row in m.rows:
        cells = []
        for col in m.cols:
            if m.ok(row, col) and (row, col) in m.warned:
                why = esc(_warning_text(m.pack, m.warned[(row, col)]), quote=True)
                cells.append(f'<td class="warn" title="{why}">{WARN}</td>')
            elif m.ok(row, col):
                cells.append(f'<td class="ok">{OK}</td>')
            else:
                why = esc(_reason_text(m.pack, m.reasons[(row, col)]), quote=True)
                cells.append(f'<td class="no" title="{why}">{NO}</td>')
        lines.append(f"<tr><th>{esc(_show(row))}</th>{''.join(cells)}</tr>")
    lines += ["</table>", "</body></html>"]
    return "\n".join(lines) + "\n"


# --- graph as SVG ---------------------------------------------------------------------------


def dot_to_svg(dot_text: str) -> str:
    """Render Graphviz DOT to SVG with `dot`; `InvalidInput` (exit 2) when `dot` is missing."""
    exe = shutil.which("dot")
    if exe is None:
        raise InvalidInput(
            [
                InputIssue(
                    field="format",
                    value="svg",
                    message=(
                        "--format svg needs Graphviz's `dot` on PATH (apt install graphviz / brew install "
                        "graphviz); or use --format dot and render it elsewhere"
                    ),
                )
            ]
        )
    try:
        done = subprocess.run(
            [exe, "-Tsvg"],
            input=dot_text,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",  # any bytes dot prints
            timeout=DOT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InvalidInput(
            [InputIssue(field="format", value="svg", message=f"running {exe} failed: {exc}")]
        ) from exc
    if done.returncode != 0:
        raise InvalidInput(
            [
                InputIssue(
                    field="format",
                    value="svg",
                    message=(f"{exe} -Tsvg failed (exit {done.returncode}): {done.stderr.strip()[:500]}"),
                )
            ]
        )
    return done.stdout
