"""The rules of a set that are in no minimal conflict, peeled off before QuickXplain (`peel`).

A rule with a field that no other rule of the set reads, that no pin fixes and no condition
reads, and that some value of the field satisfies whatever the rule's other fields hold, is in no
minimal conflict of the set: a solution of the other items, that field set to such a value, is
a solution with the rule too. Peeled one at a time (a field whose last other reader went may
free the rule left reading it), what is left is the set's core, the same whatever the order
(a rule that can be peeled stays so as others go).

QuickXplain over the core, in the set's order, returns what it returns over the whole set: its
answer is the preferred conflict of its list (Junker: the last item of the shortest
inconsistent prefix, then the same with it kept, and so on), and a sub-list that keeps every
minimal conflict has the same shortest prefixes' last items. A set and its core have solutions
alike. Lint's reasons ask their questions about the core (synthetic packs: a value's or a
rule's layer of rules loses about half, the dangling rules at its rim).

Imports only the standard library at module level.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack

__all__ = ["peel"]


def peel(cp: CompiledPack, rules: Sequence[str], blocked: Collection[str]) -> list[str]:
    """`rules` (hard rules of `cp`, in their order) less the rules in no minimal conflict of any
    question over some of them with pins on `blocked` fields and conditions reading them (the
    fields the question may fix or constrain beyond the rules)."""
    cons, blocked = cp.constraints, set(blocked)
    readers: dict[str, int] = {}
    for rid in rules:
        for name in cons[rid].fields:
            readers[name] = readers.get(name, 0) + 1
    alive = set(rules)

    def free(rid: str) -> bool:
        # A field of the rule that only it reads, left free, and a value of it that keeps the
        # rule whatever the others hold (three-valued: `CompiledPack.verdicts`, remembered).
        return any(
            readers[name] == 1 and name not in blocked and cp.verdicts(rid, name, ())[0]
            for name in cons[rid].fields
        )

    todo = list(reversed(rules))
    while todo:
        rid = todo.pop()
        if rid not in alive or not free(rid):
            continue
        alive.discard(rid)
        for name in cons[rid].fields:
            readers[name] -= 1
            if readers[name] == 1:
                # The field's last reader in the set may be free now.
                todo.extend(other for other in cp.rules_reading(name) if other in alive)
    if len(alive) == len(rules):
        return list(rules)
    return [rid for rid in rules if rid in alive]
