"""Packs are untrusted data: a hostile pack ends in one PackError that lists every problem, nothing
in it ever runs, and the size limits of solver/loader.py and solver/expr.py give clear errors.

The hostile fixture is tests/fixtures/packs/malicious/ (one rule or preference per attack, named
after it). Absurd sizes are generated into tmp. Known holes are strict xfails: each says what a
hostile pack can still do today.
"""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import MALICIOUS, ROOT, TOY, assert_clean_text, toml_str, write_pack

import solver.expr as expr
import solver.loader as loader
from solver import PackError, load_pack, resolve
from solver.cli import main
from solver.expr import ExprError
from solver.model import Field

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
    for module in pkgutil.iter_modules(solver.__path__):
        if module.name != "__main__":
            importlib.import_module(f"solver.{module.name}")

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


# --- known holes (strict xfails: they pass once fixed) ----------------------------------------


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
@pytest.mark.xfail(
    strict=True,
    reason="bug: the size check trusts stat(); a pack file that is a "
    "symlink to /dev/zero (st_size 0) is read without bound -> MemoryError, exit 70",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="bug: tomllib recurses on nested arrays/inline tables; "
    "loader catches TOMLDecodeError only, so RecursionError escapes load_pack "
    "(the CLI maps it to exit 2 'input nested too deeply', not 3)",
)
def test_deeply_nested_toml_is_a_pack_error(tmp_path: Path) -> None:
    """5,000 nested arrays in a pack file: PackError naming the file."""
    root = write_pack(tmp_path / "p", {"fields.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n"})
    with pytest.raises(PackError, match=r"fields\.toml"):
        load_pack(root)


@pytest.mark.xfail(
    strict=True,
    reason="bug: tomllib raises ValueError (int max str digits) for a "
    "5,000-digit integer; loader does not catch it: not a PackError, CLI exit 70",
)
def test_huge_integer_literal_is_a_pack_error(tmp_path: Path) -> None:
    """An integer literal of 5,000 digits in a pack file: PackError naming the file."""
    root = write_pack(
        tmp_path / "p", {"fields.toml": '[field.a]\nkind = "option"\ndomain = [' + "9" * 5000 + "]\n"}
    )
    with pytest.raises(PackError, match=r"fields\.toml"):
        load_pack(root)


@pytest.mark.xfail(
    strict=True,
    reason="bug: loader._check_cycles is recursive; a depends_on chain "
    "of 3,000 fields (well under MAX_FIELDS) raises RecursionError",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="bug: expr._build renders a rejected condition with "
    "ast.unparse, which recurses: 500 unary minuses (2 KB, under MAX_LENGTH) raise "
    "RecursionError out of load_pack instead of a PackError",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="bug: the loader's cache key skips files that failed to "
    "read; a pack file that turns invalid or disappears still returns the old Pack",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="bug: pack.toml may list the same file any number of "
    "times; each copy is read and parsed again (no total size bound)",
)
def test_a_file_listed_twice_is_refused(tmp_path: Path) -> None:
    """`files = ["a.toml", "a.toml"]` is a PackError on pack.files, whatever a.toml holds."""
    root = write_pack(tmp_path / "p", {"a.toml": "# nothing\n"}, listed=["a.toml", "a.toml"])
    with pytest.raises(PackError) as caught:
        load_pack(root)
    assert [p.where for p in caught.value.problems] == ["pack.files"]
