"""argparse integration for launchers: a pack's fields as flags, a Namespace resolved, flags back out.

Owns the three calls a launcher needs — `add_arguments` (the pack's fields as `--kebab-case` flags
on the launcher's own parser, never clobbering a flag it already has), `resolve_namespace` (what
the user typed, `None` meaning auto, resolved with the launcher's unrelated attributes ignored) and
`to_argv` (the resolved options rendered as flags for the real server). Works through the public
API only; must not import pydantic, networkx or python-constraint.

>>> import argparse
>>> from solver.model import Field, Pack
>>> pack = Pack(name="demo", version="1", fields={
...     "kernel": Field(name="kernel", kind="option", domain=("triton", "cutlass"), auto="auto"),
...     "fused": Field(name="fused", kind="option", domain=(False, True))})
>>> parser = argparse.ArgumentParser()
>>> add_arguments(parser, pack)
['kernel', 'fused']
>>> ns = parser.parse_args(["--fused"])
>>> to_argv(resolve_namespace(ns, pack), pack)
['--kernel', 'triton', '--fused']
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from solver.errors import InputIssue, InvalidInput, Unsatisfiable
from solver.inputs.arguments import need, need_names, need_pack
from solver.inputs.launch import (
    flag_words,
    read_command,
    repair_fact_changes,
    repaired_command,
    shell_line,
)
from solver.inputs.pins import coerce, collect_pins, field_name
from solver.inputs.precedence import read_values
from solver.model import Field, Pack, Pin, Repair, Resolution, Scalar
from solver.reasoning.minimal import command_options, minimal_options
from solver.values import same
from solver.values import show as _show

__all__ = ["add_arguments", "explain_conflict", "resolve_namespace", "to_argv"]

# A long domain makes an unreadable `{a,b,...}` usage line; past this many values the metavar is
# the field's name and the values are listed in the help text instead.
_MAX_INLINE_CHOICES = 10


def _converter(field: Field) -> Any:
    """The argparse `type` for a field: the domain value, the auto spelling kept as typed, or an
    error that names the flag, the value and what is allowed (with did-you-mean)."""

    def convert(text: str) -> Scalar:
        if field.auto is not None and text == field.auto:
            return text
        value, issue = coerce(field, text)
        if issue is not None or value is None:
            raise argparse.ArgumentTypeError(issue.message if issue else f"{text!r} is not allowed")
        return value

    convert.__name__ = field.name  # argparse names the type in some of its messages
    return convert


def _help(field: Field, pack: Pack) -> str:
    text = field.help.rstrip(". ") if field.help else field.name.replace("_", " ")
    if field.open is not None:
        text += f"; {field.open.text()}"
    elif len(field.domain) > _MAX_INLINE_CHOICES:
        text += "; one of: " + ", ".join(_show(v) for v in field.domain)
    if field.kind == "option":
        auto = f" ({field.auto!r} or not given)" if field.auto else ""
        text += f" (default: auto{auto} — chosen by the {pack.name} pack's preferences)"
    else:
        text += " (default: unknown — any value the rules allow)"
    # argparse %-formats help strings; a literal % in a pack's help must not break --help.
    return text.replace("%", "%%")


def _metavar(field: Field) -> str:
    if len(field.domain) > _MAX_INLINE_CHOICES or field.open is not None:
        return field.name.upper()
    values = [_show(v) for v in field.domain]
    if field.auto is not None:
        values.append(field.auto)
    return "{" + ",".join(values) + "}"


def _selected(pack: Pack, fields: Iterable[str] | None) -> list[Field]:
    if fields is None:
        # Environment facts are variables, not flags: facts_from_environ() reads them.
        return [f for f in pack.fields.values() if not f.env]
    chosen: list[Field] = []
    issues: list[InputIssue] = []
    for raw in need_names(fields, "add_arguments", "fields") or ():  # one name, not its letters
        name = raw if raw in pack.fields else field_name(raw)
        if name not in pack.fields:
            issues.append(
                InputIssue(
                    field=str(raw),
                    value=None,
                    message=f"add_arguments: pack {pack.name!r} has no field {raw!r}",
                )
            )
        else:
            chosen.append(pack.fields[name])
    if issues:
        raise InvalidInput(issues)
    return chosen


def add_arguments(
    parser: argparse.ArgumentParser, pack: Pack, fields: Iterable[str] | None = None
) -> list[str]:
    """Add the pack's fields (default: all but environment facts) as flags; return the names added.

    dest = the field name, default `None` (= auto for an option, unknown for a fact), choices = the
    domain plus the auto spelling. A bool field is a bare flag (`--enable-x` = true), as a
    `store_true` flag is, and also takes a value (`--enable-x false`) so false can be pinned. A field
    whose flag or dest the parser already has is skipped: the launcher's own flag wins and its
    value is still read by `resolve_namespace` (give such flags `default=None` so "not typed" is
    distinguishable from a value).
    """
    need_pack(pack, "add_arguments")
    need(parser, argparse._ActionsContainer, "add_arguments", "parser", "an argparse parser or group")
    # argparse keeps no public index of its flags; these two are stable since Python 3.2.
    taken_flags = set(parser._option_string_actions)
    taken_dests = {action.dest for action in parser._actions}
    groups: dict[str, Any] = {}
    added: list[str] = []
    for field in _selected(pack, fields):
        flag = field.cli_flag
        if flag in taken_flags or field.name in taken_dests:
            continue
        # The launcher's other spellings (`--tp` for `--tp-size`), where the parser has none of them.
        aliases = [f for f in field.all_flags[1:] if f not in taken_flags]
        group = groups.get(field.group)
        if group is None:
            group = parser.add_argument_group(
                f"{field.group} ({pack.name} pack)",
                "left unset, options are chosen by confsolve and facts are unknown",
            )
            groups[field.group] = group
        choices: list[Any] | None = list(field.domain)
        if field.auto is not None:
            choices = [*field.domain, field.auto]
        if field.open is not None:
            choices = None  # any value of the range: the type converter checks it
        kwargs: dict[str, Any] = {
            "dest": field.name,
            "default": None,
            "type": _converter(field),
            "choices": choices,
            "metavar": _metavar(field),
            "help": _help(field, pack),
        }
        if all(isinstance(v, bool) for v in field.domain):
            kwargs.update(nargs="?", const=True)
        group.add_argument(flag, *aliases, **kwargs)
        taken_flags.update([flag, *aliases])
        taken_dests.add(field.name)
        added.append(field.name)
    return added


def _absent(field: Field) -> Scalar | None:
    """The value the launcher spells by leaving the flag out (the pack's `absent`), if any."""
    # Read defensively: `absent` is a newer field attribute, and hand-built models may lack it.
    value: Scalar | None = getattr(field, "absent", None)
    return value


def _fact_name(pack: Pack, raw: Any) -> str:
    if isinstance(raw, str) and raw not in pack.fields:
        return field_name(raw)
    return str(raw)


def resolve_namespace(
    ns: argparse.Namespace | Mapping[str, Any],
    pack: Pack,
    facts: Mapping[str, Any] | None = None,
    *,
    strict: bool = False,
    reasons: bool = False,
    require: Iterable[str] = (),
    deny_warnings: bool = False,
) -> Resolution:
    """Resolve what the user typed; attributes that are not pack fields are ignored.

    `require`: facts that must be given (typed, or in `facts`): a launcher that cannot let one be
    assumed (e.g. `("architecture",)` when it has no model config) gets `InvalidInput` naming
    each missing fact and how to provide it, instead of an answer that holds only if a guess is
    right. `deny_warnings`: a resolution with warnings raises `Unsatisfiable` (like `-D warnings`).

    `facts` (e.g. from `facts_from_environ`, `detect_facts` or a model's config.json) fill in what
    the namespace leaves `None`; a value the user typed wins over one that was read. Raises
    `InvalidInput` (a value outside a domain) or `Unsatisfiable`; `str()` of either is the text to
    show. `reasons=True` also computes why better-ranked values were rejected (slower).
    """
    from solver.reasoning.resolution import resolve_pins

    need_pack(pack, "resolve_namespace")
    need(ns, (argparse.Namespace, Mapping), "resolve_namespace", "ns", "an argparse.Namespace or a mapping")
    need(facts, (Mapping, type(None)), "resolve_namespace", "facts", "a mapping of fact names to values")
    require = need_names(require, "resolve_namespace", "require") or ()
    given = vars(ns) if isinstance(ns, argparse.Namespace) else dict(ns)
    read = read_values(pack, [raw for raw, value in given.items() if value is not None], facts or {})
    pins: dict[str, Pin] = collect_pins(pack, given, read, ignore_unknown=True)
    missing = [
        InputIssue(
            field=name,
            value=None,
            message=(
                f"{name} is required and was not given: pass {pack.fields[name].cli_flag} VALUE (or a "
                "model path whose config.json is readable, for model facts); confsolve does not assume it"
            ),
        )
        for name in dict.fromkeys(_fact_name(pack, r) for r in require)
        if name in pack.fields and name not in pins
    ]
    unknown = [
        InputIssue(field=str(r), value=None, message=f"require: pack {pack.name!r} has no field {r!r}")
        for r in require
        if _fact_name(pack, r) not in pack.fields
    ]
    if missing or unknown:
        raise InvalidInput(unknown + missing)
    res = resolve_pins(pack, pins, strict=strict, reasons=reasons)
    if deny_warnings:
        from solver.reasoning.resolution import deny

        deny(pack, pins, res)
    return res


def to_argv(
    resolution: Resolution,
    pack: Pack,
    *,
    only: Iterable[str] | None = None,
    include_facts: bool = False,
    explicit_false: bool = False,
    minimal: bool = False,
) -> list[str]:
    """The resolved configuration as flags for the real server, in the pack's field order.

    Every option is rendered (the server must not re-decide what confsolve decided), except:
    a bool is a bare flag when true and left out when false (the `store_true` style SGLang and
    vLLM use; `explicit_false` writes `--flag false` instead, for a parser built by
    `add_arguments`, which reads a missing flag as auto, not false); and a field whose pack
    declares `absent = VALUE` leaves its flag out for that value (the launcher spells it by not
    passing the flag, like SGLang's `--quantization` for `none`).
    Facts are inputs, not server flags: only with `include_facts` (environment facts never).
    `only` limits the output to those fields (any kind). `minimal` keeps only the options that
    differ from what the launcher would choose by itself (`solver.reasoning.minimal.minimal_options`).
    Without `only`, an option whose being typed a rule refuses (`given(FIELD)`) is left out when the
    launcher reaches its value by itself; when it does not, `Unsatisfiable` says that no command
    gives this answer (`solver.reasoning.minimal.command_options`).
    For the whole launch command (program, model, the user's other flags) see
    `solver.inputs.launch.write_command`.
    """
    need_pack(pack, "to_argv")
    need(resolution, Resolution, "to_argv", "resolution", "a Resolution (resolve() returns one)")
    only = need_names(only, "to_argv", "only")
    made_for = resolution.pack.get("name")
    if made_for not in (None, pack.name):  # another pack's fields would be written with its values
        message = f"to_argv: the resolution is of pack {made_for!r}, not {pack.name!r}"
        raise InvalidInput([InputIssue(field="pack", value=pack.name, message=message)])
    wanted = None if only is None else {_fact_name(pack, n) for n in only}
    if minimal:
        keep = set(minimal_options(pack, resolution.values))
        wanted = keep if wanted is None else wanted & keep
    left_out: set[str] = set()
    if only is None:  # a whole command: none the launcher refuses (`command_options`)
        written = [n for n in pack.options if wanted is None or n in wanted]
        left_out = set(written).difference(command_options(pack, resolution, written))
    argv: list[str] = []
    for name, field in pack.fields.items():
        if name in left_out:
            continue
        if wanted is not None:
            if name not in wanted:
                continue
        elif field.kind == "fact" and (not include_facts or field.env):
            continue
        value = resolution.values.get(name)
        if value is None:
            continue
        absent = _absent(field)
        if absent is not None and same(value, absent):
            continue
        if field.flag_value != "value":  # store_true and kin: the pack says how it is spelled
            argv += flag_words(field, value)
            continue
        if isinstance(value, bool):
            if value:
                argv.append(field.cli_flag)
            elif explicit_false:
                argv += [field.cli_flag, "false"]
            continue
        argv += [field.cli_flag, str(value)]
    return argv


def explain_conflict(
    exc: Unsatisfiable,
    pack: Pack,
    argv: Sequence[str] = (),
    *,
    prog: str = "",
    render: Callable[[Repair], str] | None = None,
) -> str:
    """The text of a conflict with each repair written as the launcher's own command line.

    `argv` is what the user typed after the program name (the flags `add_arguments` added read
    back, any others kept as typed) and `prog` the program name to put in front; each repair is
    that command with the flags it unsets left out and the ones it sets written in (the pack's
    canonical spellings). A launcher whose flags differ from the pack's passes `render`, which
    writes one repair (`repair.set`, `repair.unset`) as it likes.

    >>> from solver.model import ConflictReport
    >>> exc = Unsatisfiable(ConflictReport(pins=[], rules=[]), [])
    >>> explain_conflict(exc, Pack(name="demo", version="1", fields={})) == exc.message
    True
    """
    from solver.reasoning.resolution import conflict_text

    need_pack(pack, "explain_conflict")
    need(exc, Unsatisfiable, "explain_conflict", "exc", "an Unsatisfiable (resolve() raises one)")
    if render is None:
        typed = read_command(pack, list(argv))
        if prog:
            typed = dataclasses.replace(typed, program=(prog,))

        def render(repair: Repair) -> str:
            facts = repair_fact_changes(pack, repair)
            line = shell_line(repaired_command(pack, typed, repair))
            return line + (f"    (with {', '.join(facts)})" if facts else "")

    return conflict_text(pack, exc, render)
