"""`confsolve count` and the counter behind it, checked against brute force.

Brute force is `itertools.product` over the domains with every hard rule's condition evaluated (the
toy pack), or the independent oracle of tests/generated.py (generated packs), which evaluates its
own condition trees and never `solver.pack.expr`.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from clirun import run
from generated import Oracle, packs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import load_pack
from solver.cli.commands import main
from solver.engine.count import CountLimitReached, Limit, ModelCounter, count, pack_checks
from solver.engine.csp import compile_pack
from solver.model import Pack, Scalar
from solver.pack.expr import Condition

PACKS = Path(__file__).parent / "fixtures" / "packs"
TOY = str(PACKS / "toy")


def brute(pack: Pack, pins: Mapping[str, Scalar]) -> int:
    cp = compile_pack(pack)
    names = list(cp.domains)
    total = 0
    for values in itertools.product(*cp.domains.values()):
        row = dict(zip(names, values, strict=True))
        if all(row[n] == v for n, v in pins.items()) and all(
            r.condition.evaluate(row) for r in cp.rules.values()
        ):
            total += 1
    return total


@pytest.mark.parametrize(
    "pins",
    [
        {},
        {"gpu": "a100"},
        {"gpu": "b200"},
        {"quant": "fp4"},
        {"kernel": "trtllm", "gpu": "h100"},
        {"quant": "fp4", "gpu": "a100"},
        {"tp": 1, "ep": 1},
        {"fusion": True},
    ],
)
def test_toy_counts_equal_brute_force(pins: dict[str, Scalar]) -> None:
    pack = load_pack(TOY)
    assert count(pack, pins).count == brute(pack, pins)


def test_by_splits_the_total_by_value() -> None:
    pack = load_pack(TOY)
    result = count(pack, {"quant": "fp8"}, by="gpu")
    assert result.by is not None
    assert sum(result.by.values()) == result.count == brute(pack, {"quant": "fp8"})
    assert result.by == {g: brute(pack, {"quant": "fp8", "gpu": g}) for g in ("a100", "h100", "b200")}


def test_warning_rules_do_not_count_against_a_configuration() -> None:
    pack = load_pack(TOY)
    assert any(r.severity == "warn" for r in pack.rules)
    assert count(pack, {"quant": "fp8", "kernel": "triton", "gpu": "h100"}).count > 0


def test_the_limit_stops_a_count_with_a_message() -> None:
    pack = load_pack(TOY)
    with pytest.raises(CountLimitReached, match="--limit 1 steps"):
        count(pack, {}, limit=Limit(steps=1))
    assert Limit.parse("30s") == Limit(steps=None, seconds=30.0)
    with pytest.raises(ValueError, match="positive"):
        Limit.parse("-3")


FEW = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_count_equals_the_oracle_on_generated_packs(spec, data) -> None:  # type: ignore[no-untyped-def]
    """The number of configurations under any pins is the number of rows the oracle accepts."""
    oracle = Oracle(spec)
    names = list(oracle.domains)
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=2))
    pins = {n: data.draw(st.sampled_from(oracle.domains[n])) for n in chosen}
    assert count(spec.pack, pins).count == sum(1 for _ in oracle.solutions(pins))


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_projected_counts_and_solutions_equal_the_oracle(spec, data) -> None:  # type: ignore[no-untyped-def]
    """Projected onto some fields, the count is the number of distinct projections of the
    oracle's rows; a solution exists exactly when a row does, and it satisfies every rule; a
    negated rule added as an extra check selects exactly the rows that break it."""
    oracle = Oracle(spec)
    names = list(oracle.domains)
    project = data.draw(st.lists(st.sampled_from(names), unique=True, min_size=0))
    cp = compile_pack(spec.pack)
    counter = ModelCounter(cp.domains, pack_checks(spec.pack), project=project)
    index = [oracle.index[n] for n in project]
    rows = list(oracle.solutions({}))
    assert counter.count() == len({tuple(row[i] for i in index) for row in rows})
    solution = counter.solution()
    assert (solution is None) == (not rows)
    if solution is not None:
        assert all(r.condition.evaluate(solution) for r in cp.rules.values())
    hard = [r for r in spec.rules if r.severity == "error"]
    if hard:
        rule = data.draw(st.sampled_from(hard))
        cond = cp.rules[rule.id].condition
        broken = counter.add(cond.negated())
        others = [i for i, rid in enumerate(cp.rule_ids) if rid != rule.id]
        expected = {
            tuple(row[i] for i in index)
            for row in oracle.solutions({}, [r.id for r in hard if r.id != rule.id])
            if not oracle.checks[rule.id](row)
        }
        assert counter.count(only=others, extra=[broken]) == len(expected)


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_a_local_solution_is_the_whole_search_on_the_fields_it_reads(spec, data) -> None:  # type: ignore[no-untyped-def]
    """`solution(..., local=True)` (lint's ring witnesses) searches only the fields its checks
    and pins read, and finds what the search over the whole pack finds there, in as many
    steps: over a random subset of the rules, a negated rule, and pins taken from a solution
    (so that some queries have one) or drawn at random."""
    oracle = Oracle(spec)
    cp = compile_pack(spec.pack)
    counter = ModelCounter(cp.domains, pack_checks(spec.pack), project=())
    only = data.draw(st.lists(st.sampled_from(range(len(cp.rule_ids))), unique=True)) if cp.rule_ids else []
    extra = []
    if cp.rule_ids and data.draw(st.booleans()):
        extra = [
            counter.add(cp.rules[cp.rule_ids[data.draw(st.sampled_from(only or [0]))]].condition.negated())
        ]
    rows = list(itertools.islice(oracle.solutions({}), 1))
    names = data.draw(st.lists(st.sampled_from(list(oracle.domains)), unique=True, max_size=4))
    from_row = rows and data.draw(st.booleans())
    pins = {
        n: rows[0][oracle.index[n]] if from_row else data.draw(st.sampled_from(oracle.domains[n]))
        for n in names
    }
    before = counter.steps
    whole = counter.solution(pins, only=only, extra=extra, limit=Limit(steps=10_000))
    steps = counter.steps - before
    local = counter.solution(pins, only=only, extra=extra, limit=Limit(steps=10_000), local=True)
    assert counter.steps - before - steps == steps
    assert (local is None) == (whole is None)
    if local is not None and whole is not None:
        read = {n for i in [*only, *extra] for n in counter.checks[i].fields} | set(pins)
        assert set(local) == read and local == {n: whole[n] for n in read}


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_a_total_equals_the_sum_of_its_split(spec, data) -> None:  # type: ignore[no-untyped-def]
    """`count --by F` adds up to `count`, and each part is the count with F pinned to that value."""
    oracle = Oracle(spec)
    names = list(oracle.domains)
    by = data.draw(st.sampled_from(names))
    others = [n for n in names if n != by]
    chosen = data.draw(st.lists(st.sampled_from(others), unique=True, max_size=1)) if others else []
    pins = {n: data.draw(st.sampled_from(oracle.domains[n])) for n in chosen}
    total, split = count(spec.pack, pins), count(spec.pack, pins, by=by)
    assert split.by is not None and split.count == sum(split.by.values()) == total.count
    assert split.by == {v: sum(1 for _ in oracle.solutions({**pins, by: v})) for v in oracle.domains[by]}


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_a_counter_conditioned_in_turn_equals_fresh_counts(spec, data) -> None:  # type: ignore[no-untyped-def]
    """One counter conditioned on a drawn sequence of pins (its component cache, keyed by what
    each rule still says once the values it reads are known, shared between the queries) gives
    for each what a fresh counter gives, and what the oracle accepts."""
    oracle = Oracle(spec)
    names = list(oracle.domains)
    cp = compile_pack(spec.pack)
    shared = ModelCounter(cp.domains, pack_checks(spec.pack))
    for _ in range(data.draw(st.integers(2, 5))):
        chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
        pins = {n: data.draw(st.sampled_from(oracle.domains[n])) for n in chosen}
        fresh = ModelCounter(cp.domains, pack_checks(spec.pack)).count(pins)
        assert shared.count(pins) == fresh == sum(1 for _ in oracle.solutions(pins)), pins


@pytest.mark.property
@FEW
@given(spec=packs(), data=st.data())
def test_a_count_cut_short_brackets_the_exact_count(spec, data) -> None:  # type: ignore[no-untyped-def]
    """Whatever step limit stops a count (with or without `--by`), its bounds hold the exact
    number: lower <= count <= upper, and the parts it reports are exact."""
    oracle = Oracle(spec)
    names = list(oracle.domains)
    by = data.draw(st.none() | st.sampled_from(names))
    steps = data.draw(st.integers(1, 40))
    exact = sum(1 for _ in oracle.solutions({}))
    try:
        result = count(spec.pack, {}, by=by, limit=Limit(steps=steps))
    except CountLimitReached as stop:
        assert stop.upper is not None
        assert stop.lower <= exact <= stop.upper
        for value, part in stop.parts.items():
            assert part == sum(1 for _ in oracle.solutions({by: value}))
    else:
        assert result.count == exact


def test_a_deadline_in_the_past_stops_with_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count whose deadline has passed stops at its first look at the clock with bounds that
    hold the exact count; the message says them. (With no compiled count kept or shipped: the
    search's bounds; tests/test_count_shipped.py has a pass cut short.)"""
    from solver.engine import count as count_module

    monkeypatch.setenv("CONFSOLVE_NO_CACHE", "1")
    monkeypatch.setattr(count_module, "_COMPILED", type(count_module._COMPILED)(8))
    monkeypatch.setattr(count_module, "read_shipped", lambda pack: None)
    pack = load_pack("sglang")
    seen: list[tuple[int, float]] = []
    with pytest.raises(CountLimitReached) as info:
        count(
            pack,
            {"platform": "cuda"},
            limit=Limit(steps=None),
            deadline=time.monotonic() - 1,
            progress=lambda n, s: seen.append((n, s)),
        )
    stop = info.value
    assert stop.upper is not None and 0 <= stop.lower <= stop.upper
    assert "at most" in str(stop)
    toy = load_pack(TOY)
    with pytest.raises(CountLimitReached) as info:
        count(toy, {}, by="gpu", limit=Limit(steps=3))
    assert info.value.lower <= brute(toy, {}) <= (info.value.upper or 0)


SHARED = (0, 1, 2)


@st.composite
def shared_domain_checks(draw: st.DrawFn) -> list[Condition]:
    """Three to five rules over three of four fields that all share one domain, each an arbitrary
    truth table (so a rule is not symmetric in its fields and fields cannot stand in for one
    another)."""
    names = ("w", "x", "y", "z")
    checks = []
    for _ in range(draw(st.integers(3, 5))):
        fields = tuple(draw(st.permutations(names))[:3])
        rows = list(itertools.product(SHARED, repeat=3))
        true = draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
        table = dict(zip(rows, true, strict=True))
        checks.append(Condition.over(fields, lambda v, t=table: t[tuple(v)]))
    return checks


@pytest.mark.property
@FEW
@given(checks=shared_domain_checks())
def test_counts_equal_brute_force_where_fields_share_a_domain(checks: list[Condition]) -> None:
    """One counter answering many queries in turn (so its caches are shared between them) gives
    the brute-force count for each: a memo keyed by domains must also say which fields they are."""
    names = ("w", "x", "y", "z")
    counter = ModelCounter(dict.fromkeys(names, SHARED), checks)

    def brute(pins: Mapping[str, int]) -> int:
        rows = (dict(zip(names, row, strict=True)) for row in itertools.product(SHARED, repeat=4))
        return sum(
            1
            for r in rows
            if all(r[n] == v for n, v in pins.items())
            and all(c.holds([r[f] for f in c.fields]) for c in checks)
        )

    for pins in [{}, *({n: v} for n in names for v in SHARED), {"w": 0, "x": 1}, {"y": 2, "z": 0}]:
        assert counter.count(pins) == brute(pins), pins


def test_equal_domains_are_not_confused_in_a_pack(tmp_path: Path) -> None:
    """Three backend fields with one domain and rules that read two of them and a third field:
    each count and each split equals brute force (the SGLang pack's attention backends, small).
    The counter-level law above is the one that reproduces the memo-key bug; this one keeps the
    pack path (compiled conditions, `--by`) honest on the same shape."""
    (tmp_path / "pack.toml").write_text(
        '[pack]\nname = "shared"\nversion = "1"\ndescription = "equal domains"\n'
        'files = ["fields.toml", "rules.toml"]\n'
    )
    backends = '["fa3", "flashinfer", "triton", "trtllm"]'
    (tmp_path / "fields.toml").write_text(
        "".join(
            f'[field.{n}]\nkind = "option"\ndomain = {backends}\n\n'
            for n in ("attention", "prefill", "decode")
        )
        + '[field.gpu]\nkind = "fact"\ndomain = ["a100", "h100", "b200"]\n'
    )
    rules = [
        ("split-same", "prefill == decode", "attention == prefill"),
        ("fa3-hopper", "prefill == 'fa3' or decode == 'fa3'", "gpu == 'h100'"),
        ("trtllm-decode", "decode == 'trtllm'", "gpu == 'b200' and attention != 'triton'"),
        ("triton-prefill", "prefill == 'triton' and gpu == 'a100'", "decode in ['triton', 'flashinfer']"),
    ]
    (tmp_path / "rules.toml").write_text(
        "".join(
            f'[[rule]]\nid = "{i}"\nwhen = "{w}"\nrequire = "{r}"\nbecause = "test"\nsource = "test"\n\n'
            for i, w, r in rules
        )
    )
    pack = load_pack(str(tmp_path))
    for pins in ({}, {"gpu": "h100"}, {"gpu": "b200"}, {"attention": "fa3"}, {"decode": "trtllm"}):
        assert count(pack, pins).count == brute(pack, pins), pins
        for by in ("attention", "prefill", "decode", "gpu"):
            split = count(pack, pins, by=by)
            assert split.by is not None and split.count == brute(pack, pins), (pins, by)
            assert split.by == {v: brute(pack, {**pins, by: v}) for v in split.by}, (pins, by)


@pytest.mark.parametrize("pins", [{}, {"gpu": "a100"}, {"quant": "fp4", "gpu": "a100"}, {"kernel": "trtllm"}])
def test_the_residual_of_a_query_counts_like_the_query(pins: dict[str, Scalar]) -> None:
    """What a query starts from after propagation (the open checks over the free domains, the
    rest fixed), counted by brute force, is the query's count: propagation lost nothing."""
    pack = load_pack(TOY)
    counter = ModelCounter(compile_pack(pack).domains, pack_checks(pack))
    residual = counter.residual(pins)
    exact = brute(pack, pins)
    if residual is None:
        assert exact == 0
        return
    checks, doms, values = residual
    assert all(values[n] == v for n, v in pins.items()) and not set(doms) & set(values)
    names = list(doms)
    total = 0
    for combo in itertools.product(*doms.values()):
        row = {**values, **dict(zip(names, combo, strict=True))}
        total += all(c.holds(tuple(row[n] for n in c.fields)) for c in checks)
    assert total == exact


def test_a_condition_without_a_three_valued_form_counts_the_same() -> None:
    """The counter takes the one predicate type: a `Condition.over` without `partial` (and its
    negation) is evaluated only whole, one with it may drop out early; the counts agree."""

    def holds(v: tuple[int, ...]) -> bool:
        return v[0] == 1 or v[1] < v[2]

    def partial(known: Mapping[str, Scalar]) -> bool | None:
        if known.get("a") == 1:
            return True
        return None if {"b", "c"} - set(known) else bool(known["b"] < known["c"])  # type: ignore[operator]

    domains = dict.fromkeys("abc", (1, 2, 3))
    bare = Condition.over("abc", holds)
    full = Condition.over("abc", holds, partial)
    assert not bare.three_valued and not bare.negated().three_valued and full.negated().three_valued
    for cond in (bare, full, bare.negated(), full.negated()):
        counter = ModelCounter(domains, [cond])
        rows = list(itertools.product((1, 2, 3), repeat=3))
        assert [counter.count(), counter.count({"a": 1}), counter.count({"b": 3})] == [
            sum(cond.holds(r) for r in rows),
            sum(cond.holds(r) for r in rows if r[0] == 1),
            sum(cond.holds(r) for r in rows if r[1] == 3),
        ]


def test_solution_respects_pins_and_only() -> None:
    counter = ModelCounter(
        {"a": (1, 2, 3), "b": (1, 2, 3)}, [Condition.over(("a", "b"), lambda v: v[0] < v[1])]
    )
    assert counter.solution({"a": 3}) is None
    assert counter.solution({"a": 3}, only=[]) == {"a": 3, "b": 1}
    assert counter.count({"b": 3}) == 2


# --- command line ----------------------------------------------------------------------------


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "count", "--pack", TOY, "--set", "gpu=h100", "--json")
    assert code == 0
    assert json.loads(out) == {
        "schema": 1,
        "status": "counted",
        "count": brute(load_pack(TOY), {"gpu": "h100"}),
    }


def test_cli_by_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "count", "--pack", TOY, "--by", "quant", "--json")
    doc = json.loads(out)
    assert code == 0 and sum(doc["by"]["quant"].values()) == doc["count"]
    code, out, _ = run(capsys, "count", "--pack", TOY, "--set", "gpu=a100", "--by", "tp")
    assert code == 0 and "valid configurations" in out and "tp=8" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--by", "gpuu"], "gpu"),
        (["--limit", "soon"], "--limit"),
        (["--set", "gpu=z100"], "z100"),
    ],
)
def test_cli_bad_input_exits_2_without_traceback(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, _, err = run(capsys, "count", "--pack", TOY, *argv)
    assert code == 2 and needle in err and "Traceback" not in err


def test_cli_limit_exits_4_with_advice(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "count", "--pack", TOY, "--limit", "1")
    assert code == 4 and "--limit" in err and "--set" in err


def test_a_count_stopped_by_the_budget_names_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    """When the command's --budget is the tighter bound, the advice is to raise --budget (raising
    --limit would change nothing); over --limit it stays --limit."""
    code, _, err = run(capsys, "count", "--pack", TOY, "--budget", "45")
    assert code == 4 and "raise --budget" in err and "raise --limit" not in err
    code, _, err = run(capsys, "count", "--pack", TOY, "--limit", "2")
    assert code == 4 and "raise --limit" in err and "raise --budget" not in err


def test_a_conflicting_request_counts_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "count", "--pack", TOY, "--set", "gpu=a100", "--set", "quant=fp4")
    assert code == 0 and out.startswith("0 valid configurations") and "confsolve check" in err


def test_sglang_hopper_count_equals_its_split() -> None:
    """With the three attention-backend fields (one domain) free, a total on Hopper is the sum of
    its split by backend (issue #18's wrong count was such a total; this narrow one stays quick)."""
    pack = load_pack("sglang")
    pins = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM", "quantization": "fp8"}
    total = count(pack, pins)
    split = count(pack, pins, by="attention_backend")
    assert total.count > 0 and split.by is not None and split.count == total.count


@pytest.mark.long
def test_sglang_deepseek_on_sm100_is_counted_exactly() -> None:
    """The issue's example: an exact number, consistent with its split by quantization."""
    pack = load_pack("sglang")
    pins = {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"}
    started = time.monotonic()
    total = count(pack, pins)
    assert time.monotonic() - started < 30
    split = count(pack, pins, by="quantization")
    assert total.count > 0 and split.count == total.count


def test_a_count_cut_short_prints_its_exact_bounds_as_a_bounded_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`count --json` over its limit: the bounds as numbers (exit 4), and they hold the count."""

    toy = TOY
    assert main(["count", "--pack", toy, "--json"]) == 0
    total = int(json.loads(capsys.readouterr().out)["count"])
    for steps in (1, 2, 3):
        assert main(["count", "--pack", toy, "--limit", str(steps), "--json"]) == 4
        doc = json.loads(capsys.readouterr().out)
        assert doc["status"] == "bounded" and doc["steps"] > steps
        assert int(doc["lower"]) <= total <= int(doc["upper"])
