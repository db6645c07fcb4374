"""Run a command's work where deep recursion fits: a thread with a large stack and a raised
recursion limit.

The exact counter recurses once or twice per field it branches on, so a pack of thousands of
fields goes deeper than Python's default limit of 1,000 frames; that is a size the pack may
legally have, not "input nested too deeply". The command line runs its long commands here; a
library caller chooses for itself. Standard library only.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["DEPTH", "run_deep"]

T = TypeVar("T")

DEPTH = 200_000  # frames: 5,000 fields need about 10,000
_STACK_BYTES = 1024 * 1024 * 1024  # reserved address space, used only as deep as it goes


def run_deep(
    work: Callable[[], T],
    *,
    seconds: float | None = None,
    on_timeout: Callable[[], BaseException] | None = None,
) -> T:
    """`work()` in a thread with a 1 GiB stack and a recursion limit of DEPTH frames; its result
    or its exception. Ctrl-C in the waiting thread leaves the worker (a daemon) behind; so does
    a `seconds` budget that runs out, raising `on_timeout()` (the work may be inside one long
    step, such as loading a huge pack, where it cannot look at the clock itself)."""
    import time

    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # handed to the caller's thread as it is
            failure.append(exc)

    saved_limit = sys.getrecursionlimit()
    try:
        saved_size = threading.stack_size(_STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that does not let a thread's stack grow
        return work()
    try:
        sys.setrecursionlimit(max(saved_limit, DEPTH))
        worker = threading.Thread(target=target, name="confsolve-work", daemon=True)
        worker.start()
    finally:
        threading.stack_size(saved_size)
    started = time.monotonic()
    try:
        while worker.is_alive():
            worker.join(0.2)  # a short wait, so Ctrl-C reaches this thread promptly
            if seconds is not None and worker.is_alive() and time.monotonic() - started > seconds:
                if on_timeout is not None:
                    raise on_timeout()
                raise TimeoutError(f"the work ran past {seconds:g} s")
    finally:
        # Given back even when the worker is left behind (Ctrl-C, a budget): other threads run
        # on ordinary stacks, where the raised limit would let a deep recursion crash the process.
        sys.setrecursionlimit(saved_limit)
    if failure:
        raise failure[0]
    return result[0]
