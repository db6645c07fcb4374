"""The commands that answer a request or describe a pack: `resolve`, `why`, `choices`, `check`,
`graph`, `packs` and `show`, and how every command gathers its inputs (`--set`, `--assume`,
`--model-config`, `--env-from-os`, `--detect`, a launch command after `--`).

Registered through `solver.cli.commands.COMMANDS` (each module a command's home, imported only
when that command runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from constraints import DEFAULT_PACK
from solver.cli import PACK_HELP
from solver.cli.commands import EXIT_CONFLICT, EXIT_OK, _add_format, _answer, _help

if TYPE_CHECKING:
    from solver.errors import SolverError


def _add_resolve(sub: Any, add_inputs: Callable[..., None]) -> None:
    p = sub.add_parser(
        "resolve",
        help=_help("resolve"),
        description="Resolve a configuration: your choices kept, the rest chosen "
        "by the pack's preferences, every value with its provenance.",
    )
    add_inputs(p)
    _add_format(p, "resolve")
    p.add_argument(
        "--minimal",
        action="store_true",
        help="with --format argv: only the options that differ from what the launcher would choose by itself",
    )
    p.add_argument(
        "--save-case",
        metavar="FILE",
        help="also write the request and its outcome as a test case file (tests/cases/)",
    )
    p.set_defaults(func=cmd_resolve)


def _add_why(sub: Any, add_inputs: Callable[..., None]) -> None:
    p = sub.add_parser(
        "why",
        help=_help("why"),
        description="Who decided FIELD, which rule or preference, why each "
        "better-ranked value was rejected, and what else it could be.",
    )
    p.add_argument("field", metavar="FIELD")
    add_inputs(p)
    p.set_defaults(func=cmd_why)


def _add_choices(sub: Any, add_inputs: Callable[..., None]) -> None:
    p = sub.add_parser(
        "choices",
        help=_help("choices"),
        description="For each option (or FIELD), the values still possible given "
        "the inputs, and for each excluded value its minimal reason.",
    )
    p.add_argument("field", metavar="FIELD", nargs="?")
    add_inputs(p)
    p.set_defaults(func=cmd_choices)


def _add_check(sub: Any, add_inputs: Callable[..., None]) -> None:
    p = sub.add_parser(
        "check",
        help=_help("check"),
        description="Predict what the launcher does with the request as typed: every flag "
        "left unset takes the launcher's own default chain, never another value. Exit 0 when it "
        "takes the request (then its warnings and the facts assumed), 1 on a conflict (naming "
        "the launcher default that fails and the flag to set), 2 on bad input. `resolve` "
        "searches for the best configuration instead.",
    )
    add_inputs(p)
    p.set_defaults(func=cmd_check)


def _add_graph(sub: Any, add_inputs: Callable[..., None]) -> None:
    p = sub.add_parser(
        "graph",
        help=_help("graph"),
        description="The order in which fields are decided, as DOT, Mermaid, JSON "
        "or SVG (SVG needs Graphviz's dot on PATH).",
    )
    _add_format(p, "graph")
    p.add_argument(
        "--json", action="store_true", help="the graph as the JSON document (the same as --format json)"
    )
    p.add_argument("--pack", default=DEFAULT_PACK, metavar="NAME_OR_PATH", help=PACK_HELP)
    p.set_defaults(func=cmd_graph)


def _add_packs(sub: Any, add_inputs: Callable[..., None]) -> None:
    p = sub.add_parser("packs", help=_help("packs"))
    p.add_argument("--json", action="store_true", help="print the contract's JSON document")
    p.set_defaults(func=cmd_packs)


def _nothing_to_resolve(pack: Any) -> Any:
    """The issue of an empty request, with the pack's own example request (`[pack] example`)."""
    from solver.errors import InputIssue
    from solver.values import show as _show

    example = " ".join(f"--set {name}={_show(value)}" for name, value in pack.example.items())
    facts = [name for name, field in pack.fields.items() if field.kind == "fact"]
    return InputIssue(
        field=next(iter(pack.example), facts[0] if facts else "--set"),
        value=None,
        message="nothing to resolve: give the facts of the machine and model, "
        + (f"e.g. {example}, " if example else "with --set FIELD=VALUE, ")
        + "or --model-config PATH/config.json",
    )


def _add_show(sub: Any, add_inputs: Callable[..., None]) -> None:
    p = sub.add_parser("show", help=_help("show"))
    p.add_argument("--pack", default=DEFAULT_PACK, metavar="NAME_OR_PATH", help=PACK_HELP)
    p.add_argument("--json", action="store_true", help="print the contract's JSON document")
    p.set_defaults(func=cmd_show)


# --- input gathering ------------------------------------------------------------------------


def load(args: argparse.Namespace) -> Any:
    from solver import load_pack, progress

    # Loading is charged to the command's budget too (a step per 64 bytes of pack files).
    pack = load_pack(args.pack, budget=getattr(args, "command_budget", None))
    progress.phase("searching")  # no longer "loading the pack" (a --deadline message names it)
    return pack


def _detected(pack: Any, typed: dict[str, str]) -> dict[str, Any]:
    """`--detect`: the detected pins, after saying on stderr what was found and how (or what was
    not, and why), so a detected value is never a silent one."""
    from solver.inputs.detect import detect
    from solver.inputs.pins import _lookup, coerce
    from solver.render.text import describe_pin

    given = {}
    for raw, text in typed.items():
        name = _lookup(pack, raw)
        value = coerce(pack.fields[name], text)[0] if name is not None else None
        if name is not None and value is not None:
            given[name] = value
    found = detect(pack, given=given)
    for note in found.notes:
        print(f"confsolve: --detect: {note}", file=sys.stderr)
    shown = ", ".join(describe_pin(pack, n, p.value, p.source) for n, p in found.pins.items()) or "nothing"
    print(f"confsolve: --detect set {shown}", file=sys.stderr)
    return dict(found.pins)


def gather(args: argparse.Namespace, pack: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Options and facts from --set, --assume, --model-config, --env-from-os, --detect and a
    launch command after `--` (read into `args.command_read`).

    What the user typed (--set, the launch command's flags) wins over what was read, detected or
    assumed (`solver.inputs.precedence.read_values`: --assume over config.json over the
    environment over --detect).
    """
    from solver.errors import input_issues
    from solver.inputs.pins import _lookup, collect_pins, facts_from_environ, parse_assignments
    from solver.inputs.precedence import read_values, typed_fields
    from solver.model import Pin

    args.request_pack = pack  # for writing repairs back in the syntax they were typed in
    # Every bad input of the command at once: each source is read even when an earlier one failed.
    issues = input_issues()
    sets, bad = parse_assignments(args.set)
    assumed, more = parse_assignments(args.assume, "--assume")
    issues.add(*bad, *more)
    model_path = getattr(args, "model_config", None)
    model_flag = "--model-config"
    if getattr(args, "launch", None) is not None:
        from solver.cli.launch import merge_launch

        with issues.collect():  # (it raises only for a command of no program the pack lists)
            model_path = merge_launch(args, pack, sets, model_path, issues)
            if not getattr(args, "model_config", None):  # the command's own model: say it its way
                model_flag = args.command_read.model_flag or "the launch command's model"
    typed = typed_fields(pack, sets)
    detected = _detected(pack, {**assumed, **sets}) if getattr(args, "detect", False) else {}
    environ: dict[str, Any] = {}
    if getattr(args, "env_from_os", False):
        with issues.collect():
            environ = facts_from_environ(pack)
    model: dict[str, Any] = {}
    if model_path is not None:  # (an empty one too: said to be empty, not dropped)
        from solver.inputs.modelconfig import facts_from_model_config

        read_notes: list[str] = []
        with issues.collect():
            model = facts_from_model_config(pack, model_path, skip=typed, flag=model_flag, notes=read_notes)
            for note in read_notes:  # read as the launcher reads it, and said (as --detect's)
                print(f"confsolve: {note}", file=sys.stderr)
    assumed_pins: dict[str, Any] = {}
    for raw, value in assumed.items():
        name = _lookup(pack, raw) or raw
        assumed_pins[name] = Pin.model_construct(field=name, value=value, source="assumed")
        if name in typed:  # --set wins, but a wrong --assume is still reported
            issues.add(*_assume_issues(pack, raw, name, value))
    # Lowest precedence first; what was typed (--set, the launch command's flags) wins over all.
    facts = read_values(pack, sets, detected, environ, model, assumed_pins)
    if issues:
        # The values themselves too (the command checks them again when nothing else failed).
        with issues.collect():
            collect_pins(pack, sets, facts)
    issues.check()
    return sets, facts


def _assume_issues(pack: Any, raw: str, name: str, value: str) -> list[Any]:
    from solver.inputs.pins import _unknown_field, coerce

    if name not in pack.fields:
        return [_unknown_field(pack, raw, value)]
    _, issue = coerce(pack.fields[name], value)
    return [issue] if issue is not None else []


def cmd_resolve(args: argparse.Namespace) -> int:
    from solver.errors import InputIssue, InvalidInput, Unsatisfiable
    from solver.inputs.pins import collect_pins
    from solver.reasoning.resolution import resolve_pins

    if args.minimal and args.format != "argv":
        raise InvalidInput(
            [
                InputIssue(
                    field="--minimal",
                    value=None,
                    message=("--minimal applies to --format argv (the launch command); add --format argv"),
                )
            ]
        )
    if args.save_case == "":  # (it was skipped in silence: an empty name is false)
        message = "--save-case '': give the new case file's path (tests/cases/NAME.toml)"
        raise InvalidInput([InputIssue(field="--save-case", value="", message=message)])
    pack = load(args)
    options, facts = gather(args, pack)
    if not options and not facts:
        raise InvalidInput([_nothing_to_resolve(pack)])
    try:
        pins = collect_pins(pack, options, facts)
        res = resolve_pins(pack, pins, strict=args.strict, budget=args.command_budget)
        if getattr(args, "deny_warnings", False):
            from solver.reasoning.resolution import deny

            deny(pack, pins, res)
    except (Unsatisfiable, InvalidInput) as exc:
        if args.save_case is not None:
            _save_case(args, pack, options, facts, exc)
        raise
    if args.save_case is not None:
        _save_case(args, pack, options, facts, None, {n: res.values[n] for n in pack.options})
    fields = pack.options
    if args.minimal:  # only with --format argv (checked above)
        from solver.cli.launch import minimal_fields

        fields = minimal_fields(args, pack, res)
    from solver.reasoning.minimal import command_options

    unreachable: Unsatisfiable | None = None
    if args.format == "argv":  # a command the launcher takes, or a conflict that says there is none
        fields = command_options(pack, res, fields)
    else:  # an answer no command gives is said in the text and JSON too (~0.1 ms CPU to check)
        try:
            command_options(pack, res, fields)
        except Unsatisfiable as exc:
            unreachable = exc
    _answer(args, "resolve", pack, res, getattr(args, "command_read", None), fields, unreachable)
    return EXIT_OK


def _save_case(
    args: argparse.Namespace,
    pack: Any,
    options: dict[str, Any],
    facts: dict[str, Any],
    error: SolverError | None,
    values: dict[str, Any] | None = None,
) -> None:
    from pathlib import Path

    from solver.errors import InputIssue, InvalidInput, Unsatisfiable
    from solver.inputs.pins import _lookup
    from solver.render.cases import save_case

    outcome: dict[str, Any] = {"status": "resolved", "values": values or {}}
    if isinstance(error, Unsatisfiable):
        outcome = {"status": "conflict", "conflict_rules": [r.id for r in error.conflict.rules]}
    elif isinstance(error, InvalidInput):
        outcome = {"status": "invalid", "invalid_fields": [i.field for i in error.issues]}
    request = {(_lookup(pack, k) or k): v for k, v in {**facts, **options}.items()}
    try:
        ref = args.pack if args.pack == pack.name else str(Path(args.pack).resolve())
        save_case(args.save_case, pack, request, args.strict, outcome, ref)
    except FileExistsError:
        raise InvalidInput(
            [
                InputIssue(
                    field="--save-case",
                    value=args.save_case,
                    message=(
                        f"{args.save_case} exists (or is a link): a case is written to a new file only; "
                        "choose another name"
                    ),
                )
            ]
        ) from None
    except OSError as exc:
        raise InvalidInput(
            [
                InputIssue(
                    field="--save-case",
                    value=args.save_case,
                    message=f"cannot write {args.save_case}: {exc.strerror}",
                )
            ]
        ) from None
    print(f"confsolve: saved the case to {args.save_case}", file=sys.stderr)


def cmd_why(args: argparse.Namespace) -> int:
    from solver.errors import InvalidInput
    from solver.inputs.pins import _lookup, _unknown_field
    from solver.reasoning.assumedchoices import choices_as_resolved
    from solver.reasoning.resolution import plan_for, resolve

    pack = load(args)
    name = _lookup(pack, args.field)
    if name is None:
        raise InvalidInput([_unknown_field(pack, args.field, None)])
    options, facts = gather(args, pack)
    res = resolve(pack, options, facts, strict=args.strict, budget=args.command_budget)
    from solver.pack.graph import analyse
    from solver.pack.loader import semantics

    sem = semantics(pack)
    deps_set = {src for src, dst, _ in analyse(pack).edges if dst == name}
    prov = res.provenance[name]
    if prov.rule in sem.rules:
        deps_set.update(sem.rules[prov.rule].fields)
    elif prov.rule in sem.preferences and sem.preferences[prov.rule] is not None:
        deps_set.update(sem.preferences[prov.rule].fields)  # type: ignore[union-attr]
    deps_set.discard(name)
    deps = sorted(deps_set, key=list(plan_for(pack).order).index)
    choices, _ = choices_as_resolved(
        pack, options, facts, fields=[name], reasons=False, budget=args.command_budget, resolution=res
    )
    _answer(args, "why", pack, res, name, deps, choices.possible[name])
    return EXIT_OK


def cmd_choices(args: argparse.Namespace) -> int:
    from solver.errors import InvalidInput
    from solver.inputs.pins import _lookup, _unknown_field
    from solver.reasoning.assumedchoices import choices_as_resolved

    pack = load(args)
    fields = None
    if args.field is not None:
        name = _lookup(pack, args.field)
        if name is None:
            raise InvalidInput([_unknown_field(pack, args.field, None)])
        fields = [name]
    options, facts = gather(args, pack)
    # Under the facts the resolution assumes (said under ASSUMED): a value listed is one
    # `resolve` and `check` take, never one they refuse for a model nobody gave.
    choices, _ = choices_as_resolved(
        pack, options, facts, fields=fields, strict=args.strict, budget=args.command_budget
    )
    _answer(args, "choices", pack, choices)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """Predict what the launcher does with the request as typed (`solver.check`)."""
    from solver.errors import Unsatisfiable
    from solver.reasoning.resolution import resolve

    pack = load(args)
    options, facts = gather(args, pack)
    try:
        res = resolve(
            pack,
            options,
            facts,
            strict=args.strict,
            reasons=False,
            predict=True,
            deny_warnings=args.deny_warnings,
            budget=args.command_budget,
        )
    except Unsatisfiable as exc:
        render = None
        if not args.json and getattr(args, "command_read", None) is not None:  # typed as a launch command
            from solver.cli.launch import repair_renderer

            render = repair_renderer(args, pack, in_sentence=True)
        _answer(args, "check", pack, exc, render, _launch_notes(args))
        return EXIT_CONFLICT
    _answer(args, "check", pack, res, None, _launch_notes(args))
    return EXIT_OK


def _launch_notes(args: argparse.Namespace) -> tuple[str, ...]:
    """What reading the launch command after `--` set aside (`merge_launch` says it on stderr)."""
    command = getattr(args, "command_read", None)
    return tuple(command.repeated) if command is not None else ()


def cmd_graph(args: argparse.Namespace) -> int:
    _answer(args, "graph", load(args))
    return EXIT_OK


def cmd_packs(args: argparse.Namespace) -> int:
    import constraints
    from solver import load_pack

    rows = []
    for name in constraints.shipped_packs():
        pack = load_pack(name)
        rows.append({"name": name, "version": pack.version, "description": pack.description})
    _answer(args, "packs", rows)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    _answer(args, "show", load(args))
    return EXIT_OK


# Commands that read a launch command after `--` (confsolve's own options come before it).
