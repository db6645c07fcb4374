"""Repairs that give a fact: when a request fails for the value the answer assumed of a fact
nobody gave (a model's head size, its architecture), the model or the machine may simply not be
so, and stating the real fact is the repair (`--set head_size=576`, or `--model-config`).

`fact_repairs`: for each such fact of the conflict, its other values that hold with the request,
each completed with the other facts nobody gave whose assumed value then fails in turn (a head
size of 576 needs an MLA model too: `is_mla=true`), and verified by resolving with them given.
Decides through `solver.reasoning.provenance` (not `resolution.py`, which imports the
diagnosis that imports this module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from solver.engine.opendomain import query_pack
from solver.errors import InvalidInput, Unsatisfiable
from solver.model import Pack, Pin, Repair, Scalar
from solver.reasoning.assume import forced_by_facts
from solver.reasoning.decide import ChainFailed, RequestFails
from solver.reasoning.guess import marked
from solver.reasoning.plan import Plan
from solver.reasoning.provenance import decided_values

__all__ = ["fact_repairs"]

_TASK = "looking for repairs"

# How many values of one fact are verified (each verification is one to `_COMPLETED` resolutions).
_TRIALS = 4
# The most facts one repair gives (the conflict's fact and those its value then needs).
_COMPLETED = 3


def fact_repairs(
    plan: Plan,
    base: Pack,
    pins: Mapping[str, Pin],
    facts: Sequence[tuple[str, Scalar]],
    *,
    predict: bool,
    limit: int,
) -> list[Repair]:
    """Verified repairs that give `facts` (each a fact nobody gave, at the value the failing
    answer assumed) another value, with what that value needs of the other facts nobody gave;
    at most `limit`, in the order of `facts` then of each fact's ranking. `base`: the pack the
    request was made on (before its own `given(FIELD)` were answered)."""
    cp = plan.compiled
    values = {n: p.value for n, p in pins.items()}
    out: list[Repair] = []
    for name, assumed in facts:
        tried = 0
        for value in plan.ranking(name, marked(values))[0]:
            if len(out) >= limit or tried >= _TRIALS:
                break
            if (
                value == assumed
                or cp.satisfiable({**values, name: value}, task="looking for repairs") is None
            ):
                continue
            tried += 1
            found = _completed(plan, base, pins, {name: value}, predict)
            if found is not None:
                given, answer = found
                out.append(
                    Repair.model_construct(
                        set=given, unset=[], values=answer, changes=len(given), rank_loss=tried - 1
                    )
                )
    return out


def _completed(
    plan: Plan, base: Pack, pins: Mapping[str, Pin], given: dict[str, Scalar], predict: bool
) -> tuple[dict[str, Scalar], dict[str, Scalar]] | None:
    """`given` (facts) and the answer of the request with them, each fact nobody gave whose
    assumed value then fails given as well, at the value the facts force or else the first of
    its ranking that holds with the request; None when that does not resolve."""
    fields = plan.pack.fields
    values = {n: p.value for n, p in pins.items()}
    while len(given) <= _COMPLETED:
        request = {**pins, **{n: Pin(field=n, value=v, source="fact") for n, v in given.items()}}
        pack = query_pack(base, request)
        try:
            # Its decisions alone (`resolve_planned`'s, raising as it does): only the values are
            # read, not the provenance of every field (~0.4 of 1.3-1.5 ms per repair here).
            answer = decided_values(
                base, request, predict=predict, budget=plan.compiled.budget, departures=False, copy=pack
            )
        except ChainFailed as failed:
            name = failed.field
            spec = fields[name]
            if spec.kind != "fact" or spec.search or name in request:
                return None
            known = {**values, **given}
            value = forced_by_facts(plan, known, name)
            if value is None:
                value = next(
                    (
                        v
                        for v in plan.ranking(name, marked(known))[0]
                        if v != failed.chain[0]
                        and plan.compiled.satisfiable({**known, name: v}, task="looking for repairs")
                        is not None
                    ),
                    None,
                )
            if value is None:
                return None
            given = {**given, name: value}
            continue
        except (RequestFails, Unsatisfiable, InvalidInput):
            return None
        return given, answer
    return None
