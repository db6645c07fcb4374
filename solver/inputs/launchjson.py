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
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solver.model import Field, Launcher, Pack, Scalar

__all__ = [
    "dotted_head",
    "dotted_last",
    "dotted_value",
    "forget",
    "human_int",
    "json_heads",
    "json_object",
    "json_typed",
    "write_into_json",
]


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
    """`text` as the JSON object the flag's parser reads (bare `80m`, `2K` first written out as
    the numbers they stand for), or None when it is not one."""
    try:
        value = json.loads(_HUMAN_IN_JSON.sub(_human_in_json, text))
    except (ValueError, RecursionError):  # (nested too deeply for this parser, and for the launcher's)
        return None
    return value if isinstance(value, dict) else None


# vLLM's human-readable integers (argparse_utils.human_readable_int): `1k` 1,000, `1K` 1,024, `2.5k`
# 2,500 (no decimals with the binary suffixes), else int()'s own reading (`+8`, `0_8`, ` 8`).
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_HUMAN_IN_JSON = re.compile(r'("(?:[^"\\]|\\.)*")|\b\d+(?:\.\d+)?[kKmMgGtT]\b')
_SCALE = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_int(text: str) -> int | None:
    """`text` as a human-readable integer, or None when it is not one."""
    text = text.strip()
    match = _HUMAN.fullmatch(text)
    try:
        if match is None:
            return int(text)
        number, suffix = match.groups()
        return int(float(number) * _SCALE[suffix]) if suffix.islower() else int(number) * _SCALE[suffix]
    except ValueError:
        return None


def _human_in_json(match: re.Match[str]) -> str:
    """A bare human-readable number in JSON text as its digits (a quoted string stays as it is)."""
    if match.group(1) is not None:
        return match.group(1)
    number = human_int(match.group(0))
    return match.group(0) if number is None else str(number)


def dotted_value(text: str) -> Any:
    """The value of `--flag.key TEXT` as a dotted parser reads it: JSON, else a human-readable
    integer, else the text itself."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        number = human_int(text)
        return text if number is None else number


def json_typed(f: Field, value: Any) -> tuple[Scalar | None, str | None]:
    """A JSON value of a modelled key as the launcher's config class takes it (pydantic's lax
    reading: `3.0` is 3, a string is no number): (the value, None), (None, None) for `null` (the
    key left to the launcher), or (None, what the class wants)."""
    kinds = {type(v) for v in f.domain}
    if value is None:
        return None, None
    if kinds == {int} and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kinds == {bool} and isinstance(value, int) and value in (0, 1):
        value = bool(value)
    if len(kinds) == 1 and type(value) in kinds:
        return value, None
    wants = {int: "a JSON number", bool: "true or false", str: "a JSON string"}.get(next(iter(kinds)), "")
    return None, wants or "a value of its domain"


def write_into_json(
    heads: Mapping[str, list[tuple[str, str]]],
    tail: list[str],
    values: Mapping[str, Scalar],
    launcher: Launcher | None = None,
    as_read: Mapping[str, str] | None = None,
) -> set[str]:
    """Write the modelled keys of `values` into the JSON values `tail` (the passed-through words)
    holds for their flags, in place, and take out the modelled keys `values` lacks; the fields so
    written (their dotted words are then left out). `launcher`: its parser's spellings (`_` as `-`,
    an abbreviation) name the flag a typed word is. `as_read`: the dotted flag each field was typed
    with (`-ac.flash_attn_version`): read, its group was the flag's last, and it is written last."""
    from solver.pack.parser_flags import resolve_flag, spelled_as_parser_reads

    written: set[str] = set()

    def spell(typed: str) -> str:
        return spelled_as_parser_reads(launcher, typed) if launcher is not None else typed

    def meant(typed: str) -> str:  # the pack's spelling of the JSON flag a typed one is
        return (resolve_flag(launcher, spell(typed), heads)[0] or "") if launcher is not None else typed

    def flag_of(typed: str) -> tuple[str, ...] | None:  # the JSON flag, by the fields it holds
        return tuple(sorted(n for n, _ in heads[meant(typed)])) if meant(typed) in heads else None

    # The parser makes one JSON value of each flag's dotted words as spelled and puts them after
    # every other word, the spelling that came last last: that value replaces all the others, so a
    # modelled key is written as a dotted word of that spelling, to join it.
    last: dict[tuple[str, ...], str] = {}
    seen: set[str] = set()
    for word in tail:
        typed = word.partition("=")[0]
        if not (word.startswith("-") and "." in typed):
            continue
        head = dotted_head(typed)
        held = flag_of(head)
        if held is not None and spell(head) not in seen:
            last[held] = head  # a group that comes after the flag's earlier ones
        seen.add(spell(head))
    for i, word in enumerate(tail):
        flag, eq, attached = word.partition("=")
        if flag not in heads or flag_of(flag) in last:
            continue
        text = attached if eq else (tail[i + 1] if i + 1 < len(tail) else "")
        value = json_object(text)
        if value is None:
            continue
        for name, key in heads[flag]:
            if name in values:
                value[key] = values[name]
                written.add(name)
            else:  # left to the launcher (a repair unsets it): not written, not kept from the typed value
                value.pop(key, None)
        if eq:
            tail[i] = f"{flag}={json.dumps(value)}"
        else:
            tail[i + 1] = json.dumps(value)
    as_typed = {n: flag for n, flag in (as_read or {}).items() if n in values and n not in written}
    for group in last.values():
        for name, key in heads.get(meant(group), []):
            if name in values and name not in as_typed:
                tail += [f"{group}.{key}", _dotted_text(values[name])]
                written.add(name)
    for name, flag in as_typed.items():
        tail += [flag, _dotted_text(values[name])]
        written.add(name)
    return written


def _dotted_text(value: Scalar) -> str:
    """A value as a dotted word's text the parser reads back as it (JSON for a number or a bool)."""
    return json.dumps(value) if isinstance(value, bool | int) else str(value)


def forget(keys: list[tuple[str, str]], from_json: set[str], options: dict[str, Scalar]) -> None:
    """Unset the options a JSON flag's value gave: a later value of the flag replaced it."""
    for name, _ in keys:
        if name in from_json:
            from_json.discard(name)
            del options[name]


def dotted_head(word: str) -> str:
    """The JSON flag a dotted word's value joins, as typed (`--cfg.a.b=1` -> `--cfg`)."""
    return word.partition("=")[0].partition(".")[0]


def dotted_last(
    words: list[str], attached: Sequence[str], head: Callable[[str], str] = dotted_head
) -> list[str]:
    """The words in the order a `dotted` parser reads them: each `--flag.key VALUE` (or
    `--flag.key=VALUE`) is taken out where it was typed and read after every other word, as one
    JSON value of `--flag` (vLLM's FlexibleArgumentParser), so the words on either side of it meet:
    `--sizes 1 2 --cfg.mode 3 4` gives `--sizes` the values 1, 2 and 4. The parser makes one JSON
    value of the words with the same `head` (the flag as spelled, `_` read as `-`), in the order
    each head first came: so they are read grouped so, a group after the others of its head."""
    kept: list[str] = []
    moved: list[str] = []
    groups: dict[str, list[str]] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            kept += words[i:]
            break
        name = word.partition("=")[0]
        dotted = word.startswith("-") and "." in name and not _number(word)
        if dotted and not any(word.startswith(short) for short in attached):  # `-O.x` is `-O`'s value
            moved = groups.setdefault(head(word), [])
            moved.append(word)
            if "=" not in word and i + 1 < len(words):
                moved.append(words[i + 1])
                i += 1
        else:
            kept.append(word)
        i += 1
    return kept + [w for group in groups.values() for w in group]


def _number(word: str) -> bool:
    """A negative number (`-0.5`) is a value, not a dotted flag."""
    try:
        float(word)
    except ValueError:
        return False
    return True
