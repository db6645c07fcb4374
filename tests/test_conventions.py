"""Conventions a user and a packager expect: `--version`, the licence and metadata, the
pre-commit hooks, colours that follow NO_COLOR / FORCE_COLOR / --color, and notes printed
before a long table."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

import pytest
from hostile import ROOT, sglang_pack

import constraints
from solver.cli.commands import main

FACTS = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]
ADJUSTED = [*FACTS, "--set", "attention_backend=fa3", "--set", "kv_cache_dtype=fp8_e5m2"]
ESC = "\x1b["


def test_version_names_confsolve_and_every_shipped_pack(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"confsolve {metadata.version('confsolve')}"
    for name in constraints.shipped_packs():
        directory = constraints.pack_directory(name)
        assert directory is not None
        version = tomllib.loads((directory / "pack.toml").read_text())["pack"]["version"]
        assert f"pack {name} {version}" in out


def test_the_licence_file_matches_the_metadata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "BSD-3-Clause"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in text
    assert project["authors"] and project["classifiers"]
    assert "LICENSE" in project["license-files"]


def test_the_build_asks_for_a_setuptools_that_reads_that_metadata() -> None:
    # `license` as an SPDX string and `license-files` are PEP 639, read from setuptools 77 on:
    # with the floor at 68, a build with setuptools 68-76 (`--no-build-isolation`, an index
    # that caps it) failed: "`project.license` must be valid exactly by one definition".
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(config["project"]["license"], str) and config["project"]["license-files"]
    (floor,) = [r for r in config["build-system"]["requires"] if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", floor)
    assert found is not None and int(found.group(1)) >= 77, floor


def test_pre_commit_runs_ruff_ruff_format_and_mypy() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"] for repo in config["repos"] for hook in repo["hooks"]}
    assert {"ruff", "ruff-format", "mypy"} <= hooks


def _colour_environment(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Exactly `env` of the two colour variables, whatever the shell running the tests has."""
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(
    ("env", "argv", "coloured"),
    [
        ({}, [], False),  # not a terminal
        ({"FORCE_COLOR": "1"}, [], True),
        ({"FORCE_COLOR": "0"}, [], False),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, [], False),
        ({"NO_COLOR": "1"}, ["--color", "always"], True),
        ({"FORCE_COLOR": "1"}, ["--color", "never"], False),
        ({}, ["--color=always"], True),
    ],
)
def test_colour_follows_no_color_force_color_and_the_option(
    env: dict[str, str],
    argv: list[str],
    coloured: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sglang_pack()
    _colour_environment(monkeypatch, env)
    assert main([*argv, "resolve", *FACTS]) == 0
    assert (ESC in capsys.readouterr().out) is coloured
    assert main(["resolve", *FACTS, *argv]) == 0  # after the command, too
    assert (ESC in capsys.readouterr().out) is coloured


@pytest.mark.parametrize(("env", "coloured"), [({"FORCE_COLOR": "1"}, True), ({"NO_COLOR": "1"}, False)])
def test_check_paints_its_notices_as_resolve_does(
    env: dict[str, str], coloured: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # (on 7b8e94c `check` never painted its ADJUSTED / WARNING / ASSUMED lines, not even with
    # FORCE_COLOR or --color always, where `resolve` did: a newcomer's walk of round 17)
    sglang_pack()
    _colour_environment(monkeypatch, env)
    assert main(["check", *ADJUSTED]) == 0
    out = capsys.readouterr().out
    assert "ADJUSTED --attention-backend: fa3 -> triton" in re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert (ESC in out) is coloured


def test_adjustments_and_warnings_come_before_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    sglang_pack()
    assert main(["resolve", *ADJUSTED]) == 0
    lines = capsys.readouterr().out.splitlines()
    first_note = next(i for i, line in enumerate(lines) if line.startswith(("ADJUSTED", "WARNING")))
    first_group = next(i for i, line in enumerate(lines) if line.startswith("["))
    assert first_note < first_group
    assert any(line.startswith("ADJUSTED --attention-backend: fa3 -> triton") for line in lines[:first_group])


def test_the_oracle_report_outside_the_projects_environment_says_which_interpreter() -> None:
    """`python benchmarks/oracle_report.py` with an interpreter that lacks the dependencies (here:
    no site-packages at all) ends with one line naming the interpreter to use, not a traceback
    in the middle of the replay; and it writes nothing (the tracked results file is rewritten
    only with --write)."""
    import subprocess
    import sys

    results = ROOT / "benchmarks" / "results" / "oracle.json"
    before = results.stat().st_mtime_ns if results.exists() else None
    done = subprocess.run(
        [sys.executable, "-S", str(ROOT / "benchmarks" / "oracle_report.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "lacks constraint" in done.stderr and ".venv/bin/python benchmarks/oracle_report.py" in done.stderr
    assert (results.stat().st_mtime_ns if results.exists() else None) == before
