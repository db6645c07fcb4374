"""Packs are untrusted data: a hostile pack ends in one PackError that lists every problem, nothing
in it ever runs, and the size limits of solver/pack/loader.py and solver/pack/expr.py give clear errors.

The hostile fixture is tests/fixtures/packs/malicious/ (one rule or preference per attack, named
after it). Absurd sizes are generated into tmp. The last section pins holes that issue #8 closed
(an endless file, deep TOML nesting, huge integers, long chains, a stale cache, a file listed twice).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import MALICIOUS, ROOT, TOY, assert_clean_text, toml_str, toml_value, write_pack

import solver.pack.expr as expr
import solver.pack.files as packfiles
import solver.pack.loader as loader
from solver import DependencyCycle, PackError, load_pack, resolve
from solver.cli.commands import main
from solver.model import Field
from solver.pack.expr import ExprError

MARKER = "confsolve-pwned"


def attack_ids() -> set[str]:
    """Every rule and preference id in the malicious fixture (one per attack)."""
    ids: set[str] = set()
    for path in MALICIOUS.glob("*.toml"):
        doc = tomllib.loads(path.read_text())
        ids |= {f"rule {r['id']}" for r in doc.get("rule", [])}
        ids |= {f"preference {p['id']}" for p in doc.get("preference", [])}
    return ids


@pytest.fixture
def no_code_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """While loading: `eval` and `exec` refuse, and `compile` may only build an AST (what
    `ast.parse` does); every other use is recorded and fails the test."""
    import importlib
    import pkgutil

    import solver

    # Import every solver module now: importing runs exec, which is refused below.
    for module in pkgutil.walk_packages(solver.__path__, "solver."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    # networkx compiles its argument wrappers with exec on first use: use the graph once now, so
    # the guards see confsolve's own code whether or not the on-disk cache already holds the
    # toy pack's field order.
    from solver.pack.graph import analyse

    analyse(load_pack(TOY))
    # Conditions are generated code of ours (no pack text: solver/pack/codegen.py), compiled at
    # a function's first call unless this process or the disk cache already holds that shape:
    # call the toy pack's once now, so the guards see the same whatever ran before.
    resolve(load_pack(TOY), {}, {"gpu": "b200"})
    # pydantic builds each record's validator (importing its own modules) on first use, which a
    # toy pack served from the on-disk cache does not reach: build them now.
    from solver.model import Field, Preference, Rule

    for record in (Field, Rule, Preference):
        with contextlib.suppress(ValueError):
            record.model_validate({})
    # A class of `solver.frozen` compiles its constructor (confsolve's code, no pack text) when its
    # first record is built: build the ones loading a pack builds now, the index its problems are
    # placed with (`FileIndex`) and the parser's operands (`_Operand`: the toy pack read from the
    # disk cache parses nothing, so this test failed on 487ea0a with a warm cache, run alone).
    from solver.pack.expr import parse
    from solver.pack.text import index_of

    index_of("")
    parse("gpu == 'b200'", load_pack(TOY).fields, {})

    misuse: list[str] = []
    real_compile = builtins.compile

    def guarded_compile(
        source: Any, filename: Any, mode: str, flags: int = 0, *args: Any, **kwargs: Any
    ) -> Any:
        if not flags & 0x400:  # ast.PyCF_ONLY_AST
            misuse.append(f"compile({str(source)[:60]!r}, mode={mode!r})")
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    def refuse(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            misuse.append(f"{name}({str(args[:1])[:60]})")
            raise AssertionError(f"{name} called while loading a pack")

        return call

    monkeypatch.setattr(builtins, "compile", guarded_compile)
    monkeypatch.setattr(builtins, "eval", refuse("eval"))
    monkeypatch.setattr(builtins, "exec", refuse("exec"))
    yield misuse


def test_malicious_pack_is_one_pack_error_naming_every_attack(no_code_runs: list[str]) -> None:
    """Calls, attributes, subscripts, lambdas, comprehensions, f-strings, walrus, starred, eval,
    statements, a 10,000-character string, thousands of nested parentheses, 40-deep `not` and
    `and`: one PackError, with a problem for each rule and preference id and no other."""
    with pytest.raises(PackError) as caught:
        load_pack(MALICIOUS)
    problems = caught.value.problems
    assert {p.where for p in problems} == attack_ids()
    assert len(problems) == len(attack_ids()), [p.render() for p in problems]
    assert all(p.message.strip() and p.file == "rules.toml" for p in problems)
    assert not no_code_runs


def test_malicious_pack_messages_say_what_is_not_allowed() -> None:
    """The message names the construct and, for the size limits, the limit."""
    with pytest.raises(PackError) as caught:
        load_pack(MALICIOUS)
    by_id = {p.where: p.message for p in caught.value.problems}
    assert "Call" in by_id["rule os-system"]
    assert "Attribute" in by_id["rule attribute"]
    assert "Subscript" in by_id["rule subscript"]
    assert "ListComp" in by_id["rule list-comprehension"]
    assert "JoinedStr" in by_id["rule f-string"]
    assert "NamedExpr" in by_id["rule walrus"]
    assert str(expr.MAX_LENGTH) in by_id["rule long-string"]
    assert str(expr.MAX_LENGTH) in by_id["rule deep-parentheses-over-length"]
    assert str(expr.MAX_DEPTH) in by_id["rule deep-not"]
    assert str(expr.MAX_DEPTH) in by_id["rule deep-and"]
    assert "__builtins__" in by_id["rule unknown-name"]


def test_nothing_in_a_malicious_pack_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture's marker conditions create a file when Python evaluates them (checked first,
    so this test can fail); loading the pack, and every CLI command on it, creates nothing."""
    monkeypatch.chdir(tmp_path)
    rules = tomllib.loads((MALICIOUS / "rules.toml").read_text())
    marker_conditions = [
        r.get("when") or r.get("require") for r in rules["rule"] if r["id"].startswith("touch-marker")
    ]
    marker_conditions += [p["when"] for p in rules["preference"] if p["id"].startswith("touch")]
    assert len(marker_conditions) == 3
    for text in marker_conditions:
        eval(text, {"q": "b", "f": False, "tp": 1})  # what a naive loader would do
        assert (tmp_path / MARKER).exists()
        (tmp_path / MARKER).unlink()
    with pytest.raises(PackError):
        load_pack(MALICIOUS)
    for command in (
        ["resolve", "--set", "q=a"],
        ["check", "--set", "q=a"],
        ["show"],
        ["graph"],
        ["choices"],
        ["why", "q", "--set", "q=a"],
    ):
        code = main([*command, "--pack", str(MALICIOUS)])
        out, err = capsys.readouterr()
        assert code == 3, (command, out, err)
        assert_clean_text(out, err)
        assert "touch-marker-call" in err
    assert not (tmp_path / MARKER).exists()
    assert list(tmp_path.iterdir()) == []


def test_a_good_pack_loads_under_the_same_guards(no_code_runs: list[str]) -> None:
    """Guard for the guards: the toy pack loads and resolves with eval/exec refused, so the
    malicious pack's failure is its own."""
    loader._CACHE.clear()
    pack = load_pack(TOY)
    assert resolve(pack, {}, {"gpu": "b200"}).values["gpu"] == "b200"
    assert not no_code_runs


# --- limits --------------------------------------------------------------------------------


def one_field_pack(tmp_path: Path, domain: list[Any], name: str = "big") -> Path:
    body = '[field.a]\nkind = "option"\ndomain = [' + ", ".join(map(repr, domain)) + "]\n"
    return write_pack(tmp_path / name, {"fields.toml": body})


def test_domain_limit_is_exact(tmp_path: Path) -> None:
    """A domain of MAX_DOMAIN values loads; one more is a PackError naming the field, the size
    and the limit."""
    assert (
        len(load_pack(one_field_pack(tmp_path, list(range(loader.MAX_DOMAIN)), "ok")).fields["a"].domain)
        == loader.MAX_DOMAIN
    )
    with pytest.raises(PackError) as caught:
        load_pack(one_field_pack(tmp_path, list(range(loader.MAX_DOMAIN + 1))))
    [problem] = caught.value.problems
    assert problem.where == "field a" and problem.file == "fields.toml"
    assert f"{loader.MAX_DOMAIN + 1} values" in problem.message
    assert str(loader.MAX_DOMAIN) in problem.message.replace(f"{loader.MAX_DOMAIN + 1}", "")


@pytest.mark.long
def test_a_million_value_domain_is_refused(tmp_path: Path) -> None:
    """A domain of 10^6 values (a 7 MB file, under the file limit) is refused with the limit."""
    with pytest.raises(PackError) as caught:
        load_pack(one_field_pack(tmp_path, list(range(10**6))))
    assert "1000000 values" in str(caught.value)


def test_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    """A listed file (or pack.toml itself) one byte over MAX_FILE_BYTES is a PackError naming
    the file and the limit; it is a sparse file, so a loader that read it would be slow."""
    root = write_pack(tmp_path / "p", {"fields.toml": ""})
    with open(root / "fields.toml", "wb") as handle:
        handle.truncate(loader.MAX_FILE_BYTES + 1)
    with pytest.raises(PackError) as caught:
        load_pack(root)
    [problem] = caught.value.problems
    assert problem.file == "fields.toml" and str(loader.MAX_FILE_BYTES) in problem.message
    with open(root / "pack.toml", "ab") as handle:
        handle.truncate(loader.MAX_FILE_BYTES + 1)
    with pytest.raises(PackError) as caught:
        load_pack(root)
    assert str(loader.MAX_FILE_BYTES) in str(caught.value) and "pack.toml" in str(caught.value)


def many_fields(count: int) -> str:
    return "".join(f'[field.f{i}]\nkind = "option"\ndomain = [1, 2]\n' for i in range(count))


def many_rules(count: int) -> str:
    return "".join(
        f'[[rule]]\nid = "r{i}"\nrequire = "f0 == 1"\nbecause = "b"\nsource = "s"\n' for i in range(count)
    )


@pytest.mark.parametrize("limit", ["MAX_FIELDS", "MAX_RULES"])
def test_field_and_rule_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str) -> None:
    """At the limit a pack loads; one over, it is a PackError saying 'too large' and the limits.
    (The limits are lowered to 20 here; the real MAX_FIELDS is checked in the long run.)"""
    monkeypatch.setattr(loader, limit, 20)
    fields = many_fields(21 if limit == "MAX_FIELDS" else 1)
    ok_text = many_fields(20 if limit == "MAX_FIELDS" else 1) + (
        many_rules(20) if limit == "MAX_RULES" else ""
    )
    assert load_pack(write_pack(tmp_path / "ok", {"a.toml": ok_text}))
    text = fields + (many_rules(21) if limit == "MAX_RULES" else "")
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "big", {"a.toml": text}))
    [problem] = caught.value.problems
    assert "too large" in problem.message and "20" in problem.message


@pytest.mark.long
def test_real_field_limit(tmp_path: Path) -> None:
    """MAX_FIELDS + 1 real fields: a PackError saying 'too large', in a second or two."""
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "big", {"a.toml": many_fields(loader.MAX_FIELDS + 1)}))
    assert "too large" in str(caught.value)


FIELDS = {
    "f": Field(name="f", kind="option", domain=(False, True)),
    "q": Field(name="q", kind="option", domain=("a", "b")),
}


def test_depth_limit_is_exact() -> None:
    """MAX_DEPTH nested `not`s parse; one more is an ExprError naming the limit."""
    assert expr.parse("not " * expr.MAX_DEPTH + "f", FIELDS, {}).fields == ("f",)
    with pytest.raises(ExprError, match=str(expr.MAX_DEPTH)):
        expr.parse("not " * (expr.MAX_DEPTH + 1) + "f", FIELDS, {})


def test_length_limit_is_exact() -> None:
    """A condition of MAX_LENGTH characters parses; one more is an ExprError naming the limit."""
    body = "q == 'a'"
    assert expr.parse(body + " " * (expr.MAX_LENGTH - len(body)), FIELDS, {})
    with pytest.raises(ExprError, match=str(expr.MAX_LENGTH)):
        expr.parse(body + " " * (expr.MAX_LENGTH - len(body) + 1), FIELDS, {})


def test_limits_in_a_rule_name_the_rule(tmp_path: Path) -> None:
    """Through the loader, each limit error names the rule and its file."""
    rules = "".join(
        f'[[rule]]\nid = "{rid}"\nrequire = {toml_str(text)}\nbecause = "b"\nsource = "s"\n'
        for rid, text in [
            ("too-deep", "not " * (expr.MAX_DEPTH + 1) + "f"),
            ("too-long", "q == 'a'" + " " * expr.MAX_LENGTH),
        ]
    )
    fields = (
        '[field.f]\nkind = "option"\ndomain = [false, true]\n'
        '[field.q]\nkind = "option"\ndomain = ["a", "b"]\n'
    )
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "p", {"fields.toml": fields, "rules.toml": rules}))
    found = {p.where: p for p in caught.value.problems}
    assert set(found) == {"rule too-deep", "rule too-long"}
    assert all(p.file == "rules.toml" for p in found.values())


# --- holes closed by issue #8 (each was a strict xfail until fixed) ----------------------------


def _limited_cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """`python -m solver` with 768 MB of address space, so a runaway read fails fast."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFSOLVE_")}
    return subprocess.run(
        [sys.executable, "-m", "solver", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
        env=env,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize("victim", ["fields.toml", "pack.toml"])
def test_endless_file_is_refused(tmp_path: Path, victim: str) -> None:
    """A pack file that never ends (symlink to /dev/zero) is refused (too large, or not a regular
    file) with exit 3 and a message naming it, not read until memory runs out."""
    root = write_pack(tmp_path / "p", {"fields.toml": ""})
    (root / victim).unlink()
    (root / victim).symlink_to("/dev/zero")
    done = _limited_cli(["show", "--pack", str(root)])
    assert done.returncode == 3, done.stderr[-500:]
    assert victim in done.stderr
    assert_clean_text(done.stdout, done.stderr)


def test_deeply_nested_toml_is_a_pack_error(tmp_path: Path) -> None:
    """5,000 nested arrays in a pack file: PackError naming the file."""
    root = write_pack(tmp_path / "p", {"fields.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n"})
    with pytest.raises(PackError, match=r"fields\.toml"):
        load_pack(root)


def test_huge_integer_literal_is_a_pack_error(tmp_path: Path) -> None:
    """An integer literal of 5,000 digits in a pack file: PackError naming the file."""
    root = write_pack(
        tmp_path / "p", {"fields.toml": '[field.a]\nkind = "option"\ndomain = [' + "9" * 5000 + "]\n"}
    )
    with pytest.raises(PackError, match=r"fields\.toml"):
        load_pack(root)


def test_long_depends_on_chain_loads(tmp_path: Path) -> None:
    """A legal pack whose depends_on edges form a 3,000-field chain loads (no cycle)."""
    text = (
        "".join(
            f'[field.f{i}]\nkind = "option"\ndomain = [1, 2]\ndepends_on = ["f{i + 1}"]\n'
            for i in range(3000)
        )
        + '[field.f3000]\nkind = "option"\ndomain = [1]\n'
    )
    assert len(load_pack(write_pack(tmp_path / "p", {"a.toml": text})).fields) == 3001


def test_long_unary_chain_is_a_pack_error(tmp_path: Path) -> None:
    """`tp == - - - ... 1` with 500 minus signs: one PackError naming the rule."""
    rules = (
        '[[rule]]\nid = "minus-chain"\nrequire = '
        + toml_str("- " * 500 + "1")
        + '\nbecause = "b"\nsource = "s"\n'
    )
    fields = '[field.tp]\nkind = "option"\ndomain = [1, 2]\n'
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "p", {"fields.toml": fields, "rules.toml": rules}))
    assert [p.where for p in caught.value.problems] == ["rule minus-chain"]


@pytest.mark.parametrize("change", ["garbage", "deleted"])
def test_cache_never_hides_a_broken_file(tmp_path: Path, change: str) -> None:
    """Load a pack whose third file is empty; break that file; loading again is a PackError."""
    root = write_pack(
        tmp_path / "p",
        {n: (TOY / n).read_text() for n in ("fields.toml", "rules.toml")} | {"extra.toml": ""},
        head='[sets]\nNEW_GPUS = ["b200", "h100"]\n',
    )
    assert load_pack(root).name == "generated"
    if change == "garbage":
        (root / "extra.toml").write_text("[[[ not toml")
    else:
        (root / "extra.toml").unlink()
    with pytest.raises(PackError, match=r"extra\.toml"):
        load_pack(root)


def test_a_file_listed_twice_is_refused(tmp_path: Path) -> None:
    """`files = ["a.toml", "a.toml"]` is a PackError on pack.files, whatever a.toml holds."""
    root = write_pack(tmp_path / "p", {"a.toml": "# nothing\n"}, listed=["a.toml", "a.toml"])
    with pytest.raises(PackError) as caught:
        load_pack(root)
    assert [p.where for p in caught.value.problems] == ["pack.files"]


@pytest.mark.parametrize("kind", ["named pipe", "directory"])
def test_a_pack_file_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    """A listed file that is a FIFO (opening it would wait for a writer) or a directory: a
    PackError naming the file and what it is, at once."""
    root = write_pack(tmp_path / "p", {"fields.toml": ""})
    (root / "fields.toml").unlink()
    if kind == "named pipe":
        os.mkfifo(root / "fields.toml")
    else:
        (root / "fields.toml").mkdir()
    with pytest.raises(PackError) as caught:
        load_pack(root)
    [problem] = caught.value.problems
    assert problem.file == "fields.toml" and f"not a regular file (a {kind})" in problem.message


def test_read_bounded_refuses_a_file_that_grows_past_its_stat_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit holds on what is read, not on what stat() said (a file still being written)."""
    path = tmp_path / "a.toml"
    path.write_bytes(b"x" * 100)
    real_fstat = os.fstat

    class Small:
        def __init__(self, info: os.stat_result) -> None:
            self.st_mode, self.st_size = info.st_mode, 10

    monkeypatch.setattr(packfiles.os, "fstat", lambda fd: Small(real_fstat(fd)))
    with pytest.raises(loader.RefusedFile) as caught:
        loader.read_bounded(path, 50)
    assert caught.value.size is None and "larger than 50 bytes" in str(caught.value)
    assert loader.read_bounded(path, 100) == b"x" * 100


@pytest.mark.parametrize(
    "listed, message",
    [
        (["pack.toml"], "lists pack.toml itself"),
        (["a.toml", "b.toml"], "'b.toml' is the same file as 'a.toml'"),
    ],
)
def test_one_file_under_two_names_is_refused(tmp_path: Path, listed: list[str], message: str) -> None:
    """pack.toml listing itself, or a symlink to a listed file: each file is read once."""
    root = write_pack(tmp_path / "p", {"a.toml": "# nothing\n"}, listed=listed)
    (root / "b.toml").symlink_to("a.toml")
    with pytest.raises(PackError) as caught:
        load_pack(root)
    [problem] = caught.value.problems
    assert problem.where == "pack.files" and message in problem.message


def test_the_files_of_a_pack_are_bounded_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file under MAX_FILE_BYTES, all of them over MAX_PACK_BYTES: a PackError naming the
    file that went over and the limit; the files after it are not read."""
    monkeypatch.setattr(packfiles, "MAX_PACK_BYTES", 1000)
    files = {f"{n}.toml": f"# {n}\n" + "#" * 400 + "\n" for n in "abcd"}
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "p", files))
    [problem] = caught.value.problems
    assert problem.file == "c.toml" and "together" in problem.message and "1000" in problem.message


def test_too_many_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packfiles, "MAX_FILES", 3)
    root = write_pack(tmp_path / "p", {f"{n}.toml": "" for n in "abcd"})
    with pytest.raises(PackError, match="lists 4 files; at most 3"):
        load_pack(root)


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",  # inline tables
        "[model_config]\n" + "a." * 3000 + "b = 1\n",  # dotted keys: deep without brackets
        "[" + "a." * 3000 + "b]\nc = 1\n",  # a table header
    ],
    ids=["inline-tables", "dotted-keys", "table-header"],
)
def test_deep_tables_are_a_pack_error(tmp_path: Path, text: str) -> None:
    """However the nesting is written, more than MAX_TOML_NESTING levels: a PackError naming the
    file and the limit (no RecursionError from tomllib or from anything reading the data)."""
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "p", {"fields.toml": text}))
    [problem] = caught.value.problems
    assert problem.file == "fields.toml" and str(loader.MAX_TOML_NESTING) in problem.message


def test_nesting_limit_is_exact_and_brackets_in_strings_do_not_count(tmp_path: Path) -> None:
    """MAX_TOML_NESTING levels of arrays load; one more does not. Brackets inside strings of
    every kind, and in comments, are text: a pack full of them loads."""
    limit = loader.MAX_TOML_NESTING
    fields = '[field.a]\nkind = "option"\ndomain = [1, 2]\n'
    ok = fields + "[model_config]\nx = " + "[" * (limit - 2) + "]" * (limit - 2) + "\n"
    with pytest.raises(PackError) as parsed:  # parsed; only the [model_config] check refuses it
        load_pack(write_pack(tmp_path / "ok", {"fields.toml": ok}))
    assert "nested deeper" not in str(parsed.value) and "unknown key 'x'" in str(parsed.value)
    deep = fields + "[model_config]\nx = " + "[" * (limit + 1) + "]" * (limit + 1) + "\n"
    with pytest.raises(PackError, match=str(limit)):
        load_pack(write_pack(tmp_path / "deep", {"fields.toml": deep}))
    brackets = "[{" * 500
    text = "".join(
        [
            '[field.s]\nkind = "option"\ndomain = ["a", "b", "c", "d", "e"]\n[field.s.labels]\n',
            f"a = {toml_str(brackets)}\n",
            f"b = '{brackets}'\n",
            f'c = """\n{brackets}\\"""\n"""\n',
            f"d = '''\n{brackets}''''\n",
            f"# {brackets}\n",
            f'e = "\\\\" # {brackets}\n',
        ]
    )
    pack = load_pack(write_pack(tmp_path / "strings", {"fields.toml": text}))
    labels = pack.fields["s"].labels
    assert labels["a"] == brackets and labels["d"] == f"{brackets}'"


def test_a_huge_integer_in_a_pack_is_named_plainly(tmp_path: Path) -> None:
    """The message says what is wrong in the pack's terms (not Python's advice to raise a limit)."""
    root = write_pack(tmp_path / "p", {"fields.toml": "x = " + "9" * 5000 + "\n"})
    with pytest.raises(PackError) as caught:
        load_pack(root)
    [problem] = caught.value.problems
    assert "more than 4300 digits" in problem.message and "sys." not in problem.message


def test_many_depends_on_cycles_are_reported_bounded(tmp_path: Path) -> None:
    """A 2,000-field chain whose last field depends on every other: 2,000 cycles, each up to
    2,000 links. One DependencyCycle listing a bounded number of them, each chain shortened."""
    n = 2000
    chain = "".join(
        f'[field.f{i}]\nkind = "option"\ndomain = [1, 2]\ndepends_on = ["f{i + 1}"]\n' for i in range(n)
    )
    everyone = toml_value([f"f{i}" for i in range(n)])
    text = chain + f'[field.f{n}]\nkind = "option"\ndomain = [1]\ndepends_on = {everyone}\n'
    with pytest.raises(DependencyCycle) as caught:
        load_pack(write_pack(tmp_path / "p", {"a.toml": text}))
    problems = caught.value.problems
    assert len(problems) <= 51 and "more cycles" in problems[-1].message
    assert all(len(p.message) < 2000 for p in problems)
    assert problems[0].message.startswith("f0 -> f1 -> ") and "more) ->" in problems[0].message


def test_a_short_cycle_is_shown_whole(tmp_path: Path) -> None:
    text = "".join(
        f'[field.{a}]\nkind = "option"\ndomain = [1]\ndepends_on = ["{b}", "{b}"]\n'
        for a, b in [("x", "y"), ("y", "z"), ("z", "x")]
    )
    with pytest.raises(DependencyCycle) as caught:
        load_pack(write_pack(tmp_path / "p", {"a.toml": text}))
    assert [p.message for p in caught.value.problems] == ["x -> y -> z -> x"]


def test_moving_text_between_files_is_a_new_pack(tmp_path: Path) -> None:
    """The cache key covers each file's name and bytes: the same text split differently between
    two files is another pack (fields remember their file)."""
    one = '[field.a]\nkind = "option"\ndomain = [1]\n'
    two = '[field.b]\nkind = "option"\ndomain = [1]\n'
    root = write_pack(tmp_path / "p", {"a.toml": one, "b.toml": two})
    assert load_pack(root).fields["b"].file == "b.toml"
    (root / "a.toml").write_text(one + two)
    (root / "b.toml").write_text("")
    assert load_pack(root).fields["b"].file == "a.toml"


def test_a_long_unary_chain_inside_a_comparison_is_a_pack_error(tmp_path: Path) -> None:
    """`tp == - - ... 1` and `not - - ... 1` (the rendering of the rejected condition must not
    recurse either): PackErrors quoting the start of the text."""
    minus = "- " * 500 + "1"
    rules = "".join(
        f'[[rule]]\nid = "{rid}"\nrequire = {toml_str(text)}\nbecause = "b"\nsource = "s"\n'
        for rid, text in [("cmp", f"tp == {minus}"), ("neg", f"not {minus}")]
    )
    fields = '[field.tp]\nkind = "option"\ndomain = [1, 2]\n'
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "p", {"fields.toml": fields, "rules.toml": rules}))
    found = {p.where: p.message for p in caught.value.problems}
    assert set(found) == {"rule cmp", "rule neg"}
    assert "'tp == - - - " in found["rule cmp"] and len(found["rule cmp"]) < 400
