"""QuickXplain (Junker 2004): a minimal inconsistent subset of an ordered list, by halving.

The one home of the algorithm: conflicts' items (`solver.reasoning.conflicts`), their positions
as bit-masks (`solver.reasoning.consistency.Positions`) and lint's questions
(`solver.lint.reasons`) all ask it; what "consistent" means is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

__all__ = ["quickxplain", "quickxplain_bits"]

T = TypeVar("T")


def quickxplain(consistent: Callable[[Sequence[T]], bool], items: Sequence[T]) -> list[T]:
    """Junker's QuickXplain: a minimal subset of `items` that is inconsistent.

    Items late in the list are kept out of the answer whenever an answer without them exists,
    so order the list from "most willing to blame" to "least". Assumes `items` is inconsistent.
    Items of any kind: conflicts' `Item`s, or their positions (lint's questions read those in C).
    """
    if not items:
        return []
    return _qx(consistent, _Lists(items), [], False, 0, len(items))


def quickxplain_bits(consistent: Callable[[int], bool], count: int) -> list[int]:
    """`quickxplain` over `count` items asked about by their positions as one int, bit i for
    the item at position i (`solver.reasoning.consistency.Positions`): each question is the
    union of earlier ones and a range of positions, made by a shift and an `or` in C, where a
    list of thousands of items per question (and its sorting into pins and rules) was a third
    of the far value's explanation at 5,000 synthetic fields. The same questions in the same
    order as `quickxplain`'s, so the same answer: the positions, in order."""
    found = _qx(consistent, _BITS, 0, False, 0, count) if count else 0
    return [at for at, bit in enumerate(reversed(bin(found)[2:])) if bit == "1"]


Q = TypeVar("Q")


class _Lists(Generic[T]):
    """QuickXplain's questions as lists of the items."""

    def __init__(self, items: Sequence[T]) -> None:
        self.items = items

    def part(self, lo: int, hi: int) -> list[T]:
        return list(self.items[lo:hi])

    @staticmethod
    def join(first: list[T], second: list[T]) -> list[T]:
        return first + second


class _Bits:
    """QuickXplain's questions as int bit-masks of the items' positions."""

    @staticmethod
    def part(lo: int, hi: int) -> int:
        return ((1 << (hi - lo)) - 1) << lo

    @staticmethod
    def join(first: int, second: int) -> int:
        return first | second


_BITS = _Bits()


class _Space(Protocol[Q]):
    def part(self, lo: int, hi: int) -> Q: ...

    def join(self, first: Q, second: Q) -> Q: ...


def _qx(consistent: Callable[[Q], bool], space: _Space[Q], background: Q, delta: bool, lo: int, hi: int) -> Q:
    """QuickXplain's step over the items at positions `lo` to `hi` (its questions in the form
    `space` makes: one home for lists and bit-masks alike). A function of the module, not one
    nested in `quickxplain`: a nested function that calls itself is a reference cycle (it holds
    its own cell), which kept the oracle and everything its checks hold (witnesses of every
    field) alive until the garbage collector ran, ~3,000 such cycles per choices call at 5,000
    synthetic fields."""
    if delta and not consistent(background):
        return space.part(lo, lo)
    if hi - lo == 1:
        return space.part(lo, hi)
    mid = lo + (hi - lo) // 2
    d2 = _qx(consistent, space, space.join(background, space.part(lo, mid)), True, mid, hi)
    d1 = _qx(consistent, space, space.join(background, d2), bool(d2), lo, mid)
    return space.join(d1, d2)
