"""An environment variable's value is read as the launcher reads it, and one it would not read as
meant is refused saying so: the spellings it does read, and (the pack's `unread`) what it does with
the rest. Round 30 answered `--set SGLANG_USE_AITER=yes` with "Allowed: 0, 1" (true, false, no and
n are read too) and suggested '0' for "on"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clirun import run

from solver import load_pack
from solver.errors import InvalidInput, PackError
from solver.inputs.pins import coerce, facts_from_environ

TOY = Path(__file__).parent / "fixtures" / "packs" / "toy"
ROCM = ["--set", "platform=hip", "--set", "gpu_arch=gfx942", "--set", "architecture=LlamaForCausalLM"]


def test_a_word_sglang_does_not_read_names_the_words_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", *ROCM, "--set", "SGLANG_USE_AITER=yes")
    assert code == 2
    assert "SGLANG_USE_AITER='yes' is not read as you may mean: SGLang 0.5.23 reads it with EnvBool" in err, (
        err
    )
    assert "get_bool_env_var (utils/common.py: only true and 1 on)" in err  # (the pack's `unread`)
    assert (
        "Set SGLANG_USE_AITER=0 or SGLANG_USE_AITER=1; the launcher also reads false, no, n as 0; true as 1"
        in err
    )
    assert "Traceback" not in err
    sglang = load_pack("sglang")  # (and those words are taken, in any case)
    assert coerce(sglang.fields["SGLANG_USE_AITER"], "TRUE") == ("1", None)
    assert coerce(sglang.fields["SGLANG_USE_MLX"], "Yes") == ("1", None)
    assert coerce(sglang.fields["SGLANG_ENABLE_JIT_DEEPGEMM"], "N") == ("0", None)


def test_on_is_not_answered_with_its_opposite(capsys: pytest.CaptureFixture[str]) -> None:
    """ "on" is one letter from "no": a did-you-mean offered '0', the opposite of what was meant."""
    code, out, _ = run(capsys, "check", "--json", *ROCM, "--set", "SGLANG_USE_AITER=on")
    assert code == 2
    (issue,) = json.loads(out)["error"]["issues"]
    assert issue["field"] == "SGLANG_USE_AITER" and issue["value"] == "on"  # JSON: the field's name
    assert issue["did_you_mean"] == [] and "did you mean" not in issue["message"]


def test_the_environment_is_refused_the_same_way() -> None:
    """--env-from-os: a value SGLang would not take as written (" 1" is not stripped by SGLang's
    readers) is refused with the same words as --set."""
    sglang = load_pack("sglang")
    with pytest.raises(InvalidInput) as info:
        facts_from_environ(sglang, {"SGLANG_USE_AITER": "on", "SGLANG_USE_MLX": " 1"})
    said = {i.field: i.message for i in info.value.issues}
    assert said["SGLANG_USE_AITER"] == coerce(sglang.fields["SGLANG_USE_AITER"], "on")[1].message  # type: ignore[union-attr]
    assert (
        "SGLANG_USE_MLX=' 1' is not read as you may mean: SGLang 0.5.23 reads it with EnvBool"
        in said["SGLANG_USE_MLX"]
    )


def test_unified_attention_yes_is_refused_as_sglang_reads_it_two_ways() -> None:
    """SGLANG_USE_AITER_UNIFIED_ATTN is read by EnvBool (qwen3_vl.py's override: yes is on) and by
    get_bool_env_var (aiter_backend.py: yes is off), as SGLANG_USE_AITER is: 0.5.23+34 took yes
    and y as 1, an answer for a setting half of SGLang does not run."""
    field = load_pack("sglang").fields["SGLANG_USE_AITER_UNIFIED_ATTN"]
    for word in ("yes", "Y"):
        value, issue = coerce(field, word)
        assert value is None and issue is not None, word
        assert "get_bool_env_var" in issue.message and "aiter backend" in issue.message
    assert coerce(field, "true") == ("1", None)


def _toy_with(tmp_path: Path, field: str) -> Path:
    pack = tmp_path / "toy"
    shutil.copytree(TOY, pack)
    with (pack / "fields.toml").open("a") as out:
        out.write(field)
    return pack


def test_a_pack_says_what_its_launcher_does_with_other_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _toy_with(
        tmp_path,
        '\n[field.TOY_FAST]\nkind = "fact"\nenv = true\ndomain = ["0", "1"]\n'
        'aliases = { true = "1", false = "0" }\n'
        'unread = "the toy launcher warns and runs it off (0)"\n',
    )
    code, _, err = run(capsys, "check", "--pack", str(pack), "--set", "gpu=h100", "--set", "TOY_FAST=on")
    assert code == 2
    assert (
        "TOY_FAST='on' is not read as you may mean: the toy launcher warns and runs it off (0). "
        "Set TOY_FAST=0 or TOY_FAST=1; the launcher also reads false as 0; true as 1, in any case." in err
    ), err


def test_unread_belongs_to_an_environment_variable(tmp_path: Path) -> None:
    pack = _toy_with(tmp_path, '\n[field.slow]\nkind = "fact"\ndomain = ["0", "1"]\nunread = "never"\n')
    with pytest.raises(PackError) as info:
        load_pack(pack)
    assert "only a field with env = true has it" in str(info.value)


def test_a_variable_typed_before_the_launch_command_is_refused_the_same_way(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`SGLANG_USE_AITER=on python -m sglang.launch_server ...`: the words as --set and the
    environment say them (and the spelling SGLang reads, TRUE, is taken)."""
    launch = ["python", "-m", "sglang.launch_server", "--tp", "1"]
    code, _, err = run(capsys, "check", *ROCM, "--", "SGLANG_USE_AITER=on", *launch)
    assert code == 2
    assert "SGLANG_USE_AITER='on' is not read as you may mean: SGLang 0.5.23 reads it with EnvBool" in err, (
        err
    )
    code, _, err = run(capsys, "check", *ROCM, "--", "SGLANG_USE_AITER=TRUE", *launch)
    assert code == 0, err
