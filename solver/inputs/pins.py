"""Turn what a launcher or a user typed into validated pins, reporting every bad field at once.

Accepts a mapping or an `argparse.Namespace` (`None` means unset), field names in snake_case or
kebab-case (`--attention-backend`), and strings for int and bool fields (`"8"`, `"true"`). A value
equal to a field's `auto` spelling means unset. Also reads the pack's environment facts.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from typing import Any

from solver.errors import InputIssue, InvalidInput, input_issues
from solver.model import Field, Pack, Pin, Scalar
from solver.values import same, show

__all__ = [
    "coerce",
    "collect_pins",
    "env_unset",
    "env_value",
    "facts_from_environ",
    "field_name",
    "flag_owner",
    "parse_assignments",
    "shown",
]

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
MAX_VALUE_LENGTH = 512
# Longer values get no did-you-mean (difflib's cost grows with the length).
_MAX_SUGGEST_LENGTH = 100


def shown(value: Any, limit: int = 60) -> str:
    """`repr(value)` in at most `limit` characters, for any value a caller may pass.

    Python refuses to convert an integer of more than 4,300 digits to text (and a container
    holding one); such a value shows its size instead.

    >>> shown("fp8"), shown(10**5000), shown(["x" * 100])[-6:]
    ("'fp8'", '<an integer of about 5000 digits>', 'xxx...')
    """
    try:
        text = repr(value)
    except ValueError:
        if isinstance(value, int):
            sign = "a negative" if value < 0 else "an"
            return f"<{sign} integer of about {int(value.bit_length() * 0.30103)} digits>"
        text = f"<{type(value).__name__} that cannot be shown>"
    except Exception:  # a caller's object whose __repr__ fails
        text = f"<{type(value).__name__} that cannot be shown>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reported(value: Any) -> Any:
    """The value an issue keeps: as given, unless it cannot even be rendered (JSON needs it)."""
    if isinstance(value, str | float | bool) or value is None:
        return value
    try:
        repr(value)
    except Exception:
        return shown(value)
    return value


def _suggestion_text(value: Any) -> str | None:
    """The text did-you-mean compares with the domain, or None to suggest nothing."""
    if isinstance(value, bool):
        return show(value)
    if isinstance(value, int) and value.bit_length() > 64:
        return None
    if isinstance(value, int | float | str):
        text = str(value)
        if not text.isascii():
            # Full-width or compatibility letters ("ｆａ３", typed with an IME on) compare as the
            # letters they stand for: the value is still refused, and the suggestion is "fa3".
            import unicodedata

            text = unicodedata.normalize("NFKC", text)
        return text if len(text) <= _MAX_SUGGEST_LENGTH else None
    return None


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
    if upper in pack.fields and pack.fields[upper].env:
        return upper
    return flag_owner(pack, raw)


def flag_owner(pack: Pack, raw: str) -> str | None:
    """The field whose launcher flag (any alias the pack lists) is `raw`, with or without its
    dashes: `--tp`, `tp` and `tensor-parallel-size` all name `tp_size` in the SGLang pack."""
    text = raw.strip()
    # `--set` keys arrive as field names (dashes turned into underscores): try the flag spelling too.
    bare = text.lstrip("-")
    spellings = {text, "--" + bare, "-" + bare, "--" + bare.replace("_", "-"), "-" + bare.replace("_", "-")}
    for name, field in pack.fields.items():
        if field.env:
            continue
        flags = field.all_flags
        if any(s in flags for s in spellings):
            return name
    return None


_INTEGER = re.compile(r"-?[0-9]{1,18}")  # ASCII digits, no sign but "-", no "_"
_DIGITS = re.compile(r"-?[0-9]+")  # an integer too long for _INTEGER: say so, not "not a value"


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
            # Plain ASCII digits only: int() would also take "0_8", "+8", "８" or " 8" as 8.
            text = value.strip()
            candidate = int(text) if _INTEGER.fullmatch(text) else value
            if candidate is value and _DIGITS.fullmatch(text):
                in_range = f" Allowed: {field.open.text()}." if field.open is not None else ""
                too_long = f"{_typed(field, value, 30)} is too long for {field.name} (18 digits at most)."
                return None, _issue(field, value, too_long + in_range)
        elif isinstance(value, float) and value.is_integer():
            candidate = int(value)
        if type(candidate) is int and abs(candidate) >= 10**18:  # (from Python or JSON: no text form)
            in_range = f" Allowed: {field.open.text()}." if field.open is not None else ""
            too_long = f"{_typed(field, value, 30)} is too long for {field.name} (18 digits at most)."
            return None, _issue(field, value, too_long + in_range)
    elif kinds == {str} and isinstance(value, int) and not isinstance(value, bool):
        # An integer too long for str() cannot spell a domain value.
        candidate = str(value) if value.bit_length() <= 64 else value
    elif kinds == {str} and isinstance(value, bool):
        candidate = "1" if value else "0"
    for allowed in field.domain:
        if same(candidate, allowed):
            return allowed, None
    if field.open is not None and field.open.admits(candidate):
        return candidate, None
    if isinstance(candidate, str) and field.aliases:  # a GPU name, a compute capability
        # A variable's value is read as the launcher reads it: lowered, not stripped.
        typed = candidate.lower() if field.env else candidate.strip().lower()
        meant = {k.lower(): v for k, v in field.aliases.items()}.get(typed)
        for allowed in field.domain:
            if meant is not None and str(allowed) == meant:
                return allowed, None
    if field.env and kinds == {str}:
        return None, _issue(field, value, _unread(field, value), guess=False)
    return None, _issue(field, value, None)


def _unread(field: Field, value: Any) -> str:
    """The refusal of a variable's value the launcher does not read as one of the field's values:
    what the launcher does with it (the pack's `unread`), and every spelling it does read. A
    similar-looking value is not suggested: "on" is one letter from "no", its opposite."""
    values = [show(v) for v in field.domain]
    read = [
        f"{', '.join(words)} as {v}"
        for v in values
        if (words := [k for k, meant in field.aliases.items() if meant == v and k.lower() != v.lower()])
    ]
    also = f"; the launcher also reads {'; '.join(read)}, in any case" if read else ""
    why = (
        f"is not read as you may mean: {field.unread.rstrip().rstrip('.')}"
        if field.unread
        else f"is not a value the launcher reads for {field.name}"
    )
    either = " or ".join(f"{field.name}={v}" for v in values)
    return f"{_typed(field, value, 80)} {why}. Set {either}{also}."


def _typed(field: Field, value: Any, width: int) -> str:
    """How the user wrote a value: an option as its launcher flag (`--tp-size 'abc'`), a fact as
    `name='value'` (a fact has no launcher flag: `--gpu-arch` or `--SGLANG-USE-AITER` named
    flags that exist nowhere)."""
    if field.kind == "option":
        return f"{field.cli_flag} {shown(value, width)}"
    return f"{field.name}={shown(value, width)}"


def _typed_name(field: Field) -> str:
    return field.cli_flag if field.kind == "option" else field.name


def _issue(field: Field, value: Any, message: str | None, *, guess: bool = True) -> InputIssue:
    domain = [show(v) for v in field.domain]
    text = _suggestion_text(value) if guess else None
    # Did-you-mean also searches the labels' words and the aliases (ignoring case), and
    # suggests the value they name.
    spelled = {d.lower(): d for d in domain}
    spelled.update({k.lower(): v for k, v in field.aliases.items()})
    for key, label in field.labels.items():
        for word in label.replace("(", " ").replace(")", " ").replace(",", " ").split():
            spelled.setdefault(word.lower(), key)
    import difflib  # only for a value that is not in the domain: not on every start's path

    close = (
        tuple(
            dict.fromkeys(
                spelled[c] for c in difflib.get_close_matches(text.lower(), list(spelled), n=3, cutoff=0.6)
            )
        )
        if text is not None
        else ()
    )
    number = _integer(field, value)
    if number is not None:
        close = _nearest(field, number)
    if message is None:
        listed = ", ".join(domain[:20]) + (", ..." if len(domain) > 20 else "")
        if field.open is not None:
            listed = field.open.text()
        auto = f" (or {field.auto!r} to let confsolve choose)" if field.auto else ""
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
        message = (
            f"{_typed(field, value, 80)} is not a value of {field.name}{hint} "
            f"Allowed: {listed}{auto}{'' if (listed + auto).endswith('...') else '.'}"
        )
    return InputIssue(
        field=field.name,
        value=_reported(value),
        message=message,
        did_you_mean=close,
        allowed=tuple(field.domain),
    )


def _integer(field: Field, value: Any) -> int | None:
    """`value` as the whole number it spells, for a field whose values are whole numbers."""
    if not field.domain or any(type(v) is not int for v in field.domain):
        return None
    if type(value) is int:
        return value
    text = value.strip() if isinstance(value, str) else None
    return int(text) if text is not None and _INTEGER.fullmatch(text) else None


def _nearest(field: Field, number: int) -> tuple[str, ...]:
    """The allowed values nearest `number`: the next one below and the next above, the nearer
    first (a tie: the larger). By spelling, 7 was near 70 and 700, not 6 or 8."""
    below = max((v for v in field.domain if isinstance(v, int) and v < number), default=None)
    above = min((v for v in field.domain if isinstance(v, int) and v > number), default=None)
    found = [v for v in (above, below) if v is not None]
    found.sort(key=lambda v: abs(v - number))  # (stable: above before below on a tie)
    return tuple(show(v) for v in found)


def _unknown_field(pack: Pack, raw: Any, value: Any, *, suggest: bool = True) -> InputIssue:
    import difflib

    names = list(pack.fields)
    name = field_name(raw) if isinstance(raw, str) else shown(raw)
    near = suggest and len(name) <= 200
    close = tuple(difflib.get_close_matches(name, names, n=3, cutoff=0.6)) if near else ()
    if near and not close and len(name) >= 2:
        # The first words of a field's name (`gpu` for gpu_arch, `tp` for tp_size): too short
        # for the spelling ratio, but what a newcomer types first.
        close = tuple(n for n in names if n.startswith(name + "_"))[:3]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return InputIssue(
        field=raw if isinstance(raw, str) else name,
        value=_reported(value),
        did_you_mean=close,
        message=(
            f"unknown field {shown(name, 80)} in pack {pack.name!r}{hint} (`confsolve show` lists the fields)"
        ),
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
    issues = input_issues()
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
                if not ignore_unknown:  # (a did-you-mean for the first few: 100,000 took a minute)
                    issues.add(_unknown_field(pack, raw, value, suggest=len(issues.problems) < 20))
                continue
            field = pack.fields[name]
            coerced, issue = coerce(field, value)
            if issue is not None:
                issues.add(issue)
                continue
            if coerced is None:
                continue
            if field.kind == "option":
                source = "user" if source == "fact" else source
            elif source == "user":
                source = "fact"
            previous = found.get(name)
            if previous is not None and previous.value != coerced:
                issues.add(
                    InputIssue(
                        field=name,
                        value=value,
                        message=(
                            f"{_typed_name(field)} is given twice with different values "
                            f"({previous.value!r} and {coerced!r}); keep one"
                        ),
                    )
                )
                continue
            found[name] = Pin(field=name, value=coerced, source=source)  # type: ignore[arg-type]
    issues.check()
    return {name: found[name] for name in pack.fields if name in found}


def parse_assignments(items: list[str], option: str = "--set") -> tuple[dict[str, str], list[InputIssue]]:
    """`["a=1", "b-c=x"]` as a mapping; malformed items become issues (duplicates too), naming
    the `option` they were given with."""
    out: dict[str, str] = {}
    issues: list[InputIssue] = []
    for item in items:
        if "=" not in item:
            issues.append(InputIssue(field=item, value=None, message=f"{option} {item!r} is not FIELD=VALUE"))
            continue
        raw, value = item.split("=", 1)
        name = raw.strip()
        if not name:
            issues.append(InputIssue(field=item, value=value, message=f"{option} {item!r} has no field name"))
            continue
        key = field_name(name)
        if key in out and out[key] != value:
            issues.append(
                InputIssue(
                    field=key,
                    value=value,
                    message=(f"{option} {key} is given twice ({out[key]!r} and {value!r}); keep one"),
                )
            )
            continue
        out[key] = value.strip()
    return out, issues


def env_value(field: Field, raw: str) -> Scalar:
    """A variable's value as the launcher reads it: empty is no value, the launcher's default
    (`env_unset`; SGLang's `EnvField.get` finds no value in "" and runs its default: an `EnvInt`
    such as SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK= runs with 8192, not 0). Any other
    value is kept as set for `coerce`, which takes a domain value or one of the words the pack lists
    for the variable (`aliases`: the launcher's own switch words, lowered and not stripped), and
    refuses the rest naming the variable ("on" or " 1", which SGLang warns about and reads as its
    default, not as what was meant)."""
    return env_unset(field) if raw == "" else raw


def env_unset(field: Field) -> Scalar:
    """An environment field's value when its variable is not set: its `absent`, else its first."""
    return field.domain[0] if field.absent is None else field.absent


def facts_from_environ(pack: Pack, environ: Mapping[str, str] | None = None) -> dict[str, Pin]:
    """The pack's environment facts as set in `environ` (default: this process's environment).

    Values are read the way the launcher reads them (`env_value`, `coerce`): a domain value, or
    one of the words the pack lists for the variable (`aliases`: "true" for "1" where the launcher
    takes it), in any case; any other value is refused naming the variable and what the launcher
    would do with it (`unread`), as `--set` refuses it. A variable that is not set is read too, as
    its unset value (the field's `absent`, else its first domain value): the environment was
    looked at, so nothing about it is assumed.
    """
    env = os.environ if environ is None else environ
    issues = input_issues()  # every badly set variable at once
    out: dict[str, Pin] = {}
    for name, field in pack.fields.items():
        if not field.env:
            continue
        if name not in env:
            out[name] = Pin(field=name, value=env_unset(field), source="env")
            continue
        coerced, issue = coerce(field, env_value(field, env[name]))
        if issue is not None:
            issues.add(issue)
        elif coerced is not None:
            out[name] = Pin(field=name, value=coerced, source="env")
    issues.check()
    return out
