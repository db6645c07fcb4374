"""Shared test settings: the Hypothesis profiles, and an opt-in CPU-time profile of the run.

Hypothesis draws each property test's examples. The default run (README's test command, and CI
through `.ci/run`) loads the `repro` profile: the examples are derived from a hash of each test
(`derandomize`), so a counterexample found there is found again by every later run, on any
machine, until the test or Hypothesis changes. `pytest --hypothesis-profile=explore` draws fresh
random examples each run instead (the hunt for new counterexamples: combine it with
`CONFSOLVE_LONG=1` or `-m long` for many); a failure is kept in `.hypothesis/` and replayed first,
and printed with the `@reproduce_failure` line that replays it anywhere.

`CONFSOLVE_CPU_DURATIONS=N pytest ...` prints the N tests that spent the most CPU time (this
process's and its finished children's, setup + call + teardown). On a machine other jobs load,
pytest's `--durations` (wall clock) says more about the load than about the tests; CPU time is
what the test itself costs, and what a quiet run's wall time is made of.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# `repro` is what Hypothesis' own `ci` profile does (it loads that one by itself where CI=true, as
# in `.ci/run`), now in every run: CI's examples and a developer's are the same. No deadline: on a
# loaded machine a slow example is the load, not the code.
_BOTH = settings(deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("repro", _BOTH, derandomize=True, database=None)
settings.register_profile("explore", _BOTH, derandomize=False)
# `--hypothesis-profile NAME` (read by Hypothesis' pytest plugin after this file) overrides this.
settings.load_profile("repro")

# The thread confsolve leaves running on purpose: `solver.cli.stack.run_deep`'s worker after its
# time budget (it cannot stop inside one long step). Each test waits for the ones it left, so
# none runs on into the next test: CPython 3.11 keeps one AST
# recursion counter per interpreter, and a left worker parsing conditions while a later test
# calls `ast.parse` made that call fail with "AST constructor recursion depth mismatch"
# (python/cpython#106905's symptom; seen once in a CI run of round 26).
_LEFT_BEHIND = "confsolve-work"
_LEFT_WAIT_SECONDS = 120.0


@pytest.fixture(autouse=True, scope="module")
def _no_warm_up_left_behind() -> Generator[None, None, None]:
    """The page server's warm-up thread may outlive its server (it checks for the stop between
    states only): a module's servers are closed before this ends, and it waits for the warm-up."""
    yield
    import threading

    for thread in threading.enumerate():
        if thread.name == "confsolve-warm-up":
            thread.join(_LEFT_WAIT_SECONDS)


@pytest.fixture(autouse=True)
def _no_work_left_behind() -> Generator[None, None, None]:
    yield
    import threading
    import time

    ends = time.monotonic() + _LEFT_WAIT_SECONDS
    for thread in threading.enumerate():
        if thread.name == _LEFT_BEHIND:
            thread.join(max(0.0, ends - time.monotonic()))


_SPENT: dict[str, float] = {}
_CPU_KEY = "cpu_seconds"
# tests/test_fuzz.py's cases by target and outcome, from each test's report (see there).
_FUZZ_CASES = "fuzz_cases"
_FUZZ: Counter[tuple[str, str]] = Counter()


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


# Measured per phase (setup, call, teardown) and carried on that phase's report: under pytest-xdist
# the tests run in worker processes, and only their reports reach the process that prints this.
_PHASE_START = pytest.StashKey[float]()


def _mark_phase_start(item: pytest.Item) -> None:
    if os.environ.get("CONFSOLVE_CPU_DURATIONS"):
        item.stash[_PHASE_START] = _cpu_seconds()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _mark_phase_start(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    _mark_phase_start(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    _mark_phase_start(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    start = item.stash.get(_PHASE_START, None)
    if start is not None and os.environ.get("CONFSOLVE_CPU_DURATIONS"):
        report.user_properties.append((_CPU_KEY, _cpu_seconds() - start))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for key, value in report.user_properties:
        if key == _CPU_KEY:
            _SPENT[report.nodeid] = _SPENT.get(report.nodeid, 0.0) + float(value)
        elif key == _FUZZ_CASES:
            for target, outcome, count in value:
                _FUZZ[(target, outcome)] += count


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _FUZZ:
        terminalreporter.write_line(f"fuzz cases run: {sum(_FUZZ.values())}")
        for target in sorted({t for t, _ in _FUZZ}):
            by_outcome = ", ".join(f"{o}: {n}" for (t, o), n in sorted(_FUZZ.items()) if t == target)
            terminalreporter.write_line(f"  {target}: {by_outcome}")
    wanted = os.environ.get("CONFSOLVE_CPU_DURATIONS")
    if not wanted or not _SPENT:
        return
    terminalreporter.write_sep("=", f"CPU seconds of the {wanted} costliest tests (setup + call + teardown)")
    for nodeid, seconds in sorted(_SPENT.items(), key=lambda kv: -kv[1])[: int(wanted)]:
        terminalreporter.write_line(f"{seconds:8.2f}s  {nodeid}")
    terminalreporter.write_line(f"{sum(_SPENT.values()):8.2f}s  in all, {len(_SPENT)} tests")
