"""The pack as the configurator page draws it: fields in sections, values with their labels and
aliases, rules and preferences with what they read, and each field's neighbours.

Sections follow the pack, not a launcher: the required facts first (what a session starts with:
the machine, the model), then the other facts that are not environment variables, then the
options by group, then the environment facts.
"""

from __future__ import annotations

from typing import Any

from solver.model import Field, Pack
from solver.reasoning.resolution import Plan
from solver.values import show as _key

__all__ = ["describe"]


def _section(field: Field) -> str:
    if field.kind == "option":
        return "options"
    if field.env:
        return "environment"
    # Yes/no facts are traits (has a library, is an MoE model) that the model's config or other
    # facts usually imply; the page folds them below the facts a person picks.
    if not field.required and all(isinstance(v, bool) for v in field.domain):
        return "traits"
    return "inputs"


def _field(field: Field, rules: list[str], preferences: list[str], neighbours: list[str]) -> dict[str, Any]:
    return {
        "name": field.name,
        "kind": field.kind,
        "section": _section(field),
        "group": field.group,
        "help": field.help,
        "required": field.required,
        "env": field.env,
        "flag": None if field.kind == "fact" else field.cli_flag,
        "type": type(field.domain[0]).__name__ if field.domain else "str",
        "domain": [_key(v) for v in field.domain],
        "labels": {_key(v): field.label(v) for v in field.domain if field.label(v) != _key(v)},
        # Other names a value is typed as (e.g. GPU names for an architecture), by value.
        "aliases": _aliases_by_value(field),
        "auto": field.auto,
        # An integer field that also takes values outside its listed domain (the page offers a
        # box for them): {"min": N, "max": M or None}.
        "open": None if field.open is None else {"min": field.open.min, "max": field.open.max},
        "rules": rules,
        "preferences": preferences,
        "neighbours": neighbours,
    }


def _aliases_by_value(field: Field) -> dict[str, list[str]]:
    """Value -> the other names it is typed as. A pack's alias table maps a name to its value
    (`"H100" = "sm90"`); the page shows them by value (and matches them ignoring case)."""
    out: dict[str, list[str]] = {}
    for name, value in field.aliases.items():
        out.setdefault(_key(value), []).append(name)
    return out


def describe(pack: Pack, plan: Plan) -> dict[str, Any]:
    from solver.pack.graph import analyse
    from solver.pack.loader import semantics

    sem = semantics(pack)
    reads = {rule.id: sorted(sem.rules[rule.id].fields) for rule in pack.rules}
    rules_of: dict[str, list[str]] = {name: [] for name in pack.fields}
    neighbours: dict[str, set[str]] = {name: set() for name in pack.fields}
    for rid, fields in reads.items():
        for name in fields:
            rules_of[name].append(rid)
            neighbours[name].update(f for f in fields if f != name)
    prefs_of: dict[str, list[str]] = {name: [] for name in pack.fields}
    for pref in pack.preferences:
        prefs_of[pref.field].append(pref.id)
    graph_edges = [{"from": a, "to": b, "why": why} for a, b, why in analyse(pack).edges]
    for edge in graph_edges:
        neighbours[edge["from"]].add(edge["to"])
        neighbours[edge["to"]].add(edge["from"])
    order = list(pack.fields)
    described = [
        _field(f, rules_of[n], prefs_of[n], sorted(neighbours[n], key=order.index))
        for n, f in pack.fields.items()
    ]
    sections = ["inputs", "traits", "options", "environment"]
    required_first = sorted(
        described, key=lambda d: (sections.index(d["section"]), not d["required"], order.index(d["name"]))
    )
    return {
        "schema": 1,
        "status": "configurator",
        "pack": {"name": pack.name, "version": pack.version, "description": pack.description},
        "fields": required_first,
        "groups": list(dict.fromkeys(f.group for f in pack.fields.values())),
        "rules": {
            rule.id: {
                "because": rule.because,
                "source": rule.source,
                "severity": rule.severity,
                "adjusts": rule.adjusts,
                "fields": reads[rule.id],
            }
            for rule in pack.rules
        },
        "preferences": {
            pref.id: {
                "field": pref.field,
                "because": pref.because,
                "source": pref.source,
                "prefer": [_key(v) for v in pref.prefer],
            }
            for pref in pack.preferences
        },
        "edges": graph_edges,
        "reads_model_config": bool(pack.model_config_map),
        "launcher": None if pack.launcher is None else pack.launcher.model_dump(mode="json"),
    }
