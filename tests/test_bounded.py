"""Bounded: a pack that is exponential to refute ends in SolverBudgetExceeded (exit 4, a message
naming what was being solved), never a hang; the shipped packs stay far below the budget.

The pathological pack is the pigeonhole problem, generated into tmp: n+1 fields ("pigeons") with
the domain 0..n-1 ("holes") and one `pi != pj` rule per pair. It is unsatisfiable, and backtracking
with forward checking needs about n! steps to prove it (n=7: 13,699 steps, n=8: 109,600), because
no rule alone is violated until the last pigeon.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hostile import assert_clean_text, run_cli, sglang_pack, write_pack

from solver import (
    InvalidInput,
    SolverBudgetExceeded,
    SolverError,
    Unsatisfiable,
    load_pack,
    resolve,
    valid_choices,
)
from solver.budget import DEFAULT_STEPS, Budget, steps_from_env
from solver.engine.csp import SearchTrace, compile_pack
from solver.inputs.pins import collect_pins
from solver.model import Pack

SMALL_BUDGET = 5_000


def pigeonhole(root: Path, holes: int) -> Path:
    """The pigeonhole pack with `holes` holes and `holes + 1` pigeons, as a directory."""
    pigeons = range(holes + 1)
    fields = "".join(f'[field.p{i}]\nkind = "option"\ndomain = {list(range(holes))}\n' for i in pigeons)
    rules = "".join(
        f'[[rule]]\nid = "p{i}-ne-p{j}"\nrequire = "p{i} != p{j}"\n'
        f'because = "pigeons {i} and {j} need holes of their own"\nsource = "pigeonhole"\n'
        for i in pigeons
        for j in pigeons
        if i < j
    )
    return write_pack(
        root / f"pigeonhole-{holes}", {"holes.toml": fields + rules}, name=f"pigeonhole-{holes}"
    )


def test_small_pigeonhole_is_refuted_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 4 holes the proof takes 64 steps: under the small budget the request is an ordinary
    conflict (so the budget, not the pack, is what stops the large case below)."""
    with pytest.raises(Unsatisfiable) as caught:
        resolve(load_pack(pigeonhole(tmp_path, 4)), budget=Budget(SMALL_BUDGET))
    assert len(caught.value.conflict.rules) == 10  # every pair: the whole problem is the core


@pytest.mark.parametrize("call", ["resolve", "valid_choices", "resolve-pinned"])
def test_large_pigeonhole_exceeds_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """With 8 holes (about 110,000 steps) and a budget of 5,000, `resolve` and `valid_choices`
    raise SolverBudgetExceeded: a SolverError with exit code 4, the budget, and the task in its
    message."""
    pack = load_pack(pigeonhole(tmp_path, 8))
    budget = Budget(SMALL_BUDGET)
    with pytest.raises(SolverBudgetExceeded) as caught:
        if call == "resolve":
            resolve(pack, budget=budget)
        elif call == "resolve-pinned":
            resolve(pack, {"p0": 0, "p1": 1}, budget=budget)
        else:
            valid_choices(pack, fields=["p0"], budget=budget)
    exc = caught.value
    assert isinstance(exc, SolverError) and exc.exit_code == 4
    assert exc.budget == SMALL_BUDGET and exc.task
    assert exc.task in str(exc) and f"{SMALL_BUDGET}" in str(exc)
    doc = exc.to_json()
    assert doc["status"] == "error" and doc["error"]["type"] == "SolverBudgetExceeded"


@pytest.mark.parametrize("json_flag", [False, True])
def test_cli_exits_4_when_the_budget_runs_out(tmp_path: Path, json_flag: bool) -> None:
    """`CONFSOLVE_BUDGET=5000 confsolve resolve --pack PIGEONHOLE`: exit 4, one message that names
    the budget and how to raise it (or the JSON error document), no traceback."""
    root = pigeonhole(tmp_path, 8)
    done = run_cli(
        ["resolve", "--pack", str(root), "--set", "p0=0", *(["--json"] * json_flag)],
        env={"CONFSOLVE_BUDGET": str(SMALL_BUDGET)},
        timeout=60,
    )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 4, err
    assert_clean_text(out, err)
    if json_flag:
        doc = json.loads(out)
        assert doc["schema"] == 1 and doc["status"] == "error"
        assert doc["error"]["type"] == "CommandBudgetExceeded"  # CONFSOLVE_BUDGET bounds the command
        assert str(SMALL_BUDGET) in doc["error"]["message"]
    else:
        assert err.startswith("confsolve: ") and str(SMALL_BUDGET) in err
        assert "CONFSOLVE_BUDGET" in err


def test_the_budget_message_names_only_real_options(tmp_path: Path) -> None:
    """Every flag the budget message suggests is accepted by `confsolve resolve`."""
    from solver.cli.commands import build_parser

    message = str(SolverBudgetExceeded("resolving the request", 10))
    assert "CONFSOLVE_BUDGET" in message
    flags = [word.strip(",;.") for word in message.split() if word.startswith("--")]
    parser = build_parser()
    for flag in flags:
        parser.parse_args(["resolve", flag, "10"])


@pytest.mark.parametrize("where", ["after the command", "before the command"])
def test_the_budget_option_stops_the_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """`--budget N` (given to the command, or before it) is the budget of that command only, and
    wins over CONFSOLVE_BUDGET (even a malformed one)."""
    from solver.cli.commands import main

    monkeypatch.setenv("CONFSOLVE_BUDGET", "not a number")
    budget = ["--budget", str(SMALL_BUDGET)]
    request = ["resolve", "--pack", str(pigeonhole(tmp_path, 8)), "--set", "p0=0"]
    argv = [*request, *budget] if where == "after the command" else [*budget, *request]
    assert main(argv) == 4
    _, err = capsys.readouterr()
    assert f"budget of {SMALL_BUDGET} steps" in err
    with pytest.raises(SystemExit) as usage:  # argparse's usage error
        main(["check", "--pack", str(pigeonhole(tmp_path, 2)), "--budget", "0"])
    assert usage.value.code == 2
    assert "--budget" in capsys.readouterr().err


def test_a_malformed_budget_variable_is_reported_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from solver.cli.commands import main

    monkeypatch.setenv("CONFSOLVE_BUDGET", "-3")
    assert main(["check", "--pack", str(pigeonhole(tmp_path, 2)), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [i["field"] for i in doc["error"]["issues"]] == ["CONFSOLVE_BUDGET"]
    monkeypatch.setenv("CONFSOLVE_BUDGET", " 2500 ")
    assert steps_from_env() == 2500 and Budget().per_search == 2500
    monkeypatch.setenv("CONFSOLVE_BUDGET", "")
    assert steps_from_env() == DEFAULT_STEPS


# --- the shipped packs stay far below the budget ------------------------------------------------

PLATFORMS = {"platform": "cuda", "gpu_arch": "sm90"}
REALISTIC: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = [
    ("llama-h100", {}, {**PLATFORMS, "architecture": "LlamaForCausalLM"}),
    ("llama-h100-fp8", {"quantization": "fp8"}, {**PLATFORMS, "architecture": "LlamaForCausalLM"}),
    (
        "llama-a100-fa3",
        {"attention_backend": "fa3"},
        {"platform": "cuda", "gpu_arch": "sm80", "architecture": "LlamaForCausalLM"},
    ),
    (
        "deepseek-b200-fp4",
        {"quantization": "modelopt_fp4", "moe_runner_backend": "flashinfer_trtllm"},
        {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"},
    ),
    (
        "deepseek-h100-dp-ep",
        {"tp_size": 8, "ep_size": 8, "dp_size": 8, "enable_dp_attention": True, "moe_a2a_backend": "deepep"},
        {**PLATFORMS, "architecture": "DeepseekV3ForCausalLM"},
    ),
    ("qwen3-moe-mi300", {}, {"platform": "hip", "gpu_arch": "gfx942", "architecture": "Qwen3MoeForCausalLM"}),
    (
        "gpt-oss-b200-mxfp4",
        {"quantization": "mxfp4"},
        {"platform": "cuda", "gpu_arch": "sm100", "architecture": "GptOssForCausalLM"},
    ),
    (
        "llama-h100-fp4-conflict",
        {"quantization": "modelopt_fp4"},
        {**PLATFORMS, "architecture": "LlamaForCausalLM"},
    ),
    (
        "eagle-h100",
        {"speculative_algorithm": "EAGLE", "kv_cache_dtype": "fp8_e4m3"},
        {**PLATFORMS, "architecture": "LlamaForCausalLM"},
    ),
    ("unknown-gpu", {"tp_size": 2}, {"platform": "cuda", "architecture": "Qwen3ForCausalLM"}),
]


def _known(pack: Pack, request: Mapping[str, Any]) -> dict[str, Any]:
    """The request without names the pack (still being written) does not have yet."""
    return {k: v for k, v in request.items() if k in pack.fields}


def test_realistic_sglang_searches_use_under_one_percent_of_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """For realistic SGLang requests: the search for each request takes < 1% of DEFAULT_STEPS
    steps (SearchTrace.steps), and every search that resolve runs (refutation, ordered choice,
    conflict and repair explanations) completes with the budget cut to 1%."""
    pack = sglang_pack()
    cp = compile_pack(pack)
    limit = DEFAULT_STEPS // 100
    steps: dict[str, int] = {}
    for name, options, facts in REALISTIC:
        pins = collect_pins(pack, _known(pack, options), _known(pack, facts))
        trace = SearchTrace()
        cp.solve({n: p.value for n, p in pins.items()}, trace=trace)
        steps[name] = trace.steps
    assert max(steps.values()) < limit, steps
    outcomes = {}
    for name, options, facts in REALISTIC:
        try:
            resolve(pack, _known(pack, options), _known(pack, facts), budget=Budget(limit))
            outcomes[name] = "resolved"
        except Unsatisfiable:
            outcomes[name] = "conflict"
        except InvalidInput:  # a required fact the other inputs do not decide: asked back
            outcomes[name] = "invalid"
    assert "resolved" in outcomes.values(), outcomes
    # The cut budget is live: one step is not enough for the same requests.
    with pytest.raises(SolverBudgetExceeded):
        name, options, facts = REALISTIC[0]
        resolve(pack, _known(pack, options), _known(pack, facts), budget=Budget(1))
