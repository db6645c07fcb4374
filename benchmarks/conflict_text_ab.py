"""A conflict's text, same-run A/B of copies of the code (round 30, explain30):

    .venv/bin/python benchmarks/conflict_text_ab.py base=/work/wt/base30 this=. --rounds 4

Each `LABEL=TREE` is a source tree run with `PYTHONPATH=TREE`; each round runs one process per
copy, in turn (reversed every other round), and prints, with the load:

- `chain`: the "Because ..." chain's CPU (`render.text.conflict_steps`) of vLLM's Qwen3-Next
  conflicts that hold only by cases (`--attention-backend TRITON_FLASHINFER --block-size 48 / 96`
  on a B200), `resolve` the first time and again, and `check`;
- `launch`: what the launch-command front ends add (`resolution.conflict_text`: the repairs in the
  launcher's syntax) after a predict-mode resolve, over the conflicts of the benchmark requests
  (`pack_speed.py`'s: the SGLang and vLLM oracle requests).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

QWEN3_NEXT_ON_B200 = {
    "platform": "cuda",
    "gpu_arch": "sm100",
    "architecture": "Qwen3NextForCausalLM",
    "checkpoint_quant": "none",
    "checkpoint_kv_cache_quant": "none",
    "num_attention_heads": 16,
    "num_gpus": 8,
}


def chain_child() -> dict[str, float]:
    import solver
    from solver.errors import Unsatisfiable
    from solver.reasoning.resolution import resolve
    from solver.render import text

    spent = [0.0]
    steps = text.conflict_steps

    def timed(*args: Any) -> str:
        started = time.process_time()
        try:
            return steps(*args)
        finally:
            spent[0] += time.process_time() - started

    text.conflict_steps = timed  # type: ignore[assignment]
    vllm = solver.load_pack("vllm")
    found: dict[str, float] = {}
    for block in (48, 96):
        options = {"attention_backend": "TRITON_FLASHINFER", "block_size": block}
        for name, predict in (("resolve first", False), ("resolve again", False), ("check", True)):
            spent[0] = 0.0
            with contextlib.suppress(Unsatisfiable):  # (the conflict is what is asked)
                resolve(vllm, options, QWEN3_NEXT_ON_B200, predict=predict)
            found[f"--block-size {block}, {name}"] = 1e3 * spent[0]
    return found


def launch_child() -> dict[str, float]:
    from pack_speed import sglang_requests, vllm_requests

    import solver
    from solver.errors import Unsatisfiable
    from solver.model import Repair
    from solver.reasoning.resolution import conflict_text, resolve

    def render(repair: Repair) -> str:
        return "launch " + " ".join([f"--{n}={v}" for n, v in repair.set.items()] + list(repair.unset))

    found: dict[str, float] = {}
    packs = {"sglang": solver.load_pack("sglang"), "vllm": solver.load_pack("vllm")}
    requests = {"sglang": sglang_requests(packs["sglang"]), "vllm": vllm_requests()}
    for name, pack in packs.items():
        spent, conflicts = 0.0, 0
        for options, facts in requests[name]:
            try:
                resolve(pack, options, facts, predict=True)
            except Unsatisfiable as exc:
                started = time.process_time()
                conflict_text(pack, exc, render)
                spent += time.process_time() - started
                conflicts += 1
            except Exception:  # an input problem: not a conflict
                continue
        found[f"{name}: {conflicts} conflicts"] = 1e3 * spent
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("copies", nargs="*", help="LABEL=TREE")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--only", choices=["chain", "launch"], action="append")
    ap.add_argument("--child", choices=["chain", "launch"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        found = chain_child() if args.child == "chain" else launch_child()
        import solver

        print(json.dumps({"solver": solver.__file__, "ms": found}))
        return
    copies = {label: Path(tree).resolve() for label, _, tree in (c.partition("=") for c in args.copies)}
    from timing import with_bytecode

    print(with_bytecode(*copies.values(), HERE.parent))
    for what in args.only or ["chain", "launch"]:
        load = os.getloadavg()[0]
        got: dict[str, dict[str, list[float]]] = {label: {} for label in copies}
        for n in range(args.rounds):
            for label in list(copies) if n % 2 == 0 else list(reversed(copies)):
                env = {**os.environ, "PYTHONPATH": str(copies[label]), "PYTHONHASHSEED": "0"}
                cmd = [sys.executable, str(Path(__file__).resolve()), "--child", what]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=HERE)
                if out.returncode != 0:
                    sys.exit(f"{label}: {out.stderr[-2000:]}")
                result = json.loads(out.stdout.splitlines()[-1])
                if n == 0:
                    print(f"  {label}: {result['solver']}", flush=True)
                for key, ms in result["ms"].items():
                    got[label].setdefault(key, []).append(ms)
        after = os.getloadavg()[0]
        print(f"\n{what}: CPU ms, median of {args.rounds} rounds (load {load:.1f} -> {after:.1f})")
        keys = list(next(iter(got.values())))
        print(f"  {'':40}" + "".join(f"{label:>12}" for label in copies))
        for key in keys:
            row = "".join(f"{statistics.median(got[label][key]):12.2f}" for label in copies)
            print(f"  {key:40}{row}")


if __name__ == "__main__":
    main()
