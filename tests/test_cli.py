"""The command line keeps the contract: exit codes, JSON shapes, flag spellings, no tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run

from solver.cli.commands import COMMANDS

TOY = str(Path(__file__).parent / "fixtures" / "packs" / "toy")


def test_resolve_json_has_schema_status_values_and_provenance(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "resolve", "--pack", TOY, "--set", "gpu=b200", "--set", "quant=fp4", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["schema"] == 1 and doc["status"] == "resolved"
    assert doc["pack"] == {"name": "toy", "version": "1"}
    assert set(doc["values"]) == {"gpu", "quant", "kernel", "fusion", "tp", "ep"}
    assert doc["provenance"]["kernel"] == {
        "kind": "preference",
        "rule": "kernel-fp4",
        "because": "trtllm is fastest for fp4",
        "rejected": [],
        "source": None,
    }
    assert doc["provenance"]["gpu"]["kind"] == "fact"


def test_rejected_values_carry_minimal_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    # fp4 on B200 prefers trtllm, but the user asked for fusion, which trtllm cannot do.
    code, out, _ = run(
        capsys,
        "resolve",
        "--pack",
        TOY,
        "--set",
        "gpu=b200",
        "--set",
        "quant=fp4",
        "--set",
        "fusion=true",
        "--json",
    )
    doc = json.loads(out)
    assert code == 0
    assert doc["values"]["kernel"] == "cutlass"
    assert doc["provenance"]["kernel"]["kind"] == "preference"
    assert doc["provenance"]["kernel"]["rejected"] == [
        {"value": "trtllm", "because": ["trtllm-no-fusion", "fusion=true"]}
    ]


def test_rule_provenance_names_every_rule_that_leaves_one_value(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "resolve",
        "--pack",
        TOY,
        "--set",
        "gpu=a100",
        "--set",
        "quant=fp8",
        "--set",
        "fusion=true",
        "--json",
    )
    prov = json.loads(out)["provenance"]["kernel"]
    assert code == 0 and prov["kind"] == "rule"
    assert "SM90+" in prov["because"] and "fusion" in prov["because"]


def test_conflict_exits_1_with_minimal_conflict_and_verified_repairs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        capsys, "resolve", "--pack", TOY, "--set", "gpu=h100", "--set", "quant=fp4", "--set", "tp=8", "--json"
    )
    doc = json.loads(out)
    assert code == 1
    assert doc["schema"] == 1 and doc["status"] == "conflict"
    assert sorted(p["field"] for p in doc["conflict"]["pins"]) == ["gpu", "quant"]
    assert [r["id"] for r in doc["conflict"]["rules"]] == ["fp4-needs-b200"]
    assert doc["repairs"], "a conflict offers repairs"
    first = doc["repairs"][0]
    assert first["unset"] == ["quant"] and first["values"]["quant"] != "fp4"
    assert "--quant fp4" in doc["message"] and "fp4-needs-b200" in doc["message"]


def test_unknown_value_exits_2_with_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "resolve", "--pack", TOY, "--set", "gpu=b200", "--set", "kernel=cutlas", "--json"
    )
    doc = json.loads(out)
    assert code == 2
    assert doc["status"] == "error" and doc["error"]["type"] == "InvalidInput"
    [issue] = doc["error"]["issues"]
    assert issue["field"] == "kernel" and issue["value"] == "cutlas"
    assert issue["did_you_mean"] == ["cutlass"]


def test_every_bad_field_is_reported_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "resolve",
        "--pack",
        TOY,
        "--set",
        "gpux=b200",
        "--set",
        "tp=3",
        "--set",
        "fusion=maybe",
        "--json",
    )
    assert code == 2
    fields = [i["field"] for i in json.loads(out)["error"]["issues"]]
    assert fields == ["gpux", "tp", "fusion"]
    assert json.loads(out)["error"]["issues"][0]["did_you_mean"] == ["gpu"]


@pytest.mark.parametrize("item", ["kernel", "=x", "kernel"])
def test_malformed_set_exits_2(capsys: pytest.CaptureFixture[str], item: str) -> None:
    code, _, err = run(capsys, "resolve", "--pack", TOY, "--set", item)
    assert code == 2 and "--set" in err and "Traceback" not in err


def test_kebab_case_and_flag_forms_name_the_same_field(capsys: pytest.CaptureFixture[str]) -> None:
    pack_args = ["resolve", "--pack", TOY, "--set", "gpu=b200", "--json"]
    code, out, _ = run(capsys, *pack_args, "--set=--kernel=cutlass")
    assert code == 0 and json.loads(out)["values"]["kernel"] == "cutlass"


def test_auto_spelling_means_unset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "resolve",
        "--pack",
        TOY,
        "--set",
        "gpu=b200",
        "--set",
        "quant=fp4",
        "--set",
        "kernel=auto",
        "--json",
    )
    assert code == 0 and json.loads(out)["provenance"]["kernel"]["kind"] == "preference"


def test_missing_required_fact_says_what_to_give(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "resolve", "--pack", TOY, "--set", "quant=fp8")
    assert code == 2 and "--set gpu=VALUE" in err


def test_adjustment_is_reported_and_strict_turns_it_into_a_conflict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [
        "resolve",
        "--pack",
        TOY,
        "--set",
        "gpu=h100",
        "--set",
        "quant=none",
        "--set",
        "kernel=cutlass",
        "--json",
    ]
    code, out, _ = run(capsys, *args)
    doc = json.loads(out)
    assert code == 0
    assert doc["adjustments"] == [
        {
            "field": "kernel",
            "requested": "cutlass",
            "resolved": "triton",
            "rule": "h100-unquantized-triton",
            "because": "on H100 unquantized models always run triton kernels; drop --kernel",
        }
    ]
    assert doc["provenance"]["kernel"]["kind"] == "adjusted"
    code, out, _ = run(capsys, *args, "--strict")
    assert code == 1 and json.loads(out)["conflict"]["rules"][0]["id"] == "h100-unquantized-triton"


def test_warnings_are_returned(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "resolve",
        "--pack",
        TOY,
        "--set",
        "gpu=h100",
        "--set",
        "quant=fp8",
        "--set",
        "kernel=triton",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["warnings"] == [
        {"rule": "fp8-triton-slow", "message": "fp8 with triton is slow on new GPUs; prefer --kernel cutlass"}
    ]


def test_why_names_the_deciding_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "why", "fusion", "--pack", TOY, "--set", "gpu=b200", "--set", "quant=fp4")
    assert code == 0
    assert "fusion = false" in out and "trtllm-no-fusion" in out and "kernel=trtllm" in out


def test_choices_json_lists_possible_and_excluded_with_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "choices", "kernel", "--pack", TOY, "--set", "gpu=a100", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "choices"
    assert doc["choices"]["kernel"]["possible"] == ["triton", "trtllm"]
    assert doc["choices"]["kernel"]["excluded"] == {
        "cutlass": {
            "pins": [{"field": "gpu", "value": "a100", "source": "fact"}],
            "rules": ["cutlass-not-a100"],
        }
    }


def test_check_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", "--pack", TOY, "--set", "gpu=b200")[0] == 0
    code, out, _ = run(capsys, "check", "--pack", TOY, "--set", "gpu=h100", "--set", "quant=fp4")
    assert code == 1 and "fp4-needs-b200" in out
    assert run(capsys, "check", "--pack", TOY, "--set", "gpu=h10")[0] == 2


@pytest.mark.parametrize("fmt", ["dot", "mermaid", "json"])
def test_graph_formats(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = run(capsys, "graph", "--pack", TOY, "--format", fmt)
    assert code == 0 and "kernel" in out
    if fmt == "json":
        doc = json.loads(out)
        assert doc["order"].index("quant") < doc["order"].index("kernel")


def test_broken_pack_exits_3_and_lists_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pack.toml").write_text('[pack]\nname = "bad"\nversion = "1"\nfiles = ["a.toml"]\n')
    (tmp_path / "a.toml").write_text(
        '[field.x]\nkind = "option"\ndomain = ["a", "b"]\n'
        '[[rule]]\nid = "r1"\nrequire = "x == \'c\'"\nbecause = "b"\nsource = "s"\n'
        '[[rule]]\nid = "r1"\nrequire = "y == 1"\nbecause = ""\nsource = "s"\n'
    )
    code, _, err = run(capsys, "resolve", "--pack", str(tmp_path), "--set", "x=a")
    assert code == 3
    for needle in ("'c' is not a value of x", "duplicate id", "`because` is empty", "unknown name 'y'"):
        assert needle in err
    assert "Traceback" not in err


def test_unknown_pack_name_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "resolve", "--pack", "sglangg", "--set", "platform=cuda")
    assert code == 2 and "sglang" in err


def test_python_dash_m_solver_is_the_same_program() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "solver", "resolve", "--pack", TOY, "--set", "gpu=b200", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["status"] == "resolved"


# --- start-up: only the command that runs is built, and only what it needs is imported ----------


def test_placeholders_read_like_the_commands_they_stand_for() -> None:
    """`confsolve --help` and the invalid-choice error list every command with the line COMMANDS
    gives it, and that line is the one the command's own parser registers."""
    import argparse

    from solver.cli.commands import COMMANDS, build_parser

    def listing(parser: argparse.ArgumentParser) -> tuple[list[str], list[tuple[str, str | None]]]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return list(sub.choices), [(a.dest, a.help) for a in sub._choices_actions]

    full = build_parser()
    assert listing(full) == listing(build_parser(False))
    assert full.format_help() == build_parser(False).format_help()
    names, lines = listing(full)
    assert names == list(COMMANDS)
    assert lines == [(n, h) for n, (_, h) in COMMANDS.items() if h is not None]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_named_command_is_built_alone_and_reads_as_with_all(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Building the command that runs builds it (and the commands its function registers) and no
    placeholder for the others (fails on a0ebea6: ~20 placeholder parsers, half of building
    `check`'s); its help, its usage errors and the top-level usage read as with all built."""
    import argparse

    from solver.cli.commands import build_parser

    def sub_of(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    one, full = build_parser(name), build_parser()
    assert list(sub_of(one).choices) == [n for n in COMMANDS if COMMANDS[n][0] == COMMANDS[name][0]]
    assert one.format_usage() == full.format_usage()
    assert sub_of(one).choices[name].format_help() == sub_of(full).choices[name].format_help()
    said = []
    for parser in (one, full):
        for argv in ([name, "--no-such-option"], [name, "--budget", "x", "--no-such-option"]):
            with pytest.raises(SystemExit) as ended:
                parser.parse_args(argv)
            said.append((ended.value.code, capsys.readouterr()))
    assert said[:2] == said[2:]


@pytest.mark.parametrize(
    ("argv", "absent"),
    [
        (["--help"], ["pydantic", "solver.model", "solver.errors", "solver.engine.csp", "json"]),
        (["check", "--help"], ["pydantic", "solver.model", "solver.engine.csp"]),
        (
            ["check", "--pack", TOY, "--set", "gpu=b200"],
            [
                "solver.reasoning.conflicts",
                "solver.lint.checks",
                "solver.engine.count",
                "solver.engine.modelcounter",
                "solver.engine.countlimit",
                "solver.lint.diff",
                "solver.reasoning.pictures",
                "solver.render.schema",
                "solver.cli.completion",
            ],
        ),
    ],
)
def test_start_up_imports_only_what_the_command_needs(argv: list[str], absent: list[str]) -> None:
    script = (
        "import sys\n"
        "from solver.cli.commands import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print([m for m in {absent!r} if m in sys.modules], file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr


def test_a_first_check_of_a_shipped_pack_imports_none_of_what_it_never_uses(tmp_path: Path) -> None:
    """An empty cache, the SGLang pack read from its prebuilt form (its bytecode as pip writes
    it): a `check` in text imports no module it does not use (fails on a1e60f3: argparse's
    formatter imported shutil, and bz2, lzma and zlib with it, to ask the terminal's width; the
    disk cache imported json, which it never reads or writes then; the reasoning imported the
    launch-command reader, with difflib, for one function; on a0ebea6: hashlib, which loads
    OpenSSL's libcrypto, for the sha256 the interpreter has built in; on 487ea0a: dataclasses, with
    inspect, ast, dis, tokenize and linecache, for classes `solver.frozen` now makes itself, ast
    again for the condition parser and the syntax walks, and tokenize for the expansion of named
    conditions, none of which a start from the prebuilt form runs; copy, for one shallow copy)."""
    import importlib.util
    import py_compile
    from importlib.util import cache_from_source

    from solver.pack import prebuilt

    module = Path(__file__).parent.parent / "constraints" / "sglang" / f"{prebuilt.MODULE}.py"
    if not prebuilt._compiled(module):  # a checkout run with PYTHONDONTWRITEBYTECODE: as pip would
        py_compile.compile(str(module), cfile=cache_from_source(str(module)), doraise=True)
    absent = ["shutil", "bz2", "lzma", "json", "difflib", "solver.inputs.launch", "tomli", "pydantic"]
    absent += [
        "dataclasses",
        "inspect",
        "dis",
        "tokenize",
        "linecache",
        "ast",
        "solver.pack.exprparse",
        "copy",
    ]
    if any(importlib.util.find_spec(name) for name in ("_sha256", "_sha2")):  # (not in FIPS builds)
        absent += ["hashlib", "_hashlib"]
    script = (
        "import sys\n"
        "from solver.cli.commands import main\n"
        "code = main(['check', '--set', 'platform=cuda', '--set', 'gpu_arch=sm90', '--set', 'tp_size=8'])\n"
        f"print(code, [m for m in {absent!r} if m in sys.modules], file=sys.stderr)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("CONFSOLVE_NO_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.stderr.strip().splitlines()[-1] == "0 []", done.stderr


def test_a_first_check_of_a_shipped_pack_compiles_no_pattern_for_files_it_never_parses(
    tmp_path: Path,
) -> None:
    """The regular expressions that check a pack's TOML, place its problems in their files,
    check names read from files and word a mistyped command are compiled where they are used:
    a `check` from the prebuilt form compiles none of them (fails on 487ea0a, which compiled
    all 13 when their modules were imported: ~0.85 ms of the start)."""
    import py_compile
    from importlib.util import cache_from_source

    from solver.pack import prebuilt

    module = Path(__file__).parent.parent / "constraints" / "sglang" / f"{prebuilt.MODULE}.py"
    if not prebuilt._compiled(module):  # as in the test above
        py_compile.compile(str(module), cfile=cache_from_source(str(module)), doraise=True)
    unused = {
        "solver.pack.files": ["_TOML_SKIP", "_NOT_BRACKET", "_DOTTED_RUN", "_CONTROL"],
        "solver.pack.text": ["_HEADER", "_KEY", "_ID", "_AT_LINE"],
        "solver.pack.loader": ["_FIELD_NAME", "_UNKNOWN_NAME"],
        "solver.pack.named": ["_UPPER_NAME"],
        "solver.pack.crosscheck": ["_ID"],
        "solver.cli.terminal": ["_INVALID_COMMAND"],
    }
    script = (
        "import importlib, re, sys\n"
        "compiled = []\n"
        "real = re.compile\n"
        "def recorded(pattern, flags=0):\n"
        "    compiled.append(getattr(pattern, 'pattern', pattern))\n"
        "    return real(pattern, flags)\n"
        "re.compile = recorded\n"
        "from solver.cli.commands import main\n"
        "code = main(['check', '--set', 'platform=cuda', '--set', 'gpu_arch=sm90', '--set', 'tp_size=8'])\n"
        "texts = []\n"
        f"for name, attrs in {unused!r}.items():\n"
        "    for attr in attrs:\n"
        "        value = getattr(importlib.import_module(name), attr)\n"
        "        texts.append(getattr(value, 'pattern', value))\n"
        "print(code, len(texts), [t for t in texts if t in compiled], file=sys.stderr)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("CONFSOLVE_NO_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.stderr.strip().splitlines()[-1] == "0 13 []", done.stderr


@pytest.mark.parametrize("entry", ["console script", "python -m solver"])
def test_a_ctrl_c_while_the_command_line_is_imported_ends_it_quietly(entry: str) -> None:
    """Ctrl-C (a KeyboardInterrupt) during the import of `solver.cli.commands` itself, here
    raised by the import of argparse: exit 130 and nothing on stderr, as during a command (fails
    on a1e60f3: a traceback and exit 1; seen with SIGINT sent 0.3 s after the start)."""
    root = Path(__file__).parent.parent
    script = (
        "import sys, runpy, tomllib\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'argparse':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        f"if {entry!r} == 'console script':\n"
        f"    project = tomllib.load(open({str(root / 'pyproject.toml')!r}, 'rb'))['project']\n"
        "    spec = project['scripts']['confsolve']\n"
        "    module, _, function = spec.partition(':')\n"
        "    raise SystemExit(getattr(__import__(module, fromlist=[function]), function)())\n"
        "runpy.run_module('solver', run_name='__main__')\n"
    )
    argv = [sys.executable, "-c", script, "check", "--set", "platform=cuda"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (130, "")


def test_serve_refuses_a_host_name_the_socket_cannot_spell(capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 naming the value (fails on a1e60f3: an internal error, exit 70)."""
    code, _, err = run(capsys, "serve", "--pack", TOY, "--host", "\u202e", "--port", "0")
    assert code == 2 and "--host '\\u202e' is not a host name" in err


def test_an_option_before_the_command_still_builds_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--budget", "100000", "count", "--pack", TOY, "--set", "gpu=b200")
    assert code == 0 and "valid configurations" in out
    code, out, _ = run(capsys, "--budget=100000", "check", "--pack", TOY, "--set", "gpu=b200")
    assert code == 0 and out.startswith("ok")


def test_a_check_of_a_well_typed_pack_never_imports_pydantic(tmp_path: Path) -> None:
    """A pack whose tables already have their exact types is built without pydantic the first
    time it is read (pydantic words the problems of one that does not, see test_pack_errors);
    after that, a `check` rebuilds the pack from the cache without it either."""
    script = (
        "import sys\n"
        "from solver.cli.commands import main\n"
        "try:\n"
        f"    main(['check', '--pack', {TOY!r}, '--set', 'gpu=b200'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('pydantic' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("CONFSOLVE_NO_CACHE", None)
    seen = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, env=env)
        .stderr.strip()
        .splitlines()[-1]
        for _ in range(2)
    ]
    assert seen == ["False", "False"]


def test_public_names_are_not_shadowed_by_submodules() -> None:
    """Importing every submodule leaves each public name of `solver` what `__all__` promises: a
    submodule named like a public function (once `solver/explain.py`) rebinds the package
    attribute, so `solver.explain` became a module in any process that had imported it."""
    import importlib
    import pkgutil

    import solver

    before = {name: getattr(solver, name) for name in solver.__all__}
    for info in pkgutil.walk_packages(solver.__path__, "solver."):
        if info.name.split(".")[-1] != "__main__":
            importlib.import_module(info.name)
    assert {name: getattr(solver, name) for name in solver.__all__} == before


@pytest.mark.parametrize(
    ("command", "flag", "taken_by"),
    [
        (["count"], "--deny-warnings", "resolve, check only"),
        (["count"], "--strict", "resolve, check, why, choices only"),
        (["matrix", "gpu", "kernel"], "--strict", "resolve, check, why, choices only"),
        (["why", "kernel"], "--deny-warnings", "resolve, check only"),
        (["choices"], "--deny-warnings", "resolve, check only"),
    ],
)
def test_a_mode_a_command_would_ignore_is_refused(
    capsys: pytest.CaptureFixture[str], command: list[str], flag: str, taken_by: str
) -> None:
    # count, matrix, why and choices took --strict / --deny-warnings and changed nothing (a count
    # with --deny-warnings counted the configurations that warn): said, exit 2, never ignored.
    with pytest.raises(SystemExit) as exited:  # (argparse's usage error)
        run(capsys, *command, "--pack", TOY, "--set", "gpu=b200", flag)
    out, err = capsys.readouterr()
    assert exited.value.code == 2 and not out
    assert f"unrecognized arguments: {flag} ({flag} is for {taken_by})" in err


def test_the_modes_stay_with_the_commands_that_honour_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--pack", TOY, "--set", "gpu=b200", "--strict", "--deny-warnings")
    assert code in (0, 1) and out
    assert run(capsys, "choices", "--pack", TOY, "--set", "gpu=b200", "--strict")[0] == 0


def test_a_deadline_offers_set_only_to_commands_that_take_it() -> None:
    # `lint --deadline 1` said "narrow the request with --set", which lint refuses.
    import argparse

    from solver.cli.commands import build_parser
    from solver.errors import TAKES_SET, DeadlineExceeded

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    takes = {name for name, p in sub.choices.items() if "--set" in p._option_string_actions}
    assert takes == TAKES_SET
    assert "--set" not in str(DeadlineExceeded("lint", "rules", 1))
    assert "narrow the request with --set" in str(DeadlineExceeded("count", "counting", 1))


@pytest.mark.parametrize(
    ("words", "flag"),
    [
        (["--model-config", ""], "--model-config"),
        (["--", "python", "-m", "sglang.launch_server", "--model-path", ""], "--model-path"),
    ],
)
def test_an_empty_model_path_is_bad_input(
    words: list[str],
    flag: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An empty model path is refused, naming the option and the value (fails on a0ebea6: dropped
    in silence, exit 0 with the model facts assumed; `Path("")` would have been the current
    directory, whose config.json this one is)."""
    (tmp_path / "config.json").write_text('{"architectures": ["DeepseekV3ForCausalLM"]}')
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "check", "--set", "platform=cuda", "--set", "gpu_arch=sm90", *words)
    assert (code, out) == (2, "")
    assert f"{flag} '': an empty path" in err
