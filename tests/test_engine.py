"""Behaviour tables for the engine on the toy pack (tests/fixtures/packs/toy), the condition
language, and pack loading errors. Literal rows: each says what a user asks and what they get."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from solver.errors import DependencyCycle, InvalidInput, PackError, Unsatisfiable
from solver.model import Pack, Resolution, Scalar
from solver.pack.expr import parse
from solver.pack.loader import load_directory
from solver.reasoning.diagnose import valid_choices
from solver.reasoning.resolution import resolve

TOY_DIR = Path(__file__).parent / "fixtures" / "packs" / "toy"
FIELDS = ("gpu", "quant", "kernel", "fusion", "tp", "ep")


@pytest.fixture(scope="module")
def toy() -> Pack:
    return load_directory(TOY_DIR)


def run(pack: Pack, options: Mapping[str, Any], facts: Mapping[str, Any], strict: bool = False) -> Resolution:
    return resolve(pack, dict(options), dict(facts), strict=strict)


# --- resolve: values and provenance -------------------------------------------------------------
# Each row: options, facts -> values in field order (gpu quant kernel fusion tp ep), provenance
# kinds in the same order, and the rule or preference named for selected fields.
RESOLVED = [
    pytest.param(
        {},
        {"gpu": "b200"},
        ("b200", "none", "cutlass", True, 1, 1),
        ("fact", "default", "preference", "preference", "default", "rule"),
        {"kernel": "kernel-new-gpu", "fusion": "fusion-on", "ep": "ep-divides-tp"},
        id="new-gpu-prefers-cutlass",
    ),
    pytest.param(
        {},
        {"gpu": "h100"},
        ("h100", "none", "triton", True, 1, 1),
        ("fact", "default", "rule", "preference", "default", "rule"),
        {"kernel": "h100-unquantized-triton"},
        id="adjustment-rule-is-also-a-hard-rule",
    ),
    pytest.param(
        {"quant": "fp4"},
        {"gpu": "b200"},
        ("b200", "fp4", "trtllm", False, 1, 1),
        ("fact", "user", "preference", "rule", "default", "rule"),
        {"kernel": "kernel-fp4", "fusion": "trtllm-no-fusion"},
        id="first-applicable-preference-wins",
    ),
    pytest.param(
        {"quant": "fp4", "fusion": True},
        {"gpu": "b200"},
        ("b200", "fp4", "cutlass", True, 1, 1),
        ("fact", "user", "preference", "user", "default", "rule"),
        {"kernel": "kernel-fp4"},
        id="preferred-value-rejected-by-user-pin",
    ),
    pytest.param(
        {"tp": 4},
        {"gpu": "a100"},
        ("a100", "none", "triton", True, 4, 1),
        ("fact", "default", "rule", "preference", "user", "default"),
        {"kernel": "trtllm-needs-quant"},
        id="two-rules-leave-one-kernel",
    ),
    pytest.param(
        {"ep": 8},
        {"gpu": "b200"},
        ("b200", "none", "cutlass", True, 8, 8),
        ("fact", "default", "preference", "preference", "rule", "user"),
        {"tp": "ep-divides-tp"},
        id="user-pin-forces-an-earlier-field",
    ),
    pytest.param(
        {"quant": "fp4"},
        {},
        ("b200", "fp4", "trtllm", False, 1, 1),
        ("rule", "user", "preference", "rule", "default", "rule"),
        {"gpu": "fp4-needs-b200"},
        id="unknown-required-fact-decided-by-rules",
    ),
    pytest.param(
        {"kernel": "cutlass"},
        {"gpu": "h100"},
        ("h100", "fp8", "cutlass", True, 1, 1),
        ("fact", "rule", "user", "preference", "default", "rule"),
        {"quant": "fp4-needs-b200"},
        id="user-pin-kept-auto-field-moves-instead-of-adjusting",
    ),
    pytest.param(
        {"kernel": "cutlass", "quant": "none"},
        {},
        ("b200", "none", "cutlass", True, 1, 1),
        ("rule", "user", "user", "preference", "default", "rule"),
        {"gpu": "cutlass-not-a100"},
        id="adjustment-not-certain-when-fact-unknown",
    ),
]


@pytest.mark.parametrize(("options", "facts", "values", "kinds", "named"), RESOLVED)
def test_resolve(
    toy: Pack,
    options: dict[str, Any],
    facts: dict[str, Any],
    values: tuple[Scalar, ...],
    kinds: tuple[str, ...],
    named: dict[str, str],
) -> None:
    res = run(toy, options, facts)
    assert tuple(res.values) == FIELDS
    assert tuple(res.values.values()) == values
    assert tuple(res.provenance[n].kind for n in FIELDS) == kinds
    for name, rule in named.items():
        assert res.provenance[name].rule == rule
    assert res.adjustments == []


def test_rejected_preferred_value_carries_its_minimal_reason(toy: Pack) -> None:
    prov = run(toy, {"quant": "fp4", "fusion": True}, {"gpu": "b200"}).provenance["kernel"]
    assert [(r.value, r.because) for r in prov.rejected] == [("trtllm", ["trtllm-no-fusion", "fusion=true"])]


def test_rule_provenance_gives_the_because_of_every_forcing_rule(toy: Pack) -> None:
    prov = run(toy, {"kernel": "cutlass"}, {"gpu": "h100"}).provenance["quant"]
    assert prov.kind == "rule"
    assert prov.because is not None
    assert toy.rule("fp4-needs-b200").because in prov.because
    assert toy.rule("h100-unquantized-triton").because in prov.because


def test_required_fact_left_open_is_invalid_input(toy: Pack) -> None:
    with pytest.raises(InvalidInput) as info:
        run(toy, {}, {})
    [issue] = info.value.issues
    assert issue.field == "gpu" and "--set gpu=" in issue.message
    assert issue.allowed == ("a100", "h100", "b200")


# --- adjustments --------------------------------------------------------------------------------
ADJUSTED = [
    pytest.param({"kernel": "cutlass", "quant": "none"}, {"gpu": "h100"}, "cutlass", id="fires"),
    pytest.param(
        {"kernel": "trtllm", "quant": "none"},
        {"gpu": "h100"},
        "trtllm",
        id="fires-though-another-rule-is-broken-too",
    ),
]


@pytest.mark.parametrize(("options", "facts", "requested"), ADJUSTED)
def test_adjustment_replaces_user_pin_and_reports_it(
    toy: Pack, options: dict[str, Any], facts: dict[str, Any], requested: str
) -> None:
    res = run(toy, options, facts)
    assert res.values["kernel"] == "triton"
    [adj] = res.adjustments
    assert (adj.field, adj.requested, adj.resolved, adj.rule) == (
        "kernel",
        requested,
        "triton",
        "h100-unquantized-triton",
    )
    assert adj.because == toy.rule("h100-unquantized-triton").because
    prov = res.provenance["kernel"]
    assert (prov.kind, prov.rule, prov.source) == ("adjusted", "h100-unquantized-triton", "user")
    assert res.to_json()["adjustments"][0]["requested"] == requested


# --- conflicts ----------------------------------------------------------------------------------
# Each row: options, facts, strict -> the conflict's pins (field, value, source) and rule ids.
CONFLICTS = [
    pytest.param(
        {"quant": "fp4"},
        {"gpu": "h100"},
        False,
        [("quant", "fp4", "user"), ("gpu", "h100", "fact")],
        ["fp4-needs-b200"],
        id="fact-and-user-pin",
    ),
    pytest.param(
        {"kernel": "trtllm", "quant": "none"},
        {},
        False,
        [("quant", "none", "user"), ("kernel", "trtllm", "user")],
        ["trtllm-needs-quant"],
        id="adjustment-does-not-fire-when-its-when-is-uncertain",
    ),
    pytest.param(
        {"kernel": "cutlass", "quant": "none"},
        {"gpu": "a100"},
        False,
        [("kernel", "cutlass", "user"), ("gpu", "a100", "fact")],
        ["cutlass-not-a100"],
        id="adjustment-does-not-fire-when-its-when-is-false",
    ),
    pytest.param(
        {"kernel": "cutlass", "quant": "none"},
        {"gpu": "h100"},
        True,
        [("quant", "none", "user"), ("kernel", "cutlass", "user"), ("gpu", "h100", "fact")],
        ["h100-unquantized-triton"],
        id="strict-turns-adjustment-into-conflict",
    ),
    pytest.param(
        {"tp": 1, "ep": 2},
        {"gpu": "b200"},
        False,
        [("tp", 1, "user"), ("ep", 2, "user")],
        ["ep-divides-tp"],
        id="field-to-field",
    ),
    pytest.param(
        {"kernel": "trtllm", "fusion": True, "quant": "fp8", "tp": 8},
        {"gpu": "h100"},
        False,
        [("kernel", "trtllm", "user"), ("fusion", True, "user")],
        ["trtllm-no-fusion"],
        id="unrelated-pins-left-out",
    ),
]


@pytest.mark.parametrize(("options", "facts", "strict", "pins", "rules"), CONFLICTS)
def test_conflict(
    toy: Pack,
    options: dict[str, Any],
    facts: dict[str, Any],
    strict: bool,
    pins: list[tuple[str, Scalar, str]],
    rules: list[str],
) -> None:
    with pytest.raises(Unsatisfiable) as info:
        run(toy, options, facts, strict=strict)
    conflict = info.value.conflict
    assert [(p.field, p.value, p.source) for p in conflict.pins] == pins
    assert [r.id for r in conflict.rules] == rules
    assert all(
        r.because == toy.rule(r.id).because and r.source == toy.rule(r.id).source for r in conflict.rules
    )
    doc = info.value.to_json()
    assert doc["schema"] == 1 and doc["status"] == "conflict"
    for rule in rules:
        assert rule in doc["message"]


# Each row: options, facts -> the repairs as (set, unset) in rank order.
REPAIRS = [
    pytest.param(
        {"quant": "fp4"},
        {"gpu": "h100"},
        [({}, ["quant"]), ({"quant": "fp8"}, [])],
        id="change-the-user-pin-not-the-fact",
    ),
    pytest.param(
        {"tp": 1, "ep": 2},
        {"gpu": "b200"},
        [({}, ["tp"]), ({}, ["ep"]), ({"tp": 4}, []), ({"tp": 8}, [])],
        id="unset-first-then-values-by-rank-loss",
    ),
]


@pytest.mark.parametrize(("options", "facts", "expected"), REPAIRS)
def test_repairs(
    toy: Pack,
    options: dict[str, Any],
    facts: dict[str, Any],
    expected: list[tuple[dict[str, Scalar], list[str]]],
) -> None:
    with pytest.raises(Unsatisfiable) as info:
        run(toy, options, facts)
    repairs = info.value.repairs
    assert [(r.set, r.unset) for r in repairs] == expected
    for repair in repairs:
        kept = {n: v for n, v in options.items() if n not in repair.unset} | repair.set
        assert repair.values == run(toy, kept, facts).values


# --- warnings -----------------------------------------------------------------------------------
WARNINGS = [
    pytest.param({"quant": "fp8", "kernel": "triton"}, {"gpu": "h100"}, ["fp8-triton-slow"], id="fires"),
    pytest.param({"quant": "fp8", "kernel": "triton"}, {"gpu": "a100"}, [], id="forbidden-part-false"),
    pytest.param({"quant": "fp8"}, {"gpu": "b200"}, [], id="auto-kernel-avoids-it-by-preference"),
]


@pytest.mark.parametrize(("options", "facts", "warned"), WARNINGS)
def test_warnings(toy: Pack, options: dict[str, Any], facts: dict[str, Any], warned: list[str]) -> None:
    res = run(toy, options, facts)
    assert [w.rule for w in res.warnings] == warned
    assert all(w.message == toy.rule(w.rule).because for w in res.warnings)


WARN_ON_CUTLASS = """
[[rule]]
id = "cutlass-slow-on-h100"
when = "gpu == 'h100'"
forbid = "kernel == 'cutlass'"
severity = "warn"
because = "cutlass is slow on H100 in this toy; use --kernel triton"
source = "toy/test"
"""


def test_auto_never_takes_a_value_a_warn_rule_flags(toy: Pack, tmp_path: Path) -> None:
    """kernel-new-gpu prefers cutlass on h100; a warn rule flags cutlass there and another flags
    triton with fp8, so auto takes trtllm and reports both as rejected by their warn rules; a
    user who asks for cutlass gets it, with the warning."""
    pack = load_directory(toy_with(tmp_path, WARN_ON_CUTLASS))
    res = run(pack, {"quant": "fp8"}, {"gpu": "h100"})
    assert res.values["kernel"] == "trtllm"
    assert res.warnings == []
    rejected = [(r.value, r.because) for r in res.provenance["kernel"].rejected]
    assert rejected == [
        ("cutlass", ["gpu=h100", "cutlass-slow-on-h100"]),
        ("triton", ["quant=fp8", "gpu=h100", "fp8-triton-slow"]),
    ]
    # With fusion on, trtllm is excluded and every other value is flagged: auto still resolves,
    # to the best-ranked flagged value, and warns (a warning beats no answer).
    fused = run(pack, {"quant": "fp8", "fusion": True}, {"gpu": "h100"})
    assert fused.values["kernel"] == "cutlass"
    assert [w.rule for w in fused.warnings] == ["cutlass-slow-on-h100"]
    chosen = run(pack, {"quant": "fp8", "kernel": "cutlass"}, {"gpu": "h100"})
    assert chosen.values["kernel"] == "cutlass"
    assert [w.rule for w in chosen.warnings] == ["cutlass-slow-on-h100"]
    # Without the warn rule the preference wins: the rule, not the ranking, moved the value.
    assert run(toy, {"quant": "fp8"}, {"gpu": "h100"}).values["kernel"] == "cutlass"


# --- valid choices ------------------------------------------------------------------------------


def test_choices_list_possible_values_and_a_reason_per_excluded_value(toy: Pack) -> None:
    doc = valid_choices(toy, {}, {"gpu": "a100"}).to_json()["choices"]
    gpu_pin = [{"field": "gpu", "value": "a100", "source": "fact"}]
    assert doc["quant"] == {
        "possible": ["none", "fp8"],
        "excluded": {"fp4": {"pins": gpu_pin, "rules": ["fp4-needs-b200"]}},
        "warned": {},
    }
    assert doc["kernel"] == {
        "possible": ["triton", "trtllm"],
        "excluded": {"cutlass": {"pins": gpu_pin, "rules": ["cutlass-not-a100"]}},
        "warned": {},
    }
    assert doc["fusion"] == {"possible": [False, True], "excluded": {}, "warned": {}}
    assert set(doc) == {"quant", "kernel", "fusion", "tp", "ep"}


def test_choices_leave_the_fields_own_pin_out(toy: Pack) -> None:
    choices = valid_choices(toy, {"tp": 2}, {"gpu": "b200"})
    assert choices.possible["tp"] == [1, 2, 4, 8]
    assert choices.possible["ep"] == [1, 2]
    reason = choices.to_json()["choices"]["ep"]["excluded"]["8"]
    assert reason == {"pins": [{"field": "tp", "value": 2, "source": "user"}], "rules": ["ep-divides-tp"]}


def test_choices_of_a_failing_request_explain_each_exclusion(toy: Pack) -> None:
    # quant=fp4 on h100 fails on its own, so no kernel is possible; each exclusion should say why.
    choices = valid_choices(toy, {"quant": "fp4"}, {"gpu": "h100"}, fields=["kernel"])
    assert choices.possible["kernel"] == []
    for value, items in choices.excluded["kernel"].items():
        assert "fp4-needs-b200" in [i.name for i in items if i.kind == "rule"], value


# --- the condition language ---------------------------------------------------------------------
SAMPLE: dict[str, Scalar] = {
    "gpu": "h100",
    "quant": "fp8",
    "kernel": "triton",
    "fusion": True,
    "tp": 4,
    "ep": 2,
}

# Each row: condition text -> fields it reads, its value on SAMPLE.
ACCEPTED = [
    ("quant == 'fp8'", ("quant",), True),
    ('quant != "fp8"', ("quant",), False),
    ("'fp8' == quant", ("quant",), True),
    ("quant in ['fp8', 'fp4']", ("quant",), True),
    ("quant not in ('fp8',)", ("quant",), False),
    ("gpu in NEW_GPUS", ("gpu",), True),
    ("gpu not in NEW_GPUS", ("gpu",), False),
    ("tp >= 4", ("tp",), True),
    ("tp < 4", ("tp",), False),
    ("tp > -1", ("tp",), True),
    ("ep == tp", ("ep", "tp"), False),
    ("ep <= tp", ("ep", "tp"), True),
    ("ep < tp <= 8", ("ep", "tp"), True),
    ("fusion", ("fusion",), True),
    ("not fusion", ("fusion",), False),
    ("fusion == False", ("fusion",), False),
    ("not not fusion", ("fusion",), True),
    ("quant == 'fp8' and (kernel == 'cutlass' or not fusion)", ("quant", "kernel", "fusion"), False),
    ("quant == 'fp8' and kernel == 'triton' or tp > 8", ("quant", "kernel", "tp"), True),
    ("True", (), True),
    # Products of integer fields and literals (tp 4, ep 2 on SAMPLE).
    ("2 * tp <= 4 * ep", ("tp", "ep"), True),
    ("tp * 2 == 8", ("tp",), True),
    ("128 * tp > 256 * ep", ("tp", "ep"), False),
    ("tp * ep * 2 == 16", ("tp", "ep"), True),
    ("tp <= ep * 2", ("tp", "ep"), True),
    ("ep * -3 < tp", ("ep", "tp"), True),
]


@pytest.mark.parametrize(("text", "reads", "value"), ACCEPTED, ids=[row[0] for row in ACCEPTED])
def test_condition_accepted(toy: Pack, text: str, reads: tuple[str, ...], value: bool) -> None:
    cond = parse(text, toy.fields, toy.sets)
    assert cond.fields == reads
    assert cond.evaluate(SAMPLE) is value
    assert cond.partial(SAMPLE) is value
    if reads:
        assert cond.partial({}) is None


# Each row: where the text goes in a rule or preference, the text. Every one is a load error that
# names the rule and shows the text.
REJECTED = [
    pytest.param("require", "len(quant) == 3", id="call"),
    pytest.param("require", "__import__('os').system('true')", id="import-call"),
    pytest.param("require", "quant.upper() == 'FP8'", id="method-call"),
    pytest.param("require", "quant.real == 'fp8'", id="attribute"),
    pytest.param("require", "quant[0] == 'f'", id="subscript"),
    pytest.param("require", "lambda: True", id="lambda"),
    pytest.param("require", "(lambda: True)()", id="lambda-call"),
    pytest.param("require", "quant == f'fp{8}'", id="f-string"),
    pytest.param("require", "quantization == 'fp8'", id="unknown-name"),
    pytest.param("when", "gpu in BLACKWELL", id="unknown-set"),
    pytest.param("require", "quant == 'int4'", id="value-outside-domain"),
    pytest.param("forbid", "gpu in ['a100', 'v100']", id="list-value-outside-domain"),
    pytest.param("require", "quant in NEW_GPUS", id="set-outside-domain"),
    pytest.param("require", "tp == 3", id="int-outside-domain"),
    pytest.param("require", "tp == '8'", id="str-for-int"),
    pytest.param("require", "fusion == 1", id="int-for-bool"),
    pytest.param("require", "tp == True", id="bool-for-int"),
    pytest.param("require", "quant == tp", id="fields-of-different-types"),
    pytest.param("require", "quant < 'fp8'", id="order-on-string"),
    pytest.param("require", "tp > '4'", id="order-with-string-literal"),
    pytest.param("require", "quant", id="bare-non-bool-field"),
    pytest.param("require", "quant == None", id="none-literal"),
    pytest.param("require", "tp > 1.5", id="float-literal"),
    pytest.param("require", "tp + 1 == 2", id="arithmetic"),
    pytest.param("require", "tp is 1", id="is-operator"),
    pytest.param("require", "quant in [kernel]", id="field-in-list"),
    pytest.param("require", "quant == ['fp8']", id="list-without-in"),
    pytest.param("require", "quant in 'fp8'", id="in-a-string"),
    pytest.param("require", "'fp8' in quant", id="literal-on-the-left-of-in"),
    pytest.param("require", "[q for q in NEW_GPUS]", id="comprehension"),
    pytest.param("require", "(tp := 1) == 1", id="walrus"),
    pytest.param("require", "fusion if tp > 1 else True", id="conditional-expression"),
    pytest.param("require", "quant ==", id="syntax-error"),
    pytest.param("require", "quant = 'fp8'", id="assignment"),
    pytest.param("require", " ", id="blank"),
    pytest.param("require", "not " * 40 + "fusion", id="too-deep-not"),
    pytest.param("require", "(fusion and " * 40 + "fusion" + ")" * 40, id="too-deep-and"),
    pytest.param("require", "fusion or " * 500 + "fusion", id="too-long"),
    pytest.param("preference", "kernel == 'triton' and quant()", id="in-a-preference"),
    pytest.param("require", "quant * 2 == 'fp8fp8'", id="product-of-a-string-field"),
    pytest.param("require", "tp * fusion == 1", id="product-of-a-bool-field"),
    pytest.param("require", "tp * 2 in [2, 4]", id="product-in-a-list"),
    pytest.param("require", "tp + 1 == 2", id="sum"),
    pytest.param("require", "tp * 'a' == 2", id="product-with-a-string"),
]


def write_pack(root: Path, files: Mapping[str, str], manifest: str | None = None) -> Path:
    names = ", ".join(f'"{n}"' for n in files)
    (root / "pack.toml").write_text(
        manifest if manifest is not None else f'[pack]\nname = "t"\nversion = "1"\nfiles = [{names}]\n'
    )
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def toy_with(root: Path, extra: str) -> Path:
    """The toy pack plus `extra` TOML (rules or preferences) in a file of its own."""
    files = {name: (TOY_DIR / name).read_text() for name in ("fields.toml", "rules.toml")}
    manifest = (
        (TOY_DIR / "pack.toml")
        .read_text()
        .replace(
            'files = ["fields.toml", "rules.toml"]', 'files = ["fields.toml", "rules.toml", "extra.toml"]'
        )
    )
    assert "extra.toml" in manifest
    return write_pack(root, {**files, "extra.toml": extra}, manifest)


def shows(message: str, text: str) -> bool:
    """The message quotes the text as written or as Python prints it back (the start of it, when long)."""
    forms = [text.strip()]
    with contextlib.suppress(SyntaxError):
        forms.append(ast.unparse(ast.parse(text.strip(), mode="eval").body))
    return any(form[:80] in message for form in forms)


def toml_string(text: str) -> str:
    return "'''" + text + "'''"


@pytest.mark.parametrize(("slot", "text"), REJECTED)
def test_condition_rejected_with_rule_and_text(tmp_path: Path, slot: str, text: str) -> None:
    if slot == "preference":
        extra = (
            f'[[preference]]\nid = "bad-one"\nfield = "kernel"\nprefer = ["triton"]\n'
            f'when = {toml_string(text)}\nbecause = "b"\nsource = "s"\n'
        )
        where = "preference bad-one"
    else:
        body = f"{slot} = {toml_string(text)}\n"
        if slot == "when":
            body += 'require = "fusion"\n'
        extra = f'[[rule]]\nid = "bad-one"\n{body}because = "b"\nsource = "s"\n'
        where = "rule bad-one"
    with pytest.raises(PackError) as info:
        load_directory(toy_with(tmp_path, extra))
    [problem] = info.value.problems
    assert problem.where == where and problem.file == "extra.toml"
    assert shows(problem.message, text), problem.message
    assert where in str(info.value)


def test_order_comparison_of_string_fields_is_rejected(tmp_path: Path) -> None:
    extra = '[[rule]]\nid = "bad-one"\nrequire = "quant < kernel"\nbecause = "b"\nsource = "s"\n'
    with pytest.raises(PackError):
        load_directory(toy_with(tmp_path, extra))


def test_rule_reading_no_field_is_enforced(tmp_path: Path) -> None:
    extra = '[[rule]]\nid = "never"\nrequire = "False"\nbecause = "b"\nsource = "s"\n'
    try:
        pack = load_directory(toy_with(tmp_path, extra))
    except PackError:
        return
    with pytest.raises(Unsatisfiable):
        run(pack, {}, {"gpu": "b200"})


# --- loading a pack: every problem at once ------------------------------------------------------

BROKEN_FIELDS = """
[field.a]
kind = "option"
domain = ["x", "y"]

[field.b]
kind = "option"
domain = []

[field.c]
kind = "option"
domain = [1, "x"]

[field.d]
kind = "option"
domain = ["x", "y"]
colour = "red"

[field.e]
kind = "option"
domain = [1, 2]
depends_on = ["zz"]
"""

BROKEN_RULES = """
[[rule]]
id = "dup"
require = "a == 'x'"
because = "b"
source = "s"

[[rule]]
id = "dup"
require = "a == 'y'"
because = "b"
source = "s"

[[rule]]
id = "no-reason"
require = "a == 'x'"
because = "  "
source = "s"

[[rule]]
id = "unknown-field"
when = "a == 'x'"
require = "zz == 1"
because = "b"
source = "s"

[[rule]]
id = "unknown-key"
requires = "a == 'x'"
because = "b"
source = "s"

[[preference]]
id = "pref-unknown-field"
field = "nope"
prefer = ["x"]
because = "b"
source = "s"

[[preference]]
id = "dup"
field = "a"
prefer = ["x"]
because = "b"
source = "s"

[[rules]]
id = "misspelt-table"
"""


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    write_pack(
        tmp_path,
        {"fields.toml": BROKEN_FIELDS, "rules.toml": BROKEN_RULES, "bad.toml": "[field.x\nkind = 'option'\n"},
    )
    with pytest.raises(PackError) as info:
        load_directory(tmp_path)
    assert type(info.value) is PackError
    found = [(p.file, p.where, p.message) for p in info.value.problems]
    expected = [
        ("bad.toml", "file", "not valid TOML"),
        ("fields.toml", "field b", "empty"),
        ("fields.toml", "field c", "must all be strings, all integers or all booleans"),
        ("fields.toml", "field d", "colour"),
        ("fields.toml", "field e", "zz"),
        ("rules.toml", "rule dup", "duplicate id"),
        ("rules.toml", "preference dup", "duplicate id"),
        ("rules.toml", "rule no-reason", "`because` is empty"),
        ("rules.toml", "rule unknown-field", "zz"),
        ("rules.toml", "rule unknown-key", "requires"),
        ("rules.toml", "preference pref-unknown-field", "nope"),
        ("rules.toml", "rules", "unknown table"),
    ]
    for file, where, words in expected:
        assert any(f == file and w == where and words in m for f, w, m in found), (file, where, words, found)
    text = str(info.value)
    assert "pack 't' is broken" in text and f"({len(found)} problem(s))" in text


CYCLE_FIELDS = """
[field.a]
kind = "option"
domain = [1, 2]
depends_on = ["c"]

[field.b]
kind = "option"
domain = [1, 2]
depends_on = ["a"]

[field.c]
kind = "option"
domain = [1, 2]
depends_on = ["b"]
"""


def test_depends_on_cycle_is_a_dependency_cycle_showing_the_chain(tmp_path: Path) -> None:
    write_pack(tmp_path, {"fields.toml": CYCLE_FIELDS})
    with pytest.raises(DependencyCycle) as info:
        load_directory(tmp_path)
    [problem] = info.value.problems
    assert problem.message == "a -> c -> b -> a"
    assert info.value.exit_code == 3


def test_a_cycle_among_other_problems_is_listed_with_them(tmp_path: Path) -> None:
    write_pack(tmp_path, {"fields.toml": CYCLE_FIELDS + '\n[field.d]\nkind = "option"\ndomain = []\n'})
    with pytest.raises(PackError) as info:
        load_directory(tmp_path)
    assert {p.where for p in info.value.problems} == {"depends_on cycle", "field d"}


@pytest.mark.parametrize(
    ("files", "manifest", "words"),
    [
        pytest.param({}, None, "no pack.toml", id="no-manifest"),
        pytest.param(
            {"x.toml": ""},
            '[pack]\nname = "t"\nversion = "1"\nfiles = ["x.toml", "gone.toml"]\n',
            "listed in pack.toml but missing",
            id="listed-file-missing",
        ),
        pytest.param({"x.toml": ""}, 'name = "t"\n', "needs a [pack] table", id="no-pack-table"),
        pytest.param(
            {"x.toml": ""},
            '[pack]\nname = "t"\nfiles = ["../x.toml"]\n',
            "not a .toml file name",
            id="path-outside-the-pack",
        ),
    ],
)
def test_pack_manifest_problems(
    tmp_path: Path, files: dict[str, str], manifest: str | None, words: str
) -> None:
    if manifest is None and not files:
        tmp_path.mkdir(exist_ok=True)
    else:
        write_pack(tmp_path, files, manifest)
    with pytest.raises(PackError) as info:
        load_directory(tmp_path)
    assert any(words in p.message for p in info.value.problems), info.value.problems


# --- the order of decisions -----------------------------------------------------------------------

CYCLE_OF_PREFERENCES = """
[field.a]
kind = "option"
domain = ["x", "y"]

[field.b]
kind = "option"
domain = ["x", "y"]

[[rule]]
id = "b-is-y"
require = "b == 'y'"
because = "b"
source = "s"

[[preference]]
id = "a-follows-b"
field = "a"
when = "b == 'y'"
prefer = ["y"]
because = "b"
source = "s"

[[preference]]
id = "b-follows-a"
field = "b"
when = "a == 'x'"
prefer = ["x"]
because = "b"
source = "s"
"""


def test_preference_reading_a_later_field_of_its_cycle_does_not_apply(tmp_path: Path) -> None:
    # a and b form a cycle and are decided in declaration order, so a's preference reads b while
    # b is undecided: it does not apply, even though a one-field rule leaves b a single value
    # (the engine of 6529722 counted such a field as decided and chose a = y).
    pack = load_directory(write_pack(tmp_path, {"fields.toml": CYCLE_OF_PREFERENCES}))
    res = run(pack, {}, {})
    assert res.values == {"a": "x", "b": "y"}
    assert (res.provenance["a"].kind, res.provenance["b"].kind) == ("default", "rule")


def test_a_literal_is_checked_against_its_own_fields_domain_type(tmp_path: Path) -> None:
    """`[0, 1]` and `[false, true]` are equal tuples in Python; a literal of one is still not a
    value of the other (the domain check must not share answers between them)."""
    fields = (
        '[field.flag]\nkind = "option"\ndomain = [false, true]\n\n'
        '[field.count]\nkind = "option"\ndomain = [0, 1]\n'
    )
    rules = (
        '[[rule]]\nid = "flag-true"\nrequire = "flag == True"\nbecause = "b"\nsource = "s"\n\n'
        '[[rule]]\nid = "count-true"\nrequire = "count == True"\nbecause = "b"\nsource = "s"\n'
    )
    write_pack(tmp_path, {"fields.toml": fields, "rules.toml": rules})
    with pytest.raises(PackError) as info:
        load_directory(tmp_path)
    assert [p.where for p in info.value.problems] == ["rule count-true"], info.value.problems


def test_a_backend_that_needs_another_architecture_is_refuted_without_a_search() -> None:
    """On ROCm, `attention_backend=trtllm_mha` survives forward checking (its rule reads three
    backend fields, two still free) but `dead_end` sees that the rule fails for every gfx
    architecture; `triton` is not refuted."""
    from solver import load_pack
    from solver.reasoning.resolution import plan_for

    cp = plan_for(load_pack("sglang")).compiled
    state = cp.start({"platform": "hip"})
    assert state is not None
    verdicts = {}
    for value in ("trtllm_mha", "triton"):
        changed: list[str] = []
        assert state.fix("attention_backend", value, changed), value
        verdicts[value] = state.dead_end(changed, cp.never)
        state.undo()
    assert verdicts == {"trtllm_mha": True, "triton": False}
