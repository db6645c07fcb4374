"""The local exact step of lint's questions (`around`): searches and refutations within the rings
of rules around a question's fields, so that a question costs what its neighbourhood holds, not
the pack; and the short searches of the cases that make a question's condition true (`by_cases`).

Imports only the standard library, `solver.budget` and `solver.lint.moves` at module level; the
counter, the engine's errors and the ring walk are imported inside the functions (the CLI imports
lint at start-up).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solver.budget import RAN_OUT, within_cap
from solver.lint.moves import condition_cases, known_first

if TYPE_CHECKING:
    from solver.engine.count import Limit
    from solver.lint.oracle import PackOracle
    from solver.model import Scalar
    from solver.pack.expr import Condition

__all__ = ["around", "by_cases"]

RING_STEPS = 2000
RING_STARTS = 4
RING_SHARE = 0.5
RING_RULES = 600
QUICK_REFUTE = 1
CASE_STEPS = 500


def around(
    oracle: PackOracle,
    pins: Mapping[str, Scalar],
    rule_ids: Sequence[str],
    conditions: Sequence[Condition],
    indices: Sequence[int],
) -> tuple[dict[str, Scalar] | None, bool]:
    """The local exact step: (a solution, False), (None, True) when the question has none,
    or (None, False) when it cannot tell. It walks the layers of rules around the question's
    fields (`rule_layers`), and in each layer tries, in this order,

    - a refutation: the layer's rules alone with the question's pins and conditions. Exact:
      more rules can only leave fewer solutions;
    - a witness: every field outside the layer held at a known solution's values, a short
      search over the layer's fields with every rule that reads one. Sound: the known
      solution keeps every rule, so a rule that reads no field that may move still holds.

    Each try costs what the layer holds, where the exact search over the whole pack starts
    with a propagation of every rule: that made lint grow as n^2.2 on the synthetic packs.
    It stops at a layer holding half the pack's fields, or whose rules reading them are half
    the question's rules (`RING_RULES` for a question with pins only): the whole-pack search is
    then no dearer (SGLang's hubs reach that at once).
    """
    from solver.engine.count import CountLimitReached, Limit
    from solver.reasoning.conflicts import rule_layers

    start = [*pins, *(n for c in conditions for n in c.fields)]
    if not start:
        return None, False
    knowns = oracle.closest(pins, RING_STARTS)
    share = len(rule_ids) * RING_SHARE  # (distinct: a question's rules are a subset of the pack's)
    if not conditions:
        # A value's question (pins only) stops at a ring of `RING_RULES`: on synthetic 1,000 its
        # witnesses over the third ring (~1,000-1,250 rules, half the pack) took 60-170 ms each,
        # where the whole-pack search started from a known solution is cheaper (the values check
        # 10.0 -> 7.0 s CPU, load 23-26). At 300 rules (values 5.9 s) synthetic 400's rules
        # check that follows took 1.4 s more (its learned solutions less varied: 18 more
        # searches); at 600 the packs up to 400 fields are unchanged. Not for a rule broken:
        # there the whole-pack search is the counter's (300 rules: that check 5.7 -> 15.8 s).
        share = min(share, RING_RULES)
    limit = len(oracle.cp.domains) // 2
    steps = min(RING_STEPS, oracle.budget)
    counter = oracle.oracle  # (the exact counter of every question)

    def ask(
        given: Mapping[str, Scalar],
        rules: Sequence[str],
        cap: int = steps,
        near: Mapping[str, Scalar] | None = None,
    ) -> dict[str, Scalar] | None:
        if not conditions:
            # Pins only (a value's question): the engine's search. Each of the counter's
            # tries passed over every field of the pack (its root and component keys); the
            # engine's start and search cost the ring (synthetic 400: the values check 3.3
            # -> 2.0 s CPU). No hint: started from the known solution, the rules check that
            # follows took 3 s more. With a condition (a rule broken) the counter stays:
            # there the engine took 1.5 times as long.
            found = within_cap(oracle.cp.solve, given, rules=rules, budget=cap, task="linting")
            if found is RAN_OUT:
                raise CountLimitReached(Limit(steps=cap), cap)
            return found
        only = [oracle.index[r] for r in rules]

        def search(limit: Limit) -> dict[str, Scalar] | None:
            # Over the ring's own fields (`local`, the same search): the counter's root of each
            # new ring passed over every field of the pack, and the pins then narrowed hundreds
            # of them again. Every ring search of synthetic 1,000's lint run both ways in one
            # process, in turn: 2.46 -> 2.23 s CPU (400: 0.60 -> 0.50).
            # A witness's search tries the known solution's values first (`near`): in domain
            # order, a ring of ~1,400 rules (synthetic 1,000's rules broken) searched ~55 nodes
            # for a solution that mostly keeps them (those 23 searches 1.51 -> 0.92 s CPU).
            rank = None if near is None else known_first(near)
            return counter.solution(given, only=only, extra=indices, limit=limit, local=True, rank=rank)

        return oracle.counted(counter, search, cap)

    layers = rule_layers(oracle.cp, start, pins, rule_ids)
    after = next(layers, None)
    while after is not None:
        layer = after
        inside = {n for r in layer for n in oracle.cp.rules[r].fields if n not in pins}
        if len(inside) > limit or len(layer) > share:
            # (Before the walk's next ring, which holds this one: a fact combination's first
            # layer, the rules around 150 pinned facts at 1,000 synthetic fields, already is too
            # large, and its next ring was a walk over most of the pack per question.)
            break
        after = next(layers, None)
        moving = inside | set(start)
        # The rules reading a field that may move: the next layer (the walk's next ring reads
        # exactly the unpinned fields of this one), or this one when the walk ends here.
        ring = layer if after is None else after
        if len(ring) > share:
            break
        outside = {n for r in ring for n in oracle.cp.rules[r].fields if n not in moving}
        # The refutation first, within `QUICK_REFUTE` steps: the layer's rules alone refute
        # by propagation, no step taken (synthetic 1,000: 156 refutations, 0.05 s CPU in all),
        # where each witness held the fields outside at a known solution's values and, on a
        # question with no solution, failed after its search (704 such, 1.66 s). A layer with
        # a solution takes steps to find it (1-35 at 400; 156 such searches 0.56 s at 1,000):
        # there the quick try stops at once and the witnesses come first, as before, then the
        # whole refutation. The same searches answer, so the same answers.
        layer_has_one = False
        try:
            if ask(pins, layer, min(QUICK_REFUTE, steps)) is None:
                return None, True
            layer_has_one = True  # (the whole refutation would find it again)
        except CountLimitReached:
            pass
        try:
            for known in knowns:
                found = ask({**{n: known[n] for n in outside}, **pins}, ring, near=known)
                if found is not None:
                    return {**known, **{n: found[n] for n in moving}}, False
            if not layer_has_one and ask(pins, layer) is None:
                return None, True
        except CountLimitReached:
            continue
    return None, False


def by_cases(
    oracle: PackOracle,
    pins: Mapping[str, Scalar],
    rule_ids: Sequence[str],
    extra: Sequence[Condition],
) -> dict[str, Scalar] | None:
    """A solution found by pinning, in turn, each small case that makes the first condition
    true whatever its other fields hold (one or two of its fields), with a short search
    each; None when none gives one within its steps (which proves nothing).

    A condition such as "one of three backend fields is X and the KV dtype is not one of
    four" is a disjunction propagation cannot use, and both exact searches wander before
    they meet it (SGLang's cutedsl-mla-kv-dtype: 10-20 s); pinned as
    `attention_backend=cutedsl_mla, kv_cache_dtype=fp8_e5m2` its witness takes 70 ms. Sound
    whatever the cases are: every search still has all of `extra` and the rules.
    """

    hint = oracle.pool[-1] if oracle.pool else None
    for case in condition_cases(extra[0], pins, oracle.cp.domains):
        found = within_cap(
            oracle.cp.solve,
            {**pins, **case},
            rules=rule_ids,
            budget=min(CASE_STEPS, oracle.budget),
            task="linting",
            hint=hint,
            extra=extra,
        )
        if found is not None and found is not RAN_OUT:
            return found
    return None
