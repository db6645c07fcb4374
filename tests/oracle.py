"""SGLang's own answers (the oracle) replayed through confsolve, and how far the two agree.

Owns the mapping from an oracle scenario (the `ServerArgs` SGLang 0.5.23 resolved, on the machine
it was told it ran on; see fixtures/oracle/README.md) to confsolve inputs, and the measures:
accept/reject agreement over every scenario, and per-field value agreement where both accepted and
SGLang decided the field. Used by tests/test_oracle.py and benchmarks/oracle_report.py; keeps no
state between calls. Fields the pack does not have are counted as "not covered", apart from the
disagreements, so a pack that grows is measured on more, never on less.
"""

from __future__ import annotations

import gzip
import importlib.util
import inspect
import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import recordfiles

from solver import InvalidInput, Pack, Resolution, SolverBudgetExceeded, Unsatisfiable, load_pack
from solver.inputs.modelconfig import facts_from_model_config
from solver.inputs.pins import collect_pins, facts_from_environ
from solver.reasoning.resolution import resolve_pins

FIXTURES = Path(__file__).parent / "fixtures" / "oracle"
ORACLE = FIXTURES / "sglang-0.5.23.jsonl"
FLOOR = FIXTURES / "floor.json"
# The config.json each scenario's model had: {"scenarios": {id: key}, "configs": {key: files}}.
CONFIGS = FIXTURES / "configs.json.gz"
KNOWN = Path(__file__).parent.parent / "constraints" / "sglang" / "KNOWN_DIFFERENCES.md"

ACCEPT = "accept"  # the pseudo-field of an accept/reject disagreement

# The oracle's checkpoint kinds, spelled as the contract's checkpoint_quant (oracle README).
CHECKPOINT_QUANT = {
    "fp8": "fp8",
    "fp8_tensor": "fp8",
    "modelopt_fp4": "modelopt_fp4",
    "modelopt_fp8": "modelopt_fp8",
    "mxfp4": "mxfp4",
    "mxfp8": "mxfp8",
    "w4afp8_mixed": "w4afp8",
    "awq": "awq",
    "gptq": "gptq",
    "compressed_tensors_fp8": "compressed-tensors",
    "compressed_tensors_w4a16": "compressed-tensors",
    "bitsandbytes": "bitsandbytes",
}

# The machines the oracle pretended to be (README: "Hardware that was assumed"): CUDA wheels bring
# flashinfer, triton_kernels and DeepGEMM; ROCm images bring aiter and none of those; the CPU
# target is a Xeon with AMX; the NVIDIA driver is 580. Pinned, not left free: a free fact would let
# the solver pick whichever value makes a request acceptable.
HARDWARE: dict[str, dict[str, Any]] = {
    "cuda": {
        "has_flashinfer": True,
        "has_triton_kernels": True,
        "has_deep_gemm": True,
        "has_aiter": False,
        "cpu_has_amx": False,
        "xpu_has_xmx": False,
    },
    "hip": {
        "has_flashinfer": False,
        "has_triton_kernels": False,
        "has_deep_gemm": False,
        "has_aiter": True,
        "cpu_has_amx": False,
        "xpu_has_xmx": False,
    },
    "cpu": {
        "has_flashinfer": False,
        "has_triton_kernels": False,
        "has_deep_gemm": False,
        "has_aiter": False,
        "cpu_has_amx": True,
        "xpu_has_xmx": False,
    },
}
# Checkpoint facts the oracle's config.json files do not have (plain checkpoints only).
PLAIN_CHECKPOINT = {
    "model_format": "safetensors",
    "moe_experts_w4a16": False,
    "moe_experts_fp4": False,
    # Shapes are unknown from an architecture name alone (0); the differential
    # replay (tests/differential.py) reads them from the config.json.
    "moe_intermediate_pow2": 0,
    "intermediate_pow2": 0,
    "weight_block_n": 0,
    "weight_group_size": 0,
    "linear_value_heads_pow2": 0,
    "checkpoint_dtype": "unknown",
    "attention_heads_pow2": 0,
    "kv_heads_pow2": 0,
    "kv_heads_power_of_two": True,
    "moe_has_dense_layers": False,
}
DRIVER_595 = (595,)
# SGLang's per-rank all-to-all dispatch budgets (environ.py) of the backends whose budget the pack
# reads as a2a_dispatch_budget_raised. The MegaMoE all-to-all's budgets are environment fields of
# the pack (their values are read); for it the fact says what flags the pack does not read did.
DISPATCH_BUDGET_ENV = {
    "mori": "SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
    "pplx": "SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
    "deepep_v2": "SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
}

# Spellings that name the same value (SGLang rewrites the deprecated names when it resolves).
# tokenspeed_mla is SGLang 0.5.23's deprecated name of cutedsl_mla (serving_hook.
# _handle_deprecated_args); the pack keeps the old name for the attention and decode backends,
# since it also sets the KV cache to fp8_e4m3 (tokenspeed-mla-kv-fp8), and reports a prefill
# tokenspeed_mla as trtllm_mla itself (prefill-tokenspeed-mla-renamed).
ALIASES: dict[str, dict[str, str]] = {
    "kv_cache_dtype": {"bf16": "bfloat16"},
    "attention_backend": {"nsa": "dsa", "compressed": "dsv4", "tokenspeed_mla": "cutedsl_mla"},
    "prefill_attention_backend": {"nsa": "dsa", "compressed": "dsv4"},
    "decode_attention_backend": {"nsa": "dsa", "compressed": "dsv4", "tokenspeed_mla": "cutedsl_mla"},
    "speculative_algorithm": {"NEXTN": "EAGLE"},
}
# SGLang input spellings the pack names otherwise: `--quantization unquant` asks for no
# quantization, the pack's `none` (quant-checkpoint-method-applies still adopts a quantized
# checkpoint's method, as ModelConfig does).
INPUT_SPELLINGS: dict[str, dict[str, str]] = {
    "quantization": {"unquant": "none"},
}
# SGLang's own resolved fields that are not ServerArgs choices of ours to compare.
NOT_COMPARED = {"device"}  # the platform fact, which we pin from the scenario
# Our fields that SGLang's resolved dump lacks but its record still shows (see sglang_value).
EXTRA_COMPARED = ("disable_shared_experts_fusion",)


# The verdict is the prediction of the command as typed (`confsolve check`: unset options take
# SGLang's own default chain) where the solver has it; before that, the search (`resolve`).
PREDICT: dict[str, bool] = (
    {"predict": True} if "predict" in inspect.signature(resolve_pins).parameters else {}
)
MODE = "check (prediction)" if PREDICT else "resolve (search: predict mode not available)"

# SGLang's own defaults for the resources and the precision, which a search must not choose.
SGLANG_DEFAULTS: dict[str, Any] = {"tp_size": 1, "ep_size": 1, "dp_size": 1, "dtype": "auto"}


# --- model configs ------------------------------------------------------------------------------


class ConfigStore:
    """Where the `config.json` SGLang saw for a scenario lives (a model directory), by key.

    Fixture configs are written once under `root`; harness configs come from the oracle's own
    `models.py` (the code that wrote them for SGLang), imported from the harness directory.
    """

    def __init__(
        self, root: Path, configs: Mapping[str, Mapping[str, Any]] | None = None, harness: Path | None = None
    ) -> None:
        self.root = root
        self.configs: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (configs or {}).items()}
        self._models: Any = None
        if harness is not None and (harness / "models.py").is_file():
            spec = importlib.util.spec_from_file_location("_oracle_models", harness / "models.py")
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                module.ROOT = str(root / "harness")
                self._models = module

    def key_for(self, scenario: Mapping[str, Any]) -> str | None:
        """The key of the scenario's model directory, writing it from the harness if needed."""
        if scenario.get("model_path"):
            directory = Path(scenario["model_path"])
            if not (directory / "config.json").is_file():
                return None
        else:
            arch = scenario.get("architecture")
            if self._models is None or arch not in getattr(self._models, "TEMPLATES", {}):
                return None
            directory = Path(
                self._models.model_dir(arch, scenario.get("checkpoint_quant"), scenario.get("hf_overrides"))
            )
        key = directory.name
        if key not in self.configs:
            self.configs[key] = {p.name: json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))}
        return key

    def directory(self, key: str | None) -> Path | None:
        if key is None or key not in self.configs:
            return None
        directory = self.root / "fixture" / key
        if not (directory / "config.json").is_file():
            directory.mkdir(parents=True, exist_ok=True)
            for name, doc in self.configs[key].items():
                (directory / name).write_text(json.dumps(doc))
        return directory


def load_scenarios(path: Path = ORACLE) -> list[dict[str, Any]]:
    return list(recordfiles.read_jsonl(path))


@dataclass(frozen=True)
class Difference:
    """One disagreement: a field (or `accept`) where SGLang and confsolve answer differently."""

    scenario: str
    field: str
    sglang: str
    ours: str
    why: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.scenario, self.field, self.sglang, self.ours)


@dataclass
class Outcome:
    """One scenario replayed."""

    scenario: str
    sglang_ok: bool
    ours: str  # resolved | conflict | invalid | budget (the search gave up: undecided)
    sglang_load_failed: bool = False  # accepted, then SGLang's own load-time code raised
    warned: bool = False  # resolved with warnings
    detail: str = ""  # our conflict rules or input issues, SGLang's error
    compared: dict[str, bool] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    ignored_inputs: list[str] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    free_facts: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def agrees(self) -> bool:
        # An undecided search ("budget") agrees with neither answer. A launch SGLang accepts and
        # then fails to load agrees with a refusal or a warning, never with a silent resolution.
        if self.sglang_load_failed:
            return self.ours in ("conflict", "invalid") or (self.ours == "resolved" and self.warned)
        if self.sglang_ok:
            return self.ours == "resolved"
        return self.ours in ("conflict", "invalid")


@dataclass
class Report:
    outcomes: list[Outcome]

    @property
    def accept_agree(self) -> int:
        return sum(o.agrees for o in self.outcomes)

    @property
    def accept_rate(self) -> float:
        return _pct(self.accept_agree, len(self.outcomes))

    def per_field(self) -> dict[str, tuple[int, int]]:
        """field -> (agreeing, compared), over scenarios both sides accepted."""
        agree: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for outcome in self.outcomes:
            for name, ok in outcome.compared.items():
                total[name] += 1
                agree[name] += ok
        return {name: (agree[name], total[name]) for name in sorted(total)}

    @property
    def value_agree(self) -> tuple[int, int]:
        rows = self.per_field().values()
        return sum(a for a, _ in rows), sum(t for _, t in rows)

    @property
    def value_rate(self) -> float:
        return _pct(*self.value_agree)

    @property
    def differences(self) -> list[Difference]:
        return [d for o in self.outcomes for d in o.differences]

    def uncovered(self) -> Counter[str]:
        return Counter(name for o in self.outcomes for name in o.uncovered)

    def ignored_inputs(self) -> Counter[str]:
        return Counter(name for o in self.outcomes for name in o.ignored_inputs)

    def free_facts(self) -> Counter[str]:
        return Counter(name for o in self.outcomes for name in o.free_facts)

    def to_json(self) -> dict[str, Any]:
        agree, total = self.value_agree
        return {
            "schema": 1,
            "oracle": ORACLE.name,
            "scenarios": len(self.outcomes),
            "accept_reject": {
                "agree": self.accept_agree,
                "total": len(self.outcomes),
                "rate": self.accept_rate,
            },
            "values": {"agree": agree, "total": total, "rate": self.value_rate},
            "fields": {
                name: {"agree": a, "total": t, "rate": _pct(a, t)}
                for name, (a, t) in self.per_field().items()
            },
            "not_covered": dict(sorted(self.uncovered().items())),
            "ignored_inputs": dict(sorted(self.ignored_inputs().items())),
            "free_facts": dict(sorted(self.free_facts().items())),
            "differences": [vars(d) for d in self.differences],
            "seconds": round(sum(o.seconds for o in self.outcomes), 3),
        }


def _pct(agree: int, total: int) -> float:
    return round(100.0 * agree / total, 1) if total else 100.0


# --- scenario -> inputs -------------------------------------------------------------------


def inputs_for(
    pack: Pack, scenario: Mapping[str, Any], config_dir: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(options, facts, ignored inputs) for one oracle scenario, in the pack's field names.

    `config_dir` holds the config.json SGLang saw; its facts (traits, shapes, dtype) are read
    through the pack's `--model-config` table, as a user's would be."""
    if "architecture" not in scenario:  # a model directory: the config names the class
        scenario = {**scenario, "architecture": "other"}
    platform = scenario["platform"]
    gpu_arch = f"sm{scenario['sm']}" if "sm" in scenario else scenario.get("gfx") or "none"
    facts: dict[str, Any] = {"platform": platform, "gpu_arch": gpu_arch}
    ignored: list[str] = []
    arch = scenario["architecture"]
    if arch in pack.fields["architecture"].domain:
        facts["architecture"] = arch
    else:
        facts["architecture"] = "other"
        ignored.append(f"architecture={arch}")
    kind = scenario.get("checkpoint_quant")
    facts["checkpoint_quant"] = CHECKPOINT_QUANT[kind] if kind else "none"
    facts.update(PLAIN_CHECKPOINT)
    facts.update(HARDWARE.get(platform, {}))
    # The oracle resolves arguments and never starts a rank per GPU, so the GPU count (which
    # only bounds tp x dp when known) is left unknown, as SGLang's resolution never reads it.
    if "num_gpus" in pack.fields:
        facts["num_gpus"] = 0
    extra = dict(scenario.get("facts") or {})
    driver = extra.pop("nvidia_driver", None)
    if "amx" in extra:  # the harness's name of the fact (hwmock: cpu_has_amx_support, CPU only)
        extra["cpu_has_amx"] = bool(extra.pop("amx")) and platform == "cpu"
    facts["nvidia_driver_ge_595"] = driver is not None and tuple(driver) >= DRIVER_595
    facts.update(extra)
    env = scenario.get("env") or {}
    if "a2a_dispatch_budget_raised" in pack.fields:
        # The harness leaves the dispatch-budget variables at SGLang's defaults unless a scenario's
        # env sets one; the fact says the variable of the scenario's own backend was set.
        a2a = (scenario.get("args") or {}).get("moe_a2a_backend")
        facts["a2a_dispatch_budget_raised"] = DISPATCH_BUDGET_ENV.get(str(a2a), "") in env
    # The environment as `confsolve` reads it (an unset variable is its unset value).
    read = facts_from_environ(pack, {name: str(value) for name, value in env.items()})
    facts.update({name: pin.value for name, pin in read.items()})
    ignored += [f"env {name}" for name in env if name not in pack.fields]
    options: dict[str, Any] = {}
    for name, value in _typed(pack, scenario).items():
        value = INPUT_SPELLINGS.get(name, {}).get(value, value) if isinstance(value, str) else value
        target = pack.fields.get(name)
        if target is None or target.kind != "option":
            ignored.append(name)
        elif value is not None:
            options[name] = value
    if not PREDICT:
        # Without predict mode the search would pick parallel sizes or the dtype to make a
        # request work; SGLang runs them at its defaults (resources and precision are never
        # chosen to satisfy another flag).
        for name, default in SGLANG_DEFAULTS.items():
            if name in pack.fields:
                options.setdefault(name, default)
    if config_dir is not None:
        read = facts_from_model_config(pack, config_dir)
        facts.update({name: pin.value for name, pin in read.items()})
        if scenario.get("checkpoint_quant") == "w4afp8_mixed":
            # A ModelOpt MIXED_PRECISION export is w4afp8 unless a layer is NVFP4
            # (ModelConfig._parse_modelopt_quant_config); the reader cannot look into the
            # per-layer table, so it says modelopt_mixed. The harness's kind is exact here.
            facts["checkpoint_quant"] = CHECKPOINT_QUANT["w4afp8_mixed"]
    # Facts the pack does not declare (yet) are the harness's knowledge, not an input error.
    facts = {k: v for k, v in facts.items() if k in pack.fields}
    return options, facts, ignored


def _typed(pack: Pack, scenario: Mapping[str, Any]) -> Mapping[str, Any]:
    """The flags a scenario types, by field: its `args`; for a command-line record that keeps the
    words SGLang's own parser read (`argv`, round 28: aliases, `--flag=value`, a flag typed
    twice, the model flag's aliases), what the pack's launch-command reader makes of the same
    words, as `confsolve check -- python -m sglang.launch_server ...` reads them (a command it
    refuses raises `InvalidInput`, a verdict like a refused value)."""
    argv = scenario.get("argv")
    if argv is None:
        return scenario.get("args") or {}
    from solver.inputs.launchrequest import read_request

    typed = read_request(pack, ["python", "-m", "sglang.launch_server", *argv]).options
    # The reader keeps each value as typed (`--set`'s text); the pins read them as the pack's
    # values, so that the replay's audit compares a typed 2 with a resolved 2.
    return {name: pin.value for name, pin in collect_pins(pack, typed).items()}


# --- comparison ---------------------------------------------------------------------------

# SGLang's resolved dump lacks disable_shared_experts_fusion; it logs when it sets the flag itself.
_SHARED_FUSION_OFF = "--disable-shared-experts-fusion is automatically set"


def sglang_value(pack: Pack, name: str, result: Mapping[str, Any]) -> Any:
    """SGLang's decided value for our field `name`, or None where SGLang had not decided it."""
    resolved, model = result["resolved"], result.get("model", {})
    if name == "disable_shared_experts_fusion":
        # Only the warning shows SGLang's decision; without it the value is not in the record.
        warned = any(_SHARED_FUSION_OFF in w for w in result.get("warnings") or ())
        return True if warned else None
    if name == "quantization":
        # The effective method lives in the model config; ServerArgs often keeps None (README).
        value = model.get("quantization")
        return "none" if value is None else value
    if name == "dp_size" and _rewrote_dp_attention(resolved):
        # With DP attention on, the pack's dp_size counts attention DP groups (parallel.toml): the
        # launcher passes --dp-size N --enable-dp-attention, which SGLang 0.5.23 rewrites into
        # attn_dp_size N, dp_size 1 (parallel_hook.handle_deprecated_dp_attention), the same layout.
        return resolved["attn_dp_size"]
    value = resolved.get(name)
    if name in ("prefill_attention_backend", "decode_attention_backend") and value is None:
        value = resolved.get("attention_backend")  # the effective per-phase backend
    domain = pack.fields[name].domain
    if value is None:
        return "none" if "none" in domain else None
    if value == "auto" and "auto" not in domain:
        return None
    return _canonical(name, value)


def _rewrote_dp_attention(resolved: Mapping[str, Any]) -> bool:
    """SGLang ran attention DP groups and no replicas: the deprecated pair's rewrite (a typed
    --attn-dp-size with --dp-size > 1 counts replicas too, which the pack cannot say)."""
    groups = resolved.get("attn_dp_size")
    running = bool(resolved.get("enable_dp_attention")) and resolved.get("dp_size") == 1
    return running and isinstance(groups, int) and groups > 1


def _canonical(name: str, value: Any) -> Any:
    return ALIASES.get(name, {}).get(value, value) if isinstance(value, str) else value


def show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _why(res: Resolution, name: str) -> str:
    prov = res.provenance[name]
    parts: list[str] = [prov.kind]
    if prov.rule:
        parts.append(prov.rule)
    elif prov.source and prov.kind in ("user", "fact"):
        parts.append(prov.source)
    return " ".join(parts)


_PUBLIC: list[tuple[dict[str, str], ConfigStore]] = []


def _public_config(scenario_id: str) -> Path | None:
    """The config.json directory of a scenario of the public oracle file (fixtures/oracle/)."""
    if not _PUBLIC:
        doc: dict[str, Any] = {"scenarios": {}, "configs": {}}
        if CONFIGS.is_file():
            with gzip.open(CONFIGS, "rt", encoding="utf-8") as handle:
                doc = json.load(handle)
        root = Path(tempfile.mkdtemp(prefix="confsolve-oracle-"))
        _PUBLIC.append((doc["scenarios"], ConfigStore(root, doc["configs"])))
    keys, store = _PUBLIC[0]
    return store.directory(keys.get(scenario_id))


def run_scenario(
    pack: Pack, row: Mapping[str, Any], *, explain: bool = True, predict: bool = True
) -> Outcome:
    """Replay one scenario. `explain=False` skips naming our conflict's rules (the minimal
    conflict and repairs cost seconds; accept/reject and values do not need them).
    `predict`: replay as `confsolve check` does (the launcher's own default chain for every
    flag the scenario leaves unset), which is the question the oracle answers; False replays
    `confsolve resolve` (the search)."""
    scenario, result = row["scenario"], row["sglang"]
    options, facts, ignored = inputs_for(pack, scenario, _public_config(scenario["id"]))
    outcome = Outcome(
        scenario=scenario["id"],
        sglang_ok=bool(result["ok"]),
        ours="resolved",
        ignored_inputs=ignored,
        sglang_load_failed=(result.get("load") or {}).get("ok") is False,
    )
    start = time.perf_counter()
    try:
        pins = collect_pins(pack, options, facts)
        res = resolve_pins(pack, pins, reasons=False, explain_failure=False, predict=predict)
    except Unsatisfiable:
        outcome.ours = "conflict"
        outcome.detail = _conflict_rules(pack, options, facts, predict) if explain else ""
    except InvalidInput as exc:
        outcome.ours = "invalid"
        outcome.detail = "; ".join(i.message for i in exc.issues)
    except SolverBudgetExceeded as exc:
        outcome.ours = "budget"
        outcome.detail = str(exc)
    outcome.seconds = time.perf_counter() - start
    if not result["ok"]:
        error = result["error"]
        if not outcome.agrees:
            outcome.differences.append(
                Difference(
                    outcome.scenario,
                    ACCEPT,
                    "error",
                    outcome.ours,
                    f"SGLang: {error['type']}: {_first_line(error['message'])}",
                )
            )
        return outcome
    if outcome.ours != "resolved":
        if not outcome.agrees:
            outcome.differences.append(
                Difference(outcome.scenario, ACCEPT, "ok", outcome.ours, outcome.detail)
            )
        return outcome
    outcome.warned = bool(res.warnings)
    if not outcome.agrees:
        # SGLang's own load-time code failed and we resolved without a word.
        load_error = result["load"].get("error") or {}
        outcome.differences.append(
            Difference(
                outcome.scenario,
                ACCEPT,
                "load-error",
                "resolved",
                f"SGLang at load ({load_error.get('check', '?')}): {load_error.get('type', '?')}: "
                f"{_first_line(load_error.get('message', ''))}",
            )
        )
    for name in [*result["resolved"], *EXTRA_COMPARED]:
        if name in NOT_COMPARED:
            continue
        if name not in pack.fields:
            if result["resolved"].get(name) not in (None, "auto"):
                outcome.uncovered.append(name)
            continue
        expected = sglang_value(pack, name, result)
        if expected is None:
            continue
        ours = _canonical(name, res.values[name])
        same = ours == expected and isinstance(ours, bool) == isinstance(expected, bool)
        outcome.compared[name] = same
        if not same:
            outcome.differences.append(
                Difference(outcome.scenario, name, show(expected), show(ours), _why(res, name))
            )
    outcome.free_facts = [
        name
        for name, fld in pack.fields.items()
        if fld.kind == "fact" and name not in facts and res.provenance[name].kind in ("preference", "default")
    ]
    return outcome


def _conflict_rules(
    pack: Pack, options: Mapping[str, Any], facts: Mapping[str, Any], predict: bool = True
) -> str:
    try:
        resolve_pins(pack, collect_pins(pack, options, facts), reasons=False, predict=predict)
    except Unsatisfiable as exc:
        return ", ".join(r.id for r in exc.conflict.rules) or "conflict"
    return "conflict"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 160 else line[:157] + "..."


def run(
    pack: Pack | None = None,
    rows: Iterable[Mapping[str, Any]] | None = None,
    *,
    explain: bool = True,
    predict: bool = True,
) -> Report:
    pack = pack or load_pack("sglang")
    return Report(
        [run_scenario(pack, row, explain=explain, predict=predict) for row in (rows or load_scenarios())]
    )


# --- the known-differences table ----------------------------------------------------------

_ROW = re.compile(r"^\|(.+)\|\s*$")


def known_differences(path: Path = KNOWN) -> dict[tuple[str, str, str, str], str]:
    """(scenario, field, SGLang, confsolve) -> reason, from the markdown table in `path`.

    Cells are written as code (`fa3`) or plain text; a row whose reason is empty is an error.
    """
    out: dict[tuple[str, str, str, str], str] = {}
    if not path.is_file():
        return out
    header_seen = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _ROW.match(line.strip())
        if not match:
            continue
        cells = [c.strip().strip("`").strip() for c in match.group(1).split("|")]
        if not header_seen:
            header_seen = [c.lower() for c in cells[:4]] == ["scenario", "field", "sglang", "confsolve"]
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue
        if len(cells) != 5 or not cells[4] or cells[4].lower().startswith(("todo", "?")):
            raise ValueError(
                f"{path.name}:{number}: a row needs scenario | field | SGLang | "
                f"confsolve | reason, with a reason"
            )
        key = (cells[0], cells[1], cells[2], cells[3])
        if key in out:
            raise ValueError(f"{path.name}:{number}: {key} is listed twice")
        out[key] = cells[4]
    return out
