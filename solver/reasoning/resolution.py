"""Resolution: validate -> order -> pin -> adjust -> prefer -> Resolution with provenance.

Tiers: hard rules and facts > user pins > preferences and defaults. A user pin is only ever
replaced by a declared adjustment, and that replacement is reported. Auto fields are decided in
graph order, each taking the best-ranked value that keeps the request solvable; one ordered search
finds exactly that configuration (the lexicographically best one), so no value is tried twice.

The public entry points (`resolve`, `resolve_pins`, `deny`), on top of the reasoning: the plan of
a pack (`solver.reasoning.plan`), the decisions (`solver.reasoning.decide`), the `Resolution` with
its provenance (`solver.reasoning.provenance`), and the diagnosis of a failure
(`solver.reasoning.diagnose`, imported when a request fails).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from solver.budget import Budget
from solver.engine.opendomain import query_pack
from solver.errors import Unsatisfiable
from solver.inputs.pins import collect_pins
from solver.model import (
    Pack,
    Pin,
    Repair,
    Resolution,
)
from solver.pack.loader import semantics
from solver.reasoning.decide import (
    ChainFailed,
    RequestFails,
    bare_conflict,
    launcher_view,
)
from solver.reasoning.plan import Plan, plan_for
from solver.reasoning.provenance import resolve_planned, resolve_unexplained
from solver.reasoning.required import check_required_before_failing
from solver.reasoning.verify import typed_request

__all__ = [
    "ChainFailed",
    "Plan",
    "conflict_text",
    "deny",
    "launcher_view",
    "plan_for",
    "resolve",
    "resolve_pins",
]


def resolve(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    strict: bool = False,
    reasons: bool = True,
    predict: bool = False,
    deny_warnings: bool = False,
    budget: Budget | None = None,
    repairs: bool = True,
) -> Resolution:
    """Resolve a configuration: user choices kept, auto options filled by preference.

    `deny_warnings=True`: warnings are a conflict (`Unsatisfiable`), like `-D warnings`.

    `options` and `facts` are mappings or an `argparse.Namespace` (`None` = unset). Raises
    `InvalidInput` for unknown fields or values, `Unsatisfiable` (with a minimal conflict and
    ranked repairs) when no configuration exists. `reasons=False` skips the minimal reasons for
    rejected preferred values (the launcher's fast path).

    `predict=True` answers what the launcher itself does with the request as typed: each unset
    option takes the launcher's own default chain (`Plan.chain`), never another value, and when
    that chain fails the error is `Unsatisfiable` naming the default that fails
    (`.launcher_default`). Without it the search finds the best working configuration and lists
    where it departs from the launcher's own picks (`Resolution.departures`).

    `budget`: the search steps this call may spend (`solver.budget.Budget`; default: each
    search bounded on its own); running out raises `SolverBudgetExceeded`.

    `repairs=False`: a failure raises the same `Unsatisfiable` (conflict, launcher default, text
    before the repairs) without searching for repairs (`.repairs` empty, `.repairs_searched`
    False), most of a failure's cost; for a caller that reads only the answer (the laws over
    random requests). An answer that resolves is the same either way.
    """
    pins = collect_pins(pack, options, facts)
    res = resolve_pins(
        pack, pins, strict=strict, reasons=reasons, predict=predict, budget=budget, repairs=repairs
    )
    if deny_warnings:
        deny(pack, pins, res)
    return res


def resolve_pins(
    pack: Pack,
    pins: Mapping[str, Pin],
    *,
    strict: bool = False,
    reasons: bool = True,
    explain_failure: bool = True,
    predict: bool = False,
    budget: Budget | None = None,
    explain_chain: bool = False,
    repairs: bool = True,
) -> Resolution:
    """Resolve already validated pins (see `resolve`); `predict`: the launcher's own choices;
    `budget`: the steps its searches may spend. A failure is explained (a minimal conflict and
    ranked repairs, `solver.reasoning.diagnose`) unless `explain_failure` is False. With
    `explain_chain`, a failure of the value a fact is assumed at (or of an unsearched flag's
    default) is explained all the same: the pins then hold together, so a minimal conflict
    among them alone (the configurator's, computed apart) would be empty. `repairs=False`: the
    failure explained without its repairs (see `resolve`)."""
    if not explain_failure and not explain_chain:
        return resolve_unexplained(pack, pins, strict=strict, reasons=reasons, predict=predict, budget=budget)
    base, pack = pack, query_pack(pack, pins)  # open domains widened, `given(FIELD)` of rules answered
    plan = plan_for(pack).within(budget)
    try:
        return resolve_planned(pack, plan, pins, strict=strict, reasons=reasons, predict=predict, base=base)
    except ChainFailed as failed:
        from solver.reasoning.chainfailure import chain_failure

        check_required_before_failing(plan, failed)
        raise chain_failure(
            plan, failed.pins, failed, predict=predict, made_on=base, with_repairs=repairs
        ) from None
    except RequestFails as fails:
        if not explain_failure:
            raise Unsatisfiable(bare_conflict()) from None
        from solver.reasoning.diagnose import unsatisfiable_for

        raise unsatisfiable_for(
            plan, fails.pins, fails.adjustments, predict=predict, with_repairs=repairs
        ) from None


def deny(pack: Pack, pins: Mapping[str, Pin], res: Resolution) -> None:
    """`deny_warnings` (`--deny-warnings`, like `-D warnings`): a resolution with warnings is a
    conflict naming the warn rules and the pins they read."""
    if not res.warnings:
        return
    from solver.model import ConflictReport, PinRef, RuleRef

    rules = [pack.rule(w.rule) for w in res.warnings]
    read = set(semantics(pack).rules[rules[0].id].fields) if rules else set()
    for rule in rules[1:]:
        read |= set(semantics(pack).rules[rule.id].fields)
    report = ConflictReport(
        pins=[PinRef(field=n, value=p.value, source=p.source) for n, p in pins.items() if n in read],
        rules=[RuleRef(id=r.id, because=r.because, source=r.source) for r in rules],
    )
    lines = ["Warnings denied (--deny-warnings): the request resolves, but:"]
    lines += [f"  - WARNING ({w.rule}): {w.message}" for w in res.warnings]
    raise Unsatisfiable(report, [], "\n".join(lines))


def conflict_text(pack: Pack, exc: Unsatisfiable, render: Callable[[Repair], str]) -> str:
    """The text of a conflict with its repairs written by `render`, the front end's own syntax
    (a launch command, a launcher's flags); the exception's message when it does not carry the
    request it was raised for."""
    if not exc.request:
        return exc.message
    from solver.render.text import conflict_message

    # The copy the conflict was found on answers `given(FIELD) == VALUE` as typed: made from
    # the request with its adjusted pins at their typed values (from the adjusted ones, vLLM's
    # FA4 typed and lowered to FA2 read as FA2 typed, and the refusing rule held for every
    # -tp: the explanation said "tensor_parallel_size must be 1 or 2 or ..." of a typed -tp 2).
    plan = plan_for(query_pack(pack, typed_request(exc.request, exc.adjusted)))
    # The text before the repairs, as the exception's message has it when made on this same copy
    # (its chain and derived facts were built twice: `rewrite_conflict`, `explain_conflict`).
    made_on, explained = exc.explained or ("", None)
    return conflict_message(
        plan,
        exc.request,
        exc.conflict,
        exc.repairs,
        lead=exc.lead,
        render=render,
        adjusted=exc.adjusted,
        explained=explained if made_on and made_on == plan.pack.digest else None,
    )
