"""The `argv` writer of the formats table (`render/formats.py`): a resolution as the launch
command that runs it, on one shell-quoted line (the launcher's own syntax, from the pack's
`[pack.launcher]`; a launch command given after `--` is completed, not replaced). Its notes, for
stderr, are the adjustments and warnings, so stdout is the command alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from solver.inputs.launch import LaunchCommand, shell_line, write_command
from solver.model import Pack, Resolution

__all__ = ["argv_line", "argv_notes"]


def argv_line(
    pack: Pack, res: Resolution, command: LaunchCommand | None, fields: Sequence[str], *_: object
) -> str:
    """The command line with the values of `fields` (every option, or `--minimal`'s few); the
    answer no command gives (`_`) is None here: that is an error before a line is written."""
    return shell_line(write_command(pack, command, res.values, fields=fields)) + "\n"


def argv_notes(
    pack: Pack, res: Resolution, command: LaunchCommand | None, fields: Sequence[str], *_: object
) -> str:
    lines = [
        f"confsolve: adjusted {pack.fields[adj.field].cli_flag} {adj.requested} -> "
        f"{adj.resolved} ({adj.rule}: {adj.because})"
        for adj in res.adjustments
    ]
    lines += [f"confsolve: warning ({warning.rule}): {warning.message}" for warning in res.warnings]
    return "".join(line + "\n" for line in lines)
