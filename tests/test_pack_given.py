"""`--pack` that names no pack is bad input (exit 2) with what a pack is and a did-you-mean, not a
"broken pack" (exit 3) whose text repeated itself ("pack.toml: pack: no pack.toml in ...")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("SGLang", "no pack named 'SGLang'; did you mean 'sglang'? Shipped packs: sglang, vllm"),
        ("sglangg", "no pack named 'sglangg'; did you mean 'sglang'? Shipped packs: sglang, vllm"),
        ("./vllm", "no pack at './vllm': the path does not exist; did you mean the shipped pack 'vllm'?"),
    ],
)
def test_a_pack_name_near_a_shipped_one_is_suggested(
    capsys: pytest.CaptureFixture[str], given: str, says: str
) -> None:
    code, _, err = run(capsys, "show", "--pack", given)
    assert code == 2 and says in err, err


def test_a_directory_without_pack_toml_is_no_pack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", "--pack", str(tmp_path))
    assert code == 2, err
    assert f"no pack at '{tmp_path}': the directory has no pack.toml" in err and "sglang, vllm" in err
    config = tmp_path / "config.json"
    config.write_text("{}")
    code, out, _ = run(capsys, "check", "--json", "--pack", str(config))
    assert code == 2
    (issue,) = json.loads(out)["error"]["issues"]
    assert issue["field"] == "pack" and issue["value"] == str(config)
    assert "it is a file; a pack is a directory holding pack.toml" in issue["message"]


def test_a_pack_toml_without_its_table_says_what_the_table_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pack.toml").write_text('name = "t"\n')
    code, _, err = run(capsys, "show", "--pack", str(tmp_path))
    assert code == 3
    assert "pack.toml: pack: needs a [pack] table: name, version and files" in err, err
