"""Frozen dataclasses that cost their module no compiling (`Frozen`): `record_type` (keywords only:
`solver.model`'s records) and `frozen_type`. For a frozen dataclass the standard library writes and
compiles up to six functions (an `exec` of each one's text), most of the class's creation, and a
first `confsolve check` creates ~30 such classes (benchmarks/README, rounds cold27 and cold28).
Here equality, hash, repr and the refusal to assign or delete a field are written once for all
classes, and each class's constructor, the one the library would write, is compiled the first time
the class is built: a class never built costs none. The same behaviour:
tests/test_record_methods.py compares each class with the dataclass the library makes of it.
Imports the standard library only (the foundation: `solver.errors` uses it)."""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from itertools import pairwise
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, cast, dataclass_transform

__all__ = ["Frozen", "frozen_type", "record_type"]

_R = TypeVar("_R", bound=type[Any])

# What `dataclasses` is asked to do: record the fields (`dataclasses.fields`, `replace`, pydantic
# read them) and write nothing. What it would write is `Frozen`'s, and the constructor `_built`'s.
_NOTHING_WRITTEN = {"init": False, "eq": False, "repr": False, "frozen": False}


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field,))
def record_type(cls: _R) -> _R:
    """`@dataclasses.dataclass(frozen=True, kw_only=True)` for a subclass of `Record` (see the
    module: the same behaviour, no function compiled when the class is made)."""
    return cast(_R, _shared(dataclasses.dataclass(kw_only=True, **_NOTHING_WRITTEN)(cls)))


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen_type(cls: _R) -> _R:
    """`@dataclasses.dataclass(frozen=True)` for a subclass of `Frozen` (see `record_type`)."""
    return cast(_R, _shared(dataclasses.dataclass(**_NOTHING_WRITTEN)(cls)))


def _shared(made: type[Any]) -> type[Any]:
    fields = dataclasses.fields(made)
    made._compared = staticmethod(_key([f.name for f in fields if f.compare]))
    made._hashed = staticmethod(_key([f.name for f in fields if f.hash or (f.hash is None and f.compare)]))
    made._shown = tuple(f.name for f in fields if f.repr)
    made._frozen = frozenset(f.name for f in fields)
    positional = [f for f in fields if f.init and not f.kw_only]
    for before, after in pairwise(positional):
        if _has_default(before) and not _has_default(after):  # as the library refuses it, at once
            raise TypeError(f"non-default argument {after.name!r} follows default argument")
    if "__init__" not in made.__dict__:
        # Each class its own first-use constructor: inherited, a class made from another would run
        # the constructor compiled for its base once the base had been built.
        made.__init__ = Frozen.__init__
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


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _built(cls: type[Any]) -> Callable[..., None]:
    """The constructor `dataclasses` writes for the frozen class `cls` (Python 3.11's text: each
    parameter's default bound by name, a factory's value made per call, fields set through
    `object.__setattr__`, then `__post_init__`), compiled and put on `cls`."""
    names: dict[str, Any] = {"__object": object, "__factory_marker": _FACTORY}
    params: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        value = f.name
        if f.default_factory is not dataclasses.MISSING:
            names[f"__factory_{f.name}"] = f.default_factory
            made = f"__factory_{f.name}()"
            value = f"{made} if {f.name} is __factory_marker else {f.name}" if f.init else made
        elif not f.init:
            continue  # read from the class attribute that holds its default, as the library does
        if f.init:
            if f.default is not dataclasses.MISSING:
                names[f"__default_{f.name}"] = f.default
            default = (
                "=__factory_marker"
                if f.default_factory is not dataclasses.MISSING
                else f"=__default_{f.name}"
                if f.default is not dataclasses.MISSING
                else ""
            )
            (keywords if f.kw_only else params).append(f"{f.name}{default}")
        body.append(f"  __object.__setattr__(__self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("  __self.__post_init__()")
    signature = ", ".join(["__self", *params, *(["*", *keywords] if keywords else [])])
    text = f"def __init__({signature}) -> None:\n" + "\n".join(body or ["  pass"])
    namespace: dict[str, Any] = {}
    exec(compile(text, f"<{cls.__qualname__} constructor>", "exec"), names, namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in dataclasses.fields(cls) if f.init} | {"return": None}
    cls.__init__ = init
    return init


class _FactoryMarker:
    def __repr__(self) -> str:
        return "<factory>"  # as the library's marker shows in a signature


_FACTORY = _FactoryMarker()
_REPRS_RUNNING: set[tuple[int, int]] = set()  # the records whose repr is being made, per thread


@frozen_type
class Frozen:
    """A frozen dataclass whose equality, hash, repr and frozenness are these, shared by every
    class `record_type` or `frozen_type` makes (not generated per class), and whose constructor is
    compiled at its first use (`_built`)."""

    # Set by `_shared`: the fields equality compares, those the hash hashes, those repr shows, all
    # of them. (Static methods: read through the class, never bound to a record.)
    _compared: ClassVar[Key] = staticmethod(_key([]))
    _hashed: ClassVar[Key] = staticmethod(_key([]))
    _shown: ClassVar[tuple[str, ...]] = ()
    _frozen: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, *args: Any, **values: Any) -> None:
        # The first record of its class: the class's own constructor replaces this one.
        owner = next(c for c in self.__class__.__mro__ if "_frozen" in c.__dict__)
        _built(owner)(self, *args, **values)

    # As `dataclasses` generates them for `eq=True, frozen=True`: the compared fields of two
    # records of one class as tuples; the hash of that tuple; `Name(field=value!r, ...)`; no field
    # assigned or deleted (nor any attribute of a class made here: a subclass not made here may
    # add attributes of its own).
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

    def __setattr__(self, name: str, value: Any) -> None:
        if "_frozen" in self.__class__.__dict__ or name in self._frozen:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if "_frozen" in self.__class__.__dict__ or name in self._frozen:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)
