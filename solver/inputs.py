"""Turn what a launcher or a user typed into validated pins, reporting every bad field at once.

Accepts a mapping or an `argparse.Namespace` (`None` means unset), field names in snake_case or
kebab-case (`--attention-backend`), and strings for int and bool fields (`"8"`, `"true"`). A value
equal to a field's `auto` spelling means unset. Also reads the pack's environment facts.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Mapping
from typing import Any

from solver.errors import InputIssue, InvalidInput
from solver.model import Field, Pack, Pin, Scalar

__all__ = ["coerce", "collect_pins", "facts_from_environ", "field_name", "parse_assignments"]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
MAX_VALUE_LENGTH = 512


def field_name(raw: str) -> str:
    """`--attention-backend` and `attention-backend` both name `attention_backend`."""
    return raw.strip().lstrip("-").replace("-", "_")


def _lookup(pack: Pack, raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    if raw in pack.fields:
        return raw
    name = field_name(raw)
    if name in pack.fields:
        return name
    # Environment facts keep their own spelling (SGLANG_USE_AITER); accept any case of it.
    upper = name.upper()
    return upper if upper in pack.fields and pack.fields[upper].env else None


def coerce(field: Field, value: Any) -> tuple[Scalar | None, InputIssue | None]:
    """The domain value meant by `value`, `None` for "auto", or an issue that says what is allowed."""
    if field.auto is not None and isinstance(value, str) and value == field.auto:
        return None, None
    kinds = {type(v) for v in field.domain}
    candidate: Any = value
    if isinstance(value, str) and len(value) > MAX_VALUE_LENGTH:
        return None, _issue(
            field, value[:40] + "...", f"a value of {field.name} is at most {MAX_VALUE_LENGTH} characters"
        )
    if kinds == {bool}:
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            candidate = value.strip().lower() in _TRUE
        elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            candidate = bool(value)
    elif kinds == {int}:
        if isinstance(value, str):
            try:
                candidate = int(value.strip())
            except ValueError:
                candidate = value
        elif isinstance(value, float) and value.is_integer():
            candidate = int(value)
    elif kinds == {str} and isinstance(value, int | bool) and not isinstance(value, bool):
        candidate = str(value)
    elif kinds == {str} and isinstance(value, bool):
        candidate = "1" if value else "0"
    for allowed in field.domain:
        if candidate == allowed and type(candidate) is type(allowed):
            return allowed, None
    return None, _issue(field, value, None)


def _issue(field: Field, value: Any, message: str | None) -> InputIssue:
    domain = [str(v).lower() if isinstance(v, bool) else str(v) for v in field.domain]
    close = tuple(difflib.get_close_matches(str(value), domain, n=3, cutoff=0.6))
    if message is None:
        shown = ", ".join(domain[:20]) + (", ..." if len(domain) > 20 else "")
        auto = f" (or {field.auto!r} to let confsolve choose)" if field.auto else ""
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        message = f"{field.cli_flag} {value!r} is not a value of {field.name}{hint} Allowed: {shown}{auto}."
    return InputIssue(
        field=field.name, value=value, message=message, did_you_mean=close, allowed=tuple(field.domain)
    )


def _unknown_field(pack: Pack, raw: Any, value: Any) -> InputIssue:
    names = list(pack.fields)
    shown = field_name(raw) if isinstance(raw, str) else repr(raw)
    close = tuple(difflib.get_close_matches(shown, names, n=3, cutoff=0.6))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return InputIssue(
        field=str(raw),
        value=value,
        did_you_mean=close,
        message=f"unknown field {shown!r} in pack {pack.name!r}{hint} (`confsolve show` lists the fields)",
    )


def _as_mapping(obj: Any, what: str) -> Mapping[Any, Any]:
    if obj is None:
        return {}
    if isinstance(obj, argparse.Namespace):
        return vars(obj)
    if isinstance(obj, Mapping):
        return obj
    raise InvalidInput(
        [
            InputIssue(
                field=what,
                value=type(obj).__name__,
                message=f"{what} must be a mapping or an argparse.Namespace",
            )
        ]
    )


def collect_pins(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    ignore_unknown: bool = False,
) -> dict[str, Pin]:
    """Validate options and facts against the pack; pins in the pack's field order.

    A fact's pin has source `fact` (or the source of a `Pin` passed in); an option's `user`.
    `ignore_unknown` skips names the pack does not know (a launcher's own flags in a Namespace).
    """
    issues: list[InputIssue] = []
    found: dict[str, Pin] = {}
    for default_source, given in (
        ("user", _as_mapping(options, "options")),
        ("fact", _as_mapping(facts, "facts")),
    ):
        for raw, value in given.items():
            source = default_source
            if isinstance(value, Pin):
                source, value = value.source, value.value
            if value is None:
                continue
            name = _lookup(pack, raw)
            if name is None:
                if not ignore_unknown:
                    issues.append(_unknown_field(pack, raw, value))
                continue
            field = pack.fields[name]
            coerced, issue = coerce(field, value)
            if issue is not None:
                issues.append(issue)
                continue
            if coerced is None:
                continue
            if field.kind == "option":
                source = "user" if source == "fact" else source
            elif source == "user":
                source = "fact"
            previous = found.get(name)
            if previous is not None and previous.value != coerced:
                issues.append(
                    InputIssue(
                        field=name,
                        value=value,
                        message=(
                            f"{field.cli_flag} is given twice with different values "
                            f"({previous.value!r} and {coerced!r}); keep one"
                        ),
                    )
                )
                continue
            found[name] = Pin(field=name, value=coerced, source=source)  # type: ignore[arg-type]
    if issues:
        raise InvalidInput(issues)
    return {name: found[name] for name in pack.fields if name in found}


def parse_assignments(items: list[str]) -> tuple[dict[str, str], list[InputIssue]]:
    """`["a=1", "b-c=x"]` as a mapping; malformed items become issues (duplicates too)."""
    out: dict[str, str] = {}
    issues: list[InputIssue] = []
    for item in items:
        if "=" not in item:
            issues.append(InputIssue(field=item, value=None, message=f"--set {item!r} is not FIELD=VALUE"))
            continue
        raw, value = item.split("=", 1)
        name = raw.strip()
        if not name:
            issues.append(InputIssue(field=item, value=value, message=f"--set {item!r} has no field name"))
            continue
        key = field_name(name)
        if key in out and out[key] != value:
            issues.append(
                InputIssue(
                    field=key,
                    value=value,
                    message=(f"--set {key} is given twice ({out[key]!r} and {value!r}); keep one"),
                )
            )
            continue
        out[key] = value.strip()
    return out, issues


def facts_from_environ(pack: Pack, environ: Mapping[str, str] | None = None) -> dict[str, Pin]:
    """The pack's environment facts as set in `environ` (default: this process's environment).

    Values are normalised the way launchers read them: "true"/"yes"/"on" count as "1".
    """
    env = os.environ if environ is None else environ
    out: dict[str, Pin] = {}
    for name, field in pack.fields.items():
        if not field.env or name not in env:
            continue
        raw = env[name].strip()
        value: Any = raw
        if raw.lower() in _TRUE:
            value = "1"
        elif raw.lower() in _FALSE or raw == "":
            value = "0"
        coerced, issue = coerce(field, value)
        if issue is not None:
            raise InvalidInput([issue])
        if coerced is not None:
            out[name] = Pin(field=name, value=coerced, source="env")
    return out
