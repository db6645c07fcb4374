"""Fidelity to SGLang: the pack replays SGLang 0.5.23's own resolutions (tests/fixtures/oracle/).

Agreement may only go up: the rates are checked against tests/fixtures/oracle/floor.json, which
must be raised when the pack gets better. Every disagreement must be explained, with a reason, in
constraints/sglang/KNOWN_DIFFERENCES.md, and every row there must still be a disagreement.
`benchmarks/oracle_report.py` prints the same measures as a table.
"""

from __future__ import annotations

import json
from collections import Counter

import oracle
import pytest

SLACK = 2.0  # points a measured rate may exceed its floor before the floor must be raised


@pytest.fixture(scope="module")
def report() -> oracle.Report:
    # Our conflicts' rules are not needed to measure agreement (and cost seconds each).
    return oracle.run(explain=False)


def test_the_oracle_is_the_reference_copy() -> None:
    rows = oracle.load_scenarios()
    ids = [row["scenario"]["id"] for row in rows]
    assert len(rows) == 209 and len(set(ids)) == len(ids)
    kinds = {row["scenario"].get("checkpoint_quant") for row in rows} - {None}
    assert kinds <= set(oracle.CHECKPOINT_QUANT), "map every checkpoint kind (oracle README)"


@pytest.mark.parametrize("measure", ["accept_reject", "values"])
def test_agreement_meets_the_floor_and_the_floor_keeps_up(report: oracle.Report, measure: str) -> None:
    floor = json.loads(oracle.FLOOR.read_text())[measure]
    measured = report.accept_rate if measure == "accept_reject" else report.value_rate
    assert measured >= floor, (
        f"{measure} agreement with SGLang fell to {measured}% (floor {floor}%); run "
        "benchmarks/oracle_report.py to see which scenarios now disagree"
    )
    assert measured <= floor + SLACK, (
        f'{measure} agreement rose to {measured}% (floor {floor}%): raise "{measure}" in '
        f"tests/fixtures/oracle/floor.json to {measured} so it cannot silently fall back"
    )


def test_every_disagreement_is_a_known_difference(report: oracle.Report) -> None:
    known = oracle.known_differences()
    missing = [d for d in report.differences if d.key not in known]
    assert not missing, (
        f"{len(missing)} disagreement(s) with SGLang are not in "
        "constraints/sglang/KNOWN_DIFFERENCES.md; fix the pack or add a row with a reason:\n"
        + "\n".join(
            f"| `{d.scenario}` | {d.field} | `{d.sglang}` | `{d.ours}` | (reason; ours: {d.why or d.ours}) |"
            for d in missing
        )
    )


def test_every_known_difference_still_exists(report: oracle.Report) -> None:
    current = {d.key for d in report.differences}
    stale = [key for key in oracle.known_differences() if key not in current]
    assert not stale, (
        "these rows of constraints/sglang/KNOWN_DIFFERENCES.md no longer describe what happens "
        "(fixed, or the values changed); remove or update them:\n"
        + "\n".join(" | ".join(key) for key in stale)
    )


def test_known_differences_cover_each_scenario_field_once(report: oracle.Report) -> None:
    counts = Counter((d.scenario, d.field) for d in report.differences)
    assert all(n == 1 for n in counts.values())


def test_the_harness_leaves_no_fact_to_the_solver(report: oracle.Report) -> None:
    # A free fact would let the solver choose whatever makes a request acceptable; every fact the
    # scenario does not give must be decided by the rules (architecture traits) or pinned.
    assert not report.free_facts(), report.free_facts()


def test_no_scenario_is_left_undecided(report: oracle.Report) -> None:
    undecided = [o.scenario for o in report.outcomes if o.ours == "budget"]
    assert not undecided, f"the search budget ran out on {undecided}"


def test_known_differences_parse_strictly(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "K.md"  # type: ignore[operator]
    path.write_text(
        "| scenario | field | SGLang | confsolve | reason |\n|---|---|---|---|---|\n"
        "| `a` | accept | `ok` | `conflict` | |\n"
    )
    with pytest.raises(ValueError, match="with a reason"):
        oracle.known_differences(path)
    path.write_text(
        "| scenario | field | SGLang | confsolve | reason |\n|---|---|---|---|---|\n"
        "| `a` | accept | `ok` | `conflict` | why |\n"
        "| a | accept | ok | conflict | again |\n"
    )
    with pytest.raises(ValueError, match="listed twice"):
        oracle.known_differences(path)
