"""Shared test settings: an opt-in CPU-time profile of the run.

`CONFSOLVE_CPU_DURATIONS=N pytest ...` prints the N tests that spent the most CPU time (this
process's and its finished children's, setup + call + teardown). On a machine other jobs load,
pytest's `--durations` (wall clock) says more about the load than about the tests; CPU time is
what the test itself costs, and what a quiet run's wall time is made of.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

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
