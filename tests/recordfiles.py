"""Oracle record files and agreement figures, one home for the SGLang and vLLM replays.

Both oracle harnesses write one JSON object a line (`.jsonl`, or `.jsonl.gz` for committed
fixtures); the public-scenario tables, the differential replays and the benchmarks that print them
read them here, and state agreement with the same rounding.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


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
