"""Rule-base analysis of a pack: `confsolve lint` (`lint`), and its semantic checks.

The checks behind the finding codes (`solver.lint.codes`): dead values, dead / always-true /
redundant rules, unreachable preference entries, adjustments that never help, and auto-resolution
totality, each a series of satisfiability questions put to the pack's `PackOracle`
(`solver.lint.oracle`); the checks that need no search and the acknowledgements are in
`solver.lint.static`.

Imports only the standard library at module level (the CLI imports this module at start-up);
the engine, the counter, the graph and the condition language are imported inside functions.
Never imports python-constraint or networkx directly.
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver import progress as _progress
from solver.budget import Budget
from solver.lint.codes import CODES, SEVERITIES, Finding, LintReport, explain_code
from solver.lint.oracle import PackOracle, pins_text
from solver.lint.static import acknowledge, graph_checks, static_checks
from solver.lint.window import LATEST, SEEN
from solver.values import show as _show

if TYPE_CHECKING:
    import random

    from solver.engine.csp import CompiledPack
    from solver.model import Pack, Scalar
    from solver.pack.expr import Condition

__all__ = ["CODES", "Finding", "LintReport", "explain_code", "fact_combinations", "lint"]

LINT_BUDGET = 300_000
ENUMERATE_FACTS = 4096
SAMPLE_FACTS = 250
MAX_TOTALITY_GROUPS = 25


class _Linter(PackOracle):
    """The semantic checks, run in order (`run`), each asking the oracle its questions."""

    # -- checks ----------------------------------------------------------------------------
    def run(self, totality: bool) -> None:
        timings: dict[str, float] = {}

        def timed(name: str, check: Callable[[], Any]) -> Any:
            _progress.phase(name)  # the command's progress line (nothing in a library call)
            started = time.monotonic()
            result = check()
            timings[name] = round(time.monotonic() - started, 3)
            return result

        if not timed("satisfiable", self.check_satisfiable):
            self.stats["timings"] = timings
            return
        timed("values", self.check_values)
        timed("rules", self.check_rules)
        timed("preferences", self.check_preferences)
        timed("adjustments", self.check_adjustments)
        if totality:
            timed("totality", self.check_totality)
        self.stats["timings"] = timings

    def check_satisfiable(self) -> bool:
        found = self.solve({}, what="the whole pack", ids=[self.pack.name])
        if found is False:
            return False
        if found is None:
            core = self.reason({}, [], list(self.cp.rule_ids))
            self.add(
                "CS100",
                [self.pack.name, *core],
                "no configuration satisfies all rules; these cannot hold together: " + ", ".join(core),
                reason=core,
            )
            return False
        return True

    def check_values(self) -> None:
        for name, values in self.cp.domains.items():
            for value in values:
                if value in self.proven[name]:
                    continue
                found = self.solve(
                    {name: value}, what=f"value {name}={_show(value)}", ids=[f"{name}={_show(value)}"]
                )
                if found is None:
                    self.dead.add((name, value))
                    core = self.reason({name: value}, [], list(self.cp.rule_ids))
                    adjusting = [r for r in core if r in self.index and self.pack.rule(r).adjusts == name]
                    hint = (
                        f" (adjusted away by {', '.join(adjusting)}: if it is an accepted "
                        "alias, acknowledge it)"
                        if adjusting
                        else ""
                    )
                    self.add(
                        "CS101",
                        [f"{name}={_show(value)}", name, *core],
                        f"no configuration can take {name}={_show(value)}; excluded by "
                        + ", ".join(core)
                        + hint,
                        reason=core,
                    )

    def check_rules(self) -> None:
        from solver.pack.expr import parse

        for rule in self.pack.rules:
            cond = self.sem.rules[rule.id]
            warn = rule.severity == "warn"
            others = None if warn else self.others(rule.id)
            kind = "warning rule" if warn else "rule"
            # Always true on its own: no value combination of its own fields breaks it.
            if self._constant(cond, negate=True, ids=[rule.id]):
                self.add(
                    "CS103",
                    [rule.id],
                    f"the {kind} holds for every value of "
                    f"{', '.join(cond.fields) or 'its fields'}; it never restricts anything",
                )
                continue
            when = self.sem.whens.get(rule.id)
            if when is not None and self.check_when(rule.id, when, others, kind):
                continue
            body_text = rule.require if rule.require is not None else rule.forbid
            assert body_text is not None
            body = parse(body_text, self.pack.fields, self.pack.sets)
            if when is not None and self._constant(body, negate=rule.forbid is not None, ids=[rule.id]):
                verb = "require" if rule.require is not None else "forbid"
                self.add(
                    "CS105",
                    [rule.id],
                    f"`{verb}` can never be "
                    f"{'true' if rule.require is not None else 'false'}; the rule only "
                    f"forbids its `when` ({rule.when}): write forbid = {rule.when!r}",
                )
            # Implied by the others: the others and the rule's negation have no solution. A hard
            # rule over facts alone is compared with the other fact-only rules only: stating over
            # the facts what rules about options imply is what CS121 asks for (a clearer message,
            # and the totality check then never samples such facts).
            implied_by = others
            if not warn and rule.adjusts is None and set(cond.fields) <= self.fact_names:
                implied_by = [r for r in self.world if r != rule.id]
            negated = self.extra(cond, negate=True)
            found = self.solve(
                {}, extra=[negated], rules=implied_by, what=f"rule {rule.id}", ids=[rule.id], left_out=rule.id
            )
            if found is None:
                core = self.reason(
                    {}, [negated], implied_by if implied_by is not None else list(self.cp.rule_ids)
                )
                if warn:
                    message = (
                        "the warning rule can never be violated given "
                        + (", ".join(core) or "the domains")
                        + "; its warning never shows"
                    )
                else:
                    message = "implied by " + (", ".join(core) or "the domains")
                self.add("CS104", [rule.id, *core], message, reason=core)

    def _constant(self, cond: Condition, *, negate: bool, ids: Sequence[str]) -> bool:
        """True when `cond` (or its negation) can never hold for any value of its own fields."""
        if not cond.fields:
            return bool(cond.holds(())) == negate
        found = self.solve(
            {}, extra=[self.extra(cond, negate=negate)], rules=[], what="a condition on its own", ids=ids
        )
        return found is None

    def check_when(self, rule_id: str, when: Condition, others: list[str] | None, kind: str) -> bool:
        if self.seen_where({}, when):
            return False
        if self._constant(when, negate=False, ids=[rule_id]):
            self.add(
                "CS102",
                [rule_id],
                f"the {kind}'s `when` can never hold, whatever the values of {', '.join(when.fields)}",
            )
            return True
        extra = self.extra(when)
        found = self.solve(
            {}, extra=[extra], rules=others, what=f"when of {rule_id}", ids=[rule_id], left_out=rule_id
        )
        if found is None:
            core = self.reason({}, [extra], others if others is not None else list(self.cp.rule_ids))
            self.add(
                "CS102",
                [rule_id, *core],
                f"the {kind}'s `when` can never hold given " + ", ".join(core),
                reason=core,
            )
            return True
        return False

    def check_preferences(self) -> None:
        applies: dict[str, bool] = {}
        earlier: dict[str, list[tuple[str, Condition | None, tuple[Scalar, ...]]]] = {}
        for pref in self.pack.preferences:
            when = self.sem.preferences.get(pref.id)
            target = pref.field
            if when is not None and not self.seen_where({}, when):
                found = self.solve({}, extra=[self.extra(when)], what=f"preference {pref.id}", ids=[pref.id])
                if found is None:
                    core = self.reason({}, [self.extra(when)], list(self.cp.rule_ids))
                    self.add(
                        "CS111",
                        [pref.id, *core],
                        "the preference's `when` can never hold given " + ", ".join(core),
                        reason=core,
                    )
                    applies[pref.id] = False
                    continue
            applies[pref.id] = True
            before = [
                v
                for pid, cond, values in earlier.get(target, [])
                if self._implies(when, cond)
                for v in values
            ]
            for index, value in enumerate(pref.prefer):
                subject = f"{pref.id}:{_show(value)}"
                ranked_before = before + list(pref.prefer[:index])
                if value in ranked_before:
                    self.add(
                        "CS113",
                        [subject, pref.id],
                        f"{target}={_show(value)} is already "
                        "ranked earlier for this field; this entry never matters",
                    )
                    continue
                if not self._feasible_where(pref.id, target, value, when):
                    continue
                shadow = next((u for u in ranked_before if self._dominates(target, u, value)), None)
                if shadow is not None:
                    self.add(
                        "CS113",
                        [subject, pref.id],
                        f"{target}={_show(value)} is never "
                        f"chosen: {target}={_show(shadow)} ranks first and no rule forbids it "
                        f"where {_show(value)} is allowed",
                    )
            earlier.setdefault(target, []).append((pref.id, when, pref.prefer))

    def _feasible_where(self, pref_id: str, target: str, value: Scalar, when: Condition | None) -> bool:
        if self.seen_where({target: value}, when):
            return True
        extras = [self.extra(when)] if when is not None else []
        found = self.solve(
            {target: value}, extra=extras, what=f"preference {pref_id}", ids=[f"{pref_id}:{_show(value)}"]
        )
        if found is None:
            core = self.reason({target: value}, extras, list(self.cp.rule_ids))
            where = f" where it applies ({self.pack.preference(pref_id).when})" if when else ""
            self.add(
                "CS112",
                [f"{pref_id}:{_show(value)}", pref_id, *core],
                f"{target}={_show(value)} can never be used{where}; excluded by " + ", ".join(core),
                reason=core,
            )
            return False
        return found is not False

    def _seen_rows(self, fields: tuple[str, ...], when: Condition, other: Condition) -> bool:
        """`seen` of "`when` holds and `other` does not", each distinct row of `fields` (theirs)
        among the latest solutions evaluated once, not both conditions per solution (SGLang's
        preferences: 124,000 evaluations, 0.15 s)."""
        if len(fields) < 2:
            return self.seen(lambda w: when.evaluate(w) and not other.evaluate(w))
        at_w, at_o = when.fields, other.fields
        for w in self.pool[-1 : -LATEST - 1 : -1]:
            # (The latest first, as in `seen_where`: SGLang's 2,365 questions each collected the
            # window's rows.)
            if when.holds(tuple([w[n] for n in at_w])) and not other.holds(tuple([w[n] for n in at_o])):
                return True
        rows = set(map(operator.itemgetter(*fields), self.pool[-SEEN:]))
        at_when = [fields.index(n) for n in when.fields]
        at_other = [fields.index(n) for n in other.fields]
        return any(
            when.holds(tuple([row[i] for i in at_when]))
            and not other.holds(tuple([row[i] for i in at_other]))
            for row in rows
        )

    def _implies(self, when: Condition | None, other: Condition | None) -> bool:
        """Whether `other` holds wherever `when` does (on the conditions alone)."""
        if other is None:
            return True
        if when is None:
            return False
        key = (when.text, other.text)
        if key in self._implied:
            return self._implied[key]
        fields = tuple(dict.fromkeys(when.fields + other.fields))
        if self._seen_rows(fields, when, other):
            self._implied[key] = False
            return False
        from solver.pack.expr import Condition

        w, o = when, other

        def counter(values: Sequence[Scalar]) -> bool:
            known = dict(zip(fields, values, strict=True))
            return w.evaluate(known) and not o.evaluate(known)

        def maybe(known: Mapping[str, Any]) -> bool | None:
            first, second = w.partial(known), o.partial(known)
            if first is False or second is True:
                return False
            return True if first is True and second is False else None

        found = (
            self.solve(
                {}, extra=[Condition.over(fields, counter, maybe)], rules=[], what="two conditions", ids=[]
            )
            is None
        )
        self._implied[key] = found
        return found

    def _dominates(self, name: str, better: Scalar, worse: Scalar) -> bool:
        """Wherever `name=worse` satisfies the rules, `name=better` does too (substitution).

        Checked rule by rule over the rule's other fields, so it is sound but local: a value
        reported as shadowed is never chosen, while some shadowing through chains is missed.
        """
        key = (name, better, worse)
        known = self._dominance.get(key)
        if known is not None:
            return known
        result = True
        rules = self.cp.rules_reading(name)
        # A known solution often shows a context where `better` fails and `worse` passes. (The
        # rule's own fields read, not a copy of the solution per test: a pass over every field,
        # 384 per question at 1,000 synthetic fields.)
        for rid in rules:
            cond = self.cp.rules[rid].condition
            fields, holds, at = cond.fields, cond.holds, cond.fields.index(name)
            for w in self.pool[-32:]:
                row = [w[f] for f in fields]
                row[at] = worse
                if not holds(tuple(row)):
                    continue
                row[at] = better
                if not holds(tuple(row)):
                    self._dominance[key] = False
                    return False
        for rid in rules:
            breaks = _substitution(self.cp.rules[rid].condition, name, worse, better)
            if not breaks.fields:
                if breaks.holds(()):
                    result = False
                    break
                continue
            if breaks.partial({}) is False:
                continue
            if self.solve({}, extra=[breaks], rules=[], what="dominance", ids=[]) is not None:
                result = False
                break
        self._dominance[key] = result
        return result

    def check_adjustments(self) -> None:
        for rule in self.pack.rules:
            if rule.adjusts is None:
                continue
            when = self.sem.whens.get(rule.id)
            extras = [self.extra(when)] if when is not None else []
            for value in rule.adjust_to:
                if self.seen_where({rule.adjusts: value}, when):
                    continue  # (a known solution fires it with this value: SGLang 38 of 52)
                found = self.solve(
                    {rule.adjusts: value}, extra=extras, what=f"adjustment {rule.id}", ids=[rule.id]
                )
                if found is None:
                    core = self.reason({rule.adjusts: value}, extras, list(self.cp.rule_ids))
                    self.add(
                        "CS114",
                        [rule.id, *core],
                        f"adjust_to {rule.adjusts}="
                        f"{_show(value)} never satisfies the rules when the adjustment fires; "
                        "excluded by " + ", ".join(core),
                        reason=core,
                    )

    def check_totality(self) -> None:
        facts = self.pack.facts
        combos, enumerated = self._fact_combinations(facts, self.world)
        self.stats["totality"] = {
            "fact_combinations": len(combos),
            "enumerated": enumerated,
            "seed": None if enumerated else self.seed,
        }
        groups: dict[tuple[Any, ...], list[dict[str, Scalar]]] = {}
        for combo in combos:
            # A conflict found before (some facts and rules) fails every combination that
            # contains its facts: no need to solve or explain again.
            known = next((k for k in groups if all(combo.get(n) == v for n, v in k[0])), None)
            if known is not None:
                groups[known].append(combo)
                continue
            found = self.solve(combo, what="a fact combination", ids=[pins_text(combo)])
            if found is not None:
                continue
            core = self.reason(combo, [], list(self.cp.rule_ids), blame_pins=True)
            key = (
                tuple((n, v) for n, v in combo.items() if f"{n}={_show(v)}" in core),
                tuple(c for c in core if c in self.index),
            )
            groups.setdefault(key, []).append(combo)
        self.stats["totality"]["conflicts"] = len(groups)
        # Every group, the largest first: `lint` shows `MAX_TOTALITY_GROUPS` of them once the
        # pack's acknowledgements are matched against all (`_shown`).
        ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
        for (core_pins, core_rules), members in ranked:
            facts_shown = dict(core_pins)
            how = "enumerated" if enumerated else "sampled"
            self.add(
                "CS121",
                [pins_text(facts_shown) or "(no facts)", *core_rules],
                f"with {pins_text(facts_shown) or 'these facts'} no choice of options satisfies "
                f"{', '.join(core_rules)} ({len(members)} of {len(combos)} {how} fact "
                "combinations)",
                witness=members[0],
                reason=list(core_rules),
            )

    def _fact_combinations(self, facts: list[str], world: list[str]) -> tuple[list[dict[str, Scalar]], bool]:
        return fact_combinations(self.cp, facts, world, samples=self.samples, seed=self.seed)


def fact_combinations(
    cp: CompiledPack,
    facts: Sequence[str],
    world: Sequence[str],
    *,
    samples: int,
    seed: int,
    allowed: Mapping[str, Sequence[Scalar]] | None = None,
    enumerate_up_to: int = ENUMERATE_FACTS,
) -> tuple[list[dict[str, Scalar]], bool]:
    """Combinations of `facts` (within `allowed`) that the `world` rules allow: all of them when
    there are at most `enumerate_up_to`, else a sample of `samples` with a fixed seed. The flag
    says which."""
    domains = [
        tuple(v for v in cp.domains[n] if allowed is None or n not in allowed or v in allowed[n])
        for n in facts
    ]
    size = 1
    for dom in domains:
        size *= len(dom)
    conds = [cp.rules[r].condition for r in world]
    if size <= enumerate_up_to:
        out = []
        for values in itertools.product(*domains):
            combo = dict(zip(facts, values, strict=True))
            if all(c.evaluate(combo) for c in conds if set(c.fields) <= set(combo)):
                out.append(combo)
        return out, True
    import random

    rng = random.Random(seed)
    seen: dict[tuple[Scalar, ...], dict[str, Scalar]] = {}
    root = cp.start({}, rules=list(world), allowed=allowed)
    if root is None:
        return [], False
    for _ in range(samples * 3):
        if len(seen) >= samples:
            break
        drawn = _random_facts(root, facts, rng, conds)
        if drawn is not None:
            seen.setdefault(tuple(drawn.values()), drawn)
    return list(seen.values()), False


def _random_facts(
    root: Any, facts: Sequence[str], rng: random.Random, conds: Sequence[Condition]
) -> dict[str, Scalar] | None:
    """One random fact combination allowed by the fact-only rules (None on a dead end).

    Facts are fixed in a random order, each to a random value still in its propagated domain, so
    the sample follows the fact-only rules instead of rejecting almost every random product.
    Fixed in place and taken back (`State.fix` / `undo`): a copy of the state per fact was a pass
    over every field per fact (synthetic 1,000: 150 facts, 250 draws).
    """
    fixed = 0
    try:
        for name in rng.sample(list(facts), len(facts)):
            values = list(root.domain(name))
            rng.shuffle(values)
            for value in values:
                if root.fix(name, value):
                    fixed += 1
                    break
            else:
                return None
        combo = {n: root.domain(n)[0] for n in facts}
    finally:
        for _ in range(fixed):
            root.undo()
    return combo if all(c.evaluate(combo) for c in conds if set(c.fields) <= set(combo)) else None


def _shown(findings: list[Finding]) -> list[Finding]:
    """`findings` with the first `MAX_TOTALITY_GROUPS` CS121 groups only (in their order, the
    largest first), those not acknowledged before those acknowledged. Cut after the pack's
    acknowledgements are matched against every group: cut before, an acknowledged refusal whose
    groups all ranked past the cut was reported stale (CS162; SGLang: quant-min-capability-80,
    drawn at ranks 38, 40 and 62 of 96), and a group nobody acknowledged could be hidden
    behind acknowledged ones."""
    groups = [f for f in findings if f.code == "CS121"]
    kept = {id(f) for f in sorted(groups, key=lambda f: f.acknowledged is not None)[:MAX_TOTALITY_GROUPS]}
    return [f for f in findings if f.code != "CS121" or id(f) in kept]


def _substitution(cond: Condition, name: str, worse: Scalar, better: Scalar) -> Condition:
    """A check over the rule's other fields: true where `worse` passes the rule, `better` fails."""
    from solver.pack.expr import Condition

    fields = cond.fields
    position = fields.index(name)
    rest = fields[:position] + fields[position + 1 :]
    holds, partial = cond.holds, cond.partial

    def breaks(values: Sequence[Scalar]) -> bool:
        head, tail = values[:position], values[position:]
        return bool(holds((*head, worse, *tail)) and not holds((*head, better, *tail)))

    def maybe(known: Mapping[str, Any]) -> bool | None:
        passes, fails = partial({**known, name: worse}), partial({**known, name: better})
        if passes is False or fails is True:
            return False
        return True if passes is True and fails is False else None

    return Condition.over(rest, breaks, maybe)


# --- entry points -----------------------------------------------------------------------------


def lint(
    pack: Pack,
    *,
    samples: int = SAMPLE_FACTS,
    seed: int = 0,
    budget: int | Budget = LINT_BUDGET,
    totality: bool = True,
) -> LintReport:
    """Analyse `pack` and return every finding, acknowledged ones marked, errors first.

    `budget`: the search steps of each question (a question that runs out is a CS190 finding),
    or a `Budget` whose per-search steps are that and whose total, when set, bounds the whole
    lint (running out raises `CommandBudgetExceeded`)."""
    from solver.engine.collector import fewer_collections

    started = time.monotonic()
    meter = budget if isinstance(budget, Budget) else Budget(budget)
    # Young collections every 20,000 new objects, not 700: lint's questions make and drop
    # states, tables and solutions all along, and the collector walked each one alive when it
    # ran (SGLang: 1,080 young and 8 full collections, 1.2 s of 15 s CPU; with it 26 and none,
    # 0.3 s; the same findings).
    with fewer_collections():
        linter = _Linter(pack, samples=samples, seed=seed, budget=meter)
        linter.run(totality)
    findings = linter.findings + graph_checks(pack) + static_checks(pack)
    findings = _shown(acknowledge(pack, findings))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order[f.severity], f.code))
    stats = {
        **linter.stats,
        "solver_calls": linter.solves,
        "repaired": linter.repaired,
        "witnesses": len(linter.pool),
        "seconds": round(time.monotonic() - started, 3),
    }
    return LintReport({"name": pack.name, "version": pack.version}, findings, stats)
