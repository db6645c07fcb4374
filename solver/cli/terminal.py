"""Text answers folded to the terminal they are printed on.

An answer's text keeps one item per line (a value's reasons, a depends-on list, a warning), which
`grep` reads well but runs past an 80-column terminal. On a terminal only, each line wider than
the terminal is folded at its spaces, its continuation indented under the text after the line's
first `name: ` (else four columns in); piped output, a file and `--json` are never touched. A
table fits by itself (`matrix` comes in blocks of columns on a terminal). Standard library only.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

__all__ = ["fold", "fold_for", "unknown_command", "write_answer"]

_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # a colour (--color), no column of its own
_WORDS = re.compile(r" +|[^ ]+")  # prose: words and runs of spaces (`vLLM's` is one word)
# A command: a quoted part with its spaces belongs to its word (`'{"a": 1}'`).
_SHELL_WORDS = re.compile(r""" +|(?:[^ '"]+|'[^']*'|"(?:[^"\\]|\\.)*"|['"])+""")


def _columns(text: str) -> int:
    return len(_ESCAPE.sub("", text))


def fold(text: str, width: int) -> str:
    """`text` with each line wider than `width` columns folded at its spaces (a word wider than
    the line stays whole); lines that fit, and the spaces that align them, are kept as they are."""
    out: list[str] = []
    for line in text.split("\n"):
        out.extend([line] if _columns(line) <= width else _fold_line(line, width))
    return "\n".join(out)


def _command(text: str) -> bool:
    """Whether a line is a command to copy (a repair's `confsolve ...` or launch command): flags,
    and no `name: ` before the first of them (prose names what it says first)."""
    first = text.find(" -")
    return first > 0 and ": " not in text[:first] and not text.startswith(("- ", "* "))


def _fold_line(line: str, width: int) -> list[str]:
    """One line folded; a command's lines end with ` \\`, so that it still pastes as one command."""
    lead = len(line) - len(line.lstrip(" "))
    colon = _ESCAPE.sub("", line).find(": ", lead)
    hang = colon + 2 if colon > 0 and colon + 2 <= width // 2 else min(lead + 4, width // 2)
    if line[lead:].startswith(("- ", "* ")):  # a list item: under its text
        hang = lead + 2
    if _command(_ESCAPE.sub("", line)[lead:]):
        folded = _fold_words(line, width - 2, lead, min(lead + 4, width // 2), _SHELL_WORDS)
        return [part + " \\" for part in folded[:-1]] + folded[-1:]
    return _fold_words(line, width, lead, hang, _WORDS)


def _fold_words(line: str, width: int, lead: int, hang: int, words: re.Pattern[str]) -> list[str]:
    lines: list[str] = []
    current, size, start, space = line[:lead], lead, lead, ""
    for token in words.findall(line[lead:]):
        if token.startswith(" "):
            space = token
            continue
        columns = _columns(token)
        sep = space if size > start else ""
        if sep and size + len(sep) + columns > width:
            lines.append(current)
            current, size, start = " " * hang + token, hang + columns, hang
        else:
            current, size = current + sep + token, size + len(sep) + columns
        space = ""
    lines.append(current)
    return lines


def fold_for(stream: TextIO, text: str) -> str:
    """`text` folded to the width of `stream` when it is a terminal (`$COLUMNS` first, as
    `solver.render.text.terminal_width` reads it); as it is when `stream` is not a terminal."""
    try:
        if not stream.isatty():
            return text
    except (AttributeError, ValueError, OSError):
        return text
    from solver.render.text import terminal_width

    return fold(text, terminal_width(stream))


def write_answer(out: str, notes: str, *, prose: bool) -> None:
    """Write an answer's text on stdout and its notes on stderr, after clearing a progress line
    (the answer starts on a line of its own); `prose`: folded to a terminal's width."""
    from solver import progress

    progress.clear()
    if out:
        sys.stdout.write(fold_for(sys.stdout, out) if prose else out)
    if notes:  # (print: with stderr closed, `2>&-`, they go to stdout as an error always did)
        print(fold_for(sys.stderr, notes) if prose else notes, file=sys.stderr, end="")


_INVALID_COMMAND = (
    r"argument COMMAND: invalid choice: '(.*)' \(choose from (.*)\)"  # (an error: compiled then)
)


def unknown_command(message: str) -> str:
    """argparse's error for a command it lacks, said with a did-you-mean and without the hidden
    commands (`__complete`); for an option the command does not take that another does
    (`solver.cli.MODES`), which take it; any other message as it is."""
    found = re.fullmatch(_INVALID_COMMAND, message)
    if found is None:
        if not message.startswith("unrecognized arguments:"):
            return message
        from solver.cli import MODES

        words = message.split(":", 1)[1].split()
        said = [f"{flag} is for {', '.join(by)} only" for flag, by in MODES.items() if flag in words]
        return f"{message} ({'; '.join(said)})" if said else message
    import difflib

    typed = found.group(1)
    commands = [c.strip("'") for c in found.group(2).split(", ") if not c.strip("'").startswith("_")]
    close = difflib.get_close_matches(typed, commands, n=2, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"no command {typed!r}{hint} (commands: {', '.join(commands)})"
