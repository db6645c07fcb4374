"""`confsolve diff`: what changed between two packs, on the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from solver.lint.diff import DEFAULT_COUNT_SECONDS, ENUMERATE_REQUESTS, SAMPLES, diff
from solver.model import Scalar


def register_cli(sub: Any, add_inputs: Callable[..., None]) -> None:
    """Add `confsolve diff` to the CLI's subparsers."""
    p = sub.add_parser(
        "diff",
        help="what changed between two packs: rules, valid configurations, resolutions",
        description="Compare OLD_PACK and NEW_PACK (shipped names or directories): fields, rules "
        "and preferences added, removed or changed; the configurations valid in one "
        "and not the other, counted and grouped by the rule responsible; and the "
        "requests whose resolution changed. --set restricts the comparison.",
    )
    p.add_argument("old_pack", metavar="OLD_PACK")
    p.add_argument("new_pack", metavar="NEW_PACK")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="compare only configurations and requests with this value",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=SAMPLES,
        metavar="N",
        help=f"requests to sample when the shared facts have more than "
        f"{ENUMERATE_REQUESTS} combinations (default {SAMPLES})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of that sample (default 0)")
    p.add_argument(
        "--models",
        action="append",
        default=[],
        metavar="PATH",
        help="compare resolutions on real models: a model directory or config file, a directory "
        "of model directories, or a config archive (*.json.gz: {model: {file: JSON}}, as "
        "tests/fixtures keeps them); each pack reads each model's facts with its own "
        "[model_config], and the machine facts are drawn for it (repeatable)",
    )
    p.add_argument(
        "--limit",
        metavar="N|Ns",
        default=None,
        help="step or time budget of each count (as for `confsolve count`; "
        f"default {DEFAULT_COUNT_SECONDS:g}s)",
    )
    p.add_argument("--json", action="store_true", help="print the JSON document")
    from solver.cli.commands import _add_budget

    _add_budget(p)
    p.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from solver import load_pack
    from solver.engine.count import Limit
    from solver.errors import InputIssue, InvalidInput
    from solver.inputs.pins import _lookup, coerce, parse_assignments

    issues: list[InputIssue] = []
    limit = None
    if args.limit is not None:
        try:
            limit = Limit.parse(args.limit)
        except ValueError as exc:
            issues.append(InputIssue(field="limit", value=args.limit, message=str(exc)))
    if args.samples < 1:
        issues.append(InputIssue(field="samples", value=args.samples, message="--samples must be positive"))
    sets, more = parse_assignments(args.set)
    issues += more
    if issues:
        raise InvalidInput(issues)
    budget = args.command_budget  # charged for loading both packs, then for every search
    old, new = load_pack(args.old_pack, budget=budget), load_pack(args.new_pack, budget=budget)
    pins: dict[str, Scalar] = {}
    for raw, text in sets.items():
        names = [n for n in (_lookup(old, raw), _lookup(new, raw)) if n is not None]
        if not names:
            from solver.inputs.pins import _unknown_field

            issues.append(_unknown_field(new, raw, text))
            continue
        name = names[0]
        # A value only one pack has is fine: the other pack has no configuration with it.
        values = [coerce(p.fields[name], text) for p in (old, new) if name in p.fields]
        good = [v for v, issue in values if issue is None and v is not None]
        if not good:
            issues.append(
                values[0][1] or InputIssue(field=name, value=text, message=f"--set {name}: give a value")
            )
            continue
        pins[name] = good[0]
    if issues:
        raise InvalidInput(issues)
    from solver.inputs.modelset import models_at

    with models_at(args.models) as models:
        result = diff(
            old,
            new,
            pins,
            samples=args.samples,
            seed=args.seed,
            limit=limit,
            budget=args.command_budget,
            models=models if args.models else None,
        )
    from solver.cli.commands import _answer

    _answer(args, "diff", result)
    return 0
