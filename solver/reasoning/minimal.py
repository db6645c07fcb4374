"""The fewest options that bring the launcher to a resolution: what `--format argv --minimal` and a
configurator's short command write (the launcher decides the rest by itself, the same way).

Resolves in predict mode, so it sits with the reasoning, above `solver.inputs.launch`, which writes
the command.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from solver.model import Pack, Scalar

__all__ = ["minimal_options"]


def _launcher_choice(pack: Pack, options: Mapping[str, Scalar], facts: Mapping[str, Scalar]) -> Any:
    """What the launcher would decide by itself for these options and facts (predict mode: each
    unset option follows the launcher's own default chain). Resolution is imported here, when a
    minimal command is asked for: `solver.launcher` imports this module at start-up."""
    from solver.reasoning.resolution import resolve

    return resolve(pack, dict(options), dict(facts), reasons=False, predict=True)


def minimal_options(pack: Pack, values: Mapping[str, Scalar]) -> list[str]:
    """The options to write so that the launcher, left to decide the rest itself, ends at
    `values` (a resolution's): start from those that differ from its own choice with none given,
    and add any that still differ once those are given, until nothing differs. Falls back to
    every option when the launcher's own choice cannot be predicted (the request conflicts
    without them)."""
    from solver.errors import SolverError

    options = [n for n, f in pack.fields.items() if f.kind == "option"]
    facts = {n: v for n, v in values.items() if pack.fields[n].kind == "fact"}
    needed: list[str] = []
    while True:
        try:
            own = _launcher_choice(pack, {n: values[n] for n in needed}, facts).values
        except SolverError:
            return options
        differ = [n for n in options if n not in needed and own[n] != values[n]]
        if not differ:
            return [n for n in options if n in needed]
        needed += differ
