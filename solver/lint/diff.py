"""Semantic diff of two packs: `confsolve diff OLD_PACK NEW_PACK`.

Owns the comparison of two versions of a rule base: fields, rules and preferences added, removed
or changed; the configurations valid in one and not the other, counted exactly and grouped by
the rule (or domain change) responsible, each group with an example and its minimal reason in the
pack that rejects it; and the requests whose resolution changed ("with gpu_arch=sm100,
moe_runner_backend now resolves to X instead of Y").

Configurations are compared over the fields both packs have. When the field sets differ, a
configuration of the shared fields counts as valid in a pack when some values of that pack's own
other fields complete it (a projection); the result says so.

Imports the standard library at module level (the CLI imports it at start-up);
`solver.engine.count`, `solver.lint.checks`, `solver.reasoning.conflicts` and
`solver.reasoning.resolution` inside functions. Never imports python-constraint or networkx.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solver import progress as _progress
from solver.lint.diffreport import Direction, Group, PackDiff, ResolutionChange
from solver.lint.diffrequests import ENUMERATE_REQUESTS, SAMPLES
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.budget import Budget
    from solver.engine.count import Limit
    from solver.model import Pack, Scalar
    from solver.pack.expr import Condition

__all__ = ["ENUMERATE_REQUESTS", "SAMPLES", "Group", "PackDiff", "ResolutionChange", "Side", "diff"]

MAX_GROUPS = 40
# Without --limit, each count gets this many seconds: counting the configurations of two whole
# packs projected onto their shared fields is #P-hard, and a diff of the seed pack against the
# full SGLang pack with no facts pinned does not finish in an hour. A count over its budget is
# reported as "not counted" (--set a few facts, or raise --limit, to get it exactly).
DEFAULT_COUNT_SECONDS = 3.0


# --- structure --------------------------------------------------------------------------------


def _structure(old: Pack, new: Pack) -> tuple[dict[str, Any], dict[str, list[str]], dict[str, list[str]]]:
    fields: dict[str, Any] = {
        "added": [n for n in new.fields if n not in old.fields],
        "removed": [n for n in old.fields if n not in new.fields],
        "changed": {},
    }
    for name, before in old.fields.items():
        after = new.fields.get(name)
        if after is None:
            continue
        change: dict[str, Any] = {
            "added_values": [v for v in after.domain if v not in before.domain],
            "removed_values": [v for v in before.domain if v not in after.domain],
        }
        if before.kind != after.kind:
            change["kind"] = [before.kind, after.kind]
        shared = [v for v in before.domain if v in after.domain]
        if [v for v in after.domain if v in before.domain] != shared:
            change["reordered"] = shared
        if any(change.values()):
            fields["changed"][name] = {k: v for k, v in change.items() if v}

    def table(a: Sequence[Any], b: Sequence[Any]) -> dict[str, list[str]]:
        before = {x.id: x.model_dump(exclude={"file"}) for x in a}
        after = {x.id: x.model_dump(exclude={"file"}) for x in b}
        return {
            "added": [i for i in after if i not in before],
            "removed": [i for i in before if i not in after],
            "changed": [i for i in after if i in before and after[i] != before[i]],
        }

    return fields, table(old.rules, new.rules), table(old.preferences, new.preferences)


# --- configurations ---------------------------------------------------------------------------


class Side:
    """One pack as counter checks over its own domains."""

    def __init__(self, pack: Pack, budget: Budget) -> None:
        from solver.engine.csp import compile_pack

        self.pack = pack
        self.budget = budget  # the diff's: every search and count on either side is charged to it
        self.cp = compile_pack(pack).within(budget)
        self.checks = [r.condition for r in self.cp.rules.values()]
        self.texts = {r.condition.text for r in self.cp.rules.values()}


def _direction(
    accept: Side,
    reject: Side,
    shared: list[str],
    pins: Mapping[str, Scalar],
    total: int | None,
    limit: Limit,
    rejects: str,
) -> Direction:
    """Configurations `accept` allows and `reject` does not, grouped by what `reject` changed.

    Items are tried in order (values `reject` lacks, then its rules over shared fields that
    `accept` does not have word for word); a configuration is counted in the group of the first
    item it breaks, so the groups do not overlap and add up to at most the total.
    """
    from solver.engine.count import CountLimitReached, Limit, ModelCounter, metered

    example_limit = Limit()  # the default step budget: one solution is cheap
    side = Direction(count=total)
    if total == 0:
        return side
    items = _rejections(accept, reject, shared)
    shared_set = set(shared)
    project = None if set(accept.cp.domains) == shared_set else shared
    if not items and project is None and set(reject.cp.domains) <= shared_set:
        # The rejecting pack has every value the accepting one has and no rule it lacks (word
        # for word): it rejects nothing the other accepts, whatever the total would count.
        return Direction(count=0)
    counter = ModelCounter(accept.cp.domains, accept.checks, project=project)
    pins = {n: v for n, v in pins.items() if n in accept.cp.domains}
    held: list[int] = []
    accounted = 0
    exact = total is not None
    # Once one group's count runs out of budget the direction is not exact any more; counting the
    # later groups (each as hard) would multiply the wait for numbers the total cannot check.
    counting = True
    for kind, ident, check in items:
        if len(side.groups) >= MAX_GROUPS:
            exact = False
            break
        broken = counter.add(check.negated())
        try:
            # An example needs one solution, not all: its own budget (the default count
            # budget, in steps), so a tight --limit on counting still lists every group.
            wanted = [*held, broken]

            def find(bound: Limit, extra: list[int] = wanted) -> dict[str, Scalar] | None:
                return counter.solution(pins, extra=extra, limit=bound)

            example = metered(accept.budget, counter, find, example_limit, "comparing the packs")
        except CountLimitReached:
            example, exact = None, False
        held.append(counter.add(check))
        if example is None:
            continue
        number: int | None = None
        if counting:
            try:
                broken_only = [*held[:-1], broken]

                def tally(bound: Limit, extra: list[int] = broken_only) -> int:
                    return counter.count(pins, extra=extra, limit=bound)

                number = metered(accept.budget, counter, tally, limit, "counting configurations")
            except CountLimitReached:
                number, exact, counting = None, False, False
        shown = {n: example[n] for n in shared}
        if kind == "rule":
            reason = _reason(reject, shown)
        else:
            name = ident.partition("=")[0]
            reason = [f"the {rejects} pack's {name} has no value {_show(shown[name])}"]
        side.groups.append(Group(kind, ident, number, shown, reason))
        accounted += number or 0
    side.other = total - accounted if exact and total is not None else None
    if side.other:
        side.note = (
            "through rules or fields that only one pack has"
            if project is not None
            else "through rules that read fields only one pack has"
        )
    return side


def _rejections(accept: Side, reject: Side, shared: list[str]) -> list[tuple[str, str, Condition]]:
    """What `reject` has that `accept` lacks, in order: values it does not have, then its rules
    over shared fields that `accept` does not have word for word."""
    items: list[tuple[str, str, Condition]] = []
    for name in shared:
        allowed = set(reject.cp.domains[name])
        missing = [v for v in accept.cp.domains[name] if v not in allowed]
        if missing:
            items.append(
                ("domain", f"{name}={'|'.join(map(_show, missing))}", _membership(name, frozenset(allowed)))
            )
    shared_set = set(shared)
    for rid, rule in reject.cp.rules.items():
        if set(rule.fields) <= shared_set and rule.condition.text not in accept.texts:
            items.append(("rule", rid, rule.condition))
    return items


def _membership(name: str, allowed: frozenset[Scalar]) -> Condition:
    """The check "`name` takes one of `allowed`"."""
    from solver.pack.expr import Condition

    def partial(known: Mapping[str, Any]) -> bool | None:
        return None if name not in known else known[name] in allowed

    return Condition.over((name,), lambda values: values[0] in allowed, partial)


def _reason(side: Side, values: Mapping[str, Scalar]) -> list[str]:
    """Why `side` rejects this configuration of the shared fields: a minimal conflict."""
    from solver.model import Pin
    from solver.reasoning.conflicts import minimal_conflict

    pins = {n: Pin(field=n, value=v, source="user") for n, v in values.items() if n in side.cp.domains}
    found = minimal_conflict(side.cp, pins)
    if found is None:
        return []
    core_pins, core_rules = found
    return [f"{p.field}={_show(p.value)}" for p in core_pins] + list(core_rules)


# --- entry points -----------------------------------------------------------------------------


def diff(
    old: Pack,
    new: Pack,
    pins: Mapping[str, Scalar] | None = None,
    *,
    samples: int = SAMPLES,
    seed: int = 0,
    limit: Limit | None = None,
    budget: Budget | None = None,
    models: Mapping[str, Path] | None = None,
) -> PackDiff:
    """Compare two packs: structure, valid configurations (exact counts, grouped) and
    resolutions of the same requests. `limit` bounds each count (one over it is "not counted");
    `budget` the whole diff (`solver.budget`: running out raises `CommandBudgetExceeded`).
    `models` (name -> model path, see `solver.inputs.modelset`) makes the requests real models,
    each read by each pack's own `[model_config]`, on machines drawn for them; without it the
    requests are machines drawn over all the shared facts."""
    from solver.budget import Budget as _Budget
    from solver.engine.count import CountLimitReached, ModelCounter, metered
    from solver.engine.count import Limit as _Limit

    meter = budget or _Budget()

    pins = dict(pins or {})
    limit = limit or _Limit(steps=None, seconds=DEFAULT_COUNT_SECONDS)
    fields, rules, prefs = _structure(old, new)
    if old.digest and old.digest == new.digest:
        return PackDiff(
            old={"name": old.name, "version": old.version},
            new={"name": new.name, "version": new.version},
            pins=pins,
            fields=fields,
            rules=rules,
            preferences=prefs,
            shared=list(old.fields),
            projected=False,
            old_count=None,
            new_count=None,
            invalidated=Direction(count=0),
            validated=Direction(count=0),
            requests={"requests": 0, "compared": 0},
            changes=[],
            identical=True,
        )
    a, b = Side(old, meter), Side(new, meter)
    shared = [n for n in old.fields if n in new.fields]
    projected = set(old.fields) != set(new.fields)
    project = shared if projected else None

    def counted(domains: Mapping[str, Sequence[Scalar]], checks: Sequence[Condition]) -> int | None:
        counter = ModelCounter(domains, checks, project=project)
        given = {n: v for n, v in pins.items() if n in domains}
        try:
            return metered(
                meter,
                counter,
                lambda bound: counter.count(given, limit=bound),
                limit,
                "counting configurations",
            )
        except CountLimitReached:
            return None

    both = {**a.cp.domains, **b.cp.domains}
    for name in shared:
        both[name] = tuple(v for v in a.cp.domains[name] if v in b.cp.domains[name])
    _progress.phase("counting configurations")  # the command's progress line (nothing in a library call)
    old_count = counted(a.cp.domains, a.checks)
    new_count = counted(b.cp.domains, b.checks)
    common = counted(both, [*a.checks, *b.checks])

    def minus(x: int | None, y: int | None) -> int | None:
        return None if x is None or y is None else x - y

    _progress.phase("grouping the differences")
    invalidated = _direction(a, b, shared, pins, minus(old_count, common), limit, "new")
    validated = _direction(b, a, shared, pins, minus(new_count, common), limit, "old")
    from solver.lint.diffrequests import resolutions

    requests, changes = resolutions(a, b, pins, samples, seed, models)
    return PackDiff(
        old={"name": old.name, "version": old.version},
        new={"name": new.name, "version": new.version},
        pins=pins,
        fields=fields,
        rules=rules,
        preferences=prefs,
        shared=shared,
        projected=projected,
        old_count=old_count,
        new_count=new_count,
        invalidated=invalidated,
        validated=validated,
        requests=requests,
        changes=changes,
    )
