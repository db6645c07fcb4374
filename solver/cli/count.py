"""`confsolve count`: the exact number of valid configurations, on the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from solver.cli.commands import _answer
from solver.engine.count import COUNT_LIMIT, CountLimitReached, Limit, count

# --- command line -----------------------------------------------------------------------------


def register_cli(sub: Any, add_inputs: Callable[..., None]) -> None:
    """Add `confsolve count` to the CLI's subparsers."""
    p = sub.add_parser(
        "count",
        help="the exact number of valid configurations",
        description="Count the complete configurations (a value for every option and every fact "
        "not given) that satisfy the pack's hard rules and keep the inputs. A fact "
        "you do not give is free. --by FIELD splits the count by that field's values.",
    )
    add_inputs(p)
    p.add_argument("--by", metavar="FIELD", help="split the count by the values of FIELD")
    p.add_argument(
        "--limit",
        metavar="N|Ns",
        default=str(COUNT_LIMIT),
        help=f"stop after N branching steps or N seconds (e.g. 30s); default {COUNT_LIMIT} steps",
    )
    p.set_defaults(func=cmd_count)


def cmd_count(args: argparse.Namespace) -> int:
    from solver.cli.queries import gather, load
    from solver.errors import InputIssue, InvalidInput
    from solver.inputs.pins import _lookup, _unknown_field, collect_pins

    try:
        limit = Limit.parse(args.limit)
    except ValueError as exc:
        raise InvalidInput([InputIssue(field="limit", value=args.limit, message=str(exc))]) from None
    pack = load(args)  # charged to the command's budget: the count gets what is left of it
    from solver import progress

    progress.phase("counting")
    budget = args.command_budget
    steps = budget.left()  # the command's --budget bounds the count too (the tighter)
    if steps is not None and (limit.steps is None or steps < limit.steps):
        option = "--budget"
        if budget.spent:
            option = f"what --budget {budget.total} left after loading the pack,"
        limit = Limit(steps=steps, seconds=limit.seconds, option=option)
    options, facts = gather(args, pack)
    pins = {n: p.value for n, p in collect_pins(pack, options, facts).items()}
    by = None
    if args.by is not None:
        by = _lookup(pack, args.by)
        if by is None:
            raise InvalidInput([_unknown_field(pack, args.by, None)])
    try:
        result = count(pack, pins, by=by, limit=limit)
    except CountLimitReached as stop:
        if not args.json:
            raise
        from solver.cli.commands import EXIT_BUDGET

        _answer(args, "count", pack, stop, pins, by)  # the exact bounds as numbers, not only in a message
        return EXIT_BUDGET
    _answer(args, "count", pack, result, pins, by)
    return 0
