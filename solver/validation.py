"""Validation of untrusted data into records: the one module that imports pydantic.

Pack files are untrusted input, so every table read from TOML goes through pydantic's type checks
(strings where strings belong, literals from their sets, no unknown keys). The records themselves
are plain dataclasses (see `solver.model`), so a process that only answers from an already
validated, cached pack never pays for importing pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from solver.errors import RecordInvalid

if TYPE_CHECKING:
    from solver.model import Record

__all__ = ["json_schema", "validate"]

R = TypeVar("R", bound="Record")

_ADAPTERS: dict[type[Record], TypeAdapter[Any]] = {}
# Dataclass validation words two problems as calls; pack authors read them as keys of a table.
_MESSAGES = {
    "unexpected_keyword_argument": "Extra inputs are not permitted",
    "missing_keyword_argument": "Field required",
}


def _adapter(cls: type[Record]) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def json_schema(
    cls: type[Record], *, mode: Literal["validation", "serialization"], ref_template: str
) -> dict[str, Any]:
    """The record's JSON Schema, for `confsolve schema`."""
    return _adapter(cls).json_schema(mode=mode, ref_template=ref_template)


def validate(cls: type[R], data: Any) -> R:
    """`data` checked and converted into a `cls`; `RecordInvalid` lists every problem."""
    try:
        result: R = _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise RecordInvalid(
            [{"loc": tuple(e["loc"]), "msg": _MESSAGES.get(e["type"], e["msg"])} for e in exc.errors()]
        ) from None
    return result
