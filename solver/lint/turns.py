"""The exact searches of a lint question that the local steps left open, in turn (`turns`).

Two searches with different strengths: the engine's arc consistency, started from a known
solution, finds solutions hidden behind disjunctions and refutes most questions by propagation;
the counter's propagation refutes case splits at once. Each gets a short try, then the engine
the whole budget (`PackOracle.query` asks them in this order, and the counter's whole budget
last).

Imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.model import Scalar

__all__ = ["COUNTER_FIRST", "FIRST_STEPS", "QUICK_STEPS", "REFUTE_STEPS", "Ask", "turns"]

FIRST_STEPS = 125
QUICK_STEPS = 2000
COUNTER_FIRST = 250
REFUTE_STEPS = 100

Ask = Callable[[int], "dict[str, Scalar] | None"]
"""A search given its steps: a solution, None (proved), or it raises on running out."""


def turns(
    engine: Callable[[int, Mapping[str, Scalar] | None], dict[str, Scalar] | None],
    counter: Ask,
    hint: Mapping[str, Scalar] | None,
    *,
    condition: bool,
    quickxplain: bool,
    budget: int,
) -> list[tuple[int, Ask]]:
    """The searches of a question in turn, as (steps, ask): `engine(steps, hint)` and
    `counter(steps)`. `condition`: the question has ad-hoc conditions (a rule broken, a `when`);
    `quickxplain`: it is one of QuickXplain's (no local step before it); `budget`: a search's
    whole budget."""
    # The engine's first try is shorter with a condition: on vLLM's block-size rules it spent
    # its 2,000 steps (4 s) where the counter needs 10. Without one the engine first: on the
    # synthetic 300-field pack that made the totality check 14 s -> 1 s.
    first = FIRST_STEPS if condition else QUICK_STEPS
    out: list[tuple[int, Ask]] = [
        (first, lambda s: engine(s, hint)),
        (QUICK_STEPS, counter),
        (QUICK_STEPS, lambda s: engine(s, hint)),
        (budget, lambda s: engine(s, None)),
    ]
    if condition and not quickxplain:
        # The counter's try that answers does so within a few steps (SGLang, vLLM, synthetic
        # 400 and 1,000: every one within 125); one that runs its 2,000 out has met a component
        # it cannot split (SGLang's one, synthetic 1,000's r000224 twice: 0.3 s each, a counter
        # node over ~2,500 open checks ~6 ms), where the engine's hinted try then answers in
        # ~10 ms. So its first try is short, and its whole one after the engine's.
        out[1:3] = [(COUNTER_FIRST, counter), out[2], (QUICK_STEPS, counter)]
    elif not condition:
        # No condition: the engine's try again would be the same; and the counter gets a short
        # try only, a refuter. On synthetic 1,000 the questions whose 2,000 engine steps ran out
        # were refuted by the counter in a few steps (1 ms) or answered "yes" by the engine's
        # search with no hint in 0.05-0.5 s, where the counter's 2,000 steps took 2.7-5.4 s.
        out[1:3] = [(REFUTE_STEPS, counter)]
    if hint is None:
        # No known solution yet (the first question, "is the pack satisfiable"): the hinted try
        # is the last turn's search cut short, whose steps that search takes again (synthetic
        # 1,000: 2,000 steps, 0.4 s, then the counter's 100 ran out too).
        out = out[-1:]
    if condition and quickxplain:
        # QuickXplain's questions with a condition: propagation refutes many at once; the
        # counter's try answers nearly all the rest, where the engine's 125 steps ran out (60 ms
        # each on vLLM's block-size rules: lint 12.2 -> 8.2 s CPU; on the synthetic packs the
        # engine refutes most by propagation).
        out.insert(0, (QUICK_STEPS, counter))
    return out
