"""Progress of long commands on a terminal, and the command's own time budget.

A command that may run for minutes (`count`, `lint`, `diff`, `matrix`) opens one `Progress` for
its duration; the work it calls reports through the module functions `phase(name, total)` and
`advance()`, which do nothing when no command has one open (a library caller, a test, the
`check` path). The reporter draws one line on stderr (phase, count done of total, elapsed) only
when stderr is a terminal and the output is not `--json`, at most ten times a second, and clears
it when the command ends, so piped output and JSON documents are never touched.

The same object carries the command's deadline (`--deadline SECONDS`, `$CONFSOLVE_DEADLINE`):
`advance()` checks it every few hundred calls and raises `SolverBudgetExceeded` (exit 4) naming the
phase, so a budget bounds the whole command, not each search. Standard library only; the observer
pattern of resolvelib's `BaseReporter`: the work never depends on it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TextIO

__all__ = [
    "Progress",
    "advance",
    "clear",
    "current_phase",
    "deadline_from_env",
    "parse_seconds",
    "phase",
    "reporting",
]

_REDRAW_SECONDS = 0.1
_CHECK_EVERY = 256  # advance() calls between two looks at the clock


class Progress:
    """One command's progress line and deadline (see the module docstring)."""

    def __init__(
        self,
        command: str,
        *,
        stream: TextIO | None = None,
        show: bool | None = None,
        deadline: float | None = None,
    ) -> None:
        self.command = command
        self.stream = sys.stderr if stream is None else stream
        self.show = _is_terminal(self.stream) if show is None else show
        self.deadline = deadline  # seconds for the whole command, or None
        self.started = time.monotonic()
        self.name = "loading the pack"
        self.total: int | None = None
        self.done = 0
        self.calls = 0
        self._drawn = 0.0
        self._width = 0

    def phase(self, name: str, total: int | None = None) -> None:
        self.name, self.total, self.done = name, total, 0
        self._look(force=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self.calls += 1
        if self.calls % _CHECK_EVERY == 0 or self.total is not None:
            self._look()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        """`confsolve lint: rules 12/245, 3.4 s`."""
        count = (
            f" {self.done}/{self.total}" if self.total is not None else f" {self.done}" if self.done else ""
        )
        return f"confsolve {self.command}: {self.name}{count}, {self.elapsed():.1f} s"

    def close(self) -> None:
        if self.show and self._width:
            with suppress(OSError, ValueError):
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
        self._width = 0

    def _look(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.deadline is not None and now - self.started > self.deadline:
            from solver.errors import DeadlineExceeded

            raise DeadlineExceeded(self.command, self.name, self.deadline)
        if self.show and (force or now - self._drawn >= _REDRAW_SECONDS):
            self._drawn = now
            text = self.line()
            pad = max(0, self._width - len(text))
            with suppress(OSError, ValueError):
                self.stream.write("\r" + text + " " * pad)
                self.stream.flush()
            self._width = len(text)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


# The Progress of the command running in this process, if any. Only the thread that opened it
# reports: a library used from other threads at the same time never draws or times out here.
_ACTIVE: Progress | None = None
_OWNER: int | None = None


@contextmanager
def reporting(
    command: str,
    *,
    quiet: bool = False,
    deadline: float | None = None,
    stream: TextIO | None = None,
    show: bool | None = None,
) -> Iterator[Progress]:
    """Open the progress of `command` for the duration of the block (`quiet`: never draw, as
    for --json); the line is cleared at the end, however the block ends."""
    global _ACTIVE, _OWNER
    progress = Progress(command, stream=stream, show=False if quiet else show, deadline=deadline)
    saved = _ACTIVE, _OWNER
    _ACTIVE, _OWNER = progress, threading.get_ident()
    try:
        yield progress
    finally:
        progress.close()
        _ACTIVE, _OWNER = saved


def clear() -> None:
    """Clear the running command's progress line now (before its answer is printed); the next
    report draws it again."""
    active = _ACTIVE
    if active is not None and threading.get_ident() == _OWNER:
        active.close()


def current_phase() -> str:
    """The phase of the command that reports, for a message ("loading the pack" before any)."""
    active = _ACTIVE
    return active.name if active is not None else "loading the pack"


def phase(name: str, total: int | None = None) -> None:
    """The running command entered a phase (`total`: the units of work in it, when known)."""
    active = _ACTIVE
    if active is not None and threading.get_ident() == _OWNER:
        active.phase(name, total)


def advance(n: int = 1) -> None:
    """`n` units of the current phase are done (cheap when no command reports)."""
    active = _ACTIVE
    if active is not None and threading.get_ident() == _OWNER:
        active.advance(n)


def deadline_from_env() -> float | None:
    """$CONFSOLVE_DEADLINE in seconds, or None; a malformed value is a usage error."""
    raw = os.environ.get("CONFSOLVE_DEADLINE", "").strip()
    if not raw:
        return None
    return parse_seconds(raw, "CONFSOLVE_DEADLINE")


def parse_seconds(text: str, what: str) -> float:
    """A positive number of seconds (`30`, `2.5`, `30s`), else `InvalidInput` naming `what`."""
    import math

    try:
        seconds = float(text.strip().lower().removesuffix("s"))
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        from solver.errors import InputIssue, InvalidInput

        raise InvalidInput(
            [
                InputIssue(
                    field=what,
                    value=text,
                    message=(f"{what}={text!r}: give a positive number of seconds, such as 30 or 2.5"),
                )
            ]
        )
    return seconds
