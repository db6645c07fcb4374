"""`confsolve lint` finds, in a fixture pack made for the purpose, each kind of problem, and none
in a clean pack; acknowledgements, exit codes, JSON and `--explain` keep their contract."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.lint.checks import CODES, Finding, explain_code, lint

PACKS = Path(__file__).parent / "fixtures" / "packs"
PROBLEMS = str(PACKS / "lint-problems")
TOY = str(PACKS / "toy")
README = Path(__file__).parent.parent / "constraints" / "README.md"


@pytest.fixture(scope="module")
def findings() -> list[Finding]:
    return lint(load_pack(PROBLEMS)).findings


def find(findings: list[Finding], code: str, subject: str) -> Finding:
    found = [f for f in findings if f.code == code and f.ids[0] == subject]
    assert found, f"no {code} about {subject}: " + "; ".join(f"{f.code} {f.ids[0]}" for f in findings)
    return found[0]


# Each row: the code, its subject, and ids the minimal reason must name (exactly, where given).
EXPECTED = [
    ("CS101", "quant=int2", ["no-int2"]),
    ("CS102", "int2-needs-trtllm", ["no-int2"]),
    ("CS102", "cutlass-not-a100-again", ["cutlass-not-a100"]),
    ("CS103", "tp-any", None),
    ("CS104", "ep4-needs-tp4", ["ep-le-tp"]),
    ("CS104", "a100-moe-kernel", ["trtllm-not-a100", "cutlass-not-a100"]),
    ("CS105", "trtllm-moe-no-fusion", None),
    ("CS111", "kernel-int2", ["no-int2"]),
    ("CS112", "quant-h100:fp4", ["fp4-needs-b200"]),
    ("CS113", "kernel-big:cutlass", None),
    ("CS114", "a100-moe-kernel", ["trtllm-not-a100"]),
    ("CS121", "gpu=a100, model=dense", ["a100-dense-trtllm", "trtllm-not-a100"]),
    ("CS131", "a", None),
    ("CS141", "cutlass-not-a100", None),
    ("CS142", "fp8-no-a100", None),
    ("CS151", "UNUSED_SET", None),
    ("CS152", "orphan", None),
    ("CS161", "cutlass-not-a100", None),
    ("CS162", "cutlass-not-a100", None),
]


@pytest.mark.parametrize("code, subject, reason", EXPECTED)
def test_each_kind_of_problem_is_found(
    findings: list[Finding], code: str, subject: str, reason: list[str] | None
) -> None:
    finding = find(findings, code, subject)
    assert finding.severity == CODES[code].severity
    assert finding.message and "\n" not in finding.message
    if reason is not None:
        assert sorted(finding.reason or []) == sorted(reason)


def test_nothing_else_is_reported(findings: list[Finding]) -> None:
    expected = {(code, subject) for code, subject, _ in EXPECTED}
    expected.add(("CS104", "cutlass-not-a100"))  # implied by the two a100 kernel rules
    assert {(f.code, f.ids[0]) for f in findings} == expected


def test_the_totality_witness_is_a_fact_combination(findings: list[Finding]) -> None:
    finding = find(findings, "CS121", "gpu=a100, model=dense")
    assert finding.witness == {"gpu": "a100", "model": "dense"}


def test_an_acknowledged_finding_is_reported_but_does_not_fail(findings: list[Finding]) -> None:
    finding = find(findings, "CS104", "ep4-needs-tp4")
    assert finding.acknowledged == "kept for its clearer message"
    assert all(f.acknowledged is None for f in findings if f is not finding)


def test_a_clean_pack_has_no_findings() -> None:
    report = lint(load_pack(TOY))
    assert report.findings == [] and report.errors == []


def test_error_findings_fail_and_acknowledging_them_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", "--pack", PROBLEMS]) == 1
    capsys.readouterr()
    pack = tmp_path / "pack"
    shutil.copytree(PROBLEMS, pack)
    rules = (pack / "rules.toml").read_text()
    rules = rules.replace('acknowledged = ["not a code", ', "acknowledged = [")
    rules = rules.replace(
        'source = "docs/quant.md"\n',
        'source = "docs/quant.md"\nacknowledged = ["CS101: kept on purpose"]\n',
        1,
    )
    (pack / "rules.toml").write_text(rules)
    # The acknowledgement sits on the rule that kills the value, not on the value: it is stale.
    report = lint(load_pack(pack))
    assert [f.code for f in report.errors] == ["CS101"]
    assert any(f.code == "CS162" and f.ids[0] == "no-int2" for f in report.findings)


def test_dead_values_can_be_acknowledged_on_their_field_in_a_lint_table(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(PROBLEMS, pack)
    rules = (pack / "rules.toml").read_text().replace('acknowledged = ["not a code", ', "acknowledged = [")
    (pack / "rules.toml").write_text(rules)
    with (pack / "pack.toml").open("a") as out:
        out.write(
            '\n[lint.acknowledged]\nquant = ["CS101: int2 is listed for old configs"]\n'
            'nowhere = ["CS152: no such id"]\n'
        )
    report = lint(load_pack(pack))
    assert report.errors == []
    assert find(report.findings, "CS101", "quant=int2").acknowledged == "int2 is listed for old configs"
    assert find(report.findings, "CS163", "nowhere")


def test_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["lint", "--pack", PROBLEMS, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["schema"] == 1 and doc["status"] == "linted"
    for finding in doc["findings"]:
        assert {"code", "severity", "ids", "message"} <= set(finding)
        assert finding["severity"] in ("error", "warning", "info")
    dead = next(f for f in doc["findings"] if f["code"] == "CS101")
    assert dead["ids"][:2] == ["quant=int2", "quant"] and dead["reason"] == ["no-int2"]


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--explain", "cs101"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("CS101 (error): dead value")
    assert main(["lint", "--explain", "CS999"]) == 2
    err = capsys.readouterr().err
    assert "unknown finding code" in err and "Traceback" not in err


def test_readme_documents_every_code() -> None:
    text = README.read_text()
    section = text[text.index("## Lint") :]
    for code, entry in CODES.items():
        row = f"| {code} | {entry.severity} | {entry.title} | {entry.explain} |"
        assert row in section, f"constraints/README.md lacks the row of {code}"
        assert explain_code(code).endswith(entry.explain)
    assert set(re.findall(r"\| (CS\d{3}) \|", section)) == set(CODES)


def test_a_tiny_budget_reports_incomplete_checks_instead_of_failing() -> None:
    report = lint(load_pack(PROBLEMS), budget=1)
    assert any(f.code == "CS190" for f in report.findings)


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--pack", PROBLEMS, "--samples", "0"]) == 2
    assert "Traceback" not in capsys.readouterr().err


FACTS_ONLY_PACK = {
    "pack.toml": '[pack]\nname = "facts-only"\nversion = "1"\n'
    'description = "fact-only rules beside rules about options"\n'
    'files = ["rules.toml"]\n',
    "rules.toml": """
[field.gpu]
kind = "fact"
domain = ["a100", "h100"]

[field.ckpt]
kind = "fact"
domain = ["none", "fp8"]

[field.fmt]
kind = "fact"
domain = ["st", "gguf"]

[field.quant]
kind = "option"
domain = ["none", "fp8"]

[[rule]]
id = "quant-follows-ckpt"
when = "ckpt == 'fp8'"
require = "quant == 'fp8'"
because = "an fp8 checkpoint runs with --quant fp8"
source = "docs/quant.md"

[[rule]]
id = "fp8-quant-needs-h100"
when = "quant == 'fp8'"
require = "gpu == 'h100'"
because = "--quant fp8 needs an h100"
source = "docs/quant.md"

# Implied by the two rules above, through the option quant: stated over the facts on purpose.
[[rule]]
id = "fp8-ckpt-needs-h100"
when = "ckpt == 'fp8'"
require = "gpu == 'h100'"
because = "an fp8 checkpoint needs an h100 gpu"
source = "docs/quant.md"

# Implied by fp8-ckpt-needs-h100 alone: redundant among the fact-only rules.
[[rule]]
id = "fp8-gguf-needs-h100"
when = "ckpt == 'fp8' and fmt == 'gguf'"
require = "gpu == 'h100'"
because = "an fp8 gguf checkpoint needs an h100 gpu"
source = "docs/quant.md"
""",
}


def write_pack(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_a_fact_only_rule_is_redundant_only_among_fact_only_rules(tmp_path: Path) -> None:
    # CS121 asks for rules over the facts alone that say what the option rules imply: such a rule
    # is not reported as redundant, while one the other fact-only rules imply still is.
    findings = lint(load_pack(write_pack(tmp_path / "pack", FACTS_ONLY_PACK))).findings
    redundant = {f.ids[0]: f.reason for f in findings if f.code == "CS104"}
    assert redundant == {"fp8-gguf-needs-h100": ["fp8-ckpt-needs-h100"]}


def test_a_conflict_of_facts_is_acknowledged_on_one_of_its_rules(tmp_path: Path) -> None:
    pack = shutil.copytree(PROBLEMS, tmp_path / "pack")
    with (pack / "pack.toml").open("a") as out:
        out.write(
            '\n[lint.acknowledged]\n"quant=int2" = ["CS101: listed for old configs"]\n'
            'trtllm-not-a100 = ["CS121: an a100 cannot run dense models here"]\n'
        )
    report = lint(load_pack(pack))
    assert find(report.findings, "CS101", "quant=int2").acknowledged == "listed for old configs"
    assert find(report.findings, "CS121", "gpu=a100, model=dense").acknowledged == (
        "an a100 cannot run dense models here"
    )
    assert not any(
        f.code == "CS162" and f.ids[0] in ("quant=int2", "trtllm-not-a100") for f in report.findings
    )


CI_LINT = Path(__file__).parent.parent / ".ci" / "lint-packs"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_ci_lint_packs_fails_on_unacknowledged_errors_only() -> None:
    import subprocess
    import sys

    confsolve = Path(sys.executable).parent / "confsolve"
    if not confsolve.exists():
        pytest.skip("the confsolve script is not installed beside this Python")
    env = {**os.environ, "CONFSOLVE": str(confsolve)}

    def run(*packs: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(CI_LINT), *packs], env=env, capture_output=True, text=True, timeout=300, check=False
        )

    clean = run(TOY)
    assert clean.returncode == 0, clean.stderr
    assert "toy 1: 0 error(s)" in clean.stdout
    failing = run(TOY, PROBLEMS)
    assert failing.returncode == 1
    assert "lint-problems has error findings" in failing.stderr
    broken = run(str(PACKS / "no-such-pack"))
    assert broken.returncode == 1 and "failed with exit code" in broken.stderr
