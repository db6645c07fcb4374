"""Launch commands confsolve writes, fed to SGLang 0.5.23's own argument parser (-m long).

Runs benchmarks/argv_oracle.py against the oracle environment (skipped without it): every
written command must be accepted and read back as resolved.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("ORACLE_VENV", "/work/oracle-sglang"))


@pytest.mark.long
@pytest.mark.skipif(not (VENV / "bin" / "python").exists(), reason="no SGLang oracle venv")
def test_sglang_parser_accepts_every_written_command() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "argv_oracle.py"),
            "--count",
            "120",
            "--seed",
            "1",
            "--venv",
            str(VENV),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
