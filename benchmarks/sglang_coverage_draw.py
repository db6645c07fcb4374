"""Draw SGLang oracle scenarios over what the harness's make_random.py never draws, and run them.

make_random.py draws 13 machines with fixed weights, the 12 templates, 0-3 flags among 17 options
(its CHOICES table) and, now and then, one of 4 environment variables. Its tables are read here
(imported from the harness) and the complement is drawn instead: every machine the harness mocks
with equal weight (also sm70/sm75, which the pack knows), the harness's facts make_random leaves at
their defaults (no FlashInfer or triton_kernels on CUDA, driver 595, a CPU without AMX), each option
of the pack (also those make_random never types: the DSA backends, the draft attention backend)
with the values make_random never draws weighted up (the pack's domains spell them), 3-5 flags at
once more often than not, every environment variable the pack reads, drafts of another template
or quantization, `sglang serve`'s argparse path (`"entry": "cli"`) and the published configs under
tests/fixtures/models/ (`"model_path"`).

Scenarios come in machine x environment groups (`--groups`): the harness starts one worker per
group (30-45 s with the load-time probe on two busy cores), so the group count, not the scenario
count, sets most of a run's time.

    .venv/bin/python benchmarks/sglang_coverage_draw.py --seed N --count 400 --groups 24 > draw.jsonl
    .venv/bin/python benchmarks/sglang_coverage_draw.py --seed N ... --run records.jsonl

`--themes` draws instead the kinds make_random under-samples (round 9, seed 48611): its rarest
machines (gfx950, NPU, SM110, SM12x, SM103; a dozen machine x environment groups), the MoE, hybrid,
DSA, GPT-OSS and Llama 4 templates weighted up, and each scenario built around a theme that types
related flags together (speculative decoding with its runner and attention flags, DP attention with
the parallel sizes, an all-to-all backend with EP and a runner, quantization with a runner and KV
dtype, split attention backends with page size / KV dtype / deterministic inference), with values
from make_random's CHOICES, plus 0-2 other flags.

`--defaults` (round 13) draws short launches instead (DEFAULT_MACHINES): a template, a family no
template has (written with `hf_overrides`), or a published config, a checkpoint half the time and no
flag or one, so that SGLang's own automatic choices decide (`check` must never say ok where they fail).

`--short` (round 23) draws commands as users type them (SHORT_MACHINES): zero to three flags
weighted by how often they are typed, on the rare machines (SM120, SM103, SM110, GB10, gfx950,
Ascend, CPU), the rest left to SGLang's defaults.

`--run OUT` also runs the draw through the harness (`run.sh` of $SGL_ORACLE_HARNESS, venv
$ORACLE_VENV, default /work/oracle-sglang; two groups at a time, load-time probe on), writes the
records to OUT in the draw's order and shows groups/scenarios done on a terminal. The records go to
benchmarks/differential.py like make_random's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver import load_pack, progress  # noqa: E402  (the path is set just above)

HARNESS = Path(os.environ.get("SGL_ORACLE_HARNESS", "/work/shared/tools/sglang-oracle"))
VENV = Path(os.environ.get("ORACLE_VENV", "/work/oracle-sglang"))
MODELS = ROOT / "tests" / "fixtures" / "models"

# Machines beyond make_random's HARDWARE that the harness mocks and the pack's gpu_arch spells.
# hwmock gives an sm it has no device for 80 GB, so their memory is spelled out: SGLang sizes the
# prefill chunk by it (a 16 GB T4 chunks by 2,048 tokens, an 80 GB one by 8,192; round 19's
# P19T-1910020-0061 failed the MoRI token budget on a T4 mocked with 80 GB).
EXTRA_HARDWARE = {
    "v100": {"platform": "cuda", "sm": 70, "gpu_mem_gb": 32},
    "t4": {"platform": "cuda", "sm": 75, "gpu_mem_gb": 16},
}
# Harness facts (hwmock.normalize) make_random never sets, per platform: the non-default values.
FACTS: dict[str, list[dict[str, Any]]] = {
    "cuda": [{"has_flashinfer": False}, {"has_triton_kernels": False}, {"nvidia_driver": [595, 10, 0]}],
    "cpu": [{"amx": False}],
}
# SGLang spellings of the pack's "nothing typed" values: drawing them means not typing the flag.
UNTYPED = {"none"}
# Options whose `none` is a value SGLang itself accepts as typed.
TYPED_NONE = {"moe_a2a_backend"}
# Sizes people type for the pack's open integer options whose listed values are few (SGLang's own
# defaults; a size listed as the option's `absent` value, 0, means the flag is not typed).
SIZES: dict[str, list[int]] = {
    "max_running_requests": [8, 16, 32, 64, 128, 256, 512, 1024],
    "cuda_graph_max_bs_decode": [4, 8, 16, 32, 64, 128, 256, 512],
}
# Flags SGLang has and the pack does not (ignored by the replay): a few the grid types.
UNMODELLED: dict[str, list[Any]] = {
    "disable_cuda_graph": [True],
    "enable_two_batch_overlap": [True],
    "speculative_num_steps": [1, 3],
    "speculative_eagle_topk": [1, 4],
    "speculative_num_draft_tokens": [2, 4, 8],
}


# --themes: machines (make_random's names) with their environment, templates with weights, themes.
THEME_MACHINES: list[tuple[str, dict[str, str] | None]] = [
    ("mi355x", {"SGLANG_USE_AITER": "1"}),
    ("mi355x", None),
    ("ascend910b", None),
    ("rtxpro6000", None),
    ("gb10", None),
    ("thor", None),
    ("b300", None),
    ("mi300x", {"SGLANG_USE_AITER": "0"}),
    ("b200", {"SGLANG_CUTLASS_MOE": "1"}),
    ("rtxpro6000", {"SGLANG_FLASHINFER_NVFP4_PER_TOKEN_ACTIVATION": "1"}),
    ("mi355x", {"SGLANG_DEEPEP_BF16_DISPATCH": "1"}),
    ("b200", None),
]
THEME_ARCHITECTURES = {
    "Qwen3NextForCausalLM": 3,
    "DeepseekV32ForCausalLM": 3,
    "GptOssForCausalLM": 3,
    "Llama4ForConditionalGeneration": 2,
    "DeepseekV3ForCausalLM": 2,
    "Qwen3MoeForCausalLM": 2,
    "Glm4MoeForCausalLM": 1,
    "MixtralForCausalLM": 1,
    "DeepseekV2ForCausalLM": 1,
    "LlamaForCausalLM": 1,
    "Qwen3ForCausalLM": 1,
    "Qwen2ForCausalLM": 1,
}
THEMES = ["spec", "spec", "dpattn", "a2a", "quant", "attn", "spec_dp"]


def make_random() -> ModuleType:
    """The harness's make_random.py (its tables are the distribution this draw complements)."""
    spec = importlib.util.spec_from_file_location("_make_random", HARNESS / "make_random.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"sglang_coverage_draw: no make_random.py under {HARNESS}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Tables:
    """What to draw: the pack's options and values, each split into what make_random draws and
    what it never does (the latter weighted up)."""

    def __init__(self, mr: ModuleType) -> None:
        pack = load_pack("sglang")
        self.hardware: dict[str, dict[str, Any]] = {**mr.HARDWARE, **EXTRA_HARDWARE}
        self.architectures: list[str] = list(mr.ARCHITECTURES)
        self.checkpoints: list[str | None] = list(mr.CHECKPOINTS)
        self.draft_algorithms: set[str] = set(mr.DRAFT_ALGORITHMS)
        self.env = sorted(name for name, fld in pack.fields.items() if fld.env)
        self.options: dict[str, list[Any]] = {}
        self.unseen: dict[str, list[Any]] = {}
        for name, fld in pack.fields.items():
            if fld.kind != "option":
                continue
            values = [v for v in fld.domain if v not in UNTYPED or name in TYPED_NONE]
            if name in SIZES:
                values = SIZES[name]
            if name == "quantization":
                values.append("unquant")  # SGLang's spelling of "no quantization"
            if isinstance(fld.domain[0], bool):
                values = [True]  # store_true flags: typing False is not typing the flag
            drawn = mr.CHOICES.get(name, [])
            self.options[name] = values
            self.unseen[name] = [v for v in values if v not in drawn]
        self.models = sorted(p.name for p in MODELS.iterdir() if (p / "config.json").is_file())

    def checkpoint(self, rng: random.Random, sc: dict[str, Any], share: float) -> None:
        """A quantized checkpoint format for `sc` `share` of the time, unless it reads a config."""
        if "model_path" not in sc and rng.random() < share:
            sc["checkpoint_quant"] = rng.choice([c for c in self.checkpoints if c])

    def value(self, rng: random.Random, name: str) -> Any:
        unseen = self.unseen.get(name) or []
        if name in UNMODELLED:
            return rng.choice(UNMODELLED[name])
        if unseen and rng.random() < 0.6:
            return rng.choice(unseen)
        return rng.choice(self.options[name])


def group(rng: random.Random, tables: Tables) -> dict[str, Any]:
    """A machine with its facts and environment: what one harness worker mocks."""
    name = rng.choice(sorted(tables.hardware))
    machine: dict[str, Any] = {"hw": name, **tables.hardware[name]}
    choices = FACTS.get(machine["platform"], [])
    if choices and rng.random() < 0.4:
        machine["facts"] = rng.choice(choices)
    if rng.random() < 0.6:
        names = rng.sample(tables.env, rng.choice([1, 1, 2]))
        machine["env"] = {env: rng.choice(["0", "1"]) for env in names}
    return machine


def scenario(rng: random.Random, tables: Tables, machine: dict[str, Any]) -> dict[str, Any]:
    """One launch on `machine`: a model, a checkpoint format, 0-5 flags (mostly 3-5)."""
    sc: dict[str, Any] = {k: v for k, v in machine.items() if k != "hw"}
    if rng.random() < 0.1:
        model = rng.choice(tables.models)
        sc["model_path"] = str(MODELS / model)
        tag = model
    else:
        arch = rng.choice(tables.architectures)
        sc["architecture"] = arch
        ckpt = rng.choice(tables.checkpoints) if rng.random() < 0.6 else None
        if ckpt:
            sc["checkpoint_quant"] = ckpt
        tag = arch
    names = sorted(tables.options) + sorted(UNMODELLED) * (rng.random() < 0.15)
    count = rng.choice([0, 1, 2, 3, 3, 4, 4, 5, 5])
    args = {name: tables.value(rng, name) for name in rng.sample(names, min(count, len(names)))}
    algorithm = args.get("speculative_algorithm")
    if algorithm in tables.draft_algorithms:
        draft: dict[str, Any] = {"architecture": sc.get("architecture", "LlamaForCausalLM")}
        if rng.random() < 0.3:
            draft = {"architecture": rng.choice(tables.architectures)}
        if rng.random() < 0.2:
            draft["checkpoint_quant"] = rng.choice([c for c in tables.checkpoints if c])
        args["speculative_draft_model_path"] = draft
    sc["args"] = args
    if rng.random() < 0.1:
        sc["entry"] = "cli"
    sc["id"] = tag  # numbered by the caller
    return sc


def draw(seed: int, count: int, groups: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tables = Tables(make_random())
    machines = [group(rng, tables) for _ in range(groups)]
    out: list[dict[str, Any]] = []
    for i in range(count):
        machine = machines[i % groups]
        sc = scenario(rng, tables, machine)
        sc["id"] = f"C{seed}-{i:05d}-{machine['hw']}-{sc['id']}"
        out.append(sc)
    return out


def _theme(rng: random.Random, choices: dict[str, list[Any]], args: dict[str, Any], theme: str = "") -> str:
    """Type one theme's related flags into `args` (a drawn one unless `theme` names it); its name."""
    theme = theme or rng.choice(THEMES)
    if theme in ("spec", "spec_dp"):
        args["speculative_algorithm"] = rng.choice(choices["speculative_algorithm"])
        related = [
            "speculative_moe_runner_backend",
            "attention_backend",
            "prefill_attention_backend",
            "decode_attention_backend",
            "page_size",
            "moe_runner_backend",
            "kv_cache_dtype",
        ]
        for name in rng.sample(related, rng.choice([1, 2])):
            args[name] = rng.choice(choices[name])
    if theme in ("dpattn", "spec_dp"):
        args["enable_dp_attention"] = True
        args["dp_size"] = rng.choice([2, 4, 8])
        if rng.random() < 0.7:
            args["tp_size"] = rng.choice([2, 4, 8])
        if rng.random() < 0.4:
            args["ep_size"] = rng.choice([2, 4, 8])
        if rng.random() < 0.4:
            args["moe_a2a_backend"] = rng.choice(choices["moe_a2a_backend"])
    if theme == "a2a":
        args["moe_a2a_backend"] = rng.choice(choices["moe_a2a_backend"])
        args["ep_size"] = rng.choice([1, 2, 4, 8])
        args["tp_size"] = rng.choice([2, 4, 8])
        if rng.random() < 0.6:
            args["moe_runner_backend"] = rng.choice(choices["moe_runner_backend"])
    if theme == "quant":
        args["quantization"] = rng.choice(choices["quantization"])
        related = ["moe_runner_backend", "kv_cache_dtype", "dtype", "tp_size"]
        for name in rng.sample(related, rng.choice([1, 2])):
            args[name] = rng.choice(choices[name])
    if theme == "attn":
        split = ["prefill_attention_backend", "decode_attention_backend", "attention_backend"]
        for name in rng.sample(split, rng.choice([1, 2])):
            args[name] = rng.choice(choices[name])
        others = ["page_size", "kv_cache_dtype", "enable_deterministic_inference", "tp_size"]
        for name in rng.sample(others, rng.choice([1, 2])):
            args[name] = rng.choice(choices[name])
    return theme


def draw_themes(seed: int, count: int, groups: int) -> list[dict[str, Any]]:
    """The `--themes` draw (see the module docstring); ids F<seed>-<n>-<theme>-<machine>-<template>."""
    return _draw_grouped(
        seed, count, groups, "F", THEME_MACHINES, lambda rng, c, a: (_theme(rng, c, a), None)
    )


def _draw_grouped(
    seed: int,
    count: int,
    groups: int,
    prefix: str,
    machine_list: list[tuple[str, dict[str, str] | None]],
    theme_of: Callable[[random.Random, dict[str, list[Any]], dict[str, Any]], tuple[str, str | None]],
) -> list[dict[str, Any]]:
    """The loop `--themes` and `--wide` share: `groups` machines of `machine_list` in turn, a
    weighted template, a theme from `theme_of(rng, choices, args)` (its name, and the template
    it needs or None), up to two more options, a checkpoint 60 % of the time. The random draws
    come in the same order as each draw made them before sharing this loop, so a seed gives the
    same scenarios."""
    mr = make_random()
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i, hw, env in machine_turns(rng, machine_list, groups, count):
        arch = rng.choices(list(THEME_ARCHITECTURES), weights=list(THEME_ARCHITECTURES.values()))[0]
        args: dict[str, Any] = {}
        theme, needed = theme_of(rng, mr.CHOICES, args)
        arch = needed or arch
        for name in rng.sample(sorted(mr.CHOICES), rng.choice([0, 0, 1, 2])):
            args.setdefault(name, rng.choice(mr.CHOICES[name]))
        sc: dict[str, Any] = {**mr.HARDWARE[hw], "architecture": arch}
        if rng.random() < 0.6:
            ckpt = rng.choice(mr.CHECKPOINTS)
            if ckpt:
                sc["checkpoint_quant"] = ckpt
        if env:
            sc["env"] = env
        out.append(finished(sc, args, mr.DRAFT_ALGORITHMS, f"{prefix}{seed}-{i:05d}-{theme}-{hw}-{arch}"))
    return out


# --wide (round 11): the themes above plus the dimensions the pack was tested least on: more
# machines (gfx942 with and without aiter, A100 / L40S / H100, two Ascend groups), the quantization x
# MoE runner x all-to-all triple typed together, hybrid Qwen3-Next with its page / split backends /
# speculative flags, LoRA and PD disaggregation (flags the pack does not model: what SGLang then
# decides for the fields it does), every environment variable the pack reads, DP attention sizes.
WIDE_MACHINES: list[tuple[str, dict[str, str] | None]] = [
    *THEME_MACHINES,
    ("mi300x", {"SGLANG_USE_AITER": "1"}),
    ("mi300x", None),
    ("ascend910b", None),
    ("a100", None),
    ("l40s", None),
    ("h100", {"SGLANG_CUTLASS_MOE": "1"}),
    ("b200", {"SGLANG_FLASHINFER_CUTEDSL_NVFP4_W4A16": "1"}),
    ("b300", {"SGLANG_DSV4_FP4_DEQUANT": "1", "SGLANG_DEEPEP_BF16_DISPATCH": "1"}),
]
WIDE_THEMES = ["spec", "dpattn", "a2a", "quant", "attn", "spec_dp", "quant_moe", "hybrid", "lora", "pd"]
LORA_RUNNERS = ["auto", "triton", "lora_triton", "lora_marlin", "lora_cutedsl"]


def _wide_theme(
    rng: random.Random, choices: dict[str, list[Any]], args: dict[str, Any]
) -> tuple[str, str | None]:
    """One --wide theme typed into `args`; returns (theme, architecture it needs or None)."""
    theme = rng.choice(WIDE_THEMES)
    if theme in THEMES:
        return _theme(rng, choices, args, theme), None
    if theme == "quant_moe":
        args["quantization"] = rng.choice(choices["quantization"])
        args["moe_runner_backend"] = rng.choice(choices["moe_runner_backend"])
        args["moe_a2a_backend"] = rng.choice(choices["moe_a2a_backend"])
        args["tp_size"] = rng.choice([2, 4, 8])
        return theme, None
    if theme == "hybrid":
        related = [
            "page_size",
            "attention_backend",
            "prefill_attention_backend",
            "decode_attention_backend",
            "speculative_algorithm",
            "kv_cache_dtype",
            "quantization",
            "moe_runner_backend",
        ]
        for name in rng.sample(related, rng.choice([1, 2, 3])):
            args[name] = rng.choice(choices[name])
        return theme, "Qwen3NextForCausalLM"
    if theme == "lora":
        args["enable_lora"] = True
        args["max_lora_rank"] = rng.choice([8, 16, 64])
        args["lora_target_modules"] = ["all"]
        args["moe_runner_backend"] = rng.choice(LORA_RUNNERS)
        if rng.random() < 0.4:
            args["quantization"] = rng.choice(choices["quantization"])
        return theme, None
    args["disaggregation_mode"] = rng.choice(["prefill", "decode"])
    args["disaggregation_transfer_backend"] = rng.choice(["mooncake", "nixl", "fake"])
    for name in rng.sample(["moe_a2a_backend", "attention_backend", "page_size", "kv_cache_dtype"], 1):
        args[name] = rng.choice(choices[name])
    return theme, None


def draw_wide(seed: int, count: int, groups: int) -> list[dict[str, Any]]:
    """The `--wide` draw (see WIDE_MACHINES); ids W<seed>-<n>-<theme>-<machine>-<template>."""
    return _draw_grouped(seed, count, groups, "W", WIDE_MACHINES, _wide_theme)


# --defaults (round 13): short launches, so that SGLang's own automatic choices decide, on every
# machine the harness mocks (with the environments and facts that move its defaults): a template, a
# family no template has (written with `hf_overrides` on one, as round 12's grid G12B), or a published
# config, a checkpoint half the time, and no flag or one (mostly a --tp-size). `check` must never say
# ok where SGLang, or its own load-time code, fails on its default.
DEFAULT_MACHINES: list[tuple[str, dict[str, Any]]] = [
    ("a100", {}),
    ("a6000", {}),
    ("l40s", {}),
    ("h100", {}),
    ("h100", {"facts": {"has_flashinfer": False}}),
    ("b200", {}),
    ("b300", {}),
    ("thor", {}),
    ("rtxpro6000", {}),
    ("gb10", {}),
    ("mi300x", {}),
    ("mi300x", {"env": {"SGLANG_USE_AITER": "1"}}),
    ("mi355x", {"env": {"SGLANG_USE_AITER": "1"}}),
    ("mi355x", {}),
    ("cpu", {}),
    ("cpu", {"facts": {"amx": False}}),
    ("ascend910b", {}),
    ("v100", {}),
    ("t4", {}),
]
# Families no harness template has: (template, config.json edits), as round 12's grid G12B wrote them.
DEFAULT_FAMILIES: dict[str, tuple[str, dict[str, Any]]] = {
    "NemotronH": (
        "LlamaForCausalLM",
        {
            "architectures": ["NemotronHForCausalLM"],
            "model_type": "nemotron_h",
            "hybrid_override_pattern": "M-M*-M-M*-M-M*-M-M*-M-M*-M-M*-M-",
            "mamba_num_heads": 64,
            "mamba_head_dim": 64,
            "ssm_state_size": 128,
            "n_groups": 8,
            "conv_kernel": 4,
            "num_hidden_layers": 32,
        },
    ),
    "Olmo2": ("LlamaForCausalLM", {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2"}),
    "Lfm2": (
        "LlamaForCausalLM",
        {
            "architectures": ["Lfm2ForCausalLM"],
            "model_type": "lfm2",
            "layer_types": ["conv", "full_attention"] * 16,
            "conv_L_cache": 3,
        },
    ),
    "FalconH1": (
        "LlamaForCausalLM",
        {
            "architectures": ["FalconH1ForCausalLM"],
            "model_type": "falcon_h1",
            "mamba_d_ssm": 4096,
            "mamba_n_heads": 64,
            "mamba_d_head": 64,
            "mamba_d_state": 128,
            "mamba_n_groups": 1,
            "mamba_d_conv": 4,
        },
    ),
    "Qwen3VL": (
        "Qwen3ForCausalLM",
        {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl"},
    ),
    "Gemma2": (
        "LlamaForCausalLM",
        {
            "architectures": ["Gemma2ForCausalLM"],
            "model_type": "gemma2",
            "head_dim": 128,
            "query_pre_attn_scalar": 128,
            "sliding_window": 4096,
            "final_logit_softcapping": 30.0,
            "attn_logit_softcapping": 50.0,
            "hidden_activation": "gelu_pytorch_tanh",
            "hidden_act": "gelu_pytorch_tanh",
        },
    ),
    "Qwen2Moe": (
        "Qwen3MoeForCausalLM",
        {
            "architectures": ["Qwen2MoeForCausalLM"],
            "model_type": "qwen2_moe",
            "shared_expert_intermediate_size": 5632,
        },
    ),
    "MiniMaxM2": (
        "Qwen3MoeForCausalLM",
        {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2"},
    ),
    "GlmDsa": (
        "DeepseekV32ForCausalLM",
        {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa"},
    ),
}
DEFAULT_FLAGS = ["kv_cache_dtype", "quantization", "page_size", "dtype", "speculative_algorithm"]


def draw_defaults(seed: int, count: int, groups: int) -> list[dict[str, Any]]:
    """The `--defaults` draw (see DEFAULT_MACHINES); ids L<seed>-<n>-<machine>-<model>."""
    mr = make_random()
    tables = Tables(mr)
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i, hw, extra in machine_turns(rng, DEFAULT_MACHINES, groups, count):
        sc: dict[str, Any] = {**tables.hardware[hw], **extra}
        pick = rng.random()
        if pick < 0.15:
            model = rng.choice(tables.models)
            sc["model_path"], tag = str(MODELS / model), model
        elif pick < 0.4:
            tag = rng.choice(sorted(DEFAULT_FAMILIES))
            sc["architecture"], sc["hf_overrides"] = DEFAULT_FAMILIES[tag]
        else:
            tag = sc["architecture"] = rng.choice(tables.architectures)
        tables.checkpoint(rng, sc, 0.5)
        args: dict[str, Any] = {}
        flags = rng.random()
        if flags < 0.3:
            args["tp_size"] = rng.choice([2, 4, 8])
        elif flags < 0.45:
            name = rng.choice(DEFAULT_FLAGS)
            args[name] = rng.choice(mr.CHOICES[name])
        out.append(finished(sc, args, mr.DRAFT_ALGORITHMS, f"L{seed}-{i:05d}-{hw}-{tag}"))
    return out


# --short (round 23): commands as users type them, zero to three flags and the rest left to
# SGLang's own defaults, on the rare machines (and the environments that move their defaults),
# where a launcher default that fails is what `check` must still see. Flags weighted by how often
# users type them; values from make_random's CHOICES (the values people type).
SHORT_MACHINES: list[tuple[str, dict[str, Any]]] = [
    ("rtxpro6000", {}),
    ("b300", {}),
    ("thor", {}),
    ("gb10", {}),
    ("mi355x", {}),
    ("mi355x", {"env": {"SGLANG_USE_AITER": "1"}}),
    ("ascend910b", {}),
    ("cpu", {}),
    ("cpu", {"facts": {"amx": False}}),
]
SHORT_FLAGS = {
    "tp_size": 3.0,
    "kv_cache_dtype": 2.0,
    "quantization": 1.5,
    "attention_backend": 1.5,
    "page_size": 1.0,
    "dtype": 1.0,
    "moe_runner_backend": 0.7,
    "speculative_algorithm": 0.7,
    "enable_dp_attention": 0.5,
    "dp_size": 0.5,
    "ep_size": 0.5,
    "moe_a2a_backend": 0.4,
    "enable_deterministic_inference": 0.3,
    "disable_shared_experts_fusion": 0.2,
}


def draw_short(seed: int, count: int, groups: int) -> list[dict[str, Any]]:
    """The `--short` draw (see SHORT_MACHINES); ids S<seed>-<n>-<machine>-<model>."""
    mr = make_random()
    tables = Tables(mr)
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i, hw, extra in machine_turns(rng, SHORT_MACHINES, groups, count):
        sc: dict[str, Any] = {**tables.hardware[hw], **extra}
        config = rng.random() < 0.15  # a published config.json, else a harness template
        tag = rng.choice(tables.models if config else tables.architectures)
        sc.update({"model_path": str(MODELS / tag)} if config else {"architecture": tag})
        tables.checkpoint(rng, sc, 0.5)
        wanted = rng.choices([0, 1, 2, 3], weights=[15, 35, 30, 20])[0]
        args: dict[str, Any] = {}
        while len(args) < wanted:
            left = [name for name in SHORT_FLAGS if name not in args]
            name = rng.choices(left, weights=[SHORT_FLAGS[n] for n in left])[0]
            args[name] = rng.choice(mr.CHOICES[name])
        out.append(finished(sc, args, mr.DRAFT_ALGORITHMS, f"S{seed}-{i:05d}-{hw}-{tag}"))
    return out


Extra = TypeVar("Extra")


def machine_turns(
    rng: random.Random, machines: Sequence[tuple[str, Extra]], groups: int, count: int
) -> Iterator[tuple[int, str, Extra]]:
    """The grouped draws' loop: `count` turns (number, machine, what comes with it) over `groups`
    of `machines`, shuffled by `rng` before the first turn, taken in turn (one harness worker
    per group)."""
    chosen = list(machines)
    rng.shuffle(chosen)
    chosen = chosen[:groups]
    for i in range(count):
        hw, extra = chosen[i % len(chosen)]
        yield i, hw, extra


def finished(
    sc: dict[str, Any], args: dict[str, Any], draft_algorithms: Collection[str], ident: str
) -> dict[str, Any]:
    """`sc` with its flags and id; a draft algorithm gets a draft model of the target's
    architecture (SGLang needs one to start)."""
    if args.get("speculative_algorithm") in draft_algorithms:
        args["speculative_draft_model_path"] = {"architecture": sc.get("architecture", "LlamaForCausalLM")}
    sc["args"] = args
    sc["id"] = ident
    return sc


# --- running through the harness ----------------------------------------------------------------


def _group_key(sc: dict[str, Any]) -> str:
    return json.dumps([sc.get(k) for k in ("platform", "sm", "gfx", "facts", "env")], sort_keys=True)


def run(scenarios: list[dict[str, Any]], out: Path, jobs: int) -> None:
    """Each group through one `run.sh` (one worker), `jobs` at a time; records in draw order."""
    groups: dict[str, list[int]] = {}
    for i, sc in enumerate(scenarios):
        groups.setdefault(_group_key(sc), []).append(i)
    records: list[str | None] = [None] * len(scenarios)
    env = {**os.environ, "ORACLE_VENV": str(VENV), "ORACLE_JOBS": "1"}
    start = time.monotonic()

    def one(indices: list[int]) -> list[int]:
        lines = "".join(json.dumps(scenarios[i]) + "\n" for i in indices)
        # run.sh's own stderr is its progress and SGLang's logs go to the venv's log file.
        done = subprocess.run(
            ["bash", str(HARNESS / "run.sh")], input=lines, capture_output=True, text=True, env=env
        )
        answers = done.stdout.splitlines()
        if len(answers) != len(indices):
            raise SystemExit(f"sglang_coverage_draw: run.sh answered {len(answers)} of {len(indices)}")
        for i, line in zip(indices, answers, strict=True):
            records[i] = line
        return indices

    with progress.reporting("coverage draw"), ThreadPoolExecutor(jobs) as pool:
        progress.phase("scenarios (by machine group)", len(scenarios))
        for indices in pool.map(one, groups.values()):
            progress.advance(len(indices))
    out.write_text("".join(f"{line}\n" for line in records if line is not None))
    cpu = os.times()
    print(
        f"{len(scenarios)} scenarios in {len(groups)} groups: {time.monotonic() - start:.0f} s wall, "
        f"{cpu.children_user + cpu.children_system:.0f} s CPU in the harness, "
        f"load {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--groups", type=int, default=24, help="machine x environment groups")
    parser.add_argument("--run", type=Path, metavar="OUT", help="run the draw, write the records here")
    parser.add_argument("--jobs", type=int, default=2, help="harness groups at a time (with --run)")
    parser.add_argument("--themes", action="store_true", help="the kinds make_random under-samples instead")
    parser.add_argument("--wide", action="store_true", help="--themes plus the kinds tested least")
    parser.add_argument(
        "--defaults", action="store_true", help="short launches: SGLang's own defaults decide"
    )
    parser.add_argument(
        "--short", action="store_true", help="0-3 flags as users type them, on the rare machines"
    )
    args = parser.parse_args(argv)
    groups = max(1, min(args.groups, args.count))
    drawing = (
        draw_short
        if args.short
        else draw_defaults
        if args.defaults
        else draw_wide
        if args.wide
        else draw_themes
        if args.themes
        else draw
    )
    scenarios = drawing(args.seed, args.count, groups)
    if args.run is None:
        sys.stdout.write("".join(json.dumps(sc, sort_keys=True) + "\n" for sc in scenarios))
        return 0
    run(scenarios, args.run, args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
