"""Frozen dataclasses whose equality, hash and repr are written once for all (`Frozen`), not
generated for each class: `record_type` (keywords only: `solver.model`'s records) and
`frozen_type`. The standard library writes and compiles six functions per frozen dataclass (an
`exec` of each one's text), half of the class's creation, and every first `confsolve check`
creates ~25 such classes (benchmarks/README, round cold27). The same behaviour:
tests/test_record_methods.py compares each class with the dataclass the library makes of it.
Imports the standard library only (the foundation: `solver.errors` uses it)."""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, cast, dataclass_transform

__all__ = ["Frozen", "frozen_type", "record_type"]

_R = TypeVar("_R", bound=type[Any])


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field,))
def record_type(cls: _R) -> _R:
    """`@dataclasses.dataclass(frozen=True, kw_only=True)` for a subclass of `Record`, whose
    equality, hash and repr (the ones the standard library would generate) `Frozen` gives once for
    all, from the field names kept on the class here. The library writes and compiles six functions
    per dataclass (an `exec` of each one's text), half of the class's creation, and a first
    `confsolve check` creates ~25 such classes (benchmarks/README, round cold27). The same behaviour:
    tests/test_record_methods.py compares each class with the dataclass the library makes of it."""
    return cast(_R, _shared(dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)(cls)))


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen_type(cls: _R) -> _R:
    """`@dataclasses.dataclass(frozen=True)` for a subclass of `Frozen` (see `record_type`)."""
    return cast(_R, _shared(dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)))


def _shared(made: type[Any]) -> type[Any]:
    fields = dataclasses.fields(made)
    made._compared = staticmethod(_key([f.name for f in fields if f.compare]))
    made._hashed = staticmethod(_key([f.name for f in fields if f.hash or (f.hash is None and f.compare)]))
    made._shown = tuple(f.name for f in fields if f.repr)
    return made


Key = Callable[[Any], tuple[Any, ...]]


def _key(names: list[str]) -> Key:
    """The named attributes of a record as a tuple, whatever their number (as the generated code
    compares and hashes them)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda record: (one(record),)
    return lambda record: ()


_REPRS_RUNNING: set[tuple[int, int]] = set()  # the records whose repr is being made, per thread


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Frozen:
    """A frozen dataclass whose equality, hash and repr are these, shared by every class
    `record_type` or `frozen_type` makes (not generated per class)."""

    # Set by `_shared`: the fields equality compares, those the hash hashes, those repr shows.
    # (Static methods: read through the class, never bound to a record.)
    _compared: ClassVar[Key] = staticmethod(_key([]))
    _hashed: ClassVar[Key] = staticmethod(_key([]))
    _shown: ClassVar[tuple[str, ...]] = ()

    # As `dataclasses` generates them for `eq=True, frozen=True`: the compared fields of two
    # records of one class as tuples; the hash of that tuple; `Name(field=value!r, ...)`.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        compared = self.__class__._compared
        same: bool = compared(self) == compared(other)
        return same

    def __hash__(self) -> int:
        return hash(self.__class__._hashed(self))

    def __repr__(self) -> str:
        key = (id(self), get_ident())
        if key in _REPRS_RUNNING:
            return "..."  # a record inside itself, as `reprlib.recursive_repr` (the dataclass's)
        _REPRS_RUNNING.add(key)
        try:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        finally:
            _REPRS_RUNNING.discard(key)
        return f"{self.__class__.__qualname__}({shown})"
