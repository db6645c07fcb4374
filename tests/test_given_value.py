"""`given(FIELD) == VALUE` / `given(FIELD) in [VALUES]`: the value the request typed, before any
adjustment replaces it (solver.pack.expr `given_value`, solver.pack.given).

The case it was made for (vLLM 0.33.0, constraints/vllm/KNOWN_DIFFERENCES.md kind 20): a typed
FlashAttention version 3 or 4 is adjusted to 2 at head size 256, yet the kernel block follows the
version typed; a typed 2 asks for FA2's. The toy pack below has the same shape: `version` typed 3
is adjusted to 2 on `big` heads, and the block is 128 only when 3 was typed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from solver import check, resolve, valid_choices
from solver.engine.count import count
from solver.errors import Unsatisfiable
from solver.model import Pack, given_key, typed_key
from solver.pack.expr import ExprError, parse
from solver.pack.loader import load_directory

PACK = """
[pack]
name = "typed"
version = "1"
description = "a kernel block that follows the version typed, which is adjusted"
files = ["rules.toml"]
"""

RULES = """
[field.head]
kind = "fact"
domain = ["small", "big"]
required = true

[field.version]
kind = "option"
domain = [2, 3]

[field.block]
kind = "option"
domain = [16, 128]

[[rule]]
id = "no-v3-on-big-heads"
when = "head == 'big'"
forbid = "version == 3"
adjusts = "version"
adjust_to = [2]
because = "version 3 does not run big heads: the launcher runs 2 (set --version 2)"
source = "test"

[[rule]]
id = "typed-v3-takes-128"
when = "given(version) == 3"
require = "block == 128"
because = "a typed version 3 sizes the block for its kernel (128), also where 2 runs"
source = "test"
{extra}
"""


def _pack(root: Path, extra: str = "", rules: str = RULES) -> Pack:
    root.mkdir()
    (root / "pack.toml").write_text(PACK, encoding="utf-8")
    (root / "rules.toml").write_text(rules.format(extra=extra), encoding="utf-8")
    return load_directory(root)


@pytest.fixture
def pack(tmp_path: Path) -> Pack:
    return _pack(tmp_path / "typed")


def test_the_value_typed_is_read_after_it_is_adjusted(pack: Pack) -> None:
    """A typed 3 on big heads runs 2 and still takes 128; a typed 2 takes the first block."""
    three = check(pack, {"version": 3}, {"head": "big"})
    assert three.values["version"] == 2 and [a.field for a in three.adjustments] == ["version"]
    assert three.values["block"] == 128
    two = check(pack, {"version": 2}, {"head": "big"})
    assert two.values["block"] == 16 and not two.adjustments
    assert check(pack, {}, {"head": "big"}).values["block"] == 16  # not typed: not 3
    with pytest.raises(Unsatisfiable):
        resolve(pack, {"version": 3, "block": 16}, {"head": "small"})
    assert resolve(pack, {"version": 2, "block": 16}, {"head": "small"}).values["block"] == 16


def test_count_reads_the_value_typed(pack: Pack) -> None:
    """Configurations keeping the pins (3 runs on small heads only), a typed 3 with block 128."""
    assert count(pack, pins={"version": 3}).count == 1
    assert count(pack, pins={"version": 2}).count == 4
    assert count(pack).count == 6  # nothing typed: version 3 on small heads with either block


def test_choices_read_the_value_picked(pack: Pack) -> None:
    """Picking a value types it: with block 16 typed, version 3 is no choice (typed 3 needs 128)."""
    got = valid_choices(pack, {"block": 16, "version": 2}, {"head": "small"}, reasons=False)
    assert got.possible["version"] == [2]
    assert got.possible["block"] == [16, 128]
    got = valid_choices(pack, {"block": 128, "version": 3}, {"head": "small"}, reasons=False)
    assert got.possible["version"] == [2, 3] and got.possible["block"] == [128]


def test_partial_reads_the_typed_mark_else_the_field(pack: Pack) -> None:
    cond = parse("given(version) in [3]", pack.fields, pack.sets)
    assert cond.fields == () and cond.given == ("version",)
    assert cond.holds(()) is False  # the pack as loaded: nothing typed
    mark = given_key("version")
    assert cond.partial({}) is False
    assert cond.partial({mark: True}) is None  # typed, value not known
    assert cond.partial({mark: True, "version": 3}) is True
    assert cond.partial({mark: True, typed_key("version"): 3, "version": 2}) is True  # adjusted


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("given(version) != 3", r"compares only as given\(version\) == VALUE"),
        ("given(version) < 3", r"compares only as given\(version\) == VALUE"),
        ("given(version) == 4", r"4 is not a value of version"),
        ("given(version) in [3, 5]", r"5 is not a value of version"),
        ("given(version) == block", r"literals, not with the field block"),
        ("given(version) == [3]", r"needs one literal"),
        ("given(version) in 3", r"needs a list or a named set"),
        ("given(nothing) == 3", r"unknown field 'nothing'"),
    ],
)
def test_a_malformed_read_is_refused_naming_it(pack: Pack, text: str, message: str) -> None:
    with pytest.raises(ExprError, match=message):
        parse(text, pack.fields, pack.sets)


def test_a_preference_reads_the_value_typed(tmp_path: Path) -> None:
    """A ranking reads the decided values, in which the adjustment has replaced a typed 3 by 2:
    the request's copy answers the preference's read from the value typed."""
    extra = (
        '[[preference]]\nid = "p"\nfield = "block"\nwhen = "given(version) == 2"\nprefer = [128]\n'
        'because = "b block"\nsource = "test"\n'
    )
    rules = RULES[: RULES.index('[[rule]]\nid = "typed-v3')] + "{extra}"
    pack = _pack(tmp_path / "pref", extra, rules)
    assert check(pack, {"version": 2}, {"head": "big"}).values["block"] == 128  # typed 2: preferred
    three = check(pack, {"version": 3}, {"head": "big"})
    assert three.values["version"] == 2 and three.values["block"] == 16  # typed 3, runs 2
    assert check(pack, {}, {"head": "big"}).values["block"] == 16  # not typed


@pytest.mark.parametrize(
    ("rule", "effect"),
    [
        ("typed-v3-takes-128", -1),  # typing the version can only add the block's requirement
        ("no-v3-on-big-heads", 0),
    ],
)
def test_typing_moves_a_value_read_the_way_it_moves_given(pack: Pack, rule: str, effect: int) -> None:
    """`given(F) == VALUE` is false until F is typed and then true or still false: typing F
    tightens a rule that requires something under it, as `given(F)` would. (It was said to move
    both ways, so choices asked every SGLang field with such a rule of a copy typing it again:
    0.5.23+23's HRM-Text rules, one-fact choices 29 -> 61 ms; fails on 6947e6d.)"""
    from solver.pack.given import given_effect

    assert given_effect(pack.rule(rule), "version", ()) == effect


def test_copies_share_a_rule_rewritten_alike(tmp_path: Path) -> None:
    """Two requests' copies that answer a rule's `given()`s alike share its rewritten rule and
    conditions (kept by the rule and the marks of the fields it reads: a request's first call
    parsed and compiled them anew, ~20 ms per SGLang 0.5.23+23 request typing its attention
    backend; fails on e66de50); a copy that answers them otherwise gets its own."""
    from solver.pack.given import for_request
    from solver.pack.loader import semantics

    extra = """
[[rule]]
id = "typed-block-keeps-small-heads"
when = "given(block)"
require = "head == 'small'"
because = "a typed block runs small heads only"
source = "test"
"""
    pack = _pack(tmp_path / "typed", extra)
    one = for_request(pack, {"version": 2})
    two = for_request(pack, {"version": 2, "block": 16})
    three = for_request(pack, {"version": 3, "block": 16})
    assert one.digest != two.digest != three.digest
    rid = "typed-v3-takes-128"
    assert one.rule(rid).when == two.rule(rid).when == "False"
    assert semantics(one).rules[rid] is semantics(two).rules[rid]
    assert semantics(one).whens[rid] is semantics(two).whens[rid]
    assert three.rule(rid).when == "True"
    assert semantics(three).rules[rid] is not semantics(two).rules[rid]
    assert (
        semantics(two).rules["typed-block-keeps-small-heads"]
        is semantics(three).rules["typed-block-keeps-small-heads"]
    )


def test_copies_share_their_packs_compiled_rules(tmp_path: Path) -> None:
    """A request's copy compiles only the rules whose `given()`s it answered: every other hard
    rule is the constraint its pack compiled, with the answers found so far (each copy compiled
    every rule with empty tables, and first calls paid ~8 full collections against 3 before
    SGLang 0.5.23+23; fails on ff88a15); a rule rewritten alike is one constraint across copies,
    and answers are the same as the pack's own."""
    from solver.engine.csp import CompiledPack, compile_pack
    from solver.pack.given import for_request

    pack = _pack(tmp_path / "shared")
    one, two = for_request(pack, {"version": 2}), for_request(pack, {"version": 2, "block": 16})
    base, first, second = compile_pack(pack), compile_pack(one), compile_pack(two)
    assert len({base.tables.pool, first.tables.pool, second.tables.pool}) == 1
    rid = "typed-v3-takes-128"
    for rule, con in base.rules.items():
        assert (first.rules[rule] is con) is (rule != rid)
    assert first.rules[rid] is second.rules[rid]
    assert first.rules[rid] is not base.rules[rid]
    for copy, compiled in ((one, first), (two, second)):
        alone = CompiledPack(dataclasses.replace(copy, digest=""))  # a budget of its own: no sharing
        assert all(alone.rules[rule] is not con for rule, con in compiled.rules.items())
        for pins in ({}, {"head": "big"}, {"head": "small", "block": 16}, {"version": 3}):
            assert _all(compiled.solutions(pins)) == _all(alone.solutions(pins))


def _all(found: Iterator[dict[str, object]]) -> list[str]:
    return sorted(repr(sorted(s.items())) for s in found)


def test_a_rules_projection_is_remembered_for_its_packs_copies(tmp_path: Path) -> None:
    """What a rule alone leaves of its open fields (`constraint.projected`, read by choices' facts and
    by `facts_force`) is kept with the constraint, by the fields left free and their domains: a
    typed copy that shares its pack's constraint asks it no evaluation again (a one-fact SGLang
    choices question projected the same 46 rules over the same facts once for its pack and once
    per typed copy, ~20 ms of ~60; fails on ce45aae), and other domains are projected afresh."""
    from solver.engine.constraint import projected
    from solver.engine.csp import compile_pack
    from solver.pack.given import for_request

    extra = '\n[field.unique_to_this_test]\nkind = "option"\ndomain = ["a", "b"]\n'
    pack = _pack(tmp_path / "projected", extra)
    rid = "no-v3-on-big-heads"
    con = compile_pack(pack).rules[rid]
    assert compile_pack(for_request(pack, {"version": 2})).rules[rid] is con
    asked: list[tuple[object, ...]] = []
    holds = con.holds

    def counted(values: tuple[object, ...]) -> bool:
        asked.append(values)
        return holds(values)  # type: ignore[arg-type]

    con.holds = counted  # type: ignore[assignment]
    try:
        domains = {"head": ["small", "big"], "version": [2, 3]}
        both = projected(con, ["head", "version"], domains)
        assert both == {"head": {"small", "big"}, "version": {2, 3}} and asked
        before = len(asked)
        assert projected(con, ["head", "version"], {n: list(d) for n, d in domains.items()}) == both
        assert len(asked) == before
        assert projected(con, ["version"], {"head": ["big"], "version": [2, 3]}) == {"version": {2}}
        assert len(asked) > before
    finally:
        con.holds = holds


def test_a_kept_copy_keeps_its_conditions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request's copy handed out again comes with its conditions, whatever other packs of its
    family the loader's table took in between (that table held the pack, its widened copies and
    the typed copies in 8 places, the copies' table 8 copies: a copy it had dropped parsed every
    condition of the pack again, 70-300 ms per SGLang 0.5.23+26 request, 5 per pass over the
    benchmark's; fails on 89ce6f4)."""
    from solver.pack import loader
    from solver.pack.given import for_request

    pack = _pack(tmp_path / "kept")
    copy = for_request(pack, {"version": 3})
    conditions = loader.semantics(copy)
    for n in range(16):  # other packs of the family: widened copies, as `opendomain.widened` names them
        loader.keep_semantics(dataclasses.replace(pack, digest=f"{pack.digest}+open:{n}"), conditions)
    parsed: list[str] = []

    def parse_conditions(made: Pack, problems: object) -> object:
        parsed.append(made.digest)
        raise AssertionError("parsed again")

    monkeypatch.setattr(loader, "parse_conditions", parse_conditions)
    again = for_request(pack, {"version": 3})
    assert again.digest == copy.digest
    assert loader.semantics(again) is conditions and not parsed
