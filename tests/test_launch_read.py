"""A typed launch command is read as the launcher's own parser reads it (round 12's differential,
benchmarks/argv_read_oracle.py): each case here is a command line SGLang 0.5.23 or vLLM 0.33.0
read differently from confsolve before, with what the launcher does."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import constraints
from solver import InvalidInput, PackError, load_pack
from solver.cli.launch import merge_launch
from solver.inputs.launch import read_command, shell_line, write_command
from solver.model import Pack

ROOT = Path(__file__).resolve().parent.parent
SGLANG = ["python", "-m", "sglang.launch_server", "--model-path", "m"]
VLLM = ["vllm", "serve", "m"]


@pytest.fixture(scope="module")
def sglang() -> Pack:
    return load_pack("sglang")


@pytest.fixture(scope="module")
def vllm() -> Pack:
    return load_pack("vllm")


def _merged(pack: Pack, words: list[str]) -> dict[str, str]:
    sets: dict[str, str] = {}
    merge_launch(argparse.Namespace(launch=words), pack, sets, None)
    return sets


# --- an option typed twice: argparse keeps the last, and says nothing -------------------------


def test_an_option_typed_twice_reads_the_last_one_and_says_so(sglang: Pack) -> None:
    cmd = read_command(sglang, [*SGLANG, "--tp", "2", "--tp-size", "4"])
    assert cmd.options == {"tp_size": "4"}
    assert cmd.repeated == ("--tp 2 is given again as --tp-size 4: sglang 0.5.23 reads the last one",)


def test_the_note_on_a_repeated_option_is_on_stderr(sglang: Pack, capsys: pytest.CaptureFixture[str]) -> None:
    assert _merged(sglang, [*VLLM[:0], *SGLANG, "--dp", "2", "--dp", "4"])["dp_size"] == "4"
    assert "--dp 2 is given again as --dp 4" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--attention-backend", "trtllm_mla"]])
def test_check_json_carries_the_launch_notes_text_check_says(
    capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    """`check` says on stderr what reading the command set aside; `check --json` had it only
    there, not in the document a script reads: now `launch_notes`, resolved or conflict."""
    import json

    import jsonschema
    from clirun import run

    from solver.render.schema import output_schema

    facts = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]
    words = ["python", "-m", "sglang.launch_server", "--tp", "2", "--tp-size", "4", *extra]
    note = "--tp 2 is given again as --tp-size 4: sglang 0.5.23 reads the last one"
    code, out, err = run(capsys, "check", "--pack", "sglang", *facts, "--", *words)
    assert code == (1 if extra else 0) and note in err
    code, out, err = run(capsys, "check", "--json", "--pack", "sglang", *facts, "--", *words)
    doc = json.loads(out)
    assert doc["status"] == ("conflict" if extra else "resolved") and doc["launch_notes"] == [note]
    jsonschema.validate(doc, output_schema(doc["status"]))
    assert not jsonschema.Draft202012Validator(output_schema(doc["status"])).is_valid(
        {**doc, "launch_notes": [1]}
    )
    # Nothing set aside: no key.
    code, out, _ = run(capsys, "check", "--json", "--pack", "sglang", *facts, "--", *words[:3], "--tp", "4")
    assert "launch_notes" not in json.loads(out)


def test_a_replaced_value_is_still_read_by_the_parser(vllm: Pack) -> None:
    # vLLM's argparse converts every -tp value, the one a later -tp replaces too
    with pytest.raises(InvalidInput, match="replaced by a later value"):
        _merged(vllm, [*VLLM, "-tp", "two", "-tp", "2"])
    with pytest.raises(InvalidInput, match="replaced by a later value"):  # an integer, not the pack's
        _merged(vllm, [*VLLM, "-pp", "5", "-pp", "2"])


# --- words the launcher's parser refuses: confsolve's `none` / `auto` are not its choices ----


@pytest.mark.parametrize(
    "flag, value",
    [("--quantization", "none"), ("--dsa-decode-backend", "none"), ("--decode-attention-backend", "auto")],
)
def test_a_word_the_launchers_parser_refuses_is_refused(sglang: Pack, flag: str, value: str) -> None:
    # SGLang 0.5.23: "argument --quantization: invalid choice: 'none' (choose from 'awq', ...)"
    with pytest.raises(
        InvalidInput, match=f"{flag} '{value}' is not a choice of sglang 0.5.23's parser"
    ) as caught:
        read_command(sglang, [*SGLANG, flag, value])
    assert f"(leave {flag} out: that is how the launcher is given {value})" in str(caught.value)


def test_a_choice_is_checked_on_flags_the_pack_does_not_model(sglang: Pack) -> None:
    with pytest.raises(InvalidInput, match="not a choice") as caught:
        read_command(sglang, [*SGLANG, "--grammar-backend", "xgramar"])
    assert caught.value.issues[0].did_you_mean == ("xgrammar",)
    assert (
        read_command(sglang, [*SGLANG, "--grammar-backend=outlines"]).passthrough[-1]
        == "--grammar-backend=outlines"
    )


# --- vLLM's JSON flags: a key the pack models, read from the JSON too --------------------------


@pytest.mark.parametrize("flag", ["--attention-config", "-ac", "--attention-conf"])
def test_a_modelled_key_is_read_from_the_json_value(vllm: Pack, flag: str) -> None:
    cmd = read_command(vllm, [*VLLM, flag, '{"flash_attn_version": 2, "flex_attn_block_m": 1}'])
    assert cmd.options == {"flash_attn_version": "2"}


def test_a_dotted_word_replaces_the_json_value_whole(vllm: Pack) -> None:
    # (a guard on the reading above: fails when a dotted word does not drop what the JSON said)
    # vLLM gathers `--attention-config.KEY V` into one JSON value given last: the JSON typed is gone
    words = [
        *VLLM,
        "--attention-config",
        '{"flash_attn_version": 2}',
        "--attention-config.flex_attn_block_m",
        "1",
    ]
    assert read_command(vllm, words).options == {}


def test_a_key_is_written_into_the_json_value_typed(vllm: Pack) -> None:
    cmd = read_command(
        vllm, [*VLLM, "--attention-config", '{"flash_attn_version": 2, "flex_attn_block_m": 1}']
    )
    line = shell_line(write_command(vllm, cmd, {"flash_attn_version": 3}))
    assert line == """vllm serve m --attention-config '{"flash_attn_version": 3, "flex_attn_block_m": 1}'"""


def test_dotted_words_are_read_after_the_others(vllm: Pack) -> None:
    # so the words on either side meet: 4 is one more --cudagraph-capture-sizes value
    words = [*VLLM, "--cudagraph-capture-sizes", "1", "2", "--attention-config.flash_attn_version", "3", "4"]
    cmd = read_command(vllm, words)
    assert cmd.options == {"flash_attn_version": "3"}
    assert cmd.passthrough == ("--cudagraph-capture-sizes", "1", "2", "4")


# --- the model without a flag, and config files ------------------------------------------------


def test_sglang_serve_reads_a_model_without_a_flag_only_first(sglang: Pack, vllm: Pack) -> None:
    with pytest.raises(InvalidInput, match="only as the first word after `sglang serve`"):
        read_command(sglang, ["sglang", "serve", "--tp", "2", "/models/m"])
    assert read_command(vllm, ["vllm", "serve", "-tp", "2", "/models/m"]).model == "/models/m"


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_config_key_with_underscores_sets_a_vllm_bare_flag(vllm: Pack, tmp_path: Path) -> None:
    # vLLM's load_config_file writes `--enable_expert_parallel`, which its parser reads as the flag
    sets = _merged(vllm, [*VLLM, "--config", _config(tmp_path, "enable_expert_parallel: true\n")])
    assert sets == {"enable_expert_parallel": "true"}


def test_a_false_config_key_with_underscores_is_left_out(sglang: Pack, tmp_path: Path) -> None:
    # SGLang's ConfigArgumentMerger skips a store_true key set to false, however it is spelled
    path = _config(tmp_path, "enable_deterministic_inference: false\ntp-size: 2\n")
    assert _merged(sglang, [*SGLANG, "--config", path]) == {"tp_size": "2"}


def test_an_empty_list_in_a_config_file_writes_no_flag(vllm: Pack, tmp_path: Path) -> None:
    # both launchers' config readers write nothing for an empty list (it took the next flag as its value)
    path = _config(tmp_path, "tensor-parallel-size: []\ndata-parallel-size: 2\n")
    assert _merged(vllm, [*VLLM, "--config", path]) == {"data_parallel_size": "2"}


# --- the differential itself, against the launchers' parsers (-m long) -------------------------


@pytest.mark.long
@pytest.mark.parametrize(
    "launcher, python",
    [
        ("sglang", Path(os.environ.get("ORACLE_VENV", "/work/oracle-sglang")) / "bin" / "python"),
        ("vllm", Path(os.environ.get("ORACLE_VLLM_PYTHON", "/work/oracle-vllm/venv/bin/python"))),
    ],
)
def test_typed_command_lines_read_as_the_launcher_reads_them(launcher: str, python: Path) -> None:
    """No option read differently, and no disagreement the benchmark does not list with its reason."""
    if not python.exists():
        pytest.skip(f"no {launcher} oracle python at {python}")
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "argv_read_oracle.py"),
            "--launcher",
            launcher,
            "--count",
            "200",
            "--seed",
            "12",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_malformed_choices_table_is_a_pack_problem(tmp_path: Path) -> None:
    root = tmp_path / "sglang"
    shutil.copytree(constraints.pack_directory("sglang"), root)  # type: ignore[arg-type]
    table = root / "launcher_flags.toml"
    text = table.read_text(encoding="utf-8")
    text = text.replace(
        '"--dtype" = [', '"--enable-metrics" = ["x"]\n"--no-such-flag" = ["x"]\n"--dtype" = ['
    )
    table.write_text(
        text.replace('"--kv-canary" = ["none", "log", "raise"]', '"--kv-canary" = []'), encoding="utf-8"
    )
    with pytest.raises(PackError) as caught:
        load_pack(root)
    messages = [f"{p.where}: {p.message}" for p in caught.value.problems]
    assert "launcher_flags.choices: --enable-metrics is not a value flag of the table" in messages
    assert "launcher_flags.choices: --no-such-flag is not a value flag of the table" in messages
    assert "launcher_flags.choices: --kv-canary: must be a non-empty list of words" in messages


def test_words_after_a_double_dash_are_positionals_as_argparse_reads_them(sglang: Pack, vllm: Pack) -> None:
    # SGLang: "unrecognized arguments: -- --tp 2" (they were passed through, the command accepted)
    with pytest.raises(InvalidInput, match="'--tp' comes after `--`"):
        read_command(sglang, [*SGLANG, "--", "--tp", "2"])
    assert read_command(vllm, ["vllm", "serve", "--", "m"]).model == "m"  # vLLM's model positional


def test_a_repair_that_unsets_a_key_takes_it_out_of_the_json_value(vllm: Pack) -> None:
    # the JSON typed kept "flash_attn_version": 2, so the repaired command still set it
    from solver.inputs.launch import repaired_command
    from solver.model import Repair

    cmd = read_command(vllm, [*VLLM, "-ac", '{"flash_attn_version": 2, "flex_attn_block_m": 1}', "-tp", "2"])
    line = shell_line(repaired_command(vllm, cmd, Repair(unset=["flash_attn_version"])))
    assert line == """vllm serve m -ac '{"flex_attn_block_m": 1}' --tensor-parallel-size 2"""
