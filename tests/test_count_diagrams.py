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
from solver.engine.countroot import first_field, left_open, settled_rules
from solver.engine.csp import compile_pack
from solver.engine.diagrams import (
    RULE_EXPANSION_BUDGET,
    DiagramCounter,
    Diagrams,
    TooLarge,
    elimination_order,
)
from solver.model import Pack, Scalar
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
    """`Diagrams.first` (what the counter does with the field it branches on first,
    `countroot.first_field`) gives every rule of a generated pack the node that building it in the
    new order gives."""
    cp = compile_pack(spec.pack)
    checks = pack_checks(spec.pack)
    dd = Diagrams(list(cp.domains), cp.domains)
    roots = [dd.rule(cond) for cond in checks]
    name = data.draw(st.sampled_from(list(cp.domains)))
    moved, moved_roots = dd.first(name, roots)
    assert moved.order == [name, *(n for n in cp.domains if n != name)]
    assert moved_roots == [moved.rule(cond) for cond in checks]


def _equal(fields: tuple[str, str]) -> Condition:
    return Condition.over(fields, lambda v: v[0] == v[1])


def _unless(fields: tuple[str, str], first: int, second: int) -> Condition:
    """`fields[0] != first or fields[1] == second`: settled by every other value of the first."""
    return Condition.over(fields, lambda v: v[0] != first or v[1] == second)


def test_the_field_whose_values_leave_the_fewest_rules_open_goes_first() -> None:
    """`s` (three values) settles the most rules (two of its three at each value), which put it
    first; `f` settles fewer, but each of its values forces `a`, `b` and `c` (and `f = 0` forces
    `d`, `g` and `h`), so once the count has fixed what a value forces it leaves 2.5 rules open on
    average where `s` leaves 6.67. The counter branches on `f` first (on main bda0cd8, on `s`)."""
    domains = {n: (0, 1) for n in "abcdefgh"} | {"s": (0, 1, 2)}
    checks = [
        _equal(("f", "a")),
        _equal(("f", "b")),
        _equal(("f", "c")),
        Condition.over(("a", "b", "c", "d"), lambda v: not (v[0] and v[1] and v[2]) or v[3] == 1),
        *(_unless(("f", n), 0, 0) for n in "dgh"),
        _unless(("s", "d"), 0, 0),
        _unless(("s", "e"), 1, 0),
        _unless(("s", "e"), 2, 1),
    ]
    counter = DiagramCounter(domains, checks)
    dd, roots = counter.diagrams, counter.roots
    settled = settled_rules(dd, roots)
    assert dd.order[0] == "f" and max(range(len(dd.order)), key=settled.__getitem__) == dd.level["s"]
    assert left_open(dd, roots, dd.level["f"]) == 2.5 < left_open(dd, roots, dd.level["s"])
    rows = itertools.product(*domains.values())
    names = list(domains)
    assert counter.count() == sum(
        all(c.holds(tuple(dict(zip(names, row, strict=True))[n] for n in c.fields)) for c in checks)
        for row in rows
    )


def test_the_first_field_look_ahead_leaves_the_counters_diagrams_as_they_were() -> None:
    """`first_field` restricts on a scratch copy: the counter's node table (whose ids order a
    compiled count's records, and so its bytes) is not grown by it."""
    pack = load_pack("vllm")
    counter = count_module.pack_counter(pack, count_module._given_fields(pack_checks(pack), pack.sets) or [])
    dd = counter.diagrams
    nodes, restricted = len(dd.nodes), len(dd._restricted)
    assert first_field(dd, counter.roots) == dd.order[0] == "attention_backend"
    assert (len(dd.nodes), len(dd._restricted)) == (nodes, restricted)


# Whole-rule expansion (`Diagrams.rule`, the reference this checks the text against) is what these
# tests spend their time on, so they go by size. The default run checks every hard rule of both
# shipped packs whose expansion fits `_SMALL_BUDGET` in one of three orders: all but one since the
# expansion takes each class of values a rule cannot tell apart once (round 25; 13 were past it
# before, 22.5 s CPU against 5.6 s at load 16, and SGLang 0.5.23+27 split three MegaMoE rules in
# two to keep a disjunction over `architecture` and `quantization` under it); `-m replay` (CI runs
# it) adds those that fit only the default budget; `-m long` those past it (moe-marlin-no-deepep,
# which reads AWQ_MOE_ON_MARLIN: 41 s CPU at load 14 before round 25), which is why the counter
# builds rules from their text. A rule past one budget costs that budget to find out, so each run
# tries the smaller budgets first.
_SMALL_BUDGET = 300_000
_WIDE_BUDGET = 100_000_000


def _text_and_expanded(budgets: tuple[int, ...]) -> int:
    """Rules of both shipped packs whose diagram built from text (the counter's) equals the whole
    expansion, each expanded at the first of `budgets` it fits, with the most settling field first
    (the counter's order before round fix18) or else in the counter's own order (a whole expansion
    from vLLM's attention backend first takes 25 rules past `_SMALL_BUDGET`, from its block_size
    first none; the text's diagrams are the same functions in any order, and `Diagrams.first`,
    which moves a field to the front, has its own law above). Returns how many fit none."""
    wide = 0
    for name in ("sglang", "vllm"):
        pack = load_pack(name)
        domains, checks = compile_pack(pack).domains, pack_checks(pack)
        counter = DiagramCounter(domains, checks, fields=pack.fields, sets=pack.sets)
        order = elimination_order(domains, [c.fields for c in checks])
        order.reverse()  # (the counter's, before its first field moves)
        unmoved = Diagrams(order, domains)
        built = [unmoved.condition(cond, pack.fields, pack.sets) for cond in checks]
        settled = settled_rules(unmoved, built)
        orders = [  # (the cheaper first: a rule past a budget costs that budget to find out)
            unmoved.first(order[max(range(len(order)), key=settled.__getitem__)], built),
            (counter.diagrams, counter.roots),
        ]
        for at, cond in enumerate(checks):
            own = _own_order(cond, domains, pack)
            tries = [(dd, roots[at]) for dd, roots in orders]
            if not any(
                _expands_to(dd, cond, root, budget) for budget in budgets for dd, root in [*tries, own]
            ):
                wide += 1
    return wide


def _own_order(
    cond: Condition, domains: Mapping[str, tuple[Scalar, ...]], pack: Pack
) -> tuple[Diagrams, int]:
    """`cond`'s diagram from its text in an order of its own: its fields by domain size, the
    smallest first. A whole expansion enumerates every prefix the three-valued evaluation leaves
    undecided, so a rule that reads a wide field only in a part that cannot hold in the pack as
    loaded costs that field's width times the rest when the field comes first: SGLang 0.5.23+23's
    HRM-Text disjuncts `(architecture in HRM_TEXT and platform != 'npu' and given(attention_backend)
    ...)`, false with nothing given, put `architecture` (63 values) and `platform` (7) before the
    three 25-valued backend fields in both orders above, and took seven rules (cutedsl-mla-needs-
    sm100, trtllm-mha-needs-sm90-sm100-sm120, cutedsl-mla-kv-dtype, trtllm-mla-page-32-or-64,
    trtllm-mha-page, hpc-ops-page-64, fa4-mha-sm100-page-128) past the default budget; in this
    order the backends decide before `architecture` is read (0.3-2.8 s CPU each at load 13)."""
    mine = sorted(cond.fields, key=lambda name: (len(domains[name]), name))
    dd = Diagrams([*mine, *(n for n in domains if n not in mine)], domains)
    return dd, dd.condition(cond, pack.fields, pack.sets)


def _expands_to(dd: Diagrams, cond: Condition, root: int, budget: int) -> bool:
    """Whether `cond` expands within `budget` in `dd`'s order; if it does, to `root`."""
    try:
        expanded = dd.rule(cond, budget)
    except TooLarge:
        return False
    assert expanded == root, cond.text
    return True


def test_the_shipped_rules_from_text_are_their_expanded_diagrams() -> None:
    """The same for every hard rule of both shipped packs, in the counter's own order (the few
    rules that take longer to expand: the `replay` and `long` tests below)."""
    past = _text_and_expanded((_SMALL_BUDGET,))
    assert past <= 1, f"{past} shipped rules past _SMALL_BUDGET (1 was: moe-marlin-no-deepep)"


@pytest.mark.replay
def test_the_wider_shipped_rules_from_text_are_their_expanded_diagrams() -> None:
    """The same up to the default expansion budget: one rule is past it (moe-marlin-no-deepep).
    Round 19's pack 0.5.23+23 took seven HRM-Text rules past it in the two shared orders, nine in
    all (`_own_order` says which and why); in each rule's own order they fit, as does the MXFP8
    block split that was past it before (82 s CPU at load 15; round 19 measured 724 s with nine past)."""
    assert _text_and_expanded((_SMALL_BUDGET, RULE_EXPANSION_BUDGET)) <= 1


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
