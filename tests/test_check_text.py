"""`confsolve check`'s text: after `ok`, what the launcher picks by itself for the options left
unset (issue #13's leftover), in a few lines that fit the terminal; `check --json` unchanged."""

from __future__ import annotations

import json
import re

import pytest
from clirun import run

from solver import load_pack
from solver.render.text import launcher_picks, terminal_width

HOPPER_LLAMA = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]
DEEPSEEK_FP8 = [
    "--set",
    "platform=cuda",
    "--set",
    "gpu_arch=sm90",
    "--set",
    "architecture=DeepseekV3ForCausalLM",
    "--set",
    "checkpoint_quant=fp8",
]
VLLM_L40S = [
    "--pack",
    "vllm",
    "--set",
    "platform=cuda",
    "--set",
    "gpu_arch=sm89",
    "--set",
    "architecture=LlamaForCausalLM",
    "--set",
    "num_attention_heads=32",
    "--set",
    "kv_cache_dtype=fp8",
]


def _block(out: str, pack: str) -> list[str]:
    """The lines of the `PACK picks by itself:` paragraph of `check`'s text."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{pack} picks by itself:"))
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[start:end]


def _picks(out: str, pack: str) -> dict[str, str]:
    """The paragraph as field -> value."""
    text = " ".join(_block(out, pack)).split(":", 1)[1]
    return dict(item.strip().split("=", 1) for item in text.split(",") if item.strip())


@pytest.mark.parametrize(
    ("pack", "argv"),
    [("sglang", [*HOPPER_LLAMA, "--set", "tp_size=8"]), ("sglang", DEEPSEEK_FP8), ("vllm", VLLM_L40S)],
)
def test_the_picks_are_the_launchers_own_values_for_unset_options(
    pack: str, argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "check", *argv)
    assert code == 0 and out.startswith(f"ok: {pack} takes the request as typed")
    picks = _picks(out, pack)
    code, doc_text, _ = run(capsys, "check", *argv, "--json")
    doc = json.loads(doc_text)
    the_pack = load_pack(pack)
    typed = {w.split("=", 1)[0] for w in argv if "=" in w}
    assert picks, out
    for name, shown in picks.items():
        field = the_pack.fields[name]
        assert field.kind == "option" and name not in typed  # never a fact, never what was typed
        assert doc["provenance"][name]["kind"] in ("preference", "rule", "default")
        assert shown == (
            str(doc["values"][name]).lower()
            if isinstance(doc["values"][name], bool)
            else str(doc["values"][name])
        )
    # Left out: a value spelled by leaving the flag out, a feature left off, a follower.
    for name, value in doc["values"].items():
        field = the_pack.fields[name]
        if field.kind != "option" or name in typed or name in picks:
            continue
        prov = doc["provenance"][name]
        follows = prov["kind"] == "preference" and the_pack.preference(prov["rule"]).same_as is not None
        assert (
            prov["kind"] not in ("preference", "rule", "default")
            or value is False
            or value == field.absent
            or follows
        ), name


def test_what_the_picks_say_on_hopper(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V3 FP8 on H100: the checkpoint's FP8 adopted, FA3 for MLA, the MoE runner; not the
    prefill and decode backends that follow FA3, not `--quantization` spelled by its absence."""
    _, out, _ = run(capsys, "check", *DEEPSEEK_FP8)
    picks = _picks(out, "sglang")
    assert picks["quantization"] == "fp8"
    assert picks["attention_backend"] == "fa3"
    assert picks["moe_runner_backend"] == "triton"
    assert "prefill_attention_backend" not in picks and "decode_attention_backend" not in picks
    assert "enable_dp_attention" not in picks  # false: a feature left off
    _, plain, _ = run(capsys, "check", *HOPPER_LLAMA)
    assert "quantization" not in _picks(plain, "sglang")  # none: SGLang spells it by leaving the flag out


def test_a_follower_that_differs_from_its_leader_is_shown() -> None:
    """A `same_as` preference's field is left out only while it holds its leader's value."""
    import dataclasses

    from solver.reasoning.resolution import resolve

    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"}
    res = resolve(pack, {"attention_backend": "fa3"}, facts, predict=True, reasons=False)
    follower = next(p.field for p in pack.preferences if p.same_as == "attention_backend")
    assert res.values[follower] == "fa3"
    assert f"{follower}=" not in " ".join(launcher_picks(pack, res, 1000))
    moved = dataclasses.replace(res, values={**res.values, follower: "triton"})
    assert f"{follower}=triton" in " ".join(launcher_picks(pack, moved, 1000))


@pytest.mark.parametrize("columns", ["40", "80", "132"])
def test_the_picks_fit_the_terminal(
    columns: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    _, out, _ = run(capsys, "check", *VLLM_L40S)
    block = _block(out, "vllm")
    # Every line fits, except one that holds a single item longer than a line by itself.
    assert all(len(line) <= int(columns) or line.count("=") == 1 for line in block), block
    assert sum(line.count("=") for line in block) == len(_picks(out, "vllm"))
    assert len(block) <= {"40": 14, "80": 5, "132": 3}[columns]


def test_the_width_is_columns_then_the_terminal_then_80(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setenv("COLUMNS", "123")
    assert terminal_width(io.StringIO()) == 123
    monkeypatch.setenv("COLUMNS", "wide")
    assert terminal_width(io.StringIO()) == 80  # not a number, and not a terminal
    monkeypatch.delenv("COLUMNS")
    assert terminal_width(io.StringIO()) == 80


def test_check_json_is_unchanged_by_the_picks(capsys: pytest.CaptureFixture[str]) -> None:
    """The picks are text only: the document has the keys it had (the values are all there)."""
    _, doc_text, _ = run(capsys, "check", *HOPPER_LLAMA, "--json")
    doc = json.loads(doc_text)
    assert "picks" not in doc and not any(re.search("pick", key) for key in doc)
    assert doc["mode"] == "predict" and doc["status"] == "resolved"


@pytest.mark.parametrize(
    "argv",
    [
        [*HOPPER_LLAMA, "--set", "attention_backend=trtllm_mla"],  # a because without a full stop
        [
            "--pack",
            "vllm",
            "--set",
            "platform=cuda",
            "--set",
            "gpu_arch=sm90",
            "--set",
            "attention_backend=FLASHMLA",
        ],
        [*HOPPER_LLAMA, "--set", "tp_size=8", "--set", "num_gpus=4"],
    ],
)
def test_the_conflict_paragraph_is_sentences(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """The rule's reason ran into the repair: "... fa3 or flashmla Try: unset attention_backend."
    Each part of the paragraph ends with a full stop before the next begins."""
    code, out, _ = run(capsys, "check", *argv)
    assert code == 1 and out.startswith("conflict: ")
    paragraph = " ".join(out.split())
    assert re.search(r"[^.!?] (Try:|Run `confsolve resolve`)", paragraph) is None, paragraph


def test_a_repair_s_fact_change_is_said_after_the_command_not_inside_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A V100 (sm70) under a typed SGLang command: the repair's GPU change sat inside the
    backticks, after a 4-space gap, as if it were words of the command. resolve keeps its column."""
    argv = [
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm70",
        "--",
        *["python", "-m", "sglang.launch_server", "--tp", "8"],
    ]
    code, out, _ = run(capsys, "check", *argv)
    assert code == 1
    assert (
        "Try: `python -m sglang.launch_server --tp-size 8` on a machine or model with gpu_arch=sm75." in out
    )
    code, out, err = run(capsys, "resolve", *argv)
    assert "--tp-size 8    (on a machine or model with gpu_arch=sm75)" in out + err


def test_the_paragraph_names_options_as_the_launcher_spells_them(capsys: pytest.CaptureFixture[str]) -> None:
    """An option is named by the flag the user types, as `resolve` lists it ("--attention-backend
    fa3 (you set it)"); facts keep their names. Round 30 said "attention_backend=fa3 ... Try: unset
    attention_backend" here and "together they leave attention_backend (not given)" elsewhere."""
    argv = [
        *["--set", "platform=cuda", "--set", "gpu_arch=sm120", "--set", "architecture=DeepseekV3ForCausalLM"],
        *["--set", "checkpoint_quant=fp8", "--set", "tp_size=8", "--set", "attention_backend=fa3"],
    ]
    code, out, _ = run(capsys, "check", *argv)
    assert code == 1
    assert out.startswith("conflict: --attention-backend fa3, platform=cuda, gpu_arch=sm120 cannot hold"), out
    assert "Try: leave --attention-backend on auto." in out, out
    code, out, _ = run(capsys, "check", "--json", *argv)
    assert json.loads(out)["conflict"]["pins"][0]["field"] == "attention_backend"  # JSON: field names
