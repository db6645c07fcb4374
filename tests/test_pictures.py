"""`confsolve matrix` and `graph --format svg`: every cell right, every ✗ with its minimal reason."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path

import pytest

from solver import InvalidInput, Pack, Unsatisfiable, load_pack
from solver.cli.commands import main
from solver.inputs.pins import collect_pins
from solver.reasoning.pictures import compatibility
from solver.render import graph
from solver.render.graph import dot_to_svg
from solver.render.matrix import render

TOY = str(Path(__file__).parent / "fixtures" / "packs" / "toy")


@pytest.fixture(scope="module")
def toy() -> Pack:
    return load_pack(TOY)


def test_cells_match_resolve_with_both_pinned_and_name_the_rule(toy: Pack) -> None:
    m = compatibility(toy, "quant", "gpu")
    assert m.rows == ("none", "fp8", "fp4") and m.cols == ("a100", "h100", "b200")
    failing = {pair for pair in m.reasons}
    assert failing == {("fp4", "a100"), ("fp4", "h100")}
    reason = m.reasons[("fp4", "a100")]
    assert [(i.kind, i.name) for i in reason] == [("rule", "fp4-needs-b200"), ("pin", "gpu")]


def test_inputs_narrow_the_matrix(toy: Pack) -> None:
    pins = collect_pins(toy, {"quant": "none"})
    m = compatibility(toy, "kernel", "gpu", pins)
    assert not m.ok("trtllm", "b200")
    assert {i.name for i in m.reasons[("trtllm", "b200")]} == {"trtllm-needs-quant", "quant"}
    # An adjustment would replace cutlass on h100 + none: the cell shows it, with that rule.
    assert "h100-unquantized-triton" in {i.name for i in m.reasons[("cutlass", "h100")]}


def test_axis_pinned_same_field_unknown_field_are_input_errors(toy: Pack) -> None:
    with pytest.raises(InvalidInput, match="drop --set gpu=a100"):
        compatibility(toy, "quant", "gpu", collect_pins(toy, None, {"gpu": "a100"}))
    with pytest.raises(InvalidInput, match="must differ"):
        compatibility(toy, "quant", "quant")
    with pytest.raises(InvalidInput, match="gpux"):
        compatibility(toy, "quant", "gpux")


def test_conflicting_inputs_raise_the_full_explanation(toy: Pack) -> None:
    with pytest.raises(Unsatisfiable):
        compatibility(toy, "tp", "fusion", collect_pins(toy, {"kernel": "trtllm", "quant": "none"}))


def test_text_and_markdown_number_each_distinct_reason_once(toy: Pack) -> None:
    m = compatibility(toy, "kernel", "gpu", collect_pins(toy, {"quant": "none"}))
    text = render(m, "text")
    assert text.splitlines()[0].split() == ["kernel", "\\", "gpu", "a100", "h100", "b200"]
    assert "✗ [3]" in text and text.count("[3] trtllm-needs-quant") == 1
    md = render(m, "markdown")
    assert md.startswith("| kernel \\ gpu | a100 | h100 | b200 |\n|---|---|---|---|\n")
    assert "3. trtllm-needs-quant (trtllm kernels run quantized weights only" in md


def test_csv_is_one_row_per_pair_with_a_reason_column(toy: Pack) -> None:
    rows = list(csv.DictReader(io.StringIO(render(compatibility(toy, "quant", "gpu"), "csv"))))
    assert len(rows) == 9 and list(rows[0]) == ["quant", "gpu", "resolves", "reason"]
    bad = [r for r in rows if r["resolves"] == "no"]
    assert [(r["quant"], r["gpu"]) for r in bad] == [("fp4", "a100"), ("fp4", "h100")]
    assert all("fp4-needs-b200" in r["reason"] for r in bad)


def test_html_shows_the_reason_on_hover_escaped(toy: Pack) -> None:
    out = render(compatibility(toy, "quant", "gpu"), "html")
    assert out.startswith("<!doctype html>")
    why = "fp4-needs-b200 (fp4 needs a Blackwell GPU; use --quant fp8); gpu=a100"
    assert f'<td class="no" title="{why}">✗</td>' in out


def test_matrix_command_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "quant", "gpu", "--pack", TOY, "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("| quant \\ gpu |")
    assert main(["matrix", "kernel", "fusion", "--pack", TOY, "--set", "gpu=b200", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "matrix" and doc["row"]["field"] == "kernel"
    cell = next(c for c in doc["cells"] if c["row"] == "trtllm" and c["column"] is True)
    assert cell == {
        "row": "trtllm",
        "column": True,
        "ok": False,
        "reason": {
            "pins": [{"field": "fusion", "value": True, "source": "user"}],
            "rules": ["trtllm-no-fusion"],
        },
    }


def test_matrix_command_bad_input_exits_2_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "quant", "gpu", "--pack", TOY, "--set", "gpu=a100"]) == 2
    err = capsys.readouterr().err
    assert "gpu" in err and "Traceback" not in err


def test_svg_needs_dot_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph.shutil, "which", lambda name: None)
    with pytest.raises(InvalidInput, match="Graphviz") as exc:
        dot_to_svg("digraph {}")
    assert exc.value.exit_code == 2


def test_svg_is_what_dot_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "dot"
    fake.write_text(
        '#!/bin/sh\n[ "$1" = -Tsvg ] || exit 3\nread -r first\necho "<svg><!-- $first --></svg>"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert dot_to_svg('digraph "toy" {\n}\n') == '<svg><!-- digraph "toy" { --></svg>\n'
    fake.write_text("#!/bin/sh\necho 'syntax error' >&2\nexit 1\n")
    with pytest.raises(InvalidInput, match="syntax error"):
        dot_to_svg("digraph {")


def test_a_column_the_inputs_exclude_fails_whole_with_its_own_reason(toy: Pack) -> None:
    m = compatibility(toy, "quant", "gpu", collect_pins(toy, {"kernel": "cutlass"}))
    for row in m.rows:
        assert {i.name for i in m.reasons[(row, "a100")]} == {"cutlass-not-a100", "kernel"}
    assert render(m, "text").splitlines()[1].split() == ["none", "✗", "[1]", "✗", "[2]", "✓"]


def test_one_footnote_serves_cells_that_differ_only_in_their_own_values(toy: Pack) -> None:
    text = render(compatibility(toy, "quant", "gpu"), "text")
    assert "fp4          ✗ [1]  ✗ [1]  ✓" in text
    assert text.endswith("why not:\n  [1] fp4-needs-b200 (fp4 needs a Blackwell GPU; use --quant fp8)\n")
