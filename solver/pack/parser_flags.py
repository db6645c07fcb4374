"""`[launcher_flags]`: the launcher's own parser, as data, read into `Launcher.flags`.

A pack that lists every flag its launcher's parser has lets `solver.inputs.launch` read a typed
command the way that parser does: a flag the launcher lacks (`--attention-backnd`), a prefix it
would take as a flag (argparse's abbreviations) or a spelling it rewrites (`--tensor_parallel_size`)
is then an answer, not a word passed through unread. The table is checked against the pack's own
flags here: each modelled spelling must be a flag of that parser, taking a value the way the field
says. Every problem goes to the caller's list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from solver import frozen
from solver.errors import Collector, PackProblem
from solver.model import Field, FlagArity, Launcher
from solver.pack.crosscheck import flag_spellings, is_flag

__all__ = [
    "PARSER_ARITIES",
    "PARSER_COMMAND_LISTS",
    "PARSER_FLAG_LISTS",
    "PARSER_KEYS",
    "PARSER_SWITCHES",
    "PARSER_TABLES",
    "check_parser_flags",
    "collect_parser_flags",
    "resolve_flag",
    "spelled_as_parser_reads",
]

PARSER_ARITIES: tuple[str, ...] = get_args(FlagArity)
PARSER_SWITCHES = ("abbreviations", "underscores", "dotted", "positional_anywhere", "config_empty_refused")
PARSER_FLAG_LISTS = ("attached", "config_refused", "integers", "needs_model_first")  # lists of flags
PARSER_COMMAND_LISTS = ("unread_positional", "model_first")  # lists of `[pack.launcher]` commands
PARSER_TABLES = ("choices", "json_keys", "negatives")  # a flag -> a list of words (negatives: a flag)
_KEYS = (*PARSER_ARITIES, *PARSER_SWITCHES, *PARSER_FLAG_LISTS, *PARSER_COMMAND_LISTS, *PARSER_TABLES)
# what it fills in `Launcher`
PARSER_KEYS = ("flags", *PARSER_SWITCHES, *PARSER_FLAG_LISTS, *PARSER_COMMAND_LISTS, *PARSER_TABLES)


def collect_parser_flags(
    docs: list[tuple[str, dict[str, Any]]], launcher: Launcher | None, problems: Collector[PackProblem]
) -> Launcher | None:
    """The launcher with the `[launcher_flags]` table of whichever pack file gives one."""
    given_there = docs[0][1].get("pack", {}).get("launcher", {})
    for key in PARSER_KEYS:
        if isinstance(given_there, dict) and key in given_there:
            problems.add(PackProblem("pack.launcher", f"{key}: write it in [launcher_flags]", "pack.toml"))
    tables = [(file, doc["launcher_flags"]) for file, doc in docs if "launcher_flags" in doc]
    if not tables:
        return launcher
    file, table = tables[0]
    where = "launcher_flags"
    for other, _ in tables[1:]:
        problems.add(PackProblem(where, f"given again (first in {file})", other))
    if launcher is None:
        problems.add(PackProblem(where, "needs a [pack.launcher] table to belong to", file))
        return None
    if not isinstance(table, dict):
        problems.add(PackProblem(where, "must be a table", file))
        return launcher
    for key in table:
        if key not in _KEYS:
            problems.add(PackProblem(where, f"unknown key {key!r} (known: {', '.join(_KEYS)})", file))
    flags: dict[str, FlagArity] = {}
    for arity in PARSER_ARITIES:
        listed = table.get(arity, [])
        if not isinstance(listed, list) or not all(isinstance(f, str) for f in listed):
            problems.add(PackProblem(f"{where}.{arity}", "must be a list of flags", file))
            continue
        for flag in listed:
            if not is_flag(flag):
                problems.add(PackProblem(f"{where}.{arity}", f"{flag!r} is not a flag", file))
            elif flag in flags:
                problems.add(PackProblem(f"{where}.{arity}", f"{flag} is also listed as {flags[flag]}", file))
            else:
                flags[flag] = arity  # type: ignore[assignment]  # one of FlagArity's values
    settings = _settings(table, launcher, where, file, problems)
    settings["choices"] = _choices(table.get("choices", {}), flags, f"{where}.choices", file, problems)
    json_keys = _choices(table.get("json_keys", {}), flags, f"{where}.json_keys", file, problems, nested=True)
    settings["json_keys"] = json_keys
    settings["negatives"] = _negatives(
        table.get("negatives", {}), flags, f"{where}.negatives", file, problems
    )
    return frozen.replace(launcher, flags=flags, **settings)


def _settings(
    table: dict[str, Any], launcher: Launcher, where: str, file: str, problems: Collector[PackProblem]
) -> dict[str, Any]:
    """The table's switches and lists (of flags, of the launcher's commands)."""
    settings: dict[str, Any] = {}
    for key in PARSER_SWITCHES:
        if key in table and not isinstance(table[key], bool):
            problems.add(PackProblem(f"{where}.{key}", "must be true or false", file))
        elif key in table:
            settings[key] = table[key]
    for key in PARSER_FLAG_LISTS:
        listed = table.get(key, [])
        if not isinstance(listed, list) or not all(isinstance(f, str) and is_flag(f) for f in listed):
            problems.add(PackProblem(f"{where}.{key}", "must be a list of flags", file))
        else:
            settings[key] = tuple(listed)
    for key in PARSER_COMMAND_LISTS:
        listed = table.get(key, [])
        if not isinstance(listed, list) or not all(f in launcher.commands for f in listed):
            message = f"must be a list of the commands of [pack.launcher] ({', '.join(launcher.commands)})"
            problems.add(PackProblem(f"{where}.{key}", message, file))
        else:
            settings[key] = tuple(listed)
    return settings


def _choices(
    table: Any,
    flags: Mapping[str, FlagArity],
    where: str,
    file: str,
    problems: Collector[PackProblem],
    nested: bool = False,
) -> dict[str, list[str]]:
    """`[launcher_flags.choices]`: a value flag of the table -> the only words its parser takes
    (`.json_keys`, `nested`: a JSON value flag -> the only keys its config class takes, and
    `--flag.key` -> the only keys of the config class that key holds, `--flag.key.sub` deeper)."""
    if not isinstance(table, dict):
        problems.add(PackProblem(where, "must be a table of flags to lists of words", file))
        return {}
    choices: dict[str, list[str]] = {}
    for flag, words in table.items():
        head, dot, path = flag.partition(".")
        parent = f"{head}.{path.rpartition('.')[0]}".rstrip(".")
        if nested and dot and path.rpartition(".")[2] not in table.get(parent, ()):
            problems.add(PackProblem(where, f"{flag}: {parent} has no key {path.rpartition('.')[2]!r}", file))
        elif flags.get(head if nested else flag) in (None, "switch"):
            problems.add(PackProblem(where, f"{flag} is not a value flag of the table", file))
        elif not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
            problems.add(PackProblem(where, f"{flag}: must be a non-empty list of words", file))
        else:
            choices[flag] = list(words)
    return choices


def _negatives(
    table: Any, flags: Mapping[str, FlagArity], where: str, file: str, problems: Collector[PackProblem]
) -> dict[str, str]:
    """`[launcher_flags.negatives]`: a switch of the table -> the switch whose value it sets false
    (argparse's `--no-x`; vLLM's `--disable-x` for `--enable-x`, EnableDisableAction)."""
    if not isinstance(table, dict):
        problems.add(PackProblem(where, "must be a table of switches to switches", file))
        return {}
    negatives: dict[str, str] = {}
    for flag, turned_off in table.items():
        if (
            flags.get(flag) != "switch"
            or not isinstance(turned_off, str)
            or flags.get(turned_off) != "switch"
        ):
            problems.add(
                PackProblem(where, f"{flag} = {turned_off!r}: both must be switches of the table", file)
            )
        else:
            negatives[flag] = turned_off
    return negatives


def resolve_flag(
    launcher: Launcher, flag: str, modelled: Mapping[str, object]
) -> tuple[str | None, list[str]]:
    """The flag the launcher's parser reads `flag` as (its own spelling, with `underscores`
    applied), and the flags it could mean when that is ambiguous; (None, []) when it has none.

    `modelled` holds the pack's own spellings, which count as flags of the parser too (a pack
    may model a spelling the table lists, or an alias argparse accepts as a prefix).
    """
    if flag in modelled or flag in launcher.flags:
        return flag, []
    if launcher.abbreviations and flag.startswith("--"):
        # argparse (allow_abbrev): a long option that starts exactly one flag's spelling is it.
        matches = sorted({f for f in (*launcher.flags, *modelled) if f.startswith(flag)})
        if len(matches) == 1:
            return matches[0], []
        if matches:
            return None, matches
    return None, []


def spelled_as_parser_reads(launcher: Launcher, word: str) -> str:
    """`word` (a flag, without `=value`) as the launcher's parser rewrites it before reading."""
    if launcher.underscores and word.startswith("--"):
        name, dot, rest = word[2:].partition(".")
        return "--" + name.replace("_", "-") + dot + rest
    return word


def check_parser_flags(
    fields: Mapping[str, Field], launcher: Launcher | None, problems: Collector[PackProblem]
) -> None:
    """Each flag the pack models is one the launcher's parser has, read the same way: a value
    flag takes a value there, a bare one takes none."""
    if launcher is None or not launcher.flags:
        return
    own: dict[str, object] = {}
    for flag in (*launcher.model_flags, *((launcher.config_flag,) if launcher.config_flag else ())):
        if resolve_flag(launcher, flag, own)[0] is None:
            problems.add(
                PackProblem("pack.launcher", f"{flag} is not a flag of the launcher's parser", "pack.toml")
            )
    for name, field in fields.items():
        if field.kind != "option" or field.env:
            continue
        for flag in flag_spellings(field):
            if launcher.dotted and "." in flag:  # `--flag.key`: one key of the JSON value flag `--flag`
                flag, _, key = flag.partition(".")
                keys = launcher.json_keys.get(flag)
                if keys is not None and key not in keys:
                    message = f"{flag} takes no key {key!r} in the launcher's parser (json_keys)"
                    problems.add(PackProblem(f"field {name}", message, field.file))
            meant, _ = resolve_flag(launcher, flag, own)
            if meant is None:
                problems.add(
                    PackProblem(f"field {name}", f"{flag} is not a flag of the launcher's parser", field.file)
                )
                continue
            takes = launcher.flags[meant]
            bare = field.flag_value != "value"
            if bare != (takes == "switch"):
                wants = "no value" if takes == "switch" else "a value"
                problems.add(
                    PackProblem(
                        f"field {name}",
                        f"{flag} takes {wants} in the launcher's parser; flag_value is {field.flag_value!r}",
                        field.file,
                    )
                )
