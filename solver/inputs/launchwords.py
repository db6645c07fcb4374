"""What a launcher's parser makes of the words of a typed command, for `solver.inputs.launch`: the
flag it reads a typed one as (an abbreviation; a did-you-mean for none), a value as the parser
converts it (`choices`, `int()`, a dotted JSON key's value), the keys a JSON flag's config class
takes, the model moved first or given again, the word a command takes and never reads, the config
file read only after the exact word `--config`; and what each says.

Everything here is read from the pack's `[pack.launcher]` and `[launcher_flags]` tables (see
constraints/README.md); nothing names a launcher. Imports the standard library, `solver.model`,
`solver.errors`, `solver.inputs.pins`, `solver.inputs.launchjson` and `solver.pack.parser_flags`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from solver.errors import Collector, InputIssue
from solver.inputs.launchjson import dotted_head, dotted_value, forget, json_object, json_typed
from solver.inputs.pins import shown
from solver.model import Launcher, Pack, Scalar
from solver.pack.parser_flags import resolve_flag, spelled_as_parser_reads
from solver.values import show as _spelled

__all__ = [
    "as_parser_reads",
    "config_twice",
    "config_unread",
    "dotted_group",
    "dotted_path",
    "json_key_issue",
    "json_value_issue",
    "keys_of_a_value",
    "launcher_name",
    "launcher_of",
    "model_again",
    "model_moved_first",
    "needs_model_first_issue",
    "next_dotted_group",
    "not_json_object",
    "parser_reads",
    "read_json_flag",
    "second_model",
    "typed_json_value",
    "unmodelled_value_issue",
    "unread_note",
]


def launcher_of(pack: Pack) -> Launcher:
    return pack.launcher or Launcher()


def launcher_name(pack: Pack) -> str:
    return f"{pack.name} {pack.version.partition('+')[0]}"


def _parser_flag(launcher: Launcher, flag: str) -> str:
    """The parser's own spelling of `flag` (a unique prefix of it, where argparse reads one)."""
    return flag if flag in launcher.flags else (resolve_flag(launcher, flag, {})[0] or flag)


def choice_issue(pack: Pack, flag: str, value: str) -> InputIssue | None:
    """The launcher's parser refusing `value` after `flag`, when that flag takes only some words
    (argparse's `choices`, `[launcher_flags.choices]`): `none` or `auto` may be confsolve's words
    for a field and still be no word of the launcher's flag."""
    allowed = launcher_of(pack).choices.get(flag)
    if allowed is None or value in allowed:
        return None
    close = tuple(difflib.get_close_matches(value, allowed, n=3, cutoff=0.6))
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    hint = _leave_out(pack, flag, value) or hint
    listed = ", ".join(allowed[:20]) + (", ..." if len(allowed) > 20 else "")
    return InputIssue(
        field="launch command",
        value=value,
        message=(
            f"{flag} {shown(value)} is not a choice of {launcher_name(pack)}'s parser, which refuses "
            f"it{hint}. It takes: {listed}"
        ),
        did_you_mean=close,
    )


def _leave_out(pack: Pack, flag: str, value: Any) -> str:
    """The hint for the pack's own word for a flag left out (`auto`, `none`), typed after it."""
    for f in pack.fields.values():
        if flag in f.all_flags and value in (f.auto, None if f.absent is None else _spelled(f.absent)):
            return f" (leave {flag} out: that is how the launcher is given {value})"
    return ""


def _int_issue(pack: Pack, flag: str, value: str) -> InputIssue:
    return InputIssue(
        field="launch command",
        value=value[:80],
        message=(
            f"{flag} {shown(value)}: {launcher_name(pack)}'s parser reads an integer after {flag} "
            f"(Python's int()), and refuses this{_leave_out(pack, flag, value)}"
        ),
    )


def as_parser_reads(
    pack: Pack, flag: str, value: Scalar, field: str | None, typed: str = ""
) -> tuple[Scalar | None, InputIssue | None]:
    """A modelled flag's value as the launcher's parser converts it: a word its `choices` lack
    refused; after a flag it reads with int(), the integer (`+8`, ` 8`, `0_8` are 8; anything
    int() refuses is refused); after a dotted JSON key, the JSON value its config class takes
    (None: `null`, the key left to the launcher; typed `--flag.key+`, the list of the value's
    comma-separated words). Else the value as typed. `field`: the field the flag sets (None:
    the model or config flag)."""
    launcher = launcher_of(pack)
    if not isinstance(value, str):
        return value, None
    choice = choice_issue(pack, flag, value)
    if choice is not None:
        return None, choice
    if launcher.dotted and "." in flag and field is not None:
        listed = dotted_path(typed or flag)[1]
        return typed_json_value(pack, field, flag, value.split(",") if listed else dotted_value(value))
    if field is not None and _parser_flag(launcher, flag) in launcher.integers:
        try:
            return str(int(value)), None
        except ValueError:  # refused by the parser; anything but the pack's `auto` is by the pack too
            return (None, _int_issue(pack, flag, value)) if _leave_out(pack, flag, value) else (value, None)
    return value, None


def unmodelled_value_issue(pack: Pack, word: str, flag: str, values: Sequence[str]) -> InputIssue | None:
    """The launcher's refusal of a value of a flag the pack does not model (typed as `word`),
    where its table says how the parser converts it (int(); a JSON flag's config class, and a
    dotted word's value under its key), or None."""
    launcher = launcher_of(pack)
    meant = _parser_flag(launcher, flag)
    typed = spelled_as_parser_reads(launcher, word.partition("=")[0])
    for value in values:
        if meant in launcher.integers:
            try:
                int(value)
            except ValueError:
                return _int_issue(pack, flag, value)
        if launcher.dotted and meant in launcher.json_keys and "." not in typed:
            read = json_object(value)
            if read is None:
                return not_json_object(pack, flag, value)
            return json_value_issue(pack, meant, [], read)
        if launcher.dotted and meant in launcher.json_keys:
            path, appended = dotted_path(typed)
            return json_value_issue(pack, meant, path, value.split(",") if appended else dotted_value(value))
    return None


def dotted_path(word: str) -> tuple[list[str], bool]:
    """The keys `--flag.key.sub` (or `--flag.key+`) names under its JSON flag, and whether a `+`
    ends it: vLLM's parser then sets the key to the list of the value's comma-separated words."""
    key = word.partition("=")[0].partition(".")[2]
    return key.removesuffix("+").split("."), key.endswith("+")


def not_json_object(pack: Pack, flag: str, text: str) -> InputIssue:
    message = f"{flag} {shown(text)} is not a JSON object, and {launcher_name(pack)}'s parser refuses it"
    return InputIssue(field="launch command", value=text[:80], message=message)


def json_key_issue(pack: Pack, flag: str, path: Sequence[str]) -> InputIssue | None:
    """The launcher's refusal of the key `path` (`["pass_config", "x"]`) under its JSON flag
    `flag`, where a config class there lacks it (`json_keys`: the flag's keys, and under
    `flag.key` those of a key holding a config class of its own; other keys hold what they
    like), or None."""
    tables = launcher_of(pack).json_keys
    for depth, key in enumerate(path):
        allowed = tables.get(".".join([flag, *path[:depth]]))
        if allowed is None:
            return None
        if key not in allowed:
            close = tuple(difflib.get_close_matches(key, allowed, n=3, cutoff=0.6))
            listed = ", ".join(allowed[:12]) + (", ..." if len(allowed) > 12 else "")
            hint = f"; did you mean {' or '.join(close)}?" if close else f". It takes: {listed}"
            named = shown(".".join(path[: depth + 1]))
            message = f"{flag} takes no key {named}: {launcher_name(pack)}'s config class refuses it{hint}"
            return InputIssue(field="launch command", value=named, message=message, did_you_mean=close)
    return None


def json_value_issue(pack: Pack, flag: str, path: list[str], value: Any) -> InputIssue | None:
    """The launcher's refusal of `value` set at `path` under its JSON flag `flag` (`[]`: the
    flag's whole JSON object): a key a config class there lacks, or a key holding a config class
    given something else than a JSON object (pydantic refuses both); None when neither."""
    tables = launcher_of(pack).json_keys
    issue = json_key_issue(pack, flag, path)
    where = ".".join([flag, *path])
    if issue is not None or where not in tables:
        return issue
    if not isinstance(value, dict):
        message = (
            f"{flag}: {'.'.join(path)} takes a JSON object (keys {', '.join(tables[where][:6])}, ...), and "
            f"{launcher_name(pack)}'s config class refuses {json.dumps(value)[:40]}"
        )
        return InputIssue(field="launch command", value=json.dumps(value)[:80], message=message)
    for key, held in value.items():
        issue = json_value_issue(pack, flag, [*path, str(key)], held)
        if issue is not None:
            return issue
    return None


def typed_json_value(pack: Pack, name: str, flag: str, raw: Any) -> tuple[Scalar | None, InputIssue | None]:
    """A modelled key's JSON value as the config class takes it: the value as text (None for
    `null`, the key left out) or the refusal."""
    value, wants = json_typed(pack.fields[name], raw)
    if wants is None:
        return (None if value is None else _spelled(value)), None
    key = pack.fields[name].cli_flag.partition(".")[2]
    hint = _leave_out(pack, flag, raw).replace(f"leave {flag} out", "leave the key out")
    hint += " (a `+` after the key makes its value the list of its comma-separated words)" * isinstance(
        raw, list
    )
    message = (
        f"{flag}: {key} {json.dumps(raw)[:40]} is not {wants}, and {launcher_name(pack)}'s config "
        f"class refuses it{hint}"
    )
    return None, InputIssue(field=name, value=json.dumps(raw)[:80], message=message)


def model_moved_first(
    launcher: Launcher, command: str | None, words: list[str]
) -> tuple[str | None, list[str]]:
    """For a `model_first` command, the words with the first model flag (spelled exactly, with
    its value) moved to the front as its parser moves it, and that flag; else (None, words)."""
    if command not in launcher.model_first or not launcher.model_flags:
        return None, words
    flag = launcher.model_flags[0]
    spelled = re.compile(rf"{re.escape(flag)}(=.+)?")
    at = next((i for i, w in enumerate(words) if spelled.fullmatch(w)), None)
    if at is None or (words[at] == flag and at + 1 >= len(words)):
        return None, words
    if words[at] == flag:
        return flag, [words[at + 1], *words[:at], *words[at + 2 :]]
    return flag, [words[at].partition("=")[2], *words[:at], *words[at + 1 :]]


def second_model(pack: Pack, command: str, flag: str, model: str, word: str) -> InputIssue:
    """A word without a flag besides the model of a `model_first` command's first `--model`."""
    return InputIssue(
        field="launch command",
        value=word,
        message=(
            f"{shown(word)}: `{command}` moves {flag} {shown(model)} to be its first word, so this is a "
            f"second word without a flag, and {launcher_name(pack)}'s parser would stop with "
            "'unrecognized arguments'; give the model once"
        ),
    )


def model_again(pack: Pack, command: str, model: str, flag: str, value: str, first_wins: bool) -> str:
    """The note on a model given again: the launcher reads the last one (argparse), or, for a
    `model_first` command, the one it moved first."""
    if first_wins:
        return (
            f"the model is given again as {flag} {shown(value)}: `{command}` serves the first one, "
            f"{shown(model)} ({launcher_name(pack)} moves it to be its first word and ignores this one)"
        )
    name = launcher_name(pack)
    return f"the model {shown(model)} is given again as {flag} {shown(value)}: {name} reads the last one"


def unread_note(pack: Pack, command: str, word: str) -> str:
    """The note on the word an `unread_positional` command takes and never reads."""
    flags = " or ".join(launcher_of(pack).model_flags) or "its model flag"
    return (
        f"{shown(word)} is a word without a flag, which `{command}` takes and never reads: it serves the "
        f"model of {flags} (its own default model when none is given), not this word"
    )


def config_unread(pack: Pack, word: str, path: str) -> str:
    """The note on a config file given other than as `--config FILE`, which no launcher opens."""
    flag = launcher_of(pack).config_flag
    return (
        f"{word.partition('=')[0]} {shown(path)}: {launcher_name(pack)} reads a config file only after "
        f"the exact word {flag} (`{flag} FILE`); its parser takes this one and never opens the file"
    )


def config_twice(pack: Pack, first: str, second: str) -> InputIssue:
    flag = launcher_of(pack).config_flag
    return InputIssue(
        field="launch command",
        value=second,
        message=(
            f"{flag} is given twice ({shown(first)}, {shown(second)}): {launcher_name(pack)} takes one "
            "config file and refuses a second; keep one"
        ),
    )


def read_json_flag(
    pack: Pack,
    keys: list[tuple[str, str]],
    flag: str,
    word: str,
    rest: Sequence[str],
    i: int,
    passthrough: list[str],
    from_json: set[str],
    options: dict[str, Scalar],
    spelled: dict[str, str],
    issues: Collector[InputIssue],
) -> int:
    """A JSON flag of a dotted launcher with its value: the keys the pack models read into
    `options` (a key the value lacks is unset again: the value replaces the flag's last one
    whole), the words passed through, the flag spelled out; the index of the next word."""
    _, eq, text = word.partition("=")
    if not eq:
        if i >= len(rest):
            passthrough.append(word)
            return i
        text, i = rest[i], i + 1
    value = json_object(text)
    issue = None if value is None else json_value_issue(pack, flag, [], value)
    if value is None:
        issues.add(not_json_object(pack, flag, text))
    elif issue is not None:
        issues.add(issue)
    else:
        typed = {name: typed_json_value(pack, name, flag, value[key]) for name, key in keys if key in value}
        issues.add(*(problem for _, problem in typed.values() if problem is not None))
        for name, (read, _) in typed.items():
            if read is not None:
                options[name] = read
                spelled[name] = pack.fields[name].cli_flag
                from_json.add(name)
        forget([(n, k) for n, k in keys if n not in typed or typed[n][0] is None], from_json, options)
    passthrough += [flag, text]
    return i


def needs_model_first_issue(pack: Pack, command: str | None, words: Sequence[str]) -> list[InputIssue]:
    """A `model_first` command with a `needs_model_first` flag (spelled out: `--a_b` or `--a-b`,
    `=value`), no config file, and a flag as its first word (after its first model flag moved to
    the front): its parser refuses it before reading anything."""
    launcher = launcher_of(pack)
    if command not in launcher.model_first or not words or not words[0].startswith("-"):
        return []
    config = launcher.config_flag

    def spelled(word: str, flag: str | None) -> bool:
        name, eq, value = word.partition("=")
        return flag is not None and spelled_as_parser_reads(launcher, name) == flag and bool(value or not eq)

    if any(spelled(w, config) for w in words):
        return []
    typed = next((w for w in words for f in launcher.needs_model_first if spelled(w, f)), None)
    if typed is None:
        return []
    message = (
        f"{typed.partition('=')[0]}: `{command}` with this flag takes the model only as its first word "
        f"(or from a {config} file), and {launcher_name(pack)}'s parser refuses a command whose first "
        f"word is a flag ({shown(words[0])}); put the model first: `{command} MODEL ...`"
    )
    return [InputIssue(field="launch command", value=typed, message=message)]


def keys_of_a_value(pack: Pack, flag: str, path: list[str], table: Mapping[str, object]) -> InputIssue | None:
    """A key under a key the pack models (`--attention-config.backend.x`): that key holds one value
    of its domain, and the launcher's config class refuses a JSON object there."""
    for depth in range(1, len(path)):
        modelled = f"{flag}.{'.'.join(path[:depth])}"
        if modelled in table:
            message = (
                f"{flag}.{'.'.join(path)}: {modelled} takes one value, not keys, and "
                f"{launcher_name(pack)}'s config class refuses a JSON object there"
            )
            return InputIssue(field="launch command", value=".".join(path), message=message)
    return None


def dotted_group(launcher: Launcher, word: str) -> str:
    """The JSON value a dotted word joins: its flag as the parser spells it (`--a_b.x` is `--a-b`,
    `--attention-conf.x` stays a value of its own, as `-ac.x` does)."""
    return dotted_head(spelled_as_parser_reads(launcher, word.partition("=")[0]))


def next_dotted_group(
    launcher: Launcher,
    keys: list[tuple[str, str]],
    word: str,
    group: str | None,
    options: dict[str, Scalar],
    pending: dict[str, InputIssue],
    from_json: set[str],
) -> str:
    """The group of the dotted word `word` (of a flag whose modelled keys are `keys`): a new one is
    a JSON value of the flag that replaces, whole, what an earlier value (typed JSON, or a group
    spelled otherwise) set; an earlier group's refused value stays refused (the parser converts
    each JSON value it is given, replaced or not)."""
    new = dotted_group(launcher, word)
    if new != group:
        for name, _ in keys:
            options.pop(name, None)
            from_json.discard(name)
            if name in pending:  # (kept, under a key of its own: a later value no longer takes it out)
                pending[f"{name} {group}"] = pending.pop(name)
    return new


def parser_reads(
    pack: Pack, flag: str, table: Mapping[str, object], issues: Collector[InputIssue]
) -> str | None:
    """The flag the launcher's parser reads `flag` as, or None (an issue added) when it has none."""
    launcher = launcher_of(pack)
    spelled = spelled_as_parser_reads(launcher, flag)
    if spelled in table:
        return spelled
    if launcher.dotted and spelled.startswith("-") and "." in spelled:
        # `--flag.key`: one key of the JSON flag `--flag` (its name read as any flag's: a prefix)
        head = spelled.partition(".")[0]
        path, _ = dotted_path(spelled)
        meant = parser_reads(pack, head, table, issues)
        if meant is None or f"{meant}.{'.'.join(path)}" in table:
            return None if meant is None else f"{meant}.{'.'.join(path)}"
        issue = json_key_issue(pack, meant, path) or keys_of_a_value(pack, meant, path, table)
        issues.add(*(() if issue is None else (issue,)))
        return None if issue is not None else meant
    if any(spelled.startswith(short) for short in launcher.attached):
        return spelled  # `-O 3`, or `-O3` with its value attached
    # The pack's spellings are the parser's, but `--flag.key`: the parser has `--flag` alone, and an
    # abbreviation of it is no prefix of two flags.
    own = {f: v for f, v in table.items() if not (launcher.dotted and "." in f)}
    own.update(dict.fromkeys(launcher.model_flags))
    if launcher.config_flag:
        own[launcher.config_flag] = None
    meant, could = resolve_flag(launcher, spelled, own)
    if meant is not None:
        return meant
    name = launcher_name(pack)
    close: list[str] = []
    if could:
        shown_could = ", ".join(could[:6]) + (", ..." if len(could) > 6 else "")
        message = f"{flag} is ambiguous for {name}'s parser: it could be {shown_could}; spell it out"
    else:
        if len(issues.problems) < 20:  # (a did-you-mean for the first few: 100,000 bad flags took minutes)
            known = [f for f in dict.fromkeys((*launcher.flags, *table)) if f.startswith("--")]
            close = difflib.get_close_matches(spelled, known, n=3, cutoff=0.75)
        hint = f"; did you mean {' or '.join(close)}?" if close else " (`--help` of the launcher lists them)"
        message = f"{name} has no flag {flag}{hint}"
    issues.add(
        InputIssue(
            field="launch command",
            value=flag,
            message=message,
            did_you_mean=tuple(close),
        )
    )
    return None
