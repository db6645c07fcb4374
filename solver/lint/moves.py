"""Small value moves for lint's questions: the cases that make a condition true whatever its other
fields hold (`condition_cases`, `PackOracle.by_cases`), and the nearest change of one or two
fields that makes a condition hold (`nearest_change`, `PackOracle.repair`).

Imports only the standard library.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.model import Scalar
    from solver.pack.expr import Condition

MAX_CASES = 16
CASE_EVALUATIONS = 4000
NEAREST_PAIRS = 2000


def condition_cases(
    check: Condition, pins: Mapping[str, Scalar], domains: Mapping[str, Sequence[Scalar]]
) -> list[dict[str, Scalar]]:
    """Up to `MAX_CASES` assignments of one or two of the check's unpinned fields under which
    its three-valued form says it holds whatever the rest are (none when it has no such form).
    A value that already decides the check false is not paired with anything."""
    if not check.three_valued:
        return []
    partial = check.partial
    found: list[dict[str, Scalar]] = []
    open_: dict[str, list[Scalar]] = {}  # values that leave the check undecided
    for name in (n for n in check.fields if n not in pins):
        for value in domains[name]:
            verdict = partial({**pins, name: value})
            if verdict is True:
                found.append({name: value})
            elif verdict is None:
                open_.setdefault(name, []).append(value)
    evaluations = 0
    for first, second in itertools.combinations(open_, 2):
        for value, other in itertools.product(open_[first], open_[second]):
            if len(found) >= MAX_CASES or evaluations >= CASE_EVALUATIONS:
                return found[:MAX_CASES]
            evaluations += 1
            if partial({**pins, first: value, second: other}) is True:
                found.append({first: value, second: other})
    return found[:MAX_CASES]


def nearest_change(
    check: Condition,
    current: Mapping[str, Scalar],
    fixed: Mapping[str, Scalar],
    domains: Mapping[str, Sequence[Scalar]],
) -> dict[str, Scalar] | None:
    """Values for one or two of the check's free fields that make it hold, or None."""
    free = [n for n in check.fields if n not in fixed]
    trial = dict(current)

    def holds() -> bool:
        return bool(check.holds(tuple(trial[n] for n in check.fields)))

    for name in free:
        for value in domains[name]:
            trial[name] = value
            if holds():
                return {name: value}
        trial[name] = current[name]
    pairs = list(itertools.combinations(free, 2))
    if sum(len(domains[a]) * len(domains[b]) for a, b in pairs) > NEAREST_PAIRS:
        return None
    for first, second in pairs:
        for value in domains[first]:
            trial[first] = value
            for other in domains[second]:
                trial[second] = other
                if holds():
                    return {first: value, second: other}
        trial[first], trial[second] = current[first], current[second]
    return None
