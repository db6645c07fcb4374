"""Rules that read what the request gives: one copy of the pack per request's `given` set.

A launcher may refuse a value only when a flag was *not typed*: SGLang 0.5.23 asserts the typed
`--quantization` for `--moe-runner-backend flashinfer_cutedsl`, and with it unset checks `None`
and refuses, even though the checkpoint's method, which the pack's `quantization` holds either
way, is the one it asks for. A rule says so with `given(FIELD)` (true when the request gives
FIELD). What a request gives is known before any decision and is no value of a configuration, so
such a rule is not a constraint over a hidden field: each request works on a copy of the pack in
which every `given(FIELD)` of a rule is the constant the request makes it (`for_request`), with a
digest of its own, so the copy gets its own compiled form and plan while the field order is
shared (`solver.bounded.digest_family`), and so are the compiled rules it did not rewrite (each
kept condition is the pack's own object, and a rule rewritten alike is one object across copies:
`solver.engine.csp.CompiledPack` takes their constraints from the family's).

The pack as loaded reads every `given(FIELD)` of a rule as false (its `holds` never sees a
request's marks): it is the copy of a request that gives none of them, which is what lint, count
without `--set` and a request that types none of those fields see. Preferences keep reading the
request's marks (`solver.reasoning.plan`), so they need no copy.

`ast` is imported by the functions that walk a condition's syntax (`solver.pack.syntax`): a
`check` of a shipped pack finds its tables in the prebuilt form and walks none.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver import frozen
from solver.bounded import PACKS_KEPT, Lru, digest_family
from solver.model import Pack, Pin, Rule, Scalar
from solver.pack import syntax
from solver.pack.crosscheck import PackSemantics
from solver.pack.expr import Condition, parse, rule_conditions
from solver.pack.marks import ValueRead, is_given_call, typed_holds, value_read
from solver.values import show

if TYPE_CHECKING:
    import ast

__all__ = [
    "GIVEN_MARK",
    "for_request",
    "given_effect",
    "given_fields",
    "reading_given",
    "refusing",
    "valued_fields",
]

# Separates a pack's digest from the given fields a copy was made for (see `for_request`).
GIVEN_MARK = "+given:"


# By digest: every request asks, and the SGLang pack has some 300 rules to look through.
_ASKED: Lru[str, frozenset[str]] = Lru(PACKS_KEPT, family=digest_family)
_Values = frozenset[tuple[type, Scalar]]  # the values a read tests (`ValueRead`'s second half)
# By digest: the fields whose typed value some rule or preference reads (`given(FIELD) ==
# VALUE`), each with the value sets its reads test, in one order.
_VALUED: Lru[str, dict[str, tuple[_Values, ...]]] = Lru(PACKS_KEPT, family=digest_family)
# By digest: the positions of the preferences whose `when` reads a typed value, the ones a copy
# rewrites (finding them parsed every preference's text again per copy made: ~3 ms of each).
_VALUED_PREFS: Lru[str, tuple[int, ...]] = Lru(PACKS_KEPT, family=digest_family)
# The copies made, by their digest: a request's copy is made again for every request like it.
# Each with its conditions, kept again in the loader's table whenever the copy is handed out:
# that table holds the pack, its widened copies and these in the same 8 places per family, so
# it dropped copies this one still held, and a copy's next question parsed the whole pack
# again (SGLang 0.5.23+26: 70-300 ms, 5 times in each pass over the benchmark's requests).
_COPIES: Lru[str, tuple[Pack, PackSemantics]] = Lru(PACKS_KEPT, family=digest_family, sized=True)
# Each rewritten rule with its conditions, by the pack's digest, the rule and the marks of the
# fields its `given()`s read: all its rewrite depends on. Copies for other requests mostly
# rewrite a rule alike (a `given(attention_backend) == 'trtllm_mha'` reads False for every other
# backend typed), and its parse and compile were most of a copy's making: SGLang 0.5.23+23 reads
# the typed backend in 29 places, and a request's first call paid ~20 ms for its copy.
_REWRITTEN: Lru[tuple[str, str, tuple[str, ...]], tuple[Rule, Condition, Condition | None]] = Lru(
    4096, family=lambda key: digest_family(key[0])
)


def given_fields(pack: Pack) -> frozenset[str]:
    """The fields whose being given some rule of `pack` reads (`given(FIELD)` in a rule)."""
    found = _ASKED.get(pack.digest) if pack.digest else None
    if found is None:
        from solver.pack.loader import semantics

        found = frozenset(name for cond in semantics(pack).rules.values() for name in cond.given)
        if pack.digest:
            _ASKED.put(pack.digest, found)
    return found


def valued_fields(pack: Pack) -> frozenset[str]:
    """The fields whose typed value some rule or preference of `pack` reads (`given(FIELD) ==
    VALUE` or `given(FIELD) in [VALUES]`): a request's copy depends on their values, not only on
    whether they are given."""
    return frozenset(_value_reads(pack))


def _value_reads(pack: Pack) -> dict[str, tuple[_Values, ...]]:
    """Each field whose typed value a rule or preference of `pack` reads, with the value sets
    its reads test (each once, in one order): what a request's copy depends on of that value."""
    found = _VALUED.get(pack.digest) if pack.digest else None
    if found is not None:
        return found
    found = _shipped(pack, "value_reads")
    if found is None:
        found = parsed_reads(pack)
    if pack.digest:
        _VALUED.put(pack.digest, found)
    return found


def valued_preferences(pack: Pack) -> tuple[int, ...]:
    """The positions in `pack.preferences` of those whose `when` reads a typed value."""
    found = _VALUED_PREFS.get(pack.digest) if pack.digest else None
    if found is not None:
        return found
    found = _shipped(pack, "valued_preferences")
    if found is None:
        found = parsed_positions(pack)
    if pack.digest:
        _VALUED_PREFS.put(pack.digest, found)
    return found


# A shipped pack's prebuilt form carries both tables above, written by `solver.pack.prebuild`
# from the two functions below: finding them parses ~250 condition texts (~8 ms of every `check`).
_TYPES: dict[str, type] = {t.__name__: t for t in (str, int, bool, float, type(None))}


def parsed_reads(pack: Pack) -> dict[str, tuple[_Values, ...]]:
    """`_value_reads(pack)` from the conditions' texts (never from a table kept or shipped)."""
    from solver.pack.loader import semantics

    rules = semantics(pack).rules
    texts = [t for r in pack.rules if rules[r.id].given for t in (r.when, r.require, r.forbid)]
    texts += [p.when for p in pack.preferences]
    tested: dict[str, set[_Values]] = {}
    for text in texts:
        for name, values in _reads(text, pack.sets):
            tested.setdefault(name, set()).add(values)
    return {n: tuple(sorted(tests, key=lambda vs: sorted(map(repr, vs)))) for n, tests in tested.items()}


def parsed_positions(pack: Pack) -> tuple[int, ...]:
    """`valued_preferences(pack)` from the preferences' texts."""
    return tuple(at for at, pref in enumerate(pack.preferences) if _reads(pref.when, pack.sets))


def encoded_reads(
    reads: dict[str, tuple[_Values, ...]],
) -> tuple[tuple[str, tuple[tuple[tuple[str, Scalar], ...], ...]], ...]:
    """`reads` (`parsed_reads`) as literals (types by name, each value set in one order)."""
    return tuple(
        (name, tuple(tuple(sorted((t.__name__, v) for t, v in values)) for values in tests))
        for name, tests in reads.items()
    )


def _decoded_reads(raw: Any) -> dict[str, tuple[_Values, ...]]:
    """What `encoded_reads` wrote; TypeError / ValueError / KeyError for anything else."""
    out: dict[str, tuple[_Values, ...]] = {}
    for name, tests in raw:
        if not isinstance(name, str):
            raise TypeError(name)
        out[name] = tuple(frozenset((_TYPES[t], v) for t, v in values) for values in tests)
    return out


def _decoded_positions(raw: Any) -> tuple[int, ...]:
    found = tuple(raw)
    if not all(type(at) is int for at in found):
        raise TypeError(found)
    return found


# Each table's reader: the loader's (`_shipped`) and the writer's check (`solver.pack.prebuild`).
SHIPPED_TABLES: dict[str, Callable[[Any], Any]] = {
    "value_reads": _decoded_reads,
    "valued_preferences": _decoded_positions,
}


def decoded(part: str, raw: Any) -> Any:
    """The table `part` of a prebuilt form as `_value_reads` / `valued_preferences` give it, or
    None when `raw` is not one."""
    try:
        return SHIPPED_TABLES[part](raw)
    except (TypeError, ValueError, KeyError):
        return None


def _shipped(pack: Pack, part: str) -> Any:
    """The table `part` the prebuilt form of `pack` brought (`solver.pack.prebuilt.recall`), kept
    by digest like the ones computed here; None for any other pack."""
    from solver.pack import cache

    entry = cache.read(pack.digest) if pack.digest else None
    if entry is None or part not in entry:
        return None
    return decoded(part, entry[part])


def _reads(text: str | None, sets: Mapping[str, Sequence[Scalar]]) -> list[ValueRead]:
    """The typed-value reads of a checked condition's text."""
    import ast

    if not text or "given" not in text:
        return []
    nodes = ast.walk(syntax.expression(text.strip()))
    return [read for node in nodes if (read := value_read(node, sets)) is not None]


def reading_given(pack: Pack, name: str) -> list[str]:
    """The ids of `pack`'s rules (hard or warn) that read `given(name)`."""
    from solver.pack.loader import semantics

    return [rid for rid, cond in semantics(pack).rules.items() if name in cond.given]


def for_request(
    pack: Pack, given: Collection[str] | Mapping[str, object], *, answer_all: bool = False
) -> Pack:
    """`pack` itself when the request gives none of the fields its rules ask about; otherwise a
    copy whose rules read those answers as constants (`given`: the request's fields).

    A `given(FIELD) == VALUE` reads the value typed: with `given` a mapping (the request's pins,
    as typed, before any adjustment) it is answered as a constant too; with names only (a command
    that types an answer's values, a choice that types the value it lists) the typed value is the
    field's own, so it becomes `FIELD == VALUE`.

    The launcher's rewrites of typed values (`Field.rewrites`) come first, as in the launcher:
    a typed value it rewrites leaves its field ungiven to every `given(FIELD)` (a value read
    still reads the value typed: the rewrite's reported adjustments ask about it), and the
    fields it sets are given, with their values.

    `answer_all`: the copy even when the request gives none of them (every `given()` false), so
    that no `given()` is left for a later question to answer otherwise: `valid_choices` types a
    field a rule asks about (picking a value types it), where a law asks what the request as it
    is leaves possible of a fact it does not give (tests/test_laws_shipped.py)."""
    value_reads = _value_reads(pack)
    valued = frozenset(value_reads)
    asked = given_fields(pack).union(valued)
    unset, rewritten = _launcher_rewrites(pack, given)
    # Names only: a field's own value is the one typed, and a value the launcher rewrites is none.
    own = {} if isinstance(given, Mapping) else _rewritten_values(pack, given)
    typed = sorted(asked.intersection({*given, *rewritten}))
    if not typed and not (answer_all and asked):
        return pack
    answers: dict[str, object] | None = None
    if isinstance(given, Mapping) and valued:
        typed_values = {**{n: _typed_value(v) for n, v in given.items()}, **rewritten}
        answers = {n: typed_values[n] for n in typed if n in valued}
    # A field the launcher put back on its default is no given field (`!`), its value read as
    # typed; names only, a field with rewritten values is read by its own value (`=*`).

    def suffix(name: str) -> str:
        if name in unset:
            return "!"
        return "=*" if name in own and name not in valued else ""

    marks = [_mark(n, value_reads, answers) + suffix(n) for n in typed]
    digest = f"{pack.digest}{GIVEN_MARK}{','.join(marks)}" if pack.digest else ""
    from solver.pack.loader import keep_semantics, semantics

    known = _COPIES.get(digest) if digest else None
    if known is not None:
        made, conditions = known
        keep_semantics(made, conditions)
        # Kept by content (as the loader keeps packs): a copy made for the same bytes in another
        # directory names this pack's.
        same = made.directory == pack.directory
        return made if same else frozen.replace(made, directory=pack.directory)
    base = semantics(pack)
    rules: list[Rule] = []
    made_rules: dict[str, tuple[Rule, Condition, Condition | None]] = {}
    for rule in pack.rules:
        reads = base.rules[rule.id].given
        if reads:
            key = (pack.digest, rule.id, tuple(m for n, m in zip(typed, marks, strict=True) if n in reads))
            found = _REWRITTEN.get(key) if pack.digest else None
            if found is None:
                rule = frozen.replace(
                    rule,
                    when=_answered(rule.when, typed, pack.sets, answers, unset=unset, own=own),
                    require=_answered(rule.require, typed, pack.sets, answers, unset=unset, own=own),
                    forbid=_answered(rule.forbid, typed, pack.sets, answers, unset=unset, own=own),
                )
                found = (rule, *rule_conditions(rule.when, rule.require, rule.forbid, pack.fields, pack.sets))
                if pack.digest:
                    _REWRITTEN.put(key, found)
            made_rules[rule.id] = found
            rule = found[0]
        rules.append(rule)
    # A preference reads `given(FIELD)` as the request's mark (solver.reasoning.plan), but the value
    # typed only here: rankings read the decided values, in which an adjustment has replaced it.
    prefs, ranked = list(pack.preferences), dict(base.preferences)
    for at in valued_preferences(pack):
        pref = prefs[at]
        prefs[at] = frozen.replace(pref, when=_answered(pref.when, typed, pack.sets, answers, True))
        ranked[pref.id] = parse(prefs[at].when or "", pack.fields, pack.sets)
    copy = frozen.replace(pack, rules=tuple(rules), preferences=tuple(prefs), digest=digest)
    # Only the rewritten rules are parsed again; every other condition is the base's own.
    kept = PackSemantics(rules=dict(base.rules), whens=dict(base.whens), preferences=ranked)
    for rid, (_, condition, when) in made_rules.items():
        kept.rules[rid] = condition
        if when is not None:
            kept.whens[rid] = when
    keep_semantics(copy, kept)
    if digest:
        _COPIES.put(digest, (copy, kept))
    return copy


def refusing(
    pack: Pack, values: Mapping[str, Scalar], typed: Collection[str] | Mapping[str, Scalar]
) -> list[Rule]:
    """The hard rules reading `given(...)` that `values` break for a launcher given `typed`: the
    pack's copy for those marks (`for_request`) evaluated on `values` (an answer). Only those rules
    can differ from the ones an answer was made under (`pack`: the pack before any `given(FIELD)`
    was answered). `typed`: the fields a command types, with their values when they are not the
    answer's (a typed value an adjustment replaced), else their names (it types the answer's)."""
    from solver.pack.loader import semantics

    base = semantics(pack).rules
    copy = for_request(pack, typed)
    rules = semantics(copy).rules
    return [
        rule
        for rule in copy.rules
        if rule.severity == "error" and base[rule.id].given and not rules[rule.id].evaluate(values)
    ]


def _launcher_rewrites(
    pack: Pack, given: Collection[str] | Mapping[str, object]
) -> tuple[frozenset[str], dict[str, Scalar]]:
    """What the launcher makes of the request before its checks read it (`Field.rewrites`): the
    typed fields it puts back on their defaults, and the fields it sets with their values. Only a
    request's typed values say (names only: the field's own value is the one typed, which a
    configuration never holds for a rewritten value, as the launcher never keeps it)."""
    if not isinstance(given, Mapping):
        return frozenset(), {}
    unset: set[str] = set()
    rewritten: dict[str, Scalar] = {}
    for name in given:
        field = pack.fields.get(name)
        if field is None or not field.rewrites:
            continue
        sets = field.rewrites.get(show(_typed_value(given[name])))
        if sets is not None:
            unset.add(name)
            rewritten.update(sets)
    return frozenset(unset), rewritten


def _rewritten_values(pack: Pack, names: Collection[str]) -> dict[str, tuple[Scalar, ...]]:
    """The values the launcher rewrites (`Field.rewrites`) of each of `names` that has some."""
    found: dict[str, tuple[Scalar, ...]] = {}
    for name in names:
        field = pack.fields.get(name)
        if field is not None and field.rewrites:
            found[name] = tuple(v for v in field.domain if show(v) in field.rewrites)
    return found


def _typed_value(pin: object) -> object:
    """A request's typed value: a pin's, or the value itself."""
    return pin.value if isinstance(pin, Pin) else pin


def _mark(
    name: str,
    reads: Mapping[str, tuple[_Values, ...]],
    answers: Mapping[str, object] | None,
) -> str:
    """How a copy's digest names what the request gives of `name`: the name, and for a field
    whose typed value a rule reads, which of those reads the typed value makes true (`=+-+`,
    one sign per value set read) or the field's own (`=*`, names only). Only the reads' answers
    make the copy: typed values that answer every read alike share one copy (SGLang 0.5.23+26
    reads the typed --moe-runner-backend as "a runner, not the megamoe alias", and naming the
    value made a copy per runner a request or its repairs typed: nine for one conflict, more
    than a family keeps, so each call compiled them all again)."""
    tested = reads.get(name)
    if tested is None:
        return name
    if answers is None:
        return f"{name}=*"
    typed = answers[name]
    return f"{name}=" + "".join("+" if typed_holds((name, values), typed) else "-" for values in tested)


def _answered(
    text: str | None,
    typed: Collection[str],
    sets: Mapping[str, Sequence[Scalar]],
    answers: Mapping[str, object] | None = None,
    values_only: bool = False,
    unset: Collection[str] = (),
    own: Mapping[str, Sequence[Scalar]] | None = None,
) -> str | None:
    """`text` with each `given(FIELD)` call replaced by whether FIELD is in `typed` and not
    `unset` (typed, but put back on its default by the launcher's rewrite) or, for a FIELD of
    `own` (names only: its own value is the one typed), by `FIELD not in [the values the
    launcher rewrites]`, and each
    `given(FIELD) == VALUE` (or `in [VALUES]`) by False when FIELD is not in `typed`, by whether
    the typed value is among VALUES when `answers` has it, else by `FIELD == VALUE`.
    `values_only`: the `given(FIELD)` calls are left as they are (a preference reads the mark).

    The calls' own source spans are replaced (conditions were checked at load, so they parse);
    not `ast.unparse`, which recurses once per level of a deeply nested condition."""
    import ast

    if text is None or "given" not in text:
        return text
    source = text.strip()
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def span(node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        begin = _offset(source, starts[node.lineno - 1], node.col_offset)
        return begin, _offset(source, starts[node.end_lineno - 1], node.end_col_offset)

    spans: list[tuple[int, int, str]] = []
    inside: set[int] = set()  # the calls of value reads, replaced with their comparison
    for node in ast.walk(syntax.expression(source)):  # parents before children
        read = value_read(node, sets)
        if read is not None:
            assert isinstance(node, ast.Compare)
            inside.add(id(node.left))
            name = read[0]
            if name not in typed:
                spans.append((*span(node), "False"))
            elif answers is not None and name in answers:
                spans.append((*span(node), str(typed_holds(read, answers[name]))))
            else:
                spans.append((*span(node.left), name))  # the typed value is the field's own
        elif is_given_call(node) and id(node) not in inside and not values_only:
            arg = node.args[0] if node.args else None
            if not isinstance(arg, ast.Name) or node.end_lineno is None or node.end_col_offset is None:
                continue  # not a well-formed call: the loader refused the pack already
            if own and arg.id in own and arg.id in typed:
                spans.append((*span(node), f"({arg.id} not in {list(own[arg.id])!r})"))
            else:
                spans.append((*span(node), "True" if arg.id in typed and arg.id not in unset else "False"))
    for begin, end, word in sorted(spans, reverse=True):
        source = source[:begin] + word + source[end:]
    return source


def _offset(source: str, line_start: int, byte_offset: int) -> int:
    """Where in `source` an ast position is: its line's start plus the characters its column
    offset spans (ast counts UTF-8 bytes)."""
    line = source[line_start:].split("\n", 1)[0]
    return line_start + len(line.encode()[:byte_offset].decode(errors="ignore"))


def given_effect(rule: Rule, name: str, typed: Collection[str]) -> int | None:
    """How typing `name` changes what `rule` allows, the other fields' `given(...)` answered by
    `typed`: 0 not at all, +1 it allows a superset (every occurrence of `given(name)` that still
    counts makes the rule easier to hold), -1 a subset, None both ways or unknown. Asked for each
    field of each `choices` request: remembered per rule text and the typed fields it reads."""
    texts = (rule.when, rule.require, rule.forbid)
    return _effect(texts, name, frozenset(_given_in(texts)).intersection(typed))


@functools.lru_cache(maxsize=1024)
def _given_in(texts: tuple[str | None, str | None, str | None]) -> tuple[str, ...]:
    """The fields the `given(...)` calls of a rule's texts name."""
    import ast

    return tuple(
        node.args[0].id
        for text in texts
        if text
        for node in ast.walk(syntax.expression(text.strip()))
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)
    )


@functools.lru_cache(maxsize=4096)
def _effect(texts: tuple[str | None, str | None, str | None], name: str, typed: frozenset[str]) -> int | None:
    import ast

    when, require, _ = texts
    trees = [syntax.expression(t.strip()).body for t in texts if t]
    body = trees[-1] if require is not None else ast.UnaryOp(ast.Not(), trees[-1])
    holds = ast.BoolOp(ast.Or(), [ast.UnaryOp(ast.Not(), trees[0]), body]) if when else body
    _, signs = _polarity(holds, 1, name, typed)
    return 0 if not signs else (next(iter(signs)) if len(signs) == 1 else None)


def _polarity(node: ast.expr, sign: int, name: str, typed: Collection[str]) -> tuple[bool | None, set[int]]:
    """The constant `node` folds to once every `given(X)` but `given(name)` is answered (None if
    none), and the signs `given(name)` occurs with where it still counts. Recursion is bounded:
    the loader refused conditions nested deeper than `MAX_DEPTH`."""
    import ast

    if isinstance(node, ast.Compare) and is_given_call(node.left) and node.left.args:
        # `given(F) == VALUE`: false while F is not typed; typing F makes it true or leaves it
        # false (by the value), so it moves the way `given(F)` does. Another field's read is
        # false when it is not typed and open when it is.
        arg = node.left.args[0]
        called = arg.id if isinstance(arg, ast.Name) else ""
        if called == name:
            return None, {sign}
        return (None if called in typed else False), set()
    if is_given_call(node) and node.args:
        arg = node.args[0]
        called = arg.id if isinstance(arg, ast.Name) else ""
        return (None, {sign}) if called == name else (called in typed, set())
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return node.value, set()
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value, signs = _polarity(node.operand, -sign, name, typed)
        return (None if value is None else not value), signs
    if isinstance(node, ast.BoolOp):
        decisive = isinstance(node.op, ast.Or)  # the value that decides the whole: True for `or`
        parts = [_polarity(v, sign, name, typed) for v in node.values]
        if any(value is decisive for value, _ in parts):
            return decisive, set()
        open_parts = [signs for value, signs in parts if value is None]
        if not open_parts:
            return not decisive, set()
        return None, set().union(*open_parts)
    return None, set()  # a comparison or a field: reads values, not what was given
