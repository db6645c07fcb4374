"""Launch commands in and out: the launcher's own command line read into a request, and a
resolution written back as a command ready to run.

What a command looks like is data: the pack's `[pack.launcher]` table (command words, the model
flag or positional model, the config-file flag) and each option's `flags` and `flag_value`
(see constraints/README.md). Where the pack lists the launcher's whole parser (`[launcher_flags]`),
a command is read as that parser reads it: a flag it lacks, an ambiguous prefix or a stray word
is an input error, as the launcher refuses it too. Words the pack does not model are kept, in
order, and written out unchanged. Never names a launcher; imports only the standard library,
`solver.model`, `solver.errors`, `solver.inputs.pins` and `solver.pack.parser_flags` at module
level.

>>> from solver.model import Field, Launcher, Pack
>>> pack = Pack(name="demo", version="1", launcher=Launcher(commands=("serve",),
...     model_flags=("--model",)), fields={
...     "tp": Field(name="tp", kind="option", domain=(1, 2), flags=("--tp", "-tp")),
...     "fast": Field(name="fast", kind="option", domain=(False, True), flag_value="store_true")})
>>> cmd = read_command(pack, ["serve", "--model", "m", "-tp", "2", "--port", "80", "--fast"])
>>> cmd.options, cmd.model, cmd.passthrough
({'tp': '2', 'fast': True}, 'm', ('--port', '80'))
>>> shell_line(write_command(pack, cmd, {"tp": 2, "fast": False}))
'serve --model m --port 80 --tp 2'
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from solver.errors import Collector, InputIssue, InvalidInput, input_issues
from solver.inputs.arguments import need_pack, need_words
from solver.inputs.flagwords import flag_words
from solver.inputs.launchjson import dotted_last, json_heads, write_into_json
from solver.inputs.launchwords import (
    as_parser_reads,
    choice_issue,
    config_twice,
    config_unread,
    dotted_group,
    launcher_name,
    launcher_of,
    model_again,
    model_moved_first,
    needs_model_first_issue,
    next_dotted_group,
    parser_reads,
    read_json_flag,
    second_model,
    unmodelled_value_issue,
    unread_note,
)
from solver.inputs.pins import shown
from solver.model import Launcher, Pack, Repair, Scalar
from solver.values import show as _spelled

__all__ = [
    "LaunchCommand",
    "flag_words",
    "read_command",
    "read_command_into",
    "repair_fact_changes",
    "repaired_command",
    "shell_line",
    "write_command",
]


@dataclass(frozen=True)
class LaunchCommand:
    """A launch command as typed: the program words, what the pack models, and the rest."""

    program: tuple[str, ...]  # the command words typed (empty: flags alone)
    options: dict[str, Scalar] = field(default_factory=dict)  # field -> the value as typed
    spelled: dict[str, str] = field(default_factory=dict)  # field -> the flag spelling typed
    model: str | None = None
    model_flag: str | None = None  # how the model was given (--model-path), None when positional
    model_positional: bool = False
    config: str | None = None
    passthrough: tuple[str, ...] = ()  # words the pack does not model, in order
    # `VAR=value` words before the program (or after `env`): the launcher's environment, written back.
    environment: tuple[tuple[str, str], ...] = ()
    env_word: bool = False  # typed as `env VAR=value ... program`
    # Words the launcher's parser reads and sets aside, each said: an option typed again (the last
    # wins), the model given again, a word it takes and never reads, a config file it never opens.
    repeated: tuple[str, ...] = ()
    set_aside: tuple[tuple[str, Scalar], ...] = ()  # (field, value) of each option given again later
    model_not_first: bool = False  # a `model_first` command whose first word is no model


def _problem(word: str, message: str) -> InvalidInput:
    return InvalidInput([InputIssue(field="launch command", value=word, message=message)])


def _match_program(launcher: Launcher, words: Sequence[str]) -> tuple[str, ...]:
    """The command words at the start of `words` (the longest listed command that matches; a
    program given by path matches its name), or () when the words are flags alone."""
    best: tuple[str, ...] = ()
    for command in launcher.commands:
        parts = shlex.split(command)
        head = list(words[: len(parts)])
        if head and os.path.basename(head[0]) == parts[0]:
            head[0] = parts[0]
        if head == parts and len(parts) > len(best):
            best = tuple(words[: len(parts)])
    return best


def _canonical(launcher: Launcher, program: Sequence[str]) -> str | None:
    """The listed command a typed program is (by name, whatever path it was typed with)."""
    if not program:
        return None
    typed = [os.path.basename(program[0]), *program[1:]]
    for command in launcher.commands:
        if shlex.split(command) == typed:
            return command
    return None


def _flag_table(pack: Pack) -> dict[str, tuple[str, Scalar | None]]:
    """Every option flag spelling -> (field, the value a bare flag means, None for a value flag)."""
    table: dict[str, tuple[str, Scalar | None]] = {}
    for name, f in pack.fields.items():
        if f.kind != "option" or f.env:
            continue
        bare: Scalar | None = {"store_true": True, "store_false": False, "boolean_optional": True}.get(
            f.flag_value
        )
        for flag in f.all_flags:
            table[flag] = (name, bare)
            if f.flag_value == "boolean_optional" and flag.startswith("--"):
                table["--no-" + flag[2:]] = (name, False)
    # The parser's other negative spellings (`[launcher_flags.negatives]`: vLLM's `--disable-x`).
    for negative, positive in launcher_of(pack).negatives.items():
        if table.get(positive, ("", None))[1] is not None:
            table[negative] = (table[positive][0], not table[positive][1])
    return table


def _takes_value(word: str) -> bool:
    """Whether a word after an unmodelled flag is its value: not a flag, or a negative number."""
    if not word.startswith("-") or word == "-":
        return True
    try:
        float(word)
    except ValueError:
        return False
    return True


def _stray(pack: Pack, word: str) -> InputIssue:
    return InputIssue(
        field="launch command",
        value=word,
        message=(
            f"{shown(word)} is neither a flag nor a flag's value, and {launcher_name(pack)} takes no "
            "other word here: its parser would stop with 'unrecognized arguments'"
        ),
    )


def _flag_value(
    table: Mapping[str, tuple[str, Scalar | None]],
    flag: str,
    attached: str | None,
    rest: Sequence[str],
    i: int,
    issues: Collector[InputIssue],
) -> tuple[Scalar | None, int]:
    """The value a flag the pack reads takes (`attached`: typed after `=`): a bare flag's own, or
    the next word; None (an issue added) when a bare flag has one attached or a value is missing.
    With the index of the next word."""
    bare = table[flag][1] if flag in table else None
    if bare is not None and attached is not None:
        message = f"{flag} takes no value (it is a bare flag); drop ={attached}"
        issues.add(InputIssue(field=table[flag][0], value=attached, message=message))
        return None, i
    if bare is not None:
        return bare, i
    if attached is not None:
        return attached, i
    if i < len(rest):
        return rest[i], i + 1
    issues.add(InputIssue(field=flag, value=None, message=f"{flag} needs a value"))
    return None, i


def _after_options(
    pack: Pack, words: Sequence[str], issues: Collector[InputIssue], takes_model: bool
) -> str | None:
    """The words after `--`, which argparse reads as positionals whatever they look like: the
    model, when the command takes one there, and no other (each an issue); the model or None."""
    model = words[0] if takes_model and words else None
    for word in words[1:] if model is not None else words:
        message = (
            f"{shown(word)} comes after `--`, where {launcher_name(pack)}'s parser reads only words "
            "without a flag, and it takes no other: it would stop with 'unrecognized arguments'"
        )
        issues.add(InputIssue(field="launch command", value=word, message=message))
    return model


def _bare_word(
    pack: Pack, command: str | None, moved: str | None, model: str | None, unread: str | None, word: str
) -> tuple[str | None, str | None, InputIssue | None]:
    """A word without a flag before `--`, where the launcher's whole parser is known: (the word
    taken as the model, or as the word an `unread_positional` command never reads; a note; an
    issue). Argparse reads the positional model between flags too (`positional_anywhere`)."""
    launcher = launcher_of(pack)
    late_model = command in launcher.positional_model and model is None and word != "-"
    if late_model and launcher.positional_anywhere:
        return word, None, None
    if command in launcher.unread_positional and unread is None:
        return word, unread_note(pack, str(command), word), None
    if moved and command in launcher.positional_model:
        return None, None, second_model(pack, str(command), moved, str(model), word)
    return None, None, _late_model(pack, str(command), word) if late_model else _stray(pack, word)


def _late_model(pack: Pack, command: str, word: str) -> InputIssue:
    """A model without a flag after other words, for a launcher that reads it first alone."""
    flags = " or ".join(launcher_of(pack).model_flags) or "its model flag"
    return InputIssue(
        field="launch command",
        value=word,
        message=(
            f"{shown(word)}: {launcher_name(pack)} reads a model given without a flag only as the "
            f"first word after `{command}`; move it there, or give it with {flags}"
        ),
    )


def _pass_through(
    pack: Pack,
    word: str,
    flag: str,
    eq_given: bool,
    rest: Sequence[str],
    i: int,
    passthrough: list[str],
    issues: Collector[InputIssue],
) -> int:
    """Pass through a word the pack does not model, with the words the launcher's parser reads as
    its value (without the parser's table: the next word, unless it is a flag); the index of the
    next word to read."""
    launcher = launcher_of(pack)
    passthrough.append(word)
    start = len(passthrough)
    i = _pass_values(pack, word, flag, eq_given, rest, i, passthrough, issues)
    values = [word.partition("=")[2]] if eq_given else passthrough[start:]
    issue = (
        unmodelled_value_issue(pack, word, flag, values) if launcher.flags and word.startswith("-") else None
    )
    issues.add(*(() if issue is None else (issue,)))
    return i


def _pass_values(
    pack: Pack,
    word: str,
    flag: str,
    eq_given: bool,
    rest: Sequence[str],
    i: int,
    passthrough: list[str],
    issues: Collector[InputIssue],
) -> int:
    """`_pass_through`'s reading of the words a flag the pack does not model takes."""
    launcher = launcher_of(pack)
    if eq_given or not word.startswith("-"):
        issue = choice_issue(pack, flag, word.partition("=")[2]) if eq_given else None
        issues.add(*(() if issue is None else (issue,)))
        return i
    # No table: the next word unless it is a flag. Not in the table: a short flag of `attached`,
    # alone (`-O 3`) or with its value (`-O3`).
    takes = "optional"
    if launcher.flags:
        takes = launcher.flags.get(flag) or ("value" if flag in launcher.attached else "switch")
    if takes == "switch":
        return i
    if takes == "value":
        if i < len(rest) and _takes_value(rest[i]):
            passthrough.append(rest[i])
            issue = choice_issue(pack, flag, rest[i])
            issues.add(*(() if issue is None else (issue,)))
            return i + 1
        issues.add(InputIssue(field="launch command", value=word, message=f"{word} needs a value"))
        return i
    while i < len(rest) and _takes_value(rest[i]):  # `optional`: at most one; `list`: every one
        passthrough.append(rest[i])
        i += 1
        if takes == "optional":
            break
    return i


def read_command(pack: Pack, words: Sequence[str]) -> LaunchCommand:
    """Read a launch command (`python -m ... --flag value ...`, or the flags alone).

    Option flags (any alias the pack lists, `--flag value` or `--flag=value`) become the options
    of the request, with their values as typed (validated later, like `--set`); the model flag or
    positional model and the config-file flag are kept apart; every other word is passed
    through. Raises `InvalidInput` for a command the pack does not list, a flag without its
    value, or one option given twice with different values.
    """
    issues = input_issues()
    command = read_command_into(pack, words, issues)
    issues.check()
    return command


def read_command_into(pack: Pack, words: Sequence[str], issues: Collector[InputIssue]) -> LaunchCommand:
    """`read_command`, adding the command's issues to `issues` and returning what its words read
    besides (the model, the other flags): a caller that goes on collecting checks those too, so
    that one run reports every problem of the command. Raises only for a command of no program
    the pack lists."""
    launcher = launcher_of(need_pack(pack, "read_command"))
    environment, env_word, words = _environment_prefix(list(need_words(words, "read_command")))
    program = _match_program(launcher, words)
    if not program and words and not words[0].startswith("-"):
        known = "; ".join(launcher.commands) or "none (give the flags alone after --)"
        raise _problem(
            words[0],
            f"{shown(words[0])} is not a command of the {pack.name} pack's "
            f"launcher (known: {known}); or give the launcher's flags alone",
        )
    rest = words[len(program) :]
    model: str | None = None
    model_flag: str | None = None
    positional = False
    canonical = _canonical(launcher, program)
    moved, rest = model_moved_first(launcher, canonical, rest)
    if canonical in launcher.positional_model and rest and not rest[0].startswith("-"):
        model, positional, rest = rest[0], True, rest[1:]
        model_flag, positional = (moved, False) if moved else (None, True)
    model_not_first = canonical in launcher.model_first and model is None
    table = _flag_table(pack)
    issues.add(*needs_model_first_issue(pack, canonical, rest if model_not_first else []))
    options: dict[str, Scalar] = {}
    spelled: dict[str, str] = {}
    config: str | None = None
    passthrough: list[str] = []
    repeated: list[str] = []
    set_aside: list[tuple[str, Scalar]] = []
    heads = json_heads(pack)
    from_json: set[str] = set()  # options read from a JSON flag's value
    unread: str | None = None  # the word an `unread_positional` command takes and never reads
    pending: dict[str, InputIssue] = {}  # values the parser refuses (a dotted key's: its last only)
    group: str | None = None  # the dotted words' JSON value being read (its head, as the parser spells it)
    if launcher.dotted:
        rest = dotted_last(rest, launcher.attached, lambda word: dotted_group(launcher, word))
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if word == "--" and launcher.flags:  # argparse: every later word is a positional
            takes_model = canonical in launcher.positional_model and launcher.positional_anywhere
            after = _after_options(pack, rest[i:], issues, model is None and takes_model)
            model, positional = (after, True) if after is not None else (model, positional)
            break
        if word == "--":  # the end of options: the rest is the launcher's, untouched
            passthrough += rest[i - 1 :]
            break
        # `--flag=value`, and `-tp=2` for a short flag the pack lists (argparse reads both).
        flag, eq, attached = word.partition("=") if word.startswith("-") else (word, "", "")
        if eq and not word.startswith("--") and flag not in table:
            flag, eq, attached = word, "", ""
        eq_given = bool(eq)
        if launcher.flags and (not word.startswith("-") or _takes_value(word)):
            # The launcher's whole parser is known: it takes no word that is not a flag or its value,
            # but the positional model, which argparse reads between flags too.
            taken, note, issue = _bare_word(pack, canonical, moved, model, unread, word)
            if taken is not None and canonical in launcher.unread_positional:
                unread = taken
            elif taken is not None:
                model, positional = taken, True
            repeated += [note] if note else []
            issues.add(*(() if issue is None else (issue,)))
            continue
        read = parser_reads(pack, flag, table, issues) if launcher.flags else flag
        if read is None:  # reported; its value, if it has one, is no stray word of its own
            i += not eq_given and i < len(rest) and _takes_value(rest[i])
            continue
        flag = read
        typed_flag = word.partition("=")[0]
        if heads and "." in typed_flag:
            group = next_dotted_group(
                launcher, heads.get(flag.partition(".")[0], []), word, group, options, pending, from_json
            )
        if heads and flag in heads and "." not in typed_flag:
            i = read_json_flag(
                pack, heads[flag], flag, word, rest, i, passthrough, from_json, options, spelled, issues
            )
            continue
        if not (flag in table or flag in launcher.model_flags or flag == launcher.config_flag):
            i = _pass_through(pack, word, flag, eq_given, rest, i, passthrough, issues)
            continue
        value, i = _flag_value(table, flag, attached if eq_given else None, rest, i, issues)
        if value is None:
            continue
        name = table[flag][0] if flag in table else ""
        value, problem = as_parser_reads(pack, flag, value, name or None, typed_flag)
        # vLLM merges `--flag.key` words into one JSON value: only a dotted key's last value is checked
        dotted = launcher.dotted and "." in flag
        key = name if dotted else str(i)
        pending.pop(key, None)
        if problem is not None or value is None:  # refused, or `--flag.key null`: left to the launcher
            pending.update({key: problem} if problem is not None else {})
            options.pop(name, None)
            continue
        if flag in launcher.model_flags:
            again = model not in (None, value)  # the launcher reads the last, or what it moved first
            repeated += [model_again(pack, str(canonical), str(model), flag, str(value), bool(moved))] * again
            model, model_flag = (model, model_flag) if moved else (str(value), flag)
            continue
        if flag == launcher.config_flag:
            exact = word == launcher.config_flag  # (the only spelling the launcher opens a file for)
            repeated += [] if exact else [config_unread(pack, word, str(value))]
            issues.add(*([config_twice(pack, config, str(value))] if exact and config is not None else []))
            config = str(value) if exact and config is None else config
            continue
        if name in options and options[name] != value:  # argparse: the last one wins
            set_aside += [] if dotted else [(name, options[name])]
            repeated.append(
                f"{_shown_option(spelled[name], options[name])} is given again as "
                f"{_shown_option(flag, value)}: {launcher_name(pack)} reads the last one"
            )
        options[name] = value
        spelled[name] = flag
    issues.add(*pending.values())
    return LaunchCommand(
        program=program,
        options=options,
        spelled=spelled,
        model=model,
        model_flag=model_flag,
        model_positional=positional,
        config=config,
        passthrough=tuple(passthrough),
        environment=environment,
        env_word=env_word,
        repeated=tuple(repeated),
        set_aside=tuple(set_aside),
        model_not_first=model_not_first,
    )


def _shown_option(flag: str, value: Scalar) -> str:
    return flag if isinstance(value, bool) else f"{flag} {_spelled(value)}"


# A shell's variable assignment: a name of letters, digits and `_`, not starting with a digit.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _environment_prefix(words: list[str]) -> tuple[tuple[tuple[str, str], ...], bool, list[str]]:
    """The `VAR=value` words in front of a command (after `env`, if typed), and the rest.

    A shell runs `VAR=1 python -m ...` with VAR in the launcher's environment, so such words are
    the launcher's environment variables, not a command of their own. `env`'s own options change
    what the launcher inherits in ways a command line does not show: refused, with what to type."""
    env_word = bool(words) and os.path.basename(words[0]) == "env"
    start = 1 if env_word else 0
    if env_word and len(words) > 1 and words[1].startswith("-"):
        raise _problem(
            words[1],
            f"env's option {shown(words[1])} is not read: give the variables as NAME=VALUE words "
            "before the launcher's command (without env's options)",
        )
    end = start
    while end < len(words) and _ASSIGNMENT.match(words[end]):
        end += 1
    pairs = tuple((name, value) for name, _, value in (w.partition("=") for w in words[start:end]))
    return pairs, env_word, words[end:]


def write_command(
    pack: Pack,
    command: LaunchCommand | None,
    values: Mapping[str, Scalar],
    *,
    fields: Iterable[str] | None = None,
) -> list[str]:
    """The launch command that runs `values`: the program typed (else the pack's first command),
    the model and config file as typed, the passed-through words in order, then every option of
    `fields` (default: every option in `values`) in the pack's field order."""
    launcher = launcher_of(pack)
    command = command or LaunchCommand(program=())
    words: list[str] = (["env"] if command.env_word else []) + [f"{n}={v}" for n, v in command.environment]
    words += list(command.program) or (shlex.split(launcher.commands[0]) if launcher.commands else [])
    if command.model is not None:
        if command.model_positional:
            words.append(command.model)
        else:
            words += [launcher.model_flags[0] if launcher.model_flags else "--model", command.model]
    if command.config is not None and launcher.config_flag:
        words += [launcher.config_flag, command.config]
    tail = list(command.passthrough)
    end = tail.index("--") if "--" in tail else len(tail)
    wanted, head = set(values if fields is None else fields), tail[:end]
    dotted = {n: flag for n, flag in command.spelled.items() if "." in flag}  # (read: its group was last)
    in_json = write_into_json(
        json_heads(pack), head, {n: values[n] for n in wanted & set(values)}, launcher, dotted
    )
    words += head
    for name, f in pack.fields.items():
        if name in wanted and f.kind == "option" and not f.env and name in values and name not in in_json:
            words += flag_words(f, values[name])
    return words + tail[end:]


def shell_line(words: Sequence[Any]) -> str:
    """The words as one line a POSIX shell reads back as the same words."""
    return shlex.join(str(w) for w in words)


def repaired_command(pack: Pack, command: LaunchCommand, repair: Repair) -> list[str]:
    """The launch command as typed with a repair applied: the options it unsets left out (the
    launcher then decides them), the ones it sets written in, and so for the environment
    variables in front; the rest exactly as typed. Other facts the repair changes are not on a
    command line: see `repair_fact_changes`."""
    options: dict[str, Scalar] = {n: v for n, v in command.options.items() if n not in repair.unset}
    environment = {n: v for n, v in command.environment if n not in repair.unset}
    for name, value in repair.set.items():
        if pack.fields[name].kind == "option":
            options[name] = value
        elif pack.fields[name].env:
            environment[name] = _spelled(value)
    return write_command(pack, replace(command, environment=tuple(environment.items())), options)


def repair_fact_changes(pack: Pack, repair: Repair) -> list[str]:
    """What a repair changes that a launch command cannot say (facts but environment variables):
    `gpu_arch=sm90`, `not gpu_arch` for a fact to leave unknown."""
    said = [n for n in (*repair.set, *repair.unset) if pack.fields[n].kind == "fact"]
    changed = [n for n in said if not pack.fields[n].env]
    return [f"{n}={_spelled(repair.set[n])}" if n in repair.set else f"not {n}" for n in changed]
