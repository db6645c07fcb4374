"""The configurator's worker processes (solver.serve.workers) end with their pool: nothing is left
running past the interpreter's exit.

`benchmarks/page_api.py --sessions 4` once printed "Bad file descriptor" as it exited: `close()`
shut the pool down without waiting, so the pool's own thread was still stopping the worker when
the interpreter's exit handler (`concurrent.futures.process._python_exit`, not under the pool's
lock) woke it through the pipe that thread was closing. The window is a few instructions wide; the
test widens it (the handler sleeps between its check and its write) so that it fails every time
the thread outlives `close()`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import sys, time
from concurrent.futures import process

def wakeup(self):  # the exit handler's window between its check and its write, widened
    if not self._closed:
        time.sleep(1.0)
        self._writer.send_bytes(b"")

process._ThreadWakeup.wakeup = wakeup

if __name__ == "__main__":
    from solver import load_pack
    from solver.serve.workers import PackProcess

    worker = PackProcess(load_pack(sys.argv[1]), lower_priority=True)
    job = worker.submit(id)
    assert job is not None and worker.result(job) is not None
    worker.close()
"""


def test_a_closed_worker_leaves_nothing_for_the_interpreter_s_exit(tmp_path: Path) -> None:
    # (on main 7b8e94c: "OSError: handle is closed" from _python_exit, after close() returned)
    script = tmp_path / "close_worker.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    toy = str(ROOT / "tests" / "fixtures" / "packs" / "toy")
    done = subprocess.run(
        [sys.executable, str(script), toy], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
