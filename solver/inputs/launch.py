"""Launch commands in and out: the launcher's own command line read into a request, and a
resolution written back as a command ready to run.

What a command looks like is data: the pack's `[pack.launcher]` table (command words, the model
flag or positional model, the config-file flag) and each option's `flags` and `flag_value`
(see constraints/README.md). Words the pack does not model are kept, in order, and written out
unchanged. Never names a launcher; imports only the standard library, `solver.model`,
`solver.errors` and `solver.inputs.pins` at module level.

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
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from solver.errors import InputIssue, InvalidInput, input_issues
from solver.inputs.pins import shown
from solver.model import Field, Launcher, Pack, Repair, Scalar
from solver.values import same
from solver.values import show as _spelled

__all__ = [
    "LaunchCommand",
    "flag_words",
    "read_command",
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


def _launcher(pack: Pack) -> Launcher:
    return pack.launcher or Launcher()


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


def read_command(pack: Pack, words: Sequence[str]) -> LaunchCommand:
    """Read a launch command (`python -m ... --flag value ...`, or the flags alone).

    Option flags (any alias the pack lists, `--flag value` or `--flag=value`) become the options
    of the request, with their values as typed (validated later, like `--set`); the model flag or
    positional model and the config-file flag are kept apart; every other word is passed
    through. Raises `InvalidInput` for a command the pack does not list, a flag without its
    value, or one option given twice with different values.
    """
    launcher = _launcher(pack)
    words = list(words)
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
    if canonical in launcher.positional_model and rest and not rest[0].startswith("-"):
        model, positional, rest = rest[0], True, rest[1:]
    table = _flag_table(pack)
    options: dict[str, Scalar] = {}
    spelled: dict[str, str] = {}
    config: str | None = None
    passthrough: list[str] = []
    issues = input_issues()
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if word == "--":  # the end of options: the rest is the launcher's, untouched
            passthrough += rest[i - 1 :]
            break
        # `--flag=value`, and `-tp=2` for a short flag the pack lists (argparse reads both).
        flag, eq, attached = word.partition("=") if word.startswith("-") else (word, "", "")
        if eq and not word.startswith("--") and flag not in table:
            flag, eq, attached = word, "", ""
        eq_given = bool(eq)
        modelled = flag in table or flag in launcher.model_flags or flag == launcher.config_flag
        if not modelled:
            passthrough.append(word)
            if not eq_given and word.startswith("-") and i < len(rest) and _takes_value(rest[i]):
                passthrough.append(rest[i])
                i += 1
            continue
        bare = table[flag][1] if flag in table else None
        if bare is not None:
            if eq_given:
                issues.add(
                    InputIssue(
                        field=table[flag][0],
                        value=attached,
                        message=(f"{flag} takes no value (it is a bare flag); drop ={attached}"),
                    )
                )
                continue
            value: Scalar = bare
        elif eq_given:
            value = attached
        elif i < len(rest):
            value = rest[i]
            i += 1
        else:
            issues.add(InputIssue(field=flag, value=None, message=f"{flag} needs a value"))
            continue
        if flag in launcher.model_flags:
            if model is not None and model != value:
                issues.add(
                    InputIssue(
                        field="model",
                        value=str(value),
                        message=(f"the model is given twice ({model!r} and {value!r}); keep one"),
                    )
                )
            model, model_flag = str(value), flag
            continue
        if flag == launcher.config_flag:
            config = str(value)
            continue
        name = table[flag][0]
        if name in options and options[name] != value:
            issues.add(
                InputIssue(
                    field=name,
                    value=value,
                    message=(f"{spelled[name]} {options[name]} and {flag} {value} both set {name}; keep one"),
                )
            )
            continue
        options[name] = value
        spelled[name] = flag
    issues.check()
    return LaunchCommand(
        program=program,
        options=options,
        spelled=spelled,
        model=model,
        model_flag=model_flag,
        model_positional=positional,
        config=config,
        passthrough=tuple(passthrough),
    )


def flag_words(f: Field, value: Scalar) -> list[str]:
    """The words that give `f` the value `value` on the launcher's command line ([] when the
    launcher spells it by leaving the flag out)."""
    if f.absent is not None and same(value, f.absent):
        return []
    if isinstance(value, bool):
        if f.flag_value == "store_true":
            return [f.cli_flag] if value else []
        if f.flag_value == "store_false":
            return [] if value else [f.cli_flag]
        if f.flag_value == "boolean_optional":
            return [f.cli_flag] if value else ["--no-" + f.cli_flag.lstrip("-")]
    return [f.cli_flag, _spelled(value)]


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
    launcher = _launcher(pack)
    command = command or LaunchCommand(program=())
    words: list[str] = list(command.program)
    if not words and launcher.commands:
        words = shlex.split(launcher.commands[0])
    if command.model is not None:
        if command.model_positional:
            words.append(command.model)
        else:
            words += [launcher.model_flags[0] if launcher.model_flags else "--model", command.model]
    if command.config is not None and launcher.config_flag:
        words += [launcher.config_flag, command.config]
    tail = list(command.passthrough)
    end = tail.index("--") if "--" in tail else len(tail)
    words += tail[:end]
    wanted = set(values if fields is None else fields)
    for name, f in pack.fields.items():
        if name in wanted and f.kind == "option" and not f.env and name in values:
            words += flag_words(f, values[name])
    return words + tail[end:]


def shell_line(words: Sequence[Any]) -> str:
    """The words as one line a POSIX shell reads back as the same words."""
    return shlex.join(str(w) for w in words)


def repaired_command(pack: Pack, command: LaunchCommand, repair: Repair) -> list[str]:
    """The launch command as typed with a repair applied: the options it unsets left out (the
    launcher then decides them), the ones it sets written in; the rest exactly as typed. Facts
    the repair changes are not launcher flags: see `repair_fact_changes`."""
    options: dict[str, Scalar] = {n: v for n, v in command.options.items() if n not in repair.unset}
    for name, value in repair.set.items():
        if pack.fields[name].kind == "option":
            options[name] = value
    return write_command(pack, command, options)


def repair_fact_changes(pack: Pack, repair: Repair) -> list[str]:
    """What a repair changes that a launch command cannot say (facts): `gpu_arch=sm90`, `not
    gpu_arch` for a fact to leave unknown."""
    changes = [f"{n}={_spelled(v)}" for n, v in repair.set.items() if pack.fields[n].kind == "fact"]
    return changes + [f"not {n}" for n in repair.unset if pack.fields[n].kind == "fact"]
