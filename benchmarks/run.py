"""confsolve's performance harness: medians and spreads, printed as a table and saved as JSON.

    .venv/bin/python benchmarks/run.py                      # everything (several minutes)
    .venv/bin/python benchmarks/run.py --only resolve,cli   # some sections
    .venv/bin/python benchmarks/run.py --sizes 100,1000     # a smaller scaling run

Sections: `load` (pack load and compile, cold process vs cached), `resolve` (the SGLang oracle
scenarios and case files that resolve, warm, with and without minimal reasons), `explain` (impossible
requests: conflict and repairs), `choices` (valid choices for every option), `count` (exact
counts, if solver/engine/count.py exists), `cli` (whole processes against `python -c pass`), `synthetic`
(seeded packs of 100 / 1,000 / 5,000 fields and the fitted growth exponents; lint on 100 / 200 /
400 fields, `--lint-sizes`).

Times are wall-clock (`time.perf_counter`) in ms; each in-process row is the distribution over its
requests of the per-request median of `--repeat` runs after one warm-up run (resolve: steady
state, over `--rounds` rounds, each with its warm-up, and the first calls a row apart); the CPU time column is
the same in process CPU time (steadier on a shared machine). A call that runs past `--cap` seconds
is stopped and counted under `timeouts`. Not part of the test suite: `pytest` never collects it.
Results go to benchmarks/results/latest.json (and `<label>.json` with `--label`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import solver  # noqa: E402

API_EXPLAIN = solver.explain

from timing import Deadline, Stat, bare_python, deadline, fmt_ms, time_call, with_bytecode  # noqa: E402
from workload import Request, case_requests, classify, impossible_from, oracle_requests  # noqa: E402

SECTIONS = ("load", "resolve", "explain", "choices", "count", "cli", "synthetic")
TARGETS = {
    "resolve, reasons=True": 5.0,
    "resolve, reasons=False": 5.0,
    "explain (conflict + repairs)": 50.0,
    "valid_choices: no input": 50.0,
    "valid_choices: one fact": 50.0,
    "valid_choices: click path, reasons=False": 150.0,
    "valid_choices: conflict, reasons": 300.0,
    "synthetic 1000: resolve": 500.0,
    # (issue #18's scale rows: CPU time, and growth <= n^1.3 for choices over 100 / 1,000 / 5,000)
    "synthetic 5000: explain + repairs": 2000.0,
    "synthetic 5000: valid_choices, reasons": 5000.0,
}
CHECK_ARGS = [
    "--set",
    "platform=cuda",
    "--set",
    "gpu_arch=sm90",
    "--set",
    "architecture=LlamaForCausalLM",
    "--set",
    "tp_size=8",
]
RESOLVE_ARGS = [
    "--set",
    "platform=cuda",
    "--set",
    "gpu_arch=sm100",
    "--set",
    "architecture=DeepseekV3ForCausalLM",
    "--set",
    "checkpoint_quant=fp8",
    "--set",
    "tp_size=8",
    "--json",
]


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[Stat] = []
        self.extra: dict[str, Any] = {}
        self._pack: Any = None
        self._sets: tuple[list[Request], list[Request]] | None = None

    # -- shared ----------------------------------------------------------------------------
    def pack(self) -> Any:
        if self._pack is None:
            from solver import load_pack
            from solver.reasoning.resolution import plan_for

            self._pack = load_pack("sglang")
            plan_for(self._pack)
        return self._pack

    def request_sets(self) -> tuple[list[Request], list[Request]]:
        """(resolvable, impossible) SGLang requests, classified once by running them."""
        if self._sets is None:
            pack = self.pack()
            requests = list(oracle_requests(pack)) + list(case_requests("sglang"))
            ok: list[Request] = []
            bad: list[Request] = []
            for req in requests:
                try:
                    with deadline(self.args.cap):
                        good, wrong = classify(pack, [req])
                except Deadline:  # only refutations run long: count it as impossible
                    good, wrong = [], [req]
                ok += good
                bad += wrong
            if len(bad) < self.args.impossible:
                bad += impossible_from(pack, ok, self.args.impossible - len(bad))
            self._sets = (ok, bad)
            self.extra["requests"] = {
                "resolvable": len(ok),
                "impossible": len(bad),
                "oracle_and_cases": len(requests),
            }
        return self._sets

    def add(self, stat: Stat) -> None:
        self.rows.append(stat)
        s = stat.summary()
        print(
            f"  {stat.name:<44} n={s['n']:<4} median {fmt_ms(s.get('median')):>8} "
            f"p10 {fmt_ms(s.get('p10')):>8} p90 {fmt_ms(s.get('p90')):>8} "
            f"cpu {fmt_ms(s.get('cpu_median')):>8} p90 {fmt_ms(s.get('cpu_p90')):>8}"
            + (f"  timeouts {stat.timeouts}" if stat.timeouts else ""),
            flush=True,
        )

    def measure(self, name: str, calls: list[Any], repeat: int, note: str = "") -> tuple[Stat, list[Any]]:
        """One row: per call, the median of its runs; a single call keeps every run as a sample."""
        stat = Stat(name, note=note)
        results = []
        for call in calls:
            wall, cpu, result = time_call(call, repeat=repeat, cap=self.args.cap)
            results.append(result)
            if wall is None or cpu is None:
                stat.timeouts += 1
            elif len(calls) == 1:
                stat.samples += wall
                stat.cpu += cpu
            else:
                stat.samples.append(statistics.median(wall))
                stat.cpu.append(statistics.median(cpu))
        self.add(stat)
        return stat, results

    # -- sections --------------------------------------------------------------------------
    def load(self) -> None:
        print("load and compile")
        script = (
            "import json, time\n"
            "t0 = time.perf_counter()\n"
            "from solver import load_pack\n"
            "from solver.reasoning.resolution import plan_for\n"
            "t1 = time.perf_counter()\n"
            "p = load_pack('sglang')\n"
            "t2 = time.perf_counter()\n"
            "plan_for(p)\n"
            "t3 = time.perf_counter()\n"
            "print(json.dumps([t1 - t0, t2 - t1, t3 - t2]))\n"
        )
        for label, warm_cache in (("no disk cache", False), ("disk cache warm", True)):
            parts: list[list[float]] = [[], [], []]
            with tempfile.TemporaryDirectory() as cache:
                for i in range(self.args.runs + 1):
                    env = dict(os.environ)
                    env["XDG_CACHE_HOME"] = cache if warm_cache else tempfile.mkdtemp(dir=cache)
                    out = subprocess.run(
                        [sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True
                    ).stdout
                    if i == 0 and warm_cache:
                        continue  # the first run fills the cache
                    for j, value in enumerate(json.loads(out)):
                        parts[j].append(value * 1e3)
            for j, what in enumerate(("import solver", "load_pack('sglang')", "compile (plan_for)")):
                self.add(Stat(f"cold process, {label}: {what}", parts[j]))
        from solver import load_pack
        from solver.reasoning.resolution import plan_for

        pack = self.pack()
        self.measure("load_pack, in process, cached", [lambda: load_pack("sglang")], 20)
        self.measure("plan_for, in process, cached", [lambda: plan_for(pack)], 20)

    def resolve(self) -> None:
        """Steady state, said so: a request's time is the median of its timed runs, and each
        round over the requests runs every request once untimed first, so its own caches are
        warm (the facts' state, its rankings, the pack's answer tables). `--rounds` rounds, the
        two rows' rounds alternating: a stretch of load on the shared machine (a second or two)
        then falls on one round of each row, which the median over rounds drops, where one
        pass per row put all of a row's runs of a request in the same second (the first row
        of the Dec 5 14:00 run: p90 2.30 ms, the second 1.54, later runs 1.42-1.44). The first
        call of each request (the first row's first run: caches warm from the requests before
        it, not from itself) is a row of its own; a process's very first request is the `cli`
        section's `check`."""
        from solver.reasoning.resolution import resolve

        pack = self.pack()
        ok, _ = self.request_sets()
        rounds = max(1, self.args.rounds)
        per_round = max(1, math.ceil(self.args.repeat / rounds))
        print(
            f"resolve: {len(ok)} SGLang requests that resolve; {rounds} rounds of one warm-up and "
            f"{per_round} timed runs per request, the rows' rounds alternating"
        )
        rows = (False, True)
        stats = {r: Stat(f"resolve, reasons={r}", note="steady state: own caches warm") for r in rows}
        # (Only the first row's: the second row's first call comes after the first row's runs
        # of the same request.)
        first = Stat("resolve, reasons=False: first call", note="caches warm from other requests")
        wall: dict[bool, list[list[float]]] = {r: [[] for _ in ok] for r in rows}
        cpu: dict[bool, list[list[float]]] = {r: [[] for _ in ok] for r in rows}
        capped: set[tuple[bool, int]] = set()  # ran past the cap once: counted under timeouts
        for n in range(rounds):
            for reasons in rows:
                for i, r in enumerate(ok):

                    def call(r: Request = r, reasons: bool = reasons) -> Any:
                        return resolve(pack, r.options, r.facts, strict=r.strict, reasons=reasons)

                    if (reasons, i) in capped:
                        continue
                    warm = 1
                    if n == 0 and reasons == rows[0]:
                        w1, c1, _ = time_call(call, repeat=1, warmup=0, cap=self.args.cap)
                        if w1 is not None and c1 is not None:
                            first.samples += w1
                            first.cpu += c1
                            warm = 0
                    w, c, _ = time_call(call, repeat=per_round, warmup=warm, cap=self.args.cap)
                    if w is None or c is None:
                        capped.add((reasons, i))
                        stats[reasons].timeouts += 1
                        continue
                    wall[reasons][i] += w
                    cpu[reasons][i] += c
        for reasons in rows:
            stat = stats[reasons]
            for i, (w, c) in enumerate(zip(wall[reasons], cpu[reasons], strict=True)):
                if w and (reasons, i) not in capped:
                    stat.samples.append(statistics.median(w))
                    stat.cpu.append(statistics.median(c))
            self.add(stat)
        self.add(first)

    def explain(self) -> None:
        pack = self.pack()
        _, bad = self.request_sets()
        print(f"explain: {len(bad)} impossible SGLang requests")
        calls = [lambda r=r: API_EXPLAIN(pack, r.options, r.facts, strict=r.strict) for r in bad]
        self.measure("explain (conflict + repairs)", calls, max(1, self.args.repeat // 2))

    def choices(self) -> None:
        """Valid choices as a configurator page asks them: each question the first of its kind
        (no repeat), since a repeat would be answered from what the first one stored.

        Cold: the first question on a freshly compiled pack. Prepared: after `prepare_choices`
        (what a server does once at start), a page that opens with no input, then one fact per
        value of `platform`, then click paths that add the pins of realistic requests one at a
        time, then conflicting requests with a minimal reason per excluded value."""
        from solver.reasoning.diagnose import prepare_choices, valid_choices
        from solver.reasoning.resolution import plan_for

        pack = self.pack()
        cp = plan_for(pack).compiled
        ok, bad = self.request_sets()

        def fresh() -> None:
            cp.memo.pop("supports", None)

        def once(stat: Stat, call: Any) -> None:
            wall, cpu, _ = time_call(call, repeat=1, warmup=0, cap=self.args.cap)
            if wall is None or cpu is None:
                stat.timeouts += 1
            else:
                stat.samples += wall
                stat.cpu += cpu

        print(f"valid choices: every option ({len(pack.options)}), each question asked once")
        cold = {
            k: Stat(f"valid_choices cold: {k}") for k in ("no input", "platform=cuda", "conflict, reasons")
        }
        conflict = bad[0] if bad else None
        for _ in range(max(1, self.args.runs // 3)):
            fresh()
            once(cold["no input"], lambda: valid_choices(pack, {}, {}))
            fresh()
            once(cold["platform=cuda"], lambda: valid_choices(pack, {}, {"platform": "cuda"}))
            if conflict is not None:
                fresh()
                once(cold["conflict, reasons"], lambda r=conflict: valid_choices(pack, r.options, r.facts))
        for stat in cold.values():
            self.add(stat)
        prepared = Stat("prepare_choices (once per pack)")
        for _ in range(max(1, self.args.runs // 3)):
            fresh()
            once(prepared, lambda: prepare_choices(pack))
        self.add(prepared)
        # The questions below are the page's: after the server's own preparation, which also
        # freezes the heap it keeps (solver.serve.api.prepare; the library's call does not).
        from solver.serve.api import prepare

        self.extra["supports_kept"] = prepare(pack)
        rows = {
            k: Stat(f"valid_choices: {k}")
            for k in (
                "no input",
                "one fact",
                "click path, reasons=False",
                "click path, reasons",
                "conflict, reasons",
            )
        }
        once(rows["no input"], lambda: valid_choices(pack, {}, {}))
        for value in cp.domains["platform"]:
            once(rows["one fact"], lambda v=value: valid_choices(pack, {}, {"platform": v}))
        picked = ok[:: max(1, len(ok) // 24)][:24]
        for i, req in enumerate(picked):
            reasons = i % 2 == 1
            row = rows["click path, reasons" if reasons else "click path, reasons=False"]
            facts: dict[str, Any] = {}
            options: dict[str, Any] = {}
            for name, value in [*req.facts.items(), *req.options.items()]:
                (facts if name in req.facts else options)[name] = value
                once(
                    row,
                    lambda o=dict(options), f=dict(facts), r=reasons: valid_choices(pack, o, f, reasons=r),
                )
        for req in bad:
            once(rows["conflict, reasons"], lambda r=req: valid_choices(pack, r.options, r.facts))
        for stat in rows.values():
            self.add(stat)

    def count(self) -> None:
        """Exact counts, each stopped at `--cap` seconds: a count cut short says so with its
        exact bounds (`CountLimitReached.lower` / `.upper`)."""
        from solver.engine.count import CountLimitReached, Limit, count

        pack = self.pack()
        combos = [
            {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"},
            {"platform": "hip", "gpu_arch": "gfx942", "architecture": "LlamaForCausalLM"},
            {"platform": "cuda", "gpu_arch": "sm90"},
            {"platform": "cuda"},
            {},
        ]
        print(f"count (each stopped at {self.args.cap:g} s)")
        counts: dict[str, Any] = {}
        for combo in combos:
            name = "count " + (",".join(f"{k}={v}" for k, v in combo.items()) or "whole pack")
            limit = Limit(steps=None, seconds=self.args.cap)
            stat = Stat(name)
            start, cpu = time.perf_counter(), time.process_time()
            try:
                found: Any = count(pack, combo, limit=limit).count
            except CountLimitReached as stop:
                found = {"stopped_at_s": self.args.cap, "lower": str(stop.lower), "upper": str(stop.upper)}
                stat.timeouts = 1
            else:
                stat.samples.append((time.perf_counter() - start) * 1e3)
                stat.cpu.append((time.process_time() - cpu) * 1e3)
            counts[json.dumps(combo)] = found if not isinstance(found, int) else str(found)
            stat.note = f"count = {counts[json.dumps(combo)]}"
            self.add(stat)
        self.extra["counts"] = counts

    def cli(self) -> None:
        """Whole processes, wall time and the CPU time of the child (steadier on a shared machine):
        the cold start of `confsolve` over the interpreter's own (`python -c pass`)."""
        import resource

        print(f"CLI cold start: {self.args.runs} runs each, interleaved")
        # As installed (pip writes the bytecode at install time): compiled by main (with_bytecode).
        script = Path(sys.executable).parent / "confsolve"
        # `--cli module` runs `python -m solver` instead, for a checkout on PYTHONPATH.
        exe = [str(script)] if self.args.cli == "script" else [sys.executable, "-m", "solver"]
        floors = tempfile.TemporaryDirectory()
        commands = {
            # The floor is an environment with nothing installed (an editable install's finder
            # runs at every start of this one: see timing.bare_python).
            "python -c pass (floor)": [bare_python(floors.name), "-c", "pass"],
            "confsolve --help": [*exe, "--help"],
            "confsolve check": [*exe, "check", *CHECK_ARGS],
            "confsolve resolve --json": [*exe, "resolve", *RESOLVE_ARGS],
        }

        def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            code = subprocess.run(cmd, env=env, capture_output=True).returncode
            wall = (time.perf_counter() - start) * 1e3
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3
            return wall, cpu, code

        stats = {k: Stat(k) for k in [*commands, "confsolve check, empty disk cache"]}
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "XDG_CACHE_HOME": cache}
            for name, cmd in commands.items():  # warm the page cache and the disk cache once
                code = run(cmd, env)[2]
                if code != 0:  # a command that fails fast would look like a fast start
                    print(f"  warning: {name} exits {code}")
                    self.extra.setdefault("cli_failures", {})[name] = code
            for _ in range(self.args.runs):
                for name, cmd in commands.items():
                    wall, cpu, _ = run(cmd, env)
                    stats[name].samples.append(wall)
                    stats[name].cpu.append(cpu)
                empty = {**os.environ, "XDG_CACHE_HOME": tempfile.mkdtemp(dir=cache)}
                wall, cpu, _ = run(commands["confsolve check"], empty)
                stats["confsolve check, empty disk cache"].samples.append(wall)
                stats["confsolve check, empty disk cache"].cpu.append(cpu)
        floors.cleanup()
        for stat in stats.values():
            self.add(stat)
        floor = stats["python -c pass (floor)"]
        self.extra["cli_over_floor_ms"] = {
            name: statistics.median(stat.samples) - statistics.median(floor.samples)
            for name, stat in stats.items()
        }
        self.extra["cli_cpu_over_floor_ms"] = {
            name: statistics.median(stat.cpu) - statistics.median(floor.cpu) for name, stat in stats.items()
        }
        for label, key in (("wall", "cli_over_floor_ms"), ("cpu", "cli_cpu_over_floor_ms")):
            print(
                f"  over the floor ({label}): "
                + ", ".join(f"{k} +{v:.0f} ms" for k, v in self.extra[key].items() if "floor" not in k)
            )

    def synthetic(self) -> None:
        import importlib.util

        import synthetic as syn

        from solver.errors import SolverError
        from solver.pack.loader import load_directory
        from solver.reasoning.resolution import plan_for, resolve

        has_lint = importlib.util.find_spec("solver.lint.checks") is not None
        # Cold numbers: the on-disk pack cache would otherwise serve a pack seen in an earlier run.
        os.environ["CONFSOLVE_NO_CACHE"] = "1"
        sizes = [int(s) for s in self.args.sizes.split(",") if s]
        print(f"synthetic packs: {sizes}")
        # Per row and size: CPU time where it was measured (the machine is shared: CPU is what
        # the growth is fitted on), else wall; wall times and the load beside them.
        table: dict[str, dict[int, float | None]] = {}
        walls: dict[str, dict[int, float | None]] = {}
        loads: dict[int, tuple[float, float, float]] = {}

        def record(what: str, size: int, value: float | None, cpu: float | None = None) -> None:
            table.setdefault(what, {})[size] = cpu if cpu is not None else value
            walls.setdefault(what, {})[size] = value
            self.add(
                Stat(
                    f"synthetic {size}: {what}",
                    [] if value is None else [value],
                    [] if cpu is None else [cpu],
                    timeouts=int(value is None),
                )
            )

        for size in sizes:
            loads[size] = os.getloadavg()
            print(f"  load average at {size} fields: {loads[size][0]:.1f}")
            spec = syn.generate(size, seed=self.args.seed)
            with tempfile.TemporaryDirectory() as tmp:
                directory = syn.write(spec, Path(tmp) / f"syn{size}")
                start = time.perf_counter()
                pack = load_directory(directory)
                record("load", size, (time.perf_counter() - start) * 1e3)
            start = time.perf_counter()
            try:
                with deadline(self.args.cap * 4):
                    plan_for(pack)
                record("compile (plan_for)", size, (time.perf_counter() - start) * 1e3)
            except Deadline:
                record("compile (plan_for)", size, None)
                continue
            options, facts = syn.resolvable_request(spec, self.args.seed)
            bad_options, bad_facts = syn.impossible_request(spec, self.args.seed)
            repeat = 3 if size <= 1000 else 1
            for reasons in (False, True):
                wall, cpu, result = time_call(
                    lambda p=pack, o=options, f=facts, r=reasons: resolve(p, o, f, reasons=r),
                    repeat=repeat,
                    cap=self.args.cap,
                )
                if isinstance(result, SolverError):
                    print(f"  resolve failed: {result}")
                    wall = cpu = None
                record(f"resolve, reasons={reasons}", size, _median(wall), _median(cpu))
            # Explain: the median of three calls at 5,000 fields too. One call was timed there,
            # and a full collection of the heap (~0.4 s of a ~1.5 s call), due as much from the
            # rows before as from the call, fell in it or not by the process's allocation count:
            # round 19's 0.83-1.09 against 1.48-1.90 s was mostly that (benchmarks/README.md,
            # Explain, round explain20). At most one call in three pays one: a call promotes
            # 25,000-71,000 objects; one falls due at a quarter of the heap (120,000-190,000).
            wall, cpu, result = time_call(
                lambda p=pack, o=bad_options, f=bad_facts: API_EXPLAIN(p, o, f),
                repeat=3,
                cap=self.args.cap,
            )
            ok = isinstance(result, solver.Unsatisfiable) and bool(result.repairs)
            record("explain + repairs", size, _median(wall) if ok else None, _median(cpu) if ok else None)
            # Choices: the first question on the compiled pack (no solutions kept from earlier
            # ones), as a page's first click after the pack is loaded.
            from solver.reasoning.diagnose import valid_choices

            def first_choices(p: Any = pack, o: Any = options, f: Any = facts) -> Any:
                plan_for(p).compiled.memo.pop("supports", None)
                return valid_choices(p, o, f)

            wall, cpu, result = time_call(first_choices, repeat=1, warmup=0, cap=self.args.cap * 4)
            ok = hasattr(result, "possible")
            cpu_ms = _median(cpu) if ok else None
            record("valid_choices, reasons", size, _median(wall) if ok else None, cpu_ms)
        # Lint answers thousands of questions (one or more per value, rule and preference, each
        # a search over the pack), so it is measured on its own, smaller sizes: enough points
        # for a growth exponent in minutes, not hours.
        lint_sizes = [int(s) for s in self.args.lint_sizes.split(",") if s] if has_lint else []
        for size in lint_sizes:
            from solver.lint.checks import lint

            spec = syn.generate(size, seed=self.args.seed)
            with tempfile.TemporaryDirectory() as tmp:
                pack = load_directory(syn.write(spec, Path(tmp) / f"syn{size}"))
            plan_for(pack)
            wall, _, report = time_call(lambda p=pack: lint(p), repeat=1, warmup=0, cap=self.args.lint_cap)
            record("lint", size, _median(wall))
            if wall and hasattr(report, "findings"):
                print(f"    ({len(report.findings)} findings)")
        if not has_lint:
            self.extra["lint"] = "skipped: solver/lint/checks.py not found"
        exponents: dict[str, float | None] = {}
        at_least: list[str] = []
        for what, by_size in table.items():
            # A size that ran past the cap counts as taking the cap: the fit is then a lower bound.
            cap_ms = (self.args.lint_cap if what == "lint" else self.args.cap) * 1e3
            points = [(math.log(n), math.log(t if t else cap_ms)) for n, t in by_size.items()]
            exponents[what] = _slope(points) if len(points) >= 2 else None
            if any(t is None for t in by_size.values()):
                at_least.append(what)
        self.extra["synthetic"] = {
            "sizes": sizes,
            "lint_sizes": lint_sizes,
            "ms": table,
            "ms_wall": walls,
            "loadavg": loads,
            "growth_exponent": exponents,
            "exponent_is_lower_bound": at_least,
        }
        print(
            "  growth exponents (CPU where measured; log-log least squares; >= where a size hit the cap): "
            + ", ".join(
                f"{k} {'>=' if k in at_least else ''}{v:.2f}" for k, v in exponents.items() if v is not None
            )
        )

    # -- output ----------------------------------------------------------------------------
    def save(self, started: float) -> Path:
        out_dir = HERE / "results"
        out_dir.mkdir(exist_ok=True)
        doc = {
            "label": self.args.label,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "seconds": round(time.time() - started, 1),
            "machine": {
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "loadavg_start": self.extra.pop("load_start"),
                "loadavg_end": os.getloadavg(),
            },
            "settings": {
                "repeat": self.args.repeat,
                "runs": self.args.runs,
                "cap_s": self.args.cap,
                "sizes": self.args.sizes,
                "lint_sizes": self.args.lint_sizes,
                "seed": self.args.seed,
            },
            "targets_ms": TARGETS,
            "rows": [row.summary() for row in self.rows],
            **self.extra,
        }
        path = out_dir / "latest.json"
        path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
        if self.args.label:
            (out_dir / f"{self.args.label}.json").write_text(path.read_text())
        return path


def _median(samples: list[float] | None) -> float | None:
    return statistics.median(samples) if samples else None


def _slope(points: list[tuple[float, float]]) -> float:
    mx = statistics.fmean(p[0] for p in points)
    my = statistics.fmean(p[1] for p in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections: {', '.join(SECTIONS)}"
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per request (after 1 warm-up)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="resolve: rounds over the requests, each a warm-up and --repeat/--rounds timed runs per request",
    )
    parser.add_argument("--runs", type=int, default=10, help="runs per CLI command / cold load")
    parser.add_argument("--cap", type=float, default=30.0, help="seconds before one call is stopped")
    parser.add_argument("--sizes", default="100,1000,5000", help="synthetic pack sizes (fields)")
    parser.add_argument(
        "--lint-sizes", default="100,200,400", help="synthetic pack sizes (fields) that lint is timed on"
    )
    parser.add_argument(
        "--lint-cap", type=float, default=600.0, help="seconds before one lint run is stopped"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--impossible", type=int, default=24, help="at least this many impossible requests")
    parser.add_argument(
        "--cli",
        choices=["script", "module"],
        default="script",
        help="run the `confsolve` script or `python -m solver`",
    )
    parser.add_argument("--label", default="", help="also save results/<label>.json")
    args = parser.parse_args()
    unknown = set(args.only.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}")
    started = time.time()
    bench = Bench(args)
    bench.extra["bytecode"] = with_bytecode(HERE.parent)  # before any section imports or times
    print(bench.extra["bytecode"])
    bench.extra["load_start"] = os.getloadavg()
    for section in SECTIONS:
        if section in args.only.split(","):
            getattr(bench, section)()
    path = bench.save(started)
    print(f"\nwrote {path.relative_to(HERE.parent)}")
    print(f"\n{'benchmark':<52} {'median':>9} {'p10':>9} {'p90':>9} {'target':>8}")
    for row in bench.rows:
        s = row.summary()
        target = TARGETS.get(row.name)
        print(
            f"{row.name:<52} {fmt_ms(s.get('median')):>9} {fmt_ms(s.get('p10')):>9} "
            f"{fmt_ms(s.get('p90')):>9} {fmt_ms(target) if target else '':>8}"
            + (f"  ({row.timeouts} over {args.cap:g} s)" if row.timeouts else "")
        )


if __name__ == "__main__":
    main()
