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


def test_the_environment_of_a_scenario_is_read_as_confsolve_reads_it() -> None:
    """A budget variable the pack reads as a number is that number (not "0" or "1"), an unset one
    its unset value, and a dispatch-budget variable only raises its own all-to-all's budget."""
    pack = oracle.load_pack("sglang")
    budget = "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK"
    scenario = {"platform": "cuda", "sm": 100, "architecture": "Qwen3MoeForCausalLM"}
    lowered = {**scenario, "args": {"moe_a2a_backend": "megamoe"}, "env": {budget: "256"}}
    _options, facts, _ignored = oracle.inputs_for(pack, lowered)
    assert facts[budget] == 256 and facts["a2a_dispatch_budget_raised"] is False
    _options, facts, _ignored = oracle.inputs_for(pack, scenario)
    assert facts[budget] == 8192 and facts["SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR"] == 0
    mori = {
        **scenario,
        "args": {"moe_a2a_backend": "megamoe"},
        "env": {"SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "16384"},
    }
    assert oracle.inputs_for(pack, mori)[1]["a2a_dispatch_budget_raised"] is False
    mori["args"] = {"moe_a2a_backend": "mori"}
    assert oracle.inputs_for(pack, mori)[1]["a2a_dispatch_budget_raised"] is True


def test_a_command_line_record_is_read_by_the_launch_command_reader() -> None:
    """A record that keeps the words SGLang's parser read (`argv`, round 28) is replayed through
    the pack's launch-command reader, not from its `args`: an alias, an abbreviation, `--flag=value`
    and a flag typed twice (the parser keeps the last) read as SGLang read them, and words the
    reader refuses are the refusal `confsolve check` gives them."""
    pack = oracle.load_pack("sglang")
    scenario = {"platform": "cuda", "sm": 90, "architecture": "Qwen3MoeForCausalLM", "args": {"tp_size": 8}}
    words = ["--model", "{MODEL}", "--tensor-parallel-size=2", "--tp-size", "4", "--moe-runner", "triton"]
    options, _facts, _ignored = oracle.inputs_for(pack, {**scenario, "argv": words})
    assert options["tp_size"] in (4, "4") and options["moe_runner_backend"] == "triton"
    with pytest.raises(oracle.InvalidInput):
        oracle.inputs_for(pack, {**scenario, "argv": ["--model-path", "{MODEL}", "--tp-size"]})
