"""The exceptions of confsolve: data first, text rendered from the data.

Each exception subclasses the builtin it means, so a caller that only knows `ValueError` still
catches bad input. Every one renders the contract's JSON error document with `to_json()`.
Must not import the solver: front ends depend on this module and `model` alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from solver.frozen import Frozen, frozen_type

if TYPE_CHECKING:
    from solver.model import ConflictReport, Repair

__all__ = [
    "Collector",
    "DeadlineExceeded",
    "DependencyCycle",
    "InputIssue",
    "InvalidInput",
    "PackError",
    "PackProblem",
    "RecordInvalid",
    "SolverBudgetExceeded",
    "SolverError",
    "Unsatisfiable",
    "input_issues",
    "pack_problems",
]


class SolverError(Exception):
    """Base of every error confsolve raises on purpose."""

    exit_code = 2

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "status": "error",
            "error": {"type": type(self).__name__, "message": str(self)},
        }


@frozen_type
class InputIssue(Frozen):
    """One bad input: the field and value as the user wrote them, and what would be accepted."""

    field: str
    value: Any
    message: str
    did_you_mean: tuple[str, ...] = ()
    allowed: tuple[Any, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.field, "value": _jsonable(self.value)}
        out["message"] = self.message
        out["did_you_mean"] = list(self.did_you_mean)
        if self.allowed:
            out["allowed"] = [_jsonable(v) for v in self.allowed]
        return out


class InvalidInput(SolverError, ValueError):
    """The request names unknown fields or values outside a field's domain (all issues at once)."""

    exit_code = 2

    def __init__(self, issues: list[InputIssue]) -> None:
        self.issues = list(issues)
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [f"invalid input ({len(self.issues)} problem{'s' * (len(self.issues) != 1)}):"]
        lines += [f"  - {issue.message}" for issue in self.issues[:50]]
        more = len(self.issues) - 50  # (100,000 unknown keys made an 8 MB message; `issues` has all)
        return "\n".join(lines + [f"  ... and {more} more"] * (more > 0))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "status": "error",
            "error": {
                "type": "InvalidInput",
                "message": str(self),
                "issues": [issue.to_json() for issue in self.issues],
            },
        }


@frozen_type
class PackProblem(Frozen):
    """One problem in a pack: where it is (file, rule or field id) and what is wrong."""

    where: str
    message: str
    file: str = ""
    line: int | None = None  # 1-based line in `file`, when it could be found

    def render(self) -> str:
        place = (
            f"{self.file}:{self.line}: " if self.file and self.line else f"{self.file}: " if self.file else ""
        )
        return f"{place}{self.where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "where": self.where, "message": self.message}


class PackError(SolverError, ValueError):
    """A pack that cannot be used; lists every problem found, not just the first."""

    exit_code = 3

    def __init__(self, problems: list[PackProblem], pack: str = "") -> None:
        self.problems = list(problems)
        self.pack = pack
        head = f"pack {pack!r} is broken" if pack else "the pack is broken"
        body = "\n".join(f"  - {p.render()}" for p in self.problems)
        super().__init__(f"{head} ({len(self.problems)} problem(s)):\n{body}")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "status": "error",
            "error": {
                "type": type(self).__name__,
                "message": str(self),
                "problems": [p.to_json() for p in self.problems],
            },
        }


class DependencyCycle(PackError):
    """`depends_on` edges form a cycle; the message shows the whole chain."""


P = TypeVar("P")


class Collector(Generic[P]):
    """Problems found one check at a time and reported together (packaging's `_ErrorCollector`
    idea), so that a user fixes every one in one round instead of one per run.

    Checks `add` what they find, or run under `collect()`, which keeps the problems of the error
    this collector makes (`parts` reads them out of it) and goes on; `check()` then raises one
    error listing all of them, after `finish` (which may drop cascades or place each one). The
    one home of "report every problem at once": pack files (`solver.pack.loader`, `PackProblem`s)
    and a request's inputs (`input_issues()`: `solver.inputs.pins`, the command line's `gather`).
    """

    def __init__(
        self, error: Callable[[list[P]], Exception], parts: Callable[[Exception], list[P] | None]
    ) -> None:
        self.problems: list[P] = []
        self._error = error
        self._parts = parts

    def add(self, *problems: P) -> None:
        self.problems.extend(problems)

    def __bool__(self) -> bool:
        return bool(self.problems)

    @contextmanager
    def collect(self) -> Iterator[None]:
        """Run a step that may raise this collector's error: its problems are kept, and the
        caller goes on with the next step (any other exception passes through)."""
        try:
            yield
        except SolverError as exc:
            found = self._parts(exc)
            if found is None:
                raise
            self.problems.extend(found)

    def check(self, finish: Callable[[list[P]], list[P]] | None = None) -> None:
        """Raise the one error listing every problem collected (after `finish`), if any."""
        if self.problems:
            if finish is not None:
                self.problems[:] = finish(self.problems)
            raise self._error(self.problems)


def input_issues() -> Collector[InputIssue]:
    """A collector of bad inputs, raising one `InvalidInput`."""
    return Collector(InvalidInput, lambda exc: exc.issues if isinstance(exc, InvalidInput) else None)


def pack_problems(pack: str | Callable[[], str] = "") -> Collector[PackProblem]:
    """A collector of a pack's problems, raising one `PackError` (`DependencyCycle` when cycles
    are all there is) for the pack named `pack`, or `pack()` when it raises (a loader learns the
    name from the manifest). The checks of `solver.pack` take one and `add` what they find."""

    def error(found: list[PackProblem]) -> PackError:
        kind = DependencyCycle if all(p.where == "depends_on cycle" for p in found) else PackError
        return kind(found, pack if isinstance(pack, str) else pack())

    return Collector(error, lambda exc: exc.problems if isinstance(exc, PackError) else None)


class SolverBudgetExceeded(SolverError, RuntimeError):
    """A solver call used up its search budget; names what was being solved."""

    exit_code = 4

    def __init__(self, task: str, budget: int) -> None:
        self.task = task
        self.budget = budget
        super().__init__(
            f"the search budget of {budget} steps ran out while {task}; "
            "raise it with CONFSOLVE_BUDGET or --budget, or simplify the pack"
        )


class DeadlineExceeded(SolverBudgetExceeded):
    """A command ran past its own time budget (--deadline): the whole command, not one search.

    `abandoned` is True when the work was still running when the budget ran out (the command
    line then ends the process at once)."""

    abandoned = False

    def __init__(self, command: str, phase: str, seconds: float) -> None:
        self.task = f"{command}: {phase}"
        self.budget = 0
        self.seconds = seconds
        narrow = ", or narrow the request with --set" if command in TAKES_SET else ""
        SolverError.__init__(
            self,
            f"the time budget of {seconds:g} s for `confsolve {command}` ran out during {phase}; "
            f"raise it with --deadline or CONFSOLVE_DEADLINE{narrow}",
        )


# The commands that take --set (a deadline's message offers it only to them: `lint --deadline`
# told the user to narrow the request with --set, which lint refuses).
TAKES_SET = frozenset({"resolve", "why", "choices", "check", "count", "matrix", "diff"})


class Unsatisfiable(SolverError):
    """No configuration satisfies the request; carries a minimal conflict and ranked repairs."""

    exit_code = 1

    def __init__(
        self,
        conflict: ConflictReport,
        repairs: list[Repair] | None = None,
        message: str = "",
        launcher_default: dict[str, Any] | None = None,
        *,
        repairs_searched: bool = True,
    ) -> None:
        self.conflict = conflict
        self.repairs = list(repairs or [])
        # False when the caller asked for none (`resolve(..., repairs=False)`): an empty
        # `repairs` then says nothing of whether a repair exists.
        self.repairs_searched = repairs_searched
        self.message = message or _default_message(conflict)
        # Predict mode: the launcher's own pick for a flag left unset that fails
        # ({"field", "value", "chain", "preference"}); None when the request itself conflicts.
        self.launcher_default = launcher_default
        # The request as validated pins and the lead paragraph, kept so that a front end can
        # write the repairs in its own syntax (`solver.reasoning.resolution.conflict_text`); not in the JSON.
        self.request: dict[str, Any] = {}
        self.lead: str | None = None
        # field -> (the user's value, the adjustment rule) for pins the launcher replaced, so
        # the conflict's text names what the user typed; not in the JSON.
        self.adjusted: dict[str, tuple[Any, str]] = {}
        # The digest of the request's copy of the pack the text was made on, and the text before
        # the repairs (`solver.render.text.conflict_explained`): a front end that writes the
        # repairs in its own syntax over the same copy reuses it; not in the JSON.
        self.explained: tuple[str, str] | None = None
        super().__init__(self.message)

    def to_json(self) -> dict[str, Any]:
        doc = {
            "schema": 1,
            "status": "conflict",
            "conflict": self.conflict.model_dump(mode="json"),
            "message": self.message,
            "repairs": [r.model_dump(mode="json") for r in self.repairs],
        }
        if self.launcher_default is not None:
            doc["launcher_default"] = self.launcher_default
        if not self.repairs_searched:
            doc["repairs_searched"] = False
        return doc


def _default_message(conflict: ConflictReport) -> str:
    pins = ", ".join(f"{p.field}={p.value}" for p in conflict.pins) or "the facts"
    rules = "; ".join(f"{r.id}: {r.because}" for r in conflict.rules)
    return f"no configuration satisfies {pins}: {rules}"


def _jsonable(value: Any) -> Any:
    """`value` as strict JSON can hold it: None, bool, str, a finite float or an int that prints
    (json.dumps refuses one of more than 4,300 digits) as is; anything else as its repr."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, int):
        if value.bit_length() <= _INT_BITS:
            return value
        return f"<an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits>"
    try:
        return repr(value)
    except Exception:  # a repr that fails (e.g. a container of huge ints) still renders
        return f"<{type(value).__name__}>"


# Ints up to this many bits (about 3,000 digits) stay numbers: below Python's default limit of
# 4,300 digits for int <-> str conversion, which json.dumps and repr are subject to.
_INT_BITS = 10_000


class RecordInvalid(ValueError):
    """Data that does not fit a record: `errors()` lists each problem as
    `{"loc": (...), "msg": "..."}` (pydantic's shape, so messages read the same)."""

    def __init__(self, problems: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(str(p.get("msg", "")) for p in problems))
        self._problems = problems

    def errors(self) -> list[dict[str, Any]]:
        return list(self._problems)
