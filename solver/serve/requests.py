"""What the configurator page may send, checked before any solving: a JSON object with known keys,
field names and values of the pack's types, within sizes that keep a request cheap.

Every problem raises `BadRequest` with a message a person can act on (the HTTP layer answers 400
with it); nothing here lets a traceback reach the page. Field values themselves are checked by
`solver.inputs.pins.collect_pins` (domains, did-you-mean), which the API calls next.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from solver.model import Pack, Scalar

__all__ = ["MAX_BODY_BYTES", "BadRequest", "Request", "error_document", "parse_body", "parse_request"]

# A request names at most every field of a pack once; a pasted config.json is the largest body.
MAX_BODY_BYTES = 1 << 20
MAX_FIELDS = 2000
MAX_NAME_LENGTH = 200


class BadRequest(ValueError):
    """A request the API refuses, with the message the page shows (HTTP 400)."""

    def __init__(self, message: str, issues: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.issues = list(issues)

    def to_json(self) -> dict[str, Any]:
        return error_document("BadRequest", self.message, self.issues)


def error_document(kind: str, message: str, issues: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """An `error` document as the CLI prints one (`confsolve schema --kind error`)."""
    error = {"type": kind, "message": message, "issues": list(issues)}
    return {"schema": 1, "status": "error", "error": error}


@dataclass(frozen=True)
class Request:
    """A configurator state: the values set (fields in pack order) and the fields to keep."""

    values: tuple[tuple[str, Scalar], ...]
    keep: tuple[str, ...] = ()
    field: str | None = None

    @property
    def pins(self) -> dict[str, Scalar]:
        return dict(self.values)


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body."""
    if len(raw) > MAX_BODY_BYTES:
        raise BadRequest(f"the request body is {len(raw)} bytes; at most {MAX_BODY_BYTES} are read")
    try:
        doc = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except UnicodeDecodeError:
        raise BadRequest("the request body is not UTF-8 text") from None
    except RecursionError:
        raise BadRequest("the request body is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of thousands of digits
        raise BadRequest(f"the request body is not valid JSON: {str(exc)[:160]}") from None
    if not isinstance(doc, dict):
        raise BadRequest(f"the request body must be a JSON object, not {type(doc).__name__}")
    try:  # a lone surrogate escape ("\ud800") decodes, but no answer that quotes it can be sent
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("the request body has a lone surrogate escape (such as \\ud800): not text") from None
    return doc


def _known_keys(doc: Mapping[str, Any], allowed: Sequence[str]) -> None:
    unknown = sorted(str(k)[:MAX_NAME_LENGTH] for k in doc if k not in allowed)
    if unknown:
        raise BadRequest(
            f"unknown key(s) {', '.join(map(repr, unknown))}; "
            f"this request takes {', '.join(map(repr, allowed))}"
        )


def _field_name(pack: Pack, raw: Any, where: str) -> str:
    from solver.inputs.pins import _lookup, _unknown_field

    if not isinstance(raw, str) or len(raw) > MAX_NAME_LENGTH:
        raise BadRequest(f"{where}: a field name must be a string of at most {MAX_NAME_LENGTH} characters")
    name = _lookup(pack, raw)
    if name is None:
        issue = _unknown_field(pack, raw, None)
        raise BadRequest(issue.message, [issue.to_json()])
    return name


def parse_request(pack: Pack, doc: Mapping[str, Any], allowed: Sequence[str]) -> Request:
    """`{"set": {field: value}, "keep": [field], "field": name}` (the keys in `allowed`)."""
    from solver.errors import InvalidInput
    from solver.inputs.pins import collect_pins

    _known_keys(doc, allowed)
    given = doc.get("set", {})
    if not isinstance(given, dict):
        raise BadRequest("'set' must be an object of field names to values")
    if len(given) > MAX_FIELDS:
        raise BadRequest(f"'set' names {len(given)} fields; at most {MAX_FIELDS}")
    for name, value in given.items():
        if not (value is None or isinstance(value, str | int | bool)) or isinstance(value, float):
            raise BadRequest(
                f"set.{str(name)[:MAX_NAME_LENGTH]}: a value is a string, an integer or "
                f"a boolean, not {type(value).__name__}"
            )
    try:
        pins = collect_pins(pack, given)
    except InvalidInput as exc:
        raise BadRequest(str(exc), [i.to_json() for i in exc.issues]) from None
    keep_raw = doc.get("keep", [])
    if not isinstance(keep_raw, list) or len(keep_raw) > MAX_FIELDS:
        raise BadRequest("'keep' must be a list of field names")
    keep = sorted({_field_name(pack, k, "keep") for k in keep_raw} & set(pins))
    field = doc.get("field")
    if field is not None:
        field = _field_name(pack, field, "field")
    return Request(values=tuple((n, p.value) for n, p in pins.items()), keep=tuple(keep), field=field)
