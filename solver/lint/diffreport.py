"""The answer of `confsolve diff`: its records (groups of configurations, resolution changes, the
whole diff) and how each is written, as text and as the JSON document.

Only the standard library and `solver.values`; `solver.lint.diff` computes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from dataclasses import field as _field  # ResolutionChange has an attribute named `field`
from typing import TYPE_CHECKING, Any

from solver.values import count_text, exact_count
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.model import Scalar

__all__ = ["Direction", "Group", "PackDiff", "ResolutionChange"]


def _pins(values: Mapping[str, Scalar]) -> str:
    return ", ".join(f"{n}={_show(v)}" for n, v in values.items())


@dataclass
class Group:
    """Configurations that one side accepts and the other rejects, for one reason."""

    kind: str  # "rule" (a rule of the rejecting pack) | "domain" (a value it does not have)
    id: str
    count: int | None
    example: dict[str, Scalar] | None = None
    reason: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "count": exact_count(self.count),
            "example": self.example,
            "reason": self.reason,
        }


@dataclass
class Direction:
    """Valid in one pack and invalid in the other: the exact count and its groups."""

    count: int | None
    groups: list[Group] = field(default_factory=list)
    other: int | None = 0
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "count": exact_count(self.count),
            "groups": [g.to_json() for g in self.groups],
            "other": exact_count(self.other),
        }
        if self.note:
            doc["note"] = self.note
        return doc


@dataclass
class ResolutionChange:
    """Requests (facts) on which a field resolves to another value in the new pack."""

    field: str
    old: Scalar
    new: Scalar
    count: int
    where: dict[str, Scalar]
    example: dict[str, Scalar]
    old_by: str | None
    new_by: str | None
    models: list[str] = _field(default_factory=list)  # the real models it happens on, if any

    def to_json(self) -> dict[str, Any]:
        return {
            "models": self.models,
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "count": exact_count(self.count),
            "where": self.where,
            "example": self.example,
            "old_by": self.old_by,
            "new_by": self.new_by,
        }

    def text(self) -> str:
        where = f"with {_pins(self.where)}, " if self.where else ""
        why = f" ({self.old_by or 'default'} -> {self.new_by or 'default'})"
        on = ","
        if self.models:
            shown = ", ".join(self.models[:5]) + (
                f" and {len(self.models) - 5} more" if len(self.models) > 5 else ""
            )
            on = f" on {len(self.models)} model(s): {shown};"
        return (
            f"{where}{self.field} now resolves to {_show(self.new)} instead of "
            f"{_show(self.old)} [{self.count} request(s){on} e.g. {_pins(self.example)}]{why}"
        )


@dataclass
class PackDiff:
    """Everything `confsolve diff` reports."""

    old: dict[str, str]
    new: dict[str, str]
    pins: dict[str, Scalar]
    fields: dict[str, Any]
    rules: dict[str, list[str]]
    preferences: dict[str, list[str]]
    shared: list[str]
    projected: bool
    old_count: int | None
    new_count: int | None
    invalidated: Direction
    validated: Direction
    requests: dict[str, Any]
    changes: list[ResolutionChange]
    identical: bool = False  # the same files byte for byte: nothing to compare

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "status": "diffed",
            "old": self.old,
            "new": self.new,
            "pins": self.pins,
            "fields": self.fields,
            "rules": self.rules,
            "preferences": self.preferences,
            "shared_fields": len(self.shared),
            "projected": self.projected,
            "old_count": exact_count(self.old_count),
            "new_count": exact_count(self.new_count),
            "invalidated": self.invalidated.to_json(),
            "validated": self.validated.to_json(),
            "requests": self.requests,
            "resolution_changes": [c.to_json() for c in self.changes],
            "comparable": self.comparable(),
            "identical": self.identical,
        }

    def comparable(self) -> dict[str, bool]:
        """What the diff could compare: both packs' valid configurations (counted within the
        budget), resolutions (at least one request resolves under both) and, when models were
        given, models (at least one is read by both packs)."""
        out = {
            "configurations": self.identical or (self.old_count is not None and self.new_count is not None),
            "resolutions": self.identical or bool(self.requests.get("compared")),
        }
        if "models" in self.requests:
            out["models"] = self.identical or bool(self.requests["models"]["read_by_both"])
        return out

    def _configuration_lines(self) -> list[str]:
        if self.old_count is None or self.new_count is None:
            sides = [s for s, c in (("old", self.old_count), ("new", self.new_count)) if c is None]
            lines = [
                f"valid configurations: not comparable: counting the {' and '.join(sides)} pack's "
                "ran over its budget (--set a few facts to narrow it, or raise --limit)"
            ]
        else:
            lines = [f"valid configurations: {count_text(self.old_count)} -> {count_text(self.new_count)}"]
        for title, side, rejects in (
            ("valid before, invalid now", self.invalidated, "new"),
            ("invalid before, valid now", self.validated, "old"),
        ):
            if side.count is None:
                head = f"{title}: not counted" + (
                    f"; the {rejects} pack's changes that reject some of them:" if side.groups else ""
                )
            else:
                head = f"{title}: {count_text(side.count)}"
            lines.append(head)
            for g in side.groups:
                label = (
                    f"rule {g.id} ({rejects})"
                    if g.kind == "rule"
                    else f"{g.id} (values the {rejects} pack does not have)"
                )
                eg = f"; e.g. {_pins(g.example)}" if g.example else ""
                why = f"; because {', '.join(g.reason)}" if g.reason else ""
                lines.append(f"  {_num(g.count)}: {label}{eg}{why}")
            if side.other:
                lines.append(f"  {_num(side.other)}: other ({side.note or 'fields one pack lacks'})")
        return lines

    def _resolution_lines(self) -> list[str]:
        r = self.requests
        lines = []
        models = r.get("models")
        if models is not None:
            lines.append(
                f"models: {models['given']} given, {models['read_by_both']} read by both packs"
                + (
                    f", {len(models['without_machine'])} with no machine under the new pack's rules"
                    if models["without_machine"]
                    else ""
                )
            )
            for miss in models["not_read"]:
                lines.append(f"  not read by the {miss['pack']} pack: {miss['model']}: {miss['message']}")
            for d in models["read_differently"]:
                lines.append(
                    f"  read differently: {d['model']}: {d['field']} {_maybe(d['old'])} -> {_maybe(d['new'])}"
                )
            how = "real models on machines drawn for them"
        else:
            how = (
                "every combination of the shared facts"
                if r.get("enumerated")
                else "a seeded sample of the shared facts"
            )
        lines.append(
            f"resolutions of {r.get('requests', 0)} requests ({how}): "
            f"{r.get('compared', 0)} resolve in both, {r.get('old_only', 0)} only before, "
            f"{r.get('new_only', 0)} only now; not machines under the new pack's rules "
            f"over facts: {r.get('machines_ruled_out', 0)}, under the old pack's: "
            f"{r.get('machines_ruled_out_before', 0)}"
        )
        if models is not None and not models["read_by_both"]:
            lines.append(
                "  not comparable: no model is read by both packs, so nothing is said about "
                "resolutions (see why each was not read above)"
            )
        elif not r.get("compared"):
            lines.append(
                "  not comparable: no request resolves in both packs, so nothing is "
                "said about resolutions (give facts with --set to compare a machine)"
            )
        else:
            lines += [f"  {c.text()}" for c in self.changes] or ["  no resolution changed"]
        return lines

    def text(self) -> str:
        o, n = self.old, self.new
        lines = [
            f"{o['name']} {o['version']} -> {n['name']} {n['version']}"
            + (f" (with {_pins(self.pins)})" if self.pins else "")
        ]
        if self.identical:
            lines.append(
                "the packs are identical (the same files): no field, rule, valid "
                "configuration or resolution differs"
            )
            return "\n".join(lines)
        for kind in ("added", "removed"):
            if self.fields[kind]:
                lines.append(f"fields {kind}: {', '.join(self.fields[kind])}")
        for name, change in self.fields["changed"].items():
            parts = [
                f"{k.replace('_', ' ')} {', '.join(map(_show, v))}"
                for k, v in change.items()
                if v and k != "kind"
            ]
            if "kind" in change:
                parts.append(f"kind {change['kind'][0]} -> {change['kind'][1]}")
            lines.append(f"field {name}: " + "; ".join(parts))
        for what, table in (("rules", self.rules), ("preferences", self.preferences)):
            for kind in ("added", "removed", "changed"):
                if table[kind]:
                    lines.append(f"{what} {kind}: {', '.join(table[kind])}")
        if self.projected:
            lines.append(
                f"configurations compared over the {len(self.shared)} shared fields "
                "(the packs have different fields)"
            )
        lines += self._configuration_lines()
        lines += self._resolution_lines()
        return "\n".join(lines)


def _maybe(value: Scalar | None) -> str:
    return "(not read)" if value is None else _show(value)


def _num(value: int | None) -> str:
    return "not counted (over its budget: --limit raises it)" if value is None else count_text(value)
