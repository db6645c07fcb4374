"""What bounds an exact count, and what a count cut short says: `Limit` (steps and seconds),
`CountLimitReached` (with exact lower and upper bounds), the step meter a count ticks, `metered`
(a count charged to a command's budget). A rule reaches the counter as the one predicate type,
`solver.pack.expr.Condition`.

Split from `solver.engine.count` (which re-exports every public name) so that the counter's
search (`solver.engine.modelcounter`) and the pack-level `count` stay under a few hundred lines.
Imports the standard library and solver's errors, values and progress only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from solver import progress as _progress
from solver.errors import SolverBudgetExceeded
from solver.values import count_text

if TYPE_CHECKING:
    from solver.budget import Budget
    from solver.engine.modelcounter import ModelCounter

T = TypeVar("T")

__all__ = [
    "COUNT_LIMIT",
    "DEFAULT_LIMIT",
    "FIELDS_PER_STEP",
    "CountLimitReached",
    "Limit",
    "Progress",
    "StepMeter",
    "metered",
]

# The steps of a search-like count (lint's and diff's questions, a `Limit()`).
DEFAULT_LIMIT = 2_000_000
# `confsolve count`'s default `--limit`: the whole SGLang pack takes 1.95 million steps (13.7 s CPU
# quiet, 15 s at load 7), which sat just under 2 million: a pack change adding a few rules would
# have made a plain `count` stop with bounds. 5 million leaves it 2.5x room, and a count that
# cannot finish still answers with its bounds within ~35 s CPU (7 us a step).
COUNT_LIMIT = 5_000_000


class CountLimitReached(SolverBudgetExceeded):
    """The space is too large to count exactly within the step or time limit."""

    def __init__(self, limit: Limit, steps: int) -> None:
        self.limit = limit
        self.steps = steps
        self.task = "counting"
        self.budget = limit.steps or steps
        # Exact bounds on the count, filled in as the search unwinds: what the branches already
        # counted (lower) and that plus the size of every branch not counted yet (upper).
        self.lower = 0
        self.upper: int | None = None
        self.parts: dict[Any, int] = {}  # with `count(by=...)`: the values counted exactly
        # Name what ran out, and the option that raises it: the command's --budget when that was
        # the tighter bound, else --limit (steps or seconds); a deadline set by a caller (a
        # command's time budget) is raised with --deadline.
        raise_limit = "raise --limit (a number of steps, or seconds such as 60s)"
        if limit.steps is not None and steps > limit.steps:
            bound = f"{limit.option} {limit.steps} steps"
            if "--budget" in limit.option:
                raise_limit = "raise --budget (or CONFSOLVE_BUDGET)"
        elif limit.seconds is not None:
            bound = f"--limit {limit.seconds:g}s"
        else:
            bound = "its deadline"
            raise_limit = "raise --deadline (or CONFSOLVE_DEADLINE)"
        Exception.__init__(
            self,
            f"too many configurations to count exactly within {bound} "
            f"({steps} branching steps done): narrow the request with --set FIELD=VALUE or {raise_limit}",
        )

    def __str__(self) -> str:
        said = super().__str__()
        if self.upper is None:
            return said
        lower, upper = count_text(self.lower), count_text(self.upper)
        return f"{said}; what was counted bounds it: at least {lower}, at most {upper}"

    def bounded(self, lower: int, upper: int) -> CountLimitReached:
        """This exception with the bounds of a larger count (for re-raising as it unwinds)."""
        self.lower, self.upper = lower, upper
        return self


@dataclass(frozen=True)
class Limit:
    """A budget for one count: branching steps and/or wall-clock seconds (None = unbounded)."""

    steps: int | None = DEFAULT_LIMIT
    seconds: float | None = None
    deadline: float | None = None
    """An absolute `time.monotonic()` by which to stop (a command's whole budget), or None."""
    option: str = "--limit"
    """The option that set `steps`, for the message (`--budget` when the command's is tighter)."""

    @classmethod
    def parse(cls, text: str) -> Limit:
        """`"500000"` (steps) or `"30s"` (seconds)."""
        raw = text.strip().lower()
        try:
            if raw.endswith("s"):
                seconds = float(raw[:-1])
                if seconds > 0:
                    return cls(steps=None, seconds=seconds)
            else:
                steps = int(raw.replace("_", ""))
                if steps > 0:
                    return cls(steps=steps)
        except ValueError:
            pass
        raise ValueError(f"--limit {text!r}: give a positive number of steps or seconds like 30s")


def metered(budget: Budget, counter: ModelCounter, ask: Callable[[Limit], T], limit: Limit, task: str) -> T:
    """`ask(limit)` of `counter` within `limit` and what `budget` (a command's) has left, its
    steps charged to `budget`. When the command's total is what ran out the error is the
    command's `CommandBudgetExceeded` (it ends the command), not `CountLimitReached` (which a
    caller may report as "not counted" and go on)."""
    from solver.budget import CommandBudgetExceeded

    left, total = budget.left(), budget.total
    if left is None or total is None:
        return ask(limit)
    if left < 1:
        raise CommandBudgetExceeded(task, total)
    steps = left if limit.steps is None else min(limit.steps, left)
    before = counter.steps
    try:
        return ask(Limit(steps=steps, seconds=limit.seconds, deadline=limit.deadline))
    except CountLimitReached:
        if steps == left and counter.steps - before >= left:  # the command's steps, not the limit's
            raise CommandBudgetExceeded(task, total) from None
        raise
    finally:
        budget.spend(counter.steps - before)


Progress = Callable[[int, float], None]
"""Called now and then during a count with the branching steps and seconds so far."""

_CLOCK_EVERY = 255  # branches between looks at the clock (a branch is tens of microseconds)
FIELDS_PER_STEP = 64  # a branch of a component costs one step per this many of its fields


@dataclass
class StepMeter:
    """The steps and clock of one count against its `Limit` (`tick` raises `CountLimitReached`)."""

    limit: Limit
    progress: Progress | None = None
    steps: int = 0
    started: float = field(default_factory=time.monotonic)

    ticks: int = 0

    def tick(self, steps: int = 1) -> None:
        self.steps += steps
        self.ticks += 1
        _progress.advance()  # the command's progress line and deadline (nothing in a library call)
        limit = self.limit
        if limit.steps is not None and self.steps > limit.steps:
            raise CountLimitReached(limit, self.steps)
        if self.ticks & _CLOCK_EVERY:
            return
        now = time.monotonic()
        if (limit.seconds is not None and now - self.started > limit.seconds) or (
            limit.deadline is not None and now > limit.deadline
        ):
            raise CountLimitReached(limit, self.steps)
        if self.progress is not None and not self.ticks & 4095:
            self.progress(self.steps, now - self.started)
