"""What the launchers' parsers make of a typed word (round 13's differential against SGLang 0.5.23
and vLLM 0.33.0, benchmarks/argv_read_oracle.py): each case is a command line confsolve read
differently before (refused what the launcher reads, read what it refuses, or read a value the
launcher does not), with what the launcher does (solver/inputs/launchwords.py)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

import constraints
from solver import InvalidInput, PackError, load_pack
from solver.cli.launch import merge_launch
from solver.inputs.launch import read_command
from solver.model import Pack

SGLANG = ["python", "-m", "sglang.launch_server", "--model-path", "m"]
VLLM = ["vllm", "serve", "m"]
API_SERVER = ["python", "-m", "vllm.entrypoints.openai.api_server"]


sglang_pack = pytest.fixture(scope="module", name="sglang")(lambda: load_pack("sglang"))
vllm_pack = pytest.fixture(scope="module", name="vllm")(lambda: load_pack("vllm"))


def _merged(pack: Pack, words: list[str]) -> tuple[str | None, dict[str, str]]:
    sets: dict[str, str] = {}
    model = merge_launch(argparse.Namespace(launch=words), pack, sets, None)
    return model, sets


def _refused(pack: Pack, words: list[str]) -> str:
    with pytest.raises(InvalidInput) as caught:
        _merged(pack, words)
    return str(caught.value)


# --- integers: both parsers convert with int(), which takes `+8`, ` 8`, `0_8` -----------------


@pytest.mark.parametrize("typed", ["+8", " 8", "0_8", "08"])
def test_an_integer_is_read_as_int_reads_it(sglang: Pack, vllm: Pack, typed: str) -> None:
    # was refused: "'+8' is not a value of tp_size; did you mean '8'?" (both launchers read 8)
    assert _merged(sglang, [*SGLANG, "--tp-size", typed])[1] == {"tp_size": "8"}
    assert _merged(vllm, [*VLLM, "-tp", typed])[1] == {"tensor_parallel_size": "8"}


def test_the_packs_auto_after_an_integer_flag_is_refused(sglang: Pack) -> None:
    # SGLang: "argument --page-size: invalid int value: 'auto'" (confsolve read it as unset)
    assert "leave --page-size out" in _refused(sglang, [*SGLANG, "--page-size", "auto"])


def test_a_value_of_an_unmodelled_integer_flag_is_checked(sglang: Pack) -> None:
    # SGLang: "argument --cuda-graph-bs-decode: invalid int value: 'true'" (confsolve passed it)
    text = _refused(sglang, [*SGLANG, "--cuda-graph-bs-decode", "1", "2", "true"])
    assert "--cuda-graph-bs-decode 'true'" in text and "int()" in text
    assert _merged(sglang, [*SGLANG, "--cuda-graph-bs-decode", "1", "+2"])[1] == {}


# --- vLLM's JSON flags: the config class takes its own keys, typed values ----------------------


@pytest.mark.parametrize(
    "words",
    [
        ["--attention-config.flash_attn_ve", "3"],
        ["--attention-config", '{"flash_attn_ve": 3}'],
        ["-cc", '{"mode": 3, "cudagraph_mod": "FULL"}'],
        ["--compilation-config.cudagraph_mod", "FULL"],
    ],
)
def test_a_key_the_config_class_lacks_is_refused(vllm: Pack, words: list[str]) -> None:
    # vLLM: pydantic "unexpected_keyword_argument" (confsolve passed the flag through)
    assert "did you mean" in _refused(vllm, [*VLLM, *words])


def test_a_json_flag_needs_a_json_object(vllm: Pack) -> None:
    assert "is not a JSON object" in _refused(vllm, [*VLLM, "-cc", "3"])


def test_a_modelled_key_behind_an_abbreviated_flag_is_read(vllm: Pack) -> None:
    # vLLM reads `--attention-conf.flash_attn_version 3` as FA3; confsolve passed it through and
    # answered with flash_attn_version unset
    assert _merged(vllm, [*VLLM, "--attention-conf.flash_attn_version", "3"])[1] == {
        "flash_attn_version": "3"
    }


@pytest.mark.parametrize(
    "words, read",
    [
        (["--attention-config.flash_attn_version", "+3"], "3"),  # JSON fails, then int()
        (["--attention-config.flash_attn_version", "3.0"], "3"),  # pydantic: 3.0 is 3
        (["--attention-config", '{"flash_attn_version": 3.0}'], "3"),
        (["-ac", '{"flash_attn_version": 2}', "--attention-config.flash_attn_version", "null"], None),
    ],
)
def test_a_modelled_keys_value_is_read_as_the_config_class_reads_it(
    vllm: Pack, words: list[str], read: str | None
) -> None:
    sets = _merged(vllm, [*VLLM, *words])[1]
    assert sets.get("flash_attn_version") == read


@pytest.mark.parametrize(
    "words",
    [
        ["--attention-config", '{"flash_attn_version": "3"}'],  # a string, no number
        ["--attention-config.flash_attn_version", '"3"'],
        ["--attention-config.flash_attn_version", "auto"],  # was read as unset
        ["--attention-config.flash_attn_version", "true"],
    ],
)
def test_a_modelled_keys_value_the_config_class_refuses_is_refused(vllm: Pack, words: list[str]) -> None:
    assert "config class refuses it" in _refused(vllm, [*VLLM, *words])


# --- the model: given again, moved first, a word never read ---------------------------------


def test_the_api_servers_word_without_a_flag_is_taken_and_never_read(vllm: Pack) -> None:
    # vLLM's api_server parser takes it (make_arg_parser's model_tag) and serves --model's model
    cmd = read_command(vllm, [*API_SERVER, "/models/m", "--model", "/models/x", "-tp", "2"])
    assert cmd.model == "/models/x" and cmd.options == {"tensor_parallel_size": "2"}
    assert "takes and never reads" in cmd.repeated[0]
    assert read_command(vllm, [*API_SERVER, "/models/m"]).model is None
    assert "unrecognized arguments" in _refused(vllm, [*API_SERVER, "a", "b", "--model", "c"])


def test_vllm_serve_keeps_the_first_model_flag(vllm: Pack) -> None:
    # FlexibleArgumentParser moves the first --model to the front; a later one is ignored
    cmd = read_command(vllm, ["vllm", "serve", "--model", "a", "-tp", "2", "--model", "b"])
    assert cmd.model == "a" and cmd.model_flag == "--model" and "serves the first one" in cmd.repeated[0]
    text = _refused(vllm, ["vllm", "serve", "a", "--model", "b"])  # "unrecognized arguments: a"
    assert "moves --model 'b' to be its first word" in text


def test_the_api_server_and_sglang_read_the_last_model(sglang: Pack, vllm: Pack) -> None:
    assert read_command(vllm, [*API_SERVER, "--model", "a", "--model", "b"]).model == "b"
    assert read_command(sglang, ["sglang", "serve", "a", "--model-path", "b"]).model == "b"


# --- the config file: opened only after the exact word, once; vLLM's reader and an empty file ----


def test_a_config_file_is_opened_only_after_the_exact_word(sglang: Pack, vllm: Pack, tmp_path: Path) -> None:
    # both launchers take `--config=FILE` (and SGLang `--conf FILE`) and never open it: confsolve
    # read the file's -tp 2 into its answer
    (tmp_path / "c.yaml").write_text("tp-size: 2\n")
    (tmp_path / "v.yaml").write_text("tensor-parallel-size: 2\n")
    for words in ([*SGLANG, f"--config={tmp_path}/c.yaml"], [*SGLANG, "--conf", f"{tmp_path}/c.yaml"]):
        cmd = read_command(sglang, words)
        assert cmd.config is None and "never opens the file" in cmd.repeated[0]
        assert _merged(sglang, words)[1] == {}
    assert _merged(vllm, [*VLLM, f"--config={tmp_path}/v.yaml"])[1] == {}
    assert _merged(vllm, [*VLLM, "--config", f"{tmp_path}/v.yaml"])[1] == {"tensor_parallel_size": "2"}


def test_a_second_config_file_is_refused(sglang: Pack, tmp_path: Path) -> None:
    # SGLang: "Multiple config files specified! Only one allowed." (vLLM asserts the same)
    (tmp_path / "c.yaml").write_text("tp-size: 2\n")
    path = str(tmp_path / "c.yaml")
    assert "takes one config file" in _refused(sglang, [*SGLANG, "--config", path, "--config", path])


def test_an_empty_config_file(sglang: Pack, vllm: Pack, tmp_path: Path) -> None:
    # vLLM 0.33.0's load_config_file calls .items() on None; SGLang reads no entries
    (tmp_path / "e.yaml").write_text("# nothing yet\n")
    path = str(tmp_path / "e.yaml")
    assert "fails on an empty file" in _refused(vllm, [*VLLM, "--config", path])
    assert _merged(sglang, [*SGLANG, "--config", path]) == ("m", {})


def test_vllm_serve_with_a_config_file_needs_the_model_first(vllm: Pack, tmp_path: Path) -> None:
    # vLLM: "No model specified! Please specify model either as a positional argument or in a
    # config file." (the model later on the line is not looked at)
    (tmp_path / "v.yaml").write_text("tensor-parallel-size: 2\n")
    path = str(tmp_path / "v.yaml")
    assert "'No model specified!'" in _refused(vllm, ["vllm", "serve", "--config", path, "/models/m"])
    assert (
        _merged(vllm, ["vllm", "serve", "-tp", "2", "--model", "/models/m", "--config", path])[0]
        == "/models/m"
    )
    (tmp_path / "w.yaml").write_text("model: /models/w\n")
    assert _merged(vllm, ["vllm", "serve", "--config", str(tmp_path / "w.yaml")])[0] == "/models/w"


# --- the table: a modelled JSON key must be one the config class takes ------------------------


def test_a_modelled_json_key_the_config_class_lacks_is_a_pack_error(tmp_path: Path) -> None:
    root = tmp_path / "vllm"
    shutil.copytree(Path(constraints.__file__).parent / "vllm", root)
    table = root / "launcher_flags.toml"
    text = table.read_text(encoding="utf-8")
    table.write_text(
        text.replace('"flash_attn_version", "flex_attn_block_m"', '"flex_attn_block_m"'), encoding="utf-8"
    )
    with pytest.raises(PackError) as caught:
        load_pack(root)
    messages = [f"{p.where}: {p.message}" for p in caught.value.problems]
    assert any("takes no key 'flash_attn_version'" in m for m in messages), messages


def test_only_a_dotted_keys_last_value_is_checked(vllm: Pack) -> None:
    # vLLM merges the dotted words into one JSON value: an earlier one is replaced unchecked
    # (`--attention-config.flash_attn_version --attention-config.flash_attn_version ...=4` is FA4)
    words = [
        *VLLM,
        "--attention-config.flash_attn_version",
        "x",
        "--attention-config.flash_attn_version",
        "3",
    ]
    assert _merged(vllm, words)[1] == {"flash_attn_version": "3"}
    assert "config class refuses it" in _refused(vllm, [*words, "--attention-config.flash_attn_version", "x"])
    assert _merged(vllm, [*words[:-1], "5", *words[-2:]])[1] == {
        "flash_attn_version": "3"
    }  # 5: no domain check


def test_another_packs_command_says_which_pack(capsys: pytest.CaptureFixture[str]) -> None:
    # a newcomer's `confsolve check -- vllm serve m` (default pack sglang) said only "not a command"
    from clirun import run

    code, _, err = run(capsys, "check", "--", "vllm", "serve", "m", "-tp", "2")
    assert code == 2 and "it is a command of the vllm pack: add --pack vllm" in err
    code, _, err = run(capsys, "check", "--pack", "vllm", "--", "python", "-m", "sglang.launch_server")
    assert code == 2 and "add --pack sglang" in err
