"""Counting by variable elimination, and the primal-graph numbers that decide whether it can pay.

Used by `benchmarks/count_methods.py` (method "ve" and `--width`). Both start where confsolve's
counter starts a query: after its propagation (`ModelCounter.residual`: pins folded in, rules
settled by them dropped, domains narrowed), so the three methods count the same sub-problem.

- The *primal graph*: the free fields, linked when an open rule reads both. A min-fill
  elimination order (ties: fewer neighbours) gives the induced width and the largest table a
  dense bucket elimination would build (the product of the domains of a bucket's fields,
  the eliminated one included), as log10 cells.
- *Sparse bucket elimination*: one table per open rule over its free fields (the combinations it
  allows, each with weight 1), then, in the min-fill order, the tables that read a field are
  joined and the field summed out. Weights are Python ints (exact at any size). A query whose
  dense estimate is above `cap_log10` is not attempted (it would not finish): the estimate is
  reported instead.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

Table = tuple[tuple[str, ...], dict[tuple[Any, ...], int]]


def primal(checks: Sequence[Any], doms: Mapping[str, Sequence[Any]]) -> dict[str, set[str]]:
    """Free fields linked when one open check reads both."""
    adj: dict[str, set[str]] = {name: set() for name in doms}
    for check in checks:
        free = [n for n in check.fields if n in doms]
        for name in free:
            adj[name].update(n for n in free if n != name)
    return adj


def min_fill(adj: Mapping[str, set[str]], doms: Mapping[str, Sequence[Any]]) -> tuple[list[str], int, float]:
    """A min-fill elimination order, its induced width and its largest bucket (log10 cells)."""
    left = {name: set(links) for name, links in adj.items()}
    order: list[str] = []
    width, largest = 0, 0.0

    def fill(name: str) -> int:
        links = list(left[name])
        return sum(1 for i, a in enumerate(links) for b in links[i + 1 :] if b not in left[a])

    while left:
        name = min(left, key=lambda n: (fill(n), len(left[n])))
        links = left.pop(name)
        width = max(width, len(links))
        largest = max(largest, sum(math.log10(len(doms[n])) for n in (*links, name)))
        for other in links:
            left[other].discard(name)
            left[other] |= links - {other}
        order.append(name)
    return order, width, largest


def width_report(counter: Any, pins: Mapping[str, Any]) -> dict[str, Any]:
    """The primal graph of a query's residual problem (see the module text)."""
    residual = counter.residual(pins)
    if residual is None:
        return {"conflict": True}
    checks, doms, _ = residual
    _, width, largest = min_fill(primal(checks, doms), doms)
    return {
        "free_fields": len(doms),
        "values": sum(len(d) for d in doms.values()),
        "open_rules": len(checks),
        "induced_width": width,
        "largest_table_log10": round(largest, 2),
    }


def _join(left: Table, right: Table) -> Table:
    (lf, lt), (rf, rt) = left, right
    shared = [n for n in rf if n in lf]
    extra = [n for n in rf if n not in lf]
    at_left = [lf.index(n) for n in shared]
    at_right = [rf.index(n) for n in shared]
    at_extra = [rf.index(n) for n in extra]
    index: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], int]]] = defaultdict(list)
    for key, weight in rt.items():
        index[tuple(key[i] for i in at_right)].append((tuple(key[i] for i in at_extra), weight))
    out: dict[tuple[Any, ...], int] = {}
    for key, weight in lt.items():
        for more, other in index.get(tuple(key[i] for i in at_left), ()):
            out[key + more] = weight * other
    return lf + tuple(extra), out


def _sum_out(table: Table, name: str) -> Table:
    fields, rows = table
    at = fields.index(name)
    out: dict[tuple[Any, ...], int] = defaultdict(int)
    for key, weight in rows.items():
        out[key[:at] + key[at + 1 :]] += weight
    return fields[:at] + fields[at + 1 :], dict(out)


def ve_count(counter: Any, pins: Mapping[str, Any], cap_log10: float = 7.0) -> dict[str, Any]:
    """The count by sparse bucket elimination, with where its time went (CPU seconds)."""
    started = time.process_time()
    residual = counter.residual(pins)
    if residual is None:
        return {"count": 0}
    checks, doms, values = residual
    order, _, largest = min_fill(primal(checks, doms), doms)
    if largest > cap_log10:
        return {"count": None, "skipped": f"largest dense table 10^{largest:.1f} cells"}
    tables: list[Table] = []
    for check in checks:
        free = tuple(dict.fromkeys(n for n in check.fields if n in doms))
        rows: dict[tuple[Any, ...], int] = {}
        for combo in itertools.product(*(doms[n] for n in free)):
            known = dict(zip(free, combo, strict=True))
            if check.holds(tuple(known[n] if n in known else values[n] for n in check.fields)):
                rows[combo] = 1
        tables.append((free, rows))
    built = time.process_time()
    total, biggest = 1, 0
    for name in order:
        bucket = sorted((t for t in tables if name in t[0]), key=lambda t: len(t[1]))
        if not bucket:
            total *= len(doms[name])
            continue
        tables = [t for t in tables if name not in t[0]]
        joined = bucket[0]
        for table in bucket[1:]:
            joined = _join(joined, table)
            biggest = max(biggest, len(joined[1]))
        summed = _sum_out(joined, name)
        if summed[0]:
            tables.append(summed)
        else:
            total *= summed[1].get((), 0)
    for _, rows in tables:
        total *= rows.get((), 0)
    return {
        "count": total,
        "tables_cpu_s": round(built - started, 2),
        "eliminate_cpu_s": round(time.process_time() - built, 2),
        "largest_joined_rows": biggest,
    }
