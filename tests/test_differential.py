"""Regression fixture of the differential test: random scenarios SGLang 0.5.23 answered itself.

tests/fixtures/differential/ holds records drawn by the oracle's make_random.py (seeds in its
README.md), compacted with the config.json each scenario's model had, so this replays without
SGLang. Agreement may only go up: the measured rates are checked against floor.json. The same
replay with the full report is `benchmarks/differential.py tests/fixtures/differential/records.jsonl.gz`.
"""

from __future__ import annotations

import json
from pathlib import Path

import differential
import pytest

from solver import load_pack

FIXTURE = Path(__file__).parent / "fixtures" / "differential"
SLACK = 1.0  # points a measured rate may exceed its floor before the floor must be raised


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> differential.Summary:
    return differential.run_fixture(load_pack("sglang"), FIXTURE, tmp_path_factory.mktemp("configs"))


def test_the_fixture_covers_all_three_classes(summary: differential.Summary) -> None:
    counts = {kind: total for kind, (_, total) in summary.by_class().items()}
    assert sum(counts.values()) >= 2000 and all(counts.values()), counts


def test_every_scenario_id_is_unique(summary: differential.Summary) -> None:
    # A cause lists scenarios by id: two records of one id could not be told apart.
    assert differential.repeated_ids({"scenario": {"id": c.id}} for c in summary.cases) == []


def test_every_scenario_replays_without_a_crash(summary: differential.Summary) -> None:
    assert not summary.crashes(), [(c.id, c.detail) for c in summary.crashes()[:5]]


def test_nothing_is_changed_or_assumed_in_silence(summary: differential.Summary) -> None:
    # Whatever SGLang answered: no user value changed without a reported adjustment, and no fact
    # nobody gave filled in without being listed as assumed (audit.audit).
    assert summary.silent == [], summary.silent[:5]


@pytest.mark.parametrize("measure", ["verdict", "fields"])
def test_agreement_meets_the_floor_and_the_floor_keeps_up(
    summary: differential.Summary, measure: str
) -> None:
    floor = json.loads((FIXTURE / "floor.json").read_text())[measure]
    measured = differential.pct(*getattr(summary, measure))
    assert measured >= floor, (
        f"{measure} agreement with SGLang fell to {measured}% (floor {floor}%); run "
        "benchmarks/differential.py tests/fixtures/differential/records.jsonl.gz for the causes"
    )
    assert measured <= floor + SLACK, (
        f'{measure} agreement rose to {measured}% (floor {floor}%): raise "{measure}" in '
        f"tests/fixtures/differential/floor.json to {measured} so it cannot silently fall back"
    )


def test_a_load_failure_is_never_an_agreeing_silence(summary: differential.Summary) -> None:
    # The class rule itself: a load failure agrees only with a refusal or a warning.
    silent = [
        c for c in summary.cases if c.sglang == differential.LOAD_FAILS and c.agrees and c.ours == "resolved"
    ]
    assert not silent
