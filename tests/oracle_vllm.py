"""vLLM 0.33.0's own answers (the vLLM oracle) replayed through the vLLM pack, and how far they agree.

Owns the mapping from a vLLM oracle record (a scenario vLLM resolved with its own code, on a mocked
CUDA machine; shared/reference/oracle-vllm/README.md) to `confsolve resolve --pack vllm` inputs,
as contract-vllm.md fixes it, and the measures: verdict agreement (vLLM accepted <-> we resolve,
vLLM raised <-> we report a conflict) over every scored scenario, and field agreement over the
contract's fields where both accepted. Used by tests/test_oracle_vllm.py (the committed fixture)
and benchmarks/differential_vllm.py (any record file, e.g. a fresh random draw).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import recordfiles
from audit import audit

from solver import InvalidInput, Pack, SolverBudgetExceeded, Unsatisfiable, load_pack, resolve
from solver.inputs.modelconfig import facts_from_model_config

FIXTURES = Path(__file__).parent / "fixtures" / "oracle_vllm"
KNOWN = Path(__file__).parent.parent / "constraints" / "vllm" / "KNOWN_DIFFERENCES.md"

VERDICT = "verdict"  # the pseudo-field of an accept/reject disagreement

# contract-vllm.md, "How an oracle scenario becomes a request", step 2.
CHECKPOINT_QUANT = {
    "fp8": "fp8",
    "fp8_tensor": "fp8",
    "awq": "awq",
    "gptq": "gptq",
    "compressed_tensors_fp8": "compressed-tensors",
    "compressed_tensors_w4a16": "compressed-tensors",
    "modelopt_fp8": "modelopt_fp8",
    "modelopt_fp4": "modelopt_fp4",
    "mxfp8": "modelopt_mxfp8",
    "w4afp8_mixed": "modelopt_mixed",
    "mxfp4": "mxfp4",
    "bitsandbytes": "bitsandbytes",
}
# Step 4: the heads of each measured checkpoint.
HEADS = {
    "LlamaForCausalLM": 32,
    "Qwen2ForCausalLM": 28,
    "Qwen3ForCausalLM": 32,
    "MixtralForCausalLM": 32,
    "Qwen3MoeForCausalLM": 32,
    "Glm4MoeForCausalLM": 96,
    "DeepseekV2ForCausalLM": 16,
    "DeepseekV3ForCausalLM": 128,
    "DeepseekV32ForCausalLM": 128,
    "GptOssForCausalLM": 64,
    "Qwen3NextForCausalLM": 16,
    "Llama4ForConditionalGeneration": 40,
}
# The contract's options (step 6); any other `args` key makes the scenario out of scope.
OPTIONS = {
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "decode_context_parallel_size",
    "enable_expert_parallel",
    "enable_eplb",
    "enable_dbo",
    "all2all_backend",
    "quantization",
    "kv_cache_dtype",
    "block_size",
    "dtype",
    "attention_backend",
    "moe_backend",
    "enable_chunked_prefill",
    "enable_prefix_caching",
}
ATTENTION_KINDS = ("full", "mla", "mla_sparse", "sliding")
# The head counts a scenario may write over an MLA model's config (hf_overrides), read as the facts
# of the same names: an MLA layer's head size is the latent rank plus the rope dimension, so its
# head count changes nothing else the pack reads (a GQA model's head size may be hidden / heads).
MLA_ARCHS = {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"}
HEAD_COUNTS = ("num_attention_heads", "num_key_value_heads")
# The facts a scenario's own quantization_config gives (request_for).
CHECKPOINT_FACTS = ("checkpoint_quant", "checkpoint_kv_cache_quant", "modelopt_export_form")
DTYPE_SPELLING = {"half": "float16", "float": "float32"}


def load_records(path: Path) -> list[dict[str, Any]]:
    """Oracle records, one JSON object a line; `.gz` files are read compressed."""
    return list(recordfiles.read_jsonl(path))


@cache
def _quantization_facts(config_json: str) -> dict[str, Any]:
    """The checkpoint facts of a quantization_config, read as `--model-config` reads a config.json
    holding it (the pack's own model_config table: one home for that reading)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(
            json.dumps({"quantization_config": json.loads(config_json)})
        )
        pins = facts_from_model_config(load_pack("vllm"), Path(folder))
    return {name: pins[name].value for name in CHECKPOINT_FACTS if name in pins}


def request_for(scenario: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(options, facts) for a scenario, or None when it is outside the contract (skipped)."""
    # A scenario's own quantization_config (hf_overrides, in place of a checkpoint kind) is read
    # into the checkpoint facts as a model directory's is, head counts written over an MLA model's
    # config as the facts of those names; any other config edit is out of scope.
    overrides = dict(scenario.get("hf_overrides") or {})
    heads = {name: overrides.pop(name) for name in HEAD_COUNTS if name in overrides}
    if heads and scenario.get("architecture") not in MLA_ARCHS:
        return None
    if scenario.get("env") or set(overrides) - {"quantization_config"}:
        return None
    if overrides and scenario.get("checkpoint_quant") is not None:
        return None
    extra_facts = set(scenario.get("facts") or {}) - {"has_flashinfer"}
    if extra_facts or scenario.get("platform", "cuda") != "cuda":
        return None
    arch = scenario["architecture"]
    if arch not in HEADS:
        return None
    kind = scenario.get("checkpoint_quant")
    if kind is not None and kind not in CHECKPOINT_QUANT:
        return None
    facts: dict[str, Any] = {
        "platform": "cuda",
        "gpu_arch": f"sm{scenario['sm']}",
        "architecture": arch,
        "checkpoint_quant": CHECKPOINT_QUANT[kind] if kind else "none",
        "checkpoint_kv_cache_quant": "fp8" if kind == "modelopt_fp8" else "none",
        "num_attention_heads": HEADS[arch],
        "num_gpus": scenario.get("num_gpus", 8),
        "has_flashinfer": (scenario.get("facts") or {}).get("has_flashinfer", True),
    }
    facts |= heads
    if overrides:
        facts |= _quantization_facts(json.dumps(overrides["quantization_config"], sort_keys=True))
    options: dict[str, Any] = {}
    for name, value in (scenario.get("args") or {}).items():
        if name == "attention_config" and set(value) == {"flash_attn_version"}:
            options["flash_attn_version"] = value["flash_attn_version"]
        elif name in OPTIONS:
            options[name] = value
        else:
            return None
    return options, facts


def vllm_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """The contract's fields of an accepted vLLM result, in the pack's spellings."""
    resolved = result.get("resolved") or {}
    attention = result.get("attention") or {}
    backend = next(
        (attention[k]["backend"] for k in ATTENTION_KINDS if "backend" in attention.get(k, {})), None
    )
    out = {
        "attention_backend": backend,
        "block_size": resolved.get("block_size"),
        "kv_cache_dtype": resolved.get("kv_cache_dtype"),
        "quantization": resolved.get("quantization") or "none",
        "dtype": DTYPE_SPELLING.get(str(resolved.get("dtype")), resolved.get("dtype")),
    }
    if backend == "FLASH_ATTN":
        out["flash_attn_version"] = resolved.get("flash_attn_version")
    return out


@dataclass(frozen=True)
class Difference:
    """One disagreement: a field (or the verdict) where vLLM and confsolve answer differently."""

    scenario: str
    field: str
    vllm: str
    ours: str
    cause: str  # what explains it: vLLM's error site and ours, or the field and both values

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.scenario, self.field, self.vllm, self.ours)


@dataclass
class Outcome:
    scenario: str
    vllm_ok: bool
    ours: str  # resolved | conflict | invalid | budget | traceback | skipped
    detail: str = ""
    compared: dict[str, bool] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    seconds: float = 0.0
    silent: list[str] = field(default_factory=list)  # what `audit` found said nowhere

    @property
    def scored(self) -> bool:
        return self.ours != "skipped"

    @property
    def agrees(self) -> bool:
        return self.ours == "resolved" if self.vllm_ok else self.ours in ("conflict", "invalid")


@dataclass
class Report:
    outcomes: list[Outcome]

    @property
    def scored(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.scored]

    @property
    def verdict_agree(self) -> tuple[int, int]:
        return sum(o.agrees for o in self.scored), len(self.scored)

    def per_field(self) -> dict[str, tuple[int, int]]:
        agree: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for outcome in self.scored:
            for name, ok in outcome.compared.items():
                total[name] += 1
                agree[name] += ok
        return {name: (agree[name], total[name]) for name in sorted(total)}

    @property
    def field_agree(self) -> tuple[int, int]:
        rows = self.per_field().values()
        return sum(a for a, _ in rows), sum(t for _, t in rows)

    @property
    def differences(self) -> list[Difference]:
        return [d for o in self.outcomes for d in o.differences]

    @property
    def tracebacks(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ours == "traceback"]

    @property
    def silent(self) -> list[tuple[str, str]]:
        """(scenario, finding) for every silent change or unlisted assumption `audit` found."""
        return [(o.scenario, finding) for o in self.outcomes for finding in o.silent]

    def by_cause(self) -> list[tuple[str, int, list[str]]]:
        """Disagreements grouped by cause, largest group first: (cause, count, scenario ids)."""
        groups: dict[str, list[str]] = {}
        for d in self.differences:
            groups.setdefault(d.cause, []).append(d.scenario)
        return sorted(((c, len(ids), ids) for c, ids in groups.items()), key=lambda g: (-g[1], g[0]))

    def to_json(self) -> dict[str, Any]:
        va, vt = self.verdict_agree
        fa, ft = self.field_agree
        return {
            "schema": 1,
            "scenarios": len(self.outcomes),
            "skipped": len(self.outcomes) - len(self.scored),
            "verdict": {"agree": va, "total": vt, "rate": pct(va, vt)},
            "fields": {
                "agree": fa,
                "total": ft,
                "rate": pct(fa, ft),
                "per_field": {
                    n: {"agree": a, "total": t, "rate": pct(a, t)} for n, (a, t) in self.per_field().items()
                },
            },
            "tracebacks": [{"scenario": o.scenario, "detail": o.detail} for o in self.tracebacks],
            "silent": [{"scenario": sid, "finding": finding} for sid, finding in self.silent],
            "by_cause": [{"cause": c, "count": n, "scenarios": ids} for c, n, ids in self.by_cause()],
            "differences": [vars(d) for d in self.differences],
            "seconds": round(sum(o.seconds for o in self.outcomes), 3),
        }


pct = recordfiles.pct


def _resolve(pack: Pack, options: dict[str, Any], facts: dict[str, Any]) -> Any:
    # Predict mode: what vLLM itself does with the request as typed (each unset option takes
    # vLLM's own default chain, never another value), which is what the oracle measured.
    return resolve(pack, options, facts, reasons=False, predict=True)


def replay(pack: Pack, record: Mapping[str, Any]) -> Outcome:
    scenario, result = record["scenario"], record["vllm"]
    sid = str(scenario.get("id"))
    ok = bool(result.get("ok"))
    request = request_for(scenario)
    # The harness gives up on a scenario that outlives its timeout (a loaded machine): no
    # answer of vLLM's (error type OracleTimeout, no site), so nothing to compare.
    if request is None or (result.get("error") or {}).get("type") == "OracleTimeout":
        return Outcome(sid, ok, "skipped")
    options, facts = request
    started = time.perf_counter()
    try:
        resolution = _resolve(pack, options, facts)
    except Unsatisfiable as exc:
        outcome = Outcome(sid, ok, "conflict", ",".join(sorted({r.id for r in exc.conflict.rules})))
    except InvalidInput as exc:
        outcome = Outcome(sid, ok, "invalid", str(exc))
    except SolverBudgetExceeded as exc:
        outcome = Outcome(sid, ok, "budget", str(exc))
    except Exception:  # a traceback is a measured miss, not a crash of the replay
        outcome = Outcome(sid, ok, "traceback", traceback.format_exc(limit=3))
    else:
        outcome = Outcome(sid, ok, "resolved", silent=audit(pack, options, facts, resolution))
        if ok:
            ours = resolution.values
            for name, theirs in vllm_fields(result).items():
                mine = ours.get(name)
                mine = DTYPE_SPELLING.get(str(mine), mine) if name == "dtype" else mine
                same = mine == theirs
                outcome.compared[name] = same
                if not same:
                    outcome.differences.append(
                        Difference(sid, name, str(theirs), str(mine), f"{name}: vLLM {theirs}, ours {mine}")
                    )
    outcome.seconds = time.perf_counter() - started
    if not outcome.agrees:
        if ok:
            cause = f"vLLM accepts; ours {outcome.ours}: {outcome.detail or '-'}"
            theirs = "accept"
        else:
            where = re.sub(r":\d+", "", (result.get("error") or {}).get("where") or "?")
            cause = f"vLLM refuses at {where}; ours {outcome.ours}"
            theirs = "refuse"
        outcome.differences.append(Difference(sid, VERDICT, theirs, outcome.ours, cause))
    return outcome


def run(records: Iterable[Mapping[str, Any]], pack: Pack | None = None) -> Report:
    pack = pack or load_pack("vllm")
    return Report([replay(pack, record) for record in records])


def known_differences(path: Path = KNOWN) -> dict[tuple[str, str, str, str], str]:
    """Rows of KNOWN_DIFFERENCES.md's table: (scenario, field, vllm, ours) -> reason."""
    known: dict[tuple[str, str, str, str], str] = {}
    if not path.exists():
        return known
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] and not set(cells[0]) <= {"-", " "} and cells[0] != "scenario":
            known[(cells[0], cells[1], cells[2], cells[3])] = cells[4]
    return known
