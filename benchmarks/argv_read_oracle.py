"""Are typed command lines read as the launchers read them? A differential against the real parsers.

Draws command lines a user might type for SGLang 0.5.23 or vLLM 0.33.0 (the pack's commands, with
a path or without a program, `VAR=value` words in front; the model positional or by flag; the
pack's option flags spelled every way the parser takes and some it does not: aliases, argparse
abbreviations, ambiguous prefixes, `--a_b`, `--flag=value`, bare and `=true` booleans, `--no-`
negatives, dotted keys; valid, unlisted and malformed values; repeated flags; flags the pack does
not model; unknown flags and stray words; a `--config` YAML file), then reads each one twice:

- **the launcher**: its own entry point's parser in the oracle environment
  (`benchmarks/launcher_parse.py`, SGLang's `prepare_server_args`, vLLM's `FlexibleArgumentParser`),
  giving each modelled option's value (or the parser's refusal);
- **confsolve**: `solver.cli.launch.merge_launch` (`read_command`, the `--config` file, the merge
  the command line does) then the pack's reading of each value (`collect_pins`), giving each
  option's value (or the input error).

A command agrees when both refuse it, or both take it with the same model and the same value for
every option (an option neither sets: the launcher holds its default). Anything else is a
disagreement, by kind: `value` (both take it, some option differs: the worst, a wrong answer),
`we_accept` (the launcher refuses a command confsolve reads), `we_refuse` (confsolve refuses a
command the launcher reads).

    .venv/bin/python benchmarks/argv_read_oracle.py [--launcher sglang|vllm|both] [--count N]
        [--seed S] [--json] [--show N]

Needs the oracle venvs ($ORACLE_VENV, default /work/oracle-sglang; $ORACLE_VLLM_PYTHON, default
/work/oracle-vllm/venv/bin/python); a launcher without one is skipped with a message. Progress on
a terminal (stderr). `tests/test_launch_read_oracle.py` (-m long) runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solver import InvalidInput, load_pack  # noqa: E402
from solver.cli.launch import merge_launch  # noqa: E402
from solver.inputs.pins import collect_pins  # noqa: E402
from solver.model import Field, Pack  # noqa: E402

PYTHONS = {
    "sglang": Path(os.environ.get("ORACLE_VENV", "/work/oracle-sglang")) / "bin" / "python",
    "vllm": Path(os.environ.get("ORACLE_VLLM_PYTHON", "/work/oracle-vllm/venv/bin/python")),
}
# Flags the packs do not model, with values their parsers take (read from each launcher's
# `--help`): they must pass through without disturbing what is read around them.
OTHER_FLAGS: dict[str, list[list[str]]] = {
    "sglang": [
        ["--host", "0.0.0.0"],
        ["--port", "30001"],
        ["--mem-fraction-static", "0.85"],
        ["--enable-metrics"],
        ["--chat-template", "my template.jinja"],
        ["--log-level", "warning"],
        ["--cuda-graph-bs-decode", "1", "2", "4"],
        ["--random-seed", "-1"],
        ["--served-model-name", "m"],
        ["--disable-radix-cache"],
    ],
    "vllm": [
        ["--host", "0.0.0.0"],
        ["--port", "8001"],
        ["--gpu-memory-utilization", "0.85"],
        ["--max-model-len", "4096"],
        ["--enforce-eager"],
        ["--served-model-name", "m", "m2"],
        ["--seed", "-1"],
        ["-O3"],
        ["-O", "2"],
        ["--compilation-config.mode", "3"],
        ["--attention-config", '{"flash_attn_version": 2}'],
        ["-ac", '{"flash_attn_version": 3}'],
        ["--attention-config", "{}"],
        ["--compilation-config", '{"mode": 3}'],
        ["-cc", '{"mode": 3, "cudagraph_mod": "FULL"}'],
        ["--compilation-config.cudagraph_mod", "FULL"],
        ["--max-num-seqs", "+64"],
        ["--no-enable-prefix-caching"],
        ["--max_num_seqs", "64"],
        ["--cudagraph-capture-sizes", "1", "2", "4"],
        # nested keys of a JSON flag (a config class of its own: pydantic refuses others), `+` lists
        ["--compilation-config", '{"pass_config": {"fuse_allreduce_rms": true}}'],
        ["-cc", '{"pass_config": {"fuse_allreduce_rm": true}}'],
        ["--compilation-config.pass_config.fuse_allreduce_rms", "true"],
        ["--compilation-config.pass_config.eliminate_noop", "false"],
        ["--compilation-config.pass_config", "5"],
        ["--compilation-config.cudagraph_capture_sizes+", "1,2,4"],
        ["--compilation-config.custom_ops+=none"],
        ["--compilation-config.level", "3"],
        ["--attention-config", '{"hisparse_config": {"device_buffer_size": 2}}'],
    ],
}
NEEDS_ANOTHER = {"--enable-auto-tool-choice"}  # vLLM: "requires --tool-call-parser"
ENV_WORDS = {
    "sglang": ["SGLANG_USE_AITER=1", "CUDA_VISIBLE_DEVICES=0,1"],
    "vllm": ["VLLM_LOGGING_LEVEL=INFO"],
}
MALFORMED = ["", " ", "+8", "08", "0_8", " 8", "8.0", "-1", "0", "true", "None", "auto", "FA3", "x" * 3]


# Disagreements understood and left, each with why (matched on the kind, the program and what the
# launcher or confsolve said). Anything else is new, and fails the run.
KNOWN: list[tuple[str, str, str, str]] = [
    (
        "we_accept",
        "",
        "errors.pydantic.dev",
        "a value of a JSON key the pack does not model, of a type its config class refuses "
        '(`--compilation-config.mode+ 3`, `{"backend": {"x": 2}}`): the table lists each config '
        "class's keys, not their types (an unknown key, or a config class given no object, is read)",
    ),
    (
        "we_accept",
        "",
        "invalid ",
        "a value of a flag the pack does not model, of a type its parser refuses: the flag table "
        "types only int() flags (`--mem-fraction-static x`, `--max-model-len 1x` are not checked)",
    ),
    (
        "we_accept",
        "",
        " requires --",
        "a flag the pack does not model that the launcher checks against another after reading "
        "(vLLM's validate_parsed_serve_args: --data-parallel-multi-port-external-lb requires "
        "--data-parallel-size > 1): a check of two flags, not of the reading",
    ),
]


# What the table does describe, so never a known disagreement: a key a config class lacks, a key
# holding a config class given something else than an object.
NEVER_KNOWN = ("unexpected_keyword_argument", "dataclass_type")


def _known(entry: dict[str, Any], modelled_keys: list[str]) -> str | None:
    """Why a disagreement is known, or None. `modelled_keys`: the JSON keys the pack models (a type
    error of theirs is confsolve's to catch, never known)."""
    said = f"{entry.get('launcher', '')} {entry.get('confsolve', '')}"
    if any(word in said for word in NEVER_KNOWN):
        return None
    if "errors.pydantic.dev" in said and any(key in entry["command"] for key in modelled_keys):
        return None
    for kind, program, needle, why in KNOWN:
        if entry["kind"] == kind and program in entry["command"] and needle in said:
            return why
    return None


def _flag_and_key(pack: Pack, f: Field) -> tuple[str, str | None]:
    """The parser flag a field's value lives under, and the JSON key of a dotted flag."""
    flag = f.cli_flag
    if pack.launcher is not None and pack.launcher.dotted and "." in flag:
        head, _, key = flag.partition(".")
        return head, key
    return flag, None


def _compared(pack: Pack) -> dict[str, Field]:
    return {n: f for n, f in pack.fields.items() if f.kind == "option" and not f.env}


class Draw:
    """One launcher's command-line generator (a random.Random drives every choice)."""

    def __init__(self, launcher: str, pack: Pack, rng: random.Random, scratch: Path) -> None:
        self.launcher, self.pack, self.rng, self.scratch = launcher, pack, rng, scratch
        self.fields = _compared(pack)
        assert pack.launcher is not None
        self.table = pack.launcher.flags
        # (not the switches the launcher refuses alone: a check of two flags, not of the reading)
        self.switches = sorted(
            f
            for f, a in self.table.items()
            if a == "switch" and f.startswith("--") and f not in NEEDS_ANOTHER
        )

    def _spelling(self, flag: str) -> str:
        r, rng = self.rng.random(), self.rng
        if not flag.startswith("--") or r < 0.55:
            return flag
        if r < 0.70:  # an argparse abbreviation: a prefix, unique or not
            cut = rng.randint(max(4, len(flag) // 2), len(flag) - 1) if len(flag) > 5 else len(flag)
            return flag[:cut]
        if r < 0.80:
            return "--" + flag[2:].replace("-", "_")
        if r < 0.85:
            return flag[:3] + flag[4:] if len(flag) > 5 else flag  # a typo
        if r < 0.90:
            return flag.upper()
        return flag

    def _value(self, f: Field) -> str:
        rng, r = self.rng, self.rng.random()
        if r < 0.72:
            value = rng.choice(f.domain)
        elif r < 0.82 and isinstance(f.domain[0], int) and not isinstance(f.domain[0], bool):
            value = rng.choice([3, 5, 6, 12, 24, 0, -2])
        elif r < 0.90:
            value = rng.choice(MALFORMED)
        elif r < 0.95:
            value = (
                str(rng.choice(f.domain)).upper() if isinstance(f.domain[0], str) else rng.choice(f.domain)
            )
        else:
            other = self.fields[rng.choice(list(self.fields))]
            value = rng.choice(other.domain)
        return str(value).lower() if isinstance(value, bool) else str(value)

    def _option(self) -> list[str]:
        rng = self.rng
        f = self.fields[rng.choice(list(self.fields))]
        # (a short alias of a dotted key, `-ac.flash_attn_version`, is drawn as `-ac JSON` among
        # the other flags: the draws stay the same whether the pack lists it or not)
        flag = rng.choice([x for x in f.all_flags if x.startswith("--") or "." not in x])
        if f.flag_value != "value":
            if f.flag_value == "boolean_optional" and flag.startswith("--") and rng.random() < 0.3:
                # argparse's `--no-x`, or vLLM's `--disable-x` (from the parser's flags, not the
                # pack's negatives: the same draw on a tree without them)
                own = "--disable-" + flag.removeprefix("--enable-")
                flag = own if own in self.table and rng.random() < 0.5 else "--no-" + flag[2:]
            flag = self._spelling(flag)
            r = rng.random()
            if r < 0.8:
                return [flag]
            if r < 0.9:
                return [f"{flag}={rng.choice(['true', 'false', '1'])}"]
            return [flag, rng.choice(["true", "false"])]
        flag = self._spelling(flag)
        value = self._value(f)
        if "." in flag and rng.random() < 0.1:  # a dotted key's `+` (a list), or a key under it
            flag += rng.choice(["+", ".x"])
        if rng.random() < 0.2:
            return [f"{flag}={value}"]
        if rng.random() < 0.03:
            return [flag]  # its value forgotten
        return [flag, value]

    def _config(self) -> list[str]:
        """`--config FILE` with a few entries: option flags by name (`-` or `_`), an unmodelled one."""
        rng = self.rng
        lines = []
        for _ in range(rng.randint(1, 3)):
            f = self.fields[rng.choice(list(self.fields))]
            flag = next((x for x in f.all_flags if x.startswith("--") and "." not in x), None)
            if flag is None:
                continue
            key = flag[2:] if rng.random() < 0.7 else flag[2:].replace("-", "_")
            if f.flag_value != "value":
                value = rng.choice(["true", "false"])
            else:
                value = json.dumps(self._value(f)) if rng.random() < 0.5 else self._value(f) or '""'
            lines.append(f"{key}: {value}")
        if rng.random() < 0.3:
            lines.append("port: 30002" if self.launcher == "sglang" else "port: 8002")
        path = self.scratch / f"c{rng.randrange(10**9)}.yaml"
        empty = rng.random() < 0.05  # an empty file; `--config=FILE` and a prefix, never opened
        path.write_text("" if empty else "\n".join(lines) + "\n", encoding="utf-8")
        spelled = rng.choice(["--config=", "--confi"]) if rng.random() < 0.1 else "--config"
        return [f"{spelled}{path}"] if spelled.endswith("=") else [spelled, str(path)]

    def command(self) -> tuple[list[str], list[str], list[str]]:
        """(the environment words, the program words, the rest) of one typed command line."""
        rng = self.rng
        assert self.pack.launcher is not None
        launcher = self.pack.launcher
        env = [rng.choice(ENV_WORDS[self.launcher])] if rng.random() < 0.15 else []
        command = rng.choice(launcher.commands)
        program = command.split()
        if rng.random() < 0.1 and program[0].startswith("python"):
            program[0] = "/usr/bin/" + program[0]
        serve = " ".join(program[-2:]).endswith(" serve")
        groups: list[list[str]] = []
        for _ in range(rng.randint(0, 4)):
            groups.append(self._option())
        if groups and rng.random() < 0.12:  # one option again
            groups.append(rng.choice(groups) if rng.random() < 0.4 else self._option())
        for _ in range(rng.randint(0, 2)):
            groups.append(rng.choice(OTHER_FLAGS[self.launcher]))
        if rng.random() < 0.15:
            groups.append([rng.choice(self.switches)])
        if rng.random() < 0.05:
            groups.append([rng.choice(["--not-a-flag", "--tp-sizes", "--attention"])])
        if rng.random() < 0.04:
            groups.append([rng.choice(["stray", "true", "8"])])
        if rng.random() < 0.1:
            groups.append(self._config())
        rng.shuffle(groups)
        model = "/models/m" if rng.random() < 0.8 else "org/model.v2"
        if rng.random() < 0.06:  # the model given (again) by a flag
            flag = rng.choice(launcher.model_flags)
            groups.insert(rng.randint(0, len(groups)), [flag, rng.choice(["/models/other", model])])
        first: list[str] = []
        if serve and rng.random() < 0.6:
            if rng.random() < 0.9:
                first = [model]
            else:
                groups.insert(rng.randint(0, len(groups)), [model])  # positional after a flag
        else:
            flag = rng.choice(launcher.model_flags)
            groups.insert(
                rng.randint(0, len(groups)), [f"{flag}={model}"] if rng.random() < 0.2 else [flag, model]
            )
        return env, program, first + [w for g in groups for w in g]


def ours(pack: Pack, words: list[str]) -> dict[str, Any]:
    """confsolve's reading: the values the pack's fields take, the model, or the input error."""
    args = argparse.Namespace(launch=words)
    sets: dict[str, str] = {}
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # the notes on repeated flags
            model = merge_launch(args, pack, sets, None)
    except InvalidInput as exc:
        # A value the pack's domain does not hold (an issue naming what is allowed), though a
        # later word replaces it, is the pack's reading of a value, not of the command line.
        stage = "value" if all(i.allowed for i in exc.issues) else "reading"
        return {"ok": False, "stage": stage, "error": "; ".join(i.message for i in exc.issues)[:300]}
    try:
        pins = collect_pins(pack, sets)
    except InvalidInput as exc:
        return {"ok": False, "stage": "value", "error": "; ".join(i.message for i in exc.issues)[:300]}
    return {"ok": True, "model": model, "values": {n: p.value for n, p in pins.items()}}


def _norm(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


def compare(pack: Pack, mine: dict[str, Any], theirs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The kind of (dis)agreement and, for `value`, the fields read differently."""
    if not theirs["ok"] and not mine["ok"]:
        return "agree", {}
    if not theirs["ok"]:
        return "we_accept", {}
    if not mine["ok"]:
        return ("we_refuse" if mine["stage"] == "reading" else "we_refuse_value"), {}
    wrong: dict[str, Any] = {}
    for name, f in _compared(pack).items():
        got, default = theirs["values"][name], theirs["defaults"][name]
        if name in mine["values"]:
            if _norm(mine["values"][name]) != _norm(got):
                wrong[name] = {"confsolve": mine["values"][name], "launcher": got}
        elif _norm(got) != _norm(default) and not (f.auto and str(got).lower() == f.auto):
            # (the launcher's own `auto`, read as "not set", is the pack's `auto`)
            wrong[name] = {"confsolve": "unset", "launcher": got}
    if _norm(mine["model"]) != _norm(theirs["values"]["model"]):
        wrong["model"] = {"confsolve": mine["model"], "launcher": theirs["values"]["model"]}
    return ("value" if wrong else "agree"), wrong


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{text}", end="", file=sys.stderr, flush=True)


def run(launcher: str, count: int, seed: int) -> dict[str, Any]:
    python = PYTHONS[launcher]
    pack = load_pack(launcher)
    fields = {n: list(_flag_and_key(pack, f)) for n, f in _compared(pack).items()}
    assert pack.launcher is not None
    fields["model"] = [pack.launcher.model_flags[0], None]
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="argv-read-") as scratch:
        draw = Draw(launcher, pack, rng, Path(scratch))
        cases = [draw.command() for _ in range(count)]
        started = time.monotonic()
        feed = "".join(json.dumps({"program": p, "argv": a, "fields": fields}) + "\n" for _, p, a in cases)
        jobs = Path(scratch) / "jobs.jsonl"
        jobs.write_text(feed, encoding="utf-8")
        errors = Path(scratch) / "stderr.txt"
        with jobs.open(encoding="utf-8") as stdin, errors.open("w", encoding="utf-8") as stderr:
            side = subprocess.Popen(
                [str(python), str(ROOT / "benchmarks" / "launcher_parse.py"), launcher],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            assert side.stdout is not None
            theirs = []
            for line in side.stdout:
                if line.startswith("{"):
                    theirs.append(json.loads(line))
                    _progress(f"{launcher}: {len(theirs)}/{count} read by the launcher")
            side.wait()
        seconds = time.monotonic() - started
        if len(theirs) != len(cases):
            tail = errors.read_text(encoding="utf-8")[-2000:]
            raise RuntimeError(f"{launcher} side answered {len(theirs)} of {len(cases)}: {tail}")
        kinds: Counter[str] = Counter()
        found = []
        for (env, program, argv), verdict in zip(cases, theirs, strict=True):
            mine = ours(pack, [*env, *program, *argv])
            kind, wrong = compare(pack, mine, verdict)
            kinds[kind] += 1
            if kind != "agree":
                line = " ".join(json.dumps(w) if (not w or " " in w) else w for w in [*env, *program, *argv])
                entry: dict[str, Any] = {"kind": kind, "command": line}
                if kind == "value":
                    entry["fields"] = wrong
                else:
                    entry["confsolve"] = mine.get("error", "accepts")
                    entry["launcher"] = verdict.get("error", "accepts")
                if "--config" in argv:
                    entry["config"] = Path(argv[argv.index("--config") + 1]).read_text(encoding="utf-8")
                known = _known(entry, [k for _, k in fields.values() if k])
                if known is not None:
                    entry["known"] = known
                found.append(entry)
    _progress("")
    return {
        "launcher": f"{pack.name} {pack.version}",
        "commands": count,
        "agree": kinds["agree"],
        "value": kinds["value"],
        "we_accept": kinds["we_accept"],
        "we_refuse": kinds["we_refuse"],
        "we_refuse_value": kinds["we_refuse_value"],
        "known": sum(1 for d in found if "known" in d),
        "new": sum(1 for d in found if "known" not in d and d["kind"] != "we_refuse_value"),
        "launcher_refused": sum(1 for v in theirs if not v["ok"]),
        "launcher_seconds": round(seconds, 1),
        "disagreements": found,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launcher", choices=("sglang", "vllm", "both"), default="both")
    parser.add_argument("--count", type=int, default=400, help="command lines per launcher (default 400)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--show", type=int, default=15, help="disagreements to print per launcher")
    args = parser.parse_args(argv)
    launchers = ["sglang", "vllm"] if args.launcher == "both" else [args.launcher]
    results, missing = [], []
    for launcher in launchers:
        if not PYTHONS[launcher].exists():
            missing.append(launcher)
            print(f"argv_read_oracle: no {launcher} oracle python at {PYTHONS[launcher]}", file=sys.stderr)
            continue
        results.append(run(launcher, args.count, args.seed))
    if args.json:
        print(json.dumps(results, indent=2))
    for r in [] if args.json else results:
        print(
            f"{r['launcher']}: {r['agree']}/{r['commands']} command lines read as the launcher reads them "
            f"(seed {args.seed}; the launcher refused {r['launcher_refused']}); disagreements: "
            f"{r['value']} value, {r['we_accept']} confsolve accepts what the launcher refuses, "
            f"{r['we_refuse']} confsolve refuses what the launcher reads; "
            f"{r['we_refuse_value']} values the launcher's parser takes and the pack's domain does not "
            f"(the launcher checks them later, or never); launcher side {r['launcher_seconds']} s"
        )
        print(f"  {r['known']} of them known and left (each with its reason), {r['new']} new")
        shown = sorted(r["disagreements"], key=lambda d: ("known" in d, d["kind"] == "we_refuse_value"))
        for d in shown[: args.show]:
            print("  " + json.dumps(d))
    failed = any(r["value"] or r["new"] for r in results)
    return 2 if missing and not results else int(failed)


if __name__ == "__main__":
    sys.exit(main())
