"""16 threads calling the library on one SGLang pack agree with one thread, byte for byte
(long run: `pytest -m long tests/test_threads.py`).

The pack is a fresh copy (a digest nothing has compiled yet), so the threads race to compile it,
and its answer tables get a budget small enough that they are emptied many times while the
threads read and fill them (`solver.bounded.Memo`): the bound on memory must not cost an answer.
"""

from __future__ import annotations

import json
import random
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile import ROOT

import solver.bounded as bounded
from solver import SolverError, explain, load_pack, resolve, valid_choices
from solver.engine.csp import compile_pack
from solver.model import Pack

THREADS = 16
REQUESTS = 60


def fresh_sglang(tmp_path: Path) -> Pack:
    root = tmp_path / f"sglang-{uuid.uuid4().hex[:8]}"
    shutil.copytree(ROOT / "constraints" / "sglang", root, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = root / "pack.toml"
    text = manifest.read_text()
    manifest.write_text(text.replace("version = ", f"# copy {root.name}\nversion = ", 1))
    return load_pack(root)


def calls(pack: Pack, n: int, seed: int) -> list[Callable[[], Any]]:
    """Resolves (with reasons), choices and explanations of drawn requests: resolved ones,
    conflicts with repairs, and invalid input."""
    rng = random.Random(seed)
    options = [name for name, f in pack.fields.items() if f.kind == "option"]
    out: list[Callable[[], Any]] = []
    for i in range(n):
        chosen = {name: rng.choice(pack.fields[name].domain) for name in rng.sample(options, 2)}
        facts = {
            "platform": "cuda",
            "gpu_arch": rng.choice(["sm80", "sm90", "sm100"]),
            "architecture": rng.choice(pack.fields["architecture"].domain),
        }
        kind = i % 4
        if kind == 0:
            out.append(lambda o=chosen, f=facts: resolve(pack, o, f))
        elif kind == 1:
            out.append(lambda o=chosen, f=facts: valid_choices(pack, o, f, fields=list(o)[:1]))
        elif kind == 2:
            out.append(lambda o=chosen, f=facts: explain(pack, o, f))
        else:
            out.append(lambda o=chosen, f=facts: resolve(pack, {**o, "tp_size": "eight"}, f))
    return out


def answer(call: Callable[[], Any]) -> str:
    try:
        found = call()
    except SolverError as exc:
        return json.dumps(exc.to_json(), sort_keys=True, default=str)
    return "null" if found is None else json.dumps(found.to_json(), sort_keys=True, default=str)


@pytest.mark.long
def test_16_threads_agree_with_one_thread_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded, "MEMO_ENTRIES", 5_000)
    pack = fresh_sglang(tmp_path)
    work = calls(pack, REQUESTS, seed=20)
    answers: list[list[str]] = [[] for _ in range(THREADS)]
    failures: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def worker(i: int) -> None:
        order = list(range(len(work)))
        random.Random(i).shuffle(order)  # each thread its own order: different interleavings
        start.wait()
        try:
            got = {j: answer(work[j]) for j in order}
        except BaseException as exc:  # reported below, with the thread's answers missing
            failures.append(exc)
            return
        answers[i] = [got[j] for j in range(len(work))]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    flushes = compile_pack(pack).tables.flushes
    alone = [answer(call) for call in work]
    kinds = {json.loads(a).get("status") for a in alone if a != "null"}
    assert {"resolved", "conflict", "choices", "error"} <= kinds, kinds
    for i, got in enumerate(answers):
        wrong = [j for j in range(len(work)) if got[j] != alone[j]]
        assert not wrong, f"thread {i}: answers differ for calls {wrong}"
    assert flushes > 0, "the answer tables were never emptied while the threads ran"
