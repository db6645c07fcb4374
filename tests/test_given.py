"""`given(FIELD)`: whether the request gives FIELD, not its value.

SGLang applies a model family's attention default only while no attention flag is typed
(`is_attention_backend_not_set`); a split backend that follows `--attention-backend` has the
same value as one typed, so only what was given tells them apart. A preference's `when` reads it,
and so may a hard rule (SGLang refuses `--moe-runner-backend flashinfer_cutedsl` unless
`--quantization` is typed): tests/test_given_rules.py. So may an adjustment, except of the field
it adjusts.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from solver import check, resolve
from solver.errors import PackError
from solver.model import Pack, given_key
from solver.pack.expr import parse
from solver.pack.loader import load_directory

PACK = """
[pack]
name = "given"
version = "1"
description = "a family default that applies only while no attention flag is given"
files = ["rules.toml"]
"""

RULES = """
[field.family]
kind = "fact"
domain = ["plain", "sparse"]
required = true

[field.attention]
kind = "option"
domain = ["generic", "sparse_kernel", "other"]

[field.prefill]
kind = "option"
domain = ["generic", "sparse_kernel", "other"]

[[preference]]
id = "sparse-family-default"
field = "attention"
when = "family == 'sparse' and not given(prefill)"
prefer = ["sparse_kernel"]
because = "the sparse family's default, only while no attention flag is given"
source = "test"

[[preference]]
id = "prefill-follows"
field = "prefill"
same_as = "attention"
because = "the prefill backend follows --attention"
source = "test"
{extra}
"""


def _pack(root: Path, extra: str = "") -> Pack:
    root.mkdir()
    (root / "pack.toml").write_text(PACK, encoding="utf-8")
    (root / "rules.toml").write_text(RULES.format(extra=extra), encoding="utf-8")
    return load_directory(root)


@pytest.fixture
def pack(tmp_path: Path) -> Pack:
    return _pack(tmp_path / "given")


def _expected_attention(family: str, options: dict[str, str]) -> str:
    """The semantics, stated independently of the engine: a typed --attention is kept; else the
    family default applies when prefill is not given, else the domain's first value."""
    if "attention" in options:
        return options["attention"]
    if family == "sparse" and "prefill" not in options:
        return "sparse_kernel"
    return "generic"


def _every_request() -> Iterator[tuple[str, dict[str, str]]]:
    """Each family with each choice of typed options (none, one or both, every value)."""
    values = ["generic", "sparse_kernel", "other"]
    for family in ("plain", "sparse"):
        for typed in itertools.chain.from_iterable(
            itertools.combinations(["attention", "prefill"], k) for k in range(3)
        ):
            for chosen in itertools.product(values, repeat=len(typed)):
                yield family, dict(zip(typed, chosen, strict=True))


def test_every_request_brute_force(pack: Pack) -> None:
    seen = 0
    for family, options in _every_request():
        want = _expected_attention(family, options)
        for answer in (
            check(pack, options, {"family": family}),
            resolve(pack, options, {"family": family}),
        ):
            assert answer.values["attention"] == want, (family, options)
            assert answer.values["prefill"] == options.get("prefill", want)
        seen += 1
    assert seen == 2 * (1 + 3 + 3 + 9)


def test_a_typed_split_flag_drops_the_family_default_even_when_it_has_that_value(pack: Pack) -> None:
    # Typing prefill = sparse_kernel is not "nothing typed": the family default is skipped.
    res = check(pack, {"prefill": "sparse_kernel"}, {"family": "sparse"})
    assert res.values["attention"] == "generic"


def test_why_names_the_preference_that_applied(pack: Pack) -> None:
    plain = resolve(pack, {}, {"family": "sparse"}, reasons=True)
    assert plain.provenance["attention"].rule == "sparse-family-default"
    typed = resolve(pack, {"prefill": "other"}, {"family": "sparse"}, reasons=True)
    assert typed.provenance["attention"].rule is None
    assert typed.departures == []  # the search and the launcher's chain read the same marks


def test_condition_reads_the_mark_not_a_value(pack: Pack) -> None:
    cond = parse("not given(prefill)", pack.fields, pack.sets)
    assert cond.fields == () and cond.given == ("prefill",)
    assert cond.partial({}) is True
    assert cond.partial({given_key("prefill"): True}) is False
    assert cond.holds(()) is True  # positional values (lint): nothing given


def test_an_adjustment_may_not_read_given_of_its_own_target(tmp_path: Path) -> None:
    extra = (
        '[[rule]]\nid = "r"\nwhen = "given(attention)"\nrequire = "attention == \'generic\'"\n'
        'adjusts = "attention"\nbecause = "b attention"\nsource = "test"\n'
    )
    with pytest.raises(PackError, match=r"may not read given\(\) of the field it adjusts"):
        _pack(tmp_path / "bad", extra)


# SGLang overrides the MoE runner for `--quantization mxfp8` only when that flag is typed (a
# checkpoint's mxfp8 leaves the runner alone): an adjustment whose `when` reads given().
OVERRIDE = """
[[rule]]
id = "typed-sparse-prefill-forces-attention"
when = "given(prefill) and prefill == 'sparse_kernel'"
require = "attention == 'sparse_kernel'"
adjusts = "attention"
because = "a typed sparse prefill makes the launcher override the attention backend"
source = "test"
"""


def _expected_with_override(family: str, options: dict[str, str]) -> tuple[str, bool]:
    """The attention value and whether a typed one was overridden: the launcher's own override
    fires only when prefill is typed sparse_kernel, over a typed value or over its own pick."""
    if options.get("prefill") == "sparse_kernel":
        return "sparse_kernel", options.get("attention", "sparse_kernel") != "sparse_kernel"
    return _expected_attention(family, options), False


def test_an_adjustment_reading_given_brute_force(tmp_path: Path) -> None:
    pack = _pack(tmp_path / "override", OVERRIDE)
    seen = 0
    for family, options in _every_request():
        want, overridden = _expected_with_override(family, options)
        answer = check(pack, options, {"family": family})
        assert answer.values["attention"] == want, (family, options)
        assert [a.field for a in answer.adjustments] == (["attention"] if overridden else [])
        # Not typed, prefill follows attention; the rule does not read a picked value.
        assert answer.values["prefill"] == options.get("prefill", want)
        seen += 1
    assert seen == 2 * (1 + 3 + 3 + 9)


def test_only_given_of_a_field(tmp_path: Path) -> None:
    extra = (
        '[[preference]]\nid = "p"\nfield = "attention"\nwhen = "given(nothing)"\nprefer = ["other"]\n'
        'because = "b attention"\nsource = "test"\n'
    )
    with pytest.raises(PackError, match=r"given\(FIELD\) of a field"):
        _pack(tmp_path / "bad", extra)
