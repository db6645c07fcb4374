"""Two ways to count the SGLang pack's configurations, timed side by side on the same queries.

    .venv/bin/python benchmarks/count_methods.py                 # default queries, 120 s cap each
    .venv/bin/python benchmarks/count_methods.py --cap 600 --whole

1. confsolve's `count` (`solver.engine.count`, since round countfast `solver.engine.diagrams`):
   each rule compiled once per pack to a decision diagram (timed apart, "rules compiled"), then a
   search over the rules' residual diagrams with independent components and component caching;
   a time limit answers with exact bounds. Since round perfcount9 "confsolve" is a first `count`
   in a process with nothing kept (its default step limit: a search, and past SEARCH_FIRST steps
   the whole pack's compile and a pass) and "search" the search alone (the count before), both
   in steps and CPU seconds; "search" is capped by `--cap` (wall), "confsolve" by steps only.
1c. `--only compiled` or `all`: the compiled count (`solver.engine.ddnnf`) timed apart: the whole
   pack's compile (CPU, steps, nodes, arms, bytes unpacked and zlib-packed as kept on disk, the
   CPU to read it back), then per query a pass from the bytes as a new process finds them
   ("compiled_cpu_s": unpack, read, pass), the same pass again, and splits by `gpu_arch` and
   `quantization` (one pass down, and one count per value to check it).
1b. `--only modelcounter` or `all`: `ModelCounter` (`solver.engine.modelcounter`), the counter
   `count` used before (propagation and components over condition evaluation), same limit.
2. Ganak (`pip install pyganak`, not a dependency of confsolve), an exact #SAT counter, on a CNF
   encoding of the pack: one Boolean per field value, exactly one value per field (pairwise), and
   per hard rule one clause per smallest partial assignment that three-valued evaluation finds
   false (found by branching over the rule's fields in order). The encoding's time is reported
   apart from the count's.
3. `--encoding compact`: the same counter on a smaller CNF: the branching groups a field's values
   whose sub-branches forbid the same things, and one clause per group says "this field is one of
   the other values, or ..." (a few thousand clauses instead of hundreds of thousands).
4. Variable elimination (`benchmarks/count_ve.py`): sparse bucket elimination on a min-fill order,
   from the same propagated start as confsolve's counter; skipped (with its dense estimate) where
   the largest table is above 10^`--ve-cap` cells.

Every row also gives the query's primal graph (free fields linked by an open rule): its induced
width and the largest table of a dense elimination on the min-fill order (log10 cells).

All must give the same number where they finish; the script says when they differ. The winner
is what `solver.engine.count` should use; see benchmarks/README.md for the last run. Results go to
benchmarks/results/count-methods.json with the machine's load.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

QUERIES: list[dict[str, Any]] = [
    {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"},
    {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"},
    {"platform": "cuda", "gpu_arch": "sm90"},
    {"platform": "cuda"},
]


def encode(pack: Any) -> tuple[dict[tuple[str, str, Any], int], list[list[int]]]:
    """The pack's hard rules as CNF over one variable per field value (see the module text)."""
    from solver.engine.csp import compile_pack

    cp = compile_pack(pack)
    var, clauses = encode_fields(cp.domains)

    def lit(name: str, value: Any) -> int:
        return var[(name, type(value).__name__, value)]

    for rule in cp.rules.values():
        cond, fields = rule.condition, rule.fields
        known: dict[str, Any] = {}

        def branch(
            at: int, cond: Any = cond, fields: tuple[str, ...] = fields, known: dict[str, Any] = known
        ) -> None:
            verdict = cond.partial(known)
            if verdict is True:
                return
            if verdict is None and at == len(fields):
                verdict = cond.holds(tuple(known[f] for f in fields))
                if verdict:
                    return
            if verdict is False or at == len(fields):
                clauses.append([-lit(f, v) for f, v in known.items()])
                return
            name = fields[at]
            for value in cp.domains[name]:
                known[name] = value
                branch(at + 1)
                del known[name]

        branch(0)
    return var, clauses


def encode_compact(pack: Any) -> tuple[dict[tuple[str, str, Any], int], list[list[int]]]:
    """Method 3's CNF (see the module text); same variables as `encode`."""
    from solver.engine.csp import compile_pack

    cp = compile_pack(pack)
    var, clauses = encode_fields(cp.domains)
    for rule in cp.rules.values():
        cond, fields, known = rule.condition, rule.fields, {}

        def forbidden(at: int, cond: Any = cond, fields: Any = fields, known: dict[str, Any] = known) -> Any:
            verdict = cond.partial(known)
            if verdict is None and at == len(fields):
                verdict = cond.holds(tuple(known[f] for f in fields))
            if verdict is not None:
                return frozenset() if verdict else frozenset([frozenset()])
            name = fields[at]
            groups: dict[Any, list[Any]] = {}
            for value in cp.domains[name]:
                known[name] = value
                groups.setdefault(forbidden(at + 1), []).append(value)
                del known[name]
            out: set[frozenset[int]] = set()
            for sub, values in groups.items():
                others = frozenset(
                    var[(name, type(v).__name__, v)] for v in cp.domains[name] if v not in values
                )
                out.update(clause | others for clause in sub)
            return frozenset(out)

        clauses += [sorted(clause) for clause in forbidden(0)]
    return var, clauses


def encode_fields(
    domains: dict[str, Any],
) -> tuple[dict[tuple[str, str, Any], int], list[list[int]]]:
    """One variable per field value, and exactly one value per field."""
    var: dict[tuple[str, str, Any], int] = {}
    for name, domain in domains.items():
        for value in domain:
            var[(name, type(value).__name__, value)] = len(var) + 1
    clauses: list[list[int]] = []
    for name, domain in domains.items():
        lits = [var[(name, type(v).__name__, v)] for v in domain]
        clauses.append(lits)
        clauses += [[-a, -b] for a, b in itertools.combinations(lits, 2)]
    return var, clauses


def _ganak(clauses: list[list[int]], nvars: int, units: list[int], out: Any) -> None:
    import pyganak

    counter = pyganak.Counter()
    counter.new_vars(nvars)
    counter.add_clauses(clauses)
    for unit in units:
        counter.add_clause([unit])
    start = time.process_time()
    out.put((counter.count(), time.process_time() - start))


def ganak_count(
    clauses: list[list[int]], nvars: int, units: list[int], cap: float
) -> tuple[int | None, float, float | None]:
    """(count or None past the cap, wall seconds, CPU seconds of the counter) in a child process
    (Ganak cannot be interrupted from Python)."""
    queue: Any = multiprocessing.Queue()
    child = multiprocessing.Process(target=_ganak, args=(clauses, nvars, units, queue))
    start = time.perf_counter()
    child.start()
    child.join(cap)
    wall = time.perf_counter() - start
    if child.is_alive():
        child.kill()
        child.join()
        return None, wall, None
    number, cpu = queue.get()
    return int(number), wall, cpu


def compile_report(pack: Any) -> dict[str, Any]:
    """The whole pack's compiled count (`solver.engine.ddnnf`): compile CPU and steps, nodes and
    arms, bytes unpacked and packed (as kept on disk), and the CPU to read it back."""
    import zlib

    from solver.engine import count as count_module
    from solver.engine.ddnnf import CompiledCount, compile_count
    from solver.engine.diagrams import DiagramCounter

    counter = count_module._counter(pack)
    assert isinstance(counter, DiagramCounter)
    cpu = time.process_time()
    compiled = compile_count(counter)
    compile_cpu = time.process_time() - cpu
    cpu = time.process_time()
    packed = zlib.compress(compiled.to_bytes(), 1)
    write_cpu = time.process_time() - cpu
    loads = []
    for _ in range(3):
        cpu = time.process_time()
        CompiledCount.from_bytes(zlib.decompress(packed))
        loads.append(time.process_time() - cpu)
    report = {
        "compile_cpu_s": compile_cpu,
        "compile_steps": compiled.steps,
        "nodes": len(compiled.records),
        "arms": sum(len(arms) for _, _, _, arms in compiled.records),
        "children": sum(len(kids) for *_, arms in compiled.records for _, _, kids, _ in arms),
        "unpacked_bytes": len(compiled.to_bytes()),
        "packed_bytes": len(packed),
        "to_bytes_and_pack_cpu_s": write_cpu,
        "read_back_cpu_s": sorted(loads),
        "load": os.getloadavg()[0],
    }
    print("compiled count:", json.dumps(report), flush=True)
    return {"report": report, "packed": packed}


def compiled_query(dag: dict[str, Any], pack: Any, pins: dict[str, Any]) -> dict[str, Any]:
    """One count from the compiled form as a new process finds it on disk (unpacked, read, one
    pass), the same again (records read), and its splits by `gpu_arch` and `quantization`: one
    pass down (`split`), checked against one count per value (timed too)."""
    import zlib

    from solver.engine.csp import compile_pack
    from solver.engine.ddnnf import CompiledCount

    domains = compile_pack(pack).domains
    cpu = time.process_time()
    compiled = CompiledCount.from_bytes(zlib.decompress(dag["packed"]))
    total, steps = compiled.count(domains, pins)
    row: dict[str, Any] = {
        "compiled": total,
        "compiled_steps": steps,
        "compiled_cpu_s": time.process_time() - cpu,
    }
    cpu = time.process_time()
    compiled.count(domains, pins)
    row["compiled_again_cpu_s"] = time.process_time() - cpu  # records already read
    for by in ("gpu_arch", "quantization"):
        if by in pins:
            continue
        cpu = time.process_time()
        parts, _ = compiled.split(domains, pins, by)  # one pass down
        row[f"compiled_by_{by}_cpu_s"] = time.process_time() - cpu
        cpu = time.process_time()
        if parts != [compiled.count(domains, {**pins, by: v})[0] for v in domains[by]]:
            row["disagree"] = True
        row[f"compiled_by_{by}_per_value_cpu_s"] = time.process_time() - cpu
        if sum(parts) != total:
            row["disagree"] = True
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=120.0, help="seconds per count and method")
    parser.add_argument("--whole", action="store_true", help="also count the whole pack")
    parser.add_argument("--encoding", choices=("pairs", "compact"), default="pairs", help="Ganak's CNF")
    parser.add_argument(
        "--only",
        choices=("all", "ganak", "confsolve", "compiled", "modelcounter", "ve"),
        default="all",
        help="time one method",
    )
    parser.add_argument(
        "--ve-cap", type=float, default=7.0, help="skip elimination above 10^this dense cells (default 7)"
    )
    args = parser.parse_args()
    from count_ve import ve_count, width_report

    from solver import load_pack
    from solver.engine.count import CountLimitReached, Limit, ModelCounter, count, pack_checks
    from solver.engine.csp import compile_pack

    pack = load_pack("sglang")
    shape = ModelCounter(compile_pack(pack).domains, pack_checks(pack))
    queries = [*QUERIES, *([{}] if args.whole else [])]
    rows: list[dict[str, Any]] = []
    try:
        import pyganak  # noqa: F401

        has_ganak = args.only in ("all", "ganak")
    except ImportError:
        has_ganak = False
        print("pyganak is not installed: Ganak is not timed")
    if has_ganak:
        start = time.perf_counter()
        var, clauses = (encode_compact if args.encoding == "compact" else encode)(pack)
        encoded = time.perf_counter() - start
        print(f"CNF: {len(var)} variables, {len(clauses)} clauses, encoded in {encoded:.1f} s")
    load = os.getloadavg()
    from solver.engine import count as count_module

    cpu = time.process_time()
    count_module._counter(pack)  # what the first count in a process compiles: every rule's diagram
    compiled = time.process_time() - cpu
    print(f"rules compiled to diagrams in {compiled:.2f} s CPU (load {load[0]:.1f})")
    os.environ["CONFSOLVE_NO_CACHE"] = "1"  # nothing read from or left in the user's cache
    dag = compile_report(pack) if args.only in ("all", "compiled") else None
    for pins in queries:
        row: dict[str, Any] = {"pins": pins, "primal": width_report(shape, pins)}
        if args.only in ("all", "confsolve"):
            # `count` as a first `confsolve count` with nothing kept (its default limit, steps
            # only): a search, and past SEARCH_FIRST steps the whole pack's compile and a pass.
            count_module._COMPILED.clear()
            start, cpu = time.perf_counter(), time.process_time()
            try:
                result = count(pack, pins)
                row["confsolve"], row["confsolve_steps"] = result.count, result.steps
            except CountLimitReached as stop:
                row["confsolve"] = None
                row["confsolve_bounds"] = [str(stop.lower), str(stop.upper)]
            row["confsolve_s"] = time.perf_counter() - start
            row["confsolve_cpu_s"] = time.process_time() - cpu
            start, cpu = time.perf_counter(), time.process_time()
            try:  # the search alone (what `count` was before round perfcount9)
                searched = count_module._counter(pack)
                row["search"] = searched.count(pins, limit=Limit(steps=None, seconds=args.cap))
                row["search_steps"] = searched.steps
            except CountLimitReached as stop:
                row["search"] = None
                row["search_bounds"] = [str(stop.lower), str(stop.upper)]
            row["search_cpu_s"] = time.process_time() - cpu
            if None not in (row.get("search"), row.get("confsolve")) and row["search"] != row["confsolve"]:
                row["disagree"] = True
        if dag is not None:
            row.update(compiled_query(dag, pack, pins))
            if row.get("confsolve") is not None and row["compiled"] != row["confsolve"]:
                row["disagree"] = True
        if args.only in ("all", "modelcounter"):
            counter = ModelCounter(compile_pack(pack).domains, pack_checks(pack))
            start, cpu = time.perf_counter(), time.process_time()
            try:
                row["modelcounter"] = counter.count(pins, limit=Limit(steps=None, seconds=args.cap))
            except CountLimitReached as stop:
                row["modelcounter"] = None
                row["modelcounter_bounds"] = [str(stop.lower), str(stop.upper)]
            row["modelcounter_s"] = time.perf_counter() - start
            row["modelcounter_cpu_s"] = time.process_time() - cpu
            if (
                None not in (row["modelcounter"], row.get("confsolve"))
                and row["modelcounter"] != row["confsolve"]
            ):
                row["disagree"] = True
        row["load"] = os.getloadavg()[0]
        if args.only in ("all", "ve"):
            ve = ve_count(shape, pins, args.ve_cap)
            row.update({f"ve_{k}" if k != "count" else "ve": v for k, v in ve.items()})
            both = ve["count"] is not None and row.get("confsolve") is not None
            if both and ve["count"] != row["confsolve"]:
                row["disagree"] = True
        if has_ganak:
            units = [var[(n, type(v).__name__, v)] for n, v in pins.items()]
            number, wall, ganak_cpu = ganak_count(clauses, len(var), units, args.cap)
            row.update(ganak=number, ganak_s=wall, ganak_cpu_s=ganak_cpu)
            if number is not None and row.get("confsolve") is not None and number != row["confsolve"]:
                row["disagree"] = True
        rows.append(row)
        print(
            json.dumps(
                {
                    k: (str(v) if isinstance(v, int) and not isinstance(v, bool) else v)
                    for k, v in row.items()
                },
                default=str,
            ),
            flush=True,
        )
    doc = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
        "cap_s": args.cap,
        "rules_compiled_cpu_s": compiled,
        "compiled": dag["report"] if dag is not None else None,
        "cpus": os.cpu_count(),
        "cnf": {
            "encoding": args.encoding,
            "variables": len(var),
            "clauses": len(clauses),
            "encode_s": encoded,
        }
        if has_ganak
        else None,
        "rows": [
            {k: (str(v) if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in r.items()}
            for r in rows
        ],
    }
    out = HERE / "results" / f"count-methods{'-compact' if args.encoding == 'compact' else ''}.json"
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"wrote {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
