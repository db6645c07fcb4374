"""The command line's side of launch commands: `confsolve check|resolve|why|choices [...] --
LAUNCH COMMAND` read into the request, the options `--format argv --minimal` writes, and repairs
written back in the syntax the request came in.

Thin glue over `solver.inputs.launch`; imported only when a command line has a launch command or asks
for --minimal, so the plain `check` path does not pay for it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace

from solver.errors import Collector, InputIssue, InvalidInput, Unsatisfiable, input_issues
from solver.inputs.launch import (
    LaunchCommand,
    repair_fact_changes,
    repaired_command,
    shell_line,
)
from solver.inputs.launchrequest import read_request_into
from solver.inputs.pins import _lookup, coerce
from solver.inputs.precedence import read_values
from solver.model import Pack, Repair, Resolution
from solver.reasoning.minimal import minimal_options
from solver.reasoning.resolution import conflict_text
from solver.values import same
from solver.values import show as _spelled

__all__ = ["merge_launch", "minimal_fields", "repair_renderer", "rewrite_conflict"]


def merge_launch(
    args: argparse.Namespace,
    pack: Pack,
    sets: dict[str, str],
    model_path: str | None,
    into: Collector[InputIssue] | None = None,
) -> str | None:
    """Read `args.launch` into `args.command_read` (`solver.inputs.launchrequest`), say its notes
    on stderr, add its options to `sets` (the --set assignments; one field set twice to different
    values is an input error) and return the model path to read facts from: --model-config when
    given, else the command's model (read by the caller like --model-config).

    The command's issues raise one `InvalidInput`; with `into` (the caller's collector) they are
    added to it instead and the model path is still returned, so that a bad flag and a model that
    cannot be read are said in one run, not one per run."""
    issues = input_issues()
    try:
        request = read_request_into(pack, args.launch, issues)
    except InvalidInput as exc:  # no command of this pack's launcher: nothing else was read
        raise _another_packs_command(pack, args.launch, _own_options_after(args, exc)) from None
    args.command_read = request.command
    for note in request.notes:  # read as the launcher reads it, and said
        print(f"confsolve: launch command: {note}", file=sys.stderr)
    args.config_options = list(request.config_options)
    # The command's options under --set: both are the user's words, so they must agree where both
    # set a field.
    typed = {(_lookup(pack, k) or k): (k, v) for k, v in sets.items()}
    command = request.command
    issues.add(
        *(
            InputIssue(
                field=name,
                value=shown,
                message=(
                    f"--set {typed[name][0]}={typed[name][1]} and {_typed_as(pack, command, name, shown)} "
                    "in the launch command disagree; keep one"
                ),
            )
            for name, shown in request.options.items()
            if name in typed and not _meant_alike(pack, name, typed[name][1], shown)
        )
    )
    sets.update(read_values(pack, sets, request.options))  # before raising: the caller goes on collecting
    if issues and into is not None:
        into.add(*_own_options_after(args, InvalidInput(issues.problems)).issues)
    elif issues:
        raise _own_options_after(args, InvalidInput(issues.problems))
    if model_path or request.model is None:
        return model_path
    # Read like --model-config: a local path, or a hub id found in the local Hugging Face cache.
    # Anything else is an error that says where it looked: going on without the model's facts
    # would guess the architecture (an MHA kernel for an MLA model, issue #13).
    return request.model


def _meant_alike(pack: Pack, name: str, one: object, other: object) -> bool:
    """Whether two spellings of a field's value mean the same value (`--set SGLANG_USE_AITER=1`
    and `SGLANG_USE_AITER=true` in front of the command), as each is read: a value that does not
    read (a typo) agrees only with itself."""
    if one == other:
        return True
    field = pack.fields.get(name)
    if field is None:
        return False
    (first, bad), (second, worse) = coerce(field, one), coerce(field, other)
    if bad is not None or worse is not None:
        return False
    return first is second is None or (first is not None and second is not None and same(first, second))


def _own_options_after(args: argparse.Namespace, exc: InvalidInput) -> InvalidInput:
    """The error, with a hint on each word after `--` that is an option of confsolve's own (`--set`,
    `--json`): everything after `--` is the launch command, whose launcher has no such flag."""
    own = {"--" + name.replace("_", "-") for name in vars(args)}
    issues = [
        replace(i, message=f"{i.message}; confsolve's own {i.value} goes before `--`")
        if i.field == "launch command" and i.value in own
        else i
        for i in exc.issues
    ]
    return InvalidInput(issues) if issues != exc.issues else exc


def _another_packs_command(pack: Pack, words: list[str], exc: InvalidInput) -> InvalidInput:
    """The error, with `--pack NAME` said when the command is no command of this pack's launcher
    but one of another shipped pack's (`confsolve check -- vllm serve m` without `--pack vllm`)."""
    import tomllib

    import constraints
    from solver.inputs.launch import _environment_prefix, _match_program
    from solver.model import Launcher

    typed = _environment_prefix(list(words))[2]
    if not typed or typed[0].startswith("-") or _match_program(pack.launcher or Launcher(), typed):
        return exc
    for name in constraints.shipped_packs():
        directory = constraints.pack_directory(name)
        if name == pack.name or directory is None:
            continue
        with (directory / "pack.toml").open("rb") as handle:
            commands = tomllib.load(handle).get("pack", {}).get("launcher", {}).get("commands", [])
        if _match_program(Launcher(commands=tuple(commands)), typed):
            first = exc.issues[0]
            hint = f"; it is a command of the {name} pack: add --pack {name}"
            return InvalidInput([replace(first, message=first.message + hint), *exc.issues[1:]])
    return exc


def minimal_fields(args: argparse.Namespace, pack: Pack, res: Resolution) -> list[str]:
    """`--format argv --minimal`: the options to write, those that differ from what the launcher
    would choose by itself, and what the config file sets (the launcher would read it otherwise);
    the line itself is `solver/render/launch.py`'s."""
    chosen = set(minimal_options(pack, res.values)) | set(getattr(args, "config_options", []))
    return [n for n in pack.options if n in chosen]


def _typed_as(pack: Pack, command: LaunchCommand, name: str, shown: str) -> str:
    """How the launch command gave `name`: `--tp 2`, or `SGLANG_USE_AITER=1` in front."""
    if pack.fields[name].env:
        return f"{name}={shown}"
    return f"{command.spelled.get(name, pack.fields[name].cli_flag)} {shown}"


def repair_renderer(
    args: argparse.Namespace, pack: Pack, *, in_sentence: bool = False
) -> Callable[[Repair], str]:
    """How this command line writes a repair: as the launch command when one was given, else as
    the same `confsolve` command with the user's other inputs exactly as typed. `in_sentence`:
    for `check`'s one paragraph, the command in backticks and what it cannot say after them."""
    command: LaunchCommand | None = getattr(args, "command_read", None)
    if command is not None:
        return lambda repair: _launch_line(pack, command, repair, in_sentence)
    if in_sentence:
        return lambda repair: f"`{_confsolve_line(args, pack, repair)}`"
    return lambda repair: _confsolve_line(args, pack, repair)


def _launch_line(pack: Pack, command: LaunchCommand, repair: Repair, in_sentence: bool = False) -> str:
    line = shell_line(repaired_command(pack, command, repair))
    facts = ", ".join(repair_fact_changes(pack, repair))
    if in_sentence:  # the fact change is no word of the command: outside the backticks
        return f"`{line}`" + (f" on a machine or model with {facts}" if facts else "")
    return line + (f"    (on a machine or model with {facts})" if facts else "")


def _confsolve_line(args: argparse.Namespace, pack: Pack, repair: Repair) -> str:
    """`confsolve COMMAND ...` as typed, with the repair applied to --set and --assume: the
    assignments of a field it unsets dropped, of a field it sets rewritten (or added)."""
    words = ["confsolve", str(args.command)]
    if getattr(args, "field", None):
        words.append(str(args.field))
    from constraints import DEFAULT_PACK

    if args.pack != DEFAULT_PACK:
        words += ["--pack", str(args.pack)]
    pending = dict(repair.set)
    for flag, items in (("--set", args.set), ("--assume", args.assume)):
        for item in items:
            raw, _, value = item.partition("=")
            name = _lookup(pack, raw.strip()) or raw.strip()
            if name in repair.unset:
                continue
            if name in pending:
                value = _spelled(pending.pop(name))
            item = f"{raw.strip()}={value.strip()}"
            # `--set --tp=8` would read as two options: such an item is written `--set=--tp=8`.
            words += [f"{flag}={item}"] if item.startswith("-") else [flag, item]
    for name, value in pending.items():
        words += ["--set", f"{name}={_spelled(value)}"]
    if args.model_config:
        words += ["--model-config", str(args.model_config)]
    for flag in ("env_from_os", "detect", "strict"):
        if getattr(args, flag, False):
            words.append("--" + flag.replace("_", "-"))
    return shell_line(words)


def rewrite_conflict(args: argparse.Namespace, exc: Unsatisfiable) -> Unsatisfiable:
    """The conflict with its repairs written in the syntax this command line was given."""
    pack: Pack | None = getattr(args, "request_pack", None)
    if pack is None or not exc.request:
        return exc
    text = conflict_text(pack, exc, repair_renderer(args, pack))
    exc.message = text
    exc.args = (text,)
    return exc
