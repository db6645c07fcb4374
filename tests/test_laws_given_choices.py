"""The choices law on generated packs whose rules read `given(OPTION)`: picking a value types
the field, so its choices are those of the pack that gives it (solver.reasoning.givenchoices).

The request's own answer is carried to that pack where the rules that read `given(FIELD)` cannot
change it (`_carried`; a warn rule among them: only its flags are the copy's, `_typed_warnings`).
The oracle of tests/generated.py reads no request marks, so the judge is the engine's own answer
with nothing carried: every such field asked of its copy, which answers exactly by construction.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from generated import Case, Cond, FieldSpec, PackSpec, RuleSpec, cases
from hypothesis import event, example, given
from test_laws import law

from solver import load_pack, valid_choices
from solver.reasoning import givenchoices
from solver.reasoning.diagnose import prepare_choices

_A_IS_P = Cond("cmp", op="==", name="a", value="p")
# A warn rule flags `a = p` typed only: its values carry over, its flag is the copy's (150 drawn
# packs met no such flag in a run here, 1,500 did: with the flags left out, only that run failed).
_FLAGGED_ONLY_TYPED = Case(
    spec=PackSpec(
        fields=(FieldSpec("a", "option", ("p", "q")), FieldSpec("b", "option", ("p", "q"))),
        sets=(),
        rules=(
            RuleSpec("typed-a-p-slow", Cond("given", name="a"), when=_A_IS_P, forbid=True, severity="warn"),
        ),
        prefs=(),
    ),
    options={"b": "p"},
    facts={},
    strict=True,
)


@law(150)
@given(case=cases(unsearched=True, given_rules=True))
@example(case=_FLAGGED_ONLY_TYPED)
def test_a_carried_answer_is_the_answer_of_the_pack_that_gives_the_field(case: Case) -> None:
    """Every field's possible values and warn flags, the carried ones too, are those each field's
    own copy answers (asked of it for every field: `_carried` never carrying)."""
    pack, names = case.pack, list(case.pack.fields)
    if any(r.severity == "warn" and "given(" in f"{r.when} {r.require} {r.forbid}" for r in pack.rules):
        event("a warn rule reads given()")
    got = valid_choices(pack, case.options, case.facts, fields=names, reasons=False)
    with mock.patch.object(givenchoices, "_carried", lambda *args: False):
        asked = valid_choices(pack, case.options, case.facts, fields=names, reasons=False)
    assert got.possible == asked.possible
    assert got.warned == asked.warned


# SGLang requests a page asks: one fact (the first click), every typed field carried over; and a
# mamba model with no extra buffer, whose page_size typed is 1 only (mamba-no-buffer-page-1 reads
# `given(page_size)`: typing it tightens the rule), which no carry may hide.
_SGLANG = [
    ({"platform": "cuda"}, True),
    ({"platform": "npu"}, True),
    ({"platform": "xpu"}, True),
    ({"platform": "cuda", "architecture": "Lfm2ForCausalLM"}, False),
]


@pytest.mark.parametrize(("facts", "all_carried"), _SGLANG)
def test_sglangs_choices_carry_over_what_the_typed_copies_answer(
    facts: dict[str, str], all_carried: bool
) -> None:
    """SGLang's choices after `prepare_choices`, as a server asks them: what is carried over
    from the request's own answer (`_carried`) is what each field's typed copy answers when
    asked. On one fact every typed field (`given(page_size)`, `given(quantization)`, ...) is
    carried (asking the copies again was round 18's 80 ms, main 01bb169)."""
    pack = load_pack("sglang")
    prepare_choices(pack)
    carried: list[bool] = []
    real = givenchoices._carried

    def spy(*args: Any) -> bool:
        carried.append(real(*args))
        return carried[-1]

    with mock.patch.object(givenchoices, "_carried", spy):
        got = valid_choices(pack, {}, facts, reasons=False)
    with mock.patch.object(givenchoices, "_carried", lambda *args: False):
        asked = valid_choices(pack, {}, facts, reasons=False)
    assert got.possible == asked.possible
    assert got.warned == asked.warned
    assert {n: set(v) for n, v in got.excluded.items()} == {n: set(v) for n, v in asked.excluded.items()}
    if "architecture" in facts:
        assert got.possible["page_size"] == [1]
    assert carried and all(carried) == all_carried
