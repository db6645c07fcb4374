"""Dataclasses made without the `dataclasses` module: `record_type` (frozen, keywords only:
`solver.model`'s records), `frozen_type` (subclasses of `Frozen`) and `mutable_type` (subclasses
of `Mutable`).

Why: for a dataclass the standard library writes and compiles up to six functions (an `exec` of
each one's text), most of the class's creation (rounds cold27, cold28), and importing it imports
`inspect` with `ast`, `dis`, `tokenize`, `linecache` and `copy` (round cold30: ~6 ms, and ~3 ms
to make the classes, of a first `confsolve check`'s ~57 ms over python's own start, which calls
none of it). Here the fields are read from the class as the library reads them (`_made`):
annotations in order after the made bases' fields, `ClassVar`s left out, defaults left as class
attributes (a `field()` replaced by its default, or removed), a mutable default refused;
`__match_args__` is set. Equality, hash, repr and frozenness are written once for all classes
(`_Made`, `Frozen`, `Mutable`), and each class's constructor, the one the library would write,
is compiled the first time the class is built: a class never built costs none.

What the standard library reads of a dataclass, `__dataclass_fields__` and
`__dataclass_params__` (`dataclasses.fields`, `replace`, `asdict`, pydantic), is made when first
read (importing `dataclasses` then): the library's own decorator, run on a copy of the class's
declaration, gives the same objects it would have set (`_Library`). The code on `check`'s path
uses this module's `fields` and `replace`, which read the class's own fields. The same behaviour:
tests/test_record_methods.py compares each class with the dataclass the library makes of it.
Imports the standard library only (the foundation: `solver.errors` uses it)."""

from __future__ import annotations

import abc
import re
import sys
from _thread import get_ident
from collections.abc import Callable, Mapping
from itertools import pairwise
from operator import attrgetter
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast, dataclass_transform

__all__ = [
    "MISSING",
    "Field",
    "Frozen",
    "Mutable",
    "field",
    "fields",
    "frozen_type",
    "mutable_type",
    "record_type",
    "replace",
]

_R = TypeVar("_R", bound=type[Any])
_T = TypeVar("_T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no default, no factory (the library's `dataclasses.MISSING`)


class Field:
    """A field of a class made here: the attributes of the library's `dataclasses.Field`."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        init: bool = True,
        repr: bool = True,
        hash: bool | None = None,
        compare: bool = True,
        metadata: Mapping[Any, Any] | None = None,
        kw_only: Any = MISSING,
    ) -> None:
        self.name: str = ""
        self.type: Any = None
        self.default, self.default_factory, self.init, self.repr = default, default_factory, init, repr
        self.hash, self.compare, self.metadata, self.kw_only = hash, compare, metadata, kw_only

    def __repr__(self) -> str:
        shown = f"name={self.name!r}, type={self.type!r}, default={self.default!r}, kw_only={self.kw_only!r}"
        return f"Field({shown})"


def _field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[Any, Any] | None = None,
    kw_only: Any = MISSING,
) -> Any:
    """`dataclasses.field` for a class made here."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)


def fields(made: Any) -> tuple[Field, ...]:
    """`dataclasses.fields` of a class made here, or of one of its records."""
    found: tuple[Field, ...] | None = getattr(made, "_made_fields", None)
    if found is None:
        raise TypeError("must be called with a dataclass type or instance")
    return found


def _replace(record: _T, /, **changes: Any) -> _T:
    """`dataclasses.replace` (a record made here read through `fields`; any other, the library)."""
    made: tuple[Field, ...] | None = getattr(record, "_made_fields", None)
    if made is None:
        import dataclasses

        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    for f in made:
        if not f.init:
            if f.name in changes:
                raise ValueError(
                    f"field {f.name} is declared with init=False, it cannot be specified with replace()"
                )
            continue
        if f.name not in changes:
            changes[f.name] = getattr(record, f.name)
    built: _T = record.__class__(**changes)
    return built


# Type checkers read the library's own `field` and `replace` (the same signatures and behaviour,
# and the checks they make of a dataclass's fields); the program runs these.
if TYPE_CHECKING:
    from dataclasses import field as field
    from dataclasses import replace as replace
else:
    field, replace = _field, _replace


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
def record_type(cls: _R) -> _R:
    """`@dataclasses.dataclass(frozen=True, kw_only=True)` for a subclass of `Record` (see the
    module: the same behaviour, no function compiled when the class is made)."""
    return cast(_R, _made(cls, kw_only=True, frozen=True))


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen_type(cls: _R) -> _R:
    """`@dataclasses.dataclass(frozen=True)` for a subclass of `Frozen` (see `record_type`)."""
    return cast(_R, _made(cls, kw_only=False, frozen=True))


@dataclass_transform(field_specifiers=(field,))
def mutable_type(cls: _R) -> _R:
    """`@dataclasses.dataclass` for a subclass of `Mutable` (see `record_type`)."""
    return cast(_R, _made(cls, kw_only=False, frozen=False))


def _made(cls: type[Any], *, kw_only: bool, frozen: bool) -> type[Any]:
    """`cls` with its fields found as `dataclasses._process_class` finds them, with the library's
    checks, and the tables the shared methods read."""
    module = sys.modules.get(cls.__module__)
    names: Mapping[str, Any] = vars(module) if module is not None else {}
    found: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:  # the made bases' fields first, the nearest last
        for f in getattr(base, "_made_fields", ()):
            found[f.name] = f
    annotations: dict[str, Any] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (the library's reading)
    declared = {name: cls.__dict__[name] for name in annotations if name in cls.__dict__}
    own: list[Field] = []
    for name, annotation in annotations.items():
        if _names(annotation, names, ("KW_ONLY", "InitVar")):
            raise TypeError(f"{cls.__qualname__}.{name}: KW_ONLY and InitVar are not supported here")
        if _names(annotation, names, ("ClassVar",)):
            if isinstance(declared.get(name), Field):
                raise TypeError(f"{cls.__qualname__}.{name}: a ClassVar cannot be a field()")
            continue
        default = getattr(cls, name, MISSING)
        if isinstance(default, Field):
            f = default
        else:
            f = Field(MISSING if isinstance(default, MemberDescriptorType) else default)
        f.name, f.type = name, annotation
        if f.kw_only is MISSING:
            f.kw_only = kw_only
        if f.default is not MISSING and f.default.__class__.__hash__ is None:
            kind = type(f.default)
            raise ValueError(f"mutable default {kind} for field {name} is not allowed: use default_factory")
        own.append(f)
    for f in own:
        found[f.name] = f
        if isinstance(getattr(cls, f.name, None), Field):
            if f.default is MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    for name, value in cls.__dict__.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    made = tuple(found.values())
    positional = [f for f in made if f.init and not f.kw_only]
    for before, after in pairwise(positional):
        if _has_default(before) and not _has_default(after):  # as the library refuses it, at once
            raise TypeError(f"non-default argument {after.name!r} follows default argument")
    cls._made_fields = made
    cls._compared = staticmethod(_key([f.name for f in made if f.compare]))
    cls._hashed = staticmethod(_key([f.name for f in made if f.hash or (f.hash is None and f.compare)]))
    cls._shown = tuple(f.name for f in made if f.repr)
    if frozen:
        cls._frozen = frozenset(f.name for f in made)
    if "__match_args__" not in cls.__dict__:
        setattr(cls, "__match_args__", tuple(f.name for f in positional))  # noqa: B010 (mypy: a class's)
    library = _Library(cls, declared, kw_only)
    cls.__dataclass_fields__ = _FromLibrary(library, "__dataclass_fields__")
    cls.__dataclass_params__ = _FromLibrary(library, "__dataclass_params__")
    if "__init__" not in cls.__dict__:
        # Each class its own first-use constructor: inherited, a class made from another would run
        # the constructor compiled for its base once the base had been built.
        cls.__init__ = _Made.__dict__["__init__"]
    abc.update_abstractmethods(cls)
    return cls


# The library's reading of a string annotation (`dataclasses._is_type`): an optional module name
# and a dot, then a name looked up in the class's module (with a module name, only when that name
# in the class's module is the marker's module).
_ANNOTATION_HEAD = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")
_MARKERS = {"ClassVar": "typing", "KW_ONLY": "dataclasses", "InitVar": "dataclasses"}


def _names(annotation: Any, names: Mapping[str, Any], wanted: tuple[str, ...]) -> bool:
    """Whether `annotation` is (or subscripts) one of the library's markers `wanted` (`ClassVar`
    of `typing`; `KW_ONLY`, `InitVar` of `dataclasses`), as the library tells it."""
    for name in wanted:
        home = sys.modules.get(_MARKERS[name])  # `dataclasses` not imported: nothing names its markers
        marker = getattr(home, name, MISSING)
        if marker is MISSING:
            continue
        if not isinstance(annotation, str):
            if annotation is marker or getattr(annotation, "__origin__", None) is marker:
                return True
            if isinstance(marker, type) and type(annotation) is marker:  # `InitVar[int]`
                return True
            continue
        match = _ANNOTATION_HEAD.match(annotation)
        if match is None or match.group(2) != name:
            continue
        if match.group(1) and names.get(match.group(1)) is not home:
            continue
        if names.get(name) is marker:
            return True
    return False


def _has_default(f: Field) -> bool:
    return f.default is not MISSING or f.default_factory is not MISSING


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


class _Library:
    """What `dataclasses.dataclass` sets on a made class, made at its first read: the library's
    decorator (writing no method) run on a class of the same name, module, bases, annotations and
    declared values, whose bases are read through their own `_FromLibrary`."""

    __slots__ = ("declared", "kw_only", "made", "read")

    def __init__(self, made: type[Any], declared: dict[str, Any], kw_only: bool) -> None:
        self.made, self.declared, self.kw_only = made, declared, kw_only
        self.read: type[Any] | None = None

    def attribute(self, name: str) -> Any:
        if self.read is None:
            import dataclasses

            made = self.made
            namespace: dict[str, Any] = {
                "__module__": made.__module__,
                "__qualname__": made.__qualname__,
                "__doc__": made.__doc__,
                "__annotations__": dict(made.__dict__.get("__annotations__", {})),  # noqa: RUF063
            }
            for key, value in self.declared.items():
                namespace[key] = value if not isinstance(value, Field) else _library_field(value)
            copy = type(made.__name__, made.__bases__, namespace)
            written = {"init": False, "eq": False, "repr": False, "frozen": False}
            self.read = dataclasses.dataclass(kw_only=self.kw_only, **written)(copy)
        found = self.read.__dict__[name]
        setattr(self.made, name, found)  # from now on the class holds the library's object itself
        return found


def _library_field(declared: Field) -> Any:
    import dataclasses

    def missing(value: Any) -> Any:
        return dataclasses.MISSING if value is MISSING else value

    return dataclasses.field(
        default=missing(declared.default),
        default_factory=missing(declared.default_factory),
        init=declared.init,
        repr=declared.repr,
        hash=declared.hash,
        compare=declared.compare,
        metadata=declared.metadata,
        kw_only=missing(declared.kw_only),
    )


class _FromLibrary:
    """A made class's `__dataclass_fields__` or `__dataclass_params__`, made when first read."""

    __slots__ = ("library", "name")

    def __init__(self, library: _Library, name: str) -> None:
        self.library, self.name = library, name

    def __get__(self, record: Any, owner: type[Any] | None = None) -> Any:
        return self.library.attribute(self.name)


def _built(cls: type[Any]) -> Callable[..., None]:
    """The constructor `dataclasses` writes for the class `cls` (Python 3.11's text: each
    parameter's default bound by name, a factory's value made per call, fields set (through
    `object.__setattr__` for a frozen class), then `__post_init__`), compiled and put on `cls`."""
    names: dict[str, Any] = {"__object": object, "__factory_marker": _FACTORY}
    frozen = issubclass(cls, Frozen)
    params: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    for f in fields(cls):
        value = f.name
        if f.default_factory is not MISSING:
            names[f"__factory_{f.name}"] = f.default_factory
            made = f"__factory_{f.name}()"
            value = f"{made} if {f.name} is __factory_marker else {f.name}" if f.init else made
        elif not f.init:
            continue  # read from the class attribute that holds its default, as the library does
        if f.init:
            if f.default is not MISSING:
                names[f"__default_{f.name}"] = f.default
            default = (
                "=__factory_marker"
                if f.default_factory is not MISSING
                else f"=__default_{f.name}"
                if f.default is not MISSING
                else ""
            )
            (keywords if f.kw_only else params).append(f"{f.name}{default}")
        if frozen:
            body.append(f"  __object.__setattr__(__self, {f.name!r}, {value})")
        else:
            body.append(f"  __self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("  __self.__post_init__()")
    signature = ", ".join(["__self", *params, *(["*", *keywords] if keywords else [])])
    text = f"def __init__({signature}) -> None:\n" + "\n".join(body or ["  pass"])
    namespace: dict[str, Any] = {}
    exec(compile(text, f"<{cls.__qualname__} constructor>", "exec"), names, namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in fields(cls) if f.init} | {"return": None}
    cls.__init__ = init
    return init


class _FactoryMarker:
    def __repr__(self) -> str:
        return "<factory>"  # as the library's marker shows in a signature


_FACTORY = _FactoryMarker()
_REPRS_RUNNING: set[tuple[int, int]] = set()  # the records whose repr is being made, per thread


class _Made:
    """The methods every made class shares: its constructor compiled at first use (`_built`),
    equality and repr as the library generates them for `eq=True`."""

    # Set by `_made`: the fields, those equality compares, those the hash hashes, those repr
    # shows. (Static methods: read through the class, never bound to a record.)
    _made_fields: ClassVar[tuple[Field, ...]]
    _compared: ClassVar[Key] = staticmethod(_key([]))
    _hashed: ClassVar[Key] = staticmethod(_key([]))
    _shown: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any, **values: Any) -> None:
        # The first record of its class: the class's own constructor replaces this one.
        owner = next(c for c in self.__class__.__mro__ if "_made_fields" in c.__dict__)
        _built(owner)(self, *args, **values)

    # The compared fields of two records of one class as tuples; `Name(field=value!r, ...)`.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        compared = self.__class__._compared
        same: bool = compared(self) == compared(other)
        return same

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


@frozen_type
class Frozen(_Made):
    """A frozen dataclass (`frozen=True`): hashed by its compared fields, no field assigned or
    deleted (nor any attribute of a class made here: a subclass not made here may add attributes
    of its own)."""

    _frozen: ClassVar[frozenset[str]] = frozenset()  # its fields (set by `_made`)

    def __hash__(self) -> int:
        return hash(self.__class__._hashed(self))

    def __setattr__(self, name: str, value: Any) -> None:
        if "_frozen" in self.__class__.__dict__ or name in self._frozen:
            from dataclasses import FrozenInstanceError  # (an error: the library only then)

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if "_frozen" in self.__class__.__dict__ or name in self._frozen:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)


@mutable_type
class Mutable(_Made):
    """A dataclass that is not frozen (`eq=True`): fields assigned as any attribute, no hash."""

    # No hash: the library's for `eq=True` (a record's equality may change with its fields).
    __hash__ = None  # type: ignore[assignment]
