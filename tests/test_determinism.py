"""Deterministic and safe to share: the same request gives byte-identical `--json` output in every
process whatever PYTHONHASHSEED is, and a compiled pack used from many threads at once gives the
answers a single thread gives.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hostile import ROOT, TOY, run_cli, sglang_loads, sglang_pack

from solver import InvalidInput, Unsatisfiable, explain, load_pack, resolve, valid_choices
from solver.model import Pack

SEEDS = ["0", "1", "12345", "random"]

TOY_QUERIES = [
    ["resolve", "--pack", str(TOY), "--set", "gpu=b200", "--set", "quant=fp4", "--json"],
    [
        "resolve",
        "--pack",
        str(TOY),
        "--set",
        "gpu=h100",
        "--set",
        "quant=none",
        "--set",
        "kernel=cutlass",
        "--json",
    ],  # adjusted
    [
        "resolve",
        "--pack",
        str(TOY),
        "--set",
        "gpu=h100",
        "--set",
        "quant=fp4",
        "--set",
        "tp=8",
        "--json",
    ],  # conflict
    ["choices", "--pack", str(TOY), "--set", "gpu=a100", "--set", "fusion=true", "--json"],
    ["check", "--pack", str(TOY), "--set", "gpu=b200", "--set", "quant=fp4", "--json"],
]
SGLANG_FACTS = ["--set", "platform=cuda", "--set", "gpu_arch=sm80", "--set", "architecture=LlamaForCausalLM"]
SGLANG_QUERIES = [
    ["resolve", *SGLANG_FACTS, "--json"],
    [
        "resolve",
        *SGLANG_FACTS,
        "--set",
        "moe_runner_backend=flashinfer_trtllm",
        "--set",
        "quantization=none",
        "--json",
    ],  # conflict
    ["choices", "page_size", *SGLANG_FACTS, "--set", "attention_backend=triton", "--json"],
]

# Runs every query through the CLI's main() in one process and prints what each printed.
SCRIPT = """
import contextlib, io, json, sys
from solver.cli.commands import main
results = []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    results.append({"code": code, "stdout": out.getvalue()})
sys.stdout.write(json.dumps(results))
"""


def run_queries(queries: list[list[str]], seed: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(queries)],
        cwd=ROOT,
        env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def test_json_output_is_byte_identical_across_processes_and_hash_seeds() -> None:
    """resolve (resolved, adjusted, conflict), choices and check, on the toy pack and the SGLang
    pack, print the same bytes in four processes with PYTHONHASHSEED 0, 1, 12345 and random."""
    queries = TOY_QUERIES + (SGLANG_QUERIES if sglang_loads() else [])
    with ThreadPoolExecutor(max_workers=len(SEEDS)) as pool:
        runs = list(pool.map(lambda seed: run_queries(queries, seed), SEEDS))
    statuses = [json.loads(r["stdout"])["status"] for r in runs[0]]
    assert {"resolved", "conflict", "choices"} <= set(statuses), statuses
    for seed, run in zip(SEEDS[1:], runs[1:], strict=True):
        for argv, first, other in zip(queries, runs[0], run, strict=True):
            assert other == first, f"PYTHONHASHSEED={seed} changed the output of {argv}"


def test_the_cli_prints_the_same_bytes_as_main() -> None:
    """The real `python -m solver` (another hash seed) prints exactly what main() printed above, so
    the in-process comparison is a comparison of the command line's output."""
    query = TOY_QUERIES[2]
    expected = run_queries([query], "0")[0]
    for seed in ("random",):
        done = run_cli(query, env={"PYTHONHASHSEED": seed})
        assert done.returncode == expected["code"] == 1
        assert done.stdout.decode() == expected["stdout"]


# --- threads -----------------------------------------------------------------------------------


def fresh_toy(tmp_path: Path) -> Pack:
    """A copy of the toy pack with a unique version: a new digest, so nothing about it is cached
    yet and the threads race to compile it."""
    root = tmp_path / f"toy-{uuid.uuid4().hex[:8]}"
    shutil.copytree(TOY, root)
    manifest = root / "pack.toml"
    manifest.write_text(manifest.read_text().replace('version = "1"', f'version = "{root.name}"'))
    return load_pack(root)


def answer(call: Callable[[], Any]) -> str:
    """A query's full answer (result or error) as canonical JSON."""
    try:
        found = call()
    except (Unsatisfiable, InvalidInput) as exc:
        return json.dumps(exc.to_json(), sort_keys=True)
    if found is None:
        return "null"
    return json.dumps(found.to_json(), sort_keys=True)


def toy_queries(pack: Pack) -> list[Callable[[], Any]]:
    calls: list[Callable[[], Any]] = []
    for gpu in ("a100", "h100", "b200"):
        for quant in ("none", "fp8", "fp4"):
            for kernel in (None, "triton", "cutlass", "trtllm"):
                options: dict[str, Any] = {"quant": quant, "kernel": kernel}
                facts = {"gpu": gpu}
                for strict in (False, True):
                    calls.append(lambda o=options, f=facts, s=strict: resolve(pack, o, f, strict=s))
                calls.append(lambda o=options, f=facts: valid_choices(pack, o, f))
                calls.append(lambda o=options, f=facts: explain(pack, o, f))
    calls.append(lambda: resolve(pack, {"kernel": "cutlas"}, {"gpu": "b200"}))  # invalid
    return calls


def sglang_queries(pack: Pack) -> list[Callable[[], Any]]:
    facts = {"platform": "cuda", "gpu_arch": "sm80", "architecture": "LlamaForCausalLM"}
    requests: list[Mapping[str, Any]] = [
        {},
        {"quantization": "fp8"},
        {"attention_backend": "triton", "page_size": 16},
        {"moe_runner_backend": "flashinfer_trtllm", "quantization": "none"},  # conflict
        {"tp_size": 2, "ep_size": 4},  # conflict
    ]
    calls: list[Callable[[], Any]] = [lambda o=o: resolve(pack, o, facts) for o in requests]
    calls.append(lambda: valid_choices(pack, {"attention_backend": "triton"}, facts, fields=["page_size"]))
    return calls


def concurrent_answers(calls: list[Callable[[], Any]], copies: int) -> list[tuple[int, str]]:
    """Each call `copies` times, shuffled, on 8 threads: (index of the call, its answer)."""
    jobs = [i for i in range(len(calls)) for _ in range(copies)]
    random.Random(1234).shuffle(jobs)
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(lambda i: answer(calls[i]), jobs))
    return list(zip(jobs, found, strict=True))


def test_toy_pack_shared_by_8_threads(tmp_path: Path) -> None:
    """73 resolves, 36 valid_choices and 36 explains, each 4 times in shuffled order on 8 threads,
    starting from a pack nothing has compiled yet: every answer equals the sequential one."""
    pack = fresh_toy(tmp_path)
    calls = toy_queries(pack)
    concurrent = concurrent_answers(calls, copies=4)
    sequential = [answer(call) for call in calls]
    kinds = {json.loads(a)["status"] if a != "null" else "null" for a in sequential}
    assert {"resolved", "conflict", "error", "choices", "null"} <= kinds, kinds
    wrong = [(i, a) for i, a in concurrent if a != sequential[i]]
    assert not wrong, f"{len(wrong)} of {len(concurrent)} threaded answers differ"


def test_sglang_pack_shared_by_8_threads() -> None:
    """SGLang resolves (resolved and conflict, with repairs) and choices, each twice on 8
    threads: every answer equals the sequential one."""
    pack = sglang_pack()
    calls = sglang_queries(pack)
    sequential = [answer(call) for call in calls]
    assert {json.loads(a)["status"] for a in sequential} == {"resolved", "conflict", "choices"}
    concurrent = concurrent_answers(calls, copies=2)
    wrong = [i for i, a in concurrent if a != sequential[i]]
    assert not wrong, f"threaded answers differ for calls {sorted(set(wrong))}"


def test_the_hash_seed_reaches_the_child() -> None:
    """Guard for the first test: the children really hash differently under different seeds."""
    hashes = {
        run_seed
        for run_seed in (
            subprocess.run(
                [sys.executable, "-c", "print(hash('confsolve'))"],
                text=True,
                capture_output=True,
                env={"PYTHONHASHSEED": seed},
                check=True,
            ).stdout
            for seed in ("0", "12345")
        )
    }
    assert len(hashes) == 2


def test_why_names_a_rejections_pins_in_one_order_whatever_the_hash_seed() -> None:
    """`why` lists the pins that cost a better-ranked value its place; they were gathered from a
    set, so the order changed with PYTHONHASHSEED (seed 5 of 1-6 printed another order)."""
    why = [
        "why",
        "--pack",
        "vllm",
        *["--set", "platform=cuda", "--set", "gpu_arch=sm89", "--set", "architecture=LlamaForCausalLM"],
        *["--set", "num_attention_heads=32", "--set", "kv_cache_dtype=fp8", "attention_backend"],
    ]
    seeds = [str(seed) for seed in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda seed: run_queries([why, [*why, "--json"]], seed), seeds))
    assert "rejected because: fa-fp8-kv-needs-fa3-hopper-or-fa4-blackwell" in runs[0][0]["stdout"]
    for seed, run in zip(seeds[1:], runs[1:], strict=True):
        assert run == runs[0], f"PYTHONHASHSEED={seed} changed the output of `why`"
