"""The only module that uses python-constraint: a pack compiled once into a reusable CSP.

Variables are fields, domains are their values, and each hard rule is one `FunctionConstraint`
over exactly the fields it reads. The compiled form is shared and never mutated: every query gets
fresh `Domain` objects (a python-constraint domain shrinks while it is searched).

Two searches, both a `constraint.Solver` subclass so python-constraint's domains and
forward-checking constraints do the work and we only choose the order:
- refutation (`satisfiable`): pinned fields first, then smallest current domain first (dynamic MRV);
  python-constraint's own degree-first order proves "no solution" slowly on packs like ours;
- resolution (`first_solution` with an order and a ranking): fields in graph order, values in the
  order of the applicable preferences, so the first solution is the lexicographically best one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from constraint import Domain, FunctionConstraint, Solver

from solver.errors import SolverBudgetExceeded
from solver.expr import Condition
from solver.loader import semantics
from solver.model import Pack, Scalar

__all__ = [
    "DEFAULT_BUDGET",
    "CompiledPack",
    "Extra",
    "SearchTrace",
    "compile_pack",
]

DEFAULT_BUDGET = int(os.environ.get("CONFSOLVE_BUDGET", "2000000"))

Assignment = dict[str, Scalar]
Ranker = Callable[[str, Mapping[str, Scalar], Sequence[Scalar]], Sequence[Scalar]]


@dataclass(frozen=True)
class Extra:
    """An ad-hoc condition added to one query (e.g. "not when" to test an entailment)."""

    fields: tuple[str, ...]
    holds: Callable[..., bool]


@dataclass
class SearchTrace:
    """What the ordered search saw on its final path: each field's domain when it was decided."""

    domains: dict[str, tuple[Scalar, ...]] = field(default_factory=dict)
    steps: int = 0


@dataclass(frozen=True)
class _Rule:
    id: str
    fields: tuple[str, ...]
    constraint: Any
    condition: Condition


class _Search(Solver):  # type: ignore[misc]
    """Chronological backtracking with forward checking; we pick the variable and value order."""

    def __init__(
        self,
        order: Sequence[str] | None,
        ranker: Ranker | None,
        budget: int,
        task: str,
        trace: SearchTrace | None,
    ) -> None:
        self._order = order
        self._ranker = ranker
        self._budget = budget
        self._task = task
        self._trace = trace

    def _pick(self, domains: dict[str, Any], assigned: Mapping[str, Any]) -> str | None:
        if self._order is not None:
            for name in self._order:
                if name not in assigned:
                    return name
            return None
        best: str | None = None
        best_size = 1 << 30
        for name, dom in domains.items():
            if name not in assigned and len(dom) < best_size:
                best, best_size = name, len(dom)
                if best_size <= 1:
                    break
        return best

    def getSolutionIter(
        self, domains: dict[str, Any], constraints: Any, vconstraints: dict[str, Any]
    ) -> Iterator[Assignment]:
        assignments: Assignment = {}
        stack: list[tuple[str, list[Scalar], list[Any]]] = []
        steps = 0
        trace = self._trace
        while True:
            variable = self._pick(domains, assignments)
            if variable is None:
                if trace is not None:
                    trace.steps = steps
                yield dict(assignments)
                if not stack:
                    return
                variable, values, pushed = stack.pop()
                for dom in pushed:
                    dom.popState()
            else:
                current = list(domains[variable])
                if self._ranker is not None and len(current) > 1:
                    ranked = self._ranker(variable, assignments, current)
                else:
                    ranked = current
                if trace is not None:
                    trace.domains[variable] = tuple(current)
                values = list(reversed(ranked))  # pop() takes the best first
                pushed = [domains[x] for x in domains if x not in assignments and x != variable]
            while True:
                if not values:
                    # Nothing left for this variable: go back to the previous one.
                    assignments.pop(variable, None)
                    while stack:
                        variable, values, pushed = stack.pop()
                        for dom in pushed:
                            dom.popState()
                        if values:
                            break
                        del assignments[variable]
                    else:
                        return
                assignments[variable] = values.pop()
                steps += 1
                if steps > self._budget:
                    raise SolverBudgetExceeded(self._task, self._budget)
                for dom in pushed:
                    dom.pushState()
                for constraint, variables in vconstraints[variable]:
                    if not constraint(variables, domains, assignments, pushed):
                        break
                else:
                    break
                for dom in pushed:
                    dom.popState()
            stack.append((variable, values, pushed))

    def getSolution(
        self, domains: dict[str, Any], constraints: Any, vconstraints: dict[str, Any]
    ) -> Assignment | None:
        return next(self.getSolutionIter(domains, constraints, vconstraints), None)


class CompiledPack:
    """A pack compiled for queries. Thread-safe: queries never mutate it."""

    def __init__(self, pack: Pack) -> None:
        sem = semantics(pack)
        self.pack = pack
        self.domains: dict[str, tuple[Scalar, ...]] = {n: f.domain for n, f in pack.fields.items()}
        self.rules: dict[str, _Rule] = {}
        self.warn_rules: dict[str, Condition] = {}
        for rule in pack.rules:
            cond = sem.rules[rule.id]
            if rule.severity == "warn":
                self.warn_rules[rule.id] = cond
                continue
            self.rules[rule.id] = _Rule(rule.id, cond.fields, _constraint(cond), cond)
        self.rule_ids: tuple[str, ...] = tuple(self.rules)
        self._all_vconstraints = self._vconstraints(self.rule_ids)

    def _vconstraints(self, rule_ids: Collection[str]) -> dict[str, list[tuple[Any, tuple[str, ...]]]]:
        out: dict[str, list[tuple[Any, tuple[str, ...]]]] = {name: [] for name in self.domains}
        for rid in rule_ids:
            rule = self.rules[rid]
            for name in rule.fields:
                out[name].append((rule.constraint, rule.fields))
        return out

    def rules_reading(self, name: str) -> list[str]:
        return [rid for rid, rule in self.rules.items() if name in rule.fields]

    # -- queries ---------------------------------------------------------------------------
    def solve(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        extra: Sequence[Extra] = (),
        order: Sequence[str] | None = None,
        ranker: Ranker | None = None,
        trace: SearchTrace | None = None,
        budget: int | None = None,
        task: str = "checking a request",
    ) -> Assignment | None:
        """The first solution under `pins` (and `allowed` value sets), or None.

        `rules` limits the hard rules taken into account (default: all). Without `order`, the
        search refutes fast (pinned first, then smallest domain first).
        """
        domains: dict[str, Any] = {}
        for name, values in self.domains.items():
            if name in pins:
                domains[name] = Domain([pins[name]])
            elif allowed is not None and name in allowed:
                keep = allowed[name]
                domains[name] = Domain([v for v in values if v in keep])
            else:
                domains[name] = Domain(values)
            if not domains[name]:
                return None
        if rules is None and not extra:
            vconstraints = {k: list(v) for k, v in self._all_vconstraints.items()}
        else:
            vconstraints = self._vconstraints(self.rule_ids if rules is None else
                                              [r for r in self.rule_ids if r in rules])
            for item in extra:
                constraint = FunctionConstraint(item.holds)
                for name in item.fields:
                    vconstraints[name].append((constraint, item.fields))
        # Unary rules prune before the search starts; pinned fields then come first, so forward
        # checking propagates every pin before any free choice is made.
        for name, cons in vconstraints.items():
            unary = [c for c, fields in cons if len(fields) == 1]
            if unary:
                dom = domains[name]
                for value in list(dom):
                    if not all(c((name,), domains, {name: value}) for c in unary):
                        dom.remove(value)
                if not dom:
                    return None
                vconstraints[name] = [(c, f) for c, f in cons if len(f) != 1]
        if order is not None:
            fixed = [n for n in order if len(domains[n]) == 1]
            search_order: Sequence[str] | None = fixed + [n for n in order if len(domains[n]) != 1]
        else:
            search_order = None
        solver = _Search(search_order, ranker, budget or DEFAULT_BUDGET, task, trace)
        result: Assignment | None = solver.getSolution(domains, None, vconstraints)
        return result

    def satisfiable(
        self,
        pins: Mapping[str, Scalar],
        *,
        without_rules: Collection[str] = (),
        extra: Sequence[Extra] = (),
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        task: str = "checking a request",
    ) -> Assignment | None:
        """A witness that `pins` can hold under the rules (minus `without_rules`), or None."""
        rules = None if not without_rules else [r for r in self.rule_ids if r not in without_rules]
        return self.solve(pins, rules=rules, extra=extra, allowed=allowed, task=task)

    def solutions(
        self,
        pins: Mapping[str, Scalar],
        *,
        rules: Collection[str] | None = None,
        allowed: Mapping[str, Collection[Scalar]] | None = None,
        budget: int | None = None,
    ) -> Iterator[Assignment]:
        """Every solution under `pins` (for counting, tests and brute-force checks)."""
        domains = {
            name: Domain([pins[name]] if name in pins else
                         [v for v in values if allowed is None or name not in allowed
                          or v in allowed[name]])
            for name, values in self.domains.items()
        }
        if any(not d for d in domains.values()):
            return iter(())
        vconstraints = self._vconstraints(self.rule_ids if rules is None else
                                          [r for r in self.rule_ids if r in rules])
        solver = _Search(None, None, budget or DEFAULT_BUDGET, "enumerating solutions", None)
        return solver.getSolutionIter(domains, None, vconstraints)


def _constraint(cond: Condition) -> Any:
    holds = cond.holds

    def check(*values: Scalar) -> bool:
        return holds(values)

    return FunctionConstraint(check)


_COMPILED: dict[str, CompiledPack] = {}


def compile_pack(pack: Pack) -> CompiledPack:
    """The compiled form of a pack, cached by the pack's content digest."""
    key = pack.digest or str(id(pack))
    compiled = _COMPILED.get(key)
    if compiled is None or (compiled.pack is not pack and not pack.digest):
        compiled = CompiledPack(pack)
        _COMPILED[key] = compiled
    return compiled
