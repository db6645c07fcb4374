"""Cold start and garbage collection of several copies of the code, in one run (same-run A/B).

    .venv/bin/python benchmarks/cold_ab.py main=/tmp/snap branch=. --rounds 8
    .venv/bin/python benchmarks/cold_ab.py main=/tmp/snap branch=. --only explain --size 5000
    .venv/bin/python benchmarks/cold_ab.py main=/tmp/snap branch=. --only installed --rounds 9

Each `LABEL=TREE` is a source tree (a checkout or a `git archive` copy) run with `PYTHONPATH=TREE`;
each round runs every copy in turn, so all see the same load. Sections:

- `check`: `python -m solver check ...` as its own process, CPU time of the child over `python -c
  pass` of an environment with nothing installed (`timing.bare_python`), with a warm disk cache
  (one per copy, filled before the rounds) and with an empty one (a new directory each run); the
  copies' bytecode is compiled first, as an install has it.
- `installed`: each copy built into a wheel (`pip wheel`) and installed into a fresh virtual
  environment, as a user installs it (pip compiles the bytecode); `confsolve check` from the
  console script with an empty cache, over that environment's `python -c pass`, and in the same
  rounds the source tree as `check` runs it (`python -m solver`, over a bare venv's start): both
  rows of one run (not in the default `--only`: building and installing take a minute or two).
- `conditions`: every condition of the SGLang pack (rules, their `when`s, preferences) called
  200 times, `holds` on fixed values and `partial` on maps missing ~40 % of its fields (best of
  three, CPU ms).
- `explain`: the synthetic pack of `--size` fields loaded and compiled, the objects the garbage
  collector tracks then, and explain + repairs of its impossible request (one warm-up, then
  `--calls` calls, 2 by default: CPU s of each, the full collections inside it and their CPU s,
  its young collections and the objects it promoted to the oldest generation).
Prints the medians per copy, and the machine's load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from timing import bare_python, with_bytecode  # noqa: E402

CHECK = ["check", "--set", "platform=cuda", "--set", "gpu_arch=sm90"]
CHECK += ["--set", "architecture=LlamaForCausalLM", "--set", "tp_size=8"]


def _cpu_ms(cmd: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, env=env, capture_output=True, cwd=tempfile.gettempdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:  # a command that fails fast would look like a fast start
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr[-500:]!r}")
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3


def check(trees: dict[str, str], rounds: int) -> None:
    py = sys.executable  # the copies' bytecode: compiled by main (with_bytecode), as pip does at install
    runs: dict[str, dict[str, list[float]]] = {k: {"floor": [], "warm": [], "empty": []} for k in trees}
    with tempfile.TemporaryDirectory() as base:
        floor = bare_python(base)  # not this environment's: see timing.bare_python
        warm = {label: tempfile.mkdtemp(dir=base) for label in trees}
        for label, tree in trees.items():  # fill the warm caches (twice: see pack.condcache)
            for _ in range(2):
                _cpu_ms(
                    [py, "-m", "solver", *CHECK],
                    {**os.environ, "PYTHONPATH": tree, "XDG_CACHE_HOME": warm[label]},
                )
        for _ in range(rounds):
            for label, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": tree, "XDG_CACHE_HOME": warm[label]}
                runs[label]["floor"].append(_cpu_ms([floor, "-c", "pass"], env))
                runs[label]["warm"].append(_cpu_ms([py, "-m", "solver", *CHECK], env))
                empty = {**env, "XDG_CACHE_HOME": tempfile.mkdtemp(dir=base)}
                runs[label]["empty"].append(_cpu_ms([py, "-m", "solver", *CHECK], empty))
    print(f"check: CPU ms over `python -c pass`, median of {rounds} interleaved rounds")
    for label, got in runs.items():
        floor = statistics.median(got["floor"])
        print(
            f"  {label:<16} floor {floor:4.0f}  warm cache +{statistics.median(got['warm']) - floor:4.0f}"
            f"  empty cache +{statistics.median(got['empty']) - floor:4.0f}"
        )


def installed(trees: dict[str, str], rounds: int) -> None:
    """Each copy built into a wheel and installed into a fresh virtual environment (pip compiles
    the bytecode at install, as for a user), then `confsolve check` from its console script with a
    new empty cache each run, over that environment's `python -c pass`, interleaved."""
    with tempfile.TemporaryDirectory() as base:
        venvs = {}
        for label, tree in trees.items():
            wheels, venv = Path(base) / f"{label}-wheel", Path(base) / f"{label}-venv"
            source = Path(base) / f"{label}-source"  # pip builds in the tree: not in the copy's own
            skip = shutil.ignore_patterns(".git", ".venv*", "__pycache__", "build", "*.egg-info")
            shutil.copytree(tree, source, ignore=skip)
            pip = [sys.executable, "-m", "pip"]
            subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)], check=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            (wheel,) = wheels.glob("*.whl")
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True)
            venvs[label] = venv
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        floor_of_source = bare_python(base)
        runs: dict[str, dict[str, list[float]]] = {
            k: {"floor": [], "empty": [], "bare": [], "source": []} for k in trees
        }
        for _ in range(rounds):
            for label, venv in venvs.items():
                empty = {**env, "XDG_CACHE_HOME": tempfile.mkdtemp(dir=base)}
                runs[label]["floor"].append(_cpu_ms([str(venv / "bin" / "python"), "-c", "pass"], empty))
                runs[label]["empty"].append(_cpu_ms([str(venv / "bin" / "confsolve"), *CHECK], empty))
                # The same copy from its source tree, as the `check` section and run.py time it,
                # in the same rounds: the two rows of one run, not of two (round 29: the quiet
                # +190 installed against run.py's +126 were medians of 5 and 10 from two runs).
                source = {**env, "PYTHONPATH": trees[label], "XDG_CACHE_HOME": tempfile.mkdtemp(dir=base)}
                runs[label]["bare"].append(_cpu_ms([floor_of_source, "-c", "pass"], source))
                runs[label]["source"].append(_cpu_ms([sys.executable, "-m", "solver", *CHECK], source))
    print(f"installed: CPU ms of `confsolve check` over `python -c pass`, empty cache, median of {rounds}")
    for label, got in runs.items():
        floor = statistics.median(got["floor"])
        over = statistics.median(got["empty"]) - floor
        source = statistics.median(got["source"]) - statistics.median(got["bare"])
        shown = f"empty cache +{over:4.0f}  (the tree, same rounds: +{source:4.0f})"
        print(f"  {label:<16} floor {floor:4.0f}  {shown}")


def _child(section: str, size: int, calls_timed: int = 2) -> dict[str, Any]:
    """Inside a copy's process: the section's numbers as a JSON-able dict."""
    import gc
    import itertools
    import random
    import time

    os.environ["CONFSOLVE_NO_CACHE"] = "1"
    sys.path.insert(0, str(HERE))
    import solver
    from solver.pack.loader import load_directory, semantics

    if section == "conditions":
        pack = solver.load_pack("sglang")
        sem = semantics(pack)
        conds = [
            c for c in itertools.chain(sem.rules.values(), sem.whens.values(), sem.preferences.values()) if c
        ]
        rng = random.Random(1)
        rows = [(c, tuple(rng.choice(pack.fields[f].domain) for f in c.fields)) for c in conds]
        maps = [
            (c, {f: v for f, v in zip(c.fields, values, strict=True) if rng.random() < 0.6})
            for c, values in rows
        ]

        def timed() -> tuple[float, float]:
            start = time.process_time()
            for _ in range(200):
                for c, values in rows:
                    c.holds(values)
            middle = time.process_time()
            for _ in range(200):
                for c, known in maps:
                    c.partial(known)
            return (middle - start) * 1e3, (time.process_time() - middle) * 1e3

        timed()
        best = min(timed() for _ in range(3))
        return {"conditions": len(rows), "holds_ms": best[0], "partial_ms": best[1]}
    import synthetic as syn

    from solver.reasoning.resolution import plan_for

    spec = syn.generate(size, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        pack = load_directory(syn.write(spec, Path(tmp) / f"syn{size}"))
    plan_for(pack)
    tracked = len(gc.get_objects())
    options, facts = syn.impossible_request(spec, 0)
    full = [0.0, 0.0]
    # The objects a collection of the middle generation moves to the oldest (those alive in the
    # two younger ones when it starts): CPython collects the oldest when they pass a quarter of
    # those already there, so they are what sets off the full collections to come, whichever
    # call they then fall in. Counted, not timed: the same on a loaded machine.
    promoted = [0]

    def collected(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                full[1] = time.process_time()
            else:
                full[0] += time.process_time() - full[1]
        elif info["generation"] == 1 and phase == "start":
            promoted[0] += len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))

    gc.callbacks.append(collected)
    calls = []
    for _ in range(1 + calls_timed):
        before = [s["collections"] for s in gc.get_stats()]
        full[0], promoted[0] = 0.0, 0
        start = time.process_time()
        solver.explain(pack, options, facts)
        took = time.process_time() - start
        after = [s["collections"] for s in gc.get_stats()]
        calls.append([took, after[2] - before[2], full[0], after[0] - before[0], promoted[0]])
    return {"tracked": tracked, "calls": calls[1:]}


def children(trees: dict[str, str], rounds: int, section: str, size: int, calls: int = 2) -> None:
    got: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for _ in range(rounds):
        for label, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": tree}
            cmd = [sys.executable, __file__, "--child", section, "--size", str(size), "--calls", str(calls)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            got[label].append(json.loads(out.splitlines()[-1]))
    for label, docs in got.items():
        if section == "conditions":
            holds = ", ".join(f"{d['holds_ms']:.0f}" for d in docs)
            partial = ", ".join(f"{d['partial_ms']:.0f}" for d in docs)
            shown = f"{docs[0]['conditions']} conditions x 200: holds {holds} ms, partial {partial} ms"
            print(f"  {label:<16} {shown}")
        else:
            calls = " / ".join(
                ", ".join(
                    f"{t:.2f} s ({n} full, {g:.2f} s; {y} young, {p / 1000:.0f}k promoted)"
                    for t, n, g, y, p in d["calls"]
                )
                for d in docs
            )
            print(f"  {label:<16} {docs[0]['tracked']:,} tracked; explain {calls}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("copies", nargs="*", help="LABEL=TREE")
    ap.add_argument("--only", default="check,conditions,explain")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--size", type=int, default=5000, help="synthetic fields for explain")
    ap.add_argument("--calls", type=int, default=2, help="explain: timed calls per process (after a warm-up)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.size, args.calls)))
        return
    trees = dict(copy.split("=", 1) for copy in args.copies)
    print(with_bytecode(*trees.values(), HERE.parent))
    print(f"load {os.getloadavg()[0]:.1f}")
    for section in args.only.split(","):
        if section == "check":
            check(trees, args.rounds)
        elif section == "installed":
            installed(trees, args.rounds)
        else:
            rounds = args.rounds if section == "conditions" else min(args.rounds, 2)
            print(f"{section}: {rounds} rounds alternated")
            children(trees, rounds, section, args.size, args.calls)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
