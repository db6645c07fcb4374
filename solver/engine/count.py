"""Exact counting of valid configurations: `confsolve count` and the counter `lint` and `diff` use.

What is counted: complete configurations, i.e. one value for every field of the pack (options and
the facts not given), that satisfy every hard rule and keep every given pin. A fact the request does
not give is free, exactly as in `resolve`, so `count --set platform=cuda` counts configurations over
every CUDA GPU and every model; `--by FIELD` splits the same number by that field's value (the
parts add up to the total). Warning rules never restrict, so they are not counted against.

How: `DiagramCounter` (`solver.engine.diagrams`): each rule compiled once per pack into a
decision diagram, and a search over their residuals with independent components and component
caching. A count whose search passes `ddnnf.SEARCH_FIRST` steps (and has no time limit) compiles
the whole pack instead (`solver.engine.ddnnf`: that search with no pins, written down as a
decision-DNNF), kept in the process and on disk next to the pack cache by pack digest; every
count of the pack with a limit above SEARCH_FIRST is then a pass over it that recomputes only
the nodes its pins touch (`platform=cuda`: ~700 of 677k arms). A pack may ship that form in its
directory (`read_shipped`; written by `python -m solver.engine.shipped`), so even its first
count is a pass. The form is shared by the copies of the pack a request's `given()` answers
make (`compile_whole`: each `given(FIELD)` a hard rule reads is a two-valued field). A pack it does
not compile (past `diagrams.MAX_FIELDS` fields, or a rule past its expansion budget) is counted by
`ModelCounter` (`solver.engine.modelcounter`: propagation, components and caching over condition
evaluation), which `lint` and `diff` use for projected counts. Never a product loop over the
domains. `solver.engine.countlimit` holds the limits and the bounds of a count cut short
(re-exported here). A rule is counted as its `solver.pack.expr.Condition`, the one predicate type.

Imports the standard library, the modules above and, inside functions, `solver.engine.csp`;
never python-constraint or networkx.
"""

from __future__ import annotations

import dataclasses
import json
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solver.bounded import PACKS_KEPT, Lru, digest_family
from solver.engine.countlimit import (
    COUNT_LIMIT,
    DEFAULT_LIMIT,
    CountLimitReached,
    Limit,
    Progress,
    metered,
)
from solver.engine.ddnnf import SEARCH_FIRST, CompiledCount, compile_count
from solver.engine.diagrams import DiagramCounter, TooLarge
from solver.engine.modelcounter import ModelCounter
from solver.pack import syntax
from solver.pack.marks import ValueRead, given_atoms, is_given_call, typed_holds, value_read

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.model import Pack, Scalar
    from solver.pack.expr import Condition

__all__ = [
    "COUNT_LIMIT",
    "DEFAULT_LIMIT",
    "CountLimitReached",
    "CountResult",
    "Limit",
    "ModelCounter",
    "Progress",
    "compile_whole",
    "count",
    "metered",
    "pack_checks",
    "pack_counter",
    "read_shipped",
    "shipped_key",
]

# --- packs ------------------------------------------------------------------------------------


def pack_checks(pack: Pack, rule_ids: Iterable[str] | None = None) -> list[Condition]:
    """The hard rules of a pack (or of `rule_ids`): their conditions, for the counter."""
    from solver.engine.csp import compile_pack

    return _checks(compile_pack(pack), rule_ids)


def _checks(cp: CompiledPack, rule_ids: Iterable[str] | None = None) -> list[Condition]:
    ids = cp.rule_ids if rule_ids is None else [r for r in cp.rule_ids if r in set(rule_ids)]
    return [cp.rules[r].condition for r in ids]


@dataclass(frozen=True)
class CountResult:
    """The number of valid configurations, and optionally its split by one field's value."""

    count: int
    by_field: str | None = None
    by: dict[Scalar, int] | None = None
    steps: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        from solver.values import exact_count, show  # counts beyond 2**53 as digits (JavaScript)

        doc: dict[str, Any] = {"schema": 1, "status": "counted", "count": exact_count(self.count)}
        if self.by is not None and self.by_field is not None:
            doc["by"] = {self.by_field: {show(v): exact_count(n) for v, n in self.by.items()}}
        return doc


def count(
    pack: Pack,
    pins: Mapping[str, Scalar] | None = None,
    *,
    by: str | None = None,
    limit: Limit | None = None,
    deadline: float | None = None,
    progress: Progress | None = None,
) -> CountResult:
    """The exact number of valid configurations of `pack` that keep `pins`.

    Every field not pinned is free (facts included). `by` splits the count by that field's values.
    `deadline`: an absolute `time.monotonic()` to stop by (a command's budget), on top of `limit`
    (whose seconds, if any, run from now for the whole count, its split included).
    `limit`: default `COUNT_LIMIT` steps. `progress(steps, seconds)` is called now and then (a
    reporter for long counts).

    Raises `CountLimitReached` when the limit or the deadline comes before the count is exact;
    it carries exact bounds, `lower <= count <= upper` (what was counted; that plus at most
    every combination of what was not), and `parts`, the values of `by` counted exactly.
    """
    from solver.engine.csp import compile_pack
    from solver.engine.opendomain import widened
    from solver.pack.given import for_request

    pins = dict(pins or {})
    base = widened(pack, pins)  # open domains widened by the pins' values
    pack = for_request(base, pins)  # and `given(FIELD)` of rules answered (the search's pack)
    cp = compile_pack(pack)
    started = time.monotonic()
    limit = limit or Limit(steps=COUNT_LIMIT)
    ends = [
        t
        for t in (deadline, limit.deadline, None if limit.seconds is None else started + limit.seconds)
        if t is not None
    ]
    limit = dataclasses.replace(limit, deadline=min(ends) if ends else None)
    query = _Query(cp.domains, pins, by, limit, progress, started)
    if by is None and QUICK_SEARCH and (limit.steps is None or limit.steps > SEARCH_FIRST):
        short = _quick_pass(base, pack, query)
        if short is not None:
            return short
    counter = _counter(pack, cp)
    # A limit within SEARCH_FIRST steps asks for a search of that size (its answer, exact or
    # bounded, does not depend on what is kept); a larger one may use or make a compiled form.
    if not isinstance(counter, DiagramCounter) or (limit.steps is not None and limit.steps <= SEARCH_FIRST):
        return _searched(counter, query)
    compiled, asked = _compiled_for(base, pack, query)
    if compiled is not None:
        if by is None and QUICK_SEARCH:
            try:  # a search that ends at once (pins that conflict) costs less than the pass
                quick = dataclasses.replace(limit, steps=min(QUICK_SEARCH, limit.steps or QUICK_SEARCH))
                return _searched(counter, dataclasses.replace(query, limit=quick))
            except CountLimitReached:
                pass
        try:
            answer = _answered(compiled, asked)
            return dataclasses.replace(answer, steps=answer.steps + counter.steps)
        except ValueError:  # a record on disk this code did not write: forget it, search
            _COMPILED.pop(base.digest)
            _COMPILED.pop(pack.digest)
    if limit.deadline is not None or limit.seconds is not None:
        # Under a time limit the search alone: a compile cut short by the clock would leave only
        # a short search's bounds where a search might have finished (cuda + sm90: 0.17 million
        # steps, the whole pack's compile ~1 million).
        return _searched(counter, query)
    # A search first (a narrow query ends within it); past SEARCH_FIRST steps the whole pack is
    # compiled once (kept in this process and on disk) and this count, and every later one, is
    # a pass over it. If the compile cannot finish within the limit, the search's bounds answer.
    try:
        first = dataclasses.replace(limit, steps=SEARCH_FIRST)
        return _searched(counter, dataclasses.replace(query, limit=first))
    except CountLimitReached as stopped:
        searched = stopped
    try:
        left = None if limit.steps is None else limit.steps - counter.steps
        compiled, kept_as = _compile(base, pack, dataclasses.replace(limit, steps=left), progress)
    except CountLimitReached as late:
        stop = CountLimitReached(limit, counter.steps + late.steps)  # named by the caller's limit
        stop.parts = searched.parts
        raise stop.bounded(searched.lower, searched.upper or 0) from None
    _keep(kept_as, compiled)
    found, asked = _compiled_for(base, pack, query)
    answer = _answered(compiled if found is None else found, asked)
    return dataclasses.replace(answer, steps=answer.steps + counter.steps + compiled.steps)


@dataclass(frozen=True)
class _Query:
    """One `count` call's question: the pack's domains, pins, split, limit, reporter, start."""

    domains: Mapping[str, Sequence[Any]]
    pins: dict[str, Scalar]
    by: str | None
    limit: Limit
    progress: Progress | None
    started: float

    def answer(self, total: int, steps: int, parts: dict[Scalar, int] | None = None) -> CountResult:
        seconds = time.monotonic() - self.started
        return CountResult(total, by_field=self.by, by=parts, steps=steps, seconds=seconds)


def _searched(counter: DiagramCounter | ModelCounter, query: _Query) -> CountResult:
    """The count by `counter`'s search (its split by `by` one search per value)."""
    pins, by, limit, progress = query.pins, query.by, query.limit, query.progress
    if by is None:
        return query.answer(counter.count(pins, limit=limit, progress=progress), counter.steps)
    parts: dict[Scalar, int] = {}
    values = [pins[by]] if by in pins else list(query.domains[by])
    for at, value in enumerate(values):
        try:
            parts[value] = counter.count({**pins, by: value}, limit=limit, progress=progress)
        except CountLimitReached as stop:
            # Each value not reached holds at most every combination of the free fields.
            free = 1
            for name, domain in query.domains.items():
                if name != by and name not in pins:
                    free *= len(domain)
            done = sum(parts.values())
            stop.parts = dict(parts)
            raise stop.bounded(
                done + stop.lower, done + (stop.upper or 0) + free * (len(values) - at - 1)
            ) from None
    return query.answer(sum(parts.values()), counter.steps, parts)


def _hard_given(pack: Pack) -> set[str]:
    """The fields whose being given a hard rule of `pack` reads (`given(FIELD)`)."""
    from solver.pack.loader import semantics

    conditions = semantics(pack).rules
    return {name for rule in pack.rules if rule.severity == "error" for name in conditions[rule.id].given}


def _compiled_for(base: Pack, pack: Pack, query: _Query) -> tuple[CompiledCount | None, _Query]:
    """The compiled count that answers `query` on `pack` (`base`'s copy for the request's
    `given()`), and the query as it asks that form: `base`'s own, shared by its copies (its
    `given(FIELD)` fields pinned to what the request gives), when it has a `given(FIELD)` field
    for each field the request gives that a hard rule asks about; else the copy's own."""
    found = _compiled(base)
    if found is not None:
        typed = _hard_given(base).intersection(query.pins) if pack is not base else set()
        marks = _given_fields(pack_checks(base), base.sets) if typed else {}
        # Each mark of a field the request gives, answered: `given(F)` true, a value read by the
        # value typed (a mark of a field not given stays False, as the form counts it).
        atoms = {
            atom: read is None or typed_holds(read, query.pins[name])
            for atom, (name, read) in (marks or {}).items()
            if name in typed
        }
        if marks is not None and all(atom in found.level for atom in atoms):
            domains = {**query.domains, **dict.fromkeys(atoms, (False, True))}
            return found, dataclasses.replace(query, domains=domains, pins={**query.pins, **atoms})
    return (_compiled(pack) if pack is not base else None), query


def _compile(base: Pack, pack: Pack, limit: Limit, progress: Progress | None) -> tuple[CompiledCount, Pack]:
    """The compiled count for `pack` (`base`'s copy for the request's `given()`) and the pack
    it is kept for: `base`'s (`compile_whole`), which answers every copy, unless a hard rule
    reads `given()` where it cannot be a field and `pack` is such a copy."""
    if pack is base or _given_fields(pack_checks(base), base.sets) is not None:
        return compile_whole(base, limit=limit, progress=progress), base
    return compile_count(pack_counter(pack), limit=limit, progress=progress), pack


def _answered(compiled: CompiledCount, query: _Query) -> CountResult:
    """The count by a pass over the pack's compiled count (its split by `by`: one pass down)."""
    domains, pins, by, limit = query.domains, query.pins, query.by, query.limit
    try:
        if by is None or by in pins:
            total, steps = compiled.count(domains, pins, limit=limit, progress=query.progress)
            return query.answer(total, steps, None if by is None else {pins[by]: total})
        split, steps = compiled.split(domains, pins, by, limit=limit, progress=query.progress)
    except CountLimitReached as stop:  # a pass cut short by a deadline: no partial sums to give,
        every = 1  # so every combination the pins keep is the bound
        for name, domain in query.domains.items():
            every *= len(domain) if name not in pins else 1
        raise stop.bounded(0, every) from None
    return query.answer(sum(split), steps, dict(zip(domains[by], split, strict=True)))


def _quick_pass(base: Pack, pack: Pack, query: _Query) -> CountResult | None:
    """The count by a pass over a compiled form at hand that ends within `QUICK_SEARCH` arms,
    else None (no form, or a longer pass: the quick search and the pass below decide). Before
    the pack's diagram counter is built, which a cold `platform=cuda` spent most of its time on
    (SGLang 0.5.23+27: rules, order and first-field look-ahead 0.33-0.58 s, the quick search
    0.10-0.14 s, where its pass reads 860 arms in 0.01 s)."""
    compiled, asked = _compiled_for(base, pack, query)
    if compiled is None:
        return None
    steps = query.limit.steps
    quick = dataclasses.replace(query.limit, steps=min(QUICK_SEARCH, steps or QUICK_SEARCH))
    try:
        return _answered(compiled, dataclasses.replace(asked, limit=quick))
    except (CountLimitReached, ValueError):  # (a bad record: the pass below forgets the form)
        return None


# Steps a count with a compiled form at hand searches first: a query whose pins conflict or
# leave little ends within them (SGLang: quantization=fp8 with flashinfer_cutedsl, 1 step and
# 1 ms, where the pass recomputes 200k arms, 1.7 s CPU; cuda + sm90 + Llama 17,927 steps), and
# the others lose ~40 ms (10,000 steps at ~4 us, load 20) before the pass.
QUICK_SEARCH = 10_000

# Compiled counts kept in this process, by pack digest; on disk as the pack cache's side file.
# Two, not PACKS_KEPT: one just compiled holds all its arms (SGLang: 631k; a compiling process
# peaks at 281 MB where the search's peaks at 105 MB); one read from disk only the records its
# passes parsed. The disk keeps the others.
COMPILED_KEPT = 2
_COMPILED: Lru[str, CompiledCount] = Lru(COMPILED_KEPT)
COMPILED_SUFFIX = ".count"
MAX_COMPILED_BYTES = 256 * 1024 * 1024  # unpacked (the SGLang pack's: 16.5 MB, 2.6 MB packed)


def _compiled(pack: Pack) -> CompiledCount | None:
    """The pack's compiled count, from this process or from disk (a bad or foreign file: None)."""
    if not pack.digest:
        return None
    found = _COMPILED.get(pack.digest)
    if found is not None:
        return found
    found = read_shipped(pack)  # made with the pack (its directory), for its rules and format
    if found is not None:
        _COMPILED.put(pack.digest, found)
        return found
    from solver.pack import cache

    packed = cache.read_blob(_file_key(pack.digest), COMPILED_SUFFIX)
    if packed is None:
        return None
    try:
        unpack = zlib.decompressobj()
        data = unpack.decompress(packed, MAX_COMPILED_BYTES)
        if unpack.unconsumed_tail or not unpack.eof:
            return None
        found = CompiledCount.from_bytes(data, pack.digest)
    except (ValueError, KeyError, TypeError, IndexError, zlib.error, RecursionError, MemoryError):
        return None
    _COMPILED.put(pack.digest, found)
    return found


# A pack's compiled count shipped in its directory (`python -m solver.engine.shipped DIR`).
SHIPPED_NAME = "compiled-count.xz"
MAX_SHIPPED_BYTES = 32 * 1024 * 1024  # packed (the SGLang pack's: 5.4 MB in 656 streams)


# What a rule says to the user or to lint, not to the compile.
_NOT_COMPILED = ("because", "source", "acknowledged", "file")


def shipped_key(pack: Pack) -> str:
    """The key a shipped compiled count is made for: a digest of everything the compile reads
    (the pack's name, its fields in order, its named sets and its rules, conditions as the loader
    wrote them out) and nothing else. A comment, a `because`, a `source`, a preference or a lint
    acknowledgement changes the pack's digest but not this key, so it leaves the shipped form
    valid; any change the compile could see changes it."""
    import hashlib

    doc = {
        "name": pack.name,
        "fields": [[name, field.model_dump(mode="json")] for name, field in pack.fields.items()],
        "sets": {name: list(values) for name, values in pack.sets.items()},
        "rules": [rule.model_dump(mode="json", exclude=_NOT_COMPILED) for rule in pack.rules],
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "compiled:" + hashlib.sha256(text.encode()).hexdigest()


def read_shipped(pack: Pack) -> CompiledCount | None:
    """The compiled count shipped in `pack`'s directory, when it was made for this pack's
    `shipped_key` and this code's `ddnnf.FORMAT`; else None (no file, another pack's or format's,
    malformed). Read like the pack's own files (installed with them), bounded in size; its
    records are unpacked a stream at a time as passes read them (`solver.engine.countfile`)."""
    from solver.engine.countfile import read_packed

    if not pack.directory or not pack.digest:
        return None
    try:
        with (Path(pack.directory) / SHIPPED_NAME).open("rb") as handle:
            packed = handle.read(MAX_SHIPPED_BYTES + 1)
        if len(packed) > MAX_SHIPPED_BYTES:
            return None
        return CompiledCount(*read_packed(packed, shipped_key(pack), MAX_COMPILED_BYTES))
    except (OSError, ValueError, KeyError, TypeError, IndexError, MemoryError):
        return None


def _keep(pack: Pack, compiled: CompiledCount) -> None:
    if not pack.digest:
        return
    _COMPILED.put(pack.digest, compiled)
    from solver.pack import cache

    def packed() -> bytes:  # made only when there is a cache to keep it in
        return zlib.compress(compiled.to_bytes(pack.digest), 1)

    cache.write_blob(_file_key(pack.digest), COMPILED_SUFFIX, packed)


def _file_key(digest: str) -> str:
    """The file name's key of a pack digest: the digest of a request's copy of a pack (open
    domains widened, `given()` answered: `base+mark:fields`) is not a name, so it is hashed; the
    file's header holds the whole digest, checked when read."""
    import hashlib

    return hashlib.sha256(digest.encode()).hexdigest()[:32]


def pack_counter(pack: Pack, given: Sequence[str] = ()) -> DiagramCounter:
    """A diagram counter of `pack` made for this call, with nothing counted yet; `given`: the
    request's marks its rules read (`given(FIELD)`, `given(FIELD) == VALUE`), by their names
    (`_given_fields`), as two-valued fields. Raises `TooLarge`."""
    from solver.engine.csp import compile_pack

    cp = compile_pack(pack)
    domains = {**cp.domains, **dict.fromkeys(given, (False, True))}
    return DiagramCounter(domains, _checks(cp), fields=pack.fields, sets=pack.sets)


def compile_whole(
    pack: Pack, *, limit: Limit | None = None, progress: Progress | None = None
) -> CompiledCount:
    """The whole pack's compiled count, from a counter made for it (so the same pack always
    gives the same bytes: what `solver.engine.shipped` writes). The `given(FIELD)` its hard
    rules read are two-valued fields counted as False (the pack as loaded), so a request's copy
    of the pack for what it gives is a pass over this form with them pinned; when a rule reads
    `given()` inside a comparison (not as an operand of and / or / not) they are left out, and
    the form answers only requests that give none of them. Raises `TooLarge`, and
    `CountLimitReached` when `limit` runs out."""
    given = sorted(_given_fields(pack_checks(pack), pack.sets) or {})
    counted = dict.fromkeys(given, (True, False))
    return compile_count(pack_counter(pack, given), counted=counted, limit=limit, progress=progress)


def _given_fields(
    checks: Sequence[Condition], sets: Mapping[str, Sequence[Scalar]]
) -> dict[str, tuple[str, ValueRead | None]] | None:
    """The request's marks the checks read, each by its two-valued field's name with the field
    it asks about and, for `given(FIELD) == VALUE`, the read (`solver.pack.expr.given_atoms`),
    when each `given(FIELD)` call or value read is an operand of `and` / `or` / `not` (or the
    whole check) in a check with text; else None."""
    import ast

    asked: dict[str, tuple[str, ValueRead | None]] = {}
    for check in checks:
        if not check.given:
            continue
        if not check.text:
            return None
        top = syntax.expression(check.text).body
        operands = {id(top)}
        reads: set[int] = set()  # the calls of value reads that are operands
        for node in ast.walk(top):  # parents before children
            if isinstance(node, ast.BoolOp):
                operands.update(map(id, node.values))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                operands.add(id(node.operand))
            elif isinstance(node, ast.Compare) and value_read(node, sets) is not None:
                if id(node) not in operands:
                    return None
                reads.add(id(node.left))
            elif is_given_call(node):
                if id(node) in reads:
                    continue
                if id(node) not in operands or len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
                    return None
        asked.update(given_atoms(check.text, sets))
    return asked


_COUNTERS: Lru[str, DiagramCounter | bool] = Lru(
    PACKS_KEPT, family=digest_family, sized=True
)  # False: not compiled
MAX_NODES = 1_000_000  # diagram nodes a kept counter may grow to (the SGLang pack's rules: ~2,000)


def _counter(pack: Pack, cp: CompiledPack | None = None) -> DiagramCounter | ModelCounter:
    """The pack's diagram counter (kept per digest, with its component counts), or a fresh
    `ModelCounter` when the pack is not compiled to diagrams. `cp`: the pack's compiled form,
    when the caller has it (else it is looked up)."""
    from solver.engine.csp import compile_pack

    if cp is None:
        cp = compile_pack(pack)
    kept = _COUNTERS.get(pack.digest) if pack.digest else None
    if kept is None:
        try:
            kept = pack_counter(pack)
        except TooLarge:
            kept = False
        if pack.digest:
            _COUNTERS.put(pack.digest, kept)
    if isinstance(kept, DiagramCounter):
        if len(kept.diagrams.nodes) > MAX_NODES:  # restrictions made since: start again next time
            _COUNTERS.pop(pack.digest)
        return kept.fresh()
    return ModelCounter(cp.domains, _checks(cp))
