"""Valid choices on a synthetic pack, several copies of the code in one run: issue #18's 5,000-field
choices row as a same-run A/B, with a hash of each answer.

    .venv/bin/python benchmarks/choices_ab.py main=/tmp/main new=. --size 5000 --rounds 2
    .venv/bin/python benchmarks/choices_ab.py main=/tmp/main new=. --size 5000 --explain

Each `LABEL=TREE` is a source tree (a checkout or `git archive` copy, run with `PYTHONPATH=TREE`).
Each round runs one process per copy, in turn, so every copy sees the same load. A process
builds `run.py`'s synthetic pack of `--size` fields (seed 0), asks what `run.py --only synthetic`
asks before its choices row (resolve without and with reasons, explain of the impossible request,
each twice), drops the stored solutions and times `valid_choices` with reasons of the resolvable
request (process CPU time). Printed per process: the CPU seconds, the sha256 of the answer's JSON
(equal hashes: the same answer) and the load before and after. Only the 5,000-field pack in the
process (run.py has the 100- and 1,000-field packs beside it, which moves the collector's cost).

`--explain`: explain + repairs of the impossible request instead (`solver.explain`, after one
call as a warm-up, as `run.py` times it), the hash of its JSON and text (the pack's temporary
path, which each repair's command names, left out): a change to explain's path keeps the hash.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(size: int, explain: bool = False) -> None:
    """Run inside a copy's process: print "CPU-seconds sha256" of the timed call."""
    import hashlib
    import json
    import tempfile
    import time

    import synthetic as syn

    import solver
    from solver.pack.loader import load_directory
    from solver.reasoning.diagnose import valid_choices
    from solver.reasoning.resolution import plan_for, resolve

    os.environ["CONFSOLVE_NO_CACHE"] = "1"
    spec = syn.generate(size, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        where = syn.write(spec, Path(tmp) / f"syn{size}")
        pack = load_directory(where)
    plan_for(pack)
    options, facts = syn.resolvable_request(spec, 0)
    bad_options, bad_facts = syn.impossible_request(spec, 0)
    if explain:
        solver.explain(pack, bad_options, bad_facts)
        start = time.process_time()
        found = solver.explain(pack, bad_options, bad_facts)
        cpu = time.process_time() - start
        doc = json.dumps(found.to_json(), sort_keys=True, default=str) + str(found)
        print(f"{cpu:.3f} {hashlib.sha256(doc.replace(str(where), 'PACK').encode()).hexdigest()}")
        return
    for reasons in (False, True):
        for _ in range(2):
            resolve(pack, options, facts, reasons=reasons)
    for _ in range(2):
        solver.explain(pack, bad_options, bad_facts)  # (returns the Unsatisfiable: run.py reads it)
    plan_for(pack).compiled.memo.pop("supports", None)
    start = time.process_time()
    answer = valid_choices(pack, options, facts)
    cpu = time.process_time() - start
    text = json.dumps(answer.to_json(), sort_keys=True, default=str)
    print(f"{cpu:.3f} {hashlib.sha256(text.encode()).hexdigest()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("copies", nargs="*", help="LABEL=TREE")
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--explain", action="store_true", help="time explain + repairs instead")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.size, args.explain)
        return
    copies = [c.split("=", 1) for c in args.copies]
    if not copies or any(len(c) != 2 for c in copies):
        parser.error("give one or more LABEL=TREE")
    from timing import with_bytecode

    print(with_bytecode(*(tree for _, tree in copies), HERE.parent))
    for round_ in range(1, args.rounds + 1):
        for label, tree in copies:
            before = os.getloadavg()[0]
            env = {**os.environ, "PYTHONPATH": f"{Path(tree).resolve()}{os.pathsep}{HERE}"}
            cmd = [sys.executable, str(HERE / "choices_ab.py"), "--child", "--size", str(args.size)]
            cmd += ["--explain"] if args.explain else []
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"{label} round {round_}: failed\n{out.stderr[-2000:]}")
                continue
            cpu, digest = out.stdout.split()[-2:]
            print(
                f"{label} round {round_}: {float(cpu):.3f} s CPU, answer {digest[:16]}, "
                f"load {before:.1f} -> {os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
