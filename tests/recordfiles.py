"""Oracle record files and agreement figures, one home for the SGLang and vLLM replays.

Both oracle harnesses write one JSON object a line (`.jsonl`, or `.jsonl.gz` for committed
fixtures); the public-scenario tables, the differential replays and the benchmarks that print them
read them here, and state agreement with the same rounding.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

Record = TypeVar("Record")


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a `.jsonl` or `.jsonl.gz` file, in order (blank lines skipped)."""
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def pct(agree: int, total: int) -> float:
    """Agreement in percent, one decimal; 100 when nothing was compared."""
    return round(100.0 * agree / total, 1) if total else 100.0


def share(agree: int, total: int) -> str:
    """`' 97.3 %  (1025/1053)'`: how both differential reports print one agreement figure."""
    return f"{pct(agree, total):5.1f} %  ({agree}/{total})"


def stratified_sample(
    records: Iterable[Record],
    *,
    key: Callable[[Record], str],
    strata: Sequence[Callable[[Record], Hashable]],
    share: float | Callable[[Record], float],
    seed: str,
) -> list[Record]:
    """A deterministic sample of `records`, in their order, that represents every stratum.

    Each record gets a rank in [0, 1) from a hash of `seed` and its `key` (its scenario id), so the
    pick never depends on the order, the other records or the Python process. A record is in the
    sample when its rank is below `share` (or `share(record)`), or when it has the lowest rank of
    its value of any `strata` function (so every fixture file, source, platform or verdict class
    keeps at least one record). A record added later joins the sample by the same test, and leaves
    every earlier pick in place (except the lowest of its own strata, which it may replace).
    """
    rows = list(records)
    ranks = [_rank(seed, key(row)) for row in rows]
    shares = [share(row) if callable(share) else share for row in rows]
    picked = {i for i, rank in enumerate(ranks) if rank < shares[i]}
    for stratum in strata:
        lowest: dict[Hashable, int] = {}
        for i, row in enumerate(rows):
            value = stratum(row)
            if value not in lowest or ranks[i] < ranks[lowest[value]]:
                lowest[value] = i
        picked.update(lowest.values())
    return [row for i, row in enumerate(rows) if i in picked]


def _rank(seed: str, key: str) -> float:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
