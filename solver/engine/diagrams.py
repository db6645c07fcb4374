"""Exact counting over rule diagrams (`DiagramCounter`), what `confsolve count` uses on packs of
up to a few hundred fields; `solver.engine.modelcounter` stays the counter of lint and diff
(projected counts, extra checks) and of packs too large to compile here.

Each hard rule is compiled once per pack into a reduced multi-valued decision diagram over its own
fields (`Diagrams`: nodes hash-consed in one table, so equal functions are one node id), in one
global field order: the reverse of a min-fill elimination order of the rules' primal graph, which
puts the fields that tie the pack together (platform, GPU, model, attention backends) first, with
the field whose value leaves the fewest rules open moved to the front (`countroot.first_field`).
A count is a search that records nothing but counts: a component is the set of rule residuals
(diagram nodes) still open, and its count is cached under that set, which is canonical (two
branches that leave the same rules saying the same things share one entry, whatever values led
there; d4's "decision-DNNF with component caching", with residuals that cost a dict lookup).
It branches on a field a one-field residual forces, else on the first field of the order the
component reads, over the values no one-field residual rules out; after each branch the residuals
split into independent components again (the grouping of a set of supports is kept, and a part
that does not read the branched field is counted once for all its values). A component over one
field is counted by and-ing its residuals' value masks, and one over two fields by the masks of
the second field each value of the first leaves, without a component per value.

Measured (benchmarks/README.md "Count", rounds countfast and perfcount): cuda + sm100 +
DeepSeek-V3 0.11 s quiet where `ModelCounter` (condition evaluation in the search) needs 2.55 s;
`platform=cuda` and the whole SGLang pack, which `ModelCounter` does not finish in 60 s, 5.5-6.4 s
and 9.5-10.5 s CPU at load 14-15 (5.7 s and 13.7 s at load 2 before round perfcount).

Imports the standard library, `solver.engine.countlimit`, `solver.engine.countroot` (the field
branched on first), `solver.engine.valueclasses` (what a whole expansion branches on),
`solver.pack.expr` (the condition language: a rule's leaves are parsed by it) and `solver.values`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver.engine.countlimit import FIELDS_PER_STEP, CountLimitReached, Limit, Progress, StepMeter
from solver.engine.countroot import first_field
from solver.engine.valueclasses import value_classes
from solver.model import given_key
from solver.pack import syntax
from solver.pack.expr import Condition
from solver.pack.marks import given_atoms, read_key, value_read
from solver.values import same

if TYPE_CHECKING:
    from solver.model import Field, Scalar

__all__ = ["DiagramCounter", "Diagrams", "TooLarge", "elimination_order"]

# Expansion steps (condition evaluations) a diagram may take before the pack is left to
# `ModelCounter` (`TooLarge`): a whole condition (one without text) of the SGLang pack takes up to
# ~1 million; a leaf of one built from text (a comparison over one to three fields) a few dozen,
# so a leaf gets far less: a hostile product of wide fields stops within ~0.5 s.
RULE_EXPANSION_BUDGET = 4_000_000
LEAF_EXPANSION_BUDGET = 200_000
# Fields beyond which the pack is not compiled (min-fill is quadratic and not metered: 0.8 s at
# 200 synthetic fields, 3.1 s at 300): bigger packs, the synthetic ones of thousands of fields
# among them, are counted by `ModelCounter`, whose bounds benchmarks/hostile.py pins.
MAX_FIELDS = 200
# Component counts kept per counter; past it the table is emptied (entries are pure functions of
# their keys, so only time is lost). ~0.5 KB each.
CACHE_ENTRIES = 2_000_000


class TooLarge(Exception):
    """The pack is not compiled here: a rule's diagram, or the pack, is past the budget."""


def elimination_order(domains: Mapping[str, Sequence[Any]], scopes: Sequence[Sequence[str]]) -> list[str]:
    """A min-fill elimination order of the primal graph (fields linked when a scope holds both).

    Ties go to the field with the fewest rules per value, then to the earlier field: the last
    dozen fields eliminated form one clique, which min-fill leaves in any order, and the count
    branches on them first. Measured on the SGLang pack (CPU, load 4-5): ties by neighbours
    then position, 6.1 s for cuda + sm90, 52 s for `platform=cuda`; by rules per value 1.4 s
    and 6.3 s (random tie-breaks ranged from 0.9 to 10.6 s on cuda + sm90)."""
    links: dict[str, set[str]] = {name: set() for name in domains}
    uses: dict[str, int] = dict.fromkeys(domains, 0)
    for scope in scopes:
        for name in scope:
            links[name].update(n for n in scope if n != name)
            uses[name] += 1
    rank = {name: (uses[name] / max(len(domains[name]), 1), at) for at, name in enumerate(domains)}
    order: list[str] = []

    def fill(name: str) -> int:
        near = list(links[name])
        return sum(1 for i, a in enumerate(near) for b in near[i + 1 :] if b not in links[a])

    while links:
        name = min(links, key=lambda n: (fill(n), rank[n]))
        near = links.pop(name)
        for other in near:
            links[other].discard(name)
            links[other] |= near - {other}
        order.append(name)
    return order


class Diagrams:
    """Reduced multi-valued decision diagrams over `order`, hash-consed: node 0 is false, 1 true;
    any other node is (level, one child per value of that level's field), never with all children
    equal, so a node id stands for one function and `support` is exactly the fields it reads."""

    def __init__(self, order: Sequence[str], domains: Mapping[str, Sequence[Any]]) -> None:
        self.order = list(order)
        self.level = {name: at for at, name in enumerate(self.order)}
        self.domains = [tuple(domains[name]) for name in self.order]
        bottom = len(self.order)
        self.nodes: list[tuple[int, tuple[int, ...]]] = [(bottom, ()), (bottom, ())]
        self.support: list[int] = [0, 0]  # per node, the levels it reads as bits
        self._unique: dict[tuple[int, tuple[int, ...]], int] = {}
        self._restricted: dict[tuple[int, int, int], int] = {}
        self._applied: dict[tuple[str, int, int], int] = {}
        self.lock = threading.Lock()  # node ids are handed out one at a time

    def node(self, level: int, kids: tuple[int, ...]) -> int:
        first = kids[0]
        if all(k == first for k in kids):
            return first
        key = (level, kids)
        found = self._unique.get(key)
        if found is None:
            found = self._unique[key] = len(self.nodes)
            self.nodes.append(key)
            bits = 1 << level
            for kid in set(kids):
                bits |= self.support[kid]
            self.support.append(bits)
        return found

    def restrict(self, u: int, level: int, index: int) -> int:
        """`u` with the field at `level` fixed to its `index`-th value."""
        at, kids = self.nodes[u]
        if at == level:
            return kids[index]
        if not (self.support[u] >> level) & 1:
            return u
        key = (u, level, index)
        found = self._restricted.get(key)
        if found is None:
            found = self._restricted[key] = self.node(
                at, tuple([self.restrict(k, level, index) for k in kids])
            )
        return found

    def first(self, name: str, roots: Sequence[int]) -> tuple[Diagrams, list[int]]:
        """The diagrams of `roots` in this order with `name` moved to the front: a node that does
        not read it keeps its shape (the other fields keep their relative order), one that does
        becomes a node on `name` over its restrictions (a pass over the nodes, not a rebuild)."""
        at = self.level[name]
        order = [name, *(n for n in self.order if n != name)]
        other = Diagrams(order, {n: self.domains[self.level[n]] for n in order})
        moved = {0: 0, 1: 1}

        def shifted(u: int) -> int:  # `u` reads no `name`
            found = moved.get(u)
            if found is None:
                level, kids = self.nodes[u]
                found = moved[u] = other.node(level + 1 if level < at else level, tuple(map(shifted, kids)))
            return found

        def lifted(u: int) -> int:
            if not (self.support[u] >> at) & 1:
                return shifted(u)
            return other.node(
                0, tuple(shifted(self.restrict(u, at, i)) for i in range(len(self.domains[at])))
            )

        return other, [lifted(u) for u in roots]

    def scratch(self) -> Diagrams:
        """A copy whose tables are its own: what it restricts adds no node here (a counter's
        records follow node ids, so a look-ahead on the counter's own diagrams would change the
        bytes of its compiled count)."""
        other = copy.copy(self)
        other.nodes, other.support = list(self.nodes), list(self.support)
        other._unique, other._restricted = dict(self._unique), dict(self._restricted)
        other._applied, other.lock = dict(self._applied), threading.Lock()
        return other

    def forced(self, u: int) -> tuple[int, int] | None:
        """(level, value index) when `u` reads one field and allows one value of it, else None
        (what a count fixes next without branching)."""
        bits = self.support[u]
        if not bits or bits & (bits - 1):
            return None
        kids = self.nodes[u][1]  # (terminals: one field)
        return (bits.bit_length() - 1, kids.index(1)) if kids.count(1) == 1 else None

    def unary(self, name: str, keep: Sequence[bool]) -> int:
        """The one-field function true on the values `keep` marks."""
        return self.node(self.level[name], tuple(int(k) for k in keep))

    def rule(self, check: Condition, budget: int = RULE_EXPANSION_BUDGET) -> int:
        """The diagram of `check`: its fields expanded in the global order, cut short wherever
        the check's three-valued evaluation already decides, each class of values the check
        cannot tell apart (`value_classes`) expanded once, and once every field compared with
        another is known, each residual the check leaves expanded once (raises `TooLarge` past
        `budget`, which meters the classes' and residuals' evaluations too)."""
        fields = check.fields
        order = sorted(fields, key=self.level.__getitem__)
        at_arg = [fields.index(name) for name in order]
        levels = [self.level[name] for name in order]
        classes = value_classes(check, {name: self.domains[self.level[name]] for name in fields})
        holds, partial, three_valued = check.holds, check.partial, check.three_valued
        known: dict[str, Any] = {}
        row: list[Any] = [None] * len(fields)
        spent = 0
        # From the depth where every field compared with another is known on, the condition says
        # what its residual key says: expansions with one key share one sub-diagram.
        related = [depth for depth, name in enumerate(order) if name in classes.related]
        settled = max(related) + 1 if related else -1
        residuals: dict[tuple[Any, ...], int] = {}

        def expand(depth: int) -> int:
            nonlocal spent
            spent += 1
            if spent + classes.evaluations > budget:
                raise TooLarge(f"a rule over {', '.join(fields)} has too many combinations to compile")
            if three_valued and depth:
                verdict = partial(known)
                if verdict is not None:
                    return int(verdict)
            if depth == len(order):
                return int(bool(holds(tuple(row))))
            if depth == settled:
                key = classes.residual(known)
                found = residuals.get(key)
                if found is None:
                    found = residuals[key] = branch(depth)
                return found
            return branch(depth)

        def branch(depth: int) -> int:
            name, level, arg = order[depth], levels[depth], at_arg[depth]
            first = classes.at(name, known)
            kids: list[int] = []
            for at, value in enumerate(self.domains[level]):
                if first is not None and first[at] != at:
                    kids.append(kids[first[at]])  # a value of a class expanded already
                    continue
                known[name] = value
                row[arg] = value
                kids.append(expand(depth + 1))
            del known[name]
            return self.node(level, tuple(kids))

        return expand(0)

    def apply(self, op: str, u: int, v: int) -> int:
        """`u and v` / `u or v` (`op` "and" / "or"), memoised."""
        absorbing, neutral = (0, 1) if op == "and" else (1, 0)
        if u == absorbing or v == absorbing:
            return absorbing
        if u in (neutral, v):
            return v
        if v == neutral:
            return u
        if u > v:
            u, v = v, u
        key = (op, u, v)
        found = self._applied.get(key)
        if found is None:
            (lu, ku), (lv, kv) = self.nodes[u], self.nodes[v]
            if lu == lv:
                kids = [self.apply(op, a, b) for a, b in zip(ku, kv, strict=True)]
            elif lu < lv:
                kids = [self.apply(op, a, v) for a in ku]
            else:
                kids = [self.apply(op, u, b) for b in kv]
            found = self._applied[key] = self.node(min(lu, lv), tuple(kids))
        return found

    def negate(self, u: int) -> int:
        if u < 2:
            return 1 - u
        found = self._applied.get(("not", u, u))
        if found is None:
            level, kids = self.nodes[u]
            found = self._applied[("not", u, u)] = self.node(level, tuple(self.negate(k) for k in kids))
        return found

    def condition(
        self, cond: Condition, fields: Mapping[str, Field], sets: Mapping[str, Sequence[Scalar]]
    ) -> int:
        """The diagram of a parsed condition built from its text: each comparison (or other
        leaf) is compiled alone by the condition language and expanded over its own one or two
        fields, and `and` / `or` / `not` combine them (a rule over four 25-valued fields costs
        its leaves, not 25^4 evaluations). A condition without text is expanded as a whole."""
        if not cond.text:
            return self.rule(cond)
        import ast

        from solver.pack.expr import parse_node

        def build(node: ast.expr) -> int:
            if isinstance(node, ast.BoolOp):
                parts = [build(v) for v in node.values]
                op = "and" if isinstance(node.op, ast.And) else "or"
                out = parts[0]
                for part in parts[1:]:
                    out = self.apply(op, out, part)
                return out
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                return self.negate(build(node.operand))
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
                atom = given_key(node.args[0].id)  # `given(FIELD)` as a two-valued field, when
                if atom in self.level:  # the order has one (a compile shared by given() copies)
                    return self.unary(atom, (False, True))
            read = value_read(node, sets)
            if read is not None and read_key(read) in self.level:  # `given(FIELD) == VALUE` too
                return self.unary(read_key(read), (False, True))
            return self.rule(parse_node(node, fields, sets), LEAF_EXPANSION_BUDGET)

        return build(syntax.expression(cond.text).body)


def _compiled(
    order: Sequence[str],
    domains: Mapping[str, Sequence[Any]],
    checks: Sequence[Condition],
    fields: Mapping[str, Field] | None,
    sets: Mapping[str, Sequence[Scalar]] | None,
) -> tuple[Diagrams, list[int]]:
    """The rules' diagrams in `order` (from their text when `fields` is given) and their roots."""
    dd = Diagrams(order, domains)
    if fields is None:
        return dd, [dd.rule(check) for check in checks]
    return dd, [dd.condition(check, fields, sets or {}) for check in checks]


def _partition(reads: set[int]) -> dict[int, int]:
    """Each set of fields in `reads` -> the union of the sets it overlaps, transitively (the
    fields of its component)."""
    groups: list[int] = []
    for bits in reads:
        for other in [g for g in groups if g & bits]:
            groups.remove(other)
            bits |= other
        groups.append(bits)
    return {bits: next(g for g in groups if g & bits) for bits in reads}


class DiagramCounter:
    """Counts the assignments of `domains` that satisfy every check, as `ModelCounter.count` does
    (same pins, limit, bounds when cut short); raises `TooLarge` when the pack is not compiled."""

    def __init__(
        self,
        domains: Mapping[str, Sequence[Any]],
        checks: Sequence[Condition],
        *,
        fields: Mapping[str, Field] | None = None,
        sets: Mapping[str, Sequence[Scalar]] | None = None,
    ) -> None:
        if len(domains) > MAX_FIELDS:
            raise TooLarge(f"{len(domains)} fields")
        marks = [given_atoms(c.text, sets or {}) if c.given and c.text else {} for c in checks]
        atoms = [[a for a in found if a in domains] for found in marks]
        order = elimination_order(domains, [[*c.fields, *a] for c, a in zip(checks, atoms, strict=True)])
        order.reverse()  # the fields eliminated last tie the most together: branch on them first
        self.diagrams, self.roots = _compiled(order, domains, checks, fields, sets)
        first = first_field(self.diagrams, self.roots)
        if first != order[0]:  # branch on it first
            self.diagrams, self.roots = self.diagrams.first(first, self.roots)
        self.sizes = [len(d) for d in self.diagrams.domains]
        self._cache: dict[tuple[int, ...], int] = {}
        self._masks: dict[int, int] = {0: 0, 1: -1}  # one-field residuals and terminals
        self._partitions: dict[frozenset[int], dict[int, int]] = {}
        self._meter: StepMeter  # (each count sets its own)
        self.steps = 0

    def fresh(self) -> DiagramCounter:
        """A counter over the same compiled rules with no component counts kept (what one
        `count` call uses: its steps and budget do not depend on what was counted before)."""
        other = copy.copy(self)
        other._cache = {}
        other.steps = 0
        return other

    def count(
        self,
        pins: Mapping[str, Any] | None = None,
        *,
        limit: Limit | None = None,
        progress: Progress | None = None,
    ) -> int:
        """The number of assignments that keep `pins` and satisfy every check.

        Raises `CountLimitReached` when `limit` runs out, with exact `lower` and `upper` bounds."""
        with self.diagrams.lock:  # one count at a time: the meter and the tables are shared
            return self._count(pins, limit, progress)

    def _count(self, pins: Mapping[str, Any] | None, limit: Limit | None, progress: Progress | None) -> int:
        dd = self.diagrams
        residuals = [u for u in self.roots if u != 1]
        for name, pin in (pins or {}).items():
            keep = [same(v, pin) for v in dd.domains[dd.level[name]]]
            residuals.append(dd.unary(name, keep))
        self._meter = StepMeter(limit or Limit(), progress)
        if len(self._cache) > CACHE_ENTRIES:
            self._cache.clear()
        try:
            if 0 in residuals:
                return 0
            return self._product(self._split(residuals), (1 << len(self.sizes)) - 1)
        finally:
            self.steps += self._meter.steps

    # -- the search ------------------------------------------------------------------------
    def _span(self, bits: int) -> int:
        """Every combination of the fields in `bits` (an upper bound of their count)."""
        total = 1
        while bits:
            low = bits & -bits
            total *= self.sizes[low.bit_length() - 1]
            bits ^= low
        return total

    def _split(self, residuals: list[int], base: dict[int, list[int]] | None = None) -> dict[int, list[int]]:
        """The residuals grouped into independent components (fields read -> residuals), joined
        to the components `base` already holds; a base component no residual reads into is
        handed back as its own list (`_product` counts it once per branch point)."""
        support = self.diagrams.support
        reads = {support[u] for u in residuals}
        if base:
            reads.update(base)
        key = frozenset(reads)
        part = self._partitions.get(key)
        if part is None:
            if len(self._partitions) > CACHE_ENTRIES:
                self._partitions.clear()
            part = self._partitions[key] = _partition(reads)
        groups: dict[int, list[int]] = {}
        for u in residuals:
            bits = part[support[u]]
            members = groups.get(bits)
            if members is None:
                groups[bits] = [u]
            else:
                members.append(u)
        for bits, members in (base or {}).items():
            joined = part[bits]
            if joined == bits and bits not in groups:
                groups[bits] = members  # untouched
            elif joined in groups:
                groups[joined] += members
            else:
                groups[joined] = list(members)
        return groups

    def _product(
        self,
        components: dict[int, list[int]],
        fields: int,
        apart: dict[int, list[int]] | None = None,
        known: dict[int, int] | None = None,
    ) -> int:
        """The count of independent `components` (`_split`) over the fields `fields` (those no
        residual reads are free). `known`: the counts of the components of `apart` that `_split`
        handed back untouched (the same for every value of a branch), filled in as counted."""
        groups = list(components.items())
        read = 0
        for bits, _ in groups:
            read |= bits
        total = self._span(fields & ~read)
        for at, (bits, members) in enumerate(groups):
            try:
                shared = apart is not None and known is not None and apart.get(bits) is members
                sub = known.get(bits) if shared and known is not None else None
                if sub is None:
                    one_field = not bits & (bits - 1)
                    sub = self._one_field(members) if one_field else self._component(members, bits)
                    if shared and known is not None:
                        known[bits] = sub
            except CountLimitReached as stop:
                lower, upper = (0, self._span(bits)) if stop.upper is None else (stop.lower, stop.upper)
                rest = 1
                for other, _ in groups[at + 1 :]:
                    rest *= self._span(other)
                last = at == len(groups) - 1
                raise stop.bounded(total * lower if last else 0, total * upper * rest) from None
            if sub == 0:
                return 0
            total *= sub
        return total

    def _mask(self, u: int) -> int:
        """The values a one-field residual allows, as bits by value index."""
        found = self._masks.get(u)
        if found is None:
            found = self._masks[u] = sum(1 << at for at, kid in enumerate(self.diagrams.nodes[u][1]) if kid)
        return found

    def _one_field(self, residuals: list[int]) -> int:
        """The count of a component over one field: the values every residual allows (`_mask`
        of the terminals: 0 allows none, 1 all)."""
        allowed = -1
        for u in residuals:
            allowed &= self._mask(u)
        return allowed.bit_count()

    def _choose(self, residuals: list[int], fields: int) -> int:
        """A field a one-field residual pins to one value, else the first field of the order."""
        support = self.diagrams.support
        for u in residuals:
            bits = support[u]
            if not bits & (bits - 1) and self._mask(u).bit_count() == 1:
                return bits.bit_length() - 1
        return (fields & -fields).bit_length() - 1

    def _classify(
        self, residuals: list[int], level: int
    ) -> tuple[int, list[tuple[int, ...]], list[int], list[int]]:
        """What branching on `level` does to each residual of a component: the values no
        one-field residual on it rules out (bits), the children of those that branch on it at
        their top, those that read it deeper (to restrict), and those that do not read it."""
        nodes, support, bit = self.diagrams.nodes, self.diagrams.support, 1 << level
        live = (1 << self.sizes[level]) - 1
        rows, deep, rest = [], [], []
        for u in residuals:
            reads = support[u]
            if reads == bit:
                live &= self._mask(u)
            elif nodes[u][0] == level:
                rows.append(nodes[u][1])  # branch at their top
            elif reads & bit:
                deep.append(u)
            else:
                rest.append(u)
        return live, rows, deep, rest

    def _component(self, residuals: list[int], fields: int) -> int:
        key = tuple(sorted(set(residuals)))  # a quarter of a frozenset's memory
        found = self._cache.get(key)
        if found is not None:
            return found
        level = self._choose(residuals, fields)
        rest = fields & ~(1 << level)
        restrict = self.diagrams.restrict
        live, rows, deep, rest_residuals = self._classify(residuals, level)
        two_fields = rest and not rest & (rest - 1)
        last = 0  # with two fields, the values of the other one its own residuals allow
        if two_fields:
            last = (1 << self.sizes[rest.bit_length() - 1]) - 1
            for u in rest_residuals:
                last &= self._mask(u)
        apart = self._split(rest_residuals)  # the same for every value
        known: dict[int, int] = {}  # their counts
        cost = 1 + fields.bit_count() // FIELDS_PER_STEP  # by size, as ModelCounter's branches
        total = 0
        counted: dict[tuple[int, ...], int] = {}  # values that leave the same residuals count alike
        left = live.bit_count()
        while live:
            index = (live & -live).bit_length() - 1
            live &= live - 1
            left -= 1
            try:
                self._meter.tick(cost)
                kids = [row[index] for row in rows]
                if deep:
                    kids += [restrict(u, level, index) for u in deep]
                if two_fields:  # one field left: count the values of it every residual allows
                    allowed = last
                    for kid in kids:
                        allowed &= self._mask(kid)
                    total += allowed.bit_count()
                    continue
                if 0 in kids:
                    continue
                same = tuple(kids)
                found = counted.get(same)
                if found is None:
                    found = counted[same] = self._product(
                        self._split([k for k in kids if k != 1], apart), rest, apart, known
                    )
                total += found
            except CountLimitReached as stop:
                # Exact so far: the values counted, the bounds of the one cut short (every
                # combination if it had not started), and every combination for each live value
                # left (the values a one-field residual rules out count nothing).
                lower, upper = (0, self._span(rest)) if stop.upper is None else (stop.lower, stop.upper)
                raise stop.bounded(total + lower, total + upper + self._span(rest) * left) from None
        self._cache[key] = total
        return total
