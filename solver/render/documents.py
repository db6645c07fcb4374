"""The JSON writers of the formats table (`render/formats.py`): each answer's document, printed
the one way every command prints JSON (`json_text`: indented, keys sorted, exact on any stdout).

The documents' shapes are `render/schema.py`'s; the records write most of them (`to_json`), and
the writers here add the envelopes of the documents without a record (why, packs, pack,
explained, bounded).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solver.errors import Unsatisfiable
from solver.model import Pack, Resolution, Scalar
from solver.values import exact_count, show

__all__ = ["bounded", "json_text", "utf8_stdout"]


def json_text(doc: Any, default: Callable[[Any], Any] | None = None) -> str:
    """A --json document as printed: indented, keys sorted, non-ASCII escaped when stdout cannot
    take it (so it stays exact), and a final newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=not utf8_stdout(), default=default) + "\n"


def utf8_stdout() -> bool:
    """Whether stdout takes any character: else JSON escapes non-ASCII so it stays exact."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding in ("utf8", "utf8sig")


def resolution(
    pack: Pack, res: Resolution, command: Any, fields: Sequence[str], unreachable: Unsatisfiable | None = None
) -> str:
    """The resolved document; with `no_command` (its message and the rules that refuse the
    answer typed) when no launch command gives it."""
    doc = res.to_json()
    if unreachable is not None:
        rules = [r.id for r in unreachable.conflict.rules]
        doc["no_command"] = {"message": unreachable.message, "rules": rules}
    return json_text(doc)


def why(pack: Pack, res: Resolution, name: str, deps: Sequence[str], possible: Sequence[Scalar]) -> str:
    return json_text(
        {
            "schema": 1,
            "status": "why",
            "field": name,
            "value": res.values[name],
            "provenance": res.provenance[name].model_dump(mode="json"),
            "depends_on": {d: res.values[d] for d in deps},
            "possible": possible,
        }
    )


def choices(pack: Pack, found: Any) -> str:
    return json_text(found.to_json())


def check(pack: Pack, outcome: Any, renderer: Any, notes: Sequence[str] = ()) -> str:
    """A resolution (`resolved`) or an `Unsatisfiable` (`conflict`): both write their own, with
    what reading the launch command after `--` set aside (`launch_notes`: the text answer's
    `confsolve: launch command:` lines on stderr), when there is any."""
    doc = outcome.to_json()
    if notes:
        doc["launch_notes"] = list(notes)
    return json_text(doc)


def packs(rows: Sequence[Mapping[str, Any]]) -> str:
    return json_text({"schema": 1, "status": "packs", "packs": list(rows)})


def pack(pack: Pack) -> str:
    return json_text(
        {
            "schema": 1,
            "status": "pack",
            **pack.model_dump(mode="json", exclude={"model_config_map", "directory", "digest"}),
        }
    )


def schema(doc: Mapping[str, Any]) -> str:
    # Always ASCII: a JSON Schema, not a document, kept as `confsolve schema` has printed it.
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def matrix(m: Any) -> str:
    return json_text(m.to_json())


def report(found: Any) -> str:
    return json_text(found.to_json())


def explained(code: str, entry: Any, text: str) -> str:
    return json_text(
        {
            "schema": 1,
            "status": "explained",
            "code": code,
            "severity": entry.severity,
            "title": entry.title,
            "explain": entry.explain,
        }
    )


def count(pack: Pack, outcome: Any, pins: Mapping[str, Scalar], by: str | None) -> str:
    """The `counted` document, or the `bounded` one of a count cut short."""
    from solver.engine.countlimit import CountLimitReached

    if isinstance(outcome, CountLimitReached):
        return json_text(bounded(outcome, by))
    return json_text(outcome.to_json())


def bounded(stop: Any, by: str | None = None) -> dict[str, Any]:
    """The `bounded` document of a count cut short: exact bounds `lower <= count <= upper` and,
    with `by`, the values counted exactly before it stopped."""
    doc: dict[str, Any] = {
        "schema": 1,
        "status": "bounded",
        "lower": exact_count(stop.lower),
        "upper": exact_count(stop.upper),
        "steps": stop.steps,
        "message": str(stop),
    }
    if by is not None:
        doc["by"] = {by: {show(v): exact_count(n) for v, n in stop.parts.items()}}
    return doc


def diff(result: Any) -> str:
    return json_text(result.to_json(), default=str)
