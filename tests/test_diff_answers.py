"""`diff` that answers: identical packs are said to be identical (no count runs out of its
budget), a side that adds nothing is exactly 0 without counting, only requests that are
machines under both packs are compared, and a diff that compared no request says so plainly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile import TOY

from solver import load_pack
from solver.cli.commands import main
from solver.lint.diff import diff


def _toy_copy(tmp_path: Path, name: str, extra_rules: str = "", drop: str = "") -> Path:
    root = tmp_path / name
    shutil.copytree(TOY, root)
    rules = root / "rules.toml"
    text = rules.read_text(encoding="utf-8")
    if drop:
        start = text.index(f'id = "{drop}"')
        start = text.rindex("[[rule]]", 0, start)
        end = text.find("[[rule]]", start + 1)
        text = text[:start] + (text[end:] if end != -1 else "")
    rules.write_text(text + extra_rules, encoding="utf-8")
    return root


def test_identical_packs_are_said_to_be_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = _toy_copy(tmp_path, "same")
    assert main(["diff", str(TOY), str(copy)]) == 0
    out = capsys.readouterr().out
    assert "identical" in out and "not counted" not in out and "too many" not in out
    assert main(["diff", str(TOY), str(copy), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["identical"] is True and doc["invalidated"]["count"] == 0 == doc["validated"]["count"]
    assert doc["comparable"] == {"configurations": True, "resolutions": True}


def test_a_side_that_adds_nothing_is_exactly_zero_without_counting(tmp_path: Path) -> None:
    """The new pack drops a rule: nothing valid before is invalid now, even when one counting
    step is all the budget there is (the other side is honestly not counted)."""
    from solver.engine.count import Limit

    old, new = load_pack(TOY), load_pack(_toy_copy(tmp_path, "fewer", drop="cutlass-not-a100"))
    result = diff(old, new, limit=Limit(steps=1, seconds=None))
    assert result.invalidated.count == 0
    assert result.validated.count is None or result.validated.count > 0
    exact = diff(old, new)
    assert exact.old_count is not None and exact.new_count is not None
    assert exact.invalidated.count == 0
    assert exact.validated.count == exact.new_count - exact.old_count > 0


def test_machines_impossible_under_either_pack_are_not_compared(tmp_path: Path) -> None:
    """The old pack says a100 machines do not exist (a rule over facts alone): a request on an
    a100 is no machine before, so it is neither "only resolves now" nor compared."""
    old = load_pack(
        _toy_copy(
            tmp_path,
            "no-a100",
            extra_rules=(
                '\n[[rule]]\nid = "no-a100"\nforbid = "gpu == \'a100\'"\nbecause = "retired"\nsource = "t"\n'
            ),
        )
    )
    new = load_pack(TOY)
    result = diff(old, new)
    requests = result.requests
    assert requests["machines_ruled_out_before"] == 1  # gpu=a100 of the 3 gpus
    assert requests["new_only"] == 0
    assert requests["compared"] == 2


def test_a_diff_that_compared_no_request_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = _toy_copy(
        tmp_path,
        "nothing",
        extra_rules=(
            "\n[[rule]]\nid = \"no-quant\"\nforbid = \"quant in ['none', 'fp8', 'fp4']\"\n"
            'because = "everything is refused"\nsource = "t"\n'
        ),
    )
    assert main(["diff", str(TOY), str(new)]) == 0
    out = capsys.readouterr().out
    assert "not comparable" in out and "no resolution changed" not in out
    assert main(["diff", str(TOY), str(new), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["comparable"]["resolutions"] is False
