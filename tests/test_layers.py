"""The shape of solver/ (solver/README.md): launcher knowledge comes from the packs, not the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from solver import PackError, load_pack
from solver.cli.commands import main

SOLVER = Path(__file__).resolve().parent.parent / "solver"
TOY = Path(__file__).parent / "fixtures" / "packs" / "toy"
LAUNCHER = re.compile(r"sglang|vllm", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_no_string_in_solver_code_names_a_launcher() -> None:
    """Defaults, example requests and pack names come from the packs (pack.toml, constraints/):
    no string the code uses names SGLang or vLLM. Docstrings may, as examples."""
    named = []
    for path in sorted(SOLVER.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and id(node) not in docs else None
            if isinstance(text, str) and LAUNCHER.search(text):
                named.append(f"{path.relative_to(SOLVER)}:{node.lineno}: {text[:60]!r}")
    assert not named, "\n".join(named)


def _pack_with_example(tmp_path: Path, example: str) -> Path:
    root = tmp_path / "pack"
    root.mkdir()
    manifest = (TOY / "pack.toml").read_text().replace("[pack]\n", f"[pack]\nexample = {example}\n", 1)
    (root / "pack.toml").write_text(manifest)
    for name in ("fields.toml", "rules.toml"):
        (root / name).write_text((TOY / name).read_text())
    return root


@pytest.mark.parametrize(
    ("example", "words"),
    [('{ gpuu = "b200" }', "names no field: 'gpuu' (did you mean 'gpu'?)"), ('{ gpu = "z9" }', "gpu = 'z9'")],
)
def test_an_example_request_of_a_pack_is_checked_at_load(tmp_path: Path, example: str, words: str) -> None:
    with pytest.raises(PackError) as caught:
        load_pack(_pack_with_example(tmp_path, example))
    assert any(p.where == "pack.example" and words in p.message for p in caught.value.problems)


def test_an_empty_request_is_answered_with_the_packs_own_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resolve", "--pack", str(_pack_with_example(tmp_path, '{ gpu = "b200" }'))]) == 2
    assert "e.g. --set gpu=b200, or --model-config" in capsys.readouterr().err
    assert main(["resolve", "--pack", str(TOY)]) == 2  # no example: how to give one, no guess
    assert "with --set FIELD=VALUE, or --model-config" in capsys.readouterr().err
    for shipped in ("sglang", "vllm"):
        assert load_pack(shipped).example, f"the {shipped} pack suggests a request"
