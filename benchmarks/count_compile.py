"""The whole-pack count compile (what `python -m solver.engine.shipped` writes) of copies of the code,
same-run A/B, on the shipped packs and on SGLang packs a rule tipped (round fix18).

    .venv/bin/python benchmarks/count_compile.py --tree main=/work/wt/base18 --tree new=. \\
        [--pack sglang --pack vllm --pack tipped17 --pack awq16] [--rounds 1] [--limit 6000000]

Each compile is a process with `PYTHONPATH` set to the tree (its `solver`), over a pack directory:
`sglang` / `vllm` are this checkout's shipped packs; `tipped17` is the SGLang pack with round 17's
second adjusting rule on `quantization` (sgdiff17 merged it into quant-modelopt-precision-from-
checkpoint because, alone, it made `quantization` settle more rules than `architecture`: 46.30 /
46.08, and the compile passed 6 million steps); `awq16` is the SGLang pack with round 16's AWQ
rule as sgdiff16 wrote it (quantization + is_hybrid_gdn, and the dp_size term). Both are written
into a temporary copy of `constraints/sglang`. Printed per compile: the field branched first,
steps, CPU seconds (the process's own, `time.process_time`), or `> LIMIT` when it did not finish;
the trees alternate pack by pack (same load); the machine's load before and after; results go to
benchmarks/results/count-compile.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# (file, text in the shipped pack, text of the variant); the tipping rule is appended.
_MODELOPT_WHEN = "checkpoint_quant in QUANT_MODELOPT_CHECKPOINTS and quantization != 'none'"
_MODELOPT_REQUIRE = (
    "quantization == checkpoint_quant or "
    "(quantization == 'nvfp4_online' and checkpoint_quant != 'modelopt_mixed')"
)
_TIPPED17 = [
    (
        "quantization.toml",
        f'when = "({_MODELOPT_WHEN}) or quant_algo_mxfp8"\n'
        f"require = \"{_MODELOPT_REQUIRE} or (quant_algo_mxfp8 and quantization != 'modelopt')\"",
        f'when = "{_MODELOPT_WHEN}"\nrequire = "{_MODELOPT_REQUIRE}"',
    )
]
_TIPPED17_RULE = """
[[rule]]
id = "quant-modelopt-mxfp8-export"
when = "quant_algo_mxfp8"
require = "quantization != 'modelopt'"
adjusts = "quantization"
because = "SGLang loads a ModelOpt MXFP8 export typed --quantization modelopt as mxfp8"
source = "python/sglang/srt/layers/quantization/base_config.py::_modelopt_override_quantization_method"
"""
_AWQ_HEADS = "32 * tp_size <= linear_value_heads_pow2"
_AWQ16 = [
    (
        "shapes.toml",
        "when = \"quantization == 'awq_marlin' and architecture in GDN_ARCHS "
        f'and linear_value_heads_pow2 >= 32 and not enable_dp_attention"\nrequire = "{_AWQ_HEADS}"',
        "when = \"quantization == 'awq_marlin' and is_hybrid_gdn and linear_value_heads_pow2 >= 32\"\n"
        f'require = "{_AWQ_HEADS} or '
        '(enable_dp_attention and 32 * tp_size <= linear_value_heads_pow2 * dp_size)"',
    )
]

_CHILD = """
import json, sys, time
from solver.engine.count import compile_whole, pack_counter, _given_fields, pack_checks
from solver.engine.countlimit import CountLimitReached, Limit
from solver.pack.loader import load_directory
pack = load_directory(sys.argv[1])
root = pack_counter(pack, _given_fields(pack_checks(pack)) or []).diagrams.order[0]
start = time.process_time()
try:
    steps = compile_whole(pack, limit=Limit(steps=int(sys.argv[2]))).steps
except CountLimitReached:
    steps = None
print(json.dumps({"root": root, "steps": steps, "cpu": time.process_time() - start}))
"""


def _variant(name: str, into: Path) -> Path:
    """The pack directory of `name` (a shipped pack, or a variant written under `into`)."""
    if name in ("sglang", "vllm"):
        return ROOT / "constraints" / name
    edits = {"tipped17": _TIPPED17, "awq16": _AWQ16}.get(name)
    if edits is None:
        raise SystemExit(f"count_compile: no pack {name!r} (sglang, vllm, tipped17, awq16)")
    target = into / name
    shutil.copytree(
        ROOT / "constraints" / "sglang",
        target,
        ignore=shutil.ignore_patterns("compiled-count.xz", "prebuilt.py", "__pycache__"),
    )
    for file, old, new in edits:
        text = (target / file).read_text()
        if text.count(old) != 1:
            raise SystemExit(f"count_compile: {name}: {file} no longer holds the rule it edits")
        (target / file).write_text(text.replace(old, new) + (_TIPPED17_RULE if name == "tipped17" else ""))
    return target


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, metavar="LABEL=PATH")
    parser.add_argument("--pack", action="append", default=None, help="sglang, vllm, tipped17, awq16")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--limit", type=int, default=6_000_000, help="steps before a compile is cut")
    args = parser.parse_args(argv)
    trees = [(label, Path(path).resolve()) for label, _, path in (t.partition("=") for t in args.tree)]
    packs = args.pack or ["sglang", "vllm", "tipped17", "awq16"]
    from timing import with_bytecode

    print(with_bytecode(*(tree for _, tree in trees)))
    runs: list[dict[str, object]] = []
    before = _load()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name in packs:
                directory = _variant(name, Path(tmp)) if not (Path(tmp) / name).exists() else Path(tmp) / name
                for label, tree in trees:
                    env = {**os.environ, "PYTHONPATH": str(tree), "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
                    done = subprocess.run(
                        [sys.executable, "-c", _CHILD, str(directory), str(args.limit)],
                        capture_output=True,
                        text=True,
                        env=env,
                        cwd=tree,
                        check=True,
                    )
                    run = {"pack": name, "tree": label, **json.loads(done.stdout)}
                    runs.append(run)
                    steps = (
                        f"{run['steps']:,} steps" if run["steps"] is not None else f"> {args.limit:,} steps"
                    )
                    print(
                        f"{name:<9} {label:<8} root {run['root']:<18} {steps:>18} {run['cpu']:7.1f} s CPU",
                        flush=True,
                    )
    after = _load()
    print(f"load {before} -> {after}")
    out = HERE / "results" / "count-compile.json"
    out.write_text(json.dumps({"load": [before, after], "limit": args.limit, "runs": runs}, indent=2) + "\n")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
