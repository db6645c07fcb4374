"""Fidelity to vLLM: the vLLM pack replays vLLM 0.33.0's own resolutions (tests/fixtures/oracle_vllm/).

Agreement may only go up: each file's verdict and field rates are checked against floor.json,
which must be raised when the pack gets better. Every disagreement must be explained, with a
reason, in constraints/vllm/KNOWN_DIFFERENCES.md, and every row there must still be one.
`benchmarks/differential_vllm.py` prints the same measures for any record file.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import oracle_vllm
import pytest

SLACK = 2.0  # points a measured rate may exceed its floor before the floor must be raised
FLOOR = oracle_vllm.FIXTURES / "floor.json"
# The default run replays the files at the top of the fixture folder; `-m long` adds long/.
FILES = sorted(oracle_vllm.FIXTURES.glob("*.jsonl.gz"))
LONG_FILES = sorted(oracle_vllm.FIXTURES.glob("long/*.jsonl.gz"))


def _name(path: Path) -> str:
    return str(path.relative_to(oracle_vllm.FIXTURES))


@functools.cache
def _report(name: str) -> oracle_vllm.Report:
    return oracle_vllm.run(oracle_vllm.load_records(oracle_vllm.FIXTURES / name))


@pytest.fixture(scope="module")
def reports() -> dict[str, oracle_vllm.Report]:
    return {_name(path): _report(_name(path)) for path in FILES}


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
    "name", [_name(p) for p in FILES] + [pytest.param(_name(p), marks=pytest.mark.long) for p in LONG_FILES]
)
def test_agreement_meets_the_floor_and_the_floor_keeps_up(name: str, measure: str) -> None:
    _check_floor(_report(name), name, measure)


@pytest.mark.long
def test_long_fixtures_disagree_only_where_known(long_reports: dict[str, oracle_vllm.Report]) -> None:
    known = oracle_vllm.known_differences()
    missing = [d for r in long_reports.values() for d in r.differences if d.key not in known]
    assert not missing, [vars(d) for d in missing]
    assert not [o.scenario for r in long_reports.values() for o in r.tracebacks]


def test_nothing_changes_or_is_assumed_in_silence(reports: dict[str, oracle_vllm.Report]) -> None:
    # Whatever vLLM answered: a user value is kept or its replacement reported, and a fact the
    # request did not give is listed as assumed (oracle_vllm.audit).
    silent = [f for r in reports.values() for f in r.silent]
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


def test_no_tracebacks(reports: dict[str, oracle_vllm.Report]) -> None:
    crashed = {name: [o.scenario for o in r.tracebacks] for name, r in reports.items() if r.tracebacks}
    assert not crashed


def test_every_disagreement_is_a_known_difference(reports: dict[str, oracle_vllm.Report]) -> None:
    known = oracle_vllm.known_differences()
    missing = [d for r in reports.values() for d in r.differences if d.key not in known]
    assert not missing, (
        f"{len(missing)} disagreement(s) with vLLM are not in constraints/vllm/KNOWN_DIFFERENCES.md; "
        "fix the pack or add a row with a reason:\n"
        + "\n".join(
            f"| `{d.scenario}` | {d.field} | `{d.vllm}` | `{d.ours}` | ({d.cause}) |" for d in missing
        )
    )


def test_every_known_difference_still_exists(reports: dict[str, oracle_vllm.Report]) -> None:
    # Rows about the long files' scenarios (ids R<seed>- of a long file) are checked by -m long.
    long_ids = {r["scenario"]["id"] for p in LONG_FILES for r in oracle_vllm.load_records(p)}
    current = {d.key for r in reports.values() for d in r.differences}
    stale = [key for key in oracle_vllm.known_differences() if key not in current and key[0] not in long_ids]
    assert not stale, f"rows of KNOWN_DIFFERENCES.md that no longer disagree (remove them): {stale}"


def test_the_known_differences_file_names_the_pack() -> None:
    text = Path(oracle_vllm.KNOWN).read_text(encoding="utf-8")
    assert "vLLM 0.33.0" in text
