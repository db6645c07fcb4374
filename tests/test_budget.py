"""`--budget N` bounds one command, every search it makes included (exit 4), and the budget is an
argument passed down (`solver.budget.Budget`), never a module global.

The packs are all-different problems: n fields over 0..n-1, one `pi != pj` rule per pair. Each
search on them takes a few dozen steps, so a bound on each search alone never stops a command;
`matrix`, `lint`, `choices` and `diff` make many searches, and only the command's total can.
Lint answers an all-different pack with a handful of steps now (its counter sees the symmetry),
so its total is tested on benchmarks/synthetic.py's seeded 20-field pack, thousands of steps.
The slow cases (the SGLang pack, a 5,000-field pack) are in `benchmarks/hostile.py`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile import synthetic_pack, write_pack

from solver import Budget, SolverBudgetExceeded, load_pack, resolve, valid_choices
from solver.budget import CommandBudgetExceeded
from solver.cli.commands import main
from solver.lint.checks import lint
from solver.lint.diff import diff
from solver.model import Pack
from solver.reasoning.pictures import compatibility


def all_different(root: Path, n: int, skip: str | None = None, tag: str = "") -> Path:
    """The pack (`tag` makes its name, and so its digest, its own: nothing cached is shared)."""
    fields = "".join(f'[field.p{i}]\nkind = "option"\ndomain = {list(range(n))}\n' for i in range(n))
    rules = "".join(
        f'[[rule]]\nid = "p{i}-ne-p{j}"\nrequire = "p{i} != p{j}"\nbecause = "b"\nsource = "s"\n'
        for i in range(n)
        for j in range(n)
        if i < j and f"p{i}-ne-p{j}" != skip
    )
    name = f"alldiff-{n}{tag}" + (f"-without-{skip}" if skip else "")
    return write_pack(root / name, {"f.toml": fields + rules}, name=name)


WORK: dict[str, Callable[[Pack, Budget], Any]] = {
    "matrix": lambda pack, budget: compatibility(pack, "p0", "p1", budget=budget),
    "lint": lambda pack, budget: lint(pack, budget=budget),
    "choices": lambda pack, budget: valid_choices(pack, budget=budget),
}


@pytest.mark.parametrize("command", sorted(WORK))
def test_a_command_total_stops_what_each_search_alone_would_not(tmp_path: Path, command: str) -> None:
    # A fresh pack (a digest of its own) for each run: what a compiled pack keeps between calls
    # (solutions for `choices`) would make a later run search less.
    def fresh(run: str) -> Pack:
        if command in ("lint", "choices"):
            # (choices of the all-different pack is now one search: its first witness's)
            return load_pack(synthetic_pack(tmp_path, 20, tag=run))
        return load_pack(all_different(tmp_path, 8, tag=run))

    unbounded = Budget(10**9, total=10**12)
    WORK[command](fresh("unbounded"), unbounded)
    spent = unbounded.spent
    assert spent > 20, "the work makes searches"
    steps = spent // 2
    alone = Budget(steps)  # each search bounded, no total: the work completes
    WORK[command](fresh("alone"), alone)
    with pytest.raises(CommandBudgetExceeded) as caught:
        WORK[command](fresh("total"), Budget(steps, total=steps))
    assert caught.value.exit_code == 4 and f"budget of {steps} steps" in str(caught.value)


@pytest.mark.parametrize("command", ["matrix", "lint", "choices", "diff", "count"])
def test_the_command_line_budget_ends_the_command_with_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    pack = str(all_different(tmp_path, 8))
    argv = {
        "matrix": ["matrix", "p0", "p1", "--pack", pack],
        "lint": ["lint", "--pack", pack],
        "choices": ["choices", "--pack", pack],
        "diff": ["diff", pack, str(all_different(tmp_path, 8, skip="p0-ne-p1"))],
        "count": ["count", "--pack", pack],
    }[command]
    assert main([*argv, "--json"]) in (0, 1)  # (lint may find the pack's redundancies)
    capsys.readouterr()
    again = str(all_different(tmp_path, 8, tag="again"))  # nothing kept from the first run
    argv = [again if word == pack else word for word in argv]
    # Loading is charged first (a step per LOAD_BYTES_PER_STEP bytes; diff loads two packs):
    # 10 steps more than that are what the searches get.
    loading = sum(_loading_steps(Path(word)) for word in argv if word.startswith(str(tmp_path)))
    steps = loading + 10
    assert main([*argv, "--budget", str(steps), "--json"]) == 4
    doc = json.loads(capsys.readouterr().out)
    if command == "count":  # the best exact partial answer: a `bounded` document, bounds on the count
        assert doc["status"] == "bounded" and int(doc["lower"]) <= int(doc["upper"])
        assert f"what --budget {steps} left after loading the pack, 10 steps" in doc["message"]
        assert "at least" in doc["message"]
    else:
        assert doc["status"] == "error" and "budget" in doc["error"]["message"]
        assert "loading" not in doc["error"]["message"]


def _loading_steps(pack: Path) -> int:
    from solver.budget import LOAD_BYTES_PER_STEP

    return sum(f.stat().st_size for f in pack.iterdir()) // LOAD_BYTES_PER_STEP


@pytest.mark.parametrize("command", ["show", "resolve", "count", "lint", "matrix", "diff"])
def test_a_budget_smaller_than_loading_the_pack_ends_before_it_is_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Loading is charged before anything is parsed: a pack whose files cost more steps than the
    command has ends with exit 4 and a message naming the pack and the loading, even when a file
    of it is broken (nothing was parsed to find out), cached or not. One step more loads it."""
    pack = all_different(tmp_path, 8)
    loading = _loading_steps(pack)
    assert loading > 20
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in pack.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    with (broken / "f.toml").open("a") as tail:
        tail.write("\n[[rule]\nthis is not TOML\n")
    argv = {
        "show": ["show", "--pack"],
        "resolve": ["resolve", "--pack"],
        "count": ["count", "--pack"],
        "lint": ["lint", "--pack"],
        "matrix": ["matrix", "p0", "p1", "--pack"],
        "diff": ["diff", str(pack)],
    }[command]
    for target in (pack, broken):
        assert main(["--budget", str(loading // 2), *argv, str(target)]) == 4
        err = capsys.readouterr().err
        assert "ran out while loading pack" in err and f"budget of {loading // 2} steps" in err
    assert main(["--budget", str(loading * 2), "show", "--pack", str(broken)]) == 3  # then it is parsed
    capsys.readouterr()


def test_a_budget_is_an_argument_not_shared_state(tmp_path: Path) -> None:
    """Two threads, one with a tiny budget and one with none: only the first runs out (a
    module global written by one would bound the other)."""
    pack = load_pack(all_different(tmp_path, 8))
    outcomes: dict[str, str] = {}

    def run(name: str, budget: Budget | None) -> None:
        try:
            for _ in range(20):
                compatibility(pack, "p0", "p1", budget=budget)
            outcomes[name] = "done"
        except SolverBudgetExceeded:
            outcomes[name] = "budget"

    threads = [
        threading.Thread(target=run, args=("tiny", Budget(5, total=5))),
        threading.Thread(target=run, args=("none", None)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == {"tiny": "budget", "none": "done"}
    import solver.engine.csp as csp

    assert not hasattr(csp, "BUDGET")


def test_a_diff_counts_a_search_that_ran_out_as_undecided_not_as_a_change(tmp_path: Path) -> None:
    old = load_pack(all_different(tmp_path, 8))
    new = load_pack(all_different(tmp_path, 8, skip="p0-ne-p1"))
    with pytest.raises(SolverBudgetExceeded):
        diff(old, new, budget=Budget(10, total=10))
    assert diff(old, new).requests["compared"] > 0


def test_resolve_charges_its_searches_to_the_budget_given(tmp_path: Path) -> None:
    pack = load_pack(all_different(tmp_path, 8))
    budget = Budget(10**6, total=10**6)
    resolve(pack, {"p0": 1}, budget=budget)
    first = budget.spent
    resolve(pack, {"p0": 2}, budget=budget)
    assert 0 < first < budget.spent


def test_a_search_step_on_a_large_problem_costs_a_step_per_64_open_fields() -> None:
    """A backtracking step saves and restores every open field's domain: on a problem of a few
    dozen fields it is one step (the shipped packs' problems), on hundreds it costs a step per
    64 open fields, so that a number of steps bounds the time of a search at any size."""
    from solver.engine.backtrack import SearchTrace, domain, new_search

    def steps(n: int, budget: int = 10**6) -> int:
        trace = SearchTrace()
        domains = {f"x{i}": domain([0, 1]) for i in range(n)}
        unconstrained: dict[str, list[Any]] = {name: [] for name in domains}
        found = new_search(budget, "searching", trace).getSolution(domains, None, unconstrained)
        assert found is not None and len(found) == n
        return trace.steps

    assert steps(50) == 50  # one step per assignment, as before
    assert steps(200) > 250  # 200 assignments, most of them with more than 128 fields open
    with pytest.raises(SolverBudgetExceeded):
        steps(200, budget=220)


def test_a_capped_search_that_runs_out_shows_nothing_but_the_commands_limits_end_it() -> None:
    """`within_cap`, the one home of the distinction every capped search needs (ASSUMED facts,
    typed witnesses, lint's questions): a search stopped at its own cap is RAN_OUT, neither a
    solution nor a refutation; the command's budget and deadline pass through and end it."""
    from solver.budget import RAN_OUT, within_cap
    from solver.errors import DeadlineExceeded

    def raising(error: Exception) -> Callable[[], None]:
        def search() -> None:
            raise error

        return search

    assert within_cap(raising(SolverBudgetExceeded("a search", 10))) is RAN_OUT
    assert within_cap(lambda: None) is None  # a refutation stays one
    assert within_cap(dict, a=1) == {"a": 1}
    with pytest.raises(CommandBudgetExceeded):
        within_cap(raising(CommandBudgetExceeded("linting", 100)))
    with pytest.raises(DeadlineExceeded):
        within_cap(raising(DeadlineExceeded("lint", "rules", 1.0)))
