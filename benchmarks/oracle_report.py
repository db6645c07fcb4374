"""How faithfully the SGLang pack reproduces SGLang 0.5.23's own resolutions (the oracle).

Replays each scenario as `confsolve check` does (prediction: the launcher's own default chain for
every flag the scenario leaves unset, the question SGLang's own resolution answers); `--search`
replays it as `confsolve resolve` (the search for the best working configuration) instead.
Prints accept/reject agreement, value agreement per field and overall, every disagreement
(scenario, field, SGLang's value, ours, and our provenance or conflict rules), the fields SGLang
decided that the pack does not cover; with --write (or --out PATH) the same as JSON to
benchmarks/results/oracle.json (a tracked file: it is rewritten only when asked). The replay and
the measures live in tests/oracle.py, shared with tests/test_oracle.py.

    .venv/bin/python benchmarks/oracle_report.py [--write | --out PATH] [--json-only]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the checkout's solver, and tests/oracle.py

# The solver imports its dependencies lazily, so an interpreter without them would fail in the
# middle of the replay: check them first, and say which interpreter to use.
_MISSING = [name for name in ("constraint", "networkx", "pydantic") if importlib.util.find_spec(name) is None]
if _MISSING:
    sys.exit(
        f"oracle_report: {sys.executable} lacks {', '.join(_MISSING)}; run it with the "
        "project's environment: .venv/bin/python benchmarks/oracle_report.py "
        "(after `pip install -e '.[test]'`)"
    )

import oracle  # noqa: E402  (tests/ is not a package; the path is set just above)

RESULTS = ROOT / "benchmarks" / "results" / "oracle.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"write the JSON to {RESULTS.relative_to(ROOT)} (tracked: rewritten only when asked)",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the JSON to PATH instead")
    parser.add_argument(
        "--json-only",
        action="store_true",
        help="print the JSON document (or, when it is written, only its path)",
    )
    parser.add_argument(
        "--search",
        action="store_true",
        help="replay as `confsolve resolve` (search), not as `check` (prediction)",
    )
    args = parser.parse_args(argv)
    if args.write and args.out is None:
        args.out = RESULTS

    report = oracle.run(predict=not args.search)
    doc = report.to_json()
    known = oracle.known_differences()
    for row in doc["differences"]:
        key = (row["scenario"], row["field"], row["sglang"], row["ours"])
        row["known"] = known.get(key)
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    if args.json_only:
        print(args.out if args.out is not None else text, end="\n" if args.out else "")
        return 0

    agree, total = report.value_agree
    mode = "resolve (search)" if args.search else "check (prediction)"
    print(
        f"SGLang oracle {oracle.ORACLE.name}, replayed with {mode}: {len(report.outcomes)} scenarios, "
        f"{doc['seconds']:.2f} s of resolving"
    )
    print(
        f"  accept/reject agreement  {report.accept_rate:5.1f} %  "
        f"({report.accept_agree}/{len(report.outcomes)})"
    )
    print(f"  value agreement          {report.value_rate:5.1f} %  ({agree}/{total})")
    print()
    fields = report.per_field()
    wide = max([30, *map(len, fields)])  # (speculative_draft_attention_backend ran into its count)
    print(f"  {'field':<{wide}} {'agree':>7} {'of':>5} {'%':>7}")
    for name, (a, t) in fields.items():
        print(f"  {name:<{wide}} {a:>7} {t:>5} {100.0 * a / t:>6.1f}%")
    uncovered = report.uncovered()
    if uncovered:
        print("\n  decided by SGLang, not covered by the pack (scenarios):")
        for name, count in sorted(uncovered.items()):
            print(f"    {name:<36} {count}")
    ignored = report.ignored_inputs()
    if ignored:
        print("\n  scenario inputs the pack has no field for (scenarios):")
        for name, count in sorted(ignored.items()):
            print(f"    {name:<36} {count}")
    free = report.free_facts()
    if free:
        print("\n  facts the harness left free that the solver chose (scenarios):")
        for name, count in sorted(free.items()):
            print(f"    {name:<36} {count}")
    diffs = doc["differences"]
    print(f"\n  disagreements ({len(diffs)}; * = not yet in KNOWN_DIFFERENCES.md):")
    for row in diffs:
        mark = " " if row["known"] else "*"
        print(
            f"  {mark} {row['scenario']:<44} {row['field']:<26} SGLang {row['sglang']:<22} "
            f"ours {row['ours']:<22} [{row['why']}]"
        )
    if args.out is not None:
        print(f"\nwritten: {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
