"""Every `$ confsolve ...` command in README.md's examples prints what the README shows under it
(a newcomer runs them as written; "Two questions, two commands" is pinned by test_trust.py, this
pins the rest: the start-here excerpt, the DeepSeek walk-through, the operators' and the vLLM
examples). Each README line is a line printed, in order; `...` stands for text left out."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from clirun import run

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START_HERE = (
    "confsolve resolve --set platform=cuda --set gpu_arch=sm90 --set architecture=DeepseekV3ForCausalLM "
    "--set checkpoint_quant=fp8 --set tp_size=8"
)


def _examples() -> list[tuple[str, list[str]]]:
    """(command, lines shown) for each `$ confsolve` line in a fenced block outside "Two
    questions, two commands", continuation lines joined and a trailing `# comment` dropped; and
    the start-here excerpt, which shows the output of the first command of "Start here"."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Two questions, two commands")
    text = text[:start] + text[text.index("\n## ", start + 1) :]
    pairs: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    fenced = False
    lines = text.splitlines()
    while lines:
        line = lines.pop(0)
        if line.startswith("```"):
            fenced, current = not fenced, None
            if fenced and lines and lines[0].startswith("sglang 0.5.23") and not pairs:
                current = []
                pairs.append((START_HERE, current))
            continue
        if not fenced:
            continue
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                command = command[:-1] + " " + lines.pop(0).strip()
            current = []
            pairs.append((command.split("  #")[0].strip(), current))
        elif current is not None and line.strip():
            current.append(line)
    return [(c, said) for c, said in pairs if c.startswith("confsolve ")]


def test_the_readme_has_its_examples() -> None:
    commands = [c for c, _ in _examples()]
    assert commands[0] == START_HERE
    assert len(commands) >= 12 and any("--pack vllm" in c for c in commands)


@pytest.mark.parametrize(("command", "said"), _examples(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_readme_example_prints_what_the_readme_shows(
    command: str, said: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(ROOT)  # the examples name files of the repository by relative paths
    _, out, err = run(capsys, *shlex.split(command)[1:])
    printed = (out + err).splitlines()
    at = 0
    for line in said:
        pattern = re.compile(".*?".join(re.escape(part) for part in line.split("...")) + "$")
        while at < len(printed) and not pattern.match(printed[at].rstrip()):
            at += 1
        assert at < len(printed), (line, out + err)
        at += 1
