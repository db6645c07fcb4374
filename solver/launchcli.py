"""The command line's side of launch commands: `confsolve check|resolve|why|choices [...] --
LAUNCH COMMAND` read into the request, `--format argv [--minimal]` printed, and repairs written
back in the syntax the request came in.

Thin glue over `solver.launch`; imported only when a command line has a launch command or asks
for argv, so the plain `check` path does not pay for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from solver.errors import InputIssue, InvalidInput
from solver.inputs import _lookup
from solver.launch import LaunchCommand, minimal_options, read_command, shell_line, write_command
from solver.model import Pack, Resolution

__all__ = ["merge_launch", "print_argv"]


def merge_launch(
    args: argparse.Namespace, pack: Pack, sets: dict[str, str], model_path: str | None
) -> str | None:
    """Read `args.launch` into `args.command_read`, add its options to `sets` (the --set
    assignments; one field set twice to different values is an input error) and return the
    model path to read facts from: --model-config when given, else the command's model when it
    is a path on this machine (a model that is not is said on stderr, and its facts stay
    unknown)."""
    command = read_command(pack, args.launch)
    args.command_read = command
    issues: list[InputIssue] = []
    typed = {(_lookup(pack, k) or k): (k, v) for k, v in sets.items()}
    for name, value in command.options.items():
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        if name in typed and typed[name][1] != shown:
            issues.append(
                InputIssue(
                    field=name,
                    value=shown,
                    message=(
                        f"--set {typed[name][0]}={typed[name][1]} and {command.spelled[name]} {shown} in the "
                        "launch command disagree; keep one"
                    ),
                )
            )
        elif name not in typed:
            sets[name] = shown
    if issues:
        raise InvalidInput(issues)
    if model_path or command.model is None:
        return model_path
    if os.path.exists(os.path.expanduser(command.model)):
        return command.model
    print(
        f"confsolve: note: the model {command.model!r} is not a path on this machine; the facts "
        "its config.json gives (architecture, checkpoint quantization, ...) stay unknown. Give "
        "--model-config PATH or --set them.",
        file=sys.stderr,
    )
    return None


def print_argv(args: argparse.Namespace, pack: Pack, res: Resolution, facts: dict[str, Any]) -> None:
    """`--format argv`: the launch command that runs this resolution, on one shell-quoted line
    (notes on adjustments and warnings go to stderr, so stdout is the command alone)."""
    command: LaunchCommand | None = getattr(args, "command_read", None)
    fields = minimal_options(pack, res.values) if args.minimal else pack.options
    print(shell_line(write_command(pack, command, res.values, fields=fields)))
    for adj in res.adjustments:
        print(
            f"confsolve: adjusted {pack.fields[adj.field].cli_flag} {adj.requested} -> "
            f"{adj.resolved} ({adj.rule}: {adj.because})",
            file=sys.stderr,
        )
    for warning in res.warnings:
        print(f"confsolve: warning ({warning.rule}): {warning.message}", file=sys.stderr)
