"""The launch command of a resolution, as the page shows it: full (every option, so the launcher
re-decides nothing), minimal (only what must be said), and the environment variables.

Flags come from `solver.launcher.to_argv` (the pack's flag names and `absent` values). The minimal
command keeps the options the user set or a rule adjusted, and every option whose resolved value
differs from the launcher's own pick for it: the value its first applicable preference (or, with
none, its domain) ranks first for the decided fields (`Plan.preferred`), which is what the
launcher would choose left alone. Environment variables: those set by the request, and those the
resolution gives another value than their first (unset) one.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from solver.model import Pack, Pin, Resolution

__all__ = ["launch_command"]


def _launcher_words(pack: Pack) -> list[str]:
    launcher = getattr(pack, "launcher", None)
    words = getattr(launcher, "command", None)
    if words is None and isinstance(launcher, dict):
        words = launcher.get("command")
    return [str(w) for w in words] if isinstance(words, list | tuple) else []


def launch_command(pack: Pack, res: Resolution, pins: Mapping[str, Pin]) -> dict[str, Any]:
    from solver.launcher import to_argv
    from solver.resolution import plan_for

    plan = plan_for(pack)
    options = [n for n in pack.options if n in res.values]
    decided: dict[str, Any] = {}
    needed: list[str] = []
    for name in plan.order:
        if name not in pack.fields:
            continue
        if pack.fields[name].kind == "option":
            kind = res.provenance[name].kind
            launcher_pick = plan.preferred(name, decided)[0][0]
            if kind in ("user", "adjusted") or res.values[name] != launcher_pick:
                needed.append(name)
        decided[name] = res.values[name]
    needed = [n for n in options if n in needed]
    env = {
        name: str(res.values[name])
        for name, field in pack.fields.items()
        if field.env and name in res.values and (name in pins or res.values[name] != field.domain[0])
    }
    words = _launcher_words(pack)
    full = to_argv(res, pack, only=options)
    minimal = to_argv(res, pack, only=needed) if needed else []
    return {
        "launcher": words,
        "env": env,
        "full": full,
        "minimal": minimal,
        "full_text": _text(env, words, full),
        "minimal_text": _text(env, words, minimal),
    }


def _text(env: Mapping[str, str], words: list[str], argv: list[str]) -> str:
    parts = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    parts += [shlex.quote(w) for w in words] or ["<launcher>"]
    parts += [shlex.quote(a) for a in argv]
    return " ".join(parts)
