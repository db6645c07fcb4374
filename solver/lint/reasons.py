"""Minimal reasons of lint's findings (`Reasons.reason`: QuickXplain over the rules around the
fields in question), for `PackOracle`, which it is a layer of: apart so that each module stays
within the size bound. The searches it asks are `PackOracle.query`'s; the solutions it learns go
to the same pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from solver.lint.moves import satisfies
from solver.lint.window import Window

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.engine.state import State
    from solver.lint.shapes import Shapes
    from solver.lint.walks import Walks
    from solver.model import Scalar
    from solver.pack.expr import Condition
    from solver.reasoning.conflicts import Item

__all__ = ["LAYERS_KEPT", "WITNESSES_KEPT", "Reasons"]

WITNESSES_KEPT = 8
LAYERS_KEPT = 4


class Reasons(Window):
    """The minimal reasons of a pack's lint (`reason`), over what `PackOracle` keeps."""

    cp: CompiledPack
    shapes: Shapes
    walks: Walks
    # `PackOracle.query`: a solution of the rules and extras with the pins, or None (proved).
    query: Callable[..., dict[str, Scalar] | None]
    _rule_items: dict[str, Item]
    _prefixes: dict[tuple[str, ...], tuple[State, dict[str, Scalar]]] | None
    _layers: dict[tuple[str, ...], State | None]

    def reason(
        self,
        pins: Mapping[str, Scalar],
        extras: Sequence[Condition],
        rules: Sequence[str],
        *,
        blame_pins: bool = False,
    ) -> list[str]:
        """A minimal set of `rules` (and, with `blame_pins`, of the pins as `field=value`) that,
        with `pins` and `extras`, has no solution (QuickXplain over the rules that can interact)."""
        from solver.engine.count import CountLimitReached
        from solver.lint.grow import Backgrounds
        from solver.reasoning.conflicts import Item, quickxplain

        start = [*pins, *(n for e in extras for n in e.fields)]
        fixed = {} if blame_pins else dict(pins)
        # Most exclusions are one or two rules away: grow the rules outwards from the fields in
        # question and explain within the first layer with no solution, asked about and explained
        # without its rules in no minimal conflict (`peel`). The last layer is every rule that can
        # interact (`relevant_rules`): explained whole, unasked (known by looking one layer ahead).
        # The layers and cores of a start are made once (`Walks`).
        walk, at = self.walks.walk(start, rules), 0
        local: list[str] = []  # (the layer; `core`, its rules that may be in a minimal conflict)
        core, core_at = local, dict[str, int]()
        shared = blame_pins and not extras  # (a totality reason: the same layers every time)
        # (A totality reason: an earlier reason's conflict proved again with these pins, `Shapes`.)
        known = self.shapes.proven(pins, self._refutes) if shared else []
        layer = walk.layer(at)
        while layer is not None:
            after, core, core_at = walk.layer(at + 1), layer.core, layer.at
            if after is None or (
                any(k.within(core_at) for k in known) or self._refuted_within(pins, core)
                if shared
                else self.query(pins, core, extras, local=False) is None
            ):
                local = layer.rules
                break
            layer, at = after, at + 1
        items = [self._rule_items.get(r) or self._rule_items.setdefault(r, Item("rule", r)) for r in core]
        if blame_pins:
            items += [Item("pin", n, v) for n, v in pins.items()]

        # The latest solutions of this reason's questions, each with the rules of `core` it is
        # known to keep and to break, learned as questions ask: set tests instead of evaluating
        # each rule of a question on each of 8 witnesses (a fifth of synthetic 400's totality
        # profile); learned lazily, as SGLang's questions are a few of its rules each.
        witnesses: list[tuple[dict[str, Scalar], set[int], set[int]]] = []
        backgrounds = Backgrounds(self.cp, fixed, extras, self._prefixes)
        backgrounds.seed(items)
        # QuickXplain asks about the items' positions (rules first, then pins): a question's
        # identity is the tuple of them, its rules the set of them less its pins (set operations
        # in C over small ints). Read by the items' identities instead, a question's rules and
        # pins took four passes over its items, a call per item each (~190 us a question of
        # ~1,800 items, 0.7 s of the totality check's reasons at 1,000 synthetic fields).
        at_rule = [self.cp.rules[r] for r in core]
        pin_of = dict(enumerate(pins.items(), len(core))) if blame_pins else {}
        pin_at = frozenset(pin_of)
        covered = [c for c in (k.covers(core_at, list(pins)) for k in known) if c is not None]

        def keeps(witness: tuple[dict[str, Scalar], set[int], set[int]], wanted: set[int]) -> bool:
            solution, kept, broken = witness
            if not broken.isdisjoint(wanted):
                return False
            for rule in wanted - kept:
                con = at_rule[rule]
                if not con.holds(tuple([solution[f] for f in con.fields])):
                    broken.add(rule)
                    return False
                kept.add(rule)
            return True

        def consistent(chosen: Sequence[int]) -> bool:
            ids = tuple(chosen)
            wanted = set(ids)
            if any(c <= wanted for c in covered):
                return False  # (it holds a conflict proved before QuickXplain: `Shapes`)
            pinned = sorted(pin_at.intersection(wanted))
            wanted.difference_update(pinned)
            given = dict(fixed)
            given.update(map(pin_of.__getitem__, pinned))
            known = backgrounds.answered(ids)
            if known is not None:
                # Asked before (an earlier reason's question over the same rules): its solution.
                # Before the witnesses, which test each rule they were not known to keep (a
                # witness of half the rules tried on three quarters of them: 3 ms).
                witnesses.insert(0, (known, wanted, set()))
                del witnesses[WITNESSES_KEPT:]
                return True
            for witness in witnesses:
                if satisfies(witness[0], given, extras) and keeps(witness, wanted):
                    backgrounds.keep(chosen, None, witness[0], ids)
                    return True
            state, around, hint = backgrounds.grow(chosen, ids)
            if state is None:
                return False  # propagation refutes it
            near = hint if hint is not None else witnesses[0][0] if witnesses else None
            names = [at_rule[p].key for p in sorted(wanted)]
            found = self.query(given, names, extras, local=False, near=near, grown=(state, around))
            if found is None:
                return False
            backgrounds.keep(chosen, state, found, ids)
            witnesses.insert(0, (found, wanted, set()))
            del witnesses[WITNESSES_KEPT:]
            return True

        try:
            conflict = quickxplain(consistent, range(len(items)))
        except CountLimitReached:
            return ["(not minimised: search budget)", *local]
        if shared:
            found = [items[p] for p in conflict]
            self.shapes.record(
                [i.name for i in found if i.kind == "rule"], [i.name for i in found if i.kind == "pin"]
            )
        return [items[p].label() for p in conflict]

    def _refutes(self, pins: dict[str, Scalar], rules: list[str]) -> bool:
        """Whether `rules` with `pins` have no solution, proved (propagation, then a search); False
        when a known solution with the pins put in keeps them, or the search budget runs out
        (`Shapes.proven`'s candidates: at 1,000 synthetic fields 664 of 720 have a solution)."""
        from solver.engine.count import CountLimitReached

        cons = [self.cp.rules[r] for r in rules]
        for known in self.pool[-WITNESSES_KEPT:]:
            row = [[pins[f] if f in pins else known[f] for f in con.fields] for con in cons]
            if all(con.holds(tuple(values)) for con, values in zip(cons, row, strict=True)):
                return False
        try:
            return (
                self.cp.start(pins, rules=rules) is None or self.query(pins, rules, [], local=False) is None
            )
        except CountLimitReached:
            return False

    def _refuted_within(self, pins: Mapping[str, Scalar], layer: list[str]) -> bool:
        """Whether `layer`'s rules with `pins` have no solution (a totality reason's look-ahead),
        the engine started from the layer's rules alone propagated, kept per layer, with the pins
        added (`State.extended`: the fixpoint of a start from scratch, so the same searches).
        Every totality reason asks about the same layers of rules around the facts, each with its
        own pins: at 1,000 synthetic fields a start of the first layer's 917 rules took 13 ms."""
        key = tuple(layer)
        if key not in self._layers:
            if len(self._layers) >= LAYERS_KEPT:
                del self._layers[next(iter(self._layers))]
            self._layers[key] = self.cp.start({}, rules=layer)
        base = self._layers[key]
        state = None if base is None else base.extended(pins, [], [])
        return state is None or self.query(pins, layer, [], local=False, started=state) is None
