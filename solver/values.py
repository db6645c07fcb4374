"""How a value or a count is written, everywhere: one formatter for the text, JSON and command lines.

Only the standard library; every layer may import it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_SAFE_INTEGER", "count_text", "exact_count", "same", "show"]

# The largest integer a JavaScript JSON parser reads exactly.
MAX_SAFE_INTEGER = 2**53


def show(value: Any) -> str:
    """A field value as a user types it: booleans as `true`/`false` (TOML, the command line),
    everything else as `str`.

    >>> show(True), show(8), show("fp8")
    ('true', '8', 'fp8')
    """
    return str(value).lower() if isinstance(value, bool) else str(value)


def same(value: Any, other: Any) -> bool:
    """Whether two field values are the same value: equal and of one type, so that `True` is
    not `1` (Python finds them equal) and a pin of `1` does not match a domain's `True`.

    >>> same(1, 1), same(True, 1), same("8", 8)
    (True, False, False)
    """
    return bool(value == other) and type(value) is type(other)


def exact_count(n: int | None) -> int | str | None:
    """`n` as a JSON document carries a count (see _COUNT): a number when a JavaScript parser
    reads it exactly, else its decimal digits as a string.

    >>> exact_count(7), exact_count(2**60)
    (7, '1152921504606846976')
    """
    if n is None or n <= MAX_SAFE_INTEGER:
        return n
    return count_text(n)


def count_text(n: int) -> str:
    """The decimal digits of a count (or a bound on one), however many: a pack of thousands of
    fields has counts of more digits than Python converts by default (4,300, a guard against
    parsing untrusted numbers, which these are not: they were computed here). Converted in
    pieces of 1,000 digits, so no process-wide setting changes while other threads convert."""
    if n < 0:
        return "-" + count_text(-n)
    piece = 10**1000
    if n < piece:
        return str(n)
    parts: list[str] = []
    while n >= piece:
        n, low = divmod(n, piece)
        parts.append(f"{low:01000d}")
    parts.append(str(n))
    return "".join(reversed(parts))
