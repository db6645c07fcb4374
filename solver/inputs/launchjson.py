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
from collections.abc import Mapping, Sequence
from typing import Any

from solver.model import Pack, Scalar

__all__ = ["dotted_last", "forget", "json_heads", "json_object", "write_into_json"]


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


def forget(keys: list[tuple[str, str]], from_json: set[str], options: dict[str, Scalar]) -> None:
    """Unset the options a JSON flag's value gave: a later value of the flag replaced it."""
    for name, _ in keys:
        if name in from_json:
            from_json.discard(name)
            del options[name]


def dotted_last(words: list[str], attached: Sequence[str]) -> list[str]:
    """The words in the order a `dotted` parser reads them: each `--flag.key VALUE` (or
    `--flag.key=VALUE`) is taken out where it was typed and read after every other word, as one
    JSON value of `--flag` (vLLM's FlexibleArgumentParser), so the words on either side of it meet:
    `--sizes 1 2 --cfg.mode 3 4` gives `--sizes` the values 1, 2 and 4."""
    kept: list[str] = []
    moved: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            kept += words[i:]
            break
        name = word.partition("=")[0]
        dotted = word.startswith("-") and "." in name and not _number(word)
        if dotted and not any(word.startswith(short) for short in attached):  # `-O.x` is `-O`'s value
            moved.append(word)
            if "=" not in word and i + 1 < len(words):
                moved.append(words[i + 1])
                i += 1
        else:
            kept.append(word)
        i += 1
    return kept + moved


def _number(word: str) -> bool:
    """A negative number (`-0.5`) is a value, not a dotted flag."""
    try:
        float(word)
    except ValueError:
        return False
    return True
