"""A newcomer's first `confsolve count`: whole processes, each in an empty cache, same-run A/B.

    .venv/bin/python benchmarks/count_first.py --tree main=/tmp/snap --tree new=. [--rounds 2]

Each run is `python -m solver count ...` in a fresh `XDG_CACHE_HOME` (no pack cache, no compiled
count kept: what the first count after an install sees), with `PYTHONPATH` and the working
directory set to the tree (so its `solver` and its `constraints/`, shipped compiled forms
included, are the ones run). The trees alternate query by query (same load), and each run's CPU
(user + system, from `wait4`), wall time and peak memory are printed with the machine's load;
results go to benchmarks/results/count-first.json. The count printed must be the same in every
tree (the script says when it is not).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

QUERIES: list[list[str]] = [
    ["--set", "platform=cuda"],
    [],
    ["--set", "quantization=fp8"],
    ["--set", "platform=cuda", "--set", "gpu_arch=sm90"],
    ["--set", "attention_backend=fa3"],
    ["--set", "platform=cuda", "--by", "gpu_arch"],
    ["--set", "quantization=fp8", "--set", "moe_runner_backend=flashinfer_cutedsl"],
]


def run(tree: Path, query: list[str]) -> dict[str, object]:
    """One `count` process in an empty cache: its first output line, CPU, wall and peak."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache, "PYTHONPATH": str(tree)}
        env.pop("CONFSOLVE_NO_CACHE", None)
        started = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, "-m", "solver", "count", *query],
            cwd=tree,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert child.stdout is not None
        out = child.stdout.read().decode()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "answer": out.splitlines()[0].split(" (")[0] if out else "",
        "by": [line for line in out.splitlines()[1:] if ":" in line][:3],
        "exit": child.returncode,
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "wall_s": round(time.monotonic() - started, 2),
        "peak_mb": usage.ru_maxrss // 1024,
        "load": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH (a source tree)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--query", action="append", help="a query's arguments, e.g. '--set platform=cuda'")
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in args.tree)}
    queries = [q.split() for q in args.query] if args.query else QUERIES
    from timing import with_bytecode

    print(with_bytecode(*trees.values()))
    rows = []
    for round_ in range(args.rounds):
        for query in queries:
            answers = set()
            for name, tree in trees.items():
                row = {"round": round_ + 1, "tree": name, "query": " ".join(query) or "(whole pack)"}
                row.update(run(tree, query))
                answers.add(row["answer"])
                rows.append(row)
                print(
                    f"load {row['load']:5.1f}  {name:8} {row['query']:60} cpu {row['cpu_s']:6.2f} s"
                    f"  wall {row['wall_s']:6.2f} s  peak {row['peak_mb']:4} MB  exit {row['exit']}",
                    flush=True,
                )
            if len(answers) > 1:
                print(f"  DIFFERENT COUNTS: {sorted(answers)}", flush=True)
    out = HERE / "results" / "count-first.json"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out.write_text(json.dumps({"when": when, "runs": rows}, indent=1) + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()
