"""A first `confsolve check`'s start: what was changed to make it cheaper must not change an answer.

Two changes (README, performance and "Conventions and libraries"): pack files are parsed by
tomli's compiled wheel instead of the standard library's tomllib, kept to TOML 1.0 as tomllib
reads it; and the one-question commands end without the interpreter's teardown once their answer
is flushed, unless something still waits for the exit (an atexit handler, another thread).
The time itself is measured by `benchmarks/run.py --only cli`, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import constraints
from solver.errors import pack_problems
from solver.pack.files import parse_toml

ROOT = Path(__file__).resolve().parent.parent
REQUEST = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]


@pytest.mark.parametrize("name", constraints.shipped_packs())
def test_every_shipped_pack_file_parses_as_tomllib_parses_it(name: str) -> None:
    for path in sorted(constraints.pack_directory(name).glob("*.toml")):
        problems = pack_problems()
        raw = path.read_bytes()
        assert parse_toml(path.name, raw, problems) == tomllib.loads(raw.decode()), path
        assert problems.problems == []


@pytest.mark.parametrize(
    "text",
    [
        "a = { b = 1,\n  c = 2 }\n",  # a multi-line inline table (TOML 1.1)
        'a = "\\e[31m"\n',  # the \e escape (TOML 1.1)
        'a = "\\x41"\n',  # the \x escape (TOML 1.1)
    ],
)
def test_a_pack_file_is_toml_1_0_as_tomllib_reads_it(text: str) -> None:
    """tomli 2.4 and later read TOML 1.1; a pack is TOML 1.0, so that every tool that reads it
    (tomllib, editors, the pack's own tests) reads the same document."""
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    problems = pack_problems()
    assert parse_toml("x.toml", text.encode(), problems) is None
    assert [p.message.split(":")[0] for p in problems.problems] == ["not valid TOML"]
    assert problems.problems[0].line == 1


def _confsolve(args: list[str], *, prelude: str = "", cache: Path) -> subprocess.CompletedProcess[str]:
    """`confsolve ARGS` as its own process (as the console script runs it), after `prelude`."""
    code = (
        "import sys\n"
        f"{prelude}\n"
        f"sys.argv = ['confsolve', *{args!r}]\n"
        "from solver.cli.commands import main\n"
        "raise SystemExit(main())\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_one_question_command_ends_with_its_whole_answer_and_its_code(tmp_path: Path) -> None:
    """The answer is flushed before the process ends: the resolve document (~20 KB) arrives whole,
    and each exit code (0, 1, 2) is the command's own."""
    done = _confsolve(["resolve", *REQUEST, "--json"], cache=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "resolved"
    conflict = _confsolve(
        ["check", *REQUEST[:2], "--set", "gpu_arch=sm120", *REQUEST[4:], "--set", "attention_backend=fa3"],
        cache=tmp_path,
    )
    assert conflict.returncode == 1 and conflict.stdout.startswith("conflict")
    bad = _confsolve(["check", "--set", "gpu_arch=H10"], cache=tmp_path)
    assert bad.returncode == 2 and "did you mean" in bad.stderr


def test_the_usual_exit_runs_when_something_waits_for_it(tmp_path: Path) -> None:
    """An atexit handler (a program that registered one, a finalizer) still runs: the process then
    ends the usual way."""
    prelude = "import atexit\natexit.register(lambda: print('atexit ran', file=sys.stderr))"
    done = _confsolve(["check", *REQUEST], prelude=prelude, cache=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("ok:")
    assert "atexit ran" in done.stderr


def test_with_nothing_waiting_the_teardown_is_skipped(tmp_path: Path) -> None:
    """The saving itself: an object that would be finalised by the interpreter's teardown is not,
    for `check`; for a command not in ENDS_AT_ONCE (`show`) the teardown runs."""
    prelude = (
        "class Witness:\n"
        "    def __del__(self):\n"
        "        print('teardown ran', file=sys.stderr)\n"
        "witness = Witness()"
    )
    quick = _confsolve(["check", *REQUEST], prelude=prelude, cache=tmp_path)
    assert quick.returncode == 0 and quick.stdout.startswith("ok:")
    assert "teardown ran" not in quick.stderr
    usual = _confsolve(["packs"], prelude=prelude, cache=tmp_path)
    assert usual.returncode == 0
    assert "teardown ran" in usual.stderr


def test_without_tomli_the_standard_librarys_parser_gives_the_same_documents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An environment without tomli (made before it was a dependency, or a distribution's
    packages) still loads packs, with tomllib, and the same problems for a broken file."""
    raw = (constraints.pack_directory("sglang") / "attention.toml").read_bytes()
    with_tomli = parse_toml("attention.toml", raw, pack_problems())
    monkeypatch.setitem(sys.modules, "tomli", None)  # `import tomli` now raises ImportError
    assert parse_toml("attention.toml", raw, pack_problems()) == with_tomli
    problems = pack_problems()
    assert parse_toml("x.toml", b"a = {b = 1,\n c = 2}\n", problems) is None
    found = problems.problems
    assert found[0].message.startswith("not valid TOML") and found[0].line == 1


def test_the_console_script_runs_its_command_with_fewer_young_collections(tmp_path: Path) -> None:
    """`confsolve` (`solver._command_line`) runs the whole command, its imports included, with the
    collector's raised first threshold (`engine.collector.fewer_collections`), and puts the host's
    back after it (fails on a0ebea6: 700 throughout, ~50 young collections in a first `check`)."""
    code = (
        "import gc, sys\n"
        "sys.argv = ['confsolve', 'packs']\n"
        "import solver\n"
        "from solver.cli import commands\n"
        "seen = []\n"
        "commands.main = lambda: seen.append(gc.get_threshold()[0]) or 0\n"
        "code = solver._command_line()\n"
        "print(seen[0], gc.get_threshold()[0], code)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    from solver.engine.collector import _YOUNG

    assert done.stdout.split() == [str(_YOUNG), "700", "0"], done.stderr


def test_the_benchmarks_compile_a_tree_first_whatever_the_shell_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tree timed without its bytecode while PYTHONDONTWRITEBYTECODE is set compiles every module
    # it imports in every process (round 28's base tree): the A/B benchmarks compile each tree
    # first and say how many modules were missing or stale (benchmarks/timing.with_bytecode).
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    from timing import with_bytecode

    (tmp_path / "solver").mkdir()
    module = tmp_path / "solver" / "first.py"
    module.write_text("X = 1\n")
    (tmp_path / "constraints").mkdir()
    (tmp_path / "constraints" / "__init__.py").write_text("")
    assert with_bytecode(tmp_path).startswith("bytecode: 2 modules were missing or stale")
    assert with_bytecode(tmp_path).startswith("bytecode: current")
    module.write_text("X = 22\n")  # changed: its bytecode is stale
    assert with_bytecode(tmp_path).startswith("bytecode: 1 modules were missing or stale")
    import importlib.util

    assert Path(importlib.util.cache_from_source(str(module))).is_file()
