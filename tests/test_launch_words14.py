"""What vLLM 0.33.0's parser makes of a typed word, round 14 (benchmarks/argv_read_oracle.py and
probes against the oracle's vLLM): each case is a command line confsolve read differently before,
with what vLLM does (FlexibleArgumentParser.parse_args, pydantic's config classes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_launch_words import VLLM, _merged, _refused

import constraints
from solver import PackError, load_pack
from solver.model import Pack

vllm_pack = pytest.fixture(scope="module", name="vllm")(lambda: load_pack("vllm"))


# --- `vllm serve --served-model-name ...` needs the model first --------------------------------


@pytest.mark.parametrize(
    "words",
    [
        ["--served-model-name", "a", "b", "/models/m"],  # confsolve read no model (a, b, /models/m named)
        ["--served_model_name", "a", "/models/m"],
        ["--served-model-name=a", "/models/m"],  # confsolve read /models/m
        ["-tp", "2", "/models/m", "--served-model-name", "a"],
        ["--served-model-name", "a", "--", "/models/m"],
        ["-tp", "2", "--served-model-name", "a"],  # no model: vLLM would not serve its default
    ],
)
def test_served_model_name_without_the_model_first_is_refused(vllm: Pack, words: list[str]) -> None:
    # vLLM: "`model` should be provided as the first positional argument when using `vllm serve`"
    text = _refused(vllm, ["vllm", "serve", *words])
    assert "takes the model only as its first word" in text and "vllm serve MODEL" in text


@pytest.mark.parametrize(
    "words, model",
    [
        (["/models/m", "--served-model-name", "a", "b"], "/models/m"),
        (["--port", "8000", "--served-model-name", "a", "--model", "/models/m"], "/models/m"),  # moved first
        (["--served-model-name", "a", "--model=/models/m"], "/models/m"),
        (["--served-model", "a", "/models/m"], None),  # an abbreviation: vLLM's check misses it
    ],
)
def test_served_model_name_with_the_model_first_is_read(
    vllm: Pack, words: list[str], model: str | None
) -> None:
    assert _merged(vllm, ["vllm", "serve", *words])[0] == model


def test_served_model_name_with_a_config_file_is_read(vllm: Pack, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("model: /models/x\n", encoding="utf-8")
    words = ["vllm", "serve", "--served-model-name", "a", "--config", str(config)]
    assert _merged(vllm, words)[0] == "/models/x"
    # the API server has no such check
    api = ["python", "-m", "vllm.entrypoints.openai.api_server", "--served-model-name", "a", "--model", "m"]
    assert _merged(vllm, api)[0] == "m"


# --- keys of a config class held under a key: pydantic refuses others there too ---------------


@pytest.mark.parametrize(
    "words, says",
    [
        (["--compilation-config", '{"pass_config": {"not_a_key": true}}'], "'pass_config.not_a_key'"),
        (["-cc", '{"dynamic_shapes_config": {"typ": "backed"}}'], "did you mean type?"),
        (["--compilation-config.pass_config.fuse_allreduce_rm", "true"], "did you mean fuse_allreduce_rms"),
        (["--attention-config.hisparse_config.nope", "1"], "'hisparse_config.nope'"),
        (["--kernel-config.ir_op_priority.nope", "a"], "'ir_op_priority.nope'"),
        (["--compilation-config", '{"pass_config": 5}'], "pass_config takes a JSON object"),
        (["--compilation-config", '{"pass_config": null}'], "pass_config takes a JSON object"),
        (["--compilation-config.pass_config", "5"], "pass_config takes a JSON object"),
    ],
)
def test_a_nested_key_the_config_class_lacks_is_refused(vllm: Pack, words: list[str], says: str) -> None:
    # vLLM: pydantic "unexpected_keyword_argument" / "dataclass_type" (confsolve passed them through)
    text = _refused(vllm, [*VLLM, *words])
    assert says in text and "config class refuses" in text


@pytest.mark.parametrize(
    "words",
    [
        ["--compilation-config", '{"pass_config": {"fuse_allreduce_rms": true}}'],
        ["--compilation-config.pass_config.fuse_allreduce_rms", "true"],
        ["--compilation-config", '{"pass_config": {}}'],
        ["--compilation-config", '{"inductor_compile_config": {"anything": 1}}'],  # a dict: any key
        ["--compilation-config.inductor_compile_config.anything", "1"],
    ],
)
def test_a_nested_key_the_config_class_takes_is_passed_through(vllm: Pack, words: list[str]) -> None:
    assert _merged(vllm, [*VLLM, *words]) == ("m", {})


# --- `--flag.key+ a,b`: vLLM sets the key to the list [a, b] ----------------------------------


@pytest.mark.parametrize(
    "words",
    [
        ["--compilation-config.cudagraph_capture_sizes+", "1,2,4"],  # was "takes no key 'cudagraph_...+'"
        ["--compilation-config.custom_ops+=none"],
    ],
)
def test_a_dotted_list_is_read(vllm: Pack, words: list[str]) -> None:
    assert _merged(vllm, [*VLLM, *words]) == ("m", {})


@pytest.mark.parametrize(
    "words",
    [
        ["--attention-config.flash_attn_version+", "3"],  # a list: pydantic's literal_error
        ["-ac.flash_attn_version+", "3"],
        ["--attention_config.flash_attn_version+=3"],
    ],
)
def test_a_modelled_key_given_a_list_is_refused(vllm: Pack, words: list[str]) -> None:
    text = _refused(vllm, [*VLLM, *words])
    assert '["3"] is not a JSON number' in text and "a `+` after the key" in text


def test_a_list_or_an_unknown_key_behind_a_plus(vllm: Pack) -> None:
    assert "did you mean mode?" not in _refused(vllm, [*VLLM, "--compilation-config.nope+", "1"])
    assert "pass_config takes a JSON object" in _refused(
        vllm, [*VLLM, "--compilation-config.pass_config+", "a"]
    )


def test_a_key_under_a_modelled_key_is_refused(vllm: Pack) -> None:
    # vLLM: `{"flash_attn_version": {"x": 2}}` is no number (confsolve passed the word through)
    text = _refused(vllm, [*VLLM, "--attention-config.flash_attn_version.x", "2"])
    assert "takes one value, not keys" in text


# --- vLLM's `--disable-x` (EnableDisableAction) sets `--enable-x` false ------------------------


@pytest.mark.parametrize(
    "words, read",
    [
        (["--enable-expert-parallel", "--disable-expert-parallel"], False),  # confsolve read True
        (["--disable-expert-parallel", "--enable-expert-parallel"], True),
        (["--disable-expert"], False),  # a unique prefix
        (["--disable_dbo"], False),
    ],
)
def test_a_disable_flag_turns_its_enable_flag_off(vllm: Pack, words: list[str], read: bool) -> None:
    field = "enable_dbo" if "dbo" in words[0] else "enable_expert_parallel"
    assert _merged(vllm, [*VLLM, *words])[1] == {field: str(read).lower()}


# --- dotted words: one JSON value per flag as spelled, the later replacing the earlier ---------


@pytest.mark.parametrize(
    "words, read",
    [
        # vLLM: `-ac.backend` is a JSON value of its own, given after `--attention-config`'s: it
        # replaces it whole (confsolve read FA2 from the first)
        (["--attention-config.flash_attn_version", "2", "-ac.backend", "FLASH_ATTN"], None),
        (["--attention-config.flash_attn_version", "2", "--attention-conf.backend", "FLASH_ATTN"], None),
        (["-ac.backend", "FLASH_ATTN", "--attention-config.flash_attn_version", "2"], "2"),
        (["--attention_config.flash_attn_version", "2", "--attention-config.backend", "FLASH_ATTN"], "2"),
        (["--attention-config.flash_attn_version", "2", "-ac.flash_attn_version", "3"], "3"),
        (["-ac.flash_attn_version", "3", "--attention-config.flash_attn_version", "2"], "2"),
        (["--attention-config.flash_attn_version", "2", "-ac", '{"backend": "FLASH_ATTN"}'], "2"),
    ],
)
def test_dotted_words_make_one_json_value_per_spelling(
    vllm: Pack, words: list[str], read: str | None
) -> None:
    assert _merged(vllm, [*VLLM, *words])[1].get("flash_attn_version") == read


def test_a_replaced_json_value_is_still_converted(vllm: Pack) -> None:
    # vLLM converts each JSON value argparse is given: `-ac.flash_attn_version x` is refused though
    # the later `--attention-config` value replaces it (within one spelling, only the last counts)
    words = ["-ac.flash_attn_version", "x", "--attention-config.backend", "FLASH_ATTN"]
    assert "config class refuses it" in _refused(vllm, [*VLLM, *words])
    words = ["-ac.flash_attn_version", "x", "-ac.flash_attn_version", "3", "--attention-config.backend"]
    assert _merged(vllm, [*VLLM, *words, "TRITON_ATTN"])[1] == {}


@pytest.mark.parametrize(
    "typed, written",
    [
        # the key joins the dotted value vLLM keeps: main wrote `--attention-config.flash_attn_version
        # 3` after `-ac.backend FLASH_ATTN`, a later value of its own that drops the backend
        (["-ac.backend", "FLASH_ATTN"], ["-ac.backend", "FLASH_ATTN", "-ac.flash_attn_version", "3"]),
        (
            ["--attention_config.backend", "X"],
            ["--attention_config.backend", "X", "--attention_config.flash_attn_version", "3"],
        ),
        # typed as a dotted word, its value was the flag's last: it stays last, as typed
        (
            ["--attention-config.backend", "X", "-ac.flash_attn_version", "2"],
            ["--attention-config.backend", "X", "-ac.flash_attn_version", "3"],
        ),
        (["-ac", '{"backend": "X"}'], ["-ac", '{"backend": "X", "flash_attn_version": 3}']),
    ],
)
def test_a_key_is_written_into_the_value_vllm_keeps(vllm: Pack, typed: list[str], written: list[str]) -> None:
    from solver.inputs.launch import read_command, write_command

    command = read_command(vllm, [*VLLM, *typed])
    assert write_command(vllm, command, {**command.options, "flash_attn_version": 3}) == [*VLLM, *written]


# --- the table -------------------------------------------------------------------------------


def _table_problems(tmp_path: Path, old: str, new: str) -> list[str]:
    """The load problems of the vLLM pack with its launcher_flags.toml edited `old` -> `new`."""
    root = tmp_path / "vllm"
    shutil.copytree(Path(constraints.__file__).parent / "vllm", root)
    (root / "prebuilt.py").unlink()
    table = root / "launcher_flags.toml"
    text = table.read_text(encoding="utf-8")
    assert old in text
    table.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(PackError) as caught:
        load_pack(root)
    return [p.message for p in caught.value.problems]


def test_a_nested_key_table_needs_its_parent_key(tmp_path: Path) -> None:
    old = '"--compilation-config.pass_config" ='
    messages = _table_problems(tmp_path, old, '"--compilation-config.pass_conf" =')
    assert any("--compilation-config has no key 'pass_conf'" in m for m in messages), messages


def test_a_negative_must_name_a_switch(tmp_path: Path) -> None:
    messages = _table_problems(tmp_path, '"--disable-dbo" = "--enable-dbo"', '"--disable-dbo" = "--port"')
    assert any("both must be switches" in m for m in messages), messages
