"""Memory stays bounded in a long-lived process: every cache that requests fill has a size.

Quick checks of the bounds themselves (an answer-table budget far below the default, so a few
requests reach it); `benchmarks/hostile.py --only memory` measures 10,000 distinct resolves at the
real sizes and asserts the process does not grow.
"""

from __future__ import annotations

import contextlib
import random

import pytest

import solver.bounded as bounded
from solver import SolverError, load_pack, resolve
from solver.bounded import Lru, Memo
from solver.engine.csp import compile_pack
from solver.model import Pack


def test_an_lru_keeps_the_most_recently_used() -> None:
    lru: Lru[str, int] = Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "a" is now the most recent
    lru.put("c", 3)
    assert len(lru) == 2 and lru.get("b") is None and lru.get("a") == 1 and lru.get("c") == 3


def test_memo_tables_share_one_budget_and_the_largest_are_emptied_first() -> None:
    memo = Memo(entries=10)
    big: dict[int, int] = memo.table()
    small: dict[int, int] = memo.table()
    for i in range(10):
        memo.store(big if i < 7 else small, i, i)
    assert memo.size() == 10 and memo.flushes == 0
    memo.store(small, 99, 99)  # past the budget: the largest table goes until half is free
    assert memo.flushes == 1 and big == {} and small == {7: 7, 8: 8, 9: 9, 99: 99}
    for i in range(100, 106):  # the kept entries count: 4 + 6 reach the budget again
        memo.store(big, i, i)
    assert memo.flushes == 1 and memo.size() == 10
    memo.store(big, 200, 200)  # the largest is now `big`
    assert memo.flushes == 2 and small == {7: 7, 8: 8, 9: 9, 99: 99} and big == {200: 200}


def test_equal_memo_tables_are_emptied_until_half_the_budget_is_free() -> None:
    memo = Memo(entries=4)
    tables: list[dict[int, int]] = [memo.table() for _ in range(4)]
    for i in range(4):
        memo.store(tables[i], i, i)
    memo.store(tables[0], 9, 9)  # four equal tables: two go (the first two), two stay
    assert memo.flushes == 1 and tables == [{9: 9}, {}, {2: 2}, {3: 3}] and memo.size() == 3


def _requests(pack: Pack, n: int, seed: int) -> list[tuple[dict[str, object], dict[str, object]]]:
    rng = random.Random(seed)
    options = [name for name, f in pack.fields.items() if f.kind == "option"]
    out = []
    for _ in range(n):
        chosen = {name: rng.choice(pack.fields[name].domain) for name in rng.sample(options, 2)}
        facts = {"platform": "cuda", "gpu_arch": rng.choice(["sm80", "sm90", "sm100"])}
        out.append((chosen, facts))
    return out


def test_a_compiled_packs_answer_tables_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct resolves on a fresh compiled pack: without the bound its tables hold far more
    than the budget (the first check proves the requests fill them); with it, never more."""
    pack = load_pack("sglang")
    requests = _requests(pack, 12, seed=3)
    from solver.engine import csp as engine

    def run(entries: int) -> tuple[int, int]:
        monkeypatch.setattr(bounded, "MEMO_ENTRIES", entries)
        engine._COMPILED.clear()  # (and the plans, kept with their compiled packs)
        bounded._POOLS.clear()  # (the pack's family's budget: a new one, of `entries`)
        high = 0
        for request in requests:
            with contextlib.suppress(SolverError):
                resolve(pack, *request, reasons=False)
            high = max(high, compile_pack(pack).tables.size())
        return high, compile_pack(pack).tables.flushes

    try:
        unbounded, _ = run(10**9)
        assert unbounded > 3 * 1500  # the requests do fill the tables
        high, flushes = run(1500)
        assert high <= 1500 and flushes >= 1
    finally:
        engine._COMPILED.clear()


def test_widened_packs_do_not_accumulate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each unlisted value of an open field makes a widened pack with a digest of its own; a
    process resolving many such requests keeps only the latest few compiled. (The table's bound
    lowered to 4 here: each widened copy is a cold start, ~1 s at load, and PACKS_KEPT is 64.)"""
    from solver.engine import csp as engine

    kept = 4
    monkeypatch.setattr(engine._COMPILED, "size", kept)
    pack = load_pack("sglang")
    opened = [name for name, f in pack.fields.items() if f.open is not None]
    assert opened, "the SGLang pack has open fields"
    name = opened[0]
    field = pack.fields[name]
    unlisted = [v for v in range(1, 400) if v not in field.domain and field.open.admits(v)][: kept * 3]
    assert len(unlisted) > kept
    for value in unlisted:
        with contextlib.suppress(SolverError):
            resolve(pack, {name: value}, {"platform": "cuda", "gpu_arch": "sm90"}, reasons=False)
    # Full (so the requests did widen the pack), and no fuller.
    assert len(engine._COMPILED) == kept  # (each plan is kept in its compiled pack's memo)


def test_a_plan_is_kept_with_its_compiled_pack() -> None:
    """`plan_for(pack).compiled` is `compile_pack(pack)`, also after the table of compiled packs
    dropped it (as PACKS_KEPT newer ones do): the solutions a choices question stores in the
    plan's are the ones `givenchoices` reads from `compile_pack`'s. Kept in two tables, the plan
    outlived its compiled pack, which was compiled again beside it with an empty memo (round 18:
    SGLang's one-fact choices then asked every typed copy again, 31 -> 80 ms)."""
    from solver.engine import csp as engine
    from solver.reasoning.plan import plan_for

    pack = load_pack("sglang")
    planned = plan_for(pack)
    assert planned.compiled is compile_pack(pack)
    engine._COMPILED.pop(pack.digest)  # (what PACKS_KEPT newer packs compiled do)
    assert plan_for(pack).compiled is compile_pack(pack)


def test_an_lru_with_families_keeps_each_family_and_drops_the_oldest_whole() -> None:
    lru: Lru[str, int] = Lru(2, family=bounded.digest_family)
    for i, key in enumerate(["a", "a+given:x", "a+given:y"]):
        lru.put(key, i)
    assert lru.get("a") is None and lru.get("a+given:x") == 1 and lru.get("a+given:y") == 2  # own LRU
    for n in range(bounded.FAMILIES_KEPT - 1):
        lru.put(f"f{n}", n)
    assert lru.get("a+given:x") == 1  # every family still kept
    lru.put("newest", 0)  # one family too many: the least recently used goes whole
    assert lru.get("f0") is None and lru.get("a+given:y") == 2 and len(lru) == bounded.FAMILIES_KEPT + 1


def test_memos_of_one_pool_share_its_budget() -> None:
    pool = bounded.MemoPool(entries=4)
    first, second = Memo(pool=pool), Memo(pool=pool)
    big: dict[int, int] = first.table()
    small: dict[int, int] = second.table()
    for i in range(4):
        (first if i < 3 else second).store(big if i < 3 else small, i, i)
    second.store(small, 9, 9)  # the pool's budget, not `second`'s own: `first`'s table goes
    assert big == {} and small == {3: 3, 9: 9} and first.flushes == second.flushes == 1
    del first  # a memo dropped with its compiled pack leaves the pool
    assert second.size() == 2 and list(pool.memos) == [second]


def test_a_packs_typed_copies_survive_questions_to_another_pack() -> None:
    """SGLang's pack and its seven copies for what requests type filled the table of eight
    compiled packs: a vLLM question in between made the next SGLang one-fact question compile
    seven copies again and rebuild their rules (~130 ms, benchmarks/packs_in_turn.py)."""
    from solver import valid_choices
    from solver.engine import csp as engine

    packs = [load_pack("sglang"), load_pack("vllm")]
    for pack in packs:
        valid_choices(pack, {}, {"platform": "cuda"})
    compiled = []
    real = engine.CompiledPack.__init__

    def counting(self: engine.CompiledPack, pack: Pack) -> None:
        compiled.append(pack.digest)
        real(self, pack)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine.CompiledPack, "__init__", counting)
        for _ in range(2):
            for pack in packs:
                valid_choices(pack, {}, {"platform": "cuda"})
    assert compiled == []


def test_a_family_keeps_the_typed_copies_of_a_burst_of_requests() -> None:
    """A pack's typed copies (one per set of `given(FIELD)` answers a request types) stay compiled
    through a burst of requests that type others: the 261 SGLang benchmark requests make 37 copies,
    and with 8 kept per family a pass over them compiled 73 again (a copy is a cold start: its
    root, fact states and rankings computed again), most of the requests' first-call time.
    Failed on 0b3452a (PACKS_KEPT 8: the first copy compiled again)."""
    from solver.engine.opendomain import query_pack
    from solver.model import Pin
    from solver.reasoning.plan import plan_for

    pack = load_pack("sglang")

    def copy_for(backend: str) -> Pack:
        typed = Pin(field="attention_backend", value=backend, source="user")
        return query_pack(pack, {"attention_backend": typed})

    copies: dict[str, Pack] = {}
    for backend in pack.fields["attention_backend"].domain:
        made = copy_for(str(backend))
        if made is not pack:
            copies.setdefault(made.digest, made)
    assert len(copies) > 8, "fewer typed copies than the old bound"
    first = next(iter(copies.values()))
    compiled = plan_for(first).compiled
    for made in copies.values():
        plan_for(made)
    assert plan_for(first).compiled is compiled  # (kept: not compiled again)


def test_a_sized_lru_keeps_fewer_of_a_large_packs_family() -> None:
    """A `sized` table keeps `FAMILY_FIELDS // fields` packs of a family (at least `FAMILY_LEAST`,
    at most its size), once the family is weighed; a family not weighed, and a table not sized,
    keep their size."""
    fields = bounded.FAMILY_FIELDS // 3  # (3 kept)
    bounded.weigh_family("big", fields)
    sized: Lru[str, int] = Lru(bounded.PACKS_KEPT, family=bounded.digest_family, sized=True)
    plain: Lru[str, int] = Lru(bounded.PACKS_KEPT, family=bounded.digest_family)
    for i in range(6):
        for lru in (sized, plain):
            lru.put(f"big+open:x={i}", i)
            lru.put(f"small+open:x={i}", i)
    assert [sized.get(f"big+open:x={i}") for i in range(6)] == [None, None, None, 3, 4, 5]
    assert all(sized.get(f"small+open:x={i}") == i for i in range(6))  # (not weighed)
    assert all(plain.get(f"big+open:x={i}") == i for i in range(6))
    bounded.weigh_family("huge", bounded.FAMILY_FIELDS * 10)
    assert bounded.family_kept("huge", bounded.PACKS_KEPT) == bounded.FAMILY_LEAST
    assert bounded.family_kept("huge", 1) == 1


def test_a_large_packs_widened_copies_are_kept_fewer() -> None:
    """A copy of a pack costs memory by the pack's size: widened copies of the synthetic packs
    held ~27 MB each at 1,000 fields and ~118 MB at 5,000 (RSS after a collection, round 30), so
    PACKS_KEPT (64) copies of a 5,000-field pack were ~7 GB. A compiled pack weighs its family, and
    the tables that hold a copy (compiled packs with their plans, packs, semantics, typed copies,
    counters) keep `FAMILY_FIELDS // fields` of a family. Here the bound is set to three SGLang
    packs. Failed on 487ea0a (no `FAMILY_FIELDS`; every copy kept up to PACKS_KEPT)."""
    from solver.engine import csp as engine
    from solver.engine.opendomain import query_pack

    pack = load_pack("sglang")
    name = next(name for name, f in pack.fields.items() if f.open is not None)
    field = pack.fields[name]
    assert field.open is not None
    unlisted = [v for v in range(1, 400) if v not in field.domain and field.open.admits(v)][:5]
    made = []
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bounded, "FAMILY_FIELDS", 3 * len(pack.fields))
            for value in unlisted:
                with contextlib.suppress(SolverError):
                    resolve(pack, {name: value}, {"platform": "cuda", "gpu_arch": "sm90"}, reasons=False)
                made.append(query_pack(pack, {name: value}).digest)
            assert [engine._COMPILED.get(digest) is not None for digest in made] == [
                False,
                False,
                True,
                True,
                True,
            ]
    finally:
        bounded.weigh_family(pack.digest, len(pack.fields))  # (the real bound for later tests)
