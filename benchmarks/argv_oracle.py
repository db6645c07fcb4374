"""Does SGLang 0.5.23's own argument parser accept the launch commands confsolve writes?

Draws requests (facts, 0-3 typed options from the pack's domains, sometimes an unlisted size such
as `--tp 6`, and flags the pack does not model), resolves each, writes the launch command
(`--format argv`, and `--minimal`), then runs every command through SGLang's real parser in the
oracle environment: `ServerArgs.add_cli_args` on the `argparse` parser `prepare_server_args`
builds (the parser of `python -m sglang.launch_server` and `sglang serve`). A command passes
when the parser accepts it and every option confsolve wrote reads back as the value it resolved.

    .venv/bin/python benchmarks/argv_oracle.py [--count N] [--seed S] [--venv PATH] [--json]

Needs the oracle venv (default /work/oracle-sglang, or $ORACLE_VENV): see
../shared/tools/sglang-oracle/README.md. `tests/test_launch_oracle.py` (-m long) runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver import InvalidInput, Unsatisfiable, load_pack  # noqa: E402
from solver.inputs.launch import read_command, write_command  # noqa: E402
from solver.model import Pack, Scalar  # noqa: E402
from solver.reasoning.minimal import minimal_options  # noqa: E402
from solver.reasoning.resolution import resolve  # noqa: E402

DEFAULT_VENV = os.environ.get("ORACLE_VENV", "/work/oracle-sglang")
MACHINES = [
    ("cuda", "sm80"),
    ("cuda", "sm90"),
    ("cuda", "sm100"),
    ("cuda", "sm120"),
    ("hip", "gfx942"),
    ("hip", "gfx950"),
    ("cpu", "none"),
    ("npu", "none"),
]
OTHER_FLAGS = [
    ["--host", "0.0.0.0"],
    ["--mem-fraction-static", "0.85"],
    ["--port", "30001"],
    ["--enable-metrics"],
    ["--chat-template", "my template.jinja"],
    ["--log-level", "warning"],
]
UNLISTED = {"tp_size": [3, 6, 12], "dp_size": [3, 6], "ep_size": [3], "page_size": [8, 24]}

# Runs inside the oracle venv: one JSON argv per line in, one JSON verdict per line out.
_SGLANG_SIDE = r"""
import argparse, contextlib, io, json, sys
from sglang.srt.server_args import ServerArgs
for line in sys.stdin:
    job = json.loads(line)
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser.parse_args(job["argv"])
    except SystemExit:
        lines = err.getvalue().strip().splitlines()
        print(json.dumps({"ok": False, "error": lines[-1] if lines else "exit"}), flush=True)
        continue
    print(json.dumps({"ok": True, "values": {k: getattr(ns, k, None) for k in job["fields"]}},
                     default=str), flush=True)
"""


def _request(pack: Pack, rng: random.Random) -> tuple[dict[str, Scalar], dict[str, Any], list[str]]:
    platform, arch = rng.choice(MACHINES)
    facts: dict[str, Any] = {"platform": platform, "gpu_arch": arch}
    archs = [a for a in pack.fields["architecture"].domain if a != "other"]
    facts["architecture"] = rng.choice(archs)
    options: dict[str, Scalar] = {}
    for name in rng.sample(pack.options, rng.randint(0, 3)):
        if name in UNLISTED and rng.random() < 0.4:
            options[name] = rng.choice(UNLISTED[name])
        else:
            options[name] = rng.choice(pack.fields[name].domain)
    other = [w for flags in rng.sample(OTHER_FLAGS, rng.randint(0, 3)) for w in flags]
    return options, facts, other


def _expected(pack: Pack, values: dict[str, Scalar], fields: list[str]) -> dict[str, Any]:
    """What SGLang's namespace should hold for each option written: the value, or what leaving
    the flag out gives (None for an `absent` value, False for an unset store_true flag)."""
    out: dict[str, Any] = {}
    for name in fields:
        f, value = pack.fields[name], values[name]
        if f.absent is not None and value == f.absent:
            out[name] = None
        else:
            out[name] = value
    return out


def _matches(expected: Any, got: Any) -> bool:
    if expected is None:
        return got is None or got in ("none", False)
    return str(expected).lower() == str(got).lower()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="requests to draw (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--venv", default=DEFAULT_VENV)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    python = Path(args.venv) / "bin" / "python"
    if not python.exists():
        print(f"argv_oracle: no oracle venv at {args.venv} (set ORACLE_VENV)", file=sys.stderr)
        return 2
    pack = load_pack("sglang")
    rng = random.Random(args.seed)
    jobs: list[dict[str, Any]] = []
    skipped = {"conflict": 0, "invalid": 0}
    for number in range(args.count):
        options, facts, other = _request(pack, rng)
        try:
            res = resolve(pack, options, facts, reasons=False)
        except Unsatisfiable:
            skipped["conflict"] += 1
            continue
        except InvalidInput:
            skipped["invalid"] += 1
            continue
        program = ("sglang", "serve") if number % 4 == 0 else ("python", "-m", "sglang.launch_server")
        typed = read_command(pack, [*program, "--model-path", "/models/m", *other])
        for minimal in (False, True):
            fields = minimal_options(pack, res.values) if minimal else pack.options
            words = write_command(pack, typed, res.values, fields=fields)
            jobs.append(
                {
                    "argv": words[len(program) :],
                    "words": words,
                    "minimal": minimal,
                    "fields": fields,
                    "expected": _expected(pack, res.values, fields),
                }
            )
    started = time.monotonic()
    feed = "".join(json.dumps({"argv": j["argv"], "fields": j["fields"]}) + "\n" for j in jobs)
    done = subprocess.run(
        [str(python), "-c", _SGLANG_SIDE], input=feed, capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - started
    verdicts = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(verdicts) != len(jobs):
        print(
            f"argv_oracle: the SGLang side answered {len(verdicts)} of {len(jobs)}:\n{done.stderr[-2000:]}",
            file=sys.stderr,
        )
        return 2
    failures = []
    for job, verdict in zip(jobs, verdicts, strict=True):
        if not verdict["ok"]:
            failures.append({"argv": job["words"], "error": verdict["error"]})
            continue
        wrong = {
            n: [job["expected"][n], verdict["values"][n]]
            for n in job["fields"]
            if not _matches(job["expected"][n], verdict["values"][n])
        }
        if wrong:
            failures.append({"argv": job["words"], "read_back_differs": wrong})
    summary = {
        "commands": len(jobs),
        "accepted_and_read_back": len(jobs) - len(failures),
        "full": sum(1 for j in jobs if not j["minimal"]),
        "minimal": sum(1 for j in jobs if j["minimal"]),
        "skipped_requests": skipped,
        "sglang_seconds": round(seconds, 1),
        "failures": failures[:20],
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{summary['accepted_and_read_back']}/{summary['commands']} launch commands accepted by "
            f"SGLang 0.5.23's parser with every written option read back as resolved "
            f"({summary['full']} full, {summary['minimal']} --minimal; requests skipped: "
            f"{skipped['conflict']} conflicts, {skipped['invalid']} invalid; SGLang side {seconds:.1f} s)"
        )
        for failure in failures[:20]:
            print("  FAIL", json.dumps(failure))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
