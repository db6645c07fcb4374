"""Fidelity to vLLM: the vLLM pack replays vLLM 0.33.0's own resolutions (tests/fixtures/oracle_vllm/).

Agreement may only go up: each file's verdict and field rates are checked against floor.json,
which must be raised when the pack gets better. Every disagreement must be explained, with a
reason, in constraints/vllm/KNOWN_DIFFERENCES.md, and every row there must still be one.
`benchmarks/differential_vllm.py` prints the same measures for any record file.

The default run replays a fixed, stratified sample of every file (top level and long/: each
file, verdict, GPU, architecture and checkpoint kind represented) and holds it to exactly the
known differences of its scenarios; `-m replay` replays the top-level files whole against their
floors (CI runs it, README "Tests"), `-m long` the files under long/.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import oracle_vllm
import pytest
import recordfiles

SLACK = 2.0  # points a measured rate may exceed its floor before the floor must be raised
FLOOR = oracle_vllm.FIXTURES / "floor.json"
# `-m replay` replays the files at the top of the fixture folder; `-m long` the ones in long/.
FILES = sorted(oracle_vllm.FIXTURES.glob("*.jsonl.gz"))
LONG_FILES = sorted(oracle_vllm.FIXTURES.glob("long/*.jsonl.gz"))
SAMPLE_SEED = "oracle-vllm-sample-1"
# The share of a file's records the default run replays, besides the lowest-ranked one of every
# stratum: more of the top-level files (the fixes a round guards), less of the big draws in long/.
SAMPLE_SHARE = {"top": 0.11, "long": 0.01}

Record = dict[str, Any]


def _name(path: Path) -> str:
    return str(path.relative_to(oracle_vllm.FIXTURES))


STRATA: tuple[Callable[[tuple[str, Record]], Hashable], ...] = (
    lambda fr: (fr[0], bool(fr[1]["vllm"].get("ok"))),
    # the probe group or section of a file (R12P1, R12P2, E11, V11002; A..F of the public grid)
    lambda fr: (fr[0], _group(fr[1])),
    lambda fr: (fr[1]["scenario"].get("sm"), bool(fr[1]["vllm"].get("ok"))),
    lambda fr: fr[1]["scenario"].get("architecture"),
    lambda fr: fr[1]["scenario"].get("checkpoint_quant"),
)


def _group(record: Record) -> str:
    found = re.match(r"[A-Za-z]+\d*(?=-)|[A-Za-z]+", str(record["scenario"]["id"]))
    return found.group(0) if found else ""


def sample(files: dict[str, list[Record]]) -> list[tuple[str, Record]]:
    """The default run's (file, record) pairs: deterministic; new records and files join by themselves."""
    return recordfiles.stratified_sample(
        [(name, record) for name, records in files.items() for record in records],
        key=_key,
        strata=STRATA,
        share=lambda pair: SAMPLE_SHARE["long" if pair[0].startswith("long/") else "top"],
        seed=SAMPLE_SEED,
    )


def _key(pair: tuple[str, Record]) -> str:
    return f"{pair[0]}:{pair[1]['scenario']['id']}"


@functools.cache
def _report(name: str) -> oracle_vllm.Report:
    return oracle_vllm.run(oracle_vllm.load_records(oracle_vllm.FIXTURES / name))


@pytest.fixture(scope="module")
def fixture_files() -> dict[str, list[Record]]:
    return {_name(path): oracle_vllm.load_records(path) for path in [*FILES, *LONG_FILES]}


@pytest.fixture(scope="module")
def sample_report(fixture_files: dict[str, list[Record]]) -> oracle_vllm.Report:
    return oracle_vllm.run([record for _, record in sample(fixture_files)])


@pytest.fixture(scope="module")
def reports() -> dict[str, oracle_vllm.Report]:
    return {_name(path): _report(_name(path)) for path in FILES}


@pytest.fixture(scope="module", params=["sample", pytest.param("full", marks=pytest.mark.replay)])
def replayed(request: pytest.FixtureRequest) -> list[oracle_vllm.Report]:
    """The sample's report in the default run, every top-level file's under `-m replay`."""
    if request.param == "sample":
        return [request.getfixturevalue("sample_report")]
    return list(request.getfixturevalue("reports").values())


@pytest.fixture(scope="module")
def long_reports() -> dict[str, oracle_vllm.Report]:
    return {_name(path): _report(_name(path)) for path in LONG_FILES}


def test_the_public_scenarios_are_the_reference_copy() -> None:
    rows = oracle_vllm.load_records(oracle_vllm.FIXTURES / "public-0.33.0.jsonl.gz")
    ids = [row["scenario"]["id"] for row in rows]
    assert len(rows) == 118 and len(set(ids)) == len(ids)
    kinds = {row["scenario"].get("checkpoint_quant") for row in rows} - {None}
    assert kinds <= set(oracle_vllm.CHECKPOINT_QUANT), "map every checkpoint kind (contract step 2)"


def test_scenarios_outside_the_contract_are_skipped_not_scored() -> None:
    base = {"platform": "cuda", "sm": 90, "architecture": "LlamaForCausalLM", "args": {}}
    assert oracle_vllm.request_for(base) is not None
    assert oracle_vllm.request_for({**base, "args": {"max_model_len": 8192}}) is None
    assert oracle_vllm.request_for({**base, "env": {"VLLM_BATCH_INVARIANT": "1"}}) is None
    assert oracle_vllm.request_for({**base, "facts": {"has_deep_ep": True}}) is None
    options, facts = oracle_vllm.request_for(
        {**base, "checkpoint_quant": "mxfp8", "args": {"attention_config": {"flash_attn_version": 3}}}
    ) or ({}, {})
    assert options == {"flash_attn_version": 3}
    assert facts["checkpoint_quant"] == "modelopt_mxfp8" and facts["num_attention_heads"] == 32


def test_head_counts_over_an_mla_config_are_read_as_facts() -> None:
    # Round 31's R31P2 probes write other head counts over DeepSeek-V3.2's config (hf_overrides):
    # the pack reads them as the facts of those names; over a GQA model's config they would change
    # its head size too (hidden / heads), which the replay does not follow, so those are skipped.
    heads = {"num_attention_heads": 32, "num_key_value_heads": 32}
    mla = {"platform": "cuda", "sm": 100, "architecture": "DeepseekV32ForCausalLM", "hf_overrides": heads}
    _options, facts = oracle_vllm.request_for(mla) or ({}, {})
    assert facts["num_attention_heads"] == 32 and facts["num_key_value_heads"] == 32
    assert oracle_vllm.request_for({**mla, "architecture": "LlamaForCausalLM"}) is None
    assert oracle_vllm.request_for({**mla, "hf_overrides": {**heads, "head_dim": 64}}) is None


def test_a_scenario_the_harness_timed_out_is_skipped_not_a_refusal() -> None:
    # Round 14's draws at load 30: the harness gave up on some scenarios (OracleTimeout, no error
    # site). That is no answer of vLLM's; it was read as a refusal and the replay crashed on it.
    scenario = {"id": "T-1", "platform": "cuda", "sm": 90, "architecture": "LlamaForCausalLM", "args": {}}
    timeout = {"ok": False, "error": {"type": "OracleTimeout", "message": "", "where": None}}
    report = oracle_vllm.run([{"scenario": scenario, "vllm": timeout}])
    assert [o.ours for o in report.outcomes] == ["skipped"] and not report.differences


def _check_floor(report: oracle_vllm.Report, name: str, measure: str) -> None:
    floor = json.loads(FLOOR.read_text())[name][measure]
    agree, total = report.verdict_agree if measure == "verdict" else report.field_agree
    measured = oracle_vllm.pct(agree, total)
    assert measured >= floor, (
        f"{name}: {measure} agreement with vLLM fell to {measured}% (floor {floor}%); run "
        f"benchmarks/differential_vllm.py tests/fixtures/oracle_vllm/{name} to see what now disagrees"
    )
    assert measured <= floor + SLACK, (
        f"{name}: {measure} agreement rose to {measured}% (floor {floor}%): raise it in "
        f"tests/fixtures/oracle_vllm/floor.json so it cannot silently fall back"
    )


@pytest.mark.parametrize("measure", ["verdict", "fields"])
@pytest.mark.parametrize(
    "name",
    [pytest.param(_name(p), marks=pytest.mark.replay) for p in FILES]
    + [pytest.param(_name(p), marks=pytest.mark.long) for p in LONG_FILES],
)
def test_agreement_meets_the_floor_and_the_floor_keeps_up(name: str, measure: str) -> None:
    _check_floor(_report(name), name, measure)


@pytest.mark.long
def test_long_fixtures_disagree_only_where_known(long_reports: dict[str, oracle_vllm.Report]) -> None:
    known = oracle_vllm.known_differences()
    missing = [d for r in long_reports.values() for d in r.differences if d.key not in known]
    assert not missing, [vars(d) for d in missing]
    assert not [o.scenario for r in long_reports.values() for o in r.tracebacks]


def test_nothing_changes_or_is_assumed_in_silence(replayed: list[oracle_vllm.Report]) -> None:
    # Whatever vLLM answered: a user value is kept or its replacement reported, and a fact the
    # request did not give is listed as assumed (oracle_vllm.audit).
    silent = [f for r in replayed for f in r.silent]
    assert not silent, silent[:10]


@pytest.mark.long
def test_long_fixtures_change_nothing_in_silence(long_reports: dict[str, oracle_vllm.Report]) -> None:
    silent = [f for r in long_reports.values() for f in r.silent]
    assert not silent, silent[:10]


def test_the_audit_sees_an_unreported_change() -> None:
    # The audit itself can fail: a resolution that dropped a user value without saying so.
    pack = oracle_vllm.load_pack("vllm")
    base = {"platform": "cuda", "sm": 90, "architecture": "LlamaForCausalLM", "args": {"block_size": 32}}
    options, facts = oracle_vllm.request_for(base) or ({}, {})
    resolution = oracle_vllm.resolve(pack, options, facts, reasons=False, predict=True)
    assert oracle_vllm.audit(pack, options, facts, resolution) == []
    changed = dataclasses.replace(resolution, values={**resolution.values, "block_size": 64})
    found = oracle_vllm.audit(pack, options, facts, changed)
    assert found == ["block_size=32 became 64 with no adjustment reported"]
    unlisted = dataclasses.replace(resolution, assumed=[])
    assert any("not listed as assumed" in f for f in oracle_vllm.audit(pack, options, facts, unlisted))


def test_no_tracebacks(replayed: list[oracle_vllm.Report]) -> None:
    crashed = [o.scenario for r in replayed for o in r.tracebacks]
    assert not crashed


def test_every_disagreement_is_a_known_difference(replayed: list[oracle_vllm.Report]) -> None:
    known = oracle_vllm.known_differences()
    missing = [d for r in replayed for d in r.differences if d.key not in known]
    assert not missing, (
        f"{len(missing)} disagreement(s) with vLLM are not in constraints/vllm/KNOWN_DIFFERENCES.md; "
        "fix the pack or add a row with a reason:\n"
        + "\n".join(
            f"| `{d.scenario}` | {d.field} | `{d.vllm}` | `{d.ours}` | ({d.cause}) |" for d in missing
        )
    )


def test_the_sample_represents_every_stratum_and_stays_small(fixture_files: dict[str, list[Record]]) -> None:
    picked = sample(fixture_files)
    pairs = [(name, r) for name, rs in fixture_files.items() for r in rs]
    for stratum in STRATA:
        assert {stratum(fr) for fr in picked} == {stratum(fr) for fr in pairs}
    assert 100 <= len(picked) <= 400, len(picked)
    backwards = {name: list(reversed(rs)) for name, rs in reversed(fixture_files.items())}
    assert sorted(map(_key, sample(backwards))) == sorted(map(_key, picked)), "the pick depends on the order"


def test_the_sample_disagrees_exactly_where_known(
    fixture_files: dict[str, list[Record]], sample_report: oracle_vllm.Report
) -> None:
    # No slack: every known difference of a sampled scenario still happens (with the check above,
    # that nothing else disagrees, the sample's agreement is exactly what the table says).
    sampled = {record["scenario"]["id"] for _, record in sample(fixture_files)}
    current = {d.key for d in sample_report.differences}
    stale = [key for key in oracle_vllm.known_differences() if key[0] in sampled and key not in current]
    va, vt = sample_report.verdict_agree
    fa, ft = sample_report.field_agree
    assert not stale, (
        f"the {vt}-scenario sample agrees with vLLM on {oracle_vllm.pct(va, vt)}% of verdicts and "
        f"{oracle_vllm.pct(fa, ft)}% of fields; rows of KNOWN_DIFFERENCES.md that no longer disagree "
        f"(remove them): {stale}"
    )


@pytest.mark.replay
def test_every_known_difference_still_exists(reports: dict[str, oracle_vllm.Report]) -> None:
    # Rows about the long files' scenarios (ids R<seed>- of a long file) are checked by -m long.
    long_ids = {r["scenario"]["id"] for p in LONG_FILES for r in oracle_vllm.load_records(p)}
    current = {d.key for r in reports.values() for d in r.differences}
    stale = [key for key in oracle_vllm.known_differences() if key not in current and key[0] not in long_ids]
    assert not stale, f"rows of KNOWN_DIFFERENCES.md that no longer disagree (remove them): {stale}"


def test_the_known_differences_file_names_the_pack() -> None:
    text = Path(oracle_vllm.KNOWN).read_text(encoding="utf-8")
    assert "vLLM 0.33.0" in text
