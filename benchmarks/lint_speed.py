"""`confsolve lint` speed: the shipped packs and seeded synthetic packs, with CPU time and the load.

    .venv/bin/python benchmarks/lint_speed.py                          # SGLang, vLLM, synthetic 100..400
    .venv/bin/python benchmarks/lint_speed.py --packs sglang --sizes 100,200,400,1000
    .venv/bin/python benchmarks/lint_speed.py --save /tmp/before        # keep each lint's JSON
    .venv/bin/python benchmarks/lint_speed.py --compare /tmp/before     # ... and compare with it
    .venv/bin/python benchmarks/lint_speed.py --packs sglang --sizes '' --profile 25

Each pack is linted once, in this process, after it is loaded and compiled (loading is not
timed). Printed per pack: CPU seconds of this process (`time.process_time`, the figure to read on
a shared machine), wall seconds, the load average before and after, and lint's own phase timings
(wall). Over the synthetic sizes it fits the growth exponent of CPU time (least squares on
log-log). `--save DIR` writes each lint's JSON document (which has no timings) to DIR;
`--compare DIR` reports any pack whose findings or totality stats differ from the saved ones
(the effort counters `solver_calls`, `repaired` and `witnesses` are expected to change and are
printed, not compared). Results go to benchmarks/results/lint-<label>.json. Not part of the test
suite.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import synthetic as syn  # noqa: E402

EFFORT = ("solver_calls", "repaired", "witnesses")


def _load(name: str, seed: int, tmp: Path) -> Any:
    from solver import load_pack
    from solver.pack.loader import load_directory

    if name.startswith("syn"):
        size = int(name[3:])
        return load_directory(syn.write(syn.generate(size, seed=seed), tmp / name))
    return load_pack(name)


def _fit(points: list[tuple[int, float]]) -> float | None:
    points = [(n, t) for n, t in points if t > 0]
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den, 2) if den else None


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    stats = {k: v for k, v in doc.get("stats", {}).items() if k not in EFFORT}
    return {**doc, "stats": stats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packs", default="sglang,vllm", help="shipped packs (names or paths)")
    parser.add_argument("--sizes", default="100,200,400", help="synthetic pack sizes (fields)")
    parser.add_argument("--seed", type=int, default=0, help="synthetic packs' seed (run.py's default)")
    parser.add_argument("--save", type=Path, help="write each lint's JSON document here")
    parser.add_argument("--compare", type=Path, help="compare each lint's JSON with the one saved here")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N functions")
    parser.add_argument("--label", default="latest")
    args = parser.parse_args()
    from timing import with_bytecode

    print(with_bytecode(HERE.parent))  # before solver's modules are imported (lazily, some inside lint)
    from solver.engine.csp import compile_pack
    from solver.lint.checks import lint

    names = [p for p in args.packs.split(",") if p] + [f"syn{s}" for s in args.sizes.split(",") if s]
    rows: list[dict[str, Any]] = []
    differ: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            pack = _load(name, args.seed, Path(tmp))
            compile_pack(pack)
            load_before = os.getloadavg()[0]
            profile = cProfile.Profile() if args.profile else None
            cpu, wall = time.process_time(), time.perf_counter()
            if profile is not None:
                profile.enable()
            report = lint(pack)
            if profile is not None:
                profile.disable()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            doc = report.to_json()
            row = {
                "pack": name,
                "fields": len(pack.fields),
                "rules": len(pack.rules),
                "cpu_s": round(cpu, 2),
                "wall_s": round(wall, 2),
                "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                "phases_wall_s": report.stats.get("timings", {}),
                "findings": len(report.findings),
                **{k: doc["stats"].get(k) for k in EFFORT},
            }
            rows.append(row)
            phases = ", ".join(f"{k} {v:.1f}" for k, v in row["phases_wall_s"].items())
            print(
                f"{name:>8}: {row['fields']} fields, {row['rules']} rules: "
                f"CPU {cpu:.1f} s, wall {wall:.1f} s, "
                f"load {row['load'][0]}->{row['load'][1]}; {row['findings']} findings; "
                f"{row['solver_calls']} searches, {row['repaired']} repaired; phases (wall s): {phases}",
                flush=True,
            )
            if profile is not None:
                out = io.StringIO()
                pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(args.profile)
                print(out.getvalue())
            key = Path(name).name
            if args.save is not None:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{key}.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
            saved_path = None if args.compare is None else args.compare / f"{key}.json"
            if saved_path is not None and not saved_path.exists():
                print(f"    nothing saved in {saved_path} to compare with")
            elif saved_path is not None:
                saved = json.loads(saved_path.read_text())
                if _comparable(saved) != _comparable(doc):
                    differ.append(name)
                    print(f"    DIFFERS from {args.compare / key}.json")
                else:
                    print("    same findings and stats as saved")
    sizes = [(r["fields"], r["cpu_s"]) for r in rows if r["pack"].startswith("syn")]
    growth = _fit(sizes)
    if growth is not None:
        print(f"synthetic lint CPU growth: n^{growth} over {[n for n, _ in sizes]} fields")
    out_path = HERE / "results" / f"lint-{args.label}.json"
    out_path.write_text(
        json.dumps({"label": args.label, "rows": rows, "growth": growth, "differ": differ}, indent=1) + "\n"
    )
    print(f"wrote {out_path}")
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
