"""The conflicts of earlier totality reasons, tried on a new fact combination (`Shapes`).

Lint's totality check explains each fact combination with no configuration by QuickXplain over
the rules around the facts and the combination's pins. Most combinations fail the way an earlier
one did: the same rules, the same facts, other values (SGLang: 76 of 96 reasons; synthetic 1,000
fields: 39 of 59). Such an earlier conflict, its rules with this combination's values of its
facts, is a candidate; one that a search proves to have no solution answers, with no search,
every QuickXplain question that contains it (`Proven.covers`): a set of items that contains a set
with no solution has none. That is exact whatever the candidate, so QuickXplain asks the same
questions and returns the same conflict; the candidate only saves the searches of its "no"
answers, which cost most (SGLang: 1,929 of them, 5.6 s of the reasons' 7.4 s of questions, each
containing the conflict found). It answers the look-ahead of a layer that holds it the same way.

Imports only the standard library at module level.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.model import Scalar

__all__ = ["TRIES", "Proven", "Shapes"]

# Candidates tried per reason, the most frequent shapes first: each a small question (the
# SGLang pack's 96 reasons: 1,244 of them, 0.19 s in all).
TRIES = 16

Shape = tuple[tuple[str, ...], tuple[str, ...]]
"""A conflict's rules and the fields of its pins."""


@dataclass(frozen=True)
class Proven:
    """Rules that, with `pins`, have no solution (proved by a search)."""

    rules: tuple[str, ...]
    pins: dict[str, Scalar]

    def within(self, rules: Collection[str]) -> bool:
        """Whether every rule of the conflict is among `rules` (the pins: all of the reason's)."""
        return all(r in rules for r in self.rules)

    def covers(self, core: Mapping[str, int], pins: Sequence[str]) -> frozenset[int] | None:
        """The conflict as positions of QuickXplain's items (the core's rules, each by its
        position in `core`, then the reason's pinned fields `pins`): a question whose items
        contain them all has no solution. None when a rule of it is not in the core."""
        at = core
        if not self.within(at):
            return None
        pin_at = {name: len(core) + p for p, name in enumerate(pins)}
        return frozenset([*(at[r] for r in self.rules), *(pin_at[n] for n in self.pins)])


class Shapes:
    """The shapes of the conflicts found so far, with how often each was found."""

    def __init__(self) -> None:
        self.found: dict[Shape, int] = {}

    def record(self, rules: Sequence[str], fields: Sequence[str]) -> None:
        shape = (tuple(rules), tuple(fields))
        # (Moved to the end: among shapes found as often, the latest is tried first.)
        self.found[shape] = self.found.pop(shape, 0) + 1

    def proven(
        self,
        pins: Mapping[str, Scalar],
        refuted: Callable[[dict[str, Scalar], list[str]], bool],
        tries: int = TRIES,
    ) -> list[Proven]:
        """The candidates, of at most `tries` shapes whose fields `pins` all fix (the most
        frequent first), that `refuted(pins, rules)` proves to have no solution with `pins`'
        values. Each proved one answers the questions that contain it: a combination often
        holds more than one earlier shape's conflict, and QuickXplain's conflict is the one it
        prefers, not always the most frequent."""
        fitting = [(at, shape, count) for at, (shape, count) in enumerate(self.found.items())]
        fitting = [e for e in fitting if all(n in pins for n in e[1][1])]
        fitting.sort(key=lambda e: (-e[2], -e[0]))
        out = []
        for _, (rules, fields), _ in fitting[:tries]:
            values = {n: pins[n] for n in fields}
            if refuted(values, list(rules)):
                out.append(Proven(rules, values))
        return out
