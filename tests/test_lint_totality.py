"""Which CS121 groups (fact combinations with no configuration) lint shows, and acknowledgement.

Lint shows the `MAX_TOTALITY_GROUPS` largest groups, those nobody acknowledged first, and matches
the pack's acknowledgements against every group: an acknowledged refusal whose groups rank past
the cut is not stale (CS162), and a group nobody acknowledged is not hidden behind acknowledged
ones. The pack: facts `gpu` (a, b, c) and `model` (x, y); `gpu=a` fails whatever the model (a group
of two combinations), `gpu=b, model=y` fails (a group of one), the rest have a configuration.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_lint import write_pack

from solver import load_pack
from solver.lint import checks
from solver.lint.checks import lint

FIELDS = """
[field.gpu]
kind = "fact"
domain = ["a", "b", "c"]

[field.model]
kind = "fact"
domain = ["x", "y"]

[field.k]
kind = "option"
domain = [1, 2]
"""

RULES = [
    ("a-wants-1", "gpu == 'a'", "k == 1"),
    ("a-wants-2", "gpu == 'a'", "k == 2"),
    ("by-wants-1", "gpu == 'b' and model == 'y'", "k == 1"),
    ("by-wants-2", "gpu == 'b' and model == 'y'", "k == 2"),
]


def _pack(tmp_path: Path, acknowledged: str) -> Path:
    rules = "\n".join(
        f'[[rule]]\nid = "{rid}"\nwhen = "{when}"\nrequire = "{require}"\nbecause = "test"\n'
        'source = "tests/test_lint_totality.py"\n'
        for rid, when, require in RULES
    )
    return write_pack(
        tmp_path / "pack",
        {
            "pack.toml": '[pack]\nname = "groups"\nversion = "1"\ndescription = "two groups"\n'
            f'files = ["f.toml", "r.toml"]\n\n[lint.acknowledged]\n{acknowledged}\n',
            "f.toml": FIELDS,
            "r.toml": rules,
        },
    )


def _groups(path: Path) -> tuple[list[tuple[str, str | None]], list[str]]:
    findings = lint(load_pack(path)).findings
    shown = [(f.ids[0], f.acknowledged) for f in findings if f.code == "CS121"]
    return shown, [f.ids[0] for f in findings if f.code == "CS162"]


def test_an_acknowledged_group_past_the_cut_is_not_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pack(tmp_path, 'by-wants-1 = ["CS121: b cannot serve y"]')
    assert _groups(path) == ([("gpu=a", None), ("gpu=b, model=y", "b cannot serve y")], [])
    monkeypatch.setattr(checks, "MAX_TOTALITY_GROUPS", 1)
    shown, stale = _groups(path)
    assert shown == [("gpu=a", None)]
    assert stale == []


def test_a_group_nobody_acknowledged_is_shown_before_acknowledged_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checks, "MAX_TOTALITY_GROUPS", 1)
    shown, stale = _groups(_pack(tmp_path, 'a-wants-1 = ["CS121: a serves nothing"]'))
    assert shown == [("gpu=b, model=y", None)]
    assert stale == []
