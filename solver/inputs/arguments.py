"""The library's own arguments, checked where a call begins: a wrong kind of argument (a pack's
name where a `Pack` goes, a number where field names go, one string where a command's words go)
is `InvalidInput` naming the call, the parameter, what it got and what it takes, never an
AttributeError or TypeError from deep inside. Values inside a request (`options`, `facts`) are
checked where they are read (`solver.inputs.pins`). Imports `solver.errors` and `solver.model`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from solver.errors import InputIssue, InvalidInput
from solver.model import Pack

__all__ = ["need", "need_names", "need_pack", "need_words"]


def _got(value: Any) -> str:
    text = repr(value)
    return f"{text[:60]}{'...' if len(text) > 60 else ''} ({type(value).__name__})"


def need(value: Any, kind: type | tuple[type, ...], call: str, param: str, takes: str) -> None:
    """Raise `InvalidInput` unless `value` is a `kind`."""
    if not isinstance(value, kind):
        message = f"{call}: {param} must be {takes}, not {_got(value)}"
        raise InvalidInput([InputIssue(field=param, value=_got(value), message=message)])


def need_pack(pack: Any, call: str) -> Pack:
    """`pack`, which must be a loaded `Pack`."""
    need(pack, Pack, call, "pack", "a Pack (solver.load_pack(NAME) returns one)")
    return pack  # type: ignore[no-any-return]  # a Pack, checked above


def need_names(value: Any, call: str, param: str) -> list[str] | None:
    """Field names: None stays None, one string is one name (not its letters), else an iterable
    of strings."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    takes = "a field name or a list of field names"
    need(value, Iterable, call, param, takes)
    names = list(value)
    for name in names:
        need(name, str, call, f"{param} (each)", takes)
    return names


def need_words(words: Any, call: str) -> Sequence[str]:
    """A command line's words: a list of strings (one string is refused: its split is the shell's,
    `shlex.split(line)`, not confsolve's guess)."""
    takes = "a list of words (shlex.split(line) makes one from a line)"
    if isinstance(words, str | bytes):
        need(words, list, call, "words", takes)
    need(words, Sequence, call, "words", takes)
    for word in words:
        need(word, str, call, "words (each)", "a string")
    return words  # type: ignore[no-any-return]  # a sequence of strings, checked above
