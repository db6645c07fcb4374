"""Laws, against brute force, of the engine's cheap descent (`solver.engine.localsearch.dive`) and of
the propagation step it takes when it dead-ends (`State.strengthen`):

- `State.strengthen` (forward checking plus the values a rule's three-valued form refuses whatever
  its free fields hold) removes only values no solution has, and wipes out only a state with none;
- a descent, plain or (after a dead end) strengthened at its start and each step, answers the
  first solution of its group in its order (the fields as given; the hint's value first, then
  the domain's order) or a refutation of a group that has none: the strengthened try changes no
  solution the plain one finds, only where it gives up;
- on a pack made like the SGLang requests that needed the arc-consistent search (an FA4 backend
  on SM100 needs --page-size 128 while the prefill and decode backends are still free), the plain
  descent fixes the page size first, dead-ends at the backends and gives up at its step limit;
  the strengthened one finds the solution.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path

from generated import Case, Oracle, cases
from hypothesis import HealthCheck, given, settings

from solver.engine.csp import CompiledPack, compile_pack
from solver.engine.localsearch import dive, independent_groups
from solver.engine.state import Constraint, State
from solver.model import Scalar
from solver.pack.loader import load_directory

_PRODUCT_LIMIT = 20_000  # brute force over a group's values: past this many rows, not checked


def _groups(state: State) -> list[tuple[list[str], list[Constraint]]]:
    """The state's groups as `CompiledPack.search` gives them to `dive`: fields by domain size."""
    out = []
    for cons in independent_groups(state):
        names = sorted({f for c in cons for f in c.fields}, key=lambda n: (len(state.domains[n]), n))
        out.append((names, cons))
    return out


def _first_solution(
    state: State, names: Sequence[str], cons: Sequence[Constraint], hint: Mapping[str, Scalar]
) -> dict[str, Scalar] | bool | None:
    """The group's first solution in the descent's order, by enumeration (None: it has none;
    False: too many rows to enumerate)."""
    orders = []
    for name in names:
        values = list(state.domains[name])
        if name in hint and hint[name] in values:
            values = [hint[name], *(v for v in values if v != hint[name])]
        orders.append(values)
    size = 1
    for values in orders:
        size *= len(values)
    if size > _PRODUCT_LIMIT:
        return False
    for row in itertools.product(*orders):  # (lexicographic in the descent's order)
        found = dict(zip(names, row, strict=True))
        if all(con.holds(tuple(found[f] for f in con.fields)) for con in cons):
            return found
    return None


def _started(case: Case) -> tuple[Oracle, CompiledPack, dict[str, Scalar], State | None]:
    """The case's brute-force oracle, compiled pack, pins and propagated state (None: refuted)."""
    cp = compile_pack(case.pack)
    pins = {n: v for n, (v, _) in case.pins().items()}
    return Oracle(case.spec), cp, pins, cp.start(pins)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_strengthening_removes_only_values_no_solution_has(case: Case) -> None:
    oracle, cp, pins, state = _started(case)
    if state is None:
        return
    solutions = [dict(zip(oracle.names, row, strict=True)) for row in oracle.solutions(pins)]
    kept = state.strengthen(cp.never)
    if not kept:
        assert not solutions, "strengthening wiped out a state with a solution"
        return
    for solution in solutions:
        for name, values in state.domains.items():
            assert solution[name] in values, (name, solution[name], values)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_a_descent_finds_the_first_solution_in_its_order(case: Case) -> None:
    oracle, cp, _, state = _started(case)
    if state is None:
        return
    # Hints: none, and a solution of the pack without the request (mostly not one of the request).
    any_solution = next(oracle.solutions({}), None)
    hints: list[dict[str, Scalar]] = [{}]
    if any_solution is not None:
        hints.append(dict(zip(oracle.names, any_solution, strict=True)))
    for names, cons in _groups(state):
        for hint in hints:
            expected = _first_solution(state, names, cons, hint)
            for never in (None, cp.never):
                before = {n: state.domains[n] for n in names}
                found, _steps, refuted = dive(state, names, cons, hint, 10**6, never)
                assert {n: state.domains[n] for n in names} == before  # (the state is left as it was)
                if expected is False:
                    continue  # (too many rows to enumerate)
                if refuted:
                    assert found is None and expected is None, (never is not None, hint, expected)
                elif found is not None:
                    assert found == expected, (never is not None, hint, found, expected)
                # (else: gave up at its step limit, which only the arc-consistent search then decides)


def _fa4_pack(root: Path, fillers: int = 30) -> CompiledPack:
    """An FA4 backend (`attention`, pinned) needs page size 128 whenever it, or the prefill or
    decode backend, is fa4 (`page-128`: three free fields in the rule while the split backends
    are free, so forward checking cannot narrow the page size); the prefill and decode backends
    have 24 values (more than the descent's spare steps), the page size 2, and `fillers`
    two-valued fields share a rule with the prefill backend (they put the page size's decision
    far ahead of the backends')."""
    backends = ["fa4", *(f"b{i:02d}" for i in range(23))]
    text = f'[field.attention]\nkind = "option"\ndomain = {backends!r}\n\n'
    text += f'[field.prefill]\nkind = "option"\ndomain = {backends!r}\n\n'
    text += f'[field.decode]\nkind = "option"\ndomain = {backends!r}\n\n'
    text += '[field.page]\nkind = "option"\ndomain = [1, 128]\n\n'
    for i in range(fillers):
        text += f'[field.f{i:02d}]\nkind = "option"\ndomain = [0, 1]\n\n'
    text += (
        '[[rule]]\nid = "page-128"\n'
        "when = \"attention == 'fa4' or prefill == 'fa4' or decode == 'fa4'\"\n"
        'require = "page == 128"\nbecause = "test"\nsource = "test"\n\n'
        '[[rule]]\nid = "split-equal"\nwhen = "prefill == decode"\nrequire = "attention == prefill"\n'
        'because = "test"\nsource = "test"\n\n'
    )
    for i in range(fillers):
        text += (
            f'[[rule]]\nid = "filler-{i}"\nwhen = "f{i:02d} == 1"\nrequire = "prefill != \'b22\'"\n'
            'because = "test"\nsource = "test"\n\n'
        )
    root.mkdir()
    (root / "pack.toml").write_text(
        '[pack]\nname = "fa4-page"\nversion = "1"\ndescription = "a descent\'s dead end"\n'
        'files = ["rules.toml"]\n',
        encoding="utf-8",
    )
    (root / "rules.toml").write_text(text, encoding="utf-8")
    return compile_pack(load_directory(root))


def test_the_strengthened_descent_finds_what_the_plain_one_gives_up_on(tmp_path: Path) -> None:
    cp = _fa4_pack(tmp_path / "fa4")
    state = cp.start({"attention": "fa4"})
    assert state is not None
    [(names, cons)] = _groups(state)
    assert names.index("page") < names.index("prefill")  # (the page size is decided first)
    assert state.domains["page"] == [1, 128]  # (forward checking leaves it open)
    found, steps, refuted = dive(state, names, cons, {}, 10**6)
    assert found is None and not refuted  # the plain descent's step limit
    found, steps, refuted = dive(state, names, cons, {}, 10**6, cp.never)
    assert found is not None and not refuted
    # The first solution in the descent's order (each field's first value that some solution
    # has): every filler at 0, the page size at 128 (no solution has 1), both split backends fa4.
    first = {name: 0 for name in names if name.startswith("f")}
    assert found == {**first, "attention": "fa4", "page": 128, "prefill": "fa4", "decode": "fa4"}
    # (Fewer steps than the arc-consistent search would charge: one per field, and the first try's.)
    assert steps <= 2 * (len(names) + 16) + 2


def test_a_descent_with_the_stronger_step_takes_it_from_the_start(tmp_path: Path) -> None:
    """Given `never`, the descent is the strengthened one from its first step: the plain try that
    dead-ends at its step limit first (one step per field and 16 spare, then the strengthened
    descent again from the start) was a third of the slowest resolving SGLang requests' time.
    Failed on 0b3452a: 83 steps over 34 fields (the plain try's 51, then 32)."""
    cp = _fa4_pack(tmp_path / "fa4")
    state = cp.start({"attention": "fa4"})
    assert state is not None
    [(names, cons)] = _groups(state)
    found, steps, refuted = dive(state, names, cons, {}, 10**6, cp.never)
    assert found is not None and not refuted
    assert steps <= len(names)  # (one step per field left open, none spent on a dead end)
