"""The launch command of a resolution, as the page shows it: full (every option, so the launcher
re-decides nothing), minimal (only the options the launcher would not pick by itself), and the
environment variables to set before it.

The words come from `solver.inputs.launch` (the pack's `[pack.launcher]` table and each option's flags);
which options the minimal command needs, from `solver.reasoning.minimal.minimal_options`. The model is the
placeholder word `MODEL_PATH`, which the page replaces with the path typed. Environment variables:
those the request sets, and those the resolution gives another value than their first (unset)
one, which the launcher would otherwise not see.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from solver.model import Pack, Pin, Resolution

__all__ = ["MODEL_PLACEHOLDER", "launch_command"]

MODEL_PLACEHOLDER = "MODEL_PATH"


def launch_command(pack: Pack, res: Resolution, pins: Mapping[str, Pin]) -> dict[str, Any]:
    from solver.errors import Unsatisfiable
    from solver.inputs.launch import LaunchCommand, shell_line, write_command
    from solver.reasoning.minimal import command_options, minimal_options

    launcher = pack.launcher
    # The first command is the one written out; it takes the model as a word of its own when
    # the pack lists it among the positional-model commands (`serve MODEL`), else by a flag.
    positional = bool(launcher and launcher.commands and launcher.commands[0] in launcher.positional_model)
    model = LaunchCommand(program=(), model=MODEL_PLACEHOLDER, model_positional=positional)
    env = {
        name: str(res.values[name])
        for name, field in pack.fields.items()
        if field.env and name in res.values and (name in pins or res.values[name] != field.domain[0])
    }
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    try:
        full = write_command(pack, model, res.values, fields=command_options(pack, res, pack.options))
        minimal_fields = command_options(pack, res, minimal_options(pack, res.values))
        minimal = write_command(pack, model, res.values, fields=minimal_fields)
        full_text = " ".join(p for p in (prefix, shell_line(full)) if p)
        minimal_text = " ".join(p for p in (prefix, shell_line(minimal)) if p)
    except Unsatisfiable as exc:  # no command of the launcher gives this answer: said, not written
        full, minimal = [], []
        full_text = minimal_text = f"# no command: {exc.message}"
    return {
        "env": env,
        "full": full,
        "minimal": minimal,
        "full_text": full_text,
        "minimal_text": minimal_text,
        "model_placeholder": MODEL_PLACEHOLDER,
        "has_launcher": pack.launcher is not None,
    }
