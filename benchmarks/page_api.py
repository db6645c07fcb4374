"""What the configurator's API costs per click, without a browser: the `POST /api/state` and
`POST /api/reasons` answers of realistic sessions, asked of `Configurator` directly.

Sessions as `benchmarks/page.py` clicks them (the required facts, two model facts, six options;
now and then a greyed value, then its first repair), each from no input. The server's set-up is
the real one (the helper process started and both processes prepared), without the warm-up of
the first states, so every state is computed, not answered from the cache. Per state: the CPU
time of the server's thread and of the helper process (`cpu_ms`, `helper_cpu_ms`) and the wall
time; per reasons answer (the low-priority worker process, after the state is drawn): its wall
time and the worker's CPU time (from /proc, 10 ms ticks). Rows: no input, one fact, every state, and
the clicks that set a fact (each has its listing under the facts it assumes anew).

    python benchmarks/page_api.py [--pack sglang] [--sessions 8] [--seed 1] [--json PATH]

Same-run comparisons of two trees: run it with `PYTHONPATH=TREE` for each, alternated.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import percentile


def _worker_cpu_ms(process: Any) -> float:
    """The CPU time (user + system) of a worker pool's processes so far, from /proc."""
    pool = getattr(process, "_pool", None)
    total = 0
    for pid in list(getattr(pool, "_processes", {}) or {}):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def _session(
    api: Any, fields: list[dict[str, Any]], rng: random.Random, greyed_rate: float
) -> list[dict[str, Any]]:
    required = [f for f in fields if f["section"] == "inputs" and f["required"]]
    model = [f for f in fields if f["section"] == "inputs" and not f["required"]]
    options = [f for f in fields if f["section"] == "options"]
    rng.shuffle(model)
    rng.shuffle(options)
    rows: list[dict[str, Any]] = []
    chosen: dict[str, str] = {}
    good: dict[str, Any] = {}

    def ask(kind: str, keep: list[str], fact: bool = False) -> dict[str, Any]:
        doc = api.answer("state", {"set": chosen, "keep": keep})
        row = {
            "kind": kind,
            "fact": fact,  # the click set a fact (the state's assumed facts are assumed anew)
            "set": dict(chosen),
            "verdict": doc["verdict"],
            "cpu_ms": doc["cpu_ms"],
            "helper_cpu_ms": doc.get("helper_cpu_ms", 0.0),
            "wall_ms": doc["elapsed_ms"],
        }
        if "choices" in doc:
            before = _worker_cpu_ms(api._reason_worker.process)
            start = time.perf_counter()
            api.answer("reasons", {"set": chosen})
            row["reasons_wall_ms"] = (time.perf_counter() - start) * 1000
            row["reasons_cpu_ms"] = _worker_cpu_ms(api._reason_worker.process) - before
            good.clear()
            good.update(doc["choices"])
        rows.append(row)
        return doc

    ask("no input", [])
    for field in required + model[:2] + options[:6]:
        entry = good.get(field["name"], {})
        possible, excluded = entry.get("possible", field["domain"]), list(entry.get("excluded", {}))
        if not possible and not excluded:
            continue
        greyed = bool(excluded) and (not possible or rng.random() < greyed_rate)
        value = rng.choice(excluded if greyed else possible)
        if chosen.get(field["name"]) == value:
            continue
        chosen[field["name"]] = value
        facts = sum(1 for f in fields if f["name"] in chosen and f["kind"] == "fact")
        doc = ask(
            "one fact" if facts == 1 and len(chosen) == 1 else "greyed" if greyed else "set",
            [field["name"]],
            field["kind"] == "fact",
        )
        if doc["verdict"] == "conflict" and doc["repairs"]:
            repair = doc["repairs"][0]
            for name in repair["unset"]:
                chosen.pop(name, None)
            chosen.update(
                {n: str(v).lower() if isinstance(v, bool) else str(v) for n, v in repair["set"].items()}
            )
            ask("repair", [])
    return rows


def _line(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:<34} (none)"
    return (
        f"{name:<34} n={len(values):>3}  p50 {percentile(values, 50):7.1f}  p90 {percentile(values, 90):7.1f}"
        f"  mean {sum(values) / len(values):7.1f}  max {max(values):7.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default="sglang")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--greyed-rate", type=float, default=0.15)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)

    import solver
    from solver import load_pack
    from solver.serve.api import Configurator, prepare

    load_before = os.getloadavg()
    api = Configurator(load_pack(args.pack))
    try:
        api.start_helper()
        prepare(api.pack)
        deadline = time.monotonic() + 300
        while not api._helper.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        fields = api.description()["fields"]
        rng = random.Random(args.seed)
        rows = [row for _ in range(args.sessions) for row in _session(api, fields, rng, args.greyed_rate)]
    finally:
        api.close()
    load_after = os.getloadavg()
    print(
        f"{args.pack} ({Path(solver.__file__).parent.parent}): {len(rows)} states in {args.sessions} "
        f"sessions, seed {args.seed}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    both = [r["cpu_ms"] + r["helper_cpu_ms"] for r in rows]
    print(_line("every state: CPU, both processes", both))
    print(_line("  the server's thread", [r["cpu_ms"] for r in rows]))
    print(_line("  critical path max(thread, helper)", [max(r["cpu_ms"], r["helper_cpu_ms"]) for r in rows]))
    print(_line("  wall", [r["wall_ms"] for r in rows]))
    for kind in ("no input", "one fact", "set", "greyed", "repair"):
        print(
            _line(
                f"{kind}: CPU, both processes",
                [r["cpu_ms"] + r["helper_cpu_ms"] for r in rows if r["kind"] == kind],
            )
        )
    facts = [r["cpu_ms"] + r["helper_cpu_ms"] for r in rows if r["fact"]]
    print(_line("a fact set: CPU, both processes", facts))
    print(_line("reasons: worker CPU", [r["reasons_cpu_ms"] for r in rows if "reasons_cpu_ms" in r]))
    print(_line("reasons: wall", [r["reasons_wall_ms"] for r in rows if "reasons_wall_ms" in r]))
    if args.json:
        Path(args.json).write_text(json.dumps({"load": [load_before, load_after], "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
