"""The layers of rules a lint reason explains within, each with its core, kept per start (`Walks`).

A reason grows the rules outwards from the fields in question (`rule_layers`) and explains
within the first layer with no solution, over that layer's core (`peel`). Both depend on the set
of fields the walk starts from and the rules it may take, never on a pin's value: the walk stops
at pinned fields, and every pinned field of a reason is one it starts from, so it has passed it
already. Every totality reason starts from the same fields (the pack's facts) over every rule,
and the dead values of one field start from that field: each walked the same layers and peeled
the same cores again (synthetic 1,000: 59 totality reasons, ~0.9 s of their 3.3 s CPU, the walk
and the peel of ~900 rules each time). Here a walk is made once per start, layer by layer as far
as a reason asks, and read again by the reasons after it. Exact: the same lists in the same order.

Imports only the standard library at module level (the CLI imports lint at start-up).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack

__all__ = ["Layer", "Walk", "Walks"]

KEPT = 32


class Layer:
    """One layer of a walk: its rules (pack order), its core (`peel`), the core's positions."""

    __slots__ = ("_at", "_core", "_start", "cp", "rules")

    def __init__(self, cp: CompiledPack, rules: list[str], start: Collection[str]) -> None:
        self.cp = cp
        self.rules = rules
        self._start = start
        self._core: list[str] | None = None
        self._at: dict[str, int] | None = None

    @property
    def core(self) -> list[str]:
        """The layer's rules in some minimal conflict of a question over them (`peel`), made
        when first asked."""
        if self._core is None:
            from solver.reasoning.peel import peel

            self._core = peel(self.cp, self.rules, self._start)
        return self._core

    @property
    def at(self) -> dict[str, int]:
        """Each rule of the core by its position in it (`Proven.covers`, `Proven.within`)."""
        if self._at is None:
            self._at = {rid: p for p, rid in enumerate(self.core)}
        return self._at


class Walk:
    """The layers from one start, made as far as they are asked (`layer`)."""

    def __init__(self, cp: CompiledPack, start: Sequence[str], rules: Sequence[str] | None) -> None:
        from solver.reasoning.conflicts import rule_layers

        self.cp = cp
        self._start = frozenset(start)
        # (No pins: those of a reason are among its start, see the module's note.)
        self._walk: Iterator[list[str]] | None = rule_layers(cp, start, {}, rules)
        self._made: list[Layer] = []

    def layer(self, index: int) -> Layer | None:
        """The walk's `index`th layer (from 0), None past its last."""
        while len(self._made) <= index and self._walk is not None:
            rules = next(self._walk, None)
            if rules is None:
                self._walk = None
                break
            self._made.append(Layer(self.cp, rules, self._start))
        return self._made[index] if index < len(self._made) else None


class Walks:
    """The walks of one lint run, the latest `KEPT` starts (each over every rule) kept."""

    def __init__(self, cp: CompiledPack) -> None:
        self.cp = cp
        self._kept: dict[frozenset[str], Walk] = {}

    def walk(self, start: Sequence[str], rules: Sequence[str]) -> Walk:
        """The layers around `start` within `rules` (some of the pack's hard rules) for a reason
        whose pinned fields are all among `start`. Kept when `rules` is every rule (a reason's
        usual question); else walked for this reason alone."""
        if len(rules) != len(self.cp.rule_ids):
            return Walk(self.cp, start, rules)
        key = frozenset(start)
        found = self._kept.pop(key, None)
        if found is None:
            # (Every rule: no set of them for the walk to test each rule against.)
            found = Walk(self.cp, start, None)
            if len(self._kept) >= KEPT:
                del self._kept[next(iter(self._kept))]
        self._kept[key] = found  # (moved to the end: the latest asked is the last let go)
        return found
