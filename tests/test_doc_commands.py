"""Every `$ confsolve ...` (and `$ python examples/...`) example of README.md and docs/launchers.md
prints what the text under it says: each line a line the command prints, in order, `...` standing
for text left out. test_trust checks README's "Two questions, two commands" section the same way;
the other examples had drifted unseen (docs/launchers.md still showed pack 0.5.23+27 and an ASSUMED
list from before the model facts shared a line)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from clirun import run

ROOT = Path(__file__).parent.parent
DOCS = (ROOT / "README.md", ROOT / "docs" / "launchers.md")
CHECKED_ELSEWHERE = "## Two questions, two commands"  # README's section: test_trust's walk-through


def _examples(path: Path) -> list[tuple[str, str, list[str]]]:
    """(where, command, the lines shown under it) for each `$ ` line of a fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[tuple[str, str, list[str]]] = []
    fenced = skipped = False
    at = 0
    while at < len(lines):
        line = lines[at]
        if line.startswith("## "):
            skipped = path.name == "README.md" and line.startswith(CHECKED_ELSEWHERE)
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and line.startswith("$ ") and not skipped:
            where, command = f"{path.name}:{at + 1}", line[2:]
            while command.endswith("\\"):
                at += 1
                command = command[:-1] + " " + lines[at].strip()
            said = []
            while at + 1 < len(lines) and not lines[at + 1].startswith(("$ ", "```")):
                at += 1
                said.append(lines[at])
            found.append((where, command, said))
        at += 1
    return found


EXAMPLES = [example for path in DOCS for example in _examples(path)]


def test_the_docs_have_their_examples() -> None:
    assert len(EXAMPLES) >= 25 and any(where.startswith("launchers.md") for where, _, _ in EXAMPLES)


@pytest.mark.parametrize(("where", "command", "said"), EXAMPLES, ids=[where for where, _, _ in EXAMPLES])
def test_an_example_prints_what_the_docs_show(
    where: str,
    command: str,
    said: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    words = shlex.split(command, comments=True)  # (a `# ...` after a command is the shell's comment)
    monkeypatch.setenv("COLUMNS", "80")  # the docs show the text at 80 columns
    monkeypatch.chdir(ROOT)  # (paths in the examples are the repository's: tests/fixtures/models/...)
    if words[0] == "confsolve":
        _, out, err = run(capsys, *words[1:])
    else:
        from test_trust import _example_launcher

        assert words[:2] == ["python", "examples/launch.py"], command
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
        _example_launcher().main(words[2:])
        out, err = capsys.readouterr()
    printed = (out + err).splitlines()
    at = 0
    for line in (shown for shown in said if shown.strip()):
        pattern = re.compile(".*?".join(re.escape(part) for part in line.split("...")) + "$")
        while at < len(printed) and not pattern.match(printed[at]):
            at += 1
        assert at < len(printed), f"{where}: {line!r} is not printed (in order):\n{out + err}"
        at += 1
