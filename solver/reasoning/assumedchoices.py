"""Choices under the facts a resolution assumes: the values `resolve` and `check` accept.

`valid_choices` answers for every value of the facts nobody gave (a model, a GPU count, an
installed kernel): with no model, `--attention-backend FLASHMLA` is possible, for an MLA model.
`resolve` of the same request never searches such a fact: it assumes it (`search = false`) and
says so under ASSUMED, so FLASHMLA is then refused for the head size it assumed. A list that
offers what the next answer refuses is wrong without a warning; this one pins the facts the
resolution assumes (source `assumed`), so each value it lists is one the resolution takes with
the same assumptions, and an excluded value's reason names the assumed fact that excludes it
("head_size=128"), which the answer's ASSUMED lines say how to set.

Only an option's values are listed under those facts (`choices_under`). A fact's values are
listed under the facts as given: setting a fact makes `resolve` assume the others anew from it
(a Mixtral architecture is a MoE model), so what it assumes without the fact says nothing about
another value of that fact, and pinning it refused Mixtral for `is_moe=false (assumed)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from solver.budget import Budget
from solver.errors import Unsatisfiable
from solver.inputs.pins import collect_pins
from solver.model import AssumedRecord, Pin, Resolution
from solver.reasoning.assume import assumed_values
from solver.reasoning.diagnose import Choices, valid_choices
from solver.reasoning.plan import plan_for
from solver.reasoning.provenance import resolve_unexplained

__all__ = ["choices_as_resolved", "choices_under"]

_NO_CHAIN_VALUE = "not given; assumed at the value resolve assumes — set it if it differs"


def choices_as_resolved(
    pack: Any,
    options: Any = None,
    facts: Any = None,
    *,
    fields: list[str] | None = None,
    reasons: bool = True,
    strict: bool = False,
    budget: Budget | None = None,
    resolution: Resolution | None = None,
) -> tuple[Choices, Resolution | None]:
    """`valid_choices` with the facts the request's resolution assumes pinned (source
    `assumed`), and that resolution (None when the request as given does not resolve: then the
    facts are assumed from the given facts alone, each at the first value of its chain they
    keep, never from the options). `Choices.assumed` lists the facts pinned so. `resolution`:
    the request's, when the caller has it (`why`), so it is not resolved twice."""
    pins = collect_pins(pack, options, facts)
    if resolution is None:
        try:
            # (Only its assumed facts are read: no departures, the launcher's own second pass.)
            resolution = resolve_unexplained(
                pack, pins, strict=strict, reasons=False, budget=budget, departures=False
            )
        except Unsatisfiable:
            resolution = None
    records = list(resolution.assumed) if resolution is not None else _assumed_from_facts(pack, pins)
    assumed = {r.field: Pin(field=r.field, value=r.value, source="assumed") for r in records}
    found = choices_under(pack, pins, assumed, fields=fields, reasons=reasons, budget=budget)
    found.assumed = records
    return found, resolution


def choices_under(
    pack: Any,
    pins: Mapping[str, Pin],
    assumed: Mapping[str, Pin],
    *,
    fields: Sequence[str] | None = None,
    reasons: bool = True,
    budget: Budget | None = None,
) -> Choices:
    """`valid_choices` of `fields` (default: the options) as `resolve` takes them: an option's
    values with the `assumed` facts pinned beside `pins`, a fact's with `pins` alone (setting a
    fact changes what the others are assumed to be). The configurator's listing too."""
    names = list(fields) if fields is not None else list(pack.options)
    facts = [n for n in names if n in pack.fields and pack.fields[n].kind == "fact"]
    if not assumed or not facts:
        return valid_choices(pack, {**pins, **assumed}, fields=names, reasons=reasons, budget=budget)
    options = [n for n in names if n not in facts]
    if not options:
        return valid_choices(pack, dict(pins), fields=names, reasons=reasons, budget=budget)
    under = valid_choices(pack, {**pins, **assumed}, fields=options, reasons=reasons, budget=budget)
    given = valid_choices(pack, dict(pins), fields=facts, reasons=reasons, budget=budget)
    out = Choices()
    for name in names:
        part = given if name in given.possible else under
        out.possible[name] = part.possible[name]
        out.excluded[name] = part.excluded[name]
        out.warned[name] = part.warned[name]
        if name in part.open:
            out.open[name] = part.open[name]
    return out


def _assumed_from_facts(pack: Any, pins: dict[str, Pin]) -> list[AssumedRecord]:
    plan = plan_for(pack)
    given = {n: p.value for n, p in pins.items() if pack.fields[n].kind == "fact"}
    return [
        AssumedRecord(field=name, value=value, because=_NO_CHAIN_VALUE)
        for name, value in assumed_values(plan, given).items()
    ]
