"""A shipped pack's prebuilt form (solver/pack/prebuilt.py, constraints/NAME/prebuilt.py).

The file is its pack written again, text for text (a form stale for its pack or for the code that
loads and compiles a pack cannot land); a first start with no cache reads it instead of parsing
the TOML files and the conditions, and gets the same pack and conditions that answer as parsed
ones do; a form for other files, of another format or of another layout is not read; and a pack
given by path never runs a `prebuilt.py` of its directory."""

from __future__ import annotations

import importlib
import itertools
import py_compile
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from solver.errors import pack_problems
from solver.model import given_key
from solver.pack import cache, codegen, files, given, graph, loader, prebuild, prebuilt
from solver.pack.crosscheck import PackSemantics, parse_conditions
from solver.reasoning import plan

PACKS = Path(__file__).parent.parent / "constraints"
SHIPPED = ["sglang", "vllm"]


@pytest.mark.parametrize("name", SHIPPED)
def test_a_prebuilt_form_is_its_pack_written_again(name: str) -> None:
    """When this fails, the pack or the code that loads it changed: run
    `python -m solver.engine.shipped --prebuilt-only constraints/sglang constraints/vllm`."""
    path = PACKS / name / f"{prebuilt.MODULE}.py"
    assert path.is_file(), (
        f"{path} missing: run python -m solver.engine.shipped --prebuilt-only {path.parent}"
    )
    assert prebuild.source(PACKS / name) == path.read_text(), (
        f"{path} is stale: run python -m solver.engine.shipped --prebuilt-only constraints/{name}"
    )


@pytest.fixture(autouse=True, scope="module")
def _compiled_as_installed() -> None:
    """Each prebuilt module's bytecode, as pip leaves an install (this machine's checkouts run
    with PYTHONDONTWRITEBYTECODE, and the reader wants the bytecode)."""
    for name in SHIPPED:
        py_compile.compile(str(PACKS / name / f"{prebuilt.MODULE}.py"), doraise=True)


def test_a_module_without_its_bytecode_up_to_date_is_not_read(tmp_path: Path) -> None:
    """Compiling the module on a start costs more than loading the pack from its files."""
    path = tmp_path / f"{prebuilt.MODULE}.py"
    path.write_text("DIGEST = 1\n")
    assert not prebuilt._compiled(path)
    py_compile.compile(str(path), doraise=True)
    assert prebuilt._compiled(path)
    path.write_text("DIGEST = 12\n")  # changed since: the bytecode's size stamp differs
    assert not prebuilt._compiled(path)


def test_a_module_found_without_bytecode_is_read_once_it_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load before the module's bytecode exists (a checkout run with PYTHONDONTWRITEBYTECODE,
    then compiled) must not leave the process loading from the files for good (round 27's CI: a
    remembered miss made every later first start of that test worker parse the TOML)."""
    monkeypatch.setattr(prebuilt, "_MODULES", {})
    real = prebuilt._compiled
    monkeypatch.setattr(prebuilt, "_compiled", lambda path: False)
    assert prebuilt._shipped_module(PACKS / "sglang") is None
    monkeypatch.setattr(prebuilt, "_compiled", real)
    assert prebuilt._shipped_module(PACKS / "sglang") is not None


@pytest.fixture
def first_start(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A process with no cache on disk or in memory; returns the TOML files it parses."""
    monkeypatch.setenv("CONFSOLVE_NO_CACHE", "1")
    monkeypatch.setattr(loader, "_CACHE", type(loader._CACHE)(8))
    monkeypatch.setattr(loader, "_SEMANTICS", type(loader._SEMANTICS)(8))
    monkeypatch.setattr(cache, "_entries", {})
    monkeypatch.setattr(given, "_VALUED", type(given._VALUED)(8))
    monkeypatch.setattr(given, "_VALUED_PREFS", type(given._VALUED_PREFS)(8))
    parsed: list[str] = []
    real = files.parse_toml

    def counting(name: str, *args: Any) -> Any:
        parsed.append(name)
        return real(name, *args)

    monkeypatch.setattr(loader, "parse_toml", counting)
    monkeypatch.setattr(files, "parse_toml", counting)  # pack.toml, parsed as the files are read
    return parsed


def _parsed(pack: Any) -> PackSemantics:
    problems = pack_problems(pack.name)
    found = parse_conditions(pack, problems)
    problems.check()
    return found


@pytest.mark.parametrize("name", SHIPPED)
def test_a_first_start_reads_the_prebuilt_form(name: str, first_start: list[str]) -> None:
    """No TOML parsed, no condition parsed or compiled, no field graph analysed; the pack equals
    the one its files give, its field order the graph's, and each condition answers as the parsed
    one on random full and partial values."""
    compiled_before = len(codegen._CODE)
    pack = loader.load_directory(PACKS / name)
    found = loader.semantics(pack)
    assert first_start == []
    assert len(codegen._CODE) == compiled_before
    expected = graph.analyse(pack).order
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(graph, "analyse", lambda _: pytest.fail("the field order was analysed again"))
        assert plan._field_order(pack) == expected
    # The typed-value reads of `given()` come with the form, equal to those its texts give.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(given, "_reads", lambda *_: pytest.fail("a condition parsed for its value reads"))
        shipped = given._value_reads(pack), given.valued_preferences(pack)
        assert shipped[0] and shipped[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(given, "_VALUED", type(given._VALUED)(8))
        patch.setattr(given, "_VALUED_PREFS", type(given._VALUED_PREFS)(8))
        patch.setattr(cache, "_entries", {})
        assert (given._value_reads(pack), given.valued_preferences(pack)) == shipped
    assert pack == loader.load_directory(PACKS / name, fresh=True)
    assert first_start  # the fresh load did parse
    again = _parsed(pack)
    rng = random.Random(7)
    for mine, theirs in (
        (found.rules, again.rules),
        (found.whens, again.whens),
        (found.preferences, again.preferences),
    ):
        assert list(mine) == list(theirs)
        for key, cond in mine.items():
            other = theirs[key]
            if cond is None or other is None:
                assert cond is other
                continue
            assert (cond.text, cond.fields, cond.literals, cond.given) == (
                other.text,
                other.fields,
                other.literals,
                other.given,
            )
            assert not isinstance(codegen.state(cond.holds)[0], str)  # compiled, not waiting
            for _ in range(6):
                values = tuple(rng.choice(pack.fields[f].domain) for f in cond.fields)
                assert cond.holds(values) == other.holds(values), key
                pairs = zip(cond.fields, values, strict=True)
                known: dict[str, Any] = {f: v for f, v in pairs if rng.random() < 0.6}
                known.update({given_key(f): rng.random() < 0.5 for f in cond.given})
                assert cond.partial(known) == other.partial(known), key


def _module(name: str) -> Any:
    return importlib.import_module(f"constraints.{name}.{prebuilt.MODULE}")


@pytest.mark.parametrize(
    "change",
    [
        ("DIGEST", "0" * 64),
        ("FORMAT", "confsolve-prebuilt-0"),
        ("RULES", (("a-rule", ("too", "short")),)),
        ("CODE", []),
        ("PACK", {"name": "sglang"}),
        ("MANIFEST", ("0" * 64, "sglang", ())),  # the files pack.toml lists: read it
        ("MANIFEST", None),
        ("VALUE_READS", (("attention_backend", ((("no-such-type", "fa3"),),)),)),
    ],
)
def test_a_form_for_other_files_or_of_another_layout_is_not_read(
    change: tuple[str, Any], first_start: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_module("sglang"), *change)
    pack = loader.load_directory(PACKS / "sglang")
    reads = given._value_reads(pack)
    if change[0] in ("MANIFEST", "VALUE_READS"):  # the rest of the form is read
        assert first_start == (["pack.toml"] if change[0] == "MANIFEST" else [])
    else:
        assert first_start  # loaded from its files
    assert pack == loader.load_directory(PACKS / "sglang", fresh=True)
    cache._entries.clear()
    given._VALUED.clear()
    assert reads == given._value_reads(pack)


def test_a_pack_given_by_path_never_runs_a_prebuilt_module(
    tmp_path: Path, first_start: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the SGLang pack (same files, same digest) in a directory of its own, with a
    `prebuilt.py` that would record that it ran: the files are read, the module never runs."""
    copy = tmp_path / "sglang"
    shutil.copytree(PACKS / "sglang", copy, ignore=shutil.ignore_patterns("__pycache__"))
    ran = tmp_path / "ran"
    (copy / f"{prebuilt.MODULE}.py").write_text(
        f"open({str(ran)!r}, 'w').close()\n" + (copy / "prebuilt.py").read_text()
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    pack = loader.load_directory(copy)
    assert first_start and not ran.exists()
    assert pack.digest == loader.load_directory(PACKS / "sglang", fresh=True).digest


def test_the_writer_knows_every_source_it_wrote() -> None:
    """`codegen.written` gives back the source of a function compiled from one, and refuses code
    it did not compile (code read from a file)."""
    cond = _parsed(loader.load_directory(PACKS / "sglang", fresh=True)).rules
    for one in itertools.islice(cond.values(), 20):
        codegen.compile_now(one.holds)
        source, consts = codegen.written(one.holds)
        assert source.startswith("def holds(a") and consts == one.holds.__defaults__
    foreign = codegen.restore("holds", compile("def holds(a):\n    return a\n", "x", "exec").co_consts[0], ())
    with pytest.raises(LookupError):
        codegen.written(foreign)


@pytest.mark.parametrize("damage", ["manifest", "value reads"])
def test_the_writer_reads_its_text_back_as_a_load_reads_it(
    damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer whose MANIFEST or VALUE_READS a load would read otherwise than the files give is
    refused (fails on a1e60f3: its check compared the written literals with themselves, and never
    read MANIFEST back)."""
    if damage == "manifest":
        written = prebuild._manifest

        def dropped(listing: tuple[bytes, str, list[str]]) -> tuple[str, str, tuple[str, ...]]:
            digest, name, files = written(listing)
            return digest, name, files[:-1]  # a file of the pack left out of the listing

        monkeypatch.setattr(prebuild, "_manifest", dropped)
    else:
        encoded = given.encoded_reads

        def as_text(*args: Any) -> Any:  # every value read as a string: a load decodes str
            return tuple(
                (name, tuple(tuple(("str", str(v)) for _, v in values) for values in tests))
                for name, tests in encoded(*args)
            )

        monkeypatch.setattr(given, "encoded_reads", as_text)
    with pytest.raises(ValueError, match="does not give the pack back"):
        prebuild.source(PACKS / "vllm")


def test_the_writer_reads_the_listing_of_the_files_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing a writer writes as MANIFEST is the one it reads back, read from the files once
    (fails on a0ebea6: `_listing` read them twice, for the text and for its check)."""
    calls: list[Path] = []
    listing = prebuild._listing

    def counted(directory: Path) -> tuple[bytes, str, list[str]]:
        calls.append(directory)
        return listing(directory)

    monkeypatch.setattr(prebuild, "_listing", counted)
    prebuild.source(PACKS / "vllm")
    assert calls == [PACKS / "vllm"]
