"""`confsolve matrix`: the compatibility table of two fields, on the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from solver.cli.commands import _add_format, _answer
from solver.reasoning.pictures import compatibility

# --- the command ----------------------------------------------------------------------------


def cmd_matrix(args: argparse.Namespace) -> int:
    from solver.cli.queries import gather, load
    from solver.inputs.pins import _lookup, collect_pins

    pack = load(args)
    names = [_lookup(pack, raw) or raw for raw in (args.row_field, args.col_field)]
    options, facts = gather(args, pack)
    pins = collect_pins(pack, options, facts)
    matrix = compatibility(pack, names[0], names[1], pins, budget=args.command_budget)
    _answer(args, "matrix", matrix)
    return 0


def register(sub: Any, add_inputs: Callable[..., None]) -> None:
    """`confsolve matrix ROW_FIELD COL_FIELD [inputs] [--format F] [--json]`."""
    p = sub.add_parser(
        "matrix",
        help="a compatibility table of two fields",
        description="For every value of ROW_FIELD and COL_FIELD, whether the request with both "
        "pinned holds under the rules (✓/✗), and for each ✗ its minimal reason. "
        "A pair that works only because an adjustment would replace a value shows ✗.",
    )
    p.add_argument("row_field", metavar="ROW_FIELD")
    p.add_argument("col_field", metavar="COL_FIELD")
    _add_format(p, "matrix")
    add_inputs(p)
    p.set_defaults(func=cmd_matrix)
