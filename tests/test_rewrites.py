"""A launcher's rewrite of a typed value (`Field.rewrites`): SGLang turns `--moe-runner-backend
megamoe` into `--moe-a2a-backend megamoe` and puts the runner back on auto before any of its checks
reads the runner, so a rule asking whether the runner was typed (`given(runner)`) reads it untyped,
while the rewrite's own reported adjustments read the value typed (`given(runner) == VALUE`).
Before the declaration, SGLang 0.5.23+26 spelled "typed, and not the alias" as a value read in
eight rules, and each runner typed made a copy of the pack of its own (solver.pack.given)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver import check, load_pack
from solver.errors import PackError, Unsatisfiable
from solver.model import Pack
from solver.pack.given import for_request, refusing
from solver.pack.loader import load_directory
from solver.pack.schema import pack_file_schema

PACK = """
[pack]
name = "alias"
version = "1"
description = "a runner value that is the launcher's alias of a dispatch backend"
files = ["rules.toml"]
"""

RULES = """
[field.gpu]
kind = "fact"
domain = ["h100", "b200"]
required = true

[field.runner]
kind = "option"
domain = ["basic", "fast", "mega_alias"]
auto = "auto"
{rewrites}

[field.dispatch]
kind = "option"
domain = ["none", "ring", "mega"]

[[rule]]
id = "h100-runner-auto"
when = "gpu == 'h100'"
forbid = "given(runner)"
because = "on an H100 the launcher asserts the runner is auto; leave --runner unset"
source = "test"

[[rule]]
id = "mega-alias"
when = "given(runner) == 'mega_alias'"
require = "dispatch == 'mega'"
adjusts = "dispatch"
adjust_to = ["mega"]
typed_only = true
because = "--runner mega_alias means --dispatch mega, with the runner left auto"
source = "test"

[[rule]]
id = "mega-alias-runner-auto"
forbid = "runner == 'mega_alias'"
adjusts = "runner"
because = "mega_alias is no runner: the launcher leaves the runner on auto"
source = "test"
"""

REWRITES = 'rewrites = { mega_alias = { dispatch = "mega" } }'


def _pack(root: Path, rewrites: str = REWRITES) -> Pack:
    root.mkdir()
    (root / "pack.toml").write_text(PACK, encoding="utf-8")
    (root / "rules.toml").write_text(RULES.format(rewrites=rewrites), encoding="utf-8")
    return load_directory(root)


def test_a_rewritten_value_is_no_typed_field(tmp_path: Path) -> None:
    pack = _pack(tmp_path / "alias")
    res = check(pack, {"runner": "mega_alias", "dispatch": "ring"}, {"gpu": "h100"})
    assert (res.values["runner"], res.values["dispatch"]) == ("basic", "mega")
    # Both reported: what the launcher did with each typed value, under the rule that says so.
    assert sorted((a.field, a.requested, a.resolved, a.rule) for a in res.adjustments) == [
        ("dispatch", "ring", "mega", "mega-alias"),
        ("runner", "mega_alias", "basic", "mega-alias-runner-auto"),
    ]
    with pytest.raises(Unsatisfiable, match="h100-runner-auto"):
        check(pack, {"runner": "fast"}, {"gpu": "h100"})


def test_without_the_declaration_the_alias_reads_as_a_typed_runner(tmp_path: Path) -> None:
    pack = _pack(tmp_path / "plain", rewrites="")
    with pytest.raises(Unsatisfiable, match="h100-runner-auto"):
        check(pack, {"runner": "mega_alias"}, {"gpu": "h100"})


def test_the_declaration_is_in_the_pack_file_schema() -> None:
    field = pack_file_schema()["$defs"]["Field"]["properties"]
    assert "rewrites" in field


@pytest.mark.parametrize(
    ("rewrites", "problems"),
    [
        (
            'rewrites = { mega = { dispatch = "mega" }, fast = { dispatc = "mega", dispatch = "ring2" } }',
            [
                "rewrites 'mega', which is not a domain value",
                "rewrites 'fast' to unknown field 'dispatc'",
                "rewrites 'fast' to dispatch = 'ring2', not its value",
            ],
        ),
        ('rewrites = { fast = { runner = "basic" } }', ["rewrites 'fast': an option's value rewritten"]),
        ("rewrites = { fast = {} }", ["rewrites 'fast': an option's value rewritten"]),
    ],
)
def test_a_bad_declaration_is_reported_with_the_others(
    tmp_path: Path, rewrites: str, problems: list[str]
) -> None:
    with pytest.raises(PackError) as raised:
        _pack(tmp_path / "bad", rewrites=rewrites)
    text = str(raised.value)
    for problem in problems:
        assert problem in text


def test_sglang_declares_the_megamoe_alias() -> None:
    field = load_pack("sglang").fields["moe_runner_backend"]
    assert field.rewrites == {"megamoe": {"moe_a2a_backend": "megamoe"}}


def test_sglang_runners_typed_alike_share_one_copy() -> None:
    """Every rule reads the typed --moe-runner-backend as "given" or not, but for the alias and
    the wNa16 rule's `== 'triton'`: two runners that answer those reads alike make one copy (the
    +26 pack made one per runner typed: a conflict's repairs typed nine, one more than a family
    keeps, and every call compiled them again; `a-m10-flashinfer-cutlass-fp8-conflict` 161 -> 445
    ms). The typed alias is a runner left on auto: the copy of a request that types no runner."""
    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"}

    def copy(**typed: str) -> Pack:
        return for_request(pack, {**facts, **typed}, answer_all=True)

    assert copy(moe_runner_backend="deep_gemm").digest == copy(moe_runner_backend="flashinfer_cutlass").digest
    assert copy(moe_runner_backend="triton").digest != copy(moe_runner_backend="deep_gemm").digest
    alias, untyped = copy(moe_runner_backend="megamoe"), copy()
    # (one copy answers `given(moe_runner_backend) == 'megamoe'` true, the alias' adjustment)
    assert [r for r in alias.rules if r.id != "moe-megamoe-runner-alias"] == [
        r for r in untyped.rules if r.id != "moe-megamoe-runner-alias"
    ]


def test_names_only_a_rewritten_value_of_the_field_is_not_typed(tmp_path: Path) -> None:
    """A command that types an answer's values (names only: each field's own value is the one
    typed) types no runner when that value is the one the launcher rewrites."""
    pack = _pack(tmp_path / "alias")
    values = {"gpu": "h100", "dispatch": "mega"}
    assert [r.id for r in refusing(pack, {**values, "runner": "fast"}, {"runner", "dispatch"})] == [
        "h100-runner-auto"
    ]
    assert refusing(pack, {**values, "runner": "mega_alias"}, {"runner", "dispatch"}) == []
