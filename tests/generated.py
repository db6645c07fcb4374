"""Small random packs for the property tests, and a brute-force oracle that judges the engine.

`cases()` is a hypothesis strategy: a pack of 2-8 fields (facts and options; str, int and bool
domains of 2-4 values drawn from shared pools, so field-to-field comparisons meet), named sets,
hard rules of every form (`when`/`require`, `forbid`, unary to many-field, field-to-field, `in`
lists and sets, `not`, `or`), warn rules, adjustments, preferences (`when`, `prefer`, `same_as`),
`depends_on`, and a request (user pins on options, fact pins on facts, strict or not).

Conditions are generated as trees of our own: the text the engine parses is rendered from the tree,
and the oracle evaluates the tree itself, so `solver.pack.expr` is never its own judge. The oracle
enumerates the whole cartesian product once per pack and answers every question from it: is a
request satisfiable (under all rules or a subset), which adjustments fire, which configuration is
the lexicographic optimum in graph order. Of the engine it borrows only the field order
(`solver.pack.graph.analyse`) and the `Pack` model it builds.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar

from hypothesis import strategies as st

from solver.model import Field, Pack, Preference, Rule, Scalar
from solver.pack.graph import analyse

__all__ = [
    "KNOWN_BUGS",
    "Case",
    "Cond",
    "Expected",
    "Oracle",
    "PackSpec",
    "cases",
    "extra_rules",
    "packs",
]

# Engine bugs the laws step around until they are fixed: the generator leaves the construct out,
# or the law skips the check. Each names the strict xfail test (tests/test_engine.py or
# tests/test_laws_trust.py) that shows the bug; delete the entry when that test passes (strict
# xfail makes it fail then).
KNOWN_BUGS: dict[str, str] = {}

STR_POOL: tuple[str, ...] = ("p", "q", "r", "s")
INT_POOL: tuple[int, ...] = (-1, 0, 1, 2, 4, 8)
MAX_ROWS = 1024  # the cartesian product the oracle enumerates, at most

T = TypeVar("T")
Row = tuple[Scalar, ...]
Known = Mapping[str, Scalar]

# --- conditions: a tree we render to text and evaluate ourselves --------------------------------


def _lit(value: Scalar) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda x, y: x in y,
    "not in": lambda x, y: x not in y,
}


@dataclass(frozen=True)
class Cond:
    """A condition tree: `cmp` (field op literal / field / list / set), `prod` (`name * other op
    third`, three integer fields: the shape of a GPU-count bound), `flag`, `const`, `not`,
    `and`, `or`. Evaluated two-valued on full rows and three-valued (None = unknown) on partial
    assignments, with Kleene's `and`/`or`."""

    kind: str
    op: str = ""
    name: str = ""
    other: str = ""  # the right-hand field of a field-to-field comparison
    value: Scalar | tuple[Scalar, ...] | None = None
    set_name: str = ""
    flipped: bool = False  # render the literal on the left (`'p' == f`)
    parts: tuple[Cond, ...] = ()
    third: str = ""  # `prod`: the field the product is compared with

    def text(self) -> str:
        if self.kind == "given":
            return f"given({self.name})"
        if self.kind == "typed":  # the value typed: `given(F) == V` or `given(F) in [V, ...]`
            if isinstance(self.value, tuple):
                return f"given({self.name}) in [" + ", ".join(_lit(v) for v in self.value) + "]"
            assert self.value is not None
            return f"given({self.name}) == {_lit(self.value)}"
        if self.kind == "prod":
            return f"{self.name} * {self.other} {self.op} {self.third}"
        if self.kind == "cmp":
            if self.other:
                right = self.other
            elif self.set_name:
                right = self.set_name
            elif isinstance(self.value, tuple):
                right = "[" + ", ".join(_lit(v) for v in self.value) + "]"
            else:
                assert self.value is not None
                right = _lit(self.value)
            if self.flipped:
                return f"{right} {self.op} {self.name}"
            return f"{self.name} {self.op} {right}"
        if self.kind == "flag":
            return self.name
        if self.kind == "const":
            return repr(self.value)
        if self.kind == "not":
            inner = self.parts[0]
            return f"not {inner.text()}" if inner.kind in ("flag", "cmp") else f"not ({inner.text()})"
        joiner = f" {self.kind} "
        return joiner.join(
            p.text() if p.kind in ("cmp", "flag", "not") else f"({p.text()})" for p in self.parts
        )

    def reads(self) -> set[str]:
        if self.kind in ("given", "typed"):
            return set()  # whether the request gives a field: no value of a configuration
        own = {n for n in (self.name, self.other, self.third) if n}
        return own.union(*(p.reads() for p in self.parts))

    def given_names(self) -> set[str]:
        own = {self.name} if self.kind in ("given", "typed") else set()
        return own.union(*(p.given_names() for p in self.parts))

    def eval3(self, known: Known) -> bool | None:
        if self.kind == "const":
            return bool(self.value)
        if self.kind in ("given", "typed"):  # the oracle reads no request marks: the pack as loaded
            return False
        if self.kind == "flag":
            return None if self.name not in known else known[self.name] is True
        if self.kind == "prod":
            if not {self.name, self.other, self.third} <= set(known):
                return None
            return _OPS[self.op](known[self.name] * known[self.other], known[self.third])
        if self.kind == "cmp":
            if self.name not in known or (self.other and self.other not in known):
                return None
            right = known[self.other] if self.other else self.value
            return _OPS[self.op](known[self.name], right)
        if self.kind == "not":
            inner = self.parts[0].eval3(known)
            return None if inner is None else not inner
        results = [p.eval3(known) for p in self.parts]
        decisive = self.kind == "or"  # True decides an `or`, False decides an `and`
        if decisive in results:
            return decisive
        return None if None in results else not decisive

    def compile(self, index: Mapping[str, int]) -> Callable[[Row], bool]:
        """A fast two-valued evaluator over full rows (the oracle's hot path)."""
        if self.kind in ("given", "typed"):
            return lambda row: False
        if self.kind == "const":
            const = bool(self.value)
            return lambda row: const
        if self.kind == "flag":
            i = index[self.name]
            return lambda row: row[i] is True
        if self.kind == "prod":
            i, j, k, fn = index[self.name], index[self.other], index[self.third], _OPS[self.op]
            return lambda row: fn(row[i] * row[j], row[k])
        if self.kind == "cmp":
            i, fn = index[self.name], _OPS[self.op]
            if self.other:
                j = index[self.other]
                return lambda row: fn(row[i], row[j])
            right = self.value
            return lambda row: fn(row[i], right)
        parts = [p.compile(index) for p in self.parts]
        if self.kind == "not":
            inner = parts[0]
            return lambda row: not inner(row)
        if self.kind == "and":
            return lambda row: all(p(row) for p in parts)
        return lambda row: any(p(row) for p in parts)


# --- pack specifications ---------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: Literal["fact", "option"]
    domain: tuple[Scalar, ...]
    depends_on: tuple[str, ...] = ()
    search: bool = True  # False: the launcher's own chain only (constraints/README.md)


@dataclass(frozen=True)
class RuleSpec:
    id: str
    body: Cond
    when: Cond | None = None
    forbid: bool = False
    severity: str = "error"
    adjusts: str | None = None
    adjust_to: tuple[Scalar, ...] = ()

    def reads(self) -> set[str]:
        return self.body.reads() | (self.when.reads() if self.when else set())

    def holds3(self, known: Known) -> bool | None:
        """`not when or require` (`forbid`: `not when or not body`), three-valued."""
        body = self.body.eval3(known)
        if body is not None and self.forbid:
            body = not body
        when = True if self.when is None else self.when.eval3(known)
        if when is False or body is True:
            return True
        return None if when is None or body is None else False

    def model(self) -> Rule:
        key = "forbid" if self.forbid else "require"
        data: dict[str, Any] = {
            "id": self.id,
            key: self.body.text(),
            "because": f"because {self.id}",
            "source": "generated",
            "severity": self.severity,
        }
        if self.when is not None:
            data["when"] = self.when.text()
        if self.adjusts is not None:
            data["adjusts"] = self.adjusts
            data["adjust_to"] = self.adjust_to
        return Rule(**data)


@dataclass(frozen=True)
class PrefSpec:
    id: str
    field: str
    prefer: tuple[Scalar, ...] = ()
    when: Cond | None = None
    same_as: str | None = None

    def model(self) -> Preference:
        return Preference(
            id=self.id,
            field=self.field,
            prefer=self.prefer,
            same_as=self.same_as,
            when=self.when.text() if self.when else None,
            because=f"because {self.id}",
            source="generated",
        )


@dataclass(frozen=True)
class PackSpec:
    fields: tuple[FieldSpec, ...]
    sets: tuple[tuple[str, tuple[Scalar, ...]], ...]
    rules: tuple[RuleSpec, ...]
    prefs: tuple[PrefSpec, ...]

    def with_rule(self, rule: RuleSpec) -> PackSpec:
        return PackSpec(self.fields, self.sets, (*self.rules, rule), self.prefs)

    @cached_property
    def pack(self) -> Pack:
        """The pack as the engine sees it. Its digest is its content, so the engine's caches never
        mix two packs up; the `:` in it keeps them in memory (solver.pack.cache writes only
        alphanumeric digests to disk), so a long run leaves no files behind."""
        pack = Pack(
            name="generated",
            version="1",
            fields={
                f.name: Field(
                    name=f.name, kind=f.kind, domain=f.domain, depends_on=f.depends_on, search=f.search
                )
                for f in self.fields
            },
            rules=tuple(r.model() for r in self.rules),
            preferences=tuple(p.model() for p in self.prefs),
            sets=dict(self.sets),
        )
        digest = hashlib.sha256(pack.model_dump_json().encode()).hexdigest()
        return pack.model_copy(update={"digest": "generated:" + digest})

    def write(self, directory: Path) -> None:
        """The same pack as TOML files (pack.toml, fields.toml, rules.toml)."""

        def val(v: Any) -> str:
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, str):
                return json.dumps(v)
            if isinstance(v, tuple | list):
                return "[" + ", ".join(val(x) for x in v) + "]"
            return str(v)

        def table(header: str, items: Mapping[str, Any]) -> list[str]:
            return [header, *(f"{k} = {val(v)}" for k, v in items.items() if v is not None), ""]

        head = table("[pack]", {"name": "generated", "version": "1", "files": ["fields.toml", "rules.toml"]})
        head += table("[sets]", dict(self.sets)) if self.sets else []
        lines: list[str] = []
        for f in self.fields:
            lines += table(
                f"[field.{f.name}]",
                {
                    "kind": f.kind,
                    "domain": f.domain,
                    "depends_on": f.depends_on or None,
                    "search": None if f.search else False,
                },
            )
        body: list[str] = []
        for rule in self.pack.rules:
            body += table("[[rule]]", rule.model_dump(exclude_defaults=True, exclude={"file"}))
        for pref in self.pack.preferences:
            body += table("[[preference]]", pref.model_dump(exclude_defaults=True, exclude={"file"}))
        (directory / "pack.toml").write_text("\n".join(head))
        (directory / "fields.toml").write_text("\n".join(lines))
        (directory / "rules.toml").write_text("\n".join(body))


@dataclass(frozen=True)
class Case:
    """A generated pack and one request against it."""

    spec: PackSpec
    options: dict[str, Scalar]
    facts: dict[str, Scalar]
    strict: bool

    @property
    def pack(self) -> Pack:
        return self.spec.pack

    def pins(self) -> dict[str, tuple[Scalar, str]]:
        return {
            **{n: (v, "user") for n, v in self.options.items()},
            **{n: (v, "fact") for n, v in self.facts.items()},
        }

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis prints this
        printer.text(repr(self))

    def __repr__(self) -> str:
        pack = self.pack
        lines = ["Case("]
        lines += [
            f"  field {f.name} {f.kind} {list(f.domain)}"
            + (f" depends_on={list(f.depends_on)}" if f.depends_on else "")
            + ("" if f.search else " search=false")
            for f in self.spec.fields
        ]
        lines += [f"  set {n} = {list(v)}" for n, v in self.spec.sets]
        for r in pack.rules:
            extra = f" adjusts={r.adjusts} to={list(r.adjust_to)}" if r.adjusts else ""
            lines.append(
                f"  rule {r.id} [{r.severity}] when={r.when!r} "
                f"{'forbid' if r.forbid else 'require'}={r.forbid or r.require!r}{extra}"
            )
        lines += [
            f"  pref {p.id} {p.field} when={p.when!r} prefer={list(p.prefer)} same_as={p.same_as}"
            for p in pack.preferences
        ]
        lines.append(f"  options={self.options} facts={self.facts} strict={self.strict})")
        return "\n".join(lines)


# --- strategies --------------------------------------------------------------------------------
# Every choice is one integer draw through a cached strategy: building and validating a fresh
# `sampled_from`/`lists` strategy per choice made generation cost more than the whole check.


@cache
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


class _Draw:
    """Cheap choices over one `draw`."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(_ints(lo, hi))

    def chance(self, one_in: int) -> bool:
        return self.integer(0, one_in - 1) == 0

    def pick(self, seq: Sequence[T]) -> T:
        return seq[self.integer(0, len(seq) - 1)]

    def some(self, seq: Sequence[T], lo: int, hi: int) -> list[T]:
        """Distinct members of `seq` in a drawn order, between lo and hi of them."""
        rest = list(seq)
        return [rest.pop(self.integer(0, len(rest) - 1)) for _ in range(self.integer(lo, min(hi, len(rest))))]


def _type_of(domain: Sequence[Scalar]) -> type:
    return type(domain[0])


def _fields(d: _Draw) -> tuple[FieldSpec, ...]:
    count = d.integer(2, 8)
    out: list[FieldSpec] = []
    rows = 1
    for i in range(count):
        kinds: tuple[Literal["fact", "option"], ...] = ("option", "option", "fact")
        kind = d.pick(kinds)
        typ = d.pick(("str", "int", "bool"))
        # Keep the product small enough to enumerate: leave room for 2 values per later field.
        room = MAX_ROWS // (rows * 2 ** (count - i - 1))
        domain: tuple[Scalar, ...]
        if typ == "bool":
            domain = d.pick(((False, True), (True, False)))
        else:
            size = d.integer(2, max(2, min(4, room)))
            domain = tuple(d.some(INT_POOL if typ == "int" else STR_POOL, size, size))
        rows *= len(domain)
        out.append(FieldSpec(name=f"f{i}", kind=kind, domain=domain))
    # depends_on edges follow a random ranking, so they never form a cycle.
    rank = d.some(range(count), count, count)
    with_deps = []
    for i, spec in enumerate(out):
        earlier = [out[j].name for j in range(count) if rank[j] < rank[i]]
        deps = d.some(earlier, 1, 2) if earlier and d.chance(5) else []
        with_deps.append(FieldSpec(spec.name, spec.kind, spec.domain, tuple(deps)))
    return tuple(with_deps)


def _sets(d: _Draw, fields: Sequence[FieldSpec]) -> tuple[tuple[str, tuple[Scalar, ...]], ...]:
    # Built from field domains, so each set fits at least one field (a set's values must all be
    # in the domain of the field it is compared with).
    candidates = [f for f in fields if _type_of(f.domain) is not bool]
    if not candidates:
        return ()
    return tuple((f"S{i}", tuple(d.some(d.pick(candidates).domain, 1, 3))) for i in range(d.integer(0, 2)))


class _Builder:
    """Draws conditions, rules and preferences over one pack's fields and sets."""

    def __init__(
        self,
        d: _Draw,
        fields: Sequence[FieldSpec],
        sets: Sequence[tuple[str, tuple[Scalar, ...]]],
        given_rules: bool = False,
    ) -> None:
        self.given_rules = given_rules
        self.d = d
        self.fields = list(fields)
        self.by_name = {f.name: f for f in fields}
        self.sets = dict(sets)

    def atom(self) -> Cond:
        d = self.d
        f = d.pick(self.fields)
        typ = _type_of(f.domain)
        same_type = [g for g in self.fields if g.name != f.name and _type_of(g.domain) is typ]
        fitting_sets = [n for n, vs in self.sets.items() if all(_member(v, f.domain) for v in vs)]
        forms = ["eq", "eq", "in"]
        forms += ["flag", "flag"] if typ is bool else []
        forms += ["order", "order"] if typ is int else []
        forms += ["field", "field"] if same_type else []
        forms += ["set"] if fitting_sets else []
        forms += ["const"] if "constant-rule" not in KNOWN_BUGS else []
        options = [g.name for g in self.fields if g.kind == "option"]
        forms += ["given", "given", "typed"] if self.given_rules and options else []
        form = d.pick(forms)
        if form == "given":  # a launcher that refuses a value typed, or only typed
            return Cond("given", name=d.pick(options))
        if form == "typed":  # one that reads the value typed (`given(F) == V`), before adjusting
            g = self.by_name[d.pick(options)]
            value = d.pick(g.domain) if d.chance(2) else tuple(d.some(g.domain, 1, 2))
            return Cond("typed", name=g.name, value=value)
        if form == "eq":
            return Cond(
                "cmp", op=d.pick(("==", "!=")), name=f.name, value=d.pick(f.domain), flipped=d.chance(2)
            )
        if form == "in":
            return Cond("cmp", op=d.pick(("in", "not in")), name=f.name, value=tuple(d.some(f.domain, 1, 3)))
        if form == "set":
            name = d.pick(fitting_sets)
            return Cond("cmp", op=d.pick(("in", "not in")), name=f.name, value=self.sets[name], set_name=name)
        if form == "flag":
            return Cond("flag", name=f.name)
        if form == "order":
            return Cond("cmp", op=d.pick(("<", "<=", ">", ">=")), name=f.name, value=d.integer(-2, 9))
        if form == "field":
            ops = ("==", "!=", "<", "<=", ">", ">=") if typ is int else ("==", "!=")
            return Cond("cmp", op=d.pick(ops), name=f.name, other=d.pick(same_type).name)
        return Cond("const", value=d.chance(2))

    def cond(self, depth: int) -> Cond:
        shape = self.d.pick(("atom", "atom", "atom", "not", "and", "or")) if depth else "atom"
        if shape == "atom":
            return self.atom()
        if shape == "not":
            return Cond("not", parts=(self.cond(depth - 1),))
        return Cond(shape, parts=tuple(self.cond(depth - 1) for _ in range(self.d.integer(2, 3))))

    def rule(self, rid: str, allow_adjust: bool = True) -> RuleSpec:
        d = self.d
        when = self.cond(1) if d.chance(2) else None
        body = self.cond(2)
        forbid = d.chance(4)
        severity = "warn" if d.chance(7) else "error"
        adjusts: str | None = None
        adjust_to: tuple[Scalar, ...] = ()
        options = sorted(n for n in body.reads() if self.by_name[n].kind == "option")
        if allow_adjust and severity == "error" and options and d.chance(3):
            adjusts = d.pick(options)
            adjust_to = tuple(d.some(self.by_name[adjusts].domain, 0, 2))
            if adjusts in body.given_names() | (when.given_names() if when else set()):
                adjusts, adjust_to = None, ()  # (an adjustment may not read given() of its target)
        return RuleSpec(
            id=rid,
            body=body,
            when=when,
            forbid=forbid,
            severity=severity,
            adjusts=adjusts,
            adjust_to=adjust_to,
        )

    def pref(self, pid: str) -> PrefSpec:
        d = self.d
        target = d.pick(self.fields)
        when = self.cond(1) if d.chance(2) else None
        same = [
            f.name
            for f in self.fields
            if f.name != target.name and _type_of(f.domain) is _type_of(target.domain)
        ]
        same_as = d.pick(same) if same and d.chance(4) else None
        prefer = d.some(target.domain, 0 if same_as else 1, 3)
        return PrefSpec(id=pid, field=target.name, prefer=tuple(prefer), when=when, same_as=same_as)


def _pack(d: _Draw, given_rules: bool = False) -> PackSpec:
    fields = _fields(d)
    sets = _sets(d, fields)
    build = _Builder(d, fields, sets, given_rules)
    rules = tuple(build.rule(f"r{i}") for i in range(d.integer(0, 8)))
    prefs = tuple(build.pref(f"p{i}") for i in range(d.integer(0, 6)))
    return PackSpec(fields=fields, sets=sets, rules=rules, prefs=prefs)


def _request(d: _Draw, spec: PackSpec) -> tuple[dict[str, Scalar], dict[str, Scalar]]:
    options: dict[str, Scalar] = {}
    facts: dict[str, Scalar] = {}
    for f in spec.fields:
        if d.chance(3):
            (options if f.kind == "option" else facts)[f.name] = d.pick(f.domain)
    return options, facts


@st.composite
def packs(draw: st.DrawFn) -> PackSpec:
    """A random pack (see the module docstring)."""
    return _pack(_Draw(draw))


@st.composite
def cases(
    draw: st.DrawFn, strict: bool | None = None, unsearched: bool = False, given_rules: bool = False
) -> Case:
    """A random pack and a random request against it. `unsearched`: about half the options, and
    about a third of the facts (a model's shape: assumed when not given, never searched), are
    `search = false`. `given_rules`: rules also read `given(OPTION)` (whether the request gives
    it, solver.pack.given, or its typed value: `given(OPTION) == VALUE`), and so may preferences;
    the oracle reads them as false (the pack as loaded): for the laws that judge with the engine's
    own `check` or by brute force over the marks (tests/test_laws_typed.py), not with the oracle."""
    d = _Draw(draw)
    spec = _pack(d, given_rules)
    if unsearched:
        spec = replace(
            spec,
            fields=tuple(
                replace(f, search=False) if d.chance(2 if f.kind == "option" else 3) else f
                for f in spec.fields
            ),
        )
    options, facts = _request(d, spec)
    return Case(spec, options, facts, d.chance(2) if strict is None else strict)


@st.composite
def extra_rules(draw: st.DrawFn, spec: PackSpec, allow_adjust: bool = True) -> RuleSpec:
    """One more rule for `spec`, with an id it does not use yet."""
    return _Builder(_Draw(draw), spec.fields, spec.sets).rule(f"r{len(spec.rules)}", allow_adjust)


# --- the oracle -------------------------------------------------------------------------------


@dataclass
class Step:
    """How the oracle decided one auto field: its ranking, the values still possible, the pick."""

    ranked: list[Scalar]
    origin: dict[Scalar, str]
    possible: list[Scalar]
    value: Scalar
    # Values the preferences ranked above `value` that a warn rule sent to the end: value -> rule.
    flagged: dict[Scalar, str] = field(default_factory=dict)
    # The later fields the warn rules read at one value when ranking (propagation forced them, or
    # a fact nobody gave is assumed so): a flagged rejection may cite them.
    later: dict[str, Scalar] = field(default_factory=dict)


@dataclass
class Expected:
    """What the engine must answer for a request."""

    pins: dict[str, tuple[Scalar, str]]  # after adjustments: field -> (value, source)
    adjusted: dict[str, tuple[Scalar, str]]  # field -> (requested value, rule id), in firing order
    values: dict[str, Scalar] | None  # None: no configuration exists
    steps: dict[str, Step] = field(default_factory=dict)
    first: dict[str, Scalar] = field(default_factory=dict)  # facts assumed first (`Oracle._walk`)


class Oracle:
    """Brute force over the cartesian product of a generated pack's domains."""

    def __init__(self, spec: PackSpec) -> None:
        self.spec = spec
        self.names = [f.name for f in spec.fields]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.domains = {f.name: f.domain for f in spec.fields}
        self.hard = [r for r in spec.rules if r.severity == "error"]
        self.warn = [r for r in spec.rules if r.severity == "warn"]
        self.bit = {r.id: 1 << i for i, r in enumerate(self.hard)}
        self.all_rules = (1 << len(self.hard)) - 1
        self.checks = {r.id: self._holds(r) for r in spec.rules}
        checks = [self.checks[r.id] for r in self.hard]
        self.rows: list[tuple[Row, int]] = []
        for row in itertools.product(*(f.domain for f in spec.fields)):
            broken = 0
            for i, check in enumerate(checks):
                if not check(row):
                    broken |= 1 << i
            self.rows.append((row, broken))
        self.order = analyse(spec.pack).order
        self.kinds = {f.name: f.kind for f in spec.fields}

    def _holds(self, rule: RuleSpec) -> Callable[[Row], bool]:
        body = rule.body.compile(self.index)
        when = rule.when.compile(self.index) if rule.when else None
        forbid = rule.forbid
        return lambda row: (when is not None and not when(row)) or body(row) != forbid

    def holds(self, rule: RuleSpec, values: Known) -> bool:
        return self.checks[rule.id](tuple(values[n] for n in self.names))

    # -- satisfiability ---------------------------------------------------------------------
    def _mask(self, rules: Iterable[str] | None) -> int:
        return self.all_rules if rules is None else sum(self.bit[r] for r in set(rules))

    def solutions(self, pins: Known, rules: Iterable[str] | None = None) -> Iterator[Row]:
        mask = self._mask(rules)
        fixed = [(self.index[n], v) for n, v in pins.items()]
        for row, broken in self.rows:
            if not broken & mask and all(row[i] == v and type(row[i]) is type(v) for i, v in fixed):
                yield row

    def sat(self, pins: Known, rules: Iterable[str] | None = None) -> bool:
        return next(self.solutions(pins, rules), None) is not None

    def possible(self, name: str, pins: Known) -> list[Scalar]:
        """The values of `name` some configuration keeps with `pins` (its own pin left out)."""
        others = {n: v for n, v in pins.items() if n != name}
        seen = {row[self.index[name]] for row in self.solutions(others)}
        return [v for v in self.domains[name] if v in seen]

    # -- adjustments ----------------------------------------------------------------------------
    def _certain(self, when: Cond | None, known: Known) -> bool:
        """`when` holds given `known`: evident from the pins, or true in every configuration."""
        if when is None:
            return True
        evident = when.eval3(known)
        if evident is not None:
            return evident
        return all(when.eval3(dict(zip(self.names, row, strict=True))) for row in self.solutions(known))

    def _violates(self, rule: RuleSpec, known: Known) -> bool:
        """The pinned values break `rule`: evidently, or the request fails and fails only by it."""
        evident = rule.holds3(known)
        if evident is not None:
            return not evident
        rest = [r.id for r in self.hard if r.id != rule.id]
        return not self.sat(known) and self.sat(known, rest)

    def adjust(
        self, pins: dict[str, tuple[Scalar, str]]
    ) -> tuple[dict[str, tuple[Scalar, str]], dict[str, tuple[Scalar, str]]]:
        """Apply declared adjustments to a fixpoint, as constraints/README.md describes: while the
        request fails, the first adjustment (declaration order) whose `when` the other inputs (with
        the launcher's defaults of unset `search = false` options and the assumed values of unset
        `search = false` facts, `assumed_facts`) make certain and whose rule the
        user's value breaks replaces that value by its first `adjust_to` value that works with the
        same launcher defaults (the search may not pick another resource to make it work), else its
        first `adjust_to` value (the request then fails), or unsets it when it names none."""
        pins = dict(pins)
        adjusted: dict[str, tuple[Scalar, str]] = {}
        while not self.sat({n: v for n, (v, _) in pins.items()}):
            for rule in self.hard:
                target = rule.adjusts
                if target is None or target in adjusted or pins.get(target, (None, ""))[1] != "user":
                    continue
                values = {n: v for n, (v, _) in pins.items()}
                others = {n: v for n, v in values.items() if n != target}
                given = {**self.unsearched_defaults(values), **others}
                given.update(self.assumed_facts(given))
                if not self._certain(rule.when, given):
                    continue
                if not self._violates(rule, {**given, target: values[target]}):
                    continue
                adjusted[target] = (values[target], rule.id)
                del pins[target]
                for candidate in rule.adjust_to:
                    if self.sat({**given, target: candidate}):
                        pins[target] = (candidate, "adjusted")
                        break
                else:
                    if rule.adjust_to:  # the launcher's value even when nothing then works
                        pins[target] = (rule.adjust_to[0], "adjusted")
                break
            else:
                break
        return pins, adjusted

    def assumed_facts(self, given: Known) -> dict[str, Scalar]:
        """The value assumed for each unset fact marked `search = false`, in graph order: the
        first of its chain some configuration keeps with `given` and the facts assumed before it
        (none when no value of the chain is kept): an adjustment's `when` reads these."""
        specs = {f.name: f for f in self.spec.fields}
        assigned = dict(given)
        out: dict[str, Scalar] = {}
        for name in self.order:
            if name in assigned or specs[name].kind != "fact" or specs[name].search:
                continue
            for value in self.chain(name, assigned)[0]:
                if self.sat({**assigned, name: value}):
                    out[name] = assigned[name] = value
                    break
        return out

    def unsearched_defaults(self, values: Known) -> dict[str, Scalar]:
        """The launcher's default (its chain's first value) of each unset option marked
        `search = false`, in graph order: the launcher reads these when it adjusts a typed value."""
        specs = {f.name: f for f in self.spec.fields}
        assigned = dict(values)
        out: dict[str, Scalar] = {}
        for name in self.order:
            if name not in assigned and specs[name].kind == "option" and not specs[name].search:
                out[name] = assigned[name] = self.chain(name, assigned)[0][0]
        return out

    # -- preferences and the optimum ----------------------------------------------------------
    def ranking(
        self, name: str, decided: Known, forced: Known | None = None
    ) -> tuple[list[Scalar], dict[Scalar, str]]:
        """The preferred ranking with the values a warn rule flags (`flagged`, reading `decided`
        and the values propagation `forced`) moved to the end."""
        ranked, origin = self.preferred(name, decided)
        flagged = self.flagged(name, {**(forced or {}), **decided}, ranked)
        return [v for v in ranked if v not in flagged] + [v for v in ranked if v in flagged], origin

    def forced(self, decided: Known) -> dict[str, Scalar]:
        """The fields not in `decided` that the engine's propagation leaves one value of: forward
        checking to a fixpoint, as `solver.engine.state.State.propagate` does it (a hard rule
        with one field not down to one value keeps the values of that field that hold with the
        others' values). Not every value the rules force (brute force would find more): the
        engine ranks with what its propagation knows, and this models exactly that."""
        domains = {n: [decided[n]] if n in decided else list(d) for n, d in self.domains.items()}
        reads = [(rule, [n for n in self.names if n in rule.reads()]) for rule in self.hard]
        changed = True
        while changed:
            changed = False
            for rule, names in reads:
                free = [n for n in names if len(domains[n]) > 1]
                if len(free) != 1:
                    continue
                target = free[0]
                known = {n: domains[n][0] for n in names if n != target}
                kept = [v for v in domains[target] if rule.holds3({**known, target: v}) is not False]
                if len(kept) < len(domains[target]):
                    domains[target], changed = kept, True
        return {n: d[0] for n, d in domains.items() if len(d) == 1 and n not in decided}

    def flagged(self, name: str, decided: Known, values: Iterable[Scalar]) -> dict[Scalar, str]:
        """Values that break a warn rule reading `name` whatever its undecided fields hold."""
        out: dict[Scalar, str] = {}
        for rule in self.warn:
            if name not in rule.reads():
                continue
            for v in values:
                if v not in out and rule.holds3({**decided, name: v}) is False:
                    out[v] = rule.id
        return out

    def broken_everywhere(
        self,
        name: str,
        decided: Known,
        forced: Known,
        ranked: Sequence[Scalar],
        flagged: Mapping[Scalar, str],
        seen: Collection[Scalar],
    ) -> dict[Scalar, str]:
        """The values the ranking left unflagged that auto tries before its pick (in ranked order,
        each that works until one keeps every warn rule reading `name`) and that every
        configuration of `decided` breaks a warn rule with (the later fields the ranking read at
        their `forced` values): value -> the first such rule. What `flagged` cannot see, the rules
        forcing a later field through a search (solver/reasoning/steering.py)."""
        out: dict[Scalar, str] = {}
        for v in ranked:
            if v in flagged or not _member(v, seen):
                continue
            known = {**forced, **decided, name: v}
            for rule in self.warn:
                if name not in rule.reads() or rule.holds3(known) is not None:
                    continue
                pins = {**decided, **{n: x for n, x in forced.items() if n in rule.reads()}, name: v}
                if not any(self.checks[rule.id](row) for row in self.solutions(pins)):
                    out[v] = rule.id
                    break
            else:
                return out
        return out

    def preferred(self, name: str, decided: Known) -> tuple[list[Scalar], dict[Scalar, str]]:
        """Values of every applicable preference in declaration order, then the rest of the
        domain; a preference whose `when` reads an undecided field does not apply."""
        domain = self.domains[name]
        ranked: list[Scalar] = []
        origin: dict[Scalar, str] = {}
        for pref, values in self._applicable(name, decided):
            for v in values:
                if _member(v, domain) and not _member(v, ranked):
                    ranked.append(v)
                    origin[v] = pref.id
        ranked += [v for v in domain if not _member(v, ranked)]
        return ranked, origin

    def expect(self, pins: Mapping[str, tuple[Scalar, str]], strict: bool) -> Expected:
        """The answer to a request: adjustments (unless strict), then the lexicographically best
        configuration in graph order, each auto field taking its best-ranked possible value
        (an option the search may not choose: its launcher chain, as `predict` says)."""
        return self._walk(pins, strict, predict=False)[0]

    def predict(self, pins: Mapping[str, tuple[Scalar, str]], strict: bool) -> tuple[Expected, str | None]:
        """What the launcher does with the request as typed (`check`): every unset option takes
        its chain (`chain_pick`); facts are decided as `expect` decides them (a `search = false`
        fact: its chain, the value assumed). Second item: the field whose chain fails (then
        `values` is None)."""
        return self._walk(pins, strict, predict=True)

    def _applicable(self, name: str, decided: Known) -> Iterator[tuple[PrefSpec, list[Scalar]]]:
        """The preferences of `name` whose `when` holds, with their values (`same_as` first)."""
        for pref in self.spec.prefs:
            if pref.field != name or (pref.when is not None and pref.when.eval3(decided) is not True):
                continue
            values = list(pref.prefer)
            if pref.same_as is not None and pref.same_as in decided:
                values.insert(0, decided[pref.same_as])
            yield pref, values

    def chain(self, name: str, decided: Known) -> tuple[list[Scalar], str | None]:
        """The launcher's own default chain (constraints/README.md, "check"): the values of the
        first applicable preference, else the field's first value."""
        domain = self.domains[name]
        for pref, values in self._applicable(name, decided):
            chain: list[Scalar] = []
            for v in values:
                if _member(v, domain) and not _member(v, chain):
                    chain.append(v)
            if chain:
                return chain, pref.id
        return [domain[0]], None

    def chain_pick(self, name: str, decided: Known, seen: Collection[Scalar]) -> Scalar | None:
        """The first value of the chain some configuration keeps; else, when the chain's first
        value breaks an adjustment rule of the field, its first working `adjust_to` value (none
        named: the best-ranked working value); else, when no preference applies and exactly one
        value works, that value (a fact: when the facts decided so far alone leave exactly one
        value, and it works: the user's options never tell what the model is); else None (the
        chain fails)."""
        chain, pref = self.chain(name, decided)
        found = next((v for v in chain if _member(v, seen)), None)
        if found is None:
            fired = [
                r for r in self.hard if r.adjusts == name and r.holds3({**decided, name: chain[0]}) is False
            ]
            if fired:
                replacing: list[Scalar] = []
                for rule in fired:
                    replacing += [v for v in rule.adjust_to if not _member(v, replacing)]
                if not replacing:
                    replacing = self.ranking(name, decided)[0]
                found = next((v for v in replacing if _member(v, seen)), None)
        if found is None and pref is None:
            if self.kinds[name] == "fact":
                facts = {n: v for n, v in decided.items() if n in self.kinds and self.kinds[n] == "fact"}
                only = self.possible(name, facts)
                working = only if len(only) == 1 and _member(only[0], seen) else []
            else:
                working = [v for v in self.domains[name] if _member(v, seen)]
            found = working[0] if len(working) == 1 else None
        return found

    def _walk(
        self, pins: Mapping[str, tuple[Scalar, str]], strict: bool, predict: bool
    ) -> tuple[Expected, str | None]:
        """Adjustments, then the decisions in graph order. When an option's chain fails, the
        launcher's own picks may make it override a user value: the adjustments are tried again
        on the request as the launcher sees it (its picks so far, its default for the failing
        field, the chain defaults of the other unset unsearched options), and on a change the
        decisions start over. When the chain of an unset `search = false` fact fails (an option
        decided before it took its value away), the fact is assumed first, at the value the
        facts force, else the first of its chain some configuration of the request keeps, and
        the decisions start over (the options then decide around it)."""
        final = dict(pins)
        adjusted: dict[str, tuple[Scalar, str]] = {}
        if not strict:
            final, adjusted = self.adjust(final)
        specs = {f.name: f for f in self.spec.fields}
        first: dict[str, Scalar] = {}  # facts assumed first
        while True:
            decided: dict[str, Scalar] = {**{n: v for n, (v, _) in final.items()}, **first}
            live = list(self.solutions(decided))
            if not live:
                return Expected(final, adjusted, None), None
            steps: dict[str, Step] = {}
            failed: str | None = None
            later = self.assumed_facts(decided)
            for name in self.order:
                if name in final or name in first:
                    continue
                i = self.index[name]
                seen = {row[i] for row in live}
                spec = specs[name]
                if not spec.search or (predict and spec.kind == "option"):
                    picked = self.chain_pick(name, decided, seen)
                    if picked is None:
                        failed = name
                        break
                    value = picked
                else:
                    possible = [v for v in self.domains[name] if v in seen]
                    # What the warn rules read of later fields: what propagation forced, and
                    # the value assumed of each unset `search = false` fact (from the request).
                    forced = {**later, **self.forced(decided)}
                    forced = {n: v for n, v in forced.items() if n not in decided}
                    ranked, origin = self.ranking(name, decided, forced)
                    preferred, _ = self.preferred(name, decided)
                    partial = self.flagged(name, {**forced, **decided}, preferred)
                    moved = self.broken_everywhere(name, decided, forced, ranked, partial, seen)
                    if moved:
                        ranked = [v for v in preferred if v not in partial and v not in moved]
                        ranked += [v for v in preferred if v in partial or v in moved]
                    value = next(v for v in ranked if v in seen)
                    above = preferred[: preferred.index(value)]
                    tried = ranked[: ranked.index(value)]
                    flagged = {**moved, **self.flagged(name, {**forced, **decided}, above)}
                    flagged = {v: r for v, r in flagged.items() if v in above and v not in tried}
                    steps[name] = Step(ranked, origin, possible, value, flagged, forced)
                decided[name] = value
                live = [row for row in live if row[i] == value and type(row[i]) is type(value)]
            if failed is None:
                values = {n: decided[n] for n in self.names}
                return Expected(final, adjusted, values, steps, dict(first)), None
            assumed = self._assumed_first(failed, decided, {**{n: v for n, (v, _) in final.items()}, **first})
            if assumed is not None:
                first[failed] = assumed
                continue
            if strict:
                return Expected(final, adjusted, None), failed
            view = dict(final)
            for name, value in decided.items():
                view.setdefault(name, (value, "launcher-default"))
            view[failed] = (self.chain(failed, decided)[0][0], "launcher-default")
            assigned = {n: v for n, (v, _) in view.items()}
            for name, value in self.unsearched_defaults(assigned).items():
                view[name] = (value, "launcher-default")
            changed, more = self.adjust(view)
            if not more:
                return Expected(final, adjusted, None), failed
            final = {n: p for n, p in changed.items() if n in final}
            adjusted.update(more)

    def _assumed_first(self, name: str, decided: Known, request: Known) -> Scalar | None:
        """The value an unset `search = false` fact whose chain failed is assumed at before the
        decisions (None: not such a fact, or no value holds with the `request`)."""
        spec = next(f for f in self.spec.fields if f.name == name)
        if spec.kind != "fact" or spec.search or name in request:
            return None
        facts = {n: v for n, v in decided.items() if self.kinds.get(n) == "fact" and n != name}
        only = self.possible(name, facts)
        chain = [only[0]] if len(only) == 1 else self.chain(name, decided)[0]
        return next((v for v in chain if any(True for _ in self.solutions({**request, name: v}))), None)

    def warnings(self, values: Known) -> list[str]:
        return [r.id for r in self.warn if not self.holds(r, values)]


def _member(value: Scalar, values: Collection[Scalar]) -> bool:
    return any(value == v and type(value) is type(v) for v in values)
