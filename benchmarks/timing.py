"""Timing helpers for the benchmarks: warm-up, repeats, percentiles, and a per-call deadline."""

from __future__ import annotations

import compileall
import math
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Deadline(Exception):
    """A single call ran past the benchmark's per-call cap."""


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Abort the enclosed code with `Deadline` after `seconds` (main thread, Unix; None = no cap)."""
    if not seconds:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise Deadline()

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def bare_python(directory: str | Path) -> str:
    """A virtual environment of this interpreter with nothing installed, made in `directory`: its
    `python -c pass` is the floor a whole process is measured over (an installed copy's start).

    Not this environment's own interpreter when confsolve is installed editable (`pip install -e`,
    as the benchmarks run): setuptools' editable finder is a `.pth` file run at every start, and it
    imports pathlib, re, fnmatch, urllib.parse and importlib.util (+32 ms CPU at load 8):
    modules `confsolve check` imports anyway, so over that floor a check looked ~30-80 ms cheaper
    than the same check installed from a wheel (benchmarks/README, round cold27)."""
    venv = Path(directory) / "floor-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def with_bytecode(*trees: str | Path) -> str:
    """Compile the bytecode of each source tree's `solver`, `constraints` and `benchmarks` (those
    missing or stale only) before anything is timed, and say how many modules that was.

    A tree run without its bytecode while PYTHONDONTWRITEBYTECODE is set (as in the lead's shell
    on this machine) compiles every module it imports in every process: ~0.5 s for a whole start,
    and the lazily imported ones inside the timed calls (first calls, lint, choices). An
    installed copy never pays that (pip writes the bytecode at install): round 28's base tree
    had none, and its first-call and lint columns read high by it (README, round 28)."""
    stale = 0
    for tree in trees:
        for part in ("solver", "constraints", "benchmarks"):
            directory = Path(tree) / part
            if not directory.is_dir():
                continue
            stale += sum(1 for source in directory.rglob("*.py") if not _current(source))
            # compile_dir writes whatever sys.dont_write_bytecode says; quiet=1: errors only.
            compileall.compile_dir(directory, quiet=1)
    shown = ", ".join(str(t) for t in trees)
    line = f"bytecode: {stale} modules were missing or stale, compiled first ({shown})"
    return line if stale else f"bytecode: current ({shown})"


def _current(source: Path) -> bool:
    """Whether `source` has the bytecode this interpreter would use as it is (a timestamp pyc
    recording the source's mtime and size, or a hash-based one)."""
    import importlib.util

    try:
        with open(importlib.util.cache_from_source(str(source)), "rb") as handle:
            header = handle.read(16)
        info = source.stat()
    except OSError:
        return False
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") != 0:
        return True  # hash-based: checked (or not) against the source by its own flag
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return mtime == int(info.st_mtime) & 0xFFFFFFFF and size == info.st_size & 0xFFFFFFFF


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass
class Stat:
    """Times in milliseconds of one benchmark row."""

    name: str
    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    timeouts: int = 0
    note: str = ""
    unit: str = "ms"

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "n": len(self.samples),
            "unit": self.unit,
            "timeouts": self.timeouts,
        }
        if self.samples:
            out.update(
                median=statistics.median(self.samples),
                p10=percentile(self.samples, 10),
                p90=percentile(self.samples, 90),
                max=max(self.samples),
                min=min(self.samples),
            )
        if self.cpu:
            out["cpu_median"] = statistics.median(self.cpu)
            out["cpu_p90"] = percentile(self.cpu, 90)
        if self.note:
            out["note"] = self.note
        return out


def time_call(
    fn: Callable[[], Any], *, repeat: int = 5, warmup: int = 1, cap: float | None = None
) -> tuple[list[float] | None, list[float] | None, Any]:
    """Wall and CPU times (ms) of `fn`, one per run, for `repeat` runs after `warmup` runs.

    Both are None if a run hit `cap` (seconds). CPU time is reported beside wall time because
    the benchmark machine is shared: CPU time is what this process spent, whatever the load.
    Returns the times and the last result (or the exception the call raised, as a value).
    """
    result: Any = None
    times: list[float] = []
    cpu: list[float] = []
    try:
        for i in range(warmup + repeat):
            with deadline(cap):
                start = time.perf_counter()
                start_cpu = time.process_time()
                try:
                    result = fn()
                except Deadline:
                    raise
                except Exception as exc:  # expected outcomes (Unsatisfiable) are results here
                    result = exc
                elapsed = (time.perf_counter() - start) * 1e3
                elapsed_cpu = (time.process_time() - start_cpu) * 1e3
            if i >= warmup:
                times.append(elapsed)
                cpu.append(elapsed_cpu)
    except Deadline:
        return None, None, None
    return times, cpu, result


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"
