"""The independent parts of one consistency question, and the verdicts of parts decided before.

A question "do these rules and conditions hold together with these pins" falls apart into
parts that share no unpinned field: it has a solution exactly when every part has one, and each
part is a smaller question. QuickXplain asks dozens of questions per minimal reason, each a
subset of the same items, so most of their parts were asked before (by this reason or an
earlier one: the totality check's fact combinations share most of their pins); a part is
searched once and its verdict kept. A part with no pin and no condition is a subset of the
pack's rules, which has a solution when the pack has one.

Imports only the standard library at module level (lint is imported at the CLI's start-up).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver.values import same

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.model import Scalar
    from solver.pack.expr import Condition

__all__ = ["Part", "PartVerdicts"]

Part = tuple[dict[str, "Scalar"], list[str], list["Condition"]]
"""One independent part of a question: its pins, its rules (in the given order), its conditions."""

Search = Callable[[Mapping[str, "Scalar"], Sequence[str], Sequence["Condition"]], bool]
"""An exact consistency question: whether the rules and conditions hold together with the pins."""


class PartVerdicts:
    """The verdicts of the parts searched so far (exact, so kept for the whole lint)."""

    def __init__(self, cp: CompiledPack) -> None:
        self.cp = cp
        self.known: dict[tuple[Any, ...], bool] = {}
        self.keep: dict[int, Condition] = {}  # the conditions a key names by id stay alive
        self.searched = 0
        self.reused = 0

    def split(
        self, given: Mapping[str, Scalar], rule_ids: Sequence[str], extras: Sequence[Condition]
    ) -> list[Part] | None:
        """The parts of the question that share no unpinned field (None: a pin is outside its
        field's domain, so the question has no solution whatever the rules)."""
        from solver.engine.groups import connected_groups

        domains = self.cp.domains
        if not all(any(same(v, d) for d in domains[n]) for n, v in given.items()):
            return None
        rules = self.cp.rules
        reads = [rules[r].fields for r in rule_ids] + [c.fields for c in extras]
        count = len(rule_ids)
        groups = connected_groups(range(len(reads)), [[n for n in f if n not in given] for f in reads])
        parts: list[Part] = []
        for group in groups:
            pins = {n: given[n] for i in group for n in reads[i] if n in given}
            parts.append(
                (
                    pins,
                    [rule_ids[i] for i in group if i < count],
                    [extras[i - count] for i in group if i >= count],
                )
            )
        return parts

    def consistent(
        self,
        given: Mapping[str, Scalar],
        rule_ids: Sequence[str],
        extras: Sequence[Condition],
        search: Search,
        *,
        satisfiable: bool,
    ) -> bool:
        """Whether the question has a solution, part by part: a verdict kept answers a part, the
        others are searched (`search`), smallest first. `satisfiable`: the whole pack has a
        solution (then a part with no pin and no condition needs no search)."""
        parts = self.split(given, rule_ids, extras)
        if parts is None:
            return False
        open_: list[tuple[tuple[Any, ...], Part]] = []
        for part in parts:
            pins, rules, conditions = part
            if satisfiable and not pins and not conditions:
                continue
            key = (
                frozenset(rules),
                frozenset((n, type(v), v) for n, v in pins.items()),
                frozenset(id(c) for c in conditions),
            )
            verdict = self.known.get(key)
            if verdict is False:
                self.reused += 1
                return False
            if verdict is None:
                open_.append((key, part))
            else:
                self.reused += 1
        open_.sort(key=lambda kp: len(kp[1][1]))
        for key, (pins, rules, conditions) in open_:
            self.searched += 1
            verdict = search(pins, rules, conditions)
            self.known[key] = verdict
            self.keep.update((id(c), c) for c in conditions)
            if not verdict:
                return False
        return True
