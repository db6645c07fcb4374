"""One problem collector (solver.errors.Collector) for pack errors and input errors: a command
reports every bad input in one run, each with its field, value and did-you-mean, and exits 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.errors import InputIssue, InvalidInput, PackError, input_issues
from solver.inputs.launch import read_command
from solver.inputs.launchrequest import read_request
from solver.inputs.pins import collect_pins, facts_from_environ

ROOT = Path(__file__).resolve().parent.parent

BAD_SETS = {"attention_backend": "flashinf", "tp_sise": "2", "platform": "cudaa"}
MEANT = {"attention_backend": "flashinfer", "tp_sise": "tp_size", "platform": "cuda"}


def _issues(capsys: pytest.CaptureFixture[str], *words: str) -> list[dict[str, object]]:
    argv = ["resolve", *(w for name, value in BAD_SETS.items() for w in ("--set", f"{name}={value}")), *words]
    assert main([*argv, "--json"]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    issues: list[dict[str, object]] = json.loads(out)["error"]["issues"]
    return issues


@pytest.mark.parametrize(
    "more",
    [(), ("--model-config", "/no/such/model"), ("--set", "oops"), ("--assume", "kv_cache_dtype=fp9")],
    ids=["sets only", "and a missing model", "and a malformed --set", "and a bad --assume"],
)
def test_three_bad_sets_are_reported_at_once_with_whatever_else_is_wrong(
    capsys: pytest.CaptureFixture[str], more: tuple[str, ...]
) -> None:
    issues = _issues(capsys, *more)
    by_field = {issue["field"]: issue for issue in issues}
    for name, value in BAD_SETS.items():
        assert by_field[name]["value"] == value, issues
        assert MEANT[name] in by_field[name]["did_you_mean"], issues  # type: ignore[operator]
    assert len(issues) == len(BAD_SETS) + (1 if more else 0), issues
    text_run = ["resolve", *(w for n, v in BAD_SETS.items() for w in ("--set", f"{n}={v}")), *more]
    assert main(text_run) == 2
    assert f"invalid input ({len(issues)} problems)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "item", "said"),
    [
        ("--assume", "", "--assume '' is not FIELD=VALUE"),
        ("--assume", "=sm90", "--assume '=sm90' has no field name"),
        ("--set", "oops", "--set 'oops' is not FIELD=VALUE"),
    ],
)
def test_a_malformed_assignment_names_the_option_it_came_with(
    capsys: pytest.CaptureFixture[str], option: str, item: str, said: str
) -> None:
    # `--assume ''` was reported as "--set '' is not FIELD=VALUE"
    assert main(["check", "--set", "platform=cuda", option, item]) == 2
    assert said in capsys.readouterr().err


def test_an_empty_config_file_path_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    # it read "config file : must be a YAML file"
    launch = ["python", "-m", "sglang.launch_server", "--config", ""]
    assert main(["check", "--set", "platform=cuda", "--", *launch]) == 2
    assert "config file '': must be a YAML file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("gpu", "gpu_arch"),
        ("kv", "kv_cache_dtype"),
        ("cuda_graph", "cuda_graph_max_bs_decode"),
        ("watchdog", ""),
    ],
)
def test_an_unknown_field_that_is_the_start_of_one_suggests_it(typed: str, meant: str) -> None:
    # `--set gpu=H100`, a newcomer's first request, said "unknown field 'gpu'" with no hint
    # (gpu_arch is too far by difflib's ratio); so did `kv` (on 7b8e94c)
    with pytest.raises(InvalidInput) as caught:
        collect_pins(load_pack("sglang"), {typed: "1"})
    (issue,) = caught.value.issues
    assert (meant in issue.did_you_mean) if meant else issue.did_you_mean == (), issue


def test_every_badly_set_environment_variable_at_once() -> None:
    pack = load_pack("sglang")
    names = [name for name, field in pack.fields.items() if field.env][:2]
    with pytest.raises(InvalidInput) as caught:
        facts_from_environ(pack, dict.fromkeys(names, "maybe"))
    assert [issue.field for issue in caught.value.issues] == names


@pytest.mark.parametrize(
    ("name", "raw", "read"),
    [
        # SGLang's EnvInt finds no integer in "" and runs with its default (8192): it read 0
        ("SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK", "", 8192),
        ("SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR", "", 8192),
        ("SGLANG_USE_AITER", "", "0"),
        # EnvBool's words (lowered, not stripped), as the pack lists them: "y" and "N" were refused
        ("SGLANG_USE_MLX", "y", "1"),
        ("SGLANG_USE_MLX", "N", "0"),
        ("SGLANG_USE_MLX", "YES", "1"),
        ("SGLANG_USE_AITER", "TRUE", "1"),
        ("SGLANG_USE_AITER", "n", "0"),
        # get_bool_env_var reads SGLANG_USE_AITER too (only true/1 are true there), EnvBool also
        # "yes": refused, not read as 1 in one module and 0 in the next
        ("SGLANG_USE_AITER", "yes", None),
        ("SGLANG_USE_AITER", "y", None),
        # not a switch word to SGLang (it warns and runs with its default, 0): "on" read 1, " 1" 1
        ("SGLANG_USE_AITER", "on", None),
        ("SGLANG_USE_AITER", " 1", None),
        ("SGLANG_USE_MLX", " true", None),
        ("SGLANG_USE_AITER", "off", None),
    ],
)
def test_environment_variables_are_read_as_sglang_reads_them(name: str, raw: str, read: Any) -> None:
    pack = load_pack("sglang")
    if read is None:
        with pytest.raises(InvalidInput) as caught:
            facts_from_environ(pack, {name: raw})
        (issue,) = caught.value.issues
        assert issue.field == name and repr(raw) in issue.message
        launch = [f"{name}={raw}", "python", "-m", "sglang.launch_server"]
        with pytest.raises(InvalidInput):
            collect_pins(pack, read_request(pack, launch).options)
        return
    assert facts_from_environ(pack, {name: raw})[name].value == read
    # the same variable on a launch command's line
    request = read_request(pack, [f"{name}={raw}", "python", "-m", "sglang.launch_server"])
    assert collect_pins(pack, request.options)[name].value == read


def test_the_collector_keeps_its_own_errors_and_passes_others_through() -> None:
    issues = input_issues()
    issues.add(InputIssue(field="a", value=1, message="first"))
    with issues.collect():
        raise InvalidInput([InputIssue(field="b", value=2, message="second")])
    with pytest.raises(PackError), issues.collect():
        raise PackError([], "other")  # not an input error: not this collector's to keep
    with pytest.raises(InvalidInput) as caught:
        issues.check()
    assert [issue.field for issue in caught.value.issues] == ["a", "b"]
    input_issues().check()  # nothing collected: nothing raised


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("9" * 20, f"--tp-size '{'9' * 20}' is too long for tp_size (18 digits at most)."),
        ("abc", "--tp-size 'abc' is not a value of tp_size. Allowed: any integer >= 1."),
    ],
    ids=["a size past 18 digits", "not a number"],
)
def test_a_bad_open_integer_says_what_is_allowed_in_one_sentence(
    capsys: pytest.CaptureFixture[str], value: str, says: str
) -> None:
    # A 20-digit size once read "'999...' is not a value of tp_size Allowed: any integer >= 1":
    # an integer refused as "not an integer >= 1", and no stop before "Allowed".
    assert main(["resolve", "--set", f"tp_size={value}"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Allowed: any integer >= 1." in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("gpu_arch=sm91", "gpu_arch='sm91' is not a value of gpu_arch; did you mean 'sm90' or 'sm89'?"),
        ("SGLANG_USE_AITER=7", "SGLANG_USE_AITER='7' is not read as you may mean: SGLang 0.5.23 reads it"),
        ("num_gpus=" + "9" * 20, f"num_gpus='{'9' * 20}' is too long for num_gpus"),
    ],
)
def test_a_bad_fact_is_named_as_the_user_gave_it_not_as_a_launcher_flag(
    capsys: pytest.CaptureFixture[str], typed: str, says: str
) -> None:
    """A fact has no launcher flag: its bad value read "--gpu-arch 'sm91'" and "--SGLANG-USE-AITER
    '7'", flags SGLang does not have (the user wrote `--set gpu_arch=sm91` or set a variable)."""
    assert main(["resolve", "--set", typed]) == 2
    err = capsys.readouterr().err
    assert says in err and "--gpu-arch" not in err and "--SGLANG" not in err and "--num-gpus" not in err


@pytest.mark.parametrize(
    ("pack", "typed", "meant"),
    [
        ("vllm", "pipeline_parallel_size=7", ["8", "4"]),  # 6 and 7 are no pipeline sizes
        ("vllm", "block_size=100", ["96", "112"]),
        ("vllm", "num_gpus=3", ["4", "2"]),
        ("vllm", "pipeline_parallel_size=1000", ["16"]),
        ("sglang", "tp_size=-3", ["1"]),  # an open range's first value
        ("sglang", "weight_group_size=100", ["128", "64"]),
    ],
)
def test_a_whole_number_s_did_you_mean_is_the_nearest_allowed_values(
    capsys: pytest.CaptureFixture[str], pack: str, typed: str, meant: list[str]
) -> None:
    """By spelling, `--block-size 100` suggested 1600, 1200 and 1040; a whole number is near the
    numbers on either side of it."""
    assert main(["resolve", "--pack", pack, "--set", typed, "--json"]) == 2
    (issue,) = json.loads(capsys.readouterr().out)["error"]["issues"]
    assert issue["did_you_mean"] == meant
    assert main(["resolve", "--pack", pack, "--set", typed]) == 2
    err = capsys.readouterr().err
    assert "did you mean " + " or ".join(repr(m) for m in meant) + "?" in err


SGLANG = ["python", "-m", "sglang.launch_server"]
VLLM = ["vllm", "serve", "m"]
HUB_ID = "meta-llama/Llama-3.1-8B-Instruct"  # (an empty HOME and hub cache: not cached)


@pytest.mark.parametrize(
    ("words", "fields"),
    [
        (["--", *SGLANG, "--model-path", HUB_ID, "--tp-sise", "2"], ["launch command", "model_config"]),
        (
            ["--set", "tp_size=abc", "--", *SGLANG, "--model-path", "/no/model", "--tp-sise", "2"],
            ["launch command", "model_config", "tp_size"],
        ),
        (
            ["--", "SGLANG_USE_AITER=maybe", *SGLANG, "--tp-sise", "2", "--tp-size", "x"],
            ["launch command", "tp_size", "SGLANG_USE_AITER"],
        ),
        (
            ["--", *SGLANG, "--model-path", "/no/model", "--config", "/no/such.yaml", "--tp-sise", "2"],
            ["launch command", "--config", "model_config"],
        ),
        (
            ["--pack", "vllm", "--", "vllm", "serve", HUB_ID, "--tensor-parallel-sise", "2"],
            ["launch command", "model_config"],
        ),
        (
            [
                "--pack",
                "vllm",
                "--model-config",
                "/no/model",
                "--set",
                "tp=3",
                "--",
                *VLLM,
                "-tp",
                "2",
                "--foo",
            ],
            ["launch command", "tensor_parallel_size", "model_config"],
        ),
    ],
    ids=[
        "bad flag and uncached hub id",
        "and a bad --set value",
        "bad flag, its bad value and a bad variable",
        "bad flag and an unreadable config file",
        "vllm: bad flag and uncached hub id",
        "vllm: bad flag, --set against the command, missing --model-config",
    ],
)
def test_a_launch_command_s_problems_are_reported_with_every_other_at_once(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    words: list[str],
    fields: list[str],
) -> None:
    """A bad flag in the launch command hid every other problem (on 7b8e94c: one issue, the flag's):
    the model it names that cannot be read, its other flags' values, a variable typed in front,
    --set against it. A user fixed one and ran again to get the next."""
    for name in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["check", "--json", *words]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    issues = json.loads(out)["error"]["issues"]
    assert [issue["field"] for issue in issues] == fields, issues
    assert main(["check", *words]) == 2
    assert f"invalid input ({len(fields)} problems)" in capsys.readouterr().err


# --- round 12's sweep of hostile inputs: each case crashed or hung before ------------------------


def test_a_fifo_given_as_a_launch_config_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    # `open()` on a FIFO waits for a writer: `check` hung until killed
    fifo = tmp_path / "serve.yaml"
    os.mkfifo(fifo)
    words = [
        "check",
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/m",
        "--config",
        str(fifo),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "solver", *words], capture_output=True, text=True, timeout=120, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail("check waited on the FIFO")
    assert done.returncode == 2, done.stderr
    assert f"config file {fifo}: is not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_serve_on_a_port_in_use_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # a bind that failed closed the half-made server, whose close needed what was set after the bind:
    # "internal error (AttributeError: ... no attribute 'stopping')", exit 70
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--host", "127.0.0.1", "--port", str(port), "--no-warm-up"]) == 2
    err = capsys.readouterr().err
    assert f"confsolve serve: cannot listen on 127.0.0.1:{port}" in err and "internal error" not in err


@pytest.mark.parametrize("value", ["{not json", "[3]", "[" * 100_000])
def test_a_json_flag_value_that_is_no_json_object_names_the_flag(value: str) -> None:
    # vLLM's parser refuses it (pydantic: json_invalid / dataclass_type)
    with pytest.raises(
        InvalidInput, match=r"-ac .* is not a JSON object, and vllm 0\.33\.0's parser refuses it"
    ):
        read_command(load_pack("vllm"), ["vllm", "serve", "m", "-ac", value])


def test_an_integer_too_long_to_write_out_is_an_input_error_through_the_library() -> None:
    # `resolve(pack, {"tp_size": 10**5000})` raised ValueError ("Exceeds the limit (4300 digits) for
    # integer string conversion") from the open domain's digest: an int the API (or JSON) hands in
    from solver import resolve

    with pytest.raises(InvalidInput, match="is too long for tp_size"):
        resolve(load_pack("sglang"), {"tp_size": 10**5000})


def test_add_arguments_takes_one_field_name_as_a_name_not_its_letters() -> None:
    import argparse

    from solver.launcher import add_arguments

    # ("pack 'sglang' has no field 't'", for each letter)
    assert add_arguments(argparse.ArgumentParser(), load_pack("sglang"), fields="tp_size") == ["tp_size"]


def test_to_argv_refuses_a_resolution_of_another_pack() -> None:
    # it wrote the SGLang values of the fields both packs name (quantization, dtype, ...) as vLLM flags
    from solver import resolve
    from solver.launcher import to_argv

    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"}
    res = resolve(load_pack("sglang"), {}, facts)
    with pytest.raises(InvalidInput, match="the resolution is of pack 'sglang', not 'vllm'"):
        to_argv(res, load_pack("vllm"))


@pytest.mark.parametrize("body", [b'{"set": {"attention_backend": "\\ud800"}}', b'{"set": {"\\udfff": "1"}}'])
def test_serve_refuses_a_lone_surrogate_escape_instead_of_dropping_the_connection(body: bytes) -> None:
    # the request decoded, the answer quoting it could not be encoded: the handler died with
    # UnicodeEncodeError (a traceback on the server's stderr) and the page got no response
    from solver.serve.requests import BadRequest, parse_body

    with pytest.raises(BadRequest, match="lone surrogate"):
        parse_body(body)


def _library_calls() -> list[tuple[str, object]]:
    import argparse

    import solver
    from solver import launcher

    sglang = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"}
    return [
        ("resolve: pack must be a Pack", lambda: solver.resolve("sglang", {}, facts)),  # type: ignore[arg-type]
        ("check: pack must be a Pack", lambda: solver.check(None, {}, facts)),  # type: ignore[arg-type]
        ("explain: pack must be a Pack", lambda: solver.explain(3, {}, facts)),  # type: ignore[arg-type]
        ("valid_choices: pack must be a Pack", lambda: solver.valid_choices(b"x", {}, facts)),  # type: ignore[arg-type]
        ("prepare_choices: pack must be a Pack", lambda: solver.prepare_choices({})),  # type: ignore[arg-type]
        ("resolve: budget must be", lambda: solver.resolve(sglang, {}, facts, budget=5)),  # type: ignore[arg-type]
        ("valid_choices: fields must be", lambda: solver.valid_choices(sglang, {}, facts, fields=3)),  # type: ignore[arg-type]
        ("explain: keep must be", lambda: solver.explain(sglang, {}, facts, keep=True)),  # type: ignore[arg-type]
        ("load_pack: name_or_path must be", lambda: solver.load_pack(None)),  # type: ignore[arg-type]
        ("read_command: words must be a list of words", lambda: read_command(sglang, "sglang serve m")),  # type: ignore[arg-type]
        ("read_command: words (each) must be a string", lambda: read_command(sglang, ["sglang", "serve", 3])),  # type: ignore[list-item]
        ("read_command: pack must be a Pack", lambda: read_command("sglang", ["x"])),  # type: ignore[arg-type]
        ("add_arguments: parser must be", lambda: launcher.add_arguments(None, sglang)),  # type: ignore[arg-type]
        (
            "add_arguments: fields (each) must be",
            lambda: launcher.add_arguments(argparse.ArgumentParser(), sglang, [3]),
        ),  # type: ignore[list-item]
        ("resolve_namespace: ns must be", lambda: launcher.resolve_namespace(["x"], sglang)),  # type: ignore[arg-type]
        ("resolve_namespace: facts must be", lambda: launcher.resolve_namespace({}, sglang, facts=[1])),  # type: ignore[arg-type]
        ("to_argv: resolution must be a Resolution", lambda: launcher.to_argv({"values": {}}, sglang)),  # type: ignore[arg-type]
        ("explain_conflict: exc must be an Unsatisfiable", lambda: launcher.explain_conflict("x", sglang)),  # type: ignore[arg-type]
    ]


@pytest.mark.parametrize("index", range(18))
def test_a_wrong_kind_of_library_argument_is_an_input_error_naming_it(index: int) -> None:
    # each raised AttributeError or TypeError from deep inside ("'str' object has no attribute
    # 'fields'", "'int' object is not iterable", "'bool' object has no attribute 'startswith'")
    says, call = _library_calls()[index]
    with pytest.raises(InvalidInput) as caught:
        call()  # type: ignore[operator]
    assert says in str(caught.value) and "(" in str(caught.value).partition(" not ")[2]


def test_a_full_width_value_is_refused_with_the_value_it_stands_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`ｆａ３` (full-width letters, an input method left on) had no did-you-mean."""
    assert main(["check", "--set", "platform=cuda", "--set", "attention_backend=ｆａ３"]) == 2
    assert (
        "--attention-backend 'ｆａ３' is not a value of attention_backend; did you mean 'fa3'"
        in capsys.readouterr().err
    )
