"""Repairs through what a request types: a conflict's rule may read a flag only through
`given(FIELD)` (whether it was typed, or the value typed), which the request's copy of the pack
answers as a constant (`solver.pack.given`). Such a flag is then no pin of the conflict, so the
search for repairs, which changes the conflict's pins, never offers it, though the rule's own
`because` may name it: vLLM 0.33.0's `block-size-diffkv-fa4-head-256` refuses FLASH_ATTN_DIFFKV
for a head-size-256 model with FA4 typed, and says to type `--block-size 128` (not set at all)
or FA 2 (typed as 4, read as typed by `given(flash_attn_version) == 2`).

`given_repairs`: for each option a conflict's rules read through `given()`, the changes that
answer those reads otherwise (unset a typed flag, type another value, type an unset flag; the
values in the order the pack lists them, its default first), each verified by resolving the
request as typed with it, the first that works per flag kept. The launcher's preferences rank
what it picks for an unset flag, not what a user types: vLLM's for Qwen3-Next's block put 1920
before 128, the size the rule names.
`with_given_repairs`: those repairs placed among the search's, by the search's own ranking
(fewest changes first, then the least rank lost).

A flag the search may not choose (`search = false`: resources, parallel sizes, precision) is
changed only when the user typed it, as the search changes only what was typed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from solver.engine.opendomain import origin
from solver.model import Pin, Repair, Scalar
from solver.pack.loader import semantics
from solver.pack.marks import ValueRead, given_atoms, typed_holds
from solver.reasoning.plan import Plan
from solver.reasoning.verify import try_resolve, typed_request

__all__ = ["given_repairs", "with_given_repairs"]

# Changes tried per flag (each is a resolution); the first that resolves is the flag's repair.
_TRIALS_PER_FIELD = 3
# Flags tried per conflict: a rule reading many typed flags should not cost a resolution each.
_FIELDS_TRIED = 4

# How a value of a flag answers the rule's reads of it: per read, whether it holds (a plain
# `given(FIELD)` holds for any typed value). None is the flag left unset.
_Answers = tuple[bool, ...]


def given_repairs(
    plan: Plan,
    pins: Mapping[str, Pin],
    adjustments: Mapping[str, tuple[Scalar, str]] | None,
    rules: Sequence[str],
    *,
    conflict: Collection[str] = (),
    keep: Collection[str] = (),
    predict: bool = False,
) -> list[Repair]:
    """Verified one-change repairs to the options `rules` (a conflict's) read through `given()`,
    at most one per option, in the order the rules read them. `pins`: the request as resolved
    (`adjustments`: field -> (typed value, rule) of the pins an adjustment replaced); each repair
    is made to the request as typed. `conflict`: the conflict's pins, which the search changes
    already; `keep`: flags a repair leaves alone. Each is ranked as the search ranks a change of
    one flag to its best value that works (one change, no rank lost)."""
    base = origin(plan.pack)
    fields = base.fields
    reads = _reads_by_field(plan, rules)
    typed = typed_request(pins, adjustments)
    out: list[Repair] = []
    tried_fields = 0
    for name, field_reads in reads.items():
        spec = fields[name]
        pin = typed.get(name)
        user = pin is not None and pin.source == "user"
        if spec.kind != "option" or name in conflict or name in keep or (pin is not None and not user):
            continue
        if not spec.search and not user:
            continue  # a resource or the precision: only the user's own value is changed
        if tried_fields >= _FIELDS_TRIED:
            break
        tried_fields += 1
        current = _answers(field_reads, pin.value if pin is not None else None)
        seen = {current}
        changes: list[Scalar | None] = []
        if user and _answers(field_reads, None) != current:
            changes.append(None)
            seen.add(_answers(field_reads, None))
        for listed in spec.domain:
            answers = _answers(field_reads, listed)
            if answers not in seen:
                seen.add(answers)
                changes.append(listed)
        for change in changes[:_TRIALS_PER_FIELD]:
            request = {n: p for n, p in typed.items() if n != name}
            if change is not None:
                request[name] = Pin(field=name, value=change, source="user")
            values = try_resolve(plan, request, departures=False, predict=predict)
            if values is None:
                continue
            out.append(
                Repair.model_construct(
                    set={} if change is None else {name: change},
                    unset=[name] if change is None else [],
                    values=values,
                    alternatives={},
                    changes=1,
                    rank_loss=0,
                )
            )
            break
    return out


def with_given_repairs(
    fixes: Sequence[Repair],
    plan: Plan,
    pins: Mapping[str, Pin],
    adjustments: Mapping[str, tuple[Scalar, str]] | None,
    conflict: tuple[Sequence[Pin], Sequence[str]] | None,
    keep: Collection[str] = (),
    predict: bool = False,
    *,
    limit: int,
) -> list[Repair]:
    """`fixes` (the search's, ranked) with the `given_repairs` of `conflict` (its pins and rules;
    None: none found) placed after every fix with as few changes and as little rank lost, and
    before any that states a fact (a what-if, for a model or machine that may differ: the user's
    flags come first, as the search offers facts only when no flag helps); a repair that changes
    what one of `fixes` changes left out. At most `limit` are kept: the flag repairs cut first,
    down to one fact repair kept when `fixes` had any (the callers budget their facts' what-ifs,
    `diagnose.chain_failure`: a flat cut after the inserts would drop them)."""
    if conflict is None:
        return list(fixes[:limit])
    core = {p.field for p in conflict[0]}
    extra = given_repairs(plan, pins, adjustments, conflict[1], conflict=core, keep=keep, predict=predict)
    fields = plan.pack.fields

    def states_fact(fix: Repair) -> bool:
        return any(fields[n].kind == "fact" for n in fix.set)

    out = list(fixes)
    for fix in extra:
        if any(f.set == fix.set and sorted(f.unset) == sorted(fix.unset) for f in out):
            continue
        key = (fix.changes, fix.rank_loss)
        at = next(
            (i for i, f in enumerate(out) if (f.changes, f.rank_loss) > key or states_fact(f)),
            len(out),
        )
        out.insert(at, fix)
    is_fact = [states_fact(f) for f in out]
    facts = sum(is_fact)
    room = {True: min(facts, max(1, limit - (len(out) - facts))), False: 0}
    room[False] = limit - room[True]
    kept = []
    for fix, fact in zip(out, is_fact, strict=True):
        if room[fact] > 0:
            kept.append(fix)
            room[fact] -= 1
    return kept


def _reads_by_field(plan: Plan, rules: Sequence[str]) -> dict[str, list[ValueRead | None]]:
    """The `given()` reads of `rules` by the field they read (None: a plain `given(FIELD)`), in
    the rules' order; on the pack the request was made from (its copy has them answered)."""
    base = origin(plan.pack)
    conditions = semantics(base).rules
    out: dict[str, list[ValueRead | None]] = {}
    for rid in rules:
        condition = conditions.get(rid)
        if condition is None or not condition.given:
            continue
        rule = base.rule(rid)
        for text in (rule.when, rule.require, rule.forbid):
            for name, read in given_atoms(text, base.sets).values() if text else ():
                out.setdefault(name, []).append(read)
    return out


def _answers(reads: Sequence[ValueRead | None], value: Scalar | None) -> _Answers:
    """How a request that types `value` for the reads' field (None: leaves it unset) answers each."""
    return tuple(value is not None and (read is None or typed_holds(read, value)) for read in reads)
