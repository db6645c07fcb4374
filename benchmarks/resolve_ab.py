"""Resolve speed of several copies of the code, in one run: the same-run A/B that issue #18's resolve
row is measured with on a shared machine.

    .venv/bin/python benchmarks/resolve_ab.py old=/tmp/snap new=. --rounds 4
    .venv/bin/python benchmarks/resolve_ab.py old=/tmp/snap old-on-today=/tmp/snap:constraints/sglang

Each `LABEL=TREE[:PACK]` is a source tree (a checkout or `git archive` copy, run with
`PYTHONPATH=TREE`) and, optionally, the SGLang pack directory it resolves over (default: the
tree's own `constraints/sglang`; a relative PACK is taken from this checkout). Each round runs one
process per copy, in turn, so every copy sees the same load; a process builds the requests of
`run.py --only resolve` (the oracle scenarios and case files that resolve on that copy), resolves
each once as a warm-up (its CPU time is the "first call": caches warm from other requests, not from
itself) and then `--repeat` times (the median is the request's time). Over rounds, a request's time
is its median. Printed: CPU ms per request over the requests every copy resolves (median, p10,
p90, max), and the first calls' median and p90; the machine's load before and after.

`--answers` compares instead of timing: each copy resolves every SGLang benchmark request (oracle
scenarios and case files) and every vLLM oracle request (`benchmarks/pack_speed.py`'s), in search
and predict mode, with and without reasons, and writes each answer (the resolution's JSON, or the
error's type and text) under PYTHONHASHSEED=0; the run prints how many answers differ from the
first copy's (0: byte-identical) and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def child(pack_dir: str, repeat: int, reasons: bool) -> None:
    """Run inside a copy's process: print {request id: [first CPU ms, median CPU ms]} as JSON."""
    from workload import case_requests, classify, oracle_requests

    import solver
    from solver.reasoning.resolution import plan_for, resolve

    pack = solver.load_pack(Path(pack_dir))
    plan_for(pack)
    ok, _ = classify(pack, list(oracle_requests(pack)) + list(case_requests("sglang")))
    times: dict[str, list[float]] = {}
    for req in ok:
        samples = []
        for _ in range(repeat + 1):
            start = time.process_time()
            with contextlib.suppress(Exception):  # a conflict is an answer here too
                resolve(pack, req.options, req.facts, strict=req.strict, reasons=reasons)
            samples.append((time.process_time() - start) * 1e3)
        times[req.id] = [samples[0], statistics.median(samples[1:])]
    print(json.dumps({"solver": solver.__file__, "times": times}))


def answers_child() -> None:
    """Run inside a copy's process: print every benchmark request's answer, one JSON line each."""
    from pack_speed import sglang_requests, vllm_requests
    from workload import case_requests

    import solver
    from solver.reasoning.resolution import resolve

    packs = {"sglang": solver.load_pack("sglang"), "vllm": solver.load_pack("vllm")}
    requests = {
        "sglang": sglang_requests(packs["sglang"]) + [(r.options, r.facts) for r in case_requests("sglang")],
        "vllm": vllm_requests(),
    }
    print(json.dumps(["#solver", solver.__file__]), flush=True)
    for name, pack in packs.items():
        for i, (options, facts) in enumerate(requests[name]):
            for predict in (False, True):
                for reasons in (False, True):
                    try:
                        res = resolve(pack, options, facts, reasons=reasons, predict=predict)
                        answer: Any = res.model_dump(mode="json")
                    except Exception as exc:  # a conflict or an input problem is an answer too
                        answer = f"{type(exc).__name__}: {exc}"
                    key = f"{name}:{i}:{'predict' if predict else 'search'}:{reasons}"
                    print(json.dumps([key, answer], sort_keys=True), flush=True)


def compare_answers(copies: dict[str, tuple[Path, Path]]) -> None:
    """`--answers`: every copy's answers, compared with the first copy's."""
    got: dict[str, dict[str, str]] = {}
    for label, (tree, _) in copies.items():
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--answers-child"]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{label}: {out.stderr[-2000:]}")
        # (a conflict's repairs name the pack's directory, which is the copy's own)
        text = out.stdout.replace(str(tree), "TREE")
        got[label] = {json.loads(line)[0]: line for line in text.splitlines()}
        where = json.loads(got[label].pop("#solver"))[1]
        print(f"  {label}: {len(got[label])} answers ({where})", flush=True)
    first, *others = list(got)
    differ = 0
    for label in others:
        keys = set(got[first]) | set(got[label])
        bad = sorted(k for k in keys if got[first].get(k) != got[label].get(k))
        differ += len(bad)
        print(f"{label} vs {first}: {len(keys) - len(bad)} identical, {len(bad)} differ {bad[:10]}")
    sys.exit(1 if differ else 0)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("copies", nargs="*", help="LABEL=TREE[:PACK]")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--reasons", action="store_true", help="resolve with reasons=True (run.py's second row)")
    ap.add_argument("--json", type=Path, help="also write every request's times here")
    ap.add_argument("--answers", action="store_true", help="compare the copies' answers instead of timing")
    ap.add_argument("--child", nargs=2, metavar=("PACK", "REPEAT"), help=argparse.SUPPRESS)
    ap.add_argument("--answers-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.reasons)
        return
    if args.answers_child:
        answers_child()
        return
    root = HERE.parent
    copies: dict[str, tuple[Path, Path]] = {}
    for spec in args.copies:
        label, _, rest = spec.partition("=")
        tree_text, _, pack_text = rest.partition(":")
        tree = Path(tree_text).resolve()
        pack = Path(pack_text) if pack_text else tree / "constraints" / "sglang"
        copies[label] = (tree, pack if pack.is_absolute() else root / pack)
    from timing import with_bytecode

    print(with_bytecode(*(tree for tree, _ in copies.values()), HERE.parent))
    if args.answers:
        compare_answers(copies)
    load_before = os.getloadavg()
    rounds: dict[str, list[dict[str, list[float]]]] = {label: [] for label in copies}
    cpu_total: dict[str, float] = dict.fromkeys(copies, 0.0)
    with tempfile.TemporaryDirectory() as cache:
        for n in range(args.rounds):
            for label, (tree, pack) in copies.items():
                env = {**os.environ, "PYTHONPATH": str(tree), "XDG_CACHE_HOME": f"{cache}/{label}"}
                cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(pack), str(args.repeat)]
                if args.reasons:
                    cmd.append("--reasons")
                out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{label}: {out.stderr[-2000:]}")
                result = json.loads(out.stdout)
                if n == 0:
                    print(f"  {label}: {result['solver']} over {pack}", flush=True)
                rounds[label].append(result["times"])
                cpu_total[label] += sum(t[0] + t[1] * args.repeat for t in result["times"].values())
            print(f"  round {n + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", flush=True)
    load_after = os.getloadavg()
    common = set.intersection(*(set(r[0]) for r in rounds.values()))
    print(
        f"\nresolve, reasons={args.reasons}: CPU ms per request over the {len(common)} requests every copy "
        f"resolves ({args.rounds} rounds, median of {args.repeat} after a warm-up; load "
        f"{load_before[0]:.1f} -> {load_after[0]:.1f}, 5-min {load_before[1]:.1f} -> {load_after[1]:.1f})"
    )
    head = ("copy", "n own", "median", "p10", "p90", "max")
    cells = " ".join(f"{h:>7}" for h in head[2:])
    print(f"{head[0]:<24} {head[1]:>5} {cells}  first: {'median':>7} {'p90':>7}")
    report: dict[str, Any] = {}
    for label, runs in rounds.items():
        per = {rid: statistics.median(r[rid][1] for r in runs) for rid in common}
        first = {rid: statistics.median(r[rid][0] for r in runs) for rid in common}
        vals, firsts = list(per.values()), list(first.values())
        print(
            f"{label:<24} {len(runs[0]):>5} {statistics.median(vals):>7.2f} {_percentile(vals, 0.1):>7.2f} "
            f"{_percentile(vals, 0.9):>7.2f} {max(vals):>7.2f}         {statistics.median(firsts):>7.2f} "
            f"{_percentile(firsts, 0.9):>7.2f}"
        )
        report[label] = {"per_request": per, "first": first}
    if args.json:
        args.json.write_text(json.dumps({"load": [load_before, load_after], "copies": report}, indent=1))


if __name__ == "__main__":
    main()
