"""`confsolve diff` against brute force on two small fixture packs (toy and toy-v2), and on a
variant with a field the old pack lacks (configurations compared over the shared fields)."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.engine.csp import compile_pack
from solver.lint.diff import PackDiff, diff
from solver.model import Pack, Scalar

PACKS = Path(__file__).parent / "fixtures" / "packs"
OLD = str(PACKS / "toy")
NEW = str(PACKS / "toy-v2")

Row = tuple[Scalar, ...]


def valid(pack: Pack, shared: list[str], pins: Mapping[str, Scalar] | None = None) -> set[Row]:
    """The configurations of the shared fields some full configuration of `pack` extends."""
    cp = compile_pack(pack)
    names = list(cp.domains)
    out = set()
    for values in itertools.product(*cp.domains.values()):
        row = dict(zip(names, values, strict=True))
        if any(row.get(n, v) != v for n, v in (pins or {}).items()):
            continue
        if all(r.condition.evaluate(row) for r in cp.rules.values()):
            out.add(tuple(row[n] for n in shared))
    return out


@pytest.fixture(scope="module")
def result() -> PackDiff:
    return diff(load_pack(OLD), load_pack(NEW))


def test_structure(result: PackDiff) -> None:
    assert result.fields["changed"] == {
        "quant": {"added_values": ["int4"]},
        "kernel": {"added_values": ["marlin"]},
        "ep": {"removed_values": [8]},
    }
    assert result.rules == {
        "added": ["fp8-needs-new-gpu", "marlin-needs-int4"],
        "removed": ["cutlass-not-a100"],
        "changed": [],
    }
    assert result.preferences == {"added": [], "removed": [], "changed": ["kernel-new-gpu"]}
    assert not result.projected


def test_counts_equal_brute_force(result: PackDiff) -> None:
    old, new = load_pack(OLD), load_pack(NEW)
    shared = result.shared
    before, after = valid(old, shared), valid(new, shared)
    assert (result.old_count, result.new_count) == (len(before), len(after))
    assert result.invalidated.count == len(before - after)
    assert result.validated.count == len(after - before)


@pytest.mark.parametrize("direction", ["invalidated", "validated"])
def test_groups_partition_the_difference_in_order(result: PackDiff, direction: str) -> None:
    """Group i holds the configurations that break item i and none of the items before it."""
    old, new = load_pack(OLD), load_pack(NEW)
    accept, reject = (old, new) if direction == "invalidated" else (new, old)
    shared = result.shared
    rows = [dict(zip(shared, row, strict=True)) for row in valid(accept, shared) - valid(reject, shared)]
    side = getattr(result, direction)
    rules = compile_pack(reject).rules

    def breaks(group_kind: str, ident: str, row: Mapping[str, Scalar]) -> bool:
        if group_kind == "domain":
            name = ident.partition("=")[0]
            return row[name] not in reject.fields[name].domain
        return not rules[ident].condition.evaluate(row)

    remaining = rows
    for group in side.groups:
        mine = [r for r in remaining if breaks(group.kind, group.id, r)]
        assert group.count == len(mine)
        assert group.example is not None and breaks(group.kind, group.id, group.example)
        assert group.example in rows
        remaining = [r for r in remaining if r not in mine]
    assert side.other == len(remaining) == 0
    assert [g.id for g in side.groups] == (
        ["ep=8", "fp8-needs-new-gpu"] if direction == "invalidated" else ["quant=int4", "cutlass-not-a100"]
    )


def test_a_rule_group_names_its_minimal_reason(result: PackDiff) -> None:
    group = next(g for g in result.invalidated.groups if g.id == "fp8-needs-new-gpu")
    assert group.reason == ["gpu=a100", "quant=fp8", "fp8-needs-new-gpu"]


def test_resolution_changes_name_the_field_and_both_values() -> None:
    result = diff(load_pack(OLD), load_pack(NEW), {"quant": "fp8"})
    change = next(c for c in result.changes if c.field == "kernel")
    assert (change.old, change.new, change.count) == ("cutlass", "trtllm", 2)
    assert change.example["quant"] == "fp8" and change.example["gpu"] in ("h100", "b200")
    assert "kernel now resolves to trtllm instead of cutlass" in change.text()
    assert result.requests["old_only"] == 1  # fp8 on a100 resolves only in the old pack


def test_packs_with_different_fields_are_compared_over_the_shared_ones(tmp_path: Path) -> None:
    pack = tmp_path / "v3"
    shutil.copytree(NEW, pack)
    with (pack / "rules.toml").open("a") as out:
        out.write("""
[field.mem]
kind = "option"
domain = ["low", "high"]

[[rule]]
id = "tp8-needs-high-mem"
when = "tp == 8"
require = "mem == 'high'"
because = "tp 8 needs --mem high"
source = "toy/docs#4"

[[rule]]
id = "a100-low-mem"
when = "gpu == 'a100'"
require = "mem == 'low'"
because = "a100 boards run --mem low"
source = "toy/docs#5"
""")
    old, new = load_pack(OLD), load_pack(pack)
    result = diff(old, new)
    assert result.projected and result.fields["added"] == ["mem"]
    shared = result.shared
    assert "mem" not in shared
    before, after = valid(old, shared), valid(new, shared)
    assert (result.old_count, result.new_count) == (len(before), len(after))
    assert result.invalidated.count == len(before - after)
    assert result.validated.count == len(after - before)
    total = sum(g.count or 0 for g in result.invalidated.groups) + (result.invalidated.other or 0)
    assert total == result.invalidated.count
    assert result.invalidated.other  # tp=8 on a100: through mem, which only the new pack has
    assert "shared fields" in result.text()


def test_pins_restrict_the_comparison() -> None:
    shared = diff(load_pack(OLD), load_pack(NEW)).shared
    result = diff(load_pack(OLD), load_pack(NEW), {"gpu": "a100"})
    before = valid(load_pack(OLD), shared, {"gpu": "a100"})
    after = valid(load_pack(NEW), shared, {"gpu": "a100"})
    assert result.invalidated.count == len(before - after)
    assert result.validated.count == len(after - before)


def test_cli_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", OLD, NEW, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1 and doc["status"] == "diffed"
    assert doc["invalidated"]["count"] == 53 and doc["rules"]["removed"] == ["cutlass-not-a100"]
    assert main(["diff", OLD, NEW, "--set", "quant=fp8"]) == 0
    out = capsys.readouterr().out
    assert "kernel now resolves to trtllm instead of cutlass" in out
    assert "rule fp8-needs-new-gpu (new)" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--set", "quantt=fp8"], "quantt"),
        (["--set", "quant=fp9"], "fp9"),
        (["--samples", "0"], "--samples"),
    ],
)
def test_cli_bad_input_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    assert main(["diff", OLD, NEW, *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_a_value_only_the_new_pack_has_is_accepted() -> None:
    result = diff(load_pack(OLD), load_pack(NEW), {"quant": "int4"})
    assert result.old_count == 0 and result.new_count and result.validated.count == result.new_count


def test_a_count_over_its_budget_leaves_the_groups_with_examples() -> None:
    """With a budget too small to count anything, the diff still lists every group the full
    diff finds, each with an example, and reports every number as unknown rather than wrong."""
    from solver.engine.count import Limit

    full = diff(load_pack(OLD), load_pack(NEW))
    starved = diff(load_pack(OLD), load_pack(NEW), limit=Limit(steps=1))
    assert (starved.old_count, starved.new_count) == (None, None)
    for got, want in ((starved.invalidated, full.invalidated), (starved.validated, full.validated)):
        assert [(g.kind, g.id) for g in got.groups] == [(g.kind, g.id) for g in want.groups]
        assert all(g.count is None and g.example is not None for g in got.groups)
        assert got.count is None and got.other is None


def test_seed_pack_against_the_complete_sglang_pack_names_the_responsible_rules() -> None:
    """The issue's example: the seed pack (PR #30075's scope) against the complete SGLang pack,
    on a Hopper machine. Every group of configurations the complete pack newly rejects is named
    by one of its new rules, with an example the seed accepts and that rule breaks, and the
    complete pack's minimal reason for refusing it; resolutions that moved say from what to
    what."""
    old, new = load_pack(str(PACKS / "sglang-seed")), load_pack("sglang")
    pins = {"platform": "cuda", "gpu_arch": "sm90"}
    result = diff(old, new, pins)
    assert "fa3-needs-sm8x-or-sm90" in result.rules["added"]
    groups = [g for g in result.invalidated.groups if g.kind == "rule"]
    assert groups, result.text()
    new_cp, old_cp = compile_pack(new), compile_pack(old)
    for group in groups:
        assert group.id in result.rules["added"] + result.rules["changed"], group.id
        assert group.example is not None and group.reason, group.id
        assert all(group.example[n] == v for n, v in pins.items())
        assert not new_cp.rules[group.id].condition.evaluate(group.example), group.id
        # The example is a configuration of the shared fields: the seed has a full
        # configuration extending it, the complete pack none.
        assert old_cp.solve(group.example) is not None, group.id
        assert new_cp.solve(group.example) is None, group.id
    text = result.text()
    assert all(f"rule {g.id} (new)" in text for g in groups)
    for change in result.changes:
        assert change.old != change.new and change.field in new.fields
        assert f"{change.field} now resolves to" in text
