"""Cold `valid_choices` of the code on sys.path, optionally over another copy of the pack: separates
what a change to the code costs from what a change to the pack costs.

    python benchmarks/cold_choices.py [--pack DIR] [--runs N]
    PYTHONPATH=/path/to/other/checkout python benchmarks/cold_choices.py --pack old/constraints/sglang

"Cold" as in `benchmarks/run.py --only choices`: the pack compiled and its answer tables warm, the
supports of the choices (`CompiledPack.memo["supports"]`) dropped before each call. Prints the
median and the minimum of wall and CPU milliseconds for no input and for platform=cuda.
"""

from __future__ import annotations

import argparse
import statistics
import time

import solver

try:  # the layered tree, else the flat one (to compare with revisions before the move)
    from solver.reasoning.resolution import plan_for
except ImportError:
    from solver.resolution import plan_for  # type: ignore[import-not-found,no-redef,unused-ignore]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default="sglang", help="a pack name or directory (default: sglang)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    pack = solver.load_pack(args.pack)
    compiled = plan_for(pack).compiled
    solver.valid_choices(
        pack, {}, {}
    )  # imports and the pack's tables warm, as run.py's earlier sections leave them
    print(f"{solver.__file__} pack {args.pack}: {len(pack.rules)} rules")
    for label, facts in (("no input", {}), ("platform=cuda", {"platform": "cuda"})):
        walls, cpus = [], []
        for _ in range(args.runs):
            compiled.memo.pop("supports", None)
            wall, cpu = time.perf_counter(), time.process_time()
            solver.valid_choices(pack, {}, facts)
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        print(
            f"  valid_choices cold, {label:14} wall median {statistics.median(walls):6.1f}"
            f" min {min(walls):6.1f}   cpu median {statistics.median(cpus):6.1f} min {min(cpus):6.1f} ms"
        )


if __name__ == "__main__":
    main()
