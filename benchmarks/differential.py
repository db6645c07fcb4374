"""Differential test: how far confsolve's SGLang pack agrees with SGLang on any oracle records.

Reads a records file in the oracle format (`run.sh` output of shared/tools/sglang-oracle, `.jsonl`
or `.jsonl.gz`, or the committed fixture), replays every scenario through confsolve with the
model's `config.json`, and prints verdict agreement in three classes (SGLang accepts / refuses at
start-up / fails at load), field agreement on the values SGLang decided, and every disagreement
grouped by cause: our rule ids when we refuse, SGLang's message pattern when it does. A load
failure agrees when confsolve refuses or warns. A confsolve crash on a scenario is counted and
listed, never raised.

    .venv/bin/python benchmarks/differential.py RECORDS.jsonl [--json OUT] [--fixture OUT.jsonl.gz]

`--harness` (default: $SGL_ORACLE_HARNESS or /work/shared/tools/sglang-oracle) is where the
oracle's `models.py` lives: it rebuilds the config.json SGLang saw for each scenario.
`--fixture` writes the records compacted, with their configs, as a regression fixture that
tests/test_differential.py replays without SGLang.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import differential  # noqa: E402  (tests/ is not a package; the path is set just above)
import oracle  # noqa: E402
import recordfiles  # noqa: E402

from solver import load_pack, progress  # noqa: E402

HARNESS = Path(os.environ.get("SGL_ORACLE_HARNESS", "/work/shared/tools/sglang-oracle"))


def _scenario_done(case: differential.Case) -> None:
    """One scenario replayed: the progress line counts it (drawn on a terminal's stderr only,
    by `solver.progress`, so piped output and the JSON report are untouched)."""
    progress.advance()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path, help="oracle records (.jsonl or .jsonl.gz)")
    parser.add_argument("--configs", type=Path, help="configs of a fixture (default: next to it)")
    parser.add_argument(
        "--harness",
        type=Path,
        default=HARNESS,
        help="the oracle harness directory (its models.py writes the configs)",
    )
    parser.add_argument("--json", type=Path, help="write the report as JSON here")
    parser.add_argument("--fixture", type=Path, help="write a compact regression fixture here")
    parser.add_argument("--show", type=int, default=6, help="scenario ids shown per cause")
    parser.add_argument("--no-explain", action="store_true", help="do not name our conflicts' rules (faster)")
    args = parser.parse_args(argv)
    try:
        records = list(differential.read_records(args.records))
    except (OSError, ValueError) as exc:
        print(f"differential: cannot read {args.records}: {exc}", file=sys.stderr)
        return 2
    if args.fixture:
        twice = differential.repeated_ids(records)
        if twice:
            print(
                f"differential: scenario ids occur twice in {args.records} (a fixture's ids must be "
                f"unique; give the records of each seed a prefix, e.g. S31337-): {', '.join(twice[:5])}",
                file=sys.stderr,
            )
            return 2
    configs = _fixture_configs(args.records, args.configs)
    pack = load_pack("sglang")
    with tempfile.TemporaryDirectory(prefix="confsolve-diff-") as tmp:
        # A fixture's records name their configs; records without one (new oracle records appended
        # to a fixture) get theirs from the harness, as a plain records file does.
        store = oracle.ConfigStore(Path(tmp), configs, args.harness)
        with progress.reporting("differential"):
            progress.phase("scenarios", len(records))
            summary = differential.run(
                pack, records, store, explain=not args.no_explain, progress=_scenario_done
            )
        if args.fixture:
            _write_fixture(args.fixture, records, summary, store)
    doc = summary.to_json()
    doc["records"] = str(args.records)
    doc["pack"] = {"name": pack.name, "version": pack.version}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    _print(summary, args.records, args.show, configs is not None or store.configs != {})
    return 0


def _fixture_configs(records: Path, given: Path | None) -> dict[str, Any] | None:
    path = given or records.with_name("configs.json.gz")
    if given is None and not path.is_file():
        return None
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
    return loaded


def _write_fixture(
    path: Path, records: list[dict[str, Any]], summary: differential.Summary, store: oracle.ConfigStore
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    used: dict[str, Any] = {}
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as out:
        for record, case in zip(records, summary.cases, strict=True):
            if case.config is not None:
                used[case.config] = store.configs[case.config]
            out.write(json.dumps(differential.compact(record, case.config), sort_keys=True) + "\n")
    with gzip.open(path.with_name("configs.json.gz"), "wt", encoding="utf-8", compresslevel=9) as out:
        json.dump(used, out, sort_keys=True)


def _print(summary: differential.Summary, records: Path, show: int, with_configs: bool) -> None:
    agree, total = summary.verdict
    fagree, ftotal = summary.fields
    print(
        f"{records}: {total} scenarios, replayed with {oracle.MODE}"
        f"{'' if with_configs else ' (no config.json found: architecture names only)'}"
    )
    print(f"  verdict agreement  {recordfiles.share(agree, total)}")
    for kind, (a, t) in summary.by_class().items():
        print(f"    SGLang {kind:<20} {recordfiles.share(a, t)}")
    print(f"  field agreement    {recordfiles.share(fagree, ftotal)}")
    for name, (a, t) in summary.per_field().items():
        if a != t:
            print(f"    {name:<32} {recordfiles.share(a, t)}")
    crashes = summary.crashes()
    print(f"  confsolve crashes  {len(crashes)}")
    for case in crashes[:show]:
        print(f"    {case.id}: {case.detail}")
    print(f"  silent changes     {len(summary.silent)}  (unreported changes, unlisted assumptions)")
    for sid, finding in summary.silent[:show]:
        print(f"    {sid}: {finding}")
    print("\nverdict disagreements by cause:")
    for (kind, cause), ids in summary.verdict_causes().items():
        print(f"  {len(ids):>4}  {kind}: {cause}")
        print(f"        {' '.join(ids[:show])}{' ...' if len(ids) > show else ''}")
    print("\nfield disagreements by cause:")
    for (name, cause), ids in summary.field_causes().items():
        print(f"  {len(ids):>4}  {name}: {cause}")
        print(f"        {' '.join(ids[:show])}{' ...' if len(ids) > show else ''}")
    caught = summary.load_agreements()
    if caught:
        print("\nload failures caught (how):")
        for how, n in caught.most_common():
            print(f"  {n:>4}  {how}")
    warned = summary.warned_accepts()
    if warned:
        print("\nwarnings on launches SGLang accepted and loaded (rule: scenarios):")
        for rule, n in warned.most_common():
            print(f"  {n:>4}  {rule}")


if __name__ == "__main__":
    raise SystemExit(main())
