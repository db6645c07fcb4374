"""Failure manners of the command line: Ctrl-C, output that cannot be written, encodings, exit
codes documented where a user looks, and what `--pack` names.

Each test starts a real process where the behaviour is the process's (signals, file
descriptors, locale), and calls `main` in-process where that is the same thing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import ROOT, TOY, assert_clean_text, run_cli, sglang_pack

from solver.cli.commands import EXIT_CODES, EXIT_INTERRUPTED, EXIT_OUTPUT, main

FACTS = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFSOLVE_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


# --- Ctrl-C ----------------------------------------------------------------------------------

# Commands that run long enough on the SGLang pack to be interrupted in the middle of their work.
SLOW = {
    # (under a time limit: the search, not a pass over the pack's shipped compiled count)
    "count": ["count", "--set", "platform=cuda", "--limit", "60s"],
    "lint": ["lint"],
    "matrix": ["matrix", "attention_backend", "moe_runner_backend", "--set", "platform=cuda"],
    "diff": ["diff", "sglang", str(ROOT / "tests" / "fixtures" / "packs" / "sglang-seed")],
}


def _sigint_as_on_a_terminal() -> None:
    """Ctrl-C as a terminal delivers it: a suite started in the background (`pytest &`, nohup)
    ignores SIGINT, its children inherit that, and Python then keeps it ignored (round 12: the
    suite run so in a fresh clone saw count, lint, matrix and diff run to their end, exit 0)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("command", sorted(SLOW))
def test_ctrl_c_in_the_middle_of_work_exits_130_quietly(command: str) -> None:
    sglang_pack()
    proc = subprocess.Popen(
        [sys.executable, "-m", "solver", *SLOW[command]],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_sigint_as_on_a_terminal,
    )
    time.sleep(2.0)  # past the imports and the pack load: inside the search
    if proc.poll() is not None:
        pytest.skip(f"{command} finished within 2 s on this machine")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    # A command that ended just before the signal may be in the interpreter's teardown, where
    # Python has given SIGINT back to the system: it ends by the signal, which a shell reports
    # as 130 too (seen at load 13: returncode -2 with nothing on stderr).
    assert proc.returncode in (EXIT_INTERRUPTED, -signal.SIGINT), err.decode()[-2000:]
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err, err.decode()[-2000:]


def test_ctrl_c_on_serve_while_it_warms_up_exits_130_quietly() -> None:
    # the warm-up thread, cut off by the interpreter's shutdown, printed "confsolve serve: warm-up
    # stopped: RuntimeError: can't register atexit after shutdown" on the way out
    proc = subprocess.Popen(
        [sys.executable, "-m", "solver", "serve", "--port", "0"],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_sigint_as_on_a_terminal,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # "... configurator is at http://...": serving, the warm-up started
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode in (EXIT_INTERRUPTED, -signal.SIGINT), err.decode()[-2000:]
    assert err == b"", err.decode()[-2000:]


@pytest.mark.parametrize(
    "command",
    [
        "resolve",
        "why",
        "choices",
        "check",
        "graph",
        "show",
        "packs",
        "schema",
        "completion",
        "lint",
        "count",
        "diff",
        "matrix",
    ],
)
def test_ctrl_c_anywhere_in_any_command_is_130(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import solver.cli.commands

    def interrupted(args: object, as_json: bool) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(solver.cli.commands, "_run", interrupted)
    argv = {
        "why": ["why", "tp_size"],
        "completion": ["completion", "bash"],
        "diff": ["diff", "sglang", str(ROOT / "tests" / "fixtures" / "packs" / "sglang-seed")],
        "matrix": ["matrix", "tp_size", "dp_size"],
    }.get(command, [command])
    assert main(argv) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


# --- stdout that cannot be written ------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("argv", [["packs"], ["packs", "--json"], ["show", "--pack", str(TOY)], ["schema"]])
def test_a_full_disk_is_exit_74_with_one_line(argv: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "solver", *argv],
            cwd=ROOT,
            env=_env(),
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    err = done.stderr.decode()
    assert done.returncode == EXIT_OUTPUT, err
    assert "cannot write the output" in err and "No space left" in err
    assert_clean_text(err)
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "argv", [["packs"], ["check", "--pack", str(TOY), "--set", "gpu=b200"], ["--version"]]
)
def test_a_closed_stdout_is_exit_74_with_one_line(argv: list[str]) -> None:
    """Started with stdout closed (`confsolve check >&-`): no answer can be written, so the
    command says so and ends with 74 instead of "succeeding" with nothing printed."""
    done = subprocess.run(
        [sys.executable, "-m", "solver", *argv],
        cwd=ROOT,
        env=_env(),
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
        preexec_fn=lambda: os.close(1),  # after the child's stdio is set up: fd 1 closed at exec
    )
    err = done.stderr.decode()
    assert done.returncode == EXIT_OUTPUT, err
    assert err.strip() == "confsolve: cannot write the output: stdout is closed"


@pytest.mark.parametrize("argv", [["show", "--pack", str(TOY)], ["schema"], ["packs", "--json"]])
def test_a_reader_that_goes_away_ends_quietly_with_the_commands_code(argv: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte (`| head -0`)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "solver", *argv],
            cwd=ROOT,
            env=_env(),
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""


def test_head_of_a_long_output_is_quiet() -> None:
    shell = f"{sys.executable} -m solver schema | head -n 3"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.count(b"\n") == 3
    assert done.stderr == b""
    assert done.returncode == 0


# --- encodings -----------------------------------------------------------------------------


def test_an_ascii_stdout_gets_text_it_can_show_and_exact_json() -> None:
    sglang_pack()
    env = {"PYTHONIOENCODING": "ascii", "LC_ALL": "C", "PYTHONUTF8": "0"}
    text = run_cli(["resolve", *FACTS], env=env)
    assert text.returncode == 0, text.stderr.decode()
    assert_clean_text(text.stdout.decode("ascii"), text.stderr.decode("ascii"))
    as_json = run_cli(["resolve", *FACTS, "--json"], env=env)
    as_utf8 = run_cli(["resolve", *FACTS, "--json"])
    assert as_json.returncode == 0, as_json.stderr.decode()
    import json

    assert json.loads(as_json.stdout.decode("ascii")) == json.loads(as_utf8.stdout.decode("utf-8"))


def test_a_tool_printing_bytes_that_are_not_utf8_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from solver.inputs.detect import _run

    tool = tmp_path / "nvidia-smi"
    tool.write_bytes(b"#!/bin/sh\nprintf '9.0\\n\\377\\376 NVIDIA \\351\\n'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    out = _run(["nvidia-smi"])
    assert out is not None and out.startswith("9.0\n") and "NVIDIA" in out


# --- exit codes, where a user looks --------------------------------------------------------


def test_every_exit_code_is_in_help_and_readme(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for code in EXIT_CODES:
        assert re.search(rf"\b{code} ", help_text), (code, help_text[-600:])
        assert f"| `{code}` |" in readme, code


# --- what --pack names ---------------------------------------------------------------------


def test_a_missing_pack_path_is_a_usage_error_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "no" / "such-pack"
    assert main(["show", "--pack", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    assert main(["show", "--pack", "./no-such-dir", "--json"]) == 2
    assert "./no-such-dir" in capsys.readouterr().out


def test_an_unknown_name_is_a_usage_error_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "--pack", "sglangg"]) == 2
    err = capsys.readouterr().err
    assert "sglangg" in err and "sglang" in err


@pytest.mark.parametrize("command", [["show"], ["check", *FACTS]])
def test_a_directory_named_like_a_shipped_pack_never_shadows_it(tmp_path: Path, command: list[str]) -> None:
    sglang_pack()
    fake = tmp_path / "sglang"
    fake.mkdir()
    (fake / "pack.toml").write_text('[pack]\nname = "sglang"\nversion = "evil"\nfiles = []\n')
    by_name = run_cli([*command, "--pack", "sglang"], cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert by_name.returncode == 0, by_name.stderr.decode()
    assert b"evil" not in by_name.stdout
    by_path = run_cli(["show", "--pack", "./sglang"], cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert b"evil" in by_path.stdout


def test_load_pack_by_name_ignores_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from solver import load_pack

    shipped = sglang_pack()
    (tmp_path / "sglang").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_pack("sglang").digest == shipped.digest


@pytest.mark.parametrize(
    ("text", "is_path"),
    [
        ("sglang", False),
        ("vllm", False),
        ("./sglang", True),
        ("../x", True),
        ("~/packs/x", True),
        ("a/b", True),
        (".hidden", True),
        ("/abs", True),
    ],
)
def test_what_looks_like_a_path(text: str, is_path: bool) -> None:
    from solver import looks_like_path

    assert looks_like_path(text) is is_path
