"""The search budget of one piece of work, passed down as an argument (never a module global).

A `Budget` says how many search steps each solver call may take and, for a command, how many all
of its calls may take together: `confsolve matrix --budget N` fills hundreds of cells, `lint`
asks thousands of questions, and a bound on each search alone let such a command run for
minutes. The command line makes one `Budget` per command (`Budget.for_command`); the library's
entry points take one as `budget=` (default: `Budget()`, the per-search bound only) and hand it
to the compiled pack they query (`CompiledPack.within`), which charges every search to it.
Loading a pack is charged too (`load_pack(..., budget=)`: a step per LOAD_BYTES_PER_STEP bytes),
and a search step on a large problem costs a step per 64 fields still open, so that a number of
steps bounds a command's time on a pack of any size, not only on packs the size of the shipped ones.

Thread-safe: threads sharing one budget charge it under a lock. Standard library only.
"""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Callable
from typing import Literal, ParamSpec, TypeVar

from solver.errors import DeadlineExceeded, InputIssue, InvalidInput, SolverBudgetExceeded

__all__ = [
    "DEFAULT_STEPS",
    "LOAD_BYTES_PER_STEP",
    "RAN_OUT",
    "Budget",
    "CommandBudgetExceeded",
    "steps_from_env",
    "within_cap",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")

DEFAULT_STEPS = 2_000_000  # search steps per solver call, unless --budget or CONFSOLVE_BUDGET
# Loading a pack costs a step per this many bytes of its files, charged before anything is
# parsed and whether or not the pack is cached (so a budget's outcome does not depend on the
# cache). Parsing, checking and compiling grow with the text: measured on this machine, 64 bytes
# of a pack take about as long to load and compile as one search step on the SGLang pack
# (~3 ms per KB; ~0.15 ms a step), so a number of steps bounds a command's time whether it is
# spent loading a huge pack or searching a small one. The SGLang pack costs ~4,000 steps.
LOAD_BYTES_PER_STEP = 64


class CommandBudgetExceeded(SolverBudgetExceeded):
    """The steps of a whole command ran out (`--budget`): unlike one search's budget, which a
    command may survive (lint reports the question it could not decide), this ends the command."""

    def __init__(self, task: str, budget: int) -> None:
        self.task = task
        self.budget = budget
        Exception.__init__(
            self,
            f"the command's budget of {budget} steps ran out while {task}; "
            "raise it with --budget or CONFSOLVE_BUDGET, or narrow the request with --set",
        )


def steps_from_env() -> int:
    """CONFSOLVE_BUDGET, else DEFAULT_STEPS; a value that is not a positive whole number is
    `InvalidInput` (read when a budget is made, never at import)."""
    raw = os.environ.get("CONFSOLVE_BUDGET", "")
    if not raw.strip():
        return DEFAULT_STEPS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidInput(
            [
                InputIssue(
                    field="CONFSOLVE_BUDGET",
                    value=raw,
                    message=(
                        f"CONFSOLVE_BUDGET={raw!r} is not a positive whole number of search steps; "
                        f"unset it for the default ({DEFAULT_STEPS}) or give --budget N"
                    ),
                )
            ]
        )
    return value


class Budget:
    """`per_search` steps for each solver call and, when `total` is set, that many for all of
    them together (`spent` so far)."""

    def __init__(self, per_search: int | None = None, total: int | None = None) -> None:
        self.per_search = steps_from_env() if per_search is None else per_search
        self.total = total
        self.spent = 0
        self._lock = threading.Lock()

    @classmethod
    def for_command(cls, steps: int | None) -> Budget:
        """A command's budget: `--budget N` (else CONFSOLVE_BUDGET) bounds every search and all
        of them together; with neither, each search gets DEFAULT_STEPS and the command no total."""
        if steps is None and os.environ.get("CONFSOLVE_BUDGET", "").strip():
            steps = steps_from_env()
        if steps is None:
            return cls(DEFAULT_STEPS)
        return cls(steps, total=steps)

    def allowance(self, cap: int | None = None) -> int:
        """The steps the next search may take: its own bound (`cap`, else `per_search`), and no
        more than the command has left. At least 0."""
        steps = self.per_search if cap is None else min(cap, self.per_search)
        if self.total is not None:
            steps = min(steps, self.total - self.spent)
        return max(steps, 0)

    def spend(self, steps: int) -> None:
        with self._lock:
            self.spent += steps

    def charge_loading(self, size: int, pack: str) -> None:
        """Charge loading `size` bytes of pack `pack`; raise `CommandBudgetExceeded` when that
        is more than the command's total has left."""
        steps = size // LOAD_BYTES_PER_STEP
        with self._lock:
            self.spent += steps
            over = self.total is not None and self.spent > self.total
        if over:
            assert self.total is not None
            raise CommandBudgetExceeded(
                f"loading pack {pack} ({steps} steps: one per {LOAD_BYTES_PER_STEP} bytes of its files)",
                self.total,
            )

    def left(self) -> int | None:
        """Steps the command has left, or None when it has no total."""
        return None if self.total is None else max(self.total - self.spent, 0)

    def exhausted(self, task: str, allowed: int) -> SolverBudgetExceeded:
        """Charge a search that used all its `allowed` steps; the error to raise: the command's
        when its total is what ran out, else the search's own."""
        self.spend(allowed)
        if self.total is not None and self.spent >= self.total:
            return CommandBudgetExceeded(task, self.total)
        return SolverBudgetExceeded(task, allowed)


class _RanOut(enum.Enum):
    RAN_OUT = "ran out"


RAN_OUT = _RanOut.RAN_OUT  # a capped search that stopped at its cap: it showed nothing


def within_cap(
    search: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
) -> _T | Literal[_RanOut.RAN_OUT]:
    """`search(*args, **kwargs)` under its own step cap, or `RAN_OUT` when that cap ran out.

    A search stopped at its cap found no solution and refuted nothing: the caller must treat
    it as unknown (keep a loud answer, try another way), never as "none". The command's own
    budget (`CommandBudgetExceeded`) and deadline (`DeadlineExceeded`) are not the search's cap:
    they end the command, so they pass through. The one home of that distinction."""
    try:
        return search(*args, **kwargs)
    except (CommandBudgetExceeded, DeadlineExceeded):
        raise
    except SolverBudgetExceeded:  # (CountLimitReached is one: a count's own limit)
        return RAN_OUT
