"""Worker processes for the configurator: the same pack loaded in another interpreter, so that
CPU-heavy work runs beside the server's own thread instead of queueing behind its interpreter
lock. Two uses: the reasons of greyed values (at a lower priority: they are extra) and half of
each click's choices (at the server's priority: the click waits for them).

A pack is loaded in the worker from its directory; a pack built in code (no directory) has no
worker, and neither has a server after its worker died: callers then do the work themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from solver.model import Pack

__all__ = ["PackProcess"]

T = TypeVar("T")

_WORKER_PACKS: dict[str, Pack] = {}


def _in_worker(directory: str, work: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Runs in the worker process: the pack loaded once per directory, then `work(pack, *args)`."""
    pack = _WORKER_PACKS.get(directory)
    if pack is None:
        from solver import load_pack

        pack = _WORKER_PACKS[directory] = load_pack(directory)
    return work(pack, *args)


def _lower_priority() -> None:
    """The initializer of a worker for extra work: it takes the CPU only when the server's own
    thread does not want it. Without it, a click that came before the last click's reasons were
    done shared the machine's cores with them (on 2 cores, the server's wall time per click was
    several times its CPU time)."""
    import contextlib
    import os

    with contextlib.suppress(AttributeError, OSError):  # no nice() here, or not allowed: run as is
        os.nice(10)


class PackProcess:
    """One worker process for one pack, started on first use (`start`); `submit` gives None when
    there is no worker (a pack without a directory, a closed or broken worker)."""

    def __init__(self, pack: Pack, *, lower_priority: bool) -> None:
        self.pack = pack
        self._lower = lower_priority
        self._pool: ProcessPoolExecutor | None = None
        self._broken = pack.directory is None
        self._lock = threading.Lock()
        self._ready = threading.Event()

    @property
    def ready(self) -> bool:
        """True once the worker has answered a first job (its pack is loaded)."""
        return self._ready.is_set() and not self._broken

    def start(self, prepare: Callable[[Pack], Any] | None = None) -> None:
        """Start the worker now and load its pack (and run `prepare(pack)` there), so that the
        first real job does not wait for it."""
        future = self.submit(prepare or _nothing)
        if future is not None:
            future.add_done_callback(lambda f: self._ready.set() if f.exception() is None else None)

    def submit(self, work: Callable[..., T], *args: Any) -> Future[T] | None:
        """`work(pack, *args)` in the worker (a module-level function, picklable arguments)."""
        with self._lock:
            if self._broken:
                return None
            if self._pool is None:
                import multiprocessing

                # spawn, not fork: the server has threads, and a forked copy of their locks is unsafe.
                self._pool = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_lower_priority if self._lower else None,
                )
            try:
                future: Future[T] = self._pool.submit(_in_worker, str(self.pack.directory), work, args)
            except (BrokenProcessPool, RuntimeError):
                self._broken = True
                return None
        if self._ready.is_set():
            return future
        future.add_done_callback(lambda f: self._ready.set() if f.exception() is None else None)
        return future

    def result(self, future: Future[T]) -> T | None:
        """The future's value, or None when the worker died meanwhile (then it is not used again)."""
        try:
            return future.result()
        except (BrokenProcessPool, CancelledError):
            self._broken = True
            return None

    def close(self) -> None:
        """Stop the worker now, a job it runs included (it holds nothing to keep), and wait for
        the pool's own thread to end. `shutdown(wait=False)` alone left that thread running past
        the interpreter's exit, whose handler (`concurrent.futures.process._python_exit`, not under
        the pool's lock) then woke it through a pipe it was closing or joined it while it waited
        on the worker: "OSError: [Errno 9] Bad file descriptor" printed at exit, or no exit at all
        (CPython gh-83279, gh-83386)."""
        with self._lock:
            self._broken = True
            pool, self._pool = self._pool, None
        if pool is None:
            return
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)  # its thread sees the worker gone: at once


def _nothing(pack: Pack) -> None:
    return None
