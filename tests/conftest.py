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
from collections.abc import Generator

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

_SPENT: dict[str, float] = {}


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    if not os.environ.get("CONFSOLVE_CPU_DURATIONS"):
        yield
        return
    start = _cpu_seconds()
    yield
    _SPENT[item.nodeid] = _cpu_seconds() - start


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    wanted = os.environ.get("CONFSOLVE_CPU_DURATIONS")
    if not wanted or not _SPENT:
        return
    terminalreporter.write_sep("=", f"CPU seconds of the {wanted} costliest tests (setup + call + teardown)")
    for nodeid, seconds in sorted(_SPENT.items(), key=lambda kv: -kv[1])[: int(wanted)]:
        terminalreporter.write_line(f"{seconds:8.2f}s  {nodeid}")
    terminalreporter.write_line(f"{sum(_SPENT.values()):8.2f}s  in all, {len(_SPENT)} tests")
