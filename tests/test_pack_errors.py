"""Pack errors a maintainer can act on: each problem at its file and line, no cascade after a
failed declaration, a did-you-mean for keys, tables and names; the pack files' JSON Schema
(`confsolve schema --pack-files`) accepts every shipped pack and refuses a misspelled key."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import jsonschema
import pytest
from hostile import sglang_pack

import constraints
from solver import PackError, load_pack
from solver.cli.commands import main
from solver.pack.schema import pack_file_schema


def _copy_sglang(tmp_path: Path) -> Path:
    sglang_pack()
    root = tmp_path / "pack"
    shutil.copytree(constraints.pack_directory("sglang"), root)  # type: ignore[arg-type]
    return root


def _problems(root: Path) -> list:  # type: ignore[type-arg]
    with pytest.raises(PackError) as caught:
        load_pack(root)
    return caught.value.problems


def _line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def test_a_toml_syntax_error_is_one_problem_at_its_line(tmp_path: Path) -> None:
    """One broken header in attention.toml used to give 24 problems: the real one and 23 uses of
    the attention fields elsewhere, reported as unknown names."""
    root = _copy_sglang(tmp_path)
    path = root / "attention.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("[[rule]]\n", "[[rule]\n", 1), encoding="utf-8")
    problems = _problems(root)
    assert len(problems) == 1, [p.render() for p in problems]
    assert problems[0].file == "attention.toml"
    assert problems[0].line == _line_of(path, "[[rule]") and "not valid TOML" in problems[0].message


def test_a_misspelled_key_is_one_problem_with_did_you_mean_and_line(tmp_path: Path) -> None:
    root = _copy_sglang(tmp_path)
    path = root / "attention.toml"
    text = path.read_text(encoding="utf-8")
    at = text.index("because =", len(text) // 2)
    path.write_text(text[:at] + "becuase =" + text[at + len("because =") :], encoding="utf-8")
    problems = _problems(root)
    assert len(problems) == 1, [p.render() for p in problems]
    problem = problems[0]
    assert "unknown key 'becuase' (did you mean 'because'?)" in problem.message
    assert "Field required" not in problem.message and "Extra inputs" not in problem.message
    assert (problem.file, problem.line) == ("attention.toml", _line_of(path, "becuase ="))
    assert problem.render().startswith(f"attention.toml:{problem.line}: ")


def test_a_failed_field_declaration_does_not_cascade(tmp_path: Path) -> None:
    root = _copy_sglang(tmp_path)
    path = root / "attention.toml"
    text = path.read_text(encoding="utf-8")
    start = text.index("[field.attention_backend]")
    at = text.index("domain", start)
    path.write_text(text[:at] + "domian" + text[at + len("domain") :], encoding="utf-8")
    problems = _problems(root)
    assert len(problems) == 1, [p.render() for p in problems]
    assert problems[0].where == "field attention_backend"
    assert "did you mean 'domain'" in problems[0].message
    assert problems[0].line == _line_of(path, "domian")


def test_an_unknown_name_in_a_condition_gets_a_did_you_mean(tmp_path: Path) -> None:
    root = _copy_sglang(tmp_path)
    path = root / "kv_cache.toml"
    text = path.read_text(encoding="utf-8")
    at = text.index("attention_backend ==")
    path.write_text(
        text[:at] + "attention_backnd ==" + text[at + len("attention_backend ==") :], encoding="utf-8"
    )
    problems = _problems(root)
    assert len(problems) == 1, [p.render() for p in problems]
    assert "unknown name 'attention_backnd' (did you mean 'attention_backend'?)" in problems[0].message
    assert problems[0].file == "kv_cache.toml" and problems[0].line is not None
    assert problems[0].line <= _line_of(path, "attention_backnd")


def test_an_unknown_table_gets_a_did_you_mean_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy_sglang(tmp_path)
    path = root / "moe.toml"
    path.write_text(path.read_text(encoding="utf-8") + "\n[rules]\nx = 1\n", encoding="utf-8")
    assert main(["show", "--pack", str(root), "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    (problem,) = doc["error"]["problems"]
    assert "did you mean 'rule'" in problem["message"]
    assert (problem["file"], problem["line"]) == ("moe.toml", _line_of(path, "[rules]"))


def test_a_broken_model_config_table_fails_at_load_and_in_lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy_sglang(tmp_path)
    path = root / "model_config.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("nested =", "nestd =", 1), encoding="utf-8")
    problems = _problems(root)
    assert any("unknown key 'nestd'" in p.message and p.file == "model_config.toml" for p in problems)
    assert main(["lint", "--pack", str(root)]) == 3
    assert "nestd" in capsys.readouterr().err


def test_problems_from_every_kind_of_check_come_back_in_one_error(tmp_path: Path) -> None:
    """The file checks (`pack/files.py`), the checks across tables (`pack/crosscheck.py`), the
    conditions and the `[model_config]` table (`pack/modelconfig.py`) all add to the one
    collector: a pack broken in four ways is one `PackError` naming all four."""
    root = _copy_sglang(tmp_path)
    moe = root / "moe.toml"
    text = moe.read_text(encoding="utf-8")
    at = text.index('because = "') + len('because = "')
    first_rule = text[text.index("[[rule]]") :]
    first_rule = first_rule[: first_rule.index("[[", 2)]
    moe.write_text(text[:at] + "\\u001b[31m" + text[at:] + "\n" + first_rule, encoding="utf-8")
    kv = root / "kv_cache.toml"
    text = kv.read_text(encoding="utf-8")
    kv.write_text(text.replace("attention_backend ==", "attention_backnd ==", 1), encoding="utf-8")
    config = root / "model_config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("nested =", "nestd =", 1), encoding="utf-8")
    messages = [p.render() for p in _problems(root)]
    assert any("control character" in m and m.startswith("moe.toml") for m in messages), messages
    assert any("duplicate id" in m for m in messages), messages
    assert any("unknown name 'attention_backnd'" in m for m in messages), messages
    assert any("unknown key 'nestd'" in m for m in messages), messages


# --- the pack files' JSON Schema ---------------------------------------------------------------


def _pack_files(name: str) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    root = constraints.pack_directory(name)
    assert root is not None
    manifest = tomllib.loads((root / "pack.toml").read_text(encoding="utf-8"))
    names = ["pack.toml", *manifest["pack"].get("files", [])]
    return [(n, tomllib.loads((root / n).read_text(encoding="utf-8"))) for n in names]


@pytest.mark.parametrize("name", constraints.shipped_packs())
def test_every_file_of_every_shipped_pack_validates_against_the_pack_file_schema(name: str) -> None:
    validator = jsonschema.Draft202012Validator(pack_file_schema())
    for file, doc in _pack_files(name):
        errors = [f"{file}: {'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, errors[:10]


def test_the_pack_file_schema_refuses_what_the_loader_refuses() -> None:
    validator = jsonschema.Draft202012Validator(pack_file_schema())
    bad = [
        {"rule": [{"id": "x", "require": "a", "becuase": "typo", "source": "s"}]},
        {"field": {"a": {"kind": "option"}}},  # no domain
        {"field": {"a": {"kind": "knob", "domain": [1]}}},
        {"sets": {"lower": [1]}},
        {"rules": []},
        {"pack": {"name": "x"}},  # no version
    ]
    for doc in bad:
        assert list(validator.iter_errors(doc)), doc
    jsonschema.Draft202012Validator.check_schema(pack_file_schema())


def test_schema_pack_files_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--pack-files"]) == 0
    assert json.loads(capsys.readouterr().out) == pack_file_schema()
