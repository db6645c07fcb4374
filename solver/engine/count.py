"""Exact counting of valid configurations: `confsolve count` and the counter `lint` and `diff` use.

What is counted: complete configurations, i.e. one value for every field of the pack (options and
the facts not given), that satisfy every hard rule and keep every given pin. A fact the request does
not give is free, exactly as in `resolve`, so `count --set platform=cuda` counts configurations over
every CUDA GPU and every model; `--by FIELD` splits the same number by that field's value (the
parts add up to the total). Warning rules never restrict, so they are not counted against.

How: `DiagramCounter` (`solver.engine.diagrams`): each rule compiled once per pack into a
decision diagram, and a search over their residuals with independent components and component
caching; kept per pack digest, so later counts in a process reuse its components. A pack it does
not compile (past `diagrams.MAX_FIELDS` fields, or a rule past its expansion budget) is counted by
`ModelCounter` (`solver.engine.modelcounter`: propagation, components and caching over condition
evaluation), which `lint` and `diff` use for projected counts. Never a product loop over the
domains. `solver.engine.countlimit` holds the limits and the bounds of a count cut short
(re-exported here). A rule is counted as its `solver.pack.expr.Condition`, the one predicate type.

Imports the standard library, the modules above and, inside functions, `solver.engine.csp`;
never python-constraint or networkx.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from solver.bounded import PACKS_KEPT, Lru
from solver.engine.countlimit import (
    COUNT_LIMIT,
    DEFAULT_LIMIT,
    CountLimitReached,
    Limit,
    Progress,
    metered,
)
from solver.engine.diagrams import DiagramCounter, TooLarge
from solver.engine.modelcounter import ModelCounter

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.model import Pack, Scalar
    from solver.pack.expr import Condition

__all__ = [
    "COUNT_LIMIT",
    "DEFAULT_LIMIT",
    "CountLimitReached",
    "CountResult",
    "Limit",
    "ModelCounter",
    "Progress",
    "count",
    "metered",
    "pack_checks",
]

# --- packs ------------------------------------------------------------------------------------


def pack_checks(pack: Pack, rule_ids: Iterable[str] | None = None) -> list[Condition]:
    """The hard rules of a pack (or of `rule_ids`): their conditions, for the counter."""
    from solver.engine.csp import compile_pack

    return _checks(compile_pack(pack), rule_ids)


def _checks(cp: CompiledPack, rule_ids: Iterable[str] | None = None) -> list[Condition]:
    ids = cp.rule_ids if rule_ids is None else [r for r in cp.rule_ids if r in set(rule_ids)]
    return [cp.rules[r].condition for r in ids]


@dataclass(frozen=True)
class CountResult:
    """The number of valid configurations, and optionally its split by one field's value."""

    count: int
    by_field: str | None = None
    by: dict[Scalar, int] | None = None
    steps: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        from solver.values import exact_count, show  # counts beyond 2**53 as digits (JavaScript)

        doc: dict[str, Any] = {"schema": 1, "status": "counted", "count": exact_count(self.count)}
        if self.by is not None and self.by_field is not None:
            doc["by"] = {self.by_field: {show(v): exact_count(n) for v, n in self.by.items()}}
        return doc


def count(
    pack: Pack,
    pins: Mapping[str, Scalar] | None = None,
    *,
    by: str | None = None,
    limit: Limit | None = None,
    deadline: float | None = None,
    progress: Progress | None = None,
) -> CountResult:
    """The exact number of valid configurations of `pack` that keep `pins`.

    Every field not pinned is free (facts included). `by` splits the count by that field's values.
    `deadline`: an absolute `time.monotonic()` to stop by (a command's budget), on top of `limit`
    (whose seconds, if any, run from now for the whole count, its split included).
    `limit`: default `COUNT_LIMIT` steps. `progress(steps, seconds)` is called now and then (a
    reporter for long counts).

    Raises `CountLimitReached` when the limit or the deadline comes before the count is exact;
    it carries exact bounds, `lower <= count <= upper` (what was counted; that plus at most
    every combination of what was not), and `parts`, the values of `by` counted exactly.
    """
    from solver.engine.csp import compile_pack
    from solver.engine.opendomain import query_pack

    pins = dict(pins or {})
    pack = query_pack(pack, pins)  # open domains widened, `given(FIELD)` of rules answered
    cp = compile_pack(pack)
    started = time.monotonic()
    limit = limit or Limit(steps=COUNT_LIMIT)
    ends = [
        t
        for t in (deadline, limit.deadline, None if limit.seconds is None else started + limit.seconds)
        if t is not None
    ]
    limit = dataclasses.replace(limit, deadline=min(ends) if ends else None)
    counter = _counter(pack, cp)
    if by is None:
        total = counter.count(pins, limit=limit, progress=progress)
        return CountResult(total, steps=counter.steps, seconds=time.monotonic() - started)
    parts: dict[Scalar, int] = {}
    values = [pins[by]] if by in pins else list(cp.domains[by])
    for at, value in enumerate(values):
        try:
            parts[value] = counter.count({**pins, by: value}, limit=limit, progress=progress)
        except CountLimitReached as stop:
            # Each value not reached holds at most every combination of the free fields.
            free = 1
            for name, domain in cp.domains.items():
                if name != by and name not in pins:
                    free *= len(domain)
            done = sum(parts.values())
            stop.parts = dict(parts)
            raise stop.bounded(
                done + stop.lower, done + (stop.upper or 0) + free * (len(values) - at - 1)
            ) from None
    return CountResult(
        sum(parts.values()),
        by_field=by,
        by=parts,
        steps=counter.steps,
        seconds=time.monotonic() - started,
    )


_COUNTERS: Lru[str, DiagramCounter | bool] = Lru(PACKS_KEPT)  # False: not compiled
MAX_NODES = 1_000_000  # diagram nodes a kept counter may grow to (the SGLang pack's rules: ~2,000)


def _counter(pack: Pack, cp: CompiledPack | None = None) -> DiagramCounter | ModelCounter:
    """The pack's diagram counter (kept per digest, with its component counts), or a fresh
    `ModelCounter` when the pack is not compiled to diagrams. `cp`: the pack's compiled form,
    when the caller has it (else it is looked up)."""
    from solver.engine.csp import compile_pack

    if cp is None:
        cp = compile_pack(pack)
    kept = _COUNTERS.get(pack.digest) if pack.digest else None
    if kept is None:
        try:
            kept = DiagramCounter(cp.domains, _checks(cp), fields=pack.fields, sets=pack.sets)
        except TooLarge:
            kept = False
        if pack.digest:
            _COUNTERS.put(pack.digest, kept)
    if isinstance(kept, DiagramCounter):
        if len(kept.diagrams.nodes) > MAX_NODES:  # restrictions made since: start again next time
            _COUNTERS.pop(pack.digest)
        return kept.fresh()
    return ModelCounter(cp.domains, _checks(cp))
