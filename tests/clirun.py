"""Running the `confsolve` command line in-process for tests: the exit code and what it printed."""

from __future__ import annotations

import pytest

from solver.cli.commands import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`confsolve ARGV...` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
