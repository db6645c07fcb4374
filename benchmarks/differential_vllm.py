"""Differential test of the vLLM pack against vLLM 0.33.0's own answers (oracle record files).

Replays every record (tests/oracle_vllm.py: contract-vllm.md's mapping) and prints the verdict
agreement (vLLM accepted <-> we resolve, vLLM raised <-> we report a conflict), the field
agreement where both accepted (attention_backend, flash_attn_version when FLASH_ATTN, block_size,
kv_cache_dtype, quantization, dtype), tracebacks, and the disagreements grouped by cause; with
--json the same as a document. Records come from the vLLM oracle harness
(`SEED=... COUNT=... bash run_random.sh` in shared/tools/vllm-oracle) or tests/fixtures/oracle_vllm/.

    .venv/bin/python benchmarks/differential_vllm.py FILE.jsonl[.gz] ... [--json OUT] [--known]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import oracle_vllm  # noqa: E402  (tests/ is not a package; the path is set just above)
import recordfiles  # noqa: E402

from solver import load_pack, progress  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="oracle record files (JSON lines, .gz allowed)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report as JSON")
    parser.add_argument(
        "--known",
        action="store_true",
        help="mark disagreements listed in constraints/vllm/KNOWN_DIFFERENCES.md",
    )
    parser.add_argument("--show", type=int, default=8, metavar="N", help="scenario ids shown per cause")
    args = parser.parse_args(argv)

    records = [r for path in args.files for r in oracle_vllm.load_records(path)]
    pack = load_pack("vllm")
    outcomes = []
    # A progress line on a terminal's stderr (solver.progress: nothing when piped).
    with progress.reporting("differential_vllm"):
        progress.phase("records", len(records))
        for record in records:
            outcomes.append(oracle_vllm.replay(pack, record))
            progress.advance()
    report = oracle_vllm.Report(outcomes)
    doc = report.to_json()
    va, vt = report.verdict_agree
    fa, ft = report.field_agree
    print(
        f"vLLM 0.33.0 oracle, {', '.join(p.name for p in args.files)}: {len(records)} records, "
        f"{doc['skipped']} outside the contract (skipped), {doc['seconds']:.1f} s of resolving"
    )
    print(f"  verdict agreement  {recordfiles.share(va, vt)}")
    print(f"  field agreement    {recordfiles.share(fa, ft)}")
    for name, (a, t) in report.per_field().items():
        print(f"    {name:<20} {recordfiles.share(a, t)}")
    print(f"  tracebacks         {len(report.tracebacks)}")
    for outcome in report.tracebacks:
        print(f"    {outcome.scenario}: {outcome.detail.strip().splitlines()[-1]}")
    print(f"  silent changes     {len(report.silent)}  (unreported changes, unlisted assumptions)")
    for sid, finding in report.silent[: args.show]:
        print(f"    {sid}: {finding}")
    known = oracle_vllm.known_differences() if args.known else {}
    groups = report.by_cause()
    if groups:
        print("  disagreements by cause:")
    for cause, count, ids in groups:
        shown = ", ".join(ids[: args.show]) + (" ..." if len(ids) > args.show else "")
        print(f"    {count:4d}  {cause}  [{shown}]")
    if known:
        unknown = [d for d in report.differences if d.key not in known]
        print(f"  not in KNOWN_DIFFERENCES.md: {len(unknown)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
