"""A `dotted` launcher's JSON flags: the keys the pack models, read out of a JSON value and written
back into it.

vLLM 0.33.0 takes `--attention-config.flash_attn_version 2` and `--attention-config
'{"flash_attn_version": 2}'` (or its alias `-ac`) alike: both set one key of one JSON flag. Its
parser gathers every `--flag.key` word into one JSON value given after all other words, which
replaces any JSON typed for that flag whole (argparse keeps a flag's last value). So a modelled key
is read from a JSON value too, a JSON value without it leaves it unset again, and a dotted word of
the flag drops what an earlier JSON value said. Written back, a modelled key goes into the JSON
value typed, when there is one: a dotted word would replace its other keys. The pack names a JSON
flag by its option flags `--flag.key` (every alias spelled that way: `-ac.flash_attn_version`).
Imports the standard library and `solver.model`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from solver.model import Pack, Scalar

__all__ = ["json_heads", "json_object", "write_into_json"]


def json_heads(pack: Pack) -> dict[str, list[tuple[str, str]]]:
    """Each JSON flag spelling (`--attention-config`, `-ac`) -> the (field, key) pairs the pack
    models under it; empty unless the launcher's parser is `dotted`."""
    heads: dict[str, list[tuple[str, str]]] = {}
    if pack.launcher is None or not pack.launcher.dotted:
        return heads
    for name, f in pack.fields.items():
        if f.kind != "option" or f.env:
            continue
        for flag in f.all_flags:
            head, dot, key = flag.partition(".")
            if dot and head.startswith("-") and key:
                heads.setdefault(head, []).append((name, key))
    return heads


def json_object(text: str) -> dict[str, Any] | None:
    """`text` as the JSON object the flag's parser reads, or None when it is not one."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # (nested too deeply for this parser, and for the launcher's)
        return None
    return value if isinstance(value, dict) else None


def write_into_json(
    heads: Mapping[str, list[tuple[str, str]]], tail: list[str], values: Mapping[str, Scalar]
) -> set[str]:
    """Write the modelled keys of `values` into the JSON values `tail` (the passed-through words)
    holds for their flags, in place; the fields so written (their dotted words are then left out)."""
    written: set[str] = set()
    # A dotted word of the flag (passed through, a key the pack does not model) replaces its JSON
    # value whole: the modelled key is then written as a dotted word too, to join it.
    dotted = {
        w.partition("=")[0].partition(".")[0]
        for w in tail
        if w.startswith("-") and "." in w.partition("=")[0]
    }
    for i, word in enumerate(tail):
        flag, eq, attached = word.partition("=")
        if flag not in heads or flag in dotted:
            continue
        text = attached if eq else (tail[i + 1] if i + 1 < len(tail) else "")
        value = json_object(text)
        if value is None:
            continue
        for name, key in heads[flag]:
            if name in values:
                value[key] = values[name]
                written.add(name)
        if eq:
            tail[i] = f"{flag}={json.dumps(value)}"
        else:
            tail[i + 1] = json.dumps(value)
    return written
