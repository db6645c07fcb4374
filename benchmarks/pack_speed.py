"""How fast `resolve` is on the vLLM pack, next to the SGLang pack, on each pack's own oracle requests.

Both packs are timed the same way, in one process with the compiled plan cached (what a launcher
calling `solver.resolve` pays per request): every oracle scenario of the pack (SGLang: its 209
scenarios, mapped by benchmarks/workload.py; vLLM: the replayed fixtures of
tests/fixtures/oracle_vllm/, mapped by tests/oracle_vllm.py), in search mode (`resolve`) and in
predict mode (`check`), `--runs` passes, median and p90 of CPU time per request (the process's, so
other jobs on a shared machine do not inflate it). The target: the vLLM pack's median no slower
than the SGLang pack's.

    .venv/bin/python benchmarks/pack_speed.py [--runs 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import oracle_vllm  # noqa: E402  (tests/ and benchmarks/ are not packages; the paths are set above)
import workload  # noqa: E402

from solver import InvalidInput, Unsatisfiable, load_pack, resolve  # noqa: E402
from solver.reasoning.resolution import plan_for  # noqa: E402

Request = tuple[dict[str, Any], dict[str, Any]]


def sglang_requests(pack: Any) -> list[Request]:
    return [(r.options, r.facts) for r in workload.oracle_requests(pack)]


def vllm_requests() -> list[Request]:
    out: list[Request] = []
    for path in sorted(oracle_vllm.FIXTURES.glob("*.jsonl.gz")):
        for record in oracle_vllm.load_records(path):
            request = oracle_vllm.request_for(record["scenario"])
            if request is not None:
                out.append(request)
    return out


def timings(pack: Any, requests: Iterable[Request], runs: int, predict: bool) -> list[float]:
    seconds: list[float] = []
    for _ in range(runs):
        for options, facts in requests:
            started = time.process_time()
            with contextlib.suppress(Unsatisfiable, InvalidInput):  # a conflict is an answer too
                resolve(pack, options, facts, reasons=False, predict=predict)
            seconds.append(time.process_time() - started)
    return seconds


def summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "requests": len(ordered),
        "median_ms": round(1000 * statistics.median(ordered), 2),
        "p90_ms": round(1000 * ordered[int(0.9 * (len(ordered) - 1))], 2),
        "mean_ms": round(1000 * statistics.fmean(ordered), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="passes over each pack's requests")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the numbers as JSON")
    args = parser.parse_args(argv)

    packs = {"sglang": load_pack("sglang"), "vllm": load_pack("vllm")}
    requests = {"sglang": sglang_requests(packs["sglang"]), "vllm": vllm_requests()}
    doc: dict[str, Any] = {}
    for name, pack in packs.items():
        plan_for(pack)
        timings(pack, requests[name][:20], 1, False)  # warm caches
        doc[name] = {
            mode: summary(timings(pack, requests[name], args.runs, mode == "predict"))
            for mode in ("search", "predict")
        }
    print(f"resolve per request, CPU, in process, plan cached ({args.runs} runs):")
    for name, modes in doc.items():
        for mode, row in modes.items():
            print(
                f"  {name:<7} {mode:<8} {row['requests']:5d} requests  median {row['median_ms']:7.2f} ms"
                f"  p90 {row['p90_ms']:7.2f} ms  mean {row['mean_ms']:7.2f} ms"
            )
    for mode in ("search", "predict"):
        ratio = doc["vllm"][mode]["median_ms"] / doc["sglang"][mode]["median_ms"]
        doc[f"ratio_{mode}"] = round(ratio, 3)
        verdict = "met" if ratio <= 1.0 else "NOT met"
        print(f"  vllm/sglang median ({mode}): {ratio:.2f}  (target <= 1: {verdict})")
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
