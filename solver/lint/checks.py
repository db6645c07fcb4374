"""Rule-base analysis of a pack: `confsolve lint`.

Owns the finding codes (CS1xx), their `--explain` texts and the checks behind them: dead values,
dead / always-true / redundant rules, unreachable preference entries, auto-resolution totality,
strongly connected fields, the quality of `because` and `source`, unused sets and fields, and
acknowledgements.

Every semantic check is a satisfiability question, answered in three steps: a known solution of
the pack, repaired by a few local-search moves, answers most "yes" questions (one solution proves
many values and conditions alive); then the exact search of `solver.engine.count` (its propagation
refutes case splits at once) and the engine's `CompiledPack.solve` (its arc consistency finds
solutions behind disjunctions) each get a short try, and the first gets the whole budget. The
"no" answers, which the findings rest on, are always proved by an exact search, and their minimal
reasons come from QuickXplain over the rules around the fields in question
(`solver.reasoning.conflicts.relevant_rules`).

Imports only the standard library at module level (the CLI imports this module at start-up);
the engine, the counter, the graph and the condition language are imported inside functions.
Never imports python-constraint or networkx directly.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from solver import progress as _progress
from solver.budget import Budget, CommandBudgetExceeded
from solver.values import show as _show

if TYPE_CHECKING:
    import random

    from solver.engine.count import Check, Limit
    from solver.engine.csp import CompiledPack
    from solver.model import Pack, Scalar
    from solver.pack.expr import Condition

__all__ = ["CODES", "Finding", "LintReport", "explain_code", "fact_combinations", "lint"]

SEVERITIES = ("error", "warning", "info")
LINT_BUDGET = 300_000
ENUMERATE_FACTS = 4096
SAMPLE_FACTS = 250
MAX_TOTALITY_GROUPS = 25
REPAIR_STEPS = 4
NEAREST_PAIRS = 2000
QUICK_STEPS = 2000


@dataclass(frozen=True)
class Code:
    severity: str
    title: str
    explain: str


CODES: dict[str, Code] = {
    "CS100": Code(
        "error",
        "the rules contradict each other",
        (
            "No assignment of all fields satisfies the hard rules, so every request fails. The finding "
            "names a minimal set of rules that cannot hold together: change one of them. The other "
            "semantic checks are skipped until this is fixed."
        ),
    ),
    "CS101": Code(
        "error",
        "dead value",
        (
            "No configuration can take FIELD=VALUE under any facts: the rules listed (a minimal set) "
            "exclude it everywhere. Setting it always ends in a conflict and auto never picks it. Fix "
            "the rules or remove the value; if it stays on purpose (the launcher accepts the flag but "
            "this version rejects it everywhere), acknowledge `FIELD=VALUE` in [lint.acknowledged]."
        ),
    ),
    "CS102": Code(
        "warning",
        "dead rule",
        (
            "The rule's `when` can never hold, on its own or given the other rules (listed: a minimal "
            "set that excludes it), so the rule never restricts anything. Usually a typo in `when` or a "
            "case another rule already forbids."
        ),
    ),
    "CS103": Code(
        "warning",
        "always-true rule",
        (
            "The rule holds for every combination of values of the fields it reads, so it never "
            "restricts anything (for example `require` lists every value of the field)."
        ),
    ),
    "CS104": Code(
        "warning",
        "redundant rule",
        (
            "The other rules imply this one: they cannot hold together with its negation. The finding "
            "names a minimal set of rules that imply it. Removing it changes no answer; keep it (and "
            "acknowledge it) when it gives users a clearer explanation than the rules that imply it. "
            "A rule over facts alone is compared with the other fact-only rules only (stating over the "
            "facts what rules about options imply is what CS121 asks for). For a warning rule: it can "
            "never be violated, so its warning is never shown."
        ),
    ),
    "CS105": Code(
        "info",
        "require can never hold",
        (
            "The rule's `require` (or `forbid`) cannot hold for any value of its own fields, so the rule "
            'just forbids its `when`. Writing it as `forbid = "<when>"` reads better in explanations.'
        ),
    ),
    "CS111": Code(
        "warning",
        "preference never applies",
        (
            "The preference's `when` can never hold given the rules (listed: a minimal set), so it never "
            "ranks anything."
        ),
    ),
    "CS112": Code(
        "warning",
        "preference entry never feasible",
        (
            "A value the preference ranks can never be used where the preference applies: the rules "
            "listed (a minimal set) exclude it whenever `when` holds. Remove the entry or fix the rules."
        ),
    ),
    "CS113": Code(
        "warning",
        "preference entry always shadowed",
        (
            "A ranked value can never be chosen because an earlier entry (of this preference, or of an "
            "earlier one for the same field that applies whenever this one does) works wherever it "
            "works: no rule allows the later value where it forbids the earlier one. Reorder or remove "
            "the entry."
        ),
    ),
    "CS114": Code(
        "warning",
        "adjustment value never works",
        (
            "An `adjust_to` value can never satisfy the rules when the adjustment fires (its `when` "
            "holds): the replacement always falls through to the next value or to auto."
        ),
    ),
    "CS121": Code(
        "warning",
        "facts with no configuration",
        (
            "Auto-resolution is not total: for the facts shown (a machine and model the fact-only rules "
            "allow), no choice of the options satisfies the rules listed, so every request with these "
            "facts fails. If the combination is really unsupported, say so with a rule over the facts "
            "alone (a clearer message); otherwise fix the rules. Fact combinations are enumerated when "
            "there are few, else sampled with a fixed seed (--samples, --seed)."
        ),
    ),
    "CS131": Code(
        "info",
        "strongly connected fields",
        (
            "These fields decide each other (through preferences, `same_as`, adjustments or "
            "`depends_on`), so they are decided together in declaration order and a preference whose "
            "condition reads an undecided member does not apply. Break the cycle if that is not "
            "intended."
        ),
    ),
    "CS141": Code(
        "warning",
        "because names no flag or value",
        (
            "A `because` is what the user reads: it should name the flag or value to change (a field "
            "the rule reads, its --flag, or one of its values), not only what the code does."
        ),
    ),
    "CS142": Code(
        "warning",
        "source names no upstream reference",
        (
            "A `source` should let a reviewer find the fact upstream: a file path, file::function, an "
            "issue or PR (#1234) or a URL."
        ),
    ),
    "CS151": Code("warning", "unused named set", ("No condition uses this named set. Remove it or use it.")),
    "CS152": Code(
        "warning",
        "unused field",
        (
            "No rule, preference, adjustment or depends_on mentions this field, so the pack says "
            "nothing about it; every value is always possible."
        ),
    ),
    "CS161": Code(
        "error",
        "malformed acknowledgement",
        (
            'Acknowledgements are strings "CODE: reason" with a known code and a non-empty reason, '
            "on a rule (`acknowledged = [...]`) or in [lint.acknowledged] of any pack file."
        ),
    ),
    "CS162": Code(
        "warning",
        "stale acknowledgement",
        ("An acknowledgement that matches no finding any more. Remove it so acknowledgements stay true."),
    ),
    "CS163": Code(
        "warning",
        "acknowledgement for an unknown id",
        (
            "[lint.acknowledged] keys must name a rule, preference, field, named set, FIELD=VALUE "
            "or PREFERENCE:VALUE of the pack."
        ),
    ),
    "CS190": Code(
        "info",
        "check not completed",
        (
            "A check ran out of its search budget and was skipped for the ids shown; the rest of the "
            "report stands. Raise it with --budget."
        ),
    ),
}


@dataclass
class Finding:
    """One finding: a code, the ids it is about (the subject first), and a one-line message."""

    code: str
    ids: list[str]
    message: str
    witness: dict[str, Scalar] | None = None
    reason: list[str] | None = None
    acknowledged: str | None = None

    @property
    def severity(self) -> str:
        return CODES[self.code].severity

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "ids": self.ids,
            "title": CODES[self.code].title,
            "message": self.message,
            "acknowledged": self.acknowledged,
        }
        if self.witness is not None:
            doc["witness"] = {k: v for k, v in self.witness.items()}
        if self.reason is not None:
            doc["reason"] = self.reason
        return doc


# Stats that measure time: in the text, never in the JSON document.
_TIMING_STATS = ("seconds", "timings")


@dataclass
class LintReport:
    """Every finding of one pack, plus what was checked and how long it took."""

    pack: dict[str, str]
    findings: list[Finding]
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        """Error findings that are not acknowledged: these fail CI."""
        return [f for f in self.findings if f.severity == "error" and f.acknowledged is None]

    def to_json(self) -> dict[str, Any]:
        # No timings: the same pack gives the same document, byte for byte (the text has them).
        stats = {k: v for k, v in self.stats.items() if k not in _TIMING_STATS}
        return {
            "schema": 1,
            "status": "linted",
            "pack": self.pack,
            "findings": [f.to_json() for f in self.findings],
            "stats": stats,
        }

    def text(self) -> str:
        lines = []
        for f in self.findings:
            ack = f"  [acknowledged: {f.acknowledged}]" if f.acknowledged is not None else ""
            lines.append(f"{f.severity:<7} {f.code} {f.ids[0]}: {f.message}{ack}")
        counts = {
            s: sum(1 for f in self.findings if f.severity == s and f.acknowledged is None) for s in SEVERITIES
        }
        acked = sum(1 for f in self.findings if f.acknowledged is not None)
        lines.append(
            f"{self.pack['name']} {self.pack['version']}: {counts['error']} error(s), "
            f"{counts['warning']} warning(s), {counts['info']} info, {acked} acknowledged "
            f"({self.stats.get('seconds', 0):.1f} s; `confsolve lint --explain CODE` says more)"
        )
        return "\n".join(lines)


def explain_code(code: str) -> str:
    """The `--explain` text of a finding code."""
    entry = CODES[code.upper()]
    return f"{code.upper()} ({entry.severity}): {entry.title}\n\n{entry.explain}"


def _pins(values: Mapping[str, Scalar]) -> str:
    return ", ".join(f"{n}={_show(v)}" for n, v in values.items())


# --- the semantic checks ----------------------------------------------------------------------


class _Linter:
    def __init__(self, pack: Pack, *, samples: int, seed: int, budget: Budget) -> None:
        from solver.engine.csp import compile_pack
        from solver.pack.loader import semantics

        self.pack = pack
        # Every search is charged to the lint's Budget: its per-search steps bound each question,
        # its total (when --budget gave one) the whole lint.
        self.meter = budget
        self.cp: CompiledPack = compile_pack(pack).within(budget)
        self.sem = semantics(pack)
        self.samples = samples
        self.seed = seed
        self.budget = budget.per_search
        self.findings: list[Finding] = []
        self.pool: list[dict[str, Scalar]] = []  # solutions of the whole pack, found on the way
        self.proven: dict[str, set[Scalar]] = {n: set() for n in pack.fields}
        self.dead: set[tuple[str, Scalar]] = set()
        self.solves = 0
        self.stats: dict[str, Any] = {}
        self._dominance: dict[tuple[str, Scalar, Scalar], bool] = {}
        import random

        self.rng = random.Random(seed)
        self.repaired = 0
        from solver.engine.count import ModelCounter, pack_checks

        # The exact search for the questions local repair cannot answer: satisfiability only
        # (nothing projected), every rule a check that a query can switch on or off.
        self.oracle = ModelCounter(self.cp.domains, pack_checks(pack), project=())
        self.index = {rid: i for i, rid in enumerate(self.cp.rule_ids)}
        self.fact_names = set(pack.facts)
        # The hard rules over facts alone: what the world can be.
        self.world = [r for r in self.cp.rule_ids if set(self.cp.rules[r].fields) <= self.fact_names]
        self._added: dict[int, tuple[int, Check]] = {}
        self._extras: dict[tuple[str, bool], Check] = {}
        self._implied: dict[tuple[str, str], bool] = {}
        # Each rule as (fields, holds), by its index in pack order, and the rules reading a field.
        self._checks = [(self.cp.rules[r].fields, self.cp.rules[r].holds) for r in self.cp.rule_ids]
        self._reading: dict[str, list[int]] = {}
        for index, (names, _) in enumerate(self._checks):
            for name in names:
                self._reading.setdefault(name, []).append(index)

    # -- solver access ---------------------------------------------------------------------
    def add(self, code: str, ids: Sequence[str], message: str, **extra: Any) -> None:
        self.findings.append(Finding(code, list(ids), message, **extra))

    def solve(
        self,
        pins: Mapping[str, Scalar],
        *,
        extra: Sequence[Check] = (),
        rules: Iterable[str] | None = None,
        what: str,
        ids: Sequence[str],
    ) -> dict[str, Scalar] | bool | None:
        """A solution, None when there is none, False when the budget ran out (reported).

        A known solution, repaired by a short local search, answers most of these questions; only
        when that fails does the exact search decide (and prove the "no" answers the findings
        rest on).
        """
        from solver.engine.count import CountLimitReached

        _progress.advance()
        rule_ids = list(self.cp.rule_ids) if rules is None else list(rules)
        try:
            found = self.query(pins, rule_ids, extra) if rule_ids else self.alone(pins, extra)
        except CountLimitReached:
            self.add("CS190", ids, f"{what}: the search budget of {self.budget} steps ran out")
            return False
        if found is not None and rules is None:
            self.learn(found)
        return found

    def query(
        self, pins: Mapping[str, Scalar], rule_ids: Sequence[str], extra: Sequence[Check]
    ) -> dict[str, Scalar] | None:
        found = self.repair(pins, rule_ids, extra)
        if found is not None:
            return found
        from solver.engine.count import CountLimitReached
        from solver.engine.csp import Extra
        from solver.errors import SolverBudgetExceeded

        self.solves += 1
        only = None if len(rule_ids) == len(self.index) else [self.index[r] for r in rule_ids]
        indices = [self.oracle_index(c) for c in extra]
        conditions = [Extra(c.fields, lambda *a, h=c.holds: bool(h(a))) for c in extra]

        def engine(steps: int, hint: Mapping[str, Scalar] | None) -> dict[str, Scalar] | None:
            return self.cp.solve(
                pins, rules=rule_ids, budget=steps, task="linting", hint=hint, extra=conditions
            )

        def counter(steps: int) -> dict[str, Scalar] | None:
            def ask(limit: Limit) -> dict[str, Scalar] | None:
                return self.oracle.solution(pins, only=only, extra=indices, limit=limit, rank=self.rank)

            return self.counted(self.oracle, ask, steps)

        # Two searches with different strengths: the engine's arc consistency, started from a
        # known solution, finds solutions hidden behind disjunctions and refutes most questions
        # by propagation; the counter's propagation refutes case splits at once. Each gets a
        # short try (the engine first: on the synthetic 300-field pack that made the totality
        # check 14 s -> 1 s), then each the whole budget.
        quick = min(QUICK_STEPS, self.budget)
        try:
            return engine(quick, self.pool[-1] if self.pool else None)
        except CommandBudgetExceeded:
            raise
        except SolverBudgetExceeded:
            pass
        try:
            return counter(quick)
        except CountLimitReached:
            pass
        try:
            return engine(self.budget, None)
        except CommandBudgetExceeded:
            raise
        except SolverBudgetExceeded:
            pass
        return counter(self.budget)

    def counted(
        self, counter: Any, ask: Callable[[Limit], dict[str, Scalar] | None], steps: int
    ) -> dict[str, Scalar] | None:
        """`ask(limit)` of an exact counter within `steps`, charged to the lint's Budget."""
        from solver.engine.count import Limit, metered

        return metered(self.meter, counter, ask, Limit(steps=steps), "linting")

    def alone(self, pins: Mapping[str, Scalar], extra: Sequence[Check]) -> dict[str, Scalar] | None:
        """A question about conditions alone (no rules): a small search of its own."""
        from solver.engine.count import ModelCounter

        names = {n for c in extra for n in c.fields} | set(pins)
        counter = ModelCounter({n: self.cp.domains[n] for n in names}, extra, project=())
        found = self.counted(counter, lambda limit: counter.solution(pins, limit=limit), self.budget)
        if found is None:
            return None
        return {**{n: d[0] for n, d in self.cp.domains.items()}, **found}

    def oracle_index(self, check: Check) -> int:
        key = id(check)
        if key not in self._added:
            self._added[key] = (self.oracle.add(check), check)
        return self._added[key][0]

    def repair(
        self, pins: Mapping[str, Scalar], rule_ids: Sequence[str], extra: Sequence[Check]
    ) -> dict[str, Scalar] | None:
        """A solution made from a known one, or None: pins applied, each ad-hoc condition met by
        changing as few of its fields as possible, then a few min-conflicts steps.

        Sound by construction: an answer is returned only when every check holds on it. A known
        solution satisfies every rule, so only the rules reading a field it no longer holds need
        a look, not the whole pack (which made each question cost the pack's size).
        """
        if not self.pool:
            return None
        wanted = None if len(rule_ids) == len(self.index) else {self.index[r] for r in rule_ids}
        starts = sorted(self.pool[-32:], key=lambda w: -sum(w[n] == v for n, v in pins.items()))
        for start in starts[:2]:
            current = {**start, **pins}
            for check in extra:
                if not check.holds(tuple(current[n] for n in check.fields)):
                    near = _nearest(check, current, pins, self.cp.domains)
                    if near is None:
                        return None  # the condition cannot hold with these pins at all
                    current.update(near)
            changed = [n for n, v in current.items() if start[n] != v]
            found = _min_conflicts(
                self.cp.domains,
                self._checks,
                self._reading,
                wanted,
                extra,
                pins,
                current,
                changed,
                self.rng,
                REPAIR_STEPS,
            )
            if found is not None:
                self.repaired += 1
                return found
        return None

    def learn(self, solution: dict[str, Scalar]) -> None:
        self.pool.append(solution)
        for name, value in solution.items():
            self.proven[name].add(value)

    def extra(self, cond: Condition, *, negate: bool = False) -> Check:
        """A condition as a check (cached, so the exact search sees each condition once)."""
        key = (cond.text, negate)
        found = self._extras.get(key)
        if found is None:
            from solver.engine.count import Check

            found = Check(cond.fields, cond.holds, cond.partial)
            if negate:
                found = found.negated()
            self._extras[key] = found
        return found

    def reason(
        self,
        pins: Mapping[str, Scalar],
        extras: Sequence[Check],
        rules: Sequence[str],
        *,
        blame_pins: bool = False,
    ) -> list[str]:
        """A minimal set of `rules` (and, with `blame_pins`, of the pins as `field=value`) that,
        with `pins` and `extras`, has no solution (QuickXplain over the rules that can interact)."""
        from solver.engine.count import CountLimitReached
        from solver.reasoning.conflicts import Item, quickxplain, relevant_rules

        start = [*pins, *(n for e in extras for n in e.fields)]
        fixed = {} if blame_pins else dict(pins)
        # Most exclusions are one or two rules away: grow the rules outwards from the fields in
        # question and explain within the first layer that already has no solution.
        local = relevant_rules(self.cp, fixed, start, rules)
        for layer in self._layers(start, fixed, rules):
            if len(layer) >= len(local):
                break
            if self.query(pins, layer, extras) is None:
                local = layer
                break
        items = [Item("rule", r) for r in local]
        if blame_pins:
            items += [Item("pin", n, v) for n, v in pins.items()]

        def consistent(chosen: Sequence[Item]) -> bool:
            given = dict(fixed)
            for item in chosen:
                if item.kind == "pin":
                    given[item.name] = item.value  # type: ignore[assignment]
            names = [i.name for i in chosen if i.kind == "rule"]
            return self.query(given, names, extras) is not None

        try:
            core = quickxplain(consistent, items)
        except CountLimitReached:
            return ["(not minimised: search budget)", *local]
        return [i.label() for i in core]

    def _layers(
        self, start: Sequence[str], pins: Mapping[str, Scalar], rules: Sequence[str]
    ) -> Iterable[list[str]]:
        """Ever larger sets of `rules` around the `start` fields, reached through free fields."""
        pool = set(rules)
        chosen: set[str] = set()
        seen = set(start)
        frontier = list(dict.fromkeys(start))
        while frontier:
            fresh = list(
                dict.fromkeys(
                    rid
                    for name in frontier
                    for rid in self.cp.rules_reading(name)
                    if rid in pool and rid not in chosen
                )
            )
            if not fresh:
                return
            chosen.update(fresh)
            yield sorted(chosen, key=self.index.__getitem__)
            frontier = []
            for rid in fresh:
                for other in self.cp.rules[rid].fields:
                    if other not in seen and other not in pins:
                        seen.add(other)
                        frontier.append(other)

    def rank(self, name: str, values: tuple[Scalar, ...]) -> list[Scalar]:
        """Values not yet seen in a solution first, so each new solution proves more values."""
        known = self.proven[name]
        return sorted(values, key=lambda v: v in known)

    def others(self, rule_id: str) -> list[str]:
        return [r for r in self.cp.rule_ids if r != rule_id]

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
            found = self.solve({}, extra=[negated], rules=implied_by, what=f"rule {rule.id}", ids=[rule.id])
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
        if any(when.evaluate(w) for w in self.pool):
            return False
        if self._constant(when, negate=False, ids=[rule_id]):
            self.add(
                "CS102",
                [rule_id],
                f"the {kind}'s `when` can never hold, whatever the values of {', '.join(when.fields)}",
            )
            return True
        extra = self.extra(when)
        found = self.solve({}, extra=[extra], rules=others, what=f"when of {rule_id}", ids=[rule_id])
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
            if when is not None and not any(when.evaluate(w) for w in self.pool):
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
        if any(w[target] == value and (when is None or when.evaluate(w)) for w in self.pool):
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

    def _implies(self, when: Condition | None, other: Condition | None) -> bool:
        """Whether `other` holds wherever `when` does (on the conditions alone)."""
        if other is None:
            return True
        if when is None:
            return False
        key = (when.text, other.text)
        if key in self._implied:
            return self._implied[key]
        if any(when.evaluate(w) and not other.evaluate(w) for w in self.pool):
            self._implied[key] = False
            return False
        from solver.engine.count import Check

        fields = tuple(dict.fromkeys(when.fields + other.fields))
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
            self.solve({}, extra=[Check(fields, counter, maybe)], rules=[], what="two conditions", ids=[])
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
        # A known solution often shows a context where `better` fails and `worse` passes.
        for rid in rules:
            cond = self.cp.rules[rid].condition
            for w in self.pool[-32:]:
                if cond.evaluate({**w, name: worse}) and not cond.evaluate({**w, name: better}):
                    self._dominance[key] = False
                    return False
        for rid in rules:
            breaks = _substitution(self.cp.rules[rid].condition, name, worse, better)
            if not breaks.fields:
                if breaks.holds(()):
                    result = False
                    break
                continue
            if breaks.partial is not None and breaks.partial({}) is False:
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
            found = self.solve(combo, what="a fact combination", ids=[_pins(combo)])
            if found is not None:
                continue
            core = self.reason(combo, [], list(self.cp.rule_ids), blame_pins=True)
            key = (
                tuple((n, v) for n, v in combo.items() if f"{n}={_show(v)}" in core),
                tuple(c for c in core if c in self.index),
            )
            groups.setdefault(key, []).append(combo)
        self.stats["totality"]["conflicts"] = len(groups)
        ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
        for (core_pins, core_rules), members in ranked[:MAX_TOTALITY_GROUPS]:
            facts_shown = dict(core_pins)
            how = "enumerated" if enumerated else "sampled"
            self.add(
                "CS121",
                [_pins(facts_shown) or "(no facts)", *core_rules],
                f"with {_pins(facts_shown) or 'these facts'} no choice of options satisfies "
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
    """
    state = root
    for name in rng.sample(list(facts), len(facts)):
        values = list(state.domain(name))
        rng.shuffle(values)
        for value in values:
            nxt = state.assign(name, value)
            if nxt is not None:
                state = nxt
                break
        else:
            return None
    combo = {n: state.domain(n)[0] for n in facts}
    return combo if all(c.evaluate(combo) for c in conds if set(c.fields) <= set(combo)) else None


def _min_conflicts(
    domains: Mapping[str, Sequence[Scalar]],
    rules: Sequence[tuple[tuple[str, ...], Callable[[tuple[Scalar, ...]], bool]]],
    reading: Mapping[str, Sequence[int]],
    wanted: Collection[int] | None,
    extra: Sequence[Check],
    fixed: Mapping[str, Scalar],
    current: dict[str, Scalar],
    changed: Sequence[str],
    rng: random.Random,
    steps: int,
) -> dict[str, Scalar] | None:
    """Min-conflicts local search from `current` (with `fixed` applied), a solution of every rule
    but where the `changed` fields moved: the rules in `wanted` (all when None) and the `extra`
    checks must hold. Changed in place; a solution or None.

    Checks are numbered: the rules by their index, the extras after them."""
    base = len(rules)
    checks = list(rules) + [(c.fields, c.holds) for c in extra]
    extra_reading: dict[str, list[int]] = {}
    for offset, check in enumerate(extra):
        for name in check.fields:
            extra_reading.setdefault(name, []).append(base + offset)

    def around(name: str) -> list[int]:
        mine = [j for j in reading.get(name, ()) if wanted is None or j in wanted]
        return mine + extra_reading.get(name, [])

    def fails(index: int) -> bool:
        names, holds = checks[index]
        return not holds(tuple(current[n] for n in names))

    bad = {j for name in changed for j in around(name) if fails(j)}
    bad |= {base + i for i in range(len(extra)) if fails(base + i)}
    for _ in range(steps):
        if not bad:
            return current
        names = checks[rng.choice(sorted(bad))][0]
        free = [n for n in names if n not in fixed]
        if not free:
            break
        moves: list[tuple[str, Scalar]] = []
        best = 0
        for name in free:
            was = current[name]
            near = around(name)
            before = sum(1 for j in near if j in bad)
            for value in domains[name]:
                if value == was:
                    continue
                current[name] = value
                score = sum(1 for j in near if fails(j)) - before
                if not moves or score < best:
                    best, moves = score, [(name, value)]
                elif score == best:
                    moves.append((name, value))
            current[name] = was
        if not moves:
            break
        # Mostly greedy; now and then a random move, so plateaus do not trap the search.
        if rng.random() > 0.1:
            name, value = rng.choice(moves)
        else:
            name = rng.choice(free)
            value = rng.choice(list(domains[name]))
        current[name] = value
        for j in around(name):
            if fails(j):
                bad.add(j)
            else:
                bad.discard(j)
    return current if not bad else None


def _nearest(
    check: Check,
    current: Mapping[str, Scalar],
    fixed: Mapping[str, Scalar],
    domains: Mapping[str, Sequence[Scalar]],
) -> dict[str, Scalar] | None:
    """Values for one or two of the check's free fields that make it hold, or None."""
    free = [n for n in check.fields if n not in fixed]
    trial = dict(current)

    def holds() -> bool:
        return bool(check.holds(tuple(trial[n] for n in check.fields)))

    for name in free:
        for value in domains[name]:
            trial[name] = value
            if holds():
                return {name: value}
        trial[name] = current[name]
    pairs = list(itertools.combinations(free, 2))
    if sum(len(domains[a]) * len(domains[b]) for a, b in pairs) > NEAREST_PAIRS:
        return None
    for first, second in pairs:
        for value in domains[first]:
            trial[first] = value
            for other in domains[second]:
                trial[second] = other
                if holds():
                    return {first: value, second: other}
        trial[first], trial[second] = current[first], current[second]
    return None


def _substitution(cond: Condition, name: str, worse: Scalar, better: Scalar) -> Check:
    """A check over the rule's other fields: true where `worse` passes the rule, `better` fails."""
    from solver.engine.count import Check

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

    return Check(rest, breaks, maybe)


# --- the static checks ------------------------------------------------------------------------

_SOURCE_REF = re.compile(r"(/|::|\.py\b|\.md\b|\.rst\b|#\d+|https?://|\bPR\b|\bissue\b)", re.IGNORECASE)


def _names_something(text: str, pack: Pack, fields: Iterable[str]) -> bool:
    """Whether `text` names one of `fields`: its name or flag, a value (or a word starting with
    one: "triton_kernels"), or a distinctive word of a value's label ("Hopper", "H100")."""
    words: set[str] = set()
    starts: set[str] = set()
    for name in fields:
        f = pack.fields[name]
        words |= {name, name.replace("_", "-"), f.cli_flag.lstrip("-")}
        for value in f.domain:
            if isinstance(value, str) and len(value) >= 3:
                starts.add(value)
            elif isinstance(value, str) and len(value) == 2:
                words.add(value)
            elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2:
                words.add(str(value))
        for label in f.labels.values():
            words |= {
                w for w in re.findall(r"[\w.+-]{3,}", label) if any(c.isupper() or c.isdigit() for c in w)
            }
    lowered = text.lower()
    for word in words | starts:
        tail = "" if word in starts else r"(?![\w])"
        if re.search(r"(?<![\w])" + re.escape(word.lower()) + tail, lowered):
            return True
    return False


def _static_checks(pack: Pack) -> list[Finding]:
    import ast

    from solver.pack.loader import semantics

    sem = semantics(pack)
    out: list[Finding] = []
    every = list(pack.fields)
    for rule in pack.rules:
        read = list(sem.rules[rule.id].fields) + ([rule.adjusts] if rule.adjusts else [])
        # A rule over facts alone states how the world is; there is nothing for the user to change.
        acts = any(pack.fields[n].kind == "option" for n in read)
        if acts and not _names_something(rule.because, pack, read or every):
            out.append(
                Finding(
                    "CS141",
                    [rule.id],
                    f"`because` names none of {', '.join(read)} (flag or value): say what to change",
                )
            )
        if not _SOURCE_REF.search(rule.source):
            out.append(
                Finding("CS142", [rule.id], f"`source` {rule.source!r} names no file, function, issue or URL")
            )
    for pref in pack.preferences:
        cond = sem.preferences.get(pref.id)
        read = [pref.field, *(cond.fields if cond is not None else ())]
        if pack.fields[pref.field].kind == "option" and not _names_something(pref.because, pack, read):
            out.append(
                Finding("CS141", [pref.id], f"`because` names none of {', '.join(read)} (flag or value)")
            )
        if not _SOURCE_REF.search(pref.source):
            out.append(
                Finding("CS142", [pref.id], f"`source` {pref.source!r} names no file, function, issue or URL")
            )
    used_sets: set[str] = set()
    texts = [t for r in pack.rules for t in (r.when, r.require, r.forbid) if t]
    texts += [p.when for p in pack.preferences if p.when]
    for text in texts:
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError:  # pragma: no cover - the loader parsed it already
            continue
        used_sets |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in pack.sets}
    for set_name in pack.sets:
        if set_name not in used_sets:
            out.append(Finding("CS151", [set_name], "no condition uses this set"))
    mentioned: set[str] = set()
    for cond in sem.rules.values():
        mentioned |= set(cond.fields)
    for pref in pack.preferences:
        mentioned.add(pref.field)
        if pref.same_as:
            mentioned.add(pref.same_as)
        pcond = sem.preferences.get(pref.id)
        if pcond is not None:
            mentioned |= set(pcond.fields)
    for name, f in pack.fields.items():
        if f.depends_on:
            mentioned |= {name, *f.depends_on}
    for name, f in pack.fields.items():
        if name not in mentioned:
            out.append(Finding("CS152", [name], f"no rule or preference mentions this {f.kind}"))
    return out


def _graph_checks(pack: Pack) -> list[Finding]:
    from solver.pack.graph import analyse

    info = analyse(pack)
    out = []
    for component in info.components:
        members = set(component)
        links = [f"{s} -> {d} ({why})" for s, d, why in info.edges if s in members and d in members]
        out.append(
            Finding(
                "CS131",
                [component[0], *component[1:]],
                f"{', '.join(component)} decide each other: " + "; ".join(links),
            )
        )
    return out


# --- acknowledgements -------------------------------------------------------------------------

_ACK = re.compile(r"^\s*(CS\d{3})\s*:\s*(\S.*?)\s*$")


def _acknowledge(pack: Pack, findings: list[Finding]) -> list[Finding]:
    """Mark acknowledged findings; report malformed, stale and misplaced acknowledgements."""
    entries: list[tuple[str, str, str, str]] = []  # (id, code, reason, where)
    problems: list[Finding] = []
    sources: list[tuple[str, Sequence[str], str]] = [
        (rule.id, rule.acknowledged, f"rule {rule.id}") for rule in pack.rules
    ]
    table: Mapping[str, Sequence[str]] = getattr(pack, "acknowledged", None) or {}
    known = _known_ids(pack)
    for key, items in table.items():
        sources.append((key, items, f"[lint.acknowledged] {key}"))
        if key not in known:
            problems.append(
                Finding(
                    "CS163",
                    [key],
                    f"[lint.acknowledged] names {key!r}, which is "
                    "not a rule, preference, field, set or FIELD=VALUE of the pack",
                )
            )
    for ident, items, where in sources:
        for item in items:
            match = _ACK.match(item)
            if match is None or match.group(1) not in CODES:
                problems.append(
                    Finding("CS161", [ident], f'{where}: {item!r} is not "CODE: reason" with a known code')
                )
                continue
            entries.append((ident, match.group(1), match.group(2), where))
    used: set[int] = set()
    for finding in findings:
        scope = _scope(finding)
        for number, (ident, code, reason, _) in enumerate(entries):
            if code == finding.code and ident in scope:
                finding.acknowledged = reason
                used.add(number)
                break
    for number, (ident, code, _, where) in enumerate(entries):
        if number not in used:
            problems.append(
                Finding("CS162", [ident], f"{where}: {code} matches no finding; remove the acknowledgement")
            )
    return findings + problems


def _scope(finding: Finding) -> list[str]:
    """The ids whose acknowledgement covers a finding: its subject; for a dead value also its
    field (every dead value of it); for facts with no configuration also the rules of the
    conflict (a rule that refuses such a machine on purpose says so once)."""
    if finding.code == "CS101":
        return finding.ids[:2]
    if finding.code == "CS121":
        return finding.ids
    return finding.ids[:1]


def _known_ids(pack: Pack) -> set[str]:
    known = {r.id for r in pack.rules} | {p.id for p in pack.preferences} | set(pack.sets)
    for name, f in pack.fields.items():
        known.add(name)
        known |= {f"{name}={_show(v)}" for v in f.domain}
    for pref in pack.preferences:
        known |= {f"{pref.id}:{_show(v)}" for v in pref.prefer}
    return known


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
    started = time.monotonic()
    meter = budget if isinstance(budget, Budget) else Budget(budget)
    linter = _Linter(pack, samples=samples, seed=seed, budget=meter)
    linter.run(totality)
    findings = linter.findings + _graph_checks(pack) + _static_checks(pack)
    findings = _acknowledge(pack, findings)
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
