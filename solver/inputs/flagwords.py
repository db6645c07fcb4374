"""The words a launcher's command line gives a field's value with: its own module, light, for the
reasoning that asks which fields a command would spell (`solver.reasoning.departures`, `minimal`),
on every `check`'s path, which reads no launch command (`solver.inputs.launch`, the reader and
writer of launch commands, uses it too)."""

from __future__ import annotations

from solver.model import Field, Scalar
from solver.values import same
from solver.values import show as _spelled

__all__ = ["flag_words"]


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
