"""The JSON Schema of a pack's TOML files (`confsolve schema --pack-files`), for editors.

An editor with a TOML language server (Taplo, Even Better TOML) validates and completes a pack
file against it (`#:schema ./pack-files.schema.json` on the first line, or the editor's schema
association). The records' own schemas (`Field`, `Rule`, `Preference`, built from the dataclasses)
are the source, so a key added to a record shows up here without an edit; the keys the loader sets
itself (`name`, `file`) are left out. What a schema cannot say (a condition's grammar, a name that
must exist) is the loader's and `confsolve lint`'s to check. Imports only `solver.model` (and
the parser table's keys).
"""

from __future__ import annotations

import copy
from typing import Any

from solver.model import AssumedGroup, Field, Launcher, Preference, Rule
from solver.pack.parser_flags import (
    PARSER_ARITIES,
    PARSER_COMMAND_LISTS,
    PARSER_FLAG_LISTS,
    PARSER_KEYS,
    PARSER_SWITCHES,
    PARSER_TABLES,
)

__all__ = ["PACK_FILES_SCHEMA_ID", "pack_file_schema"]

PACK_FILES_SCHEMA_ID = "https://confsolve.invalid/schema/1/pack-file.json"
_REF = "#/$defs/{model}"
_LOADER_KEYS = ("name", "file")  # set by the loader, never written in a file
_SCALAR: dict[str, Any] = {"type": ["string", "integer", "boolean"]}


def _record(model: type[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A record's schema as written in a file, and the definitions it refers to."""
    schema = copy.deepcopy(model.model_json_schema(mode="validation", ref_template=_REF))
    defs = schema.pop("$defs", {})
    for key in _LOADER_KEYS:
        schema.get("properties", {}).pop(key, None)
    schema["required"] = [k for k in schema.get("required", []) if k not in _LOADER_KEYS]
    schema["additionalProperties"] = False
    return schema, defs


def pack_file_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every file of a pack (pack.toml and the files it lists)
    validates against, once parsed from TOML."""
    defs: dict[str, Any] = {}
    for model in (Field, Rule, Preference, Launcher, AssumedGroup):
        schema, more = _record(model)
        defs.update(more)
        defs[model.__name__] = schema
    strings = {"type": "array", "items": {"type": "string"}}
    for key in PARSER_KEYS:  # written in [launcher_flags], not in [pack.launcher]
        defs["Launcher"]["properties"].pop(key, None)
    defs["PackTable"] = {
        "type": "object",
        "required": ["name", "version"],
        "additionalProperties": False,
        "description": "pack.toml's [pack] table",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "version": {"type": "string", "minLength": 1},
            "description": {"type": "string"},
            "files": strings,
            # how the launcher is called (command words, model and config flags): constraints/README.md
            "launcher": {"$ref": "#/$defs/Launcher"},
            "example": {
                "type": "object",
                "description": "a request to suggest when a command is given nothing: FIELD = value",
                "additionalProperties": _SCALAR,
            },
            # how the ASSUMED notice groups facts nobody gave that share a reason: constraints/README.md
            "assumed_groups": {
                "type": "object",
                "description": "[pack.assumed_groups.NAME]: reason, members (preference/fact = label), then",
                "additionalProperties": {"$ref": "#/$defs/AssumedGroup"},
            },
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": PACK_FILES_SCHEMA_ID,
        "title": "confsolve pack file",
        "description": "One TOML file of a confsolve rule pack (constraints/README.md). Conditions "
        "are checked by the loader and `confsolve lint`, not by this schema.",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "pack": {"$ref": "#/$defs/PackTable"},
            "sets": {
                "type": "object",
                "description": "named value sets, NAME = [values]",
                "propertyNames": {"pattern": "^[A-Z][A-Z0-9_]*$"},
                "additionalProperties": {"type": "array", "minItems": 1, "items": _SCALAR},
            },
            "conditions": {
                "type": "object",
                "description": 'named conditions, NAME = "condition", read by name in conditions',
                "propertyNames": {"pattern": "^[A-Z][A-Z0-9_]*$"},
                "additionalProperties": {"type": "string", "minLength": 1},
            },
            "field": {
                "type": "object",
                "description": "[field.NAME] tables",
                "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                "additionalProperties": {"$ref": "#/$defs/Field"},
            },
            "rule": {"type": "array", "items": {"$ref": "#/$defs/Rule"}},
            "preference": {"type": "array", "items": {"$ref": "#/$defs/Preference"}},
            "model_config": {
                "type": "object",
                "description": "how --model-config reads a checkpoint (constraints/README.md)",
            },
            "lint": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"acknowledged": {"type": "object", "additionalProperties": strings}},
            },
            # the launcher's own parser, written from it (benchmarks/launcher_flags.py)
            "launcher_flags": {
                "type": "object",
                "description": "every flag of the launcher's parser by what it reads after it",
                "additionalProperties": False,
                "properties": {
                    **{key: strings for key in PARSER_ARITIES},
                    **{key: {"type": "boolean"} for key in PARSER_SWITCHES},
                    **{key: strings for key in (*PARSER_FLAG_LISTS, *PARSER_COMMAND_LISTS)},
                    **{key: {"type": "object", "additionalProperties": strings} for key in PARSER_TABLES},
                    # a switch -> the switch whose value it sets false (`--no-x` -> `--x`)
                    "negatives": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        },
        "$defs": defs,
    }
