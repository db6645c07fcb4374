"""Lint's checks that need no search: the quality of `because` and `source`, unused sets and fields,
fields that decide each other (the graph's strongly connected components), and acknowledgements
(`[lint.acknowledged]` and a rule's `acknowledged`) matched to findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from solver.lint.codes import CODES, Finding
from solver.pack import syntax
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.model import Pack
    from solver.pack.expr import Condition

__all__ = ["acknowledge", "graph_checks", "static_checks"]

# --- the static checks ------------------------------------------------------------------------

_SOURCE_REF = re.compile(r"(/|::|\.py\b|\.md\b|\.rst\b|#\d+|https?://|\bPR\b|\bissue\b)", re.IGNORECASE)


def _names_something(
    text: str, pack: Pack, fields: Iterable[str], patterns: dict[tuple[str, bool], re.Pattern[str]]
) -> bool:
    """Whether `text` names one of `fields`: its name or flag, a value (or a word starting with
    one: "triton_kernels"), or a distinctive word of a value's label ("Hopper", "H100").
    `patterns`: each word's compiled search, kept for the pack (past `re`'s own cache of 512, a
    pack of 1,000 fields compiled every word again: static checks 0.04 -> 0.69 s CPU from 100
    to 1,000 synthetic fields)."""
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
        key = (word.lower(), word in starts)
        pattern = patterns.get(key)
        if pattern is None:
            tail = "" if key[1] else r"(?![\w])"
            pattern = patterns[key] = re.compile(r"(?<![\w])" + re.escape(key[0]) + tail)
        if pattern.search(lowered):
            return True
    return False


def static_checks(pack: Pack) -> list[Finding]:

    from solver.pack.loader import semantics

    sem = semantics(pack)
    out: list[Finding] = []
    every = list(pack.fields)
    patterns: dict[tuple[str, bool], re.Pattern[str]] = {}
    for rule in pack.rules:
        read = list(sem.rules[rule.id].fields) + ([rule.adjusts] if rule.adjusts else [])
        # A rule over facts alone states how the world is; there is nothing for the user to change.
        acts = any(pack.fields[n].kind == "option" for n in read)
        if acts and not _names_something(rule.because, pack, read or every, patterns):
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
        option = pack.fields[pref.field].kind == "option"
        if option and not _names_something(pref.because, pack, read, patterns):
            out.append(
                Finding("CS141", [pref.id], f"`because` names none of {', '.join(read)} (flag or value)")
            )
        if not _SOURCE_REF.search(pref.source):
            out.append(
                Finding("CS142", [pref.id], f"`source` {pref.source!r} names no file, function, issue or URL")
            )
    out += _unused_names(pack)
    out += _given_after_adjustment(pack, sem.preferences)
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


def _given_after_adjustment(pack: Pack, conditions: Mapping[str, Condition | None]) -> list[Finding]:
    """CS115: a preference reading a bare `given(FIELD)` of a field that an adjustment without
    `adjust_to` puts back on auto. There the request's pin is dropped, so the preference reads
    the field as not given, while the rules (answered from the request as typed,
    solver.pack.given) read it as given: two meanings the author cannot see in the text.
    Only the texts of preferences that read `given()` of such a field are parsed again."""
    from solver.pack.marks import given_atoms

    to_auto: dict[str, list[str]] = {}
    for rule in pack.rules:
        if rule.adjusts and not rule.adjust_to:
            to_auto.setdefault(rule.adjusts, []).append(rule.id)
    out: list[Finding] = []
    for pref in pack.preferences:
        cond = conditions.get(pref.id)
        if cond is None or not to_auto.keys() & set(cond.given):
            continue
        # `cond.given` also holds the fields of value reads (`given(F) == V`), which read the
        # value typed whatever an adjustment did: only a bare `given(F)` has two meanings.
        bare = {name for name, read in given_atoms(pref.when or "", pack.sets).values() if read is None}
        for name in sorted(bare & to_auto.keys()):
            rules = to_auto[name]
            out.append(
                Finding(
                    "CS115",
                    [pref.id, *rules],
                    f"`when` reads given({name}), which is false here once {', '.join(rules)} "
                    f"replace a typed {name} (a rule reads it as true): write given({name}) in "
                    "[VALUES] for the value typed, or acknowledge that the adjusted value is meant",
                )
            )
    return out


def _unused_names(pack: Pack) -> list[Finding]:
    """CS151 / CS153: named sets and named conditions that no condition reads."""
    import ast

    out: list[Finding] = []
    used_sets: set[str] = set()
    texts = [t for r in pack.rules for t in (r.when, r.require, r.forbid) if t]
    texts += [p.when for p in pack.preferences if p.when]
    for text in texts:
        # Parsed only when it names a set not yet seen used (a set it reads is named in its text):
        # every text parsed again was 0.1 s at 1,000 synthetic fields, which have no set.
        if not any(name in text for name in pack.sets if name not in used_sets):
            continue
        try:
            tree = syntax.expression(text.strip())
        except SyntaxError:  # pragma: no cover - the loader parsed it already
            continue
        used_sets |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in pack.sets}
    for set_name in pack.sets:
        if set_name not in used_sets:
            out.append(Finding("CS151", [set_name], "no condition uses this set"))
    # The loader expanded each use of a named condition NAME into `(its condition)` (no
    # parentheses when NAME is the whole text), so a use is that text in a rule, a preference or
    # another named condition.
    for name, condition in pack.conditions.items():
        written = f"({condition.strip()})"
        readers = texts + [text for other, text in pack.conditions.items() if other != name]
        if not any(written in text or text.strip() == condition.strip() for text in readers):
            out.append(Finding("CS153", [name], "no rule, preference or named condition reads it"))
    return out


def graph_checks(pack: Pack) -> list[Finding]:
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


def acknowledge(pack: Pack, findings: list[Finding]) -> list[Finding]:
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
    known = (
        {r.id for r in pack.rules} | {p.id for p in pack.preferences} | set(pack.sets) | set(pack.conditions)
    )
    for name, f in pack.fields.items():
        known.add(name)
        known |= {f"{name}={_show(v)}" for v in f.domain}
    for pref in pack.preferences:
        known |= {f"{pref.id}:{_show(v)}" for v in pref.prefer}
    return known
