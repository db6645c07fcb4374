"""The syntax trees of condition texts, parsed one at a time in a process.

CPython 3.11 converts a parsed text into `ast` objects with one recursion counter per
interpreter, not per thread: two threads converting at once (the page server's request threads
and its warm-up, a deep-work thread left running after its time budget) can fail one of them
with `SystemError: AST constructor recursion depth mismatch` (python/cpython#106905's symptom;
seen in a CI run of round 26). Every `ast.parse` of confsolve's goes through `expression`, under
one lock: a parse takes microseconds, and conditions are parsed once per pack and per copy.
`ast` is imported by the first parse: a `check` of a shipped pack, its conditions compiled in the
prebuilt form, parses none (~1.4 ms of its start with the C module `_ast`, round cold30).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast

__all__ = ["expression", "module"]

_ONE_AT_A_TIME = threading.Lock()


def expression(text: str) -> ast.Expression:
    """`ast.parse(text, mode="eval")`, one thread at a time (SyntaxError as it raises)."""
    import ast

    with _ONE_AT_A_TIME:
        return ast.parse(text, mode="eval")


def module(text: str) -> ast.Module:
    """`ast.parse(text)` of a whole Python file, under the same lock (tests/test_layers.py reads
    confsolve's own source this way while another test's threads may be parsing conditions)."""
    import ast

    with _ONE_AT_A_TIME:
        return ast.parse(text)
