"""What a compiled condition of the pack language is (`Condition`), its operands as the parser
reads them, the language's error and limits: the part of `solver.pack.expr` a process needs
whether or not it parses a condition (a start from the prebuilt form parses none; the parser,
`solver.pack.exprparse`, imports `ast`). `solver.pack.expr` re-exports all of it. Imports only
the standard library, `solver.frozen` and `solver.model`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solver.frozen import Frozen, frozen_type
from solver.model import Scalar

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "Condition", "ExprError", "Values"]

MAX_DEPTH = 32
MAX_LENGTH = 4000

Values = Sequence[Any]


class ExprError(ValueError):
    """A condition that is not in the language or does not fit the pack."""


@frozen_type
class Condition(Frozen):
    """A checked, compiled condition and the fields it reads.

    `holds(values)` takes the values of `fields` in order (all known) and is the fast path used by
    the solver. `partial(mapping)` is three-valued: `None` when undecided fields make it unknown.
    """

    text: str
    fields: tuple[str, ...]
    holds: Callable[[Values], bool]
    partial: Callable[[Mapping[str, Any]], bool | None]
    literals: tuple[tuple[str, Scalar], ...]
    given: tuple[str, ...] = ()  # the fields `given(FIELD)` asks about (request marks, not values)

    def evaluate(self, values: Mapping[str, Any]) -> bool:
        return bool(self.holds(tuple(values[name] for name in self.fields)))

    @classmethod
    def over(
        cls,
        fields: Sequence[str],
        holds: Callable[[Values], bool],
        partial: Callable[[Mapping[str, Any]], bool | None] | None = None,
    ) -> Condition:
        """A predicate made in code rather than parsed from a pack (a query's own condition, a
        check of lint's): no text, no literals, and, without `partial`, undecided until every
        field is known."""
        return cls("", tuple(fields), holds, partial or _undecided, ())

    @property
    def three_valued(self) -> bool:
        """Whether `partial` can decide before every field is known (False for `over` without
        `partial`): the model counter skips asking a condition that always answers None."""
        return self.partial is not _undecided

    def negated(self) -> Condition:
        """The condition that holds exactly where this one fails (three-valued too)."""
        holds, partial = self.holds, self.partial
        return Condition(
            f"not ({self.text})" if self.text else "",
            self.fields,
            lambda values: not holds(values),
            partial
            if partial is _undecided
            else lambda known: None if (answer := partial(known)) is None else not answer,
            self.literals,
        )


def _undecided(known: Mapping[str, Any]) -> bool | None:
    return None


@frozen_type
class _Operand(Frozen):
    """A compiled operand: a field, a literal, a collection of literals, or a product."""

    kind: str  # "field" | "const" | "collection" | "product"
    name: str = ""
    value: Any = None
    display: str = ""
    factors: tuple[str, ...] = ()  # a product's integer fields (its constant is `value`)
