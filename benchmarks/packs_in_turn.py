"""Questions to two packs in turn in one process (a server with both packs, a launcher library
asked about SGLang and vLLM): what a one-fact `valid_choices` costs when the other pack was asked
in between, against asking the same pack twice.

    python benchmarks/packs_in_turn.py [--rounds N]

Prints medians of CPU milliseconds and how many packs were compiled per question (copies for
what a request types included). Caches by digest that hold too few packs (solver.bounded) show
as compiles on every turn.
"""

from __future__ import annotations

import argparse
import statistics
import time

import solver
from solver.engine import csp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    packs = {name: solver.load_pack(name) for name in ("sglang", "vllm")}
    compiled = 0
    real_init = csp.CompiledPack.__init__

    def counting_init(self: csp.CompiledPack, pack: solver.Pack) -> None:
        nonlocal compiled
        compiled += 1
        real_init(self, pack)

    csp.CompiledPack.__init__ = counting_init  # type: ignore[method-assign]

    def ask(name: str) -> tuple[float, int]:
        nonlocal compiled
        compiled = 0
        started = time.process_time()
        solver.valid_choices(packs[name], {}, {"platform": "cuda"})
        return (time.process_time() - started) * 1000, compiled

    for name in packs:  # warm: imports, compiles, supports
        ask(name)
        ask(name)
    turns = ((("sglang", "sglang"), "same pack again"), (("vllm", "sglang"), "after the other pack"))
    for order, label in turns:
        times, compiles = [], []
        for _ in range(args.rounds):
            ask(order[0])
            ms, made = ask(order[1])
            times.append(ms)
            compiles.append(made)
        print(
            f"sglang one fact, {label:22s} median {statistics.median(times):7.1f} ms CPU, "
            f"max {max(times):7.1f}; packs compiled per question {statistics.median(compiles):.0f}"
        )


if __name__ == "__main__":
    main()
