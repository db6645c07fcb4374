"""Launch commands in and out: aliases, pass-through, quoting, open integers, round trips."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from clirun import run
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import InvalidInput, Pack, PackError, Unsatisfiable, load_pack
from solver.inputs.launch import flag_words, read_command, shell_line, write_command
from solver.launcher import add_arguments, to_argv
from solver.reasoning.diagnose import valid_choices
from solver.reasoning.resolution import resolve

FACTS = {"platform": "cuda", "gpu_arch": "sm100", "architecture": "LlamaForCausalLM"}
SGLANG = ["python", "-m", "sglang.launch_server"]


@pytest.fixture(scope="module")
def pack() -> Pack:
    return load_pack("sglang")


@pytest.fixture
def model(tmp_path: Path) -> str:
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"})
    )
    return str(tmp_path)


# --- reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "words",
    [
        ["--tp", "8"],
        ["--tp-size", "8"],
        ["--tensor-parallel-size", "8"],
        ["--tp-size=8"],
        ["--tp=8"],
    ],
)
def test_every_alias_of_a_flag_sets_the_same_field(pack: Pack, words: list[str]) -> None:
    cmd = read_command(pack, [*SGLANG, *words])
    assert cmd.options == {"tp_size": "8"}
    assert cmd.passthrough == ()


@pytest.mark.parametrize(
    "program",
    [
        SGLANG,
        ["python3", "-m", "sglang.launch_server"],
        ["/usr/bin/python3", "-m", "sglang.launch_server"],
        ["sglang", "serve"],
        [],
    ],
)
def test_commands_the_pack_lists_and_flags_alone(pack: Pack, program: list[str]) -> None:
    cmd = read_command(pack, [*program, "--model-path", "m", "--ep", "2", "--dp", "2"])
    assert cmd.program == tuple(program)
    assert cmd.model == "m" and not cmd.model_positional
    assert cmd.options == {"ep_size": "2", "dp_size": "2"}


def test_sglang_serve_takes_the_model_as_its_first_word(pack: Pack) -> None:
    cmd = read_command(pack, ["sglang", "serve", "org/model", "--tp", "2"])
    assert (cmd.model, cmd.model_positional, cmd.options) == ("org/model", True, {"tp_size": "2"})
    assert write_command(pack, cmd, {"tp_size": 2}) == ["sglang", "serve", "org/model", "--tp-size", "2"]


def test_unmodelled_flags_pass_through_with_their_values_in_order(pack: Pack) -> None:
    cmd = read_command(
        pack,
        [
            *SGLANG,
            "--host",
            "0.0.0.0",
            "--enable-metrics",
            "--tp",
            "2",
            "--random-seed",
            "-1",
            "--port=8000",
            "--mem-fraction-static",
            "0.85",
        ],
    )
    assert cmd.passthrough == (
        "--host",
        "0.0.0.0",
        "--enable-metrics",
        "--random-seed",
        "-1",
        "--port=8000",
        "--mem-fraction-static",
        "0.85",
    )
    assert cmd.options == {"tp_size": "2"}


def test_store_true_flags_are_bare(pack: Pack) -> None:
    cmd = read_command(pack, [*SGLANG, "--enable-dp-attention", "--dp", "2"])
    assert cmd.options == {"enable_dp_attention": True, "dp_size": "2"}
    with pytest.raises(InvalidInput, match="takes no value"):
        read_command(pack, [*SGLANG, "--enable-dp-attention=true"])


@pytest.mark.parametrize(
    "words, needle",
    [
        (["vllm", "serve", "m"], "not a command"),
        ([*SGLANG, "--tp"], "needs a value"),
    ],
)
def test_malformed_launch_commands_are_input_errors(pack: Pack, words: list[str], needle: str) -> None:
    with pytest.raises(InvalidInput, match=needle):
        read_command(pack, words)


def test_a_model_given_again_is_read_as_sglang_reads_it(pack: Pack) -> None:
    # argparse keeps the last (`sglang serve a` is `--model-path a` in front): was refused
    cmd = read_command(pack, [*SGLANG, "--model-path", "a", "--model", "b"])
    assert cmd.model == "b" and cmd.repeated == (
        "the model 'a' is given again as --model 'b': sglang 0.5.23 reads the last one",
    )
    assert read_command(pack, ["sglang", "serve", "a", "--model-path", "b"]).model == "b"


# --- open integer fields ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"tp_size": 6},
        {"page_size": 8},
        {"dp_size": 3, "tp_size": 6, "enable_dp_attention": True},
        {"tp_size": 12, "ep_size": 3},
    ],
)
def test_legal_unlisted_sizes_resolve_and_keep_their_value(pack: Pack, options: dict[str, object]) -> None:
    res = resolve(pack, options, FACTS, reasons=False)
    assert {n: res.values[n] for n in options} == options
    assert res.provenance[next(iter(options))].kind == "user"


def test_divisibility_still_applies_to_unlisted_sizes(pack: Pack) -> None:
    with pytest.raises(Unsatisfiable) as caught:
        resolve(pack, {"tp_size": 6, "ep_size": 4}, FACTS)
    assert [r.id for r in caught.value.conflict.rules] == ["par-ep-divides-tp"]
    with pytest.raises(Unsatisfiable):
        resolve(pack, {"tp_size": 6, "dp_size": 4, "enable_dp_attention": True}, FACTS)


@pytest.mark.parametrize("value", [0, -2, "six"])
def test_values_outside_the_open_range_are_input_errors(pack: Pack, value: object) -> None:
    with pytest.raises(InvalidInput, match="any integer >= 1"):
        resolve(pack, {"tp_size": value}, FACTS)


def test_choices_report_the_open_range_beside_the_listed_values(pack: Pack) -> None:
    choices = valid_choices(pack, {"tp_size": 6}, FACTS, fields=["ep_size", "tp_size"], reasons=False)
    assert choices.possible["ep_size"][:2] == [1, 2] and 4 not in choices.possible["ep_size"]
    assert 6 in choices.possible["tp_size"]
    doc = choices.to_json()["choices"]
    assert doc["ep_size"]["open"] == "any integer >= 1"


# --- writing ---------------------------------------------------------------------------------


def test_quoting_survives_a_shell(pack: Pack) -> None:
    words = [*SGLANG, "--model-path", "/models/my model", "--chat-template", "{{ 'a' }}; rm -rf", "--tp", "2"]
    cmd = read_command(pack, words)
    line = shell_line(write_command(pack, cmd, {"tp_size": 2}))
    assert shlex.split(line) == [
        *SGLANG,
        "--model-path",
        "/models/my model",
        "--chat-template",
        "{{ 'a' }}; rm -rf",
        "--tp-size",
        "2",
    ]


@pytest.mark.parametrize(
    "typed",
    [
        [*SGLANG, "--model-path", "m", "--tp", "8", "--host", "0.0.0.0", "--mem-fraction-static", "0.85"],
        [
            "sglang",
            "serve",
            "m",
            "--tp",
            "6",
            "--page-size",
            "8",
            "--dp",
            "3",
            "--enable-dp-attention",
            "--attention-backend",
            "flashinfer",
            "--log-level",
            "debug",
        ],
        ["--ep", "2", "--tp", "4", "--quantization", "fp8", "--enable-metrics"],
    ],
)
def test_round_trip_argv_request_argv(pack: Pack, typed: list[str]) -> None:
    """argv -> request -> resolution -> argv; reading the output back gives the same request
    with every option decided, the same other words, and the same resolution."""
    cmd = read_command(pack, typed)
    res = resolve(pack, cmd.options, FACTS, reasons=False)
    out = write_command(pack, cmd, res.values, fields=pack.options)
    again = read_command(pack, out)
    assert again.passthrough == cmd.passthrough and again.model == cmd.model
    for name, value in cmd.options.items():
        assert str(again.options[name]).lower() == str(value).lower()
    res2 = resolve(pack, again.options, FACTS, reasons=False)
    assert res2.values == res.values
    assert write_command(pack, again, res2.values, fields=pack.options) == out


def test_minimal_argv_makes_the_launcher_land_on_the_same_configuration(pack: Pack) -> None:
    res = resolve(pack, {"tp_size": 8, "attention_backend": "flashinfer"}, FACTS, reasons=False)
    minimal = to_argv(res, pack, minimal=True)
    assert "--tp-size" in minimal and "--attention-backend" in minimal
    assert "--dtype" not in minimal  # SGLang's own default
    cmd = read_command(pack, minimal)
    assert resolve(pack, cmd.options, FACTS, reasons=False).values == res.values


def test_minimal_argv_leaves_out_what_the_launcher_derives_from_another_typed_option(pack: Pack) -> None:
    """Typing `--speculative-algorithm EAGLE` makes SGLang cap the running requests at 48 by itself
    (a preference, mrr-speculative-default): both differ from a bare launch, but only the first is
    written."""
    res = resolve(pack, {"speculative_algorithm": "EAGLE"}, FACTS, reasons=False)
    assert res.values["max_running_requests"] == 48
    minimal = to_argv(res, pack, minimal=True)
    assert "--speculative-algorithm" in minimal and "--max-running-requests" not in minimal
    assert resolve(pack, read_command(pack, minimal).options, FACTS, reasons=False).values == res.values


# --- the launcher's parser and --set -----------------------------------------------------------


def test_add_arguments_adds_aliases_and_open_values(pack: Pack) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, pack)
    ns = parser.parse_args(["--tp", "6", "--ep", "3", "--page-size", "8"])
    assert (ns.tp_size, ns.ep_size, ns.page_size) == (6, 3, 8)


def test_set_accepts_launcher_aliases(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "resolve",
        "--json",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm100",
        "--set",
        "architecture=LlamaForCausalLM",
        "--set",
        "tp=6",
        "--set=--expert-parallel-size=3",
    )
    assert code == 0
    values = json.loads(out)["values"]
    assert (values["tp_size"], values["ep_size"]) == (6, 3)


# --- the command line --------------------------------------------------------------------------


def test_the_issue_example_checks_and_prints_a_command(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    typed = [
        *SGLANG,
        "--model-path",
        model,
        "--tp",
        "8",
        "--host",
        "0.0.0.0",
        "--mem-fraction-static",
        "0.85",
    ]
    facts = ["--set", "platform=cuda", "--set", "gpu_arch=sm100"]
    code, out, _ = run(capsys, "check", *facts, "--", *typed)
    assert (code, out.startswith("ok")) == (0, True)
    code, out, _ = run(capsys, "resolve", "--format", "argv", *facts, "--", *typed)
    assert code == 0
    words = shlex.split(out)
    assert words[:5] == [*SGLANG, "--model-path", model]
    assert words[5:9] == ["--host", "0.0.0.0", "--mem-fraction-static", "0.85"]
    assert "--tp-size" in words and words[words.index("--tp-size") + 1] == "8"
    code, minimal, _ = run(capsys, "resolve", "--format", "argv", "--minimal", *facts, "--", *typed)
    assert code == 0 and set(shlex.split(minimal)) <= set(words)


def test_launch_flags_and_set_must_agree(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", "--set", "tp=4", "--set", "platform=cuda", "--", "--tp", "8")
    assert code == 2 and "disagree" in err


def test_a_model_that_is_not_here_is_an_error_naming_where_it_looked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--model-path is read like --model-config: a hub id that is not in the local cache is an
    error (exit 2) that names the cache it searched, never a guess at the model's facts (a
    guessed architecture gave an MHA kernel for DeepSeek-V3, issue #13)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    code, _, err = run(
        capsys,
        "check",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm90",
        "--",
        *SGLANG,
        "--model-path",
        "no-such-org/no-such-model",
        "--tp",
        "2",
    )
    assert code == 2 and "no-such-org/no-such-model" in err and str(tmp_path / "hub") in err


def test_a_hub_id_in_the_local_cache_is_read_from_the_launch_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's own example: DeepSeek-V3 by hub id on SM100 gets the MLA kernel SGLang picks,
    because its config.json is read from the cache's snapshot."""
    repo = tmp_path / "hub" / "models--deepseek-ai--DeepSeek-V3"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    fixture = Path(__file__).parent / "fixtures" / "models" / "deepseek-v3-fp8" / "config.json"
    (repo / "snapshots" / "abc123" / "config.json").write_text(fixture.read_text())
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    code, out, _ = run(
        capsys,
        "resolve",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm100",
        "--format",
        "argv",
        "--",
        *SGLANG,
        "--model-path",
        "deepseek-ai/DeepSeek-V3",
        "--tp",
        "8",
    )
    assert code == 0
    assert "--attention-backend trtllm_mla" in out and "--quantization fp8" in out


# --- pack validation ---------------------------------------------------------------------------


def _pack(tmp_path: Path, launcher: str, fields: str) -> Path:
    (tmp_path / "pack.toml").write_text(
        f'[pack]\nname = "t"\nversion = "1"\nfiles = ["f.toml"]\n{launcher}\n'
    )
    (tmp_path / "f.toml").write_text(fields)
    return tmp_path


@pytest.mark.parametrize(
    "launcher, fields, needle",
    [
        (
            "",
            '[field.a]\nkind = "option"\ndomain = [1]\nflags = ["--x"]\n'
            '[field.b]\nkind = "option"\ndomain = [1]\nflags = ["--x"]\n',
            "also spells",
        ),
        ("", '[field.a]\nkind = "option"\ndomain = [1, 2]\nflag_value = "store_true"\n', "needs a boolean"),
        ("", '[field.a]\nkind = "option"\ndomain = ["x"]\nopen = { min = 1 }\n', "needs an integer"),
        ("", '[field.a]\nkind = "option"\ndomain = [0, 1]\nopen = { min = 1 }\n', "open range"),
        ("", '[field.a]\nkind = "option"\ndomain = [1]\nflags = ["tp"]\n', "not a flag"),
        (
            '[pack.launcher]\ncommands = ["serve"]\nmodel_flags = ["--a"]\n',
            '[field.a]\nkind = "option"\ndomain = [1]\n',
            "also spells",
        ),
        (
            '[pack.launcher]\ncommands = ["serve"]\npositional_model = ["run"]\n',
            '[field.a]\nkind = "option"\ndomain = [1]\n',
            "not in commands",
        ),
        ('[pack.launcher]\ncommand = ["serve"]\n', '[field.a]\nkind = "option"\ndomain = [1]\n', "command"),
    ],
)
def test_flag_and_launcher_tables_are_validated(
    tmp_path: Path, launcher: str, fields: str, needle: str
) -> None:
    with pytest.raises(PackError, match=needle):
        load_pack(_pack(tmp_path, launcher, fields))


# --- repairs in the syntax of the request ------------------------------------------------------

CONFLICT = ["--tp", "6", "--ep", "4", "--host", "0.0.0.0"]


def _repair_lines(text: str) -> list[str]:
    tail = text.split("What you can change", 1)[1].splitlines()[1:]
    return [line.strip() for line in tail if line.startswith("     ")]


def test_a_conflict_typed_as_a_launch_command_gets_launch_commands(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    code, _, err = run(
        capsys,
        "resolve",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm100",
        "--",
        *SGLANG,
        "--model-path",
        model,
        *CONFLICT,
    )
    assert code == 1
    lines = _repair_lines(err)
    assert lines and all(shlex.split(line)[:3] == SGLANG for line in lines)
    for line in lines:
        words = shlex.split(line)
        assert words[3:7] == ["--model-path", model, "--host", "0.0.0.0"]
        cmd = read_command(load_pack("sglang"), words)
        assert resolve(load_pack("sglang"), cmd.options, FACTS, reasons=False)  # each one works
    code, out, _ = run(
        capsys, "check", "--set", "platform=cuda", "--set", "gpu_arch=sm100", "--", *SGLANG, *CONFLICT
    )
    assert code == 1 and "Try: `python -m sglang.launch_server --host 0.0.0.0 " in out


def test_confsolve_repairs_keep_the_other_inputs_as_typed(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    code, _, err = run(
        capsys,
        "resolve",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm100",
        "--model-config",
        model,
        "--assume",
        "has_flashinfer=true",
        "--set",
        "tp=6",
        "--set",
        "ep_size=4",
    )
    assert code == 1
    lines = _repair_lines(err)
    assert lines
    for line in lines:
        words = shlex.split(line)
        assert words[:2] == ["confsolve", "resolve"]
        assert words[words.index("--model-config") + 1] == model
        assert "has_flashinfer=true" in words and "architecture=LlamaForCausalLM" not in words
    # --tp-size is not searched (#13): never "leave it on auto" (SGLang's own 1 fails with
    # --ep-size 4); a repair sets it instead, keeping --ep-size 4 as typed.
    assert all("tp=" in line for line in lines)
    assert any("tp=4" in line and "ep_size=4" in line for line in lines)


def test_the_launcher_hook_writes_repairs_as_the_launchers_own_flags(pack: Pack) -> None:
    from solver.launcher import explain_conflict, resolve_namespace

    parser = argparse.ArgumentParser(prog="mylaunch")
    parser.add_argument("--port", type=int)
    add_arguments(parser, pack)
    typed = ["--port", "80", "--tp", "6", "--ep", "4"]
    with pytest.raises(Unsatisfiable) as caught:
        resolve_namespace(parser.parse_known_args(typed)[0], pack, FACTS)
    text = explain_conflict(caught.value, pack, typed, prog="mylaunch")
    lines = _repair_lines(text)
    assert lines and all(line.startswith("mylaunch --port 80 ") for line in lines)
    assert "mylaunch --port 80 --tp-size 6" in lines  # leave --ep-size on auto
    custom = explain_conflict(caught.value, pack, render=lambda r: f"try {sorted(r.set)} {r.unset}")
    assert "try ['tp_size'] []" in custom and "try [] ['tp_size']" not in custom  # not searched


def test_a_launch_command_s_conflict_text_is_built_once(pack: Pack, monkeypatch: pytest.MonkeyPatch) -> None:
    """The repairs written as the launcher's flags reuse the text before them (what cannot hold,
    the steps) that the exception's message was made with: 487ea0a built it again in
    `conflict_text`, its chain and derived facts twice per conflict. Same text either way."""
    from solver.launcher import explain_conflict, resolve_namespace
    from solver.render import text as text_module

    chains: list[object] = []
    steps = text_module.conflict_steps

    def counted(*args: Any) -> str:
        chains.append(args[1])
        return steps(*args)

    monkeypatch.setattr(text_module, "conflict_steps", counted)
    parser = argparse.ArgumentParser(prog="mylaunch")
    add_arguments(parser, pack)
    typed = ["--tp", "6", "--ep", "4"]
    with pytest.raises(Unsatisfiable) as caught:
        resolve_namespace(parser.parse_known_args(typed)[0], pack, FACTS)
    assert len(chains) == 1
    text = explain_conflict(caught.value, pack, typed, prog="mylaunch")
    assert len(chains) == 1, "the launch command's text built the conflict's chain again"
    caught.value.explained = None  # (made again from scratch: the same text)
    assert explain_conflict(caught.value, pack, typed, prog="mylaunch") == text
    assert len(chains) == 2


# --- the launcher's config file ----------------------------------------------------------------


def test_a_config_file_is_read_like_its_flags_and_the_command_line_wins(
    capsys: pytest.CaptureFixture[str], model: str, tmp_path: Path
) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"model-path: {model}\ntp-size: 4\ndp-size: 2\nhost: 0.0.0.0\nenable-metrics: true\n")
    facts = ["--set", "platform=cuda", "--set", "gpu_arch=sm90"]
    # SGLang 0.5.23's config reader refuses enable-dp-attention in the file: it is typed here.
    dp_attention = "--enable-dp-attention"
    launch = [*SGLANG, "--config", str(config), dp_attention]
    code, out, _ = run(capsys, "resolve", "--json", *facts, "--", *launch)
    values = json.loads(out)["values"]
    assert code == 0
    assert (values["tp_size"], values["dp_size"], values["enable_dp_attention"]) == (4, 2, True)
    assert values["architecture"] == "LlamaForCausalLM"  # the file's model-path was read
    code, out, _ = run(
        capsys,
        "resolve",
        "--format",
        "argv",
        "--minimal",
        *facts,
        "--",
        *SGLANG,
        "--config",
        str(config),
        "--tp",
        "8",
        dp_attention,
    )
    words = shlex.split(out)
    assert words[3:5] == ["--config", str(config)]
    assert words[words.index("--tp-size") + 1] == "8"  # typed beats the file
    assert "--enable-dp-attention" in words and "--dp-size" in words  # the options stay


def test_set_and_the_launch_command_must_agree_where_both_set_a_field(
    capsys: pytest.CaptureFixture[str], model: str, tmp_path: Path
) -> None:
    """--set, the command's flags and its --config file are all the user's words: the same value
    twice is fine, different values are one input error each (all reported at once), and the
    command's flag over its file's value is no disagreement (the launcher reads it that way)."""
    config = tmp_path / "serve.yaml"
    config.write_text(f"model-path: {model}\ntp-size: 4\ndp-size: 2\n")
    facts = ["--set", "platform=cuda", "--set", "gpu_arch=sm90"]
    launch = ["--", *SGLANG, "--config", str(config), "--tp", "8"]
    code, out, _ = run(capsys, "resolve", "--json", *facts, "--set", "tp_size=8", *launch)
    assert code == 0 and json.loads(out)["values"]["tp_size"] == 8
    code, _, err = run(capsys, "check", *facts, "--set", "tp_size=4", "--set", "dp_size=1", *launch)
    assert code == 2
    assert "--set tp_size=4 and --tp 8 in the launch command disagree; keep one" in err
    assert "--set dp_size=1 and --dp-size 2 in the launch command disagree; keep one" in err


@pytest.mark.parametrize(
    "name, text, needle",
    [
        ("c.yaml", "[1, 2]\n", "mapping"),
        ("c.yaml", "a: [\n", "not valid YAML"),
        ("c.json", "{}", "must be a YAML file"),
        ("missing.yaml", None, "cannot be read"),
        ("c.yaml", "tp-size: six\n", "tp_size"),
    ],
)
def test_bad_config_files_are_input_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str | None, needle: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    code, _, err = run(capsys, "check", "--set", "platform=cuda", "--", "--config", str(path))
    assert code == 2 and needle in err


def test_the_plain_check_path_does_not_import_yaml() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; from solver.cli.commands import main; main(['check', '--set', 'platform=cuda', "
        "'--set', 'gpu_arch=sm90', '--', '--tp', '2']); print('yaml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().endswith("False")


def test_count_and_choices_are_exact_over_the_working_domain(tmp_path: Path) -> None:
    """tp=6 pinned: the working domain of ep is its listed values plus 6 (it shares a rule with
    tp); ep may be 1, 2, 6 or 3 (pinned) but never 4; counts match brute force over it."""
    from solver.engine.count import count

    fields = (
        '[field.tp]\nkind = "option"\ndomain = [1, 2, 4]\nopen = { min = 1 }\n'
        '[field.ep]\nkind = "option"\ndomain = [1, 2, 4]\nopen = { min = 1 }\n'
        '[[rule]]\nid = "ep-divides-tp"\nrequire = "tp % ep == 0"\nbecause = "--ep must divide --tp"\n'
        'source = "test"\n'
    )
    small = load_pack(_pack(tmp_path, "", fields))
    assert count(small, {"tp": 6}).count == 3  # ep in {1, 2, 6}
    assert count(small, {"tp": 6, "ep": 3}).count == 1
    assert count(small, {"tp": 6, "ep": 4}).count == 0
    assert count(small).count == sum(1 for t in (1, 2, 4) for e in (1, 2, 4) if t % e == 0)
    choices = valid_choices(small, {"tp": 6}, fields=["ep"], reasons=False)
    assert choices.possible["ep"] == [1, 2, 6] and choices.open["ep"] == "any integer >= 1"


def test_words_after_a_double_dash_are_the_launchers_and_stay_last(pack: Pack) -> None:
    # Without the launcher's parser table, they are passed through untouched ...
    import dataclasses

    assert pack.launcher is not None
    tableless = dataclasses.replace(pack, launcher=dataclasses.replace(pack.launcher, flags={}))
    cmd = read_command(tableless, [*SGLANG, "--tp", "2", "--", "--tp", "4"])
    assert cmd.options == {"tp_size": "2"} and cmd.passthrough == ("--", "--tp", "4")
    assert write_command(tableless, cmd, {"tp_size": 2}) == [*SGLANG, "--tp-size", "2", "--", "--tp", "4"]
    # ... with it, read as SGLang's argparse reads them: positionals, of which it takes none
    with pytest.raises(InvalidInput, match="'--tp' comes after `--`"):
        read_command(pack, [*SGLANG, "--tp", "2", "--", "--tp", "4"])


def test_a_generic_launcher_with_a_positional_model_and_short_flags() -> None:
    """The shape of `vllm serve MODEL -tp 2`: nothing in the reader names a launcher."""
    from solver.model import Field, Launcher

    other = Pack(
        name="other",
        version="1",
        launcher=Launcher(commands=("srv run",), positional_model=("srv run",), model_flags=("--model",)),
        fields={
            "tp": Field(name="tp", kind="option", domain=(1, 2), flags=("--tensor-parallel-size", "-tp")),
            "eager": Field(name="eager", kind="option", domain=(False, True), flag_value="boolean_optional"),
        },
    )
    cmd = read_command(other, ["srv", "run", "org/m", "-tp=2", "--no-eager", "-O3"])
    assert (cmd.model, cmd.options, cmd.passthrough) == ("org/m", {"tp": "2", "eager": False}, ("-O3",))
    assert write_command(other, cmd, {"tp": 2, "eager": False}) == [
        "srv",
        "run",
        "org/m",
        "-O3",
        "--tensor-parallel-size",
        "2",
        "--no-eager",
    ]


# --- law: writing then reading a launch command gives back what was written ---------------------

_SGLANG_PACK = load_pack("sglang")
_CHOICES = _SGLANG_PACK.launcher.choices if _SGLANG_PACK.launcher else {}
# (not a value the launcher's parser refuses: the pack keeps fp4_e2m1 only to explain its rename,
# a rule forbids it always, so it is never written)
_OPTION_VALUES = {
    name: [
        *(
            v
            for v in f.domain
            if f.cli_flag not in _CHOICES or v == f.absent or str(v) in _CHOICES[f.cli_flag]
        ),
        *((3, 6, 12) if f.open is not None else ()),
    ]
    for name, f in _SGLANG_PACK.fields.items()
    if f.kind == "option"
}
# Words a user may pass through: flags the pack does not model, values with spaces, quotes,
# shell metacharacters, negative numbers and `=`.
# (`--port` and `--random-seed` take what int() reads, as SGLang's parser does)
_OTHER_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12
).filter(lambda v: not v.startswith("-")) | st.sampled_from(["-1", "-0.5"])
_OTHER = st.tuples(
    st.sampled_from(["--host", "--chat-template", "--served-model-name"]), _OTHER_TEXT
) | st.tuples(
    st.sampled_from(["--port", "--random-seed"]), st.sampled_from(["30000", "-1", "+8", " 7", "0_8"])
)


@pytest.mark.property
@given(
    options=st.fixed_dictionaries({}, optional={n: st.sampled_from(v) for n, v in _OPTION_VALUES.items()}),
    other=st.lists(_OTHER, max_size=4),
    model=st.sampled_from([None, "/models/a b", "org/model"]),
)
@settings(max_examples=150, deadline=None)
def test_write_then_read_is_the_identity(
    options: dict[str, object], other: list[tuple[str, str]], model: str | None
) -> None:
    from solver.inputs.launch import LaunchCommand

    passthrough = tuple(w for pair in other for w in pair)
    typed = LaunchCommand(program=tuple(SGLANG), model=model, passthrough=passthrough)
    words = write_command(_SGLANG_PACK, typed, options)  # type: ignore[arg-type]
    again = read_command(_SGLANG_PACK, shlex.split(shell_line(words)))
    assert again.model == model and again.passthrough == passthrough
    written = {n: v for n, v in options.items() if flag_words(_SGLANG_PACK.fields[n], v)}  # type: ignore[arg-type]
    assert {n: str(v).lower() for n, v in again.options.items()} == {
        n: str(v).lower() for n, v in written.items()
    }


def test_minimal_without_argv_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "resolve", "--minimal", "--set", "platform=cuda")
    assert code == 2 and "--format argv" in err


def test_config_file_booleans_follow_the_flag_kind(tmp_path: Path) -> None:
    from solver.inputs.launchconfig import read_config
    from solver.model import Field

    other = Pack(
        name="other",
        version="1",
        fields={
            "eager": Field(name="eager", kind="option", domain=(False, True), flag_value="boolean_optional"),
            "fast": Field(name="fast", kind="option", domain=(False, True), flag_value="store_true"),
            "tp": Field(name="tp", kind="option", domain=(1, 2), flags=("--tensor-parallel-size", "-tp")),
        },
    )
    path = tmp_path / "c.yml"
    path.write_text("eager: false\nfast: false\ntensor_parallel_size: 2\nextra-list: [a, b]\n")
    cmd = read_config(other, str(path))
    assert cmd.options == {"eager": False, "tp": "2"}  # fast: false is no flag at all
    assert cmd.passthrough == ("--extra-list", "a", "b")
