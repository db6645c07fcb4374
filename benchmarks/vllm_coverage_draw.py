"""Draw vLLM oracle scenarios over the parts of contract-vllm.md the harness's make_random.py never draws.

make_random.py draws five GPUs, eight GPUs per node, each model with its usual checkpoints and the
option values people usually type. This draws uniformly over the whole contract instead: every
compute capability the harness mocks (sm70 ... sm121), every node size, any checkpoint format on
any model template, and every value of every option's domain (all KV-cache dtypes, attention
backends, quantization methods, all-to-all and MoE backends, odd block and parallel sizes). The
output is the harness's input format (JSON lines for its oracle.py), so a draw runs with

    python benchmarks/vllm_coverage_draw.py --seed N --count 500 > draw.jsonl
    ORACLE_VLLM_MODELS=... venv/bin/python oracle.py < draw.jsonl > results.jsonl

and pairs up with the scenarios as `{"scenario", "vllm"}` records for differential_vllm.py.

`--themes attention,mla,...` draws by theme instead (round robin over the themes named): each
scenario types 2-5 options that decide one thing together (attention backend, KV-cache dtype,
block size and FA version; MLA backends with heads per GPU and DCP; the parallel sizes with EP,
EPLB, DBO and the all-to-all backend; MoE backends with quantization; every KV-cache dtype with a
pinned backend of either kind on Thor, RTX PRO 6000 and DGX Spark beside Hopper and B200/B300),
over the models and GPUs where they matter. A uniform draw rarely types two of them at once.

`--short` draws commands as users type them (the harness's make_random.py: its models, checkpoints,
0-3 flags and their usual values) on the GPUs make_random never mocks (SHORT_SMS: SM 75, 86, 89,
120, 121), the rest left to vLLM's defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import oracle_vllm  # tests/ is not a package; the path is set just above

# the theme tables, beside this script (its folder is on the path when it runs)
from vllm_draw_themes import ALWAYS, ARCHS, CHECKPOINTS, NUM_GPUS, SMS, THEMES

from solver import load_pack

# The options drawn: contract-vllm.md's, with the pack's domains (which spell the contract's) except
# where noted; auto values are drawn too (vLLM cannot tell them from an unset option).
# The contract's options as the replay reads them (tests/oracle_vllm.py), and the FA version.
OPTIONS = sorted(oracle_vllm.OPTIONS | {"flash_attn_version"})
OVERRIDES: dict[str, list[Any]] = {
    # every multiple of 16 is a pack value (hybrid alignment); draw the sizes users type, odd ones too
    "block_size": [1, 8, 16, 32, 48, 64, 128, 256, 272, 544, 1024],
    # `none` is a resolved value only: vLLM has no --quantization none
    "quantization": [],
    "dtype": ["auto"],
    "attention_backend": ["auto"],
}


def domains() -> dict[str, list[Any]]:
    """Each drawn option's values: the pack's domain, adjusted by OVERRIDES."""
    pack = load_pack("vllm")
    out: dict[str, list[Any]] = {}
    for name in OPTIONS:
        values = list(pack.fields[name].domain)
        if name == "block_size":
            values = OVERRIDES[name]
        elif name == "quantization":
            values = [v for v in values if v != "none"]
        else:
            values += [v for v in OVERRIDES.get(name, []) if v not in values]
        out[name] = values
    return out


def draw(rng: random.Random, values: dict[str, list[Any]], kv: list[str] | None = None) -> dict[str, Any]:
    """One scenario: a uniform GPU, node, model and checkpoint, and 1-4 options with uniform values
    (with `kv`, a KV-cache dtype of that list always, and 0-3 other options)."""
    sc = _machine_and_model(rng, "V", SMS, ARCHS, CHECKPOINTS)
    if rng.random() < 0.4:
        sc["num_gpus"] = rng.choice(NUM_GPUS)
    if rng.random() < 0.1:
        sc["facts"] = {"has_flashinfer": False}
    names = rng.sample(OPTIONS, rng.randint(1, 4))
    if kv:
        names = ["kv_cache_dtype", *[n for n in names if n != "kv_cache_dtype"][:3]]
    for name in names:
        _type(sc, name, rng.choice(kv if kv and name == "kv_cache_dtype" else values[name]))
    return sc


def _machine_and_model(
    rng: random.Random, section: str, sms: list[int], archs: list[str], checkpoints: list[str | None]
) -> dict[str, Any]:
    """A scenario's GPU, model and checkpoint (none typed yet): both draws' start."""
    sc: dict[str, Any] = {
        "section": section,
        "platform": "cuda",
        "sm": rng.choice(sms),
        "architecture": rng.choice(archs),
        "args": {},
    }
    ckpt = rng.choice(checkpoints)
    if ckpt is not None:
        sc["checkpoint_quant"] = ckpt
    return sc


def _type(sc: dict[str, Any], name: str, value: Any) -> None:
    """Type one option (the FA version as vLLM reads it: inside `--attention-config`)."""
    if name == "flash_attn_version":
        sc["args"]["attention_config"] = {"flash_attn_version": value}
    else:
        sc["args"][name] = value


def draw_theme(rng: random.Random, values: dict[str, list[Any]], theme: str) -> dict[str, Any]:
    """One scenario of a theme: its models, GPUs and checkpoints, 2-5 of its options typed together."""
    archs, sms, checkpoints, options = THEMES[theme]
    sc = _machine_and_model(rng, f"T-{theme}", sms, archs, checkpoints)
    # The machine varies by GPU only (node size in the parallel and nodes themes, FlashInfer in
    # nodes): the oracle starts one worker per machine, which costs more than the scenarios it runs.
    if theme in ("parallel", "parthin", "dbothin"):
        sc["num_gpus"] = rng.choice([4, 8, 16] if theme == "parallel" else [2, 4, 8, 16])
    if theme == "nodes":
        sc["num_gpus"] = rng.choice([1, 2, 4])
        if rng.random() < 0.5:
            sc["facts"] = {"has_flashinfer": False}
    names = rng.sample(sorted(options), rng.randint(2, min(5, len(options))))
    if theme in ALWAYS:
        one = rng.choice(ALWAYS[theme])
        names = [one, *(n for n in names if n != one)][:5]
    for name in names:
        _type(sc, name, rng.choice(options[name] or values[name]))
    return sc


# --short (round 23): commands as users type them, on the GPUs make_random.py never mocks (it
# draws SM 80/89/90/100/120): its models, checkpoints, zero to three flags and their values
# (the ones people type), the rest left to vLLM's defaults.
SHORT_SMS = [75, 86, 89, 120, 121]
HARNESS = Path(os.environ.get("VLLM_ORACLE_HARNESS", "/work/shared/tools/vllm-oracle"))


def harness_make_random() -> ModuleType:
    """The harness's make_random.py (its tables: models, checkpoints, flags people type)."""
    sys.path.insert(0, str(HARNESS))
    import make_random  # the harness's, on the path just set

    return make_random


def draw_short(rng: random.Random, mr: ModuleType) -> dict[str, Any]:
    """One `--short` scenario: make_random.py's draw on one of SHORT_SMS."""
    arch = mr.pick(rng, [(a, m[0]) for a, m in mr.MODELS.items()])
    _, kind, checkpoints, tps = mr.MODELS[arch]
    ckpt = mr.pick(rng, checkpoints)
    wanted = mr.pick(rng, [(0, 15), (1, 35), (2, 30), (3, 20)])
    weights = mr.option_weights(kind, min(tps) >= 2)
    flags: dict[str, Any] = {}
    while len(flags) < wanted:
        left = [o for o in weights if o not in flags]
        option = rng.choices(left, weights=[weights[o] for o in left], k=1)[0]
        flags[option] = mr.draw_value(rng, option, arch, kind, ckpt, tps)
    sc = {"section": "S", "platform": "cuda", "sm": rng.choice(SHORT_SMS), "architecture": arch}
    sc["args"] = mr.to_args(flags)
    if ckpt:
        sc["checkpoint_quant"] = ckpt
    return sc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument(
        "--kv-cache-dtype",
        metavar="A,B",
        help="every scenario gives one of these KV-cache dtypes (a focused draw over their block sizes)",
    )
    parser.add_argument(
        "--themes",
        metavar="A,B",
        help=f"draw the themes named (round robin; any of {', '.join(THEMES)}) instead of uniformly",
    )
    parser.add_argument("--short", action="store_true", help="0-3 flags as users type them, rare GPUs")
    args = parser.parse_args(argv)
    mr = harness_make_random() if args.short else None
    kv = args.kv_cache_dtype.split(",") if args.kv_cache_dtype else None
    themes = args.themes.split(",") if args.themes else []
    unknown = set(themes) - set(THEMES)
    if unknown:
        parser.error(f"unknown theme(s) {sorted(unknown)}; themes: {', '.join(THEMES)}")
    rng = random.Random(args.seed)
    values = domains()
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    while len(out) < args.count:
        if mr is not None:
            sc = draw_short(rng, mr)
        elif themes:
            sc = draw_theme(rng, values, themes[len(out) % len(themes)])
        else:
            sc = draw(rng, values, kv)
        key = json.dumps(sc, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        sc["id"] = f"V{args.seed}-{len(out):04d}"
        out.append(sc)
    for sc in out:
        print(json.dumps(sc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
