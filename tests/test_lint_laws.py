"""Lint's shortcuts never change a finding: laws on small generated packs.

Lint answers most of its questions from solutions it met earlier (a kept solution that already
has the property, or one repaired by local search) and only then searches. The reference here is
the same linter with nothing kept (`_Exact`: every question is an exact search of its own), and
brute force over the cartesian product (tests/generated.py's `Oracle`, which evaluates its own
condition trees) judges what the findings claim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from generated import Oracle, PackSpec, RuleSpec, packs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import load_pack
from solver.budget import Budget
from solver.lint.checks import LINT_BUDGET, SAMPLE_FACTS, _Linter
from solver.lint.moves import known_first
from solver.model import Scalar
from solver.values import show

pytestmark = pytest.mark.property

LAW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _Exact(_Linter):
    """The linter with no solution kept: no shortcut from earlier answers, no local repair; no
    question of rules alone shared between reasons, no layer's state kept for the next reason, no
    condition's fields narrowed up front."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._prefixes = None

    def learn(self, solution: dict[str, Scalar]) -> None:
        pass

    def narrowed(self, indices: Sequence[int]) -> None:
        return None

    def _refuted_within(self, pins: Mapping[str, Scalar], layer: list[str]) -> bool:
        return self.query(pins, layer, [], local=False) is None  # (no layer's state kept)


def findings(linter_type: type[_Linter], spec: PackSpec) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    linter = linter_type(spec.pack, samples=SAMPLE_FACTS, seed=0, budget=Budget(LINT_BUDGET))
    linter.run(totality=True)
    stats = {k: v for k, v in linter.stats.items() if k != "timings"}
    return [f.to_json() for f in linter.findings], stats


@LAW
@given(spec=packs())
def test_the_findings_are_those_of_an_exact_search_per_question(spec: PackSpec) -> None:
    """Every finding, its ids, message, reason and witness, and the totality stats, equal those
    of the linter that keeps no solution and searches for every answer."""
    assert findings(_Linter, spec) == findings(_Exact, spec)


@LAW
@given(spec=packs())
def test_dead_values_and_implied_rules_agree_with_brute_force(spec: PackSpec) -> None:
    """CS100 exactly when no configuration exists; CS101 names exactly the values no
    configuration holds; each CS104's reason, with the rule broken, has no configuration, and
    has one without any of its rules."""
    oracle = Oracle(spec)
    found, _ = findings(_Linter, spec)
    codes = {f["code"] for f in found}
    if not oracle.sat({}):
        assert "CS100" in codes
        return
    assert "CS100" not in codes
    dead = {
        f"{name}={show(value)}"
        for name, values in oracle.domains.items()
        for value in values
        if not oracle.sat({name: value})
    }
    assert {f["ids"][0] for f in found if f["code"] == "CS101"} == dead
    hard = {r.id: r for r in oracle.hard}
    for finding in found:
        subject = finding["ids"][0]
        if finding["code"] != "CS104" or subject not in hard:
            continue
        rule = hard[subject]
        reason = finding["reason"]
        assert not _broken_by(oracle, rule, reason), f"{subject} is broken by a configuration of {reason}"
        # Minimal: without any one of its rules, a configuration breaks the rule (QuickXplain's
        # questions answered by an earlier witness must not stop it short).
        for left in reason:
            rest = [r for r in reason if r != left]
            assert _broken_by(oracle, rule, rest), f"{subject}'s reason {reason} holds without {left}"


def _broken_by(oracle: Oracle, rule: RuleSpec, reason: list[str]) -> bool:
    """Whether a configuration of the `reason` rules breaks `rule` (brute force)."""
    return any(
        not oracle.holds(rule, dict(zip(oracle.names, row, strict=True)))
        for row in oracle.solutions({}, reason)
    )


@pytest.mark.parametrize(
    "values, known, expected",
    [
        ((1, True, "1", 2), True, [True, 1, "1", 2]),
        ((1, True, "1", 2), 1, [1, True, "1", 2]),
        (("a", "b", "c"), "c", ["c", "a", "b"]),
    ],
)
def test_a_known_solution_first_order_keeps_every_value(
    values: tuple[Scalar, ...], known: Scalar, expected: list[Scalar]
) -> None:
    """QuickXplain's counter searches try a known solution's values first: a reordering of the
    whole domain (an exact search, the same answers), the known value by type too (True is not 1)."""
    order = list(known_first({"f": known})("f", values))
    assert [(type(v), v) for v in order] == [(type(v), v) for v in expected]


@LAW
@given(spec=packs())
def test_a_one_change_witness_breaks_only_its_rule(spec: PackSpec) -> None:
    """`one_change` (a known solution with one field changed, lint's first answer to "is this
    rule implied", "can its `when` hold") gives, when it gives anything, a configuration that
    brute force says breaks that rule and no other hard rule; and on these packs it answers."""
    oracle = Oracle(spec)
    if not oracle.sat({}):
        return
    linter = _Linter(spec.pack, samples=SAMPLE_FACTS, seed=0, budget=Budget(LINT_BUDGET))
    linter.check_values()  # fills the pool of known solutions
    for rule in spec.rules:
        negated = linter.extra(linter.sem.rules[rule.id], negate=True)
        found = linter.one_change(rule.id, negated)
        if found is None:
            continue
        assert not oracle.holds(rule, found), f"{rule.id} holds on {found}"
        assert all(oracle.holds(other, found) for other in oracle.hard if other.id != rule.id)


def test_one_change_answers_only_with_every_other_rule_kept(tmp_path: Path) -> None:
    """A rule broken by changing one field of a known solution, every other rule kept, is
    answered without a search; a change that breaks another rule too is no answer."""
    from test_lint import FACTS_ONLY_PACK, write_pack

    pack = load_pack(write_pack(tmp_path / "pack", FACTS_ONLY_PACK))
    linter = _Linter(pack, samples=SAMPLE_FACTS, seed=0, budget=Budget(LINT_BUDGET))

    def one_change(rule_id: str) -> dict[str, Scalar] | None:
        return linter.one_change(rule_id, linter.extra(linter.sem.rules[rule_id], negate=True))

    linter.learn({"gpu": "a100", "ckpt": "none", "fmt": "st", "quant": "none"})
    assert one_change("fp8-quant-needs-h100") == {"gpu": "a100", "ckpt": "none", "fmt": "st", "quant": "fp8"}
    assert one_change("quant-follows-ckpt") is None  # ckpt=fp8 on an a100 breaks fp8-ckpt-needs-h100 too
    linter.learn({"gpu": "h100", "ckpt": "none", "fmt": "st", "quant": "none"})
    assert one_change("quant-follows-ckpt") == {"gpu": "h100", "ckpt": "fp8", "fmt": "st", "quant": "none"}


@LAW
@given(spec=packs(), data=st.data())
def test_a_question_grown_from_a_prefix_is_the_question_started_afresh(
    spec: PackSpec, data: st.DataObject
) -> None:
    """QuickXplain's questions grow from an earlier one's state (`State.extended`,
    `solver.lint.grow`): the same propagated domains and open rules as `CompiledPack.start` with
    every pin and rule, and the search from it, hinted by a solution of the prefix and told where
    the growth touched (`around`), answers as brute force does."""
    from solver.engine.csp import CompiledPack

    oracle = Oracle(spec)
    cp = CompiledPack(spec.pack)
    items: list[tuple[str, Any]] = [("rule", r) for r in cp.rule_ids]
    items += [("pin", (f.name, data.draw(st.sampled_from(f.domain)))) for f in spec.fields]
    items = data.draw(st.permutations(items))
    cut = data.draw(st.integers(0, len(items)))
    chosen = items[: data.draw(st.integers(cut, len(items)))]

    def split(part: list[tuple[str, Any]]) -> tuple[dict[str, Scalar], list[str]]:
        return dict(v for k, v in part if k == "pin"), [v for k, v in part if k == "rule"]

    head_pins, head_rules = split(chosen[:cut])
    pins, rules = split(chosen)
    tail_pins, tail_rules = split(chosen[cut:])
    head = cp.start(head_pins, rules=head_rules)
    fresh = cp.start(pins, rules=rules)
    if head is None:
        assert fresh is None
        return
    around: list[str] = []
    grown = head.extended(tail_pins, [cp.constraints[r] for r in tail_rules], around)
    assert (grown is None) == (fresh is None)
    if grown is None or fresh is None:
        assert not oracle.sat(pins, rules)
        return
    assert grown.domains == fresh.domains
    assert set(grown.open) == set(fresh.open)
    known = cp.search(head)
    assert (known is not None) == oracle.sat(head_pins, head_rules)
    if known is None:
        assert not oracle.sat(pins, rules)  # (more pins and rules: no solution either)
        return
    found = cp.search(grown, hint=known, around=around)
    assert (found is not None) == oracle.sat(pins, rules)
    if found is not None:
        assert all(found[n] == v and type(found[n]) is type(v) for n, v in pins.items())
        assert all(oracle.holds(r, found) for r in oracle.hard if r.id in rules)


def test_a_grown_question_names_the_fields_its_growth_narrowed(tmp_path: Path) -> None:
    """`State.extended` reports the fields propagation narrowed, not only those pinned or read by
    the new rules: the prefix's solution (the search's hint) holds a value there that is gone,
    and a search told to look only at the pinned field kept it (quant=none with ckpt=fp8)."""
    from test_lint import FACTS_ONLY_PACK, write_pack

    from solver.engine.csp import CompiledPack

    cp = CompiledPack(load_pack(write_pack(tmp_path / "pack", FACTS_ONLY_PACK)))
    head = cp.start({}, rules=["quant-follows-ckpt"])
    assert head is not None
    around: list[str] = []
    grown = head.extended({"ckpt": "fp8"}, [], around)
    assert grown is not None
    assert "quant" in around
    hint = {"gpu": "a100", "ckpt": "none", "fmt": "st", "quant": "none"}
    found = cp.search(grown, hint=hint, around=around)
    assert found is not None
    assert (found["ckpt"], found["quant"]) == ("fp8", "fp8")


CHAIN_PACK = {
    "pack.toml": '[pack]\nname = "chain"\nversion = "1"\ndescription = "a chain and a filler"\n'
    'files = ["rules.toml"]\n',
    "rules.toml": "\n".join(
        [
            f'[field.{n}]\nkind = "option"\ndomain = [false, true]\n'
            for n in ["a", "b", "c", *(f"x{i}" for i in range(8))]
        ]
        + [
            f'[[rule]]\nid = "{rid}"\nwhen = "{when} == True"\nrequire = "{then} == True"\n'
            'because = "test"\nsource = "tests/test_lint_laws.py"\n'
            for rid, when, then in [
                ("a-then-b", "a", "b"),
                ("b-then-c", "b", "c"),
                ("a-then-c", "a", "c"),  # implied by the two above
                *((f"x{i}-then-x{i + 1}", f"x{i}", f"x{i + 1}") for i in range(7)),
            ]
        ]
    ),
}


def test_a_ring_refutes_before_it_tries_a_witness(tmp_path: Path) -> None:
    """`around` asks the layer's rules alone first, within a few steps: a question with no
    solution there is refuted with that one search, by propagation, not after a witness per known
    solution (each a search that must fail: synthetic 1,000, 704 of them, 1.66 s CPU); a question
    with one gets the witness it got, after a refutation cut short."""
    from test_lint import write_pack

    from solver.lint.rings import QUICK_REFUTE, around

    pack = load_pack(write_pack(tmp_path / "pack", CHAIN_PACK))
    linter = _Linter(pack, samples=SAMPLE_FACTS, seed=0, budget=Budget(LINT_BUDGET))
    names = list(pack.fields)
    for ones in range(4):  # known solutions: everything false but the last `ones` of the filler
        linter.learn({n: n in names[len(names) - ones :] for n in names})
    asked: list[Mapping[str, Scalar]] = []
    limits: list[int] = []
    solution = linter.oracle.solution

    def counted(pins: Mapping[str, Scalar], **kwargs: Any) -> dict[str, Scalar] | None:
        asked.append(pins)
        limits.append(kwargs["limit"].steps)
        return solution(pins, **kwargs)

    linter.oracle.solution = counted  # type: ignore[method-assign]
    implied = linter.extra(linter.sem.rules["a-then-c"], negate=True)
    assert around(linter, {}, linter.others("a-then-c"), [implied], [linter.oracle_index(implied)]) == (
        None,
        True,
    )
    assert len(asked) == 1
    asked.clear()
    limits.clear()
    not_implied = linter.extra(linter.sem.rules["a-then-b"], negate=True)
    found, refuted = around(
        linter, {}, linter.others("a-then-b"), [not_implied], [linter.oracle_index(not_implied)]
    )
    assert not refuted and found is not None
    assert found["b"] is False and found["a"] is True and found["c"] is True
    # The layer has a solution: its refutation was a try of `QUICK_REFUTE` steps (a whole one
    # would search the layer for a solution that proves nothing), then the witness.
    assert limits[0] <= QUICK_REFUTE < limits[1]
    assert len(asked) == 2
