"""The text writers of the formats table (`render/formats.py`): each command's answer as a person
reads it, exactly what goes to stdout (and, for `count`, the notes for stderr).

The pieces (tables, conflicts, labels) are `render/text.py`'s; these put a command's answer
together from them. A lint report and a diff write their own text and JSON (`lint/codes.py`
`LintReport`, `lint/diffreport.py`), which `report` and `documents.report`/`documents.diff` call:
the table is still what picks them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from solver.bounded import PACKS_KEPT, Lru, digest_family
from solver.engine.csp import compile_pack
from solver.engine.opendomain import query_pack
from solver.errors import Unsatisfiable
from solver.model import Pack, Repair, Resolution, Scalar
from solver.render.text import (
    assumed_lines,
    derived_fact,
    launcher_picks,
    notices,
    resolution_table,
    terminal_width,
    tty_width,
    use_colour,
    why_text,
)
from solver.values import count_text, show

__all__ = ["check", "choices", "conflict_paragraph", "count", "count_notes", "pack", "resolution", "why"]


def resolution(
    pack: Pack, res: Resolution, command: Any, fields: Sequence[str], unreachable: Unsatisfiable | None = None
) -> str:
    """The table; above it, when no launch command gives this answer, that is said with the rest
    of what qualifies it (a user who reads text alone would otherwise learn it from
    `--format argv` only)."""
    return resolution_table(pack, res, colour=use_colour(), no_command=unreachable) + "\n"


def why(pack: Pack, res: Resolution, name: str, deps: Sequence[str], possible: Sequence[Scalar]) -> str:
    return why_text(pack, res, name, deps, possible) + "\n"


def choices(pack: Pack, found: Any) -> str:
    """Each field's possible values (⚠ on those that work with a warning), then why each
    excluded value is excluded."""
    lines = []
    for name, possible in found.possible.items():
        opened = found.open.get(name)
        warned = found.warned.get(name, {})
        # No value: with the other inputs (for a field a rule asks about: typing it, as picking one
        # does), not "the inputs conflict": they may hold with the field left unset.
        shown = ", ".join(str(v) + (" ⚠" if v in warned else "") for v in possible) or (
            "(none of the listed values)" if opened else "(none works with the other inputs)"
        )
        lines.append(
            f"{name}: {shown}" + (f"; open: {opened} (other values are checked when given)" if opened else "")
        )
        for value, rules in warned.items():
            because = "; ".join(f"{rid}: {pack.rule(rid).because}" for rid in rules)
            lines.append(f"    ⚠ {value} works, with a warning ({because})")
        for value, items in found.excluded.get(name, {}).items():
            lines.append(
                f"    not {value}: "
                + ", ".join(i.label() + (" (assumed)" if i.source == "assumed" else "") for i in items)
            )
    # The facts the choices take as `resolve` assumes them: a value excluded by one of them is
    # possible for another model or machine, once that fact is set.
    lines += assumed_lines(pack, found.assumed)
    return "".join(line + "\n" for line in lines)


def check(
    pack: Pack, outcome: Any, renderer: Callable[[Repair], str] | None, notes: Sequence[str] = ()
) -> str:
    """`check`: "ok" with what the launcher picks by itself and the notices, or the conflict in
    one paragraph (repairs written by `renderer` when the request was a launch command). The
    launch command's `notes` are on stderr already (`merge_launch`), said as it was read."""
    if isinstance(outcome, Resolution):
        lines = [
            f"ok: {pack.name} takes the request as typed"
            + (" (with the warnings below)" if outcome.warnings else "")
            + "."
        ]
        # Painted as `resolve` paints them: on a terminal, or as NO_COLOR / FORCE_COLOR / --color say.
        lines += launcher_picks(pack, outcome, terminal_width())
        lines += notices(pack, outcome, colour=use_colour(), width=tty_width())
        return "".join(line + "\n" for line in lines)
    rules = outcome.conflict.rules
    if rules and all(pack.rule(r.id).severity == "warn" for r in rules):
        # It works as typed: only --deny-warnings refuses it.
        lines = [f"conflict (--deny-warnings): {pack.name} takes the request as typed, but warns:"]
        lines += [f"WARNING ({r.id}): {r.because}" for r in rules]
        return "".join(line + "\n" for line in lines)
    return conflict_paragraph(outcome, renderer, pack) + "\n"


def conflict_paragraph(
    exc: Any, render: Callable[[Repair], str] | None = None, pack: Pack | None = None
) -> str:
    """One paragraph for `check`: what cannot hold, the first repair, where to read more.
    `render`: the first repair as words of a sentence (its command in backticks: the CLI's
    `repair_renderer(..., in_sentence=True)`); without it, the changes themselves. `pack`: the
    pack asked, to tell a fact the given facts decide from one the answer assumed."""
    first = exc.repairs[0] if exc.repairs else None
    rules = ", ".join(r.id for r in exc.conflict.rules)
    said = {"launcher-default": " (its own default)", "assumed": " (assumed: not given)"}
    adjusted = getattr(exc, "adjusted", {})
    request = getattr(exc, "request", None) or {}
    cp = compile_pack(query_pack(pack, request)) if pack is not None and request else None

    def source(p: Any) -> str:
        if p.field in adjusted:
            return f" (your {adjusted[p.field][0]}, adjusted by {adjusted[p.field][1]})"
        assumed = p.source == "assumed" and p.field not in request
        if assumed and cp is not None and derived_fact(cp, request, p.field, p.value):
            return " (follows from the facts given)"
        return said.get(p.source, "")

    # (Values as every other answer spells them: `is_moe=true`, not Python's `True`.)
    pins = ", ".join(f"{typed_pin(pack, p.field, p.value)}{source(p)}" for p in exc.conflict.pins)
    fix = ""
    if first is not None and render is not None:
        fix = f" Try: {render(first)}."  # (`render` puts the command in backticks)
    elif first is not None:
        changes = [f"leave {typed_name(pack, n)} on auto" for n in first.unset]
        changes += [
            f"{'use' if _is_option(pack, n) else 'set'} {typed_pin(pack, n, v)}" for n, v in first.set.items()
        ]
        fix = " Try: " + "; ".join(changes) + "."
    elif getattr(exc, "repairs_searched", False):
        # Said as `resolve` says it: what the user typed is not what fails, the model or machine is.
        fix = " No change of the given inputs makes this request solvable."
    lead = ""
    if exc.launcher_default is not None:
        d = exc.launcher_default
        assumed = any(p.field == d["field"] and p.source == "assumed" for p in exc.conflict.pins)
        lead = (
            f"{typed_name(pack, d['field'])} was not given and {typed_pin(pack, d['field'], d['value'])} "
            f"is assumed ({d['preference'] or 'its default'}; a fact is never searched), and it fails. "
            if assumed
            else f"as typed, the launcher picks {typed_pin(pack, d['field'], d['value'])} by itself "
            f"({d['preference'] or 'its default'}), and it fails. "
        )
    quoted = quoted_rule(exc, first, pack, cp)
    because = quoted.because.rstrip() if quoted is not None else ""
    if quoted is None and pack is not None and cp is not None:
        because = _no_rule_alone(exc, pack, cp)
    if because and not because.endswith((".", "!", "?")):
        because += "."  # a rule's because is a clause as often as a sentence: the paragraph goes on
    word = because.split(" ", 1)[0]
    if pack is not None and word.isalpha() and word.islower() and not _named(pack, word):
        # A clause that starts with a plain word ("this backend's kernels ...") starts a sentence
        # here; a flag, a value or a name (`nvfp4_online`, a backend `trtllm`) keeps its spelling.
        because = because[0].upper() + because[1:]
    return (
        f"conflict: {lead}{pins} cannot hold together under {rules}. "
        f"{because}{fix} "
        f"Run `confsolve resolve` with the same inputs for the full explanation."
    )


def _named(pack: Pack, word: str) -> bool:
    """Whether `word` is a field of the pack or a value of one (said as the pack spells it)."""
    return word in _names(pack)


# The names of a pack (`_names`), by its digest: every `check` paragraph asks, and the scan of
# every field's domain was per paragraph (~600 values in each shipped pack).
_NAMES: Lru[str, frozenset[str]] = Lru(PACKS_KEPT, family=digest_family)


def _names(pack: Pack) -> frozenset[str]:
    """The pack's field names and the values of its fields spelled as words, in one pass."""
    found = _NAMES.get(pack.digest) if pack.digest else None
    if found is None:
        found = frozenset(pack.fields).union(
            value for field in pack.fields.values() for value in field.domain if isinstance(value, str)
        )
        if pack.digest:
            _NAMES.put(pack.digest, found)
    return found


def quoted_rule(exc: Any, first: Repair | None, pack: Pack | None, cp: Any) -> Any:
    """The rule of the conflict whose `because` the one paragraph quotes: the one tied to what
    the user can change. A rule over derived facts (an architecture's traits, a Qwen3-Next's head
    size) says what the others read, not what to change: a0ebea6 quoted "sparse MLA is a kind of
    MLA; set is_mla=true" for DeepSeek-V3.2 on an A100 next to "Try: set gpu_arch=sm90".

    Best first: a rule reading a field the first repair changes (the paragraph's "Try:" is then
    its answer), then one reading a flag the user typed, then one reading any option; of equals,
    the conflict's order. Without the compiled pack (no request), the conflict's first rule.

    None when no rule of several reads either and they read an option nobody set
    (`_unset_options`): each rule then only narrows that option (DeepSeek-V3.2 on A100s, resolve_ab's
    vllm:405: 0b3452a quoted "this backend belongs to another platform (ROCm, XPU, CPU) ... or
    leave --attention-backend unset" of a backend nobody typed), and the paragraph says that
    together they leave the option no value (`_no_rule_alone`)."""
    rules = exc.conflict.rules
    if not rules or cp is None or pack is None:
        return rules[0] if rules else None
    repaired = set(first.set) | set(first.unset) if first is not None else set()
    typed = {p.field for p in exc.conflict.pins if p.source in ("user", "adjusted")}

    def rank(ref: Any) -> tuple[bool, bool, bool]:
        fields = _reads(pack, cp, ref.id)
        return (
            not repaired & fields,
            not typed & fields,
            not any(pack.fields[f].kind == "option" for f in fields if f in pack.fields),
        )

    best = min(rules, key=rank)  # (`min` keeps the first of equals: the conflict's order)
    untied = rank(best)[:2] == (True, True)
    if untied and len(rules) > 1 and _unset_options(exc, pack, cp):
        return None
    return best


def _reads(pack: Pack, cp: Any, rid: str) -> set[str]:
    """The fields rule `rid` reads in the request's copy `cp`, with those it asks `given(FIELD)`
    of (answered in the copy, which reads FIELD)."""
    from solver.pack.loader import semantics

    return set(cp.rules[rid].fields).union(semantics(pack).rules[rid].given)


def _unset_options(exc: Any, pack: Pack, cp: Any) -> list[str]:
    """The options the conflict's rules read that neither the request nor the conflict pins, in
    the rules' order."""
    request = getattr(exc, "request", None) or {}
    pinned = {p.field for p in exc.conflict.pins}
    read = [f for ref in exc.conflict.rules for f in sorted(_reads(pack, cp, ref.id))]
    return [
        f
        for f in dict.fromkeys(read)
        if f in pack.fields and pack.fields[f].kind == "option" and f not in request and f not in pinned
    ]


def _no_rule_alone(exc: Any, pack: Pack, cp: Any) -> str:
    """What the paragraph says in place of a rule's `because` when no rule is tied to what the
    user typed or a repair changes (`quoted_rule` None): the rules of a minimal conflict are each
    needed, so none is the reason alone; together they leave the options nobody set no value."""
    unset = _unset_options(exc, pack, cp)
    if not unset:  # (no rule in the conflict, or none reading an unset option: nothing to say)
        return ""
    what = "no value" if len(unset) == 1 else "no values that hold together"
    named = " and ".join(typed_name(pack, f) for f in unset)
    return f"No rule alone is the reason: together they leave {named} (not given) {what}."


def _is_option(pack: Pack | None, name: str) -> bool:
    return pack is not None and name in pack.fields and pack.fields[name].kind == "option"


def typed_name(pack: Pack | None, name: str) -> str:
    """A field as the user types it in a launch command: an option as its launcher flag
    (`--attention-backend`), a fact or an environment variable by its name (`gpu_arch`,
    `SGLANG_USE_AITER`: no launcher flag spells those). JSON keeps the field names."""
    return pack.fields[name].cli_flag if _is_option(pack, name) and pack is not None else name


def typed_pin(pack: Pack | None, name: str, value: Scalar) -> str:
    """`--attention-backend fa3` for an option, `gpu_arch=sm120` for a fact (as `resolve` lists a
    conflict's pins, without the facts' labels: the paragraph is one sentence)."""
    if _is_option(pack, name):
        return f"{typed_name(pack, name)} {show(value)}"
    return f"{name}={show(value)}"


def packs(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(f"{row['name']:<12} {row['version']:<12} {row['description']}\n" for row in rows)


def pack(pack: Pack) -> str:
    """`show`: the pack's fields by kind (ten values each at most) and its rules."""
    lines = [
        f"{pack.name} {pack.version}: {pack.description}",
        f"{len(pack.fields)} fields, {len(pack.rules)} rules, {len(pack.preferences)} preferences",
    ]
    for kind in ("fact", "option"):
        lines.append(f"\n{kind}s:")
        for name, field in pack.fields.items():
            if field.kind == kind:
                values = ", ".join(str(v) for v in field.domain[:10])
                more = f", ... ({len(field.domain)})" if len(field.domain) > 10 else ""
                if field.open is not None:
                    more += f" (open: {field.open.text()})"
                lines.append(f"  {name}: {values}{more}")
    lines.append("\nrules:")
    for rule in pack.rules:
        tag = (
            " [warn]"
            if rule.severity == "warn"
            else " [adjusts " + rule.adjusts + "]"
            if rule.adjusts
            else ""
        )
        lines.append(f"  {rule.id}{tag}: {rule.because}")
    return "".join(line + "\n" for line in lines)


def report(found: Any) -> str:
    """A lint report or a diff: each writes its own text."""
    return f"{found.text()}\n"


def explained(code: str, entry: Any, text: str) -> str:
    return text + "\n"


def count(pack: Pack, outcome: Any, pins: Mapping[str, Scalar], by: str | None) -> str:
    given = ", ".join(f"{n}={show(v)}" for n, v in pins.items()) or "no inputs"
    lines = [
        f"{count_text(outcome.count)} valid configurations ({given}; "
        f"{outcome.steps} steps, {outcome.seconds:.2f} s)"
    ]
    if outcome.by is not None:
        width = max(len(show(v)) for v in outcome.by)
        lines += [
            f"  {by}={show(value):<{width}}  {count_text(number)}" for value, number in outcome.by.items()
        ]
    return "".join(line + "\n" for line in lines)


def count_notes(pack: Pack, outcome: Any, pins: Mapping[str, Scalar], by: str | None) -> str:
    """What a count's text leaves to stderr: a conflict's hint, and which open fields were
    counted over their listed values only."""
    lines = []
    if outcome.count == 0 and pins:
        lines.append("the inputs conflict: `confsolve check` with the same inputs says why")
    unpinned_open = [n for n, f in pack.fields.items() if f.open is not None and n not in pins]
    if unpinned_open:  # an open range has no end: its listed values are what was counted
        lines.append(
            f"open fields counted over their listed values: {', '.join(unpinned_open)} "
            "(any other value is counted when given)"
        )
    return "".join(line + "\n" for line in lines)
