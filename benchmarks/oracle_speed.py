"""How fast `check` answers against SGLang 0.5.23's own resolution, measured in one run (issue #18
item 4: a ratio taken where the oracle harness is installed, not two numbers from different days
and loads).

    ORACLE_VENV=/work/oracle-sglang .venv/bin/python benchmarks/oracle_speed.py [--count 40] [--sm 90]

Takes the public oracle scenarios of one machine (tests/fixtures/oracle/sglang-0.5.23.jsonl, CUDA
sm90 by default, so the harness starts one worker), runs them through the harness (`run.sh` of
$SGL_ORACLE_HARNESS, venv $ORACLE_VENV; resolution only, no load-time probe, its raw timings) and
then, in this process, through `check` (`solver.check`: SGLang's own default chain, the question the
harness answers). Printed, in wall milliseconds (the harness times itself with the wall clock):

- per scenario, SGLang's resolution the first time in its fork of the worker (`total_s`: ServerArgs
  built and resolved) and again in the same fork (`warm_total_s`), against `check`'s first call on
  the request and its median over `--repeat` more (caches warm);
- the start: the worker's `import torch` + `import sglang.srt.server_args` against a fresh
  interpreter's `import solver`, `load_pack("sglang")` and first `check` (median of 3);
- each as a ratio (SGLang / confsolve), and the machine's load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the checkout's solver, and tests/oracle.py

HARNESS = Path(os.environ.get("SGL_ORACLE_HARNESS", "/work/shared/tools/sglang-oracle"))
VENV = Path(os.environ.get("ORACLE_VENV", "/work/oracle-sglang"))
RESULTS = ROOT / "benchmarks" / "results" / "oracle-speed.json"

# A fresh interpreter's start, up to the first answer (`check` of the first scenario).
_START = """
import sys, time
t = time.perf_counter()
import solver
pack = solver.load_pack("sglang")
options, facts = {options!r}, {facts!r}
try:
    solver.check(pack, options, facts)
except solver.Unsatisfiable:
    pass
print(time.perf_counter() - t)
"""


def _p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1] if len(samples) > 1 else samples[0]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _sglang(scenarios: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The harness's raw results (in input order) and its workers' start-up facts."""
    run_sh = HARNESS / "run.sh"
    if not run_sh.exists() or not (VENV / "bin" / "python").exists():
        raise SystemExit(
            f"oracle_speed: needs the SGLang oracle harness ({run_sh}) and its venv ({VENV}); "
            "set SGL_ORACLE_HARNESS / ORACLE_VENV"
        )
    env = {
        **os.environ,
        "ORACLE_VENV": str(VENV),
        "ORACLE_RAW": "1",
        "ORACLE_PROBE_LOAD": "0",
        "ORACLE_JOBS": "1",
    }
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp) / "meta.jsonl"
        lines = "".join(json.dumps(s) + "\n" for s in scenarios)
        done = subprocess.run(
            ["bash", str(run_sh), "--meta", str(meta)], input=lines, capture_output=True, text=True, env=env
        )
        if done.returncode != 0:
            raise SystemExit(f"oracle_speed: the harness failed ({done.returncode}): {done.stderr[-2000:]}")
        results = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        starts = [json.loads(line) for line in meta.read_text().splitlines() if line.strip()]
    return results, starts


def _ours(rows: list[dict[str, Any]], repeat: int) -> tuple[list[float], list[float], list[bool], float]:
    """`check`'s first call and warm median per scenario (ms), whether it refused, and a fresh
    start (s, median of 3)."""
    import oracle  # tests/oracle.py: a scenario as the pack's options and facts

    import solver

    pack = solver.load_pack("sglang")
    requests = [
        oracle.inputs_for(pack, r["scenario"], oracle._public_config(r["scenario"]["id"]))[:2] for r in rows
    ]
    first: list[float] = []
    warm: list[float] = []
    refused: list[bool] = []
    for options, facts in requests:
        samples = []
        for _ in range(repeat + 1):
            start = time.perf_counter()
            try:
                solver.check(pack, options, facts)
                said = False
            except (solver.Unsatisfiable, solver.InvalidInput):  # a refusal, explained, answers too
                said = True
            samples.append((time.perf_counter() - start) * 1e3)
        first.append(samples[0])
        warm.append(statistics.median(samples[1:]))
        refused.append(said)
    options, facts = requests[0]
    code = _START.format(options=options, facts=facts)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    starts = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
            ).stdout
        )
        for _ in range(3)
    ]
    return first, warm, refused, statistics.median(starts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40, help="scenarios of the machine (default 40)")
    parser.add_argument("--sm", type=int, default=90, help="the CUDA machine's sm (default 90: H100)")
    parser.add_argument("--repeat", type=int, default=5, help="warm runs of each check (default 5)")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"the JSON written (default {RESULTS.relative_to(ROOT)})"
    )
    args = parser.parse_args(argv)

    import oracle

    rows = [
        r
        for r in oracle.load_scenarios()
        if r["scenario"].get("platform") == "cuda"
        and r["scenario"].get("sm") == args.sm
        and not r["scenario"].get("env")
    ][: args.count]
    if not rows:
        raise SystemExit(f"oracle_speed: no public scenario on cuda sm{args.sm}")
    before = _load()
    results, starts = _sglang([r["scenario"] for r in rows])
    first, warm, ours_refused, start = _ours(rows, args.repeat)
    after = _load()
    timed = [(r.get("timing") or {}) for r in results]
    imports = [
        s.get("import_torch_s", 0.0) + s.get("import_server_args_s", 0.0) for s in starts if s.get("hello")
    ]
    if len(timed) != len(rows) or any("total_s" not in t for t in timed) or not imports:
        raise SystemExit("oracle_speed: the harness gave no timings (ORACLE_RAW results expected)")
    # SGLang runs a scenario again only when its resolution accepted it: "again" compares the
    # scenarios both accept; `check` refuses some SGLang's resolution accepts (they fail when
    # SGLang loads the model) and explains each refusal (the minimal conflict): a line of its own.
    taken = [i for i, t in enumerate(timed) if "warm_total_s" in t and not ours_refused[i]]
    refused = [i for i, no in enumerate(ours_refused) if no]
    table = [
        (
            f"resolution, first in the process, {len(rows)} scenarios (ms)",
            [t["total_s"] * 1e3 for t in timed],
            first,
        ),
        (
            f"again, the {len(taken)} both accept (ms)",
            [timed[i]["warm_total_s"] * 1e3 for i in taken],
            [warm[i] for i in taken],
        ),
        ("start: SGLang's imports / import, pack, first check (s)", imports, [start]),
    ]
    print(f"{len(rows)} public oracle scenarios on cuda sm{args.sm}; wall clock; load {before} -> {after}")
    print(f"  {'median (p90)':<58} {'SGLang':>15} {'confsolve':>15} {'ratio':>7}")
    doc: dict[str, Any] = {"scenarios": len(rows), "sm": args.sm, "load": [before, after], "rows": []}
    for label, theirs, ours in table:
        a, b = statistics.median(theirs), statistics.median(ours)
        print(f"  {label:<58} {a:>7.1f} ({_p90(theirs):>5.1f}) {b:>7.1f} ({_p90(ours):>5.1f}) {a / b:>6.1f}x")
        doc["rows"].append(
            {"row": label, "sglang": [a, _p90(theirs)], "confsolve": [b, _p90(ours)], "ratio": a / b}
        )
    if refused:
        said = [warm[i] for i in refused]
        print(
            f"  the {len(refused)} check refuses (SGLang's resolution accepts "
            f"{sum('warm_total_s' in timed[i] for i in refused)} of them): again, with the explanation, "
            f"median {statistics.median(said):.1f} ms (p90 {_p90(said):.1f})"
        )
        doc["refused_again_ms"] = [statistics.median(said), _p90(said)]
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
