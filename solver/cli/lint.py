"""`confsolve lint`: the analysis of a pack, on the command line."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from constraints import DEFAULT_PACK
from solver.budget import Budget
from solver.cli import PACK_HELP
from solver.cli.commands import _answer
from solver.lint.checks import CODES, ENUMERATE_FACTS, LINT_BUDGET, SAMPLE_FACTS, explain_code, lint


def register_cli(sub: Any, add_inputs: Callable[..., None]) -> None:
    """Add `confsolve lint` to the CLI's subparsers."""
    p = sub.add_parser(
        "lint",
        help="analyse a pack: dead values, dead or redundant rules, unreachable "
        "preferences, totality, cycles",
        description="Analyse a rule pack. Exit 1 when error findings remain that are not "
        "acknowledged; `--explain CODE` describes a finding code.",
    )
    p.add_argument("--pack", default=DEFAULT_PACK, metavar="NAME_OR_PATH", help=PACK_HELP)
    p.add_argument("--json", action="store_true", help="print the contract's JSON document")
    p.add_argument("--explain", metavar="CODE", help="describe a finding code and exit")
    p.add_argument(
        "--samples",
        type=int,
        default=SAMPLE_FACTS,
        metavar="N",
        help=f"fact combinations to sample for the totality check when there are "
        f"more than {ENUMERATE_FACTS} (default {SAMPLE_FACTS})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of that sample (default 0)")
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="STEPS",
        help=f"search steps for the whole lint, each question included, with exit 4 when they run "
        f"out (default: $CONFSOLVE_BUDGET, else {LINT_BUDGET} per question and no total)",
    )
    p.set_defaults(func=cmd_lint)


def cmd_lint(args: argparse.Namespace) -> int:
    from solver.errors import InputIssue, InvalidInput

    if args.explain is not None:
        code = args.explain.strip().upper()
        if code not in CODES:
            import difflib

            close = tuple(difflib.get_close_matches(code, list(CODES), n=3))
            raise InvalidInput(
                [
                    InputIssue(
                        field="explain",
                        value=args.explain,
                        did_you_mean=close,
                        allowed=tuple(CODES),
                        message=f"unknown finding code {args.explain!r}; codes: {', '.join(CODES)}",
                    )
                ]
            )
        _answer(args, "explain", code, CODES[code], explain_code(code))
        return 0
    if args.samples < 1 or (args.budget is not None and args.budget < 1):
        raise InvalidInput(
            [
                InputIssue(
                    field="samples", value=args.samples, message="--samples and --budget must be positive"
                )
            ]
        )
    from solver.cli.queries import load

    steps = args.budget if args.budget is not None else getattr(args, "search_budget", None)
    meter = Budget.for_command(steps) if steps is not None or os.environ.get("CONFSOLVE_BUDGET") else None
    if meter is not None:
        args.command_budget = meter  # the one budget of the command: loading the pack, then lint
    report = lint(load(args), samples=args.samples, seed=args.seed, budget=meter or LINT_BUDGET)
    _answer(args, "lint", report)
    return 1 if report.errors else 0
