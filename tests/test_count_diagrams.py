"""Laws of the diagram counter (`solver.engine.diagrams`), what `confsolve count` uses: its counts
equal brute force (fields sharing one domain, pins, splits, one counter asked in turn), a rule's
diagram built from its text is the diagram of its whole condition, and `count` falls back to
`ModelCounter` where the pack is not compiled. The laws of `count` itself (tests/test_count.py)
run through it too."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest
from generated import Oracle, packs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import load_pack
from solver.engine import count as count_module
from solver.engine.count import CountLimitReached, Limit, ModelCounter, count, pack_checks
from solver.engine.csp import compile_pack
from solver.engine.diagrams import (
    RULE_EXPANSION_BUDGET,
    DiagramCounter,
    Diagrams,
    TooLarge,
    elimination_order,
    most_settling,
)
from solver.pack.expr import Condition

FEW = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
SHARED = (0, 1, 2)
NAMES = ("w", "x", "y", "z")


@st.composite
def shared_domain_checks(draw: st.DrawFn) -> list[Condition]:
    """Two to five rules over two to four of four fields that share one domain, each an arbitrary
    truth table (not symmetric in its fields), in the order drawn (not the diagram's order)."""
    checks = []
    for _ in range(draw(st.integers(2, 5))):
        fields = tuple(draw(st.permutations(NAMES))[: draw(st.integers(2, 4))])
        rows = list(itertools.product(SHARED, repeat=len(fields)))
        true = draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
        table = dict(zip(rows, true, strict=True))
        checks.append(Condition.over(fields, lambda v, t=table: t[tuple(v)]))
    return checks


def brute(checks: list[Condition], pins: Mapping[str, int]) -> int:
    rows = (dict(zip(NAMES, row, strict=True)) for row in itertools.product(SHARED, repeat=len(NAMES)))
    return sum(
        1
        for r in rows
        if all(r[n] == v for n, v in pins.items()) and all(c.holds([r[f] for f in c.fields]) for c in checks)
    )


@pytest.mark.property
@FEW
@given(checks=shared_domain_checks())
def test_diagram_counts_equal_brute_force_where_fields_share_a_domain(checks: list[Condition]) -> None:
    """One diagram counter asked many queries in turn (its component counts shared between them)
    gives the brute-force count for each, and so does a fresh one."""
    counter = DiagramCounter(dict.fromkeys(NAMES, SHARED), checks)
    queries = [{}, *({n: v} for n in NAMES for v in SHARED), {"w": 0, "x": 1}, {"y": 2, "z": 0, "w": 1}]
    for pins in queries:
        assert counter.count(pins) == brute(checks, pins), pins
        assert counter.fresh().count(pins) == brute(checks, pins), pins


WIDE = tuple("abcdef")


@st.composite
def sparse_checks(draw: st.DrawFn) -> list[Condition]:
    """Three to nine rules over one to three of six three-valued fields, each forbidding a few
    arbitrary rows (as a pack's rules do: random truth tables leave nearly nothing to count):
    components that fall apart after a branch in many ways (a part that two values of the branched
    field leave apart, counted once for both; one- and two-field components counted by masks)."""
    checks = []
    for _ in range(draw(st.integers(3, 9))):
        fields = tuple(draw(st.permutations(WIDE))[: draw(st.integers(1, 3))])
        rows = list(itertools.product(SHARED, repeat=len(fields)))
        forbidden = draw(st.sets(st.sampled_from(rows), min_size=1, max_size=max(1, len(rows) // 3)))
        checks.append(Condition.over(fields, lambda v, f=forbidden: tuple(v) not in f))
    return checks


@pytest.mark.property
@FEW
@given(checks=sparse_checks(), data=st.data())
def test_diagram_counts_and_bounds_equal_brute_force_on_sparse_packs(checks: list[Condition], data) -> None:  # type: ignore[no-untyped-def]
    """Under up to two pins the count is the brute-force count, and cut short at any step limit
    its bounds hold that count."""
    pins = {
        n: data.draw(st.sampled_from(SHARED)) for n in data.draw(st.lists(st.sampled_from(WIDE), max_size=2))
    }
    rows = (dict(zip(WIDE, row, strict=True)) for row in itertools.product(SHARED, repeat=len(WIDE)))
    exact = sum(
        1
        for r in rows
        if all(r[n] == v for n, v in pins.items()) and all(c.holds([r[f] for f in c.fields]) for c in checks)
    )
    counter = DiagramCounter(dict.fromkeys(WIDE, SHARED), checks)
    assert counter.fresh().count(pins) == exact
    steps = data.draw(st.integers(1, 12))
    try:
        assert counter.fresh().count(pins, limit=Limit(steps=steps)) == exact
    except CountLimitReached as stop:
        assert stop.upper is not None and stop.lower <= exact <= stop.upper


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_diagram_counts_equal_the_oracle_and_the_model_counter(spec, data) -> None:  # type: ignore[no-untyped-def]
    """On generated packs, under up to three pins: the diagram counter built from the rules'
    text, the one built by expanding each whole condition, `ModelCounter` and brute force agree;
    a split by any field adds up to the total."""
    oracle = Oracle(spec)
    names = list(oracle.domains)
    cp = compile_pack(spec.pack)
    checks = pack_checks(spec.pack)
    from_text = DiagramCounter(cp.domains, checks, fields=spec.pack.fields, sets=spec.pack.sets)
    expanded = DiagramCounter(cp.domains, checks)
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
    pins = {n: data.draw(st.sampled_from(oracle.domains[n])) for n in chosen}
    exact = sum(1 for _ in oracle.solutions(pins))
    assert (
        from_text.count(pins) == expanded.count(pins) == ModelCounter(cp.domains, checks).count(pins) == exact
    )
    by = data.draw(st.sampled_from(names))
    parts = [from_text.count({**pins, by: v}) for v in oracle.domains[by] if pins.get(by, v) == v]
    assert sum(parts) == exact


@pytest.mark.property
@FEW
@given(spec=packs())
def test_a_rule_diagram_from_its_text_is_the_diagram_of_the_whole_condition(spec) -> None:  # type: ignore[no-untyped-def]
    """Built leaf by leaf from the text (and, or, not) or by expanding the compiled condition,
    every rule of a generated pack gets the same node (diagrams are canonical in one order)."""
    cp = compile_pack(spec.pack)
    dd = Diagrams(list(cp.domains), cp.domains)
    for cond in pack_checks(spec.pack):
        assert dd.condition(cond, spec.pack.fields, spec.pack.sets) == dd.rule(cond), cond.text


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_moving_a_field_first_gives_the_diagrams_built_in_that_order(spec, data) -> None:  # type: ignore[no-untyped-def]
    """`Diagrams.first` (what the counter does with the field that settles the most rules) gives
    every rule of a generated pack the node that building it in the new order gives."""
    cp = compile_pack(spec.pack)
    checks = pack_checks(spec.pack)
    dd = Diagrams(list(cp.domains), cp.domains)
    roots = [dd.rule(cond) for cond in checks]
    name = data.draw(st.sampled_from(list(cp.domains)))
    moved, moved_roots = dd.first(name, roots)
    assert moved.order == [name, *(n for n in cp.domains if n != name)]
    assert moved_roots == [moved.rule(cond) for cond in checks]


def test_the_field_that_settles_the_most_rules_goes_first() -> None:
    """`k` (three values) settles each of its three rules at two of its values; the min-fill
    order puts `h` first, which settles one of its three at one of its two; the counter moves `k`
    there."""
    domains = {"a": (0, 1), "b": (0, 1), "h": (0, 1), "k": (0, 1, 2)}
    checks = [
        Condition.over(("h", "a"), lambda v: v[0] != v[1]),
        Condition.over(("h", "b"), lambda v: v[0] != v[1]),
        Condition.over(("h", "k"), lambda v: v[1] != 0 or v[0] == 1),
        Condition.over(("k", "a"), lambda v: v[0] != 1 or v[1] == 1),
        Condition.over(("k", "b"), lambda v: v[0] != 2 or v[1] == 0),
    ]
    order = elimination_order(domains, [c.fields for c in checks])
    counter = DiagramCounter(domains, checks)
    assert order[-1] != "k" and counter.diagrams.order[0] == "k"
    assert most_settling(counter.diagrams, counter.roots) == "k"


# Whole-rule expansion (`Diagrams.rule`, the reference this checks the text against) is what these
# tests spend their time on, so they go by size. The default run checks every hard rule of both
# shipped packs whose expansion fits `_SMALL_BUDGET` (412 of 421, 5 s CPU); `-m replay` (CI runs
# it) adds the six that fit only the default budget (the widest: an awq_marlin MoE rule and an MXFP8
# block split, 5.7 and 3.7 s CPU); `-m long` the three past it (an SGLang MXFP8 block-split rule,
# moe-flashinfer-cutlass-quant and moe-marlin-no-deepep, which reads AWQ_MOE_ON_MARLIN: 23, 6 and
# 41 s CPU at load 14), which is why the counter builds rules from their text. A rule past one
# budget costs that budget to find out (the three wide ones took 15 of the 28 s CPU when the default
# run tried them at the default budget), so each run tries the smaller budgets first.
_SMALL_BUDGET = 300_000
_WIDE_BUDGET = 100_000_000


def _text_and_expanded(budgets: tuple[int, ...]) -> int:
    """Rules of both shipped packs whose diagram built from text (the counter's) equals the whole
    expansion, each expanded at the first of `budgets` it fits. Returns how many fit none."""
    wide = 0
    for name in ("sglang", "vllm"):
        pack = load_pack(name)
        counter = DiagramCounter(
            compile_pack(pack).domains, pack_checks(pack), fields=pack.fields, sets=pack.sets
        )
        dd = counter.diagrams
        for cond, root in zip(pack_checks(pack), counter.roots, strict=True):
            for budget in budgets:
                try:
                    expanded = dd.rule(cond, budget)
                except TooLarge:
                    continue
                assert expanded == root, (name, cond.text)
                break
            else:
                wide += 1
    return wide


def test_the_shipped_rules_from_text_are_their_expanded_diagrams() -> None:
    """The same for every hard rule of both shipped packs, in the counter's own order (the few
    rules that take longer to expand: the `replay` and `long` tests below)."""
    past = _text_and_expanded((_SMALL_BUDGET,))
    assert past <= 10, f"{past} shipped rules past _SMALL_BUDGET (10 were): raise it if the test stays quick"


@pytest.mark.replay
def test_the_wider_shipped_rules_from_text_are_their_expanded_diagrams() -> None:
    """The same up to the default expansion budget: at most three rules are past it."""
    assert _text_and_expanded((_SMALL_BUDGET, RULE_EXPANSION_BUDGET)) <= 3


@pytest.mark.long
def test_the_widest_shipped_rules_from_text_are_their_expanded_diagrams() -> None:
    assert _text_and_expanded((_SMALL_BUDGET, RULE_EXPANSION_BUDGET, _WIDE_BUDGET)) == 0


def test_the_order_puts_what_ties_the_pack_together_first() -> None:
    """Min-fill eliminates the leaves of a star first and its centre last."""
    domains = dict.fromkeys(["a", "hub", "b", "c", "d"], (1, 2))
    order = elimination_order(domains, [("hub", "a"), ("hub", "b"), ("hub", "c"), ("c", "d")])
    assert order.index("hub") > max(order.index("a"), order.index("b"), order.index("d"))


def test_a_pack_too_large_to_compile_is_counted_by_the_model_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the field limit the diagram counter refuses, and `count` gives the same numbers
    through `ModelCounter` (the 5,000-field synthetic packs take this path)."""
    pack = load_pack(str(count_module.__file__).replace("solver/engine/count.py", "tests/fixtures/packs/toy"))
    cp = compile_pack(pack)
    expected = count(pack, {"gpu": "h100"}).count
    monkeypatch.setattr("solver.engine.diagrams.MAX_FIELDS", 1)
    with pytest.raises(TooLarge):
        DiagramCounter(cp.domains, pack_checks(pack))
    monkeypatch.setattr(count_module, "_COUNTERS", type(count_module._COUNTERS)(8))
    assert isinstance(count_module._counter(pack), ModelCounter)
    assert count(pack, {"gpu": "h100"}).count == expected
