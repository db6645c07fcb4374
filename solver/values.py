"""How a value or a count is written, everywhere: one formatter for the text, JSON and command lines.

Only the standard library; every layer may import it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_SAFE_INTEGER", "count_text", "exact_count", "matching", "same", "show"]

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


def matching(domain: tuple[Any, ...], pin: Any) -> tuple[Any, ...]:
    """The values of `domain` that are `same` as `pin`, in order: the first equal one found in C
    (`tuple.index`), a test per value only when it is of another type or more than one is
    equal (`True` and `1` both in a domain). A model counter's start narrows every pinned field
    so: a lint ring witness pins hundreds of fields outside its ring, and a `same` call per
    value of each was a sixth of those searches (synthetic 1,000).

    >>> matching((1, True, 2), True), matching((1, 2), 3), matching(("a", "b"), "b")
    ((True,), (), ('b',))
    """
    try:
        at = domain.index(pin)
    except ValueError:
        return ()
    found = domain[at]
    if type(found) is type(pin) and found == pin and pin not in domain[at + 1 :]:
        return (found,)
    return tuple(v for v in domain if same(v, pin))


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
