"""A typed launch command through the library, as a launcher author uses it (docs/launchers.md,
"A command as typed"): `read_request` then `solver.check`, and everything `confsolve check --
COMMAND` prints, as data: the values the launcher picks, its adjustments, the assumed facts, the
notes on words it sets aside, and the exit code of each refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver import InvalidInput, Unsatisfiable, check, load_pack
from solver.inputs.launch import repaired_command, shell_line
from solver.inputs.launchrequest import LaunchRequest, read_request
from solver.inputs.modelconfig import facts_from_model_config
from solver.model import Pack

MODELS = Path(__file__).resolve().parent / "fixtures" / "models"
HOPPER = {"platform": "cuda", "gpu_arch": "sm90"}

sglang_pack = pytest.fixture(scope="module", name="sglang")(lambda: load_pack("sglang"))
vllm_pack = pytest.fixture(scope="module", name="vllm")(lambda: load_pack("vllm"))


def _as_a_launcher_does(pack: Pack, words: list[str], machine: dict[str, str]) -> tuple[LaunchRequest, Any]:
    """The recipe of docs/launchers.md: read the command, read the model's config.json, check."""
    request = read_request(pack, words)
    facts: dict[str, Any] = dict(machine)
    if request.model is not None and Path(request.model).exists():  # (a hub id: its facts stay unknown)
        facts |= facts_from_model_config(pack, request.model)
    return request, check(pack, request.options, facts)


def test_a_command_as_typed_gives_what_check_prints(sglang: Pack, capsys: pytest.CaptureFixture[str]) -> None:
    from clirun import run

    model = str(MODELS / "qwen3-8b")
    words = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--speculative-algorithm",
        "NEXTN",
    ]
    words += ["--tp", "2", "--tp-size", "4"]
    request, res = _as_a_launcher_does(sglang, words, HOPPER)
    assert request.model == model and request.options["tp_size"] == "4"
    assert request.notes == ("--tp 2 is given again as --tp-size 4: sglang 0.5.23 reads the last one",)
    # the launcher's own adjustment, as data
    (adjusted,) = res.adjustments
    assert (adjusted.field, adjusted.requested, adjusted.resolved) == (
        "speculative_algorithm",
        "NEXTN",
        "EAGLE",
    )
    assumed = {a.field for a in res.assumed}
    assert "num_gpus" in assumed and "architecture" not in assumed  # read from config.json
    # the same answer as `confsolve check --json -- COMMAND`, and its stderr note is the library's
    code, out, err = run(
        capsys, "check", "--json", *[f"--set={k}={v}" for k, v in HOPPER.items()], "--", *words
    )
    doc = json.loads(out)
    assert code == 0 and doc["values"] == json.loads(json.dumps(res.values))
    assert doc["adjustments"][0]["resolved"] == "EAGLE" and request.notes[0] in err


def test_a_config_file_and_the_environment_typed_in_front(vllm: Pack, sglang: Pack, tmp_path: Path) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text("tensor-parallel-size: 2\nmax-num-seqs: 64\n", encoding="utf-8")
    request = read_request(vllm, ["vllm", "serve", "m", "--config", str(config), "--port", "8001"])
    assert request.options == {"tensor_parallel_size": "2"} and request.config_options == (
        "tensor_parallel_size",
    )
    words = ["SGLANG_USE_AITER=1", "python", "-m", "sglang.launch_server", "--model-path", "m"]
    assert read_request(sglang, words).options == {"SGLANG_USE_AITER": "1"}


def test_each_refusal_has_its_exit_code(vllm: Pack) -> None:
    with pytest.raises(InvalidInput) as refused:  # the launcher's parser refuses the command
        read_request(vllm, ["vllm", "serve", "m", "--tensor-parallel-sise", "2"])
    assert refused.value.exit_code == 2
    assert refused.value.issues[0].did_you_mean[0] == "--tensor-parallel-size"
    request = read_request(vllm, ["vllm", "serve", "m", "--attention-backend", "FLASHMLA"])
    machine = {**HOPPER, "architecture": "LlamaForCausalLM"}
    with pytest.raises(Unsatisfiable) as conflict:  # the launcher would fail at start-up
        check(vllm, request.options, machine)
    assert conflict.value.exit_code == 1 and conflict.value.repairs
    repaired = shell_line(repaired_command(vllm, request.command, conflict.value.repairs[0]))
    assert repaired.startswith("vllm serve m") and "FLASHMLA" not in repaired
    assert {"field": "attention_backend", "value": "FLASHMLA"} in [
        {"field": p.field, "value": p.value} for p in conflict.value.conflict.pins
    ]


def test_confsolves_own_option_after_the_command_says_where_it_goes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a newcomer's `confsolve check --pack vllm -- vllm serve m --set gpu_arch=sm90` said only
    # "vllm 0.33.0 has no flag --set"
    from clirun import run

    code, _, err = run(
        capsys, "check", "--pack", "vllm", "--", "vllm", "serve", "m", "--set", "gpu_arch=sm90"
    )
    assert code == 2 and "confsolve's own --set goes before `--`" in err
    code, _, err = run(
        capsys, "check", "--pack", "vllm", "--", "vllm", "serve", "m", "--tensor-parallel-sise", "2"
    )
    assert code == 2 and "goes before" not in err
