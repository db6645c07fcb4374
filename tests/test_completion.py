"""Shell completion: the hidden `__complete` command, and scripts the shells accept."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from solver.cli.commands import main
from solver.cli.completion import BASH_SCRIPT, FISH_SCRIPT, ZSH_SCRIPT

TOY = str(Path(__file__).parent / "fixtures" / "packs" / "toy")
BASH_BREAKS = "\"'><=;|&(:"
TOY_ASSIGNMENTS = ["gpu=", "quant=", "kernel=", "fusion=", "tp=", "ep="]  # the toy pack's fields


def complete(
    capsys: pytest.CaptureFixture[str], *words: str, line: str | None = None, breaks: str = ""
) -> list[str]:
    argv = ["__complete", "--wordbreaks", breaks]
    argv += ["--line", line] if line is not None else ["--", *words]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out.splitlines()


def test_commands_are_offered_and_the_hidden_one_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    found = complete(capsys, "")
    assert {"resolve", "why", "choices", "check", "matrix", "completion", "schema"} <= set(found)
    assert "__complete" not in found
    assert complete(capsys, "ch") == ["choices", "check"]
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "__complete" not in capsys.readouterr().out


def test_set_offers_field_names_then_only_still_valid_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "") == TOY_ASSIGNMENTS
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "gpu=a100", "--set", "") == [
        "quant=",
        "kernel=",
        "fusion=",
        "tp=",
        "ep=",
    ]
    # fp4 needs b200; cutlass is excluded on a100; the auto spelling is always offered.
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "gpu=a100", "--set", "quant=") == [
        "quant=none",
        "quant=fp8",
    ]
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "gpu=a100", "--set", "kernel=") == [
        "kernel=triton",
        "kernel=trtllm",
        "kernel=auto",
    ]
    assert complete(capsys, "check", "--pack", TOY, "--set", "gpu=a100", "--set", "kernel=tr") == [
        "kernel=triton",
        "kernel=trtllm",
    ]
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "tp=2", "--set", "ep=") == ["ep=1", "ep=2"]
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "fusion=") == ["fusion=false", "fusion=true"]


def test_assume_and_the_equals_form_and_kebab_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert complete(capsys, "resolve", "--pack", TOY, "--assume", "") == ["gpu="]
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "quant=fp4", "--assume", "gpu=") == [
        "gpu=b200"
    ]
    assert complete(capsys, "resolve", "--pack", TOY, "--set=quant=fp4", "--set=gpu=") == ["--set=gpu=b200"]


def test_bad_or_half_typed_inputs_are_skipped_not_fatal(capsys: pytest.CaptureFixture[str]) -> None:
    assert complete(
        capsys, "resolve", "--pack", TOY, "--set", "gpu=nope", "--set", "oops", "--set", "quant="
    ) == ["quant=none", "quant=fp8", "quant=fp4"]
    assert complete(capsys, "resolve", "--pack", TOY, "--set", "nofield=") == []
    assert complete(capsys, "resolve", "--pack", "/does/not/exist", "--set", "x=") == []
    assert complete(capsys, "nocommand", "--set", "") == []


def test_bash_line_mode_answers_with_the_part_after_the_last_word_break(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = f"confsolve resolve --pack {TOY} --set gpu=a100 --set quant="
    assert complete(capsys, line=line, breaks=BASH_BREAKS) == ["none", "fp8"]
    assert complete(capsys, line=line + "f", breaks=BASH_BREAKS) == ["fp8"]
    assert complete(capsys, line=f"confsolve resolve --pack {TOY} --set ", breaks=BASH_BREAKS)[0] == "gpu="
    assert complete(capsys, line="confsolve graph --format ", breaks=BASH_BREAKS) == [
        "dot",
        "mermaid",
        "json",
        "svg",
    ]
    assert complete(capsys, line='confsolve resolve --set "quant=', breaks=BASH_BREAKS) != ["x"]


def test_options_choices_positional_fields_and_packs(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--set" in complete(capsys, "resolve", "--s")
    assert complete(capsys, "matrix", "--pack", TOY, "") == ["gpu", "quant", "kernel", "fusion", "tp", "ep"]
    assert complete(capsys, "matrix", "--pack", TOY, "quant", "k") == ["kernel"]
    assert complete(capsys, "matrix", "--pack", TOY, "quant", "--format", "") == [
        "text",
        "markdown",
        "csv",
        "html",
    ]
    assert complete(capsys, "completion", "") == ["bash", "zsh", "fish"]
    assert "sglang" in complete(capsys, "resolve", "--pack", "")
    assert complete(capsys, "resolve", "--model-config", "") == []  # the shell completes paths


def test_completion_prints_the_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    assert capsys.readouterr().out == BASH_SCRIPT
    assert main(["completion", "zsh"]) == 0
    assert capsys.readouterr().out == ZSH_SCRIPT
    assert main(["completion", "fish"]) == 0
    assert capsys.readouterr().out == FISH_SCRIPT


# .ci/run installs zsh and fish (Debian packages), and sets CONFSOLVE_REQUIRE_SHELLS=1 so that a
# missing shell fails there instead of skipping.
def _shell(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        if os.environ.get("CONFSOLVE_REQUIRE_SHELLS"):
            pytest.fail(f"{name} is not installed (apt-get install {name})")
        pytest.skip(f"{name} is not installed")
    return exe


def _installed_confsolve() -> Path:
    """The `confsolve` of the environment running the tests (.venv, or CI's .venv-ci)."""
    import sys

    found = Path(sys.executable).parent / "confsolve"
    if not found.exists():
        pytest.skip("needs the installed confsolve")
    return found


@pytest.mark.parametrize(
    ("shell", "script"), [("bash", BASH_SCRIPT), ("zsh", ZSH_SCRIPT), ("fish", FISH_SCRIPT)]
)
def test_the_scripts_parse(shell: str, script: str) -> None:
    exe = _shell(shell)
    done = subprocess.run([exe, "-n"], input=script, capture_output=True, text=True, timeout=20, check=False)
    assert done.returncode == 0, done.stderr


def test_the_bash_function_fills_compreply() -> None:
    """End to end: bash runs the function with a fake command line and gets the values."""
    bash = shutil.which("bash")
    confsolve = _installed_confsolve()
    if bash is None:
        pytest.skip("needs bash")
    line = f"{confsolve} resolve --pack {TOY} --set gpu=a100 --set quant="
    program = (
        f"complete() {{ :; }}; compopt() {{ :; }}\n{BASH_SCRIPT}\n"
        f"COMP_WORDBREAKS={shlex.quote(BASH_BREAKS)}; COMP_LINE={shlex.quote(line)}\n"
        f"COMP_POINT=${{#COMP_LINE}}; COMP_WORDS=({shlex.quote(str(confsolve))} resolve)\n"
        "COMP_CWORD=1\n"
        "_confsolve_complete; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run([bash, "-c", program], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split() == ["none", "fp8"], done.stderr


def test_the_zsh_function_adds_the_values() -> None:
    """End to end: zsh runs the function (compadd stubbed) and gets the values, `=` unspaced."""
    zsh = _shell("zsh")
    confsolve = _installed_confsolve()
    words = " ".join(shlex.quote(w) for w in [str(confsolve), "resolve", "--pack", TOY, "--set"])
    program = (
        'compadd() { print -r -- "compadd $*" }; _files() { print _files }; compdef() { : }\n'
        f"{ZSH_SCRIPT}\n"
        f"words=({words} gpu=a100 --set quant=); CURRENT=${{#words}}; _confsolve\n"
        f"words=({words} ''); CURRENT=${{#words}}; _confsolve\n"
    )
    done = subprocess.run([zsh, "-f", "-c", program], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.splitlines() == [
        "compadd -- quant=none quant=fp8",
        "compadd -S  -- gpu= quant= kernel= fusion= tp= ep=",
    ], done.stderr


def _fish_complete(line: str) -> list[str]:
    """What fish offers for `line` with the script loaded (`complete -C`, fish's own completion
    of a command line), `confsolve` found on PATH as a user has it."""
    fish = _shell("fish")
    bin_dir = _installed_confsolve().parent
    program = f"{FISH_SCRIPT}\ncomplete -C {shlex.quote(line)}\n"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [fish, "--no-config", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_fish_function_offers_the_values_in_order() -> None:
    """End to end: fish completes a command line through the script: still-possible values only,
    in the completer's order (not fish's alphabetical one), field names, commands, GPU names."""
    assert _fish_complete(f"confsolve resolve --pack {TOY} --set gpu=a100 --set quant=") == [
        "quant=none",
        "quant=fp8",
    ]
    assert _fish_complete(f"confsolve resolve --pack {TOY} --set ") == TOY_ASSIGNMENTS
    assert _fish_complete("confsolve completion ") == ["bash", "zsh", "fish"]
    assert _fish_complete("confsolve resolve --set gpu_arch=H1") == ["gpu_arch=H100"]


def test_the_fish_function_warned_values_last() -> None:
    """A value a warn rule flags is offered after the clean ones, as bash and zsh have it."""
    line = (
        "confsolve check --set platform=cuda --set gpu_arch=H100 "
        "--set architecture=LlamaForCausalLM --set attention_backend="
    )
    offered = [c.split("=", 1)[1] for c in _fish_complete(line)]
    assert offered[0] == "triton" and "aiter" in offered
    assert offered.index("aiter") > offered.index("fa3")


def test_the_fish_function_falls_back_to_paths(tmp_path: Path) -> None:
    """Where confsolve has nothing to offer (a path), fish completes files."""
    (tmp_path / "model-config.json").write_text("{}")
    assert _fish_complete(f"confsolve resolve --model-config {tmp_path}/mod") == [
        f"{tmp_path}/model-config.json"
    ]
