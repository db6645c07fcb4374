"""The record base of confsolve's data (`solver.model`): frozen dataclasses (made by `solver.frozen`) with
the subset of pydantic's model API the code uses (`model_validate`, `model_construct`,
`model_copy`, `model_dump`, `model_json_schema`).

Not pydantic models: importing pydantic cost a cold `confsolve check` more than its whole budget
(issue #7). `Record.model_validate` builds a record itself when every value already has its exact
type (`_exact_record`, what a well-formed pack holds) and hands anything else, with every error,
to pydantic in `solver.validation`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar, Literal, Self

from solver import frozen
from solver.frozen import MISSING, Frozen, record_type

__all__ = ["Record", "record_type"]


@record_type
class Record(Frozen):
    """A frozen record with the subset of pydantic's model API this code base uses."""

    # Read by pydantic when `solver.validation` validates input into a record.
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    @classmethod
    def model_construct(cls, **values: Any) -> Self:
        """Build from values already known to be right (no validation)."""
        return cls(**values)

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """Build from untrusted data, checking every type; raises `RecordInvalid`.

        Data whose every value already has its exact type (what a well-formed pack holds) is
        built here; anything else, including every error, goes to pydantic, which then words the
        problem. Importing pydantic was a third of a first `check` after an install."""
        exact: Self | None = _exact_record(cls, data)
        if exact is not None:
            return exact
        from solver.validation import validate

        return validate(cls, data)

    @classmethod
    def model_json_schema(
        cls,
        *,
        mode: Literal["validation", "serialization"] = "validation",
        ref_template: str = "#/$defs/{model}",
    ) -> dict[str, Any]:
        """The JSON Schema of the record (built by pydantic, imported only here)."""
        from solver.validation import json_schema

        return json_schema(cls, mode=mode, ref_template=ref_template)

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        return frozen.replace(self, **dict(update or {}))

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        include: Collection[str] | None = None,
        exclude: Collection[str] | None = None,
        exclude_defaults: bool = False,
    ) -> dict[str, Any]:
        """The record as a dict (nested records as dicts; `json` mode: tuples as lists)."""
        out: dict[str, Any] = {}
        for f in frozen.fields(self):
            if (include is not None and f.name not in include) or (exclude and f.name in exclude):
                continue
            value = getattr(self, f.name)
            if exclude_defaults and _is_default(f, value):
                continue
            out[f.name] = _dump(value, mode == "json")
        return out

    def model_dump_json(self) -> str:
        import json  # (not at the top: a `check` in text never needs it)

        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False)


_NO = object()  # "not exactly of this type": the data goes to pydantic
Exact = Callable[[Any], Any]
# Per record class: a converter per field and the names that must be given (built once).
_PLANS: dict[type[Any], tuple[dict[str, Exact], frozenset[str]]] = {}


def _exact_record(cls: type[Any], data: Any) -> Any:
    """`cls(**data)` when every key is a field of `cls`, every required one is there and every value
    has exactly its annotated type (lists for tuples); else None: never coerces, as pydantic."""
    if type(data) is not dict:
        return None
    plan = _PLANS.get(cls)
    if plan is None:
        import typing

        hints = typing.get_type_hints(cls)
        fields = frozen.fields(cls)
        plan = _PLANS[cls] = (
            {f.name: _converter(hints[f.name]) for f in fields},
            frozenset(f.name for f in fields if f.default is MISSING and f.default_factory is MISSING),
        )
    converters, required = plan
    values: dict[str, Any] = {}
    for key, value in data.items():
        convert = converters.get(key)
        if convert is None:
            return None
        made = convert(value)
        if made is _NO:
            return None
        values[key] = made
    if not required.issubset(values):
        return None
    return cls(**values)


def _converter(hint: Any) -> Exact:
    """A function that gives a value as `hint` when it has exactly that type, else `_NO`."""
    import types
    import typing

    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        return lambda v: v if any(type(v) is type(a) and v == a for a in args) else _NO
    if origin in (typing.Union, types.UnionType):
        # Smart unions keep a value whose type is exactly one of the members.
        members = [_converter(a) for a in args]

        def union(v: Any) -> Any:
            for member in members:
                made = member(v)
                if made is not _NO:
                    return made
            return _NO

        return union
    if (origin is tuple and len(args) == 2 and args[1] is Ellipsis) or (origin is list and len(args) == 1):
        item, kind = _converter(args[0]), tuple if origin is tuple else list  # (lists: `choices`)

        def items(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple:
                return _NO
            made = kind(item(x) for x in v)
            return _NO if _NO in made else made

        return items
    if origin is dict and len(args) == 2 and args[0] is str:
        value = _converter(args[1])

        def mapping(v: Any) -> Any:
            made = {k: value(x) for k, x in v.items()} if type(v) is dict else {"": _NO}
            return _NO if any(type(k) is not str or x is _NO for k, x in made.items()) else made

        return mapping
    if hint is type(None):
        return lambda v: v if v is None else _NO
    if hint in (str, int, bool):
        return lambda v: v if type(v) is hint else _NO
    if isinstance(hint, type) and issubclass(hint, Record):
        return lambda v: _NO if (made := _exact_record(hint, v)) is None else made
    return lambda v: _NO


def _is_default(f: frozen.Field, value: Any) -> bool:
    if f.default is not MISSING:
        return bool(value == f.default)
    if f.default_factory is not MISSING:
        return bool(value == f.default_factory())
    return False


def _dump(value: Any, as_json: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(mode="json" if as_json else "python")
    if isinstance(value, dict):
        return {k: _dump(v, as_json) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_dump(v, as_json) for v in value]
        return items if as_json or isinstance(value, list) else tuple(items)
    return value
