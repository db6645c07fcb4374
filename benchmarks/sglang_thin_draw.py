"""Draw SGLang oracle scenarios where the differential fixture is thinnest, and run them (round 14).

A count of the fixture's 6,610 records (round 13) by machine x model family x flag family found
these cells nearly empty: PD disaggregation (50 records) and LoRA (51) anywhere, speculative
decoding with the attention backends typed beside it off Hopper / Blackwell datacenter GPUs, the
hybrid Mamba families (Nemotron-H, Falcon-H1, LFM2: only round 12's grid), multimodal models
(Qwen3-VL, Llama 4, the published Qwen2.5-VL and Gemma 3 configs), DP attention x EP x MoE runner on
the rare machines, and the machines themselves: A6000 (sm86), Thor (sm110), T4, GB10 (sm121), B300
(sm103), a CPU without AMX, an H100 without FlashInfer, MI355X without aiter, Ascend. (XPU is not
drawn: the harness cannot mock it.)

Each scenario picks one of those machines (`--groups` of THIN_MACHINES, one harness worker each)
and one theme (THIN_THEMES), which types the theme's flags together with values from the pack's
domains (values make_random never draws weighted up, as `sglang_coverage_draw.py` does), plus a
checkpoint format 40 % of the time on a template.

    .venv/bin/python benchmarks/sglang_thin_draw.py --seed N --count 240 --groups 12 > draw.jsonl
    .venv/bin/python benchmarks/sglang_thin_draw.py --seed N ... --run records.jsonl

`--only spec_attn,pd` (round 26) draws those themes alone, weighted as listed, on the same machines.
Ids are T<seed>-<n>-<theme>-<machine>-<model>; the records go to benchmarks/differential.py.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sglang_coverage_draw as coverage

THIN_MACHINES: list[tuple[str, dict[str, Any]]] = [
    ("a6000", {}),
    ("thor", {}),
    ("t4", {}),
    ("gb10", {}),
    ("b300", {}),
    ("cpu", {"facts": {"amx": False}}),
    ("cpu", {}),
    ("h100", {"facts": {"has_flashinfer": False}}),
    ("mi355x", {}),
    ("ascend910b", {}),
    ("rtxpro6000", {}),
    ("l40s", {}),
]
THIN_THEMES = ["pd", "pd", "lora", "hybrid", "spec_attn", "spec_attn", "multimodal", "dp_ep_moe"]
HYBRID_FAMILIES = ["NemotronH", "FalconH1", "Lfm2"]
MULTIMODAL_FAMILIES = ["Qwen3VL"]
MULTIMODAL_CONFIGS = ["qwen2.5-vl-7b-instruct", "gemma-3-27b-it", "llama-4-scout-17b-16e-instruct"]
MOE_TEMPLATES = [
    "Qwen3MoeForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV2ForCausalLM",
    "GptOssForCausalLM",
    "Glm4MoeForCausalLM",
    "MixtralForCausalLM",
]
PD_TRANSFER = ["mooncake", "nixl", "fake", "mori", "ascend", "mooncake_tcp"]
PD_RELATED = ["moe_a2a_backend", "kv_cache_dtype", "attention_backend", "page_size", "speculative_algorithm"]
SPEC_ATTENTION = [
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "speculative_draft_attention_backend",
    "page_size",
    "kv_cache_dtype",
]


def _model(rng: random.Random, theme: str, tables: coverage.Tables) -> tuple[dict[str, Any], str]:
    """The model of one scenario (template, family written with hf_overrides, or published
    config) and its tag for the id."""
    if theme == "hybrid" and rng.random() < 0.6:
        tag = rng.choice(HYBRID_FAMILIES)
        arch, overrides = coverage.DEFAULT_FAMILIES[tag]
        return {"architecture": arch, "hf_overrides": overrides}, tag
    if theme == "hybrid":
        return {"architecture": "Qwen3NextForCausalLM"}, "Qwen3NextForCausalLM"
    if theme == "multimodal":
        pick = rng.random()
        if pick < 0.35:
            tag = rng.choice(MULTIMODAL_FAMILIES)
            arch, overrides = coverage.DEFAULT_FAMILIES[tag]
            return {"architecture": arch, "hf_overrides": overrides}, tag
        if pick < 0.7:
            tag = rng.choice(MULTIMODAL_CONFIGS)
            return {"model_path": str(coverage.MODELS / tag)}, tag
        return {"architecture": "Llama4ForConditionalGeneration"}, "Llama4ForConditionalGeneration"
    if theme == "dp_ep_moe":
        arch = rng.choice(MOE_TEMPLATES)
        return {"architecture": arch}, arch
    arch = rng.choice(tables.architectures)
    return {"architecture": arch}, arch


def _theme(rng: random.Random, theme: str, tables: coverage.Tables, args: dict[str, Any]) -> None:
    """Type one theme's flags into `args`."""
    if theme == "pd":
        args["disaggregation_mode"] = rng.choice(["prefill", "decode"])
        args["disaggregation_transfer_backend"] = rng.choice(PD_TRANSFER)
        for name in rng.sample(PD_RELATED, rng.choice([1, 1, 2])):
            args[name] = tables.value(rng, name)
    elif theme == "lora":
        args["enable_lora"] = True
        args["max_lora_rank"] = rng.choice([8, 16, 64])
        args["lora_target_modules"] = ["all"]
        args["moe_runner_backend"] = rng.choice(coverage.LORA_RUNNERS)
        if rng.random() < 0.4:
            args["quantization"] = tables.value(rng, "quantization")
    elif theme == "hybrid":
        related = ["page_size", "attention_backend", "speculative_algorithm", "kv_cache_dtype", "tp_size"]
        for name in rng.sample(related, rng.choice([1, 2])):
            args[name] = tables.value(rng, name)
    elif theme == "spec_attn":
        args["speculative_algorithm"] = tables.value(rng, "speculative_algorithm")
        for name in rng.sample(SPEC_ATTENTION, rng.choice([1, 2, 2])):
            args[name] = tables.value(rng, name)
    elif theme == "multimodal":
        related = ["attention_backend", "kv_cache_dtype", "quantization", "tp_size", "page_size"]
        for name in rng.sample(related, rng.choice([0, 1, 2])):
            args[name] = tables.value(rng, name)
    else:  # dp_ep_moe
        args["enable_dp_attention"] = True
        args["dp_size"] = rng.choice([2, 4, 8])
        args["tp_size"] = rng.choice([2, 4, 8])
        if rng.random() < 0.6:
            args["ep_size"] = rng.choice([2, 4, 8])
        args["moe_runner_backend"] = tables.value(rng, "moe_runner_backend")
        if rng.random() < 0.5:
            args["moe_a2a_backend"] = tables.value(rng, "moe_a2a_backend")


def draw_thin(seed: int, count: int, groups: int, themes: list[str] | None = None) -> list[dict[str, Any]]:
    """`count` scenarios on `groups` of THIN_MACHINES (see the module docstring), each theme drawn
    from THIN_THEMES, or from `themes` (`--only`: the same draw of machines, other themes)."""
    mr = coverage.make_random()
    tables = coverage.Tables(mr)
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i, hw, extra in coverage.machine_turns(rng, THIN_MACHINES, groups, count):
        theme = rng.choice(themes or THIN_THEMES)
        model, tag = _model(rng, theme, tables)
        sc: dict[str, Any] = {**tables.hardware[hw], **extra, **model}
        tables.checkpoint(rng, sc, 0.4)
        args: dict[str, Any] = {}
        _theme(rng, theme, tables, args)
        args = {name: value for name, value in args.items() if value != "none" or name in coverage.TYPED_NONE}
        out.append(
            coverage.finished(sc, args, tables.draft_algorithms, f"T{seed}-{i:05d}-{theme}-{hw}-{tag}")
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=240)
    parser.add_argument("--groups", type=int, default=len(THIN_MACHINES), help="machine groups")
    parser.add_argument("--run", type=Path, metavar="OUT", help="run the draw, write the records here")
    parser.add_argument("--jobs", type=int, default=2, help="harness groups at a time (with --run)")
    themes = ", ".join(sorted(set(THIN_THEMES)))
    parser.add_argument(
        "--only",
        type=lambda text: text.split(","),
        metavar="THEME,...",
        help=f"draw only these of {themes} (weighted as listed)",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or ()) - set(THIN_THEMES))
    if unknown:
        parser.error(f"--only: unknown theme {', '.join(unknown)} (themes: {themes})")
    scenarios = draw_thin(args.seed, args.count, max(1, min(args.groups, args.count)), args.only)
    if args.run is None:
        sys.stdout.write("".join(json.dumps(sc, sort_keys=True) + "\n" for sc in scenarios))
        return 0
    coverage.run(scenarios, args.run, args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
