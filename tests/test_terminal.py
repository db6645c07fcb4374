"""Text answers on an 80-column terminal (solver/cli/terminal.py): prose folds to the width, a
command folds into lines a shell still reads as one command, a progress line is cleared before
the answer; piped output is never touched."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from solver import progress
from solver.cli.terminal import fold, fold_for, write_answer

ROOT = Path(__file__).resolve().parent.parent
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CONFSOLVE = "import sys; from solver.cli.commands import main; sys.exit(main(sys.argv[1:]))"


def _on_a_terminal(argv: list[str], columns: int = 80, env: dict[str, str] | None = None) -> str:
    """`confsolve ARGV` with stdout and stderr on a pseudo-terminal `columns` wide: what it shows."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.Popen(
        [sys.executable, "-c", CONFSOLVE, *argv],
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=child,
        cwd=ROOT,
        env={**environ, **(env or {})},
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=600)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def _screen_lines(raw: str) -> list[str]:
    """The lines as a terminal leaves them (a `\\r`-rewritten line: its last form)."""
    return [line.split("\r")[-1] for line in ESCAPES.sub("", raw).replace("\r\n", "\n").split("\n")]


PROSE = (
    "quantization: none, fp8, awq, awq_marlin, gptq_marlin, bitsandbytes, gguf, modelopt, "
    "modelopt_fp8, modelopt_fp4, modelopt_mixed, petit_nvfp4, w8a8_int8, w8a8_fp8"
)


def test_prose_folds_under_its_name() -> None:
    lines = fold(PROSE, 80).split("\n")
    assert len(lines) == 3 and all(len(line) <= 80 for line in lines)
    assert all(line.startswith(" " * len("quantization: ")) for line in lines[1:])
    assert " ".join(line.strip() for line in lines) == PROSE


def test_a_line_that_fits_keeps_its_alignment() -> None:
    row = "  tp_size                                       8                 user"
    assert fold(f"{row}\n{PROSE}", 80).split("\n")[0] == row
    assert fold("x" * 100 + " y", 80) == "x" * 100 + "\n    y"  # a word wider than the line stays whole


@pytest.mark.parametrize(
    "command",
    [
        "     confsolve resolve --set platform=cuda --set gpu_arch=sm90 --set attention_backend=fa3 "
        "--set architecture=LlamaForCausalLM --set kv_cache_dtype=fp8_e4m3 --set tp_size=3",
        '     vllm serve m --attention-config \'{"flash_attn_version": 2, "backend": "FLASH_ATTN"}\' -tp 8 '
        "--enable-expert-parallel --data-parallel-size 2 --served-model-name 'a b'",
    ],
)
def test_a_command_folds_into_one_command_for_the_shell(command: str) -> None:
    lines = fold(command, 80).split("\n")
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    said = "printf '%s\\n' " + "\n".join(lines).lstrip()
    folded = subprocess.run(["sh", "-c", said], capture_output=True, text=True, check=True).stdout
    whole = subprocess.run(["sh", "-c", "printf '%s\\n' " + command.lstrip()], capture_output=True, text=True)
    assert folded == whole.stdout


def test_piped_output_is_not_folded() -> None:
    assert fold_for(io.StringIO(), PROSE) == PROSE


def test_the_progress_line_is_cleared_before_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    # `confsolve count` on a terminal printed its answer after "confsolve count: counting 122112,
    # 6.2 s" on the same line
    shown = io.StringIO()
    with progress.reporting("count", stream=shown, show=True):
        progress.phase("counting", 10)
        write_answer("123 valid configurations\n", "", prose=False)
        assert shown.getvalue().endswith("\r" + " " * len("confsolve count: counting 0/10, 0.0 s") + "\r")
    assert capsys.readouterr().out == "123 valid configurations\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["choices", "--set", "platform=cuda", "--set", "gpu_arch=sm90"],
        ["why", "attention_backend", "--pack", "vllm", "--set", "platform=cuda", "--set", "gpu_arch=sm90"],
        [
            "resolve",
            "--set",
            "platform=cuda",
            "--set",
            "gpu_arch=sm90",
            "--set",
            "tp_size=3",
            "--set",
            "ep_size=2",
            "--set",
            "architecture=LlamaForCausalLM",
        ],
    ],
)
def test_answers_fit_an_80_column_terminal(argv: list[str]) -> None:
    # main 9c915d2: choices 43 of 72 lines past 80 columns, why 3 of 8, the conflict's commands too
    lines = _screen_lines(_on_a_terminal(argv))
    assert len(lines) > 5
    wide = [line for line in lines if len(line) > 80 and " " in line.strip()]
    assert not wide, wide
    piped = subprocess.run(
        [sys.executable, "-c", CONFSOLVE, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert any(len(line) > 80 for line in (piped.stdout + piped.stderr).split("\n"))  # grep's lines, whole


def test_a_matrix_on_a_narrow_terminal_comes_in_blocks_of_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # main 9c915d2: `matrix attention_backend gpu_arch` was 138 columns wide on an 80-column terminal
    from solver import load_pack
    from solver.reasoning.pictures import compatibility
    from solver.render import matrix, text

    m = compatibility(load_pack(str(ROOT / "tests" / "fixtures" / "packs" / "toy")), "quant", "gpu")
    whole = matrix.render(m, "text")
    table = whole.split("\n\n")[0].split("\n")
    room = max(len(line) for line in table) - 6
    monkeypatch.setattr(text, "tty_width", lambda: room)
    blocks = matrix.render(m, "text").split("\n\n")
    shown = [block.split("\n") for block in blocks[:-1]]
    assert len(shown) >= 2 and all(len(line) <= room for block in shown for line in block)
    # every block starts with the row names, and together they hold every column of the whole table
    assert all([line.split()[0] for line in block] == [line.split()[0] for line in table] for block in shown)
    label = table[0].split("  ")[0]  # `quant \\ gpu`
    columns = [w for block in shown for w in block[0].removeprefix(label).split()]
    assert columns == table[0].removeprefix(label).split()
    assert blocks[-1] == whole.split("\n\n")[-1]  # the footnotes
    monkeypatch.setattr(text, "tty_width", lambda: None)
    assert matrix.render(m, "text") == whole  # piped: one table, as before


def test_every_help_fits_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # main 9c915d2: `schema --help` listed its 19 kinds as a 190-column metavar
    from solver.cli.commands import COMMANDS, main

    monkeypatch.setenv("COLUMNS", "80")
    for command in ["", *(c for c, (_, listed) in COMMANDS.items() if listed)]:
        with pytest.raises(SystemExit):
            main([command, "--help"] if command else ["--help"])
        out = capsys.readouterr().out
        assert out and not [line for line in out.split("\n") if len(line) > 80], command


def test_an_apostrophe_in_prose_is_no_quote() -> None:
    line = "  - rule x: vLLM's own check (verify_with_parallel_config), kept so its words are the refusal's"
    assert all(len(part) <= 60 for part in fold(line, 60).split("\n"))


def test_a_list_item_folds_under_its_text() -> None:
    item = "  - the launch command's model m: no such file or directory (give a local config.json or model"
    second = fold(item, 60).split("\n")[1]
    assert second.startswith("    ") and second[4] != " "


def test_a_mistyped_command_says_which_it_may_be(capsys: pytest.CaptureFixture[str]) -> None:
    # main 9c915d2: "invalid choice: 'reslove' (choose from 'resolve', ..., '__complete', ...)"
    from solver.cli.commands import main

    with pytest.raises(SystemExit) as ended:
        main(["reslove"])
    err = capsys.readouterr().err
    assert ended.value.code == 2 and "no command 'reslove'; did you mean resolve?" in err
    assert "__complete" not in err
