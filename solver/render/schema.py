"""The JSON Schema of every document `--json` prints, and the `confsolve schema` command.

Owns one JSON Schema (draft 2020-12) with `oneOf` over the document kinds, told apart by
`status`. Documents that are dumps of the models in `solver.model` take those models' own
`model_json_schema()` (so a model change shows up here without an edit); the envelopes around them
and the documents without a model are written out below. Objects allow extra keys: the contract
grows by extension, and `required` is what stops a rename. Must not import pydantic (it is
reached only through the models' public methods) or anything that solves.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from typing import Any

from solver.model import ConflictReport, Pack, Provenance, Repair, Resolution
from solver.values import MAX_SAFE_INTEGER

__all__ = ["DOCUMENT_KINDS", "output_schema", "register"]

SCHEMA_ID = "https://confsolve.invalid/schema/1/output.json"
_REF = "#/$defs/{model}"

_SCALAR: dict[str, Any] = {"type": ["string", "integer", "boolean"]}
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_TIMES: dict[str, Any] = {"elapsed_ms": {"type": "number"}, "cpu_ms": {"type": "number"}}  # a server answer's
_SCALARS: dict[str, Any] = {"type": "array", "items": _SCALAR}
_PIN_REF: dict[str, Any] = {
    "type": "object",
    "required": ["field", "value", "source"],
    "properties": {"field": {"type": "string"}, "value": _SCALAR, "source": {"type": "string"}},
}
_REASON: dict[str, Any] = {  # a minimal reason as `choices` and `matrix` print it
    "type": "object",
    "required": ["pins", "rules"],
    "properties": {"pins": {"type": "array", "items": _PIN_REF}, "rules": _STRINGS},
}


# An exact count: a JSON number up to 2**53 (what a JavaScript parser reads exactly), a string of
# decimal digits beyond it; null where a count ran out of its budget ("not counted").
_COUNT: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER},
        {"type": "string", "pattern": "^[0-9]+$"},
    ]
}
_MAYBE_COUNT: dict[str, Any] = {"anyOf": [*_COUNT["anyOf"], {"type": "null"}]}


def _obj(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


def _doc(status: str, required: list[str], **properties: Any) -> dict[str, Any]:
    """A document: `schema` 1, `status` fixed, and its own keys."""
    return _obj(["schema", "status", *required], schema={"const": 1}, status={"const": status}, **properties)


def _from_model(defs: dict[str, Any], name: str, status: str) -> dict[str, Any]:
    """A document that is a model's dump plus the envelope (`schema`, `status`)."""
    body: dict[str, Any] = copy.deepcopy(defs[name])
    body["properties"] = {"schema": {"const": 1}, "status": {"const": status}, **body.get("properties", {})}
    body["required"] = ["schema", "status", *body.get("required", [])]
    body["title"] = f"{status} document"
    return body


def _model_defs() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    for model in (Resolution, ConflictReport, Repair, Provenance, Pack):
        schema = model.model_json_schema(mode="serialization", ref_template=_REF)
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
    return defs


def _issue() -> dict[str, Any]:
    return _obj(
        ["field", "value", "message", "did_you_mean"],
        field={"type": "string"},
        value={},
        message={"type": "string"},
        did_you_mean=_STRINGS,
        allowed={"type": "array"},
    )


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF.format(model=name)}


# check --json after `--`: what reading the launch command set aside (a flag given again, a word
# the launcher never reads), as the text answer says it on stderr.
_LAUNCH_NOTES = {"type": "array", "items": {"type": "string"}}


def _launch_notes(doc: dict[str, Any]) -> dict[str, Any]:
    doc["properties"]["launch_notes"] = _LAUNCH_NOTES
    # resolve: no launch command gives this answer (what `--format argv` exits 1 for)
    doc["properties"]["no_command"] = _obj(["message", "rules"], message={"type": "string"}, rules=_STRINGS)
    return doc


def _documents(defs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        "resolved": _launch_notes(_from_model(defs, "Resolution", "resolved")),
        "conflict": _doc(
            "conflict",
            ["conflict", "message", "repairs"],
            conflict=_ref("ConflictReport"),
            message={"type": "string"},
            repairs={"type": "array", "items": _ref("Repair")},
            # check (predict mode): the launcher's own pick that fails
            launcher_default=_obj(
                ["field", "value", "chain", "preference"],
                field={"type": "string"},
                value=_SCALAR,
                chain=_SCALARS,
                preference={"type": ["string", "null"]},
            ),
            # the API's `resolve(..., repairs=False)`: none searched (the CLI always searches)
            repairs_searched={"const": False},
            launch_notes=_LAUNCH_NOTES,
        ),
        "error": _doc(
            "error",
            ["error"],
            error=_obj(
                ["type", "message"],
                type={"type": "string"},
                message={"type": "string"},
                issues={"type": "array", "items": _issue()},
                problems={
                    "type": "array",
                    "items": _obj(
                        ["where", "message"],
                        file={"type": "string"},
                        where={"type": "string"},
                        line={"type": ["integer", "null"], "minimum": 1},
                        message={"type": "string"},
                    ),
                },
            ),
        ),
        "choices": _doc(
            "choices",
            ["choices"],
            choices={
                "type": "object",
                "additionalProperties": _obj(
                    ["possible", "excluded", "warned"],
                    possible=_SCALARS,
                    excluded={"type": "object", "additionalProperties": _REASON},
                    # a possible value a warn rule flags given the other inputs: the rules' ids
                    warned={"type": "object", "additionalProperties": _obj(["rules"], rules=_STRINGS)},
                    # an open integer field: the range beyond the listed values, in words
                    open={"type": "string"},
                ),
            },
            # `confsolve choices`: the facts nobody gave, pinned as the resolution assumes them
            assumed={"type": "array", "items": _ref("AssumedRecord")},
        ),
        "counted": _doc(
            "counted",
            ["count"],
            count=_COUNT,
            by={"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _COUNT}},
        ),
        # A count cut short by --limit or a deadline (exit 4): exact bounds on the number, the
        # upper one null if nothing bounds it yet; `by` holds the values counted exactly.
        "bounded": _doc(
            "bounded",
            ["lower", "upper", "steps", "message"],
            lower=_COUNT,
            upper=_MAYBE_COUNT,
            steps={"type": "integer", "minimum": 0},
            message={"type": "string"},
            by={"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _COUNT}},
        ),
        "linted": _doc(
            "linted",
            ["pack", "findings"],
            pack=_PACK_REF,
            findings={
                "type": "array",
                "items": _obj(
                    ["code", "severity", "ids", "message"],
                    code={"type": "string"},
                    severity={"type": "string"},
                    ids=_STRINGS,
                    message={"type": "string"},
                ),
            },
            stats={
                "type": "object",
                "not": {"anyOf": [{"required": ["seconds"]}, {"required": ["timings"]}]},
            },
        ),
        "explained": _doc(
            "explained",
            ["code", "severity", "title", "explain"],
            code={"type": "string", "pattern": "^CS[0-9]+$"},
            severity={"enum": ["error", "warning", "info"]},
            title={"type": "string"},
            explain={"type": "string"},
        ),
        "diffed": _diffed(),
        **_served(defs),
        "checked": _doc(
            "checked",
            ["ok", "adjustments", "warnings"],
            ok={"type": "boolean"},
            adjustments={"type": "array", "items": _ref("AdjustmentRecord")},
            warnings={"type": "array", "items": _ref("WarningRecord")},
        ),
        "why": _doc(
            "why",
            ["field", "value", "provenance", "depends_on", "possible"],
            field={"type": "string"},
            value=_SCALAR,
            provenance=_ref("Provenance"),
            depends_on={"type": "object", "additionalProperties": _SCALAR},
            possible=_SCALARS,
        ),
        "graph": _doc(
            "graph",
            ["order", "components", "nodes", "edges"],
            order=_STRINGS,
            components={"type": "array", "items": _STRINGS},
            nodes={
                "type": "array",
                "items": _obj(
                    ["name", "kind", "group"],
                    name={"type": "string"},
                    kind={"enum": ["fact", "option"]},
                    group={"type": "string"},
                ),
            },
            edges={
                "type": "array",
                "items": _obj(
                    ["from", "to", "why"], to={"type": "string"}, why=_STRINGS, **{"from": {"type": "string"}}
                ),
            },
        ),
        "packs": _doc(
            "packs",
            ["packs"],
            packs={
                "type": "array",
                "items": _obj(
                    ["name", "version", "description"],
                    name={"type": "string"},
                    version={"type": "string"},
                    description={"type": "string"},
                ),
            },
        ),
        "pack": _from_model(defs, "Pack", "pack"),
        "matrix": _doc(
            "matrix",
            ["pack", "row", "column", "cells"],
            pack=_obj(["name", "version"], name={"type": "string"}, version={"type": "string"}),
            row=_obj(["field", "values"], field={"type": "string"}, values=_SCALARS),
            column=_obj(["field", "values"], field={"type": "string"}, values=_SCALARS),
            cells={
                "type": "array",
                "items": _obj(
                    ["row", "column", "ok"],
                    row=_SCALAR,
                    column=_SCALAR,
                    ok={"type": "boolean"},
                    reason=_REASON,
                ),
            },
        ),
    }


def _diffed() -> dict[str, Any]:
    group = _obj(
        ["kind", "id", "count"],
        kind={"enum": ["rule", "domain"]},
        id={"type": "string"},
        count=_MAYBE_COUNT,
        example={"type": ["object", "null"]},
        reason=_STRINGS,
    )
    direction = _obj(
        ["count", "groups", "other"],
        count=_MAYBE_COUNT,
        groups={"type": "array", "items": group},
        other=_MAYBE_COUNT,
        note={"type": "string"},
    )
    added_removed = _obj(["added", "removed"], added=_STRINGS, removed=_STRINGS, changed={})
    change = _obj(
        ["field", "old", "new", "count"],
        field={"type": "string"},
        old=_SCALAR,
        new=_SCALAR,
        count=_COUNT,
        where={"type": "object"},
        example={"type": "object"},
        old_by={"type": ["string", "null"]},
        new_by={"type": ["string", "null"]},
        models=_STRINGS,
    )
    # `diff --models`: how each pack read the real models the requests describe.
    models = _obj(
        ["given", "read_by_both", "without_machine", "not_read", "read_differently"],
        given={"type": "integer", "minimum": 0},
        read_by_both={"type": "integer", "minimum": 0},
        without_machine=_STRINGS,
        not_read={
            "type": "array",
            "items": _obj(
                ["model", "pack", "message"],
                model={"type": "string"},
                pack={"enum": ["old", "new"]},
                message={"type": "string"},
            ),
        },
        read_differently={
            "type": "array",
            "items": _obj(
                ["model", "field", "old", "new"],
                model={"type": "string"},
                field={"type": "string"},
                old={"type": ["string", "integer", "boolean", "null"]},
                new={"type": ["string", "integer", "boolean", "null"]},
            ),
        },
    )
    requests = _obj(
        ["requests", "compared"],
        requests={"type": "integer", "minimum": 0},
        compared={"type": "integer", "minimum": 0},
        models=models,
    )
    comparable = _obj(
        ["configurations", "resolutions"],
        configurations={"type": "boolean"},
        resolutions={"type": "boolean"},
        models={"type": "boolean"},
    )
    return _doc(
        "diffed",
        [
            "old",
            "new",
            "fields",
            "rules",
            "preferences",
            "old_count",
            "new_count",
            "invalidated",
            "validated",
            "requests",
            "resolution_changes",
        ],
        old=_PACK_REF,
        new=_PACK_REF,
        pins={"type": "object"},
        fields=added_removed,
        rules=added_removed,
        preferences=added_removed,
        shared_fields={"type": "integer", "minimum": 0},
        projected={"type": "boolean"},
        old_count=_MAYBE_COUNT,
        new_count=_MAYBE_COUNT,
        invalidated=direction,
        validated=direction,
        requests=requests,
        resolution_changes={"type": "array", "items": change},
        comparable=comparable,
    )


_PACK_REF: dict[str, Any] = _obj(["name", "version"], name={"type": "string"}, version={"type": "string"})


def _served(defs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The documents of `confsolve serve`'s JSON API (`solver.serve`): the pack as the page draws
    it, the state of a request, the reasons of excluded values, the facts of a pasted
    config.json. (Its errors are `error` documents.)"""
    texts: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
    values = _STRINGS  # the page spells every value as a string (`true`, `8`, `fa3`)
    field = _obj(
        ["name", "kind", "section", "group", "help", "required", "domain", "labels", "aliases"],
        name={"type": "string"},
        kind={"enum": ["fact", "option"]},
        section={"enum": ["inputs", "traits", "options", "environment"]},
        group={"type": "string"},
        help={"type": "string"},
        env={"type": "boolean"},
        flag={"type": ["string", "null"]},
        domain=values,
        labels=texts,
        aliases={"type": "object", "additionalProperties": _STRINGS},
        open={"type": ["object", "null"]},
        rules=_STRINGS,
        preferences=_STRINGS,
        neighbours=_STRINGS,
    )
    field["properties"]["required"] = {"type": "boolean"}  # (a key that `_obj` takes itself)
    choice = _obj(
        ["possible", "excluded", "warned"],
        possible=values,
        # excluded value -> "facts" (impossible on this hardware or model), "assumed" (an option's
        # value excluded only with the facts the resolution assumes) or "choices" (by the options)
        excluded={"type": "object", "additionalProperties": {"enum": ["facts", "assumed", "choices"]}},
        warned={
            "type": "object",
            "additionalProperties": _obj(
                ["rule", "because"], rule={"type": "string"}, because={"type": "string"}
            ),
        },
    )
    # A repair as the CLI prints it, and the fields the page asked to keep that it changes.
    repair: dict[str, Any] = copy.deepcopy(defs["Repair"])
    repair["properties"]["undoes"] = _STRINGS
    repair["required"] = [*repair.get("required", []), "undoes"]
    verdicts = {
        "resolved": ["resolution", "choices", "command"],
        "conflict": ["conflict", "message", "repairs", "kept"],
        "incomplete": ["message", "needs", "choices"],
        "error": ["error"],
    }
    state = _doc(
        "state",
        ["verdict", "set"],
        verdict={"enum": list(verdicts)},
        set=texts,
        parts_ms={"type": "object", "additionalProperties": {"type": "number"}},
        **_TIMES,
        helper_cpu_ms={"type": "number"},
        resolution=_obj(
            ["values", "provenance", "adjustments", "warnings"],
            values=texts,
            provenance={"type": "object", "additionalProperties": _ref("Provenance")},
            adjustments={"type": "array", "items": _ref("AdjustmentRecord")},
            warnings={"type": "array", "items": _ref("WarningRecord")},
            assumed={"type": "array"},
        ),
        choices={"type": "object", "additionalProperties": choice},
        command=_obj(
            ["env", "full", "minimal", "full_text", "minimal_text"],
            env=texts,
            full=_STRINGS,
            minimal=_STRINGS,
            full_text={"type": "string"},
            minimal_text={"type": "string"},
        ),
        conflict=_ref("ConflictReport"),
        message={"type": "string"},
        repairs={"type": "array", "items": repair},
        kept={"type": "boolean"},
        lead={"type": "string"},  # a conflict of a fact's assumed value: what resolve says first
        needs=_STRINGS,
        error=_obj(["message"], message={"type": "string"}),
    )
    state["allOf"] = [
        {"if": _obj(["verdict"], verdict={"const": v}), "then": {"required": need}}
        for v, need in verdicts.items()
    ]
    pin = _obj(
        ["field", "value", "source"],
        field={"type": "string"},
        value={"type": ["string", "null"]},
        source={"type": "string"},
    )
    rule = _obj(["id", "because", "source"], id={"type": "string"}, because={"type": "string"}, source={})
    reason = _obj(
        ["scope", "pins", "rules"],
        scope={"enum": ["facts", "assumed", "choices"]},
        pins={"type": "array", "items": pin},
        rules={"type": "array", "items": rule},
    )
    return {
        "configurator": _doc(
            "configurator",
            ["pack", "fields", "groups", "rules", "preferences", "edges"],
            pack=_PACK_REF,
            fields={"type": "array", "items": field},
            groups=_STRINGS,
            rules={"type": "object"},
            preferences={"type": "object"},
            edges={"type": "array"},
            reads_model_config={"type": "boolean"},
            launcher={"type": ["object", "null"]},
        ),
        "state": state,
        "reasons": _doc(
            "reasons",
            ["set", "reasons"],
            set=texts,
            reasons={
                "type": "object",
                "additionalProperties": {"type": "object", "additionalProperties": reason},
            },
            **_TIMES,
        ),
        # notes: what the model config was read as, as the launcher reads it, not as written
        "facts": _doc("facts", ["facts"], facts=texts, notes=_STRINGS, **_TIMES),
    }


# Every kind of document, told apart by "status". The document format is versioned by its
# "schema" key (1 today): a key may be added within a version (objects allow extra keys); a key
# renamed, removed or retyped makes version 2. README.md, "JSON documents", lists the kinds.
DOCUMENT_KINDS = (
    "resolved",
    "conflict",
    "error",
    "choices",
    "counted",
    "bounded",
    "linted",
    "explained",
    "checked",
    "why",
    "graph",
    "packs",
    "pack",
    "matrix",
    "diffed",
    "configurator",
    "state",
    "reasons",
    "facts",
)


def output_schema(kind: str | None = None) -> dict[str, Any]:
    """The JSON Schema of every `--json` document (or of one `kind`), self-contained."""
    defs = _model_defs()
    documents = _documents(defs)
    for name, body in documents.items():
        defs[f"{name}_document"] = body
    kinds = DOCUMENT_KINDS if kind is None else (kind,)
    head: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "confsolve output" if kind is None else f"confsolve {kind} document",
        "description": 'Every document has "schema": 1 and a "status" naming its kind.',
    }
    if kind is None:
        head["oneOf"] = [{"$ref": f"#/$defs/{k}_document"} for k in kinds]
    else:
        head["$ref"] = f"#/$defs/{kind}_document"
    head["$defs"] = defs
    return head


def cmd_schema(args: argparse.Namespace) -> int:
    # --json changes nothing: what `schema` prints is JSON (a JSON Schema, not a document).
    from solver.render.formats import write

    if args.pack_files:
        from solver.pack.schema import pack_file_schema

        doc = pack_file_schema()
    else:
        doc = output_schema(args.kind)
    sys.stdout.write(write("schema", "json", doc)[0])
    return 0


def register(sub: Any, add_inputs: Callable[..., None]) -> None:
    """`confsolve schema [--kind KIND]`."""
    p = sub.add_parser(
        "schema",
        help="the JSON Schema of every --json document",
        description="Print the JSON Schema (draft 2020-12) that every --json "
        "document validates against; oneOf over the kinds, by status.",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--kind",
        choices=DOCUMENT_KINDS,
        default=None,
        metavar="KIND",  # (the choices, listed in the help, wrap there; as a metavar they ran 190 columns)
        help=f"only the schema of one document kind: {', '.join(DOCUMENT_KINDS)}",
    )
    what.add_argument(
        "--pack-files", action="store_true", help="the schema of a pack's TOML files instead, for editors"
    )
    p.add_argument(
        "--json", action="store_true", help="accepted for symmetry: the output is always JSON (a JSON Schema)"
    )
    p.set_defaults(func=cmd_schema)
