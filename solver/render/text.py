"""Human text: resolutions as tables, conflicts as "Because A and B, C", repairs as commands.

Users read these without reading the pack, so choices appear in the user's own spelling
(`--quantization fp8`), hardware facts by their labels ("Blackwell consumer (SM120)"), and every
rule with its `because` and `source`. Pure formatting over the answer objects and the pack.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from constraints import DEFAULT_PACK
from solver.model import (
    AssumedGroup,
    AssumedRecord,
    ConflictReport,
    Pack,
    Pin,
    PinRef,
    Provenance,
    Repair,
    Resolution,
    Scalar,
)
from solver.render.steps import conflict_steps, describe_pin
from solver.render.width import terminal_width
from solver.values import same as values_same
from solver.values import show as _show

if TYPE_CHECKING:
    from solver.engine.csp import CompiledPack
    from solver.errors import Unsatisfiable
    from solver.reasoning.resolution import Plan

__all__ = [
    "assumed_notice",
    "conflict_explained",
    "conflict_message",
    "departure_lines",
    "derived_fact",
    "describe_pin",
    "launcher_picks",
    "notices",
    "resolution_table",
    "terminal_width",
    "use_colour",
    "why_text",
]


def _typed_words(
    pack: Pack, name: str, value: Scalar, adjusted: Mapping[str, tuple[Scalar, str]] | None
) -> str:
    """A pin of the request as the user gave it: an adjusted one at its typed value, with what
    the launcher made of it (not the launcher's value as if typed)."""
    if not adjusted or name not in adjusted:
        return describe_pin(pack, name, value, "user")
    typed, rule = adjusted[name]
    return f"{describe_pin(pack, name, typed, 'user')} ({pack.name}:{rule} makes it {_show(value)})"


def _source_words(source: str) -> str:
    return {
        "user": "you set it",
        "adjusted": "adjusted from your value",
        "fact": "given",
        "env": "from the environment",
        "model-config": "from the model's config.json",
        "assumed": "assumed (what-if)",
        "detected": "detected on this machine",
        "launcher-default": "the launcher's own default: you did not set it",
    }.get(source, source)


def derived_fact(cp: CompiledPack, pins: Mapping[str, Pin], name: str, value: Scalar) -> bool:
    """Whether the given facts among `pins` alone leave fact `name` only `value` (what a given
    architecture makes of its traits): no other value of it holds with them."""
    fields = cp.pack.fields
    facts = {n: p.value for n, p in pins.items() if fields[n].kind == "fact"}
    state = cp.start(facts)
    return state is not None and all(
        cp.satisfiable({**facts, name: v}, task="explaining a conflict") is None
        for v in state.domain(name)
        if v != value
    )


def command_for(pack: Pack, pins: Mapping[str, Scalar]) -> str:
    """The `confsolve resolve` command for these pins, ready to paste."""
    parts = ["confsolve resolve"]
    if pack.name != DEFAULT_PACK:
        parts.append(f"--pack {pack.directory or pack.name}")
    parts += [f"--set {n}={_show(v)}" for n, v in pins.items()]
    return " ".join(parts)


def conflict_message(
    plan: Plan,
    pins: Mapping[str, Pin],
    report: ConflictReport,
    repairs: Sequence[Repair] | None,
    *,
    lead: str | None = None,
    render: Callable[[Repair], str] | None = None,
    adjusted: Mapping[str, tuple[Scalar, str]] | None = None,
    explained: str | None = None,
) -> str:
    """`lead`: the first paragraph, when it is not "no configuration satisfies this request"
    (predict mode: a configuration exists, but not the one the launcher picks). `render`: how
    the front end that received the request writes a repair (default: a `confsolve resolve`
    command with every pin). `adjusted`: field -> (the user's value, the adjustment rule) of the
    pins the launcher replaced, so a conflict line names what the user typed. `repairs` None:
    none were searched (`resolve(..., repairs=False)`), which the text says. `explained`: the
    text before the repairs (`conflict_explained` of the same arguments), when made already."""
    if explained is None:
        explained = conflict_explained(plan, pins, report, lead=lead, adjusted=adjusted)
    pack = plan.pack
    lines = [explained]
    if repairs:
        lines.append("What you can change (best first):")
        for number, repair in enumerate(repairs, 1):
            lines.append(f"  {number}. {_repair_words(pack, repair)}")
            if render is not None:
                lines.append(f"     {render(repair)}")
                continue
            # From what the user typed: an adjusted pin is written as typed (a repair that needs
            # the adjusted value sets it itself).
            kept = {n: p.value for n, p in pins.items()} | {n: v for n, (v, _) in (adjusted or {}).items()}
            kept = {n: v for n, v in kept.items() if n not in repair.unset}
            kept.update(repair.set)
            lines.append(f"     {command_for(pack, kept)}")
    elif repairs is None:
        lines.append("Repairs were not searched (asked without them: repairs=False).")
    else:
        lines.append("No change of the given inputs makes this request solvable.")
    return "\n".join(lines)


def conflict_explained(
    plan: Plan,
    pins: Mapping[str, Pin],
    report: ConflictReport,
    *,
    lead: str | None = None,
    adjusted: Mapping[str, tuple[Scalar, str]] | None = None,
) -> str:
    """A conflict's text before its repairs (see `conflict_message`): what was asked, what cannot
    hold, and the steps. The costly part (the chain, the derived facts), and the same whoever
    writes the repairs: a launch command's front end writes them in its own syntax from the
    exception's (`solver.reasoning.resolution.conflict_text`) and had built it all again."""
    pack = plan.pack
    request = ", ".join(_typed_words(pack, n, p.value, adjusted) for n, p in pins.items())
    lines = [lead or f"No configuration satisfies this request: {request or '(no inputs)'}.", ""]
    lines.append("These cannot all hold:")
    for pin in report.pins:
        words = _source_words(pin.source)
        if pin.source == "assumed" and pin.field not in pins:
            # Not the user's what-if (`--assume`, a pin of the request): a fact nobody gave, at
            # the value the facts given leave it (a model's traits), or else the value the
            # answer assumed for it (`launcher_view`).
            words = (
                "follows from the facts given"
                if derived_fact(plan.compiled, pins, pin.field, pin.value)
                else "not given: assumed, set it if it differs"
            )
        if adjusted and pin.field in adjusted:
            typed, rule = adjusted[pin.field]
            words = f"adjusted from your {describe_pin(pack, pin.field, typed, 'user')} by {pack.name}:{rule}"
        lines.append(f"  - {describe_pin(pack, pin.field, pin.value, pin.source)}  ({words})")
    for ref in report.rules:
        lines.append(f"  - rule {pack.name}:{ref.id}: {ref.because}")
        lines.append(f"      source: {ref.source}")
    chain = conflict_steps(plan, report, pins)
    if chain:
        lines += ["", chain]
    lines.append("")
    return "\n".join(lines)


def _repair_words(pack: Pack, repair: Repair) -> str:
    parts = []
    for name in repair.unset:
        field = pack.fields[name]
        what = "leave" if field.kind == "option" else "do not assume"
        flag = field.cli_flag if field.kind == "option" else name
        parts.append(f"{what} {flag} on auto (it resolves to {_show(repair.values.get(name))})")
    facts = []
    for name, value in repair.set.items():
        if pack.fields[name].kind == "fact":
            facts.append(describe_pin(pack, name, value, "user"))
        else:
            parts.append(f"use {describe_pin(pack, name, value, 'user')}")
    if facts:
        # A fact is stated, not chosen: the repair holds only for a model or machine that is so.
        parts.append(f"if it is so, give {' and '.join(facts)}")
    return "; ".join(parts)


# --- resolution tables ----------------------------------------------------------------------


# --color from the command line: "auto" (the default) follows the environment and the terminal.
COLOUR_CHOICE = "auto"


def use_colour(stream: TextIO | None = None) -> bool:
    """Whether to colour: `--color always|never` decides; else NO_COLOR (https://no-color.org)
    turns colour off, FORCE_COLOR (not empty, not "0") turns it on, and otherwise only a
    terminal gets colour.

    `stream` defaults to the current `sys.stdout` (looked up at each call: a program may have
    replaced it since this module was imported); a closed or odd stream means no colour.
    """
    if COLOUR_CHOICE != "auto":
        return COLOUR_CHOICE == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour else text


def assumed_notice(pack: Pack, res: Resolution) -> list[str]:
    """The facts nobody gave: the answer holds only if they are so. One line per fact, except
    those one reason covers: a pack group (`[pack.assumed_groups]`) whose preference filled
    the fact with its first value, and the environment variables, each set on one line."""
    return assumed_lines(pack, res.assumed, res.provenance)


def assumed_lines(
    pack: Pack, assumed: Sequence[AssumedRecord], provenance: Mapping[str, Provenance] | None = None
) -> list[str]:
    """`assumed_notice` of the records `assumed`; `provenance`: who filled each fact (without
    it, a fact at its domain's first value, or at the first value of the only preference of it
    a group lists, is taken as filled so)."""
    if not assumed:
        return []
    lines = ["ASSUMED (not given, not read, not detected; set them if they differ):"]
    grouped: dict[str, dict[str, str]] = {}  # group -> member -> how the line shows it
    env = [a for a in assumed if pack.fields[a.field].env]
    field_of = _preference_fields(pack)  # (once per notice, not per fact or group)
    for item in assumed:
        if pack.fields[item.field].env:
            continue
        if provenance is not None:
            prov: Provenance | None = provenance.get(item.field)
        else:
            prov = _filled_by(pack, item.field, field_of)
        group = _assumed_group(pack, prov, item.field, item.value)
        if group is None:
            lines.append(f"  {describe_pin(pack, item.field, item.value, 'assumed')}: {item.because}")
        else:
            grouped.setdefault(group[0], {})[group[1]] = group[2]
    shown_env = [f"{a.field}={_show(a.value)}" for a in env]
    standing_for_env: list[str] = []  # the `environment` group's facts (see below)
    for name, members in grouped.items():
        spec = pack.assumed_groups[name]
        named = [members[m] for m in spec.members if m in members]  # in the pack's order
        if name == _ENV_GROUP:
            # A fact that stands for environment variables no `env` field holds (a number's
            # default): on the environment line, as the pack's group names it.
            standing_for_env += named
            continue
        reason = _MODEL_SILENT if _read_from_the_model(spec, provenance, field_of) else spec.reason
        lines.append(f"  {reason}: {', '.join(named)}" + (f" — {spec.then}" if spec.then else ""))
    # The variables, with how to read them, then the group's facts, which --env-from-os does not read.
    variables = ", ".join(shown_env) + " (pass --env-from-os to read them)" if shown_env else ""
    told = [part for part in (variables, ", ".join(standing_for_env)) if part]
    if told:
        lines.append("  environment: " + "; ".join(told))
    return lines


_ENV_GROUP = "environment"  # `[pack.assumed_groups.environment]`: joins the environment line
# A group's own reason says its facts were not read ("--model-config reads them"): when another
# of its facts came from the model's config.json, the file was read and does not say these.
_MODEL_SILENT = "the model's config.json (read) does not say"


def _preference_fields(pack: Pack) -> dict[str, str]:
    """The field each preference fills: a group member is a fact's name or such a preference's id."""
    return {p.id: p.field for p in pack.preferences}


def _read_from_the_model(
    spec: AssumedGroup, provenance: Mapping[str, Provenance] | None, field_of: Mapping[str, str]
) -> bool:
    """Whether a fact of group `spec` (a member, or the field a member preference fills,
    `field_of`) was read from the model's config.json in this answer."""
    if provenance is None:
        return False
    fields = {field_of.get(member, member) for member in spec.members}
    return any(provenance[f].source == "model-config" for f in fields if f in provenance)


def _filled_by(pack: Pack, field: str, field_of: Mapping[str, str]) -> Provenance:
    """Who filled an assumed fact when no resolution says: the only preference of it a group
    lists, else its domain's order (`_assumed_group` then checks the value is their first)."""
    for spec in pack.assumed_groups.values():
        for member in spec.members:
            if member != field and field_of.get(member) == field:
                return Provenance(kind="preference", source=None, rule=member, because=None, rejected=[])
    return Provenance(kind="default", source=None, rule=None, because=None, rejected=[])


def _assumed_group(
    pack: Pack, prov: Provenance | None, field: str, value: Scalar
) -> tuple[str, str, str] | None:
    """The pack group (name, member, how the line shows the fact) whose preference filled `field`
    with its first value, or that lists `field` itself when its domain's first value filled it;
    None when none did, so the fact keeps its own line and reason."""
    if prov is not None and prov.kind == "default" and values_same(pack.fields[field].domain[0], value):
        for name, spec in pack.assumed_groups.items():
            if field in spec.members:
                return name, field, f"{spec.members[field]}={_show(value)}"
    if prov is None or prov.kind != "preference" or prov.rule is None:
        return None
    for name, spec in pack.assumed_groups.items():
        if prov.rule in spec.members:
            pref = pack.preference(prov.rule)
            first = pref.prefer[0] if pref.prefer else None
            same = values_same(first, value)
            return (name, prov.rule, spec.members[prov.rule]) if same else None
    return None


def launcher_picks(pack: Pack, res: Resolution, width: int = 100) -> list[str]:
    """`check`'s summary of what the launcher sets by itself for the options the request left
    unset (each decided by a preference, a rule or its default), in the pack's order, wrapped to
    `width` columns. Left out, because they tell a reader nothing to act on: a value the launcher
    spells by leaving its flag out (`absent`, e.g. `--quantization` for none), a feature left off
    (a false bool), and a value that only follows another option's (a `same_as` preference, e.g.
    the prefill backend that follows the attention backend; one copied from a fact, such as the
    checkpoint's method adopted as `--quantization`, is listed). The whole list is `resolve`'s
    table and `check --json`'s `values`."""
    picks: list[str] = []
    for name, field in pack.fields.items():
        prov = res.provenance.get(name)
        value = res.values.get(name)
        if field.kind != "option" or prov is None or value is None:
            continue
        if prov.kind not in ("preference", "rule", "default") or value is False:
            continue
        if field.absent is not None and values_same(value, field.absent):
            continue
        if prov.kind == "preference" and prov.rule is not None and _follows(pack, res, prov.rule, value):
            continue
        picks.append(f"{name}={_show(value)}")
    return _wrapped(f"{pack.name} picks by itself:", picks, width)


def _follows(pack: Pack, res: Resolution, pref_id: str, value: Scalar) -> bool:
    """Whether the preference `pref_id` copied `value` from another option (`same_as`)."""
    try:
        other = pack.preference(pref_id).same_as
    except KeyError:
        return False
    return other is not None and pack.fields[other].kind == "option" and res.values.get(other) == value


def _wrapped(head: str, items: Sequence[str], width: int) -> list[str]:
    """`head item, item, ...` in lines of at most `width` columns (an item longer than a line
    gets one of its own), the lines after the first indented by two spaces."""
    if not items:
        return []
    lines = [head]
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(lines[-1]) + 1 + len(piece) > width and lines[-1].strip() != head.strip():
            lines.append("  " + piece)
        else:
            lines[-1] += " " + piece
    return lines


def departure_lines(res: Resolution) -> list[str]:
    """Where a searched answer departs from the launcher's own picks."""
    return [f"NOT THE LAUNCHER'S OWN PICK: {d.field}: {d.because}" for d in res.departures]


def _no_command_line(pack: Pack, no_command: Unsatisfiable | None) -> list[str]:
    """One line for an answer no launch command gives (`command_options`' conflict: the fields a
    command would type, pinned, and the rules that refuse them typed); its full text is what
    `--format argv` prints."""
    if no_command is None:
        return []
    pins = no_command.conflict.pins
    typed = ", ".join(f"{pack.fields[p.field].cli_flag} {_show(p.value)}" for p in pins)
    rules = ", ".join(r.id for r in no_command.conflict.rules)
    flags = ", ".join(pack.fields[p.field].cli_flag for p in pins)
    return [
        f"NO LAUNCH COMMAND GIVES THIS ANSWER: typed, {typed} is refused ({rules}); left out, the "
        f"launcher picks otherwise. Set another value of {flags} (--format argv says why)"
    ]


def notices(
    pack: Pack,
    res: Resolution,
    *,
    colour: bool = False,
    width: int | None = None,
    no_command: Unsatisfiable | None = None,
) -> list[str]:
    """What qualifies an answer, each in full: adjustments, warnings, assumed facts, departures
    from the launcher's own picks, and `no_command` (no launch command gives the answer, as
    `solver.reasoning.minimal.command_options` says). `width`: wrap each to that many columns (a
    terminal's; piped output keeps one notice per line, for grep)."""
    painted = [
        (
            f"ADJUSTED {pack.fields[adj.field].cli_flag}: {_show(adj.requested)} -> "
            f"{_show(adj.resolved)} ({adj.rule}): {adj.because}",
            "33;1",
        )
        for adj in res.adjustments
    ]
    painted += [(f"WARNING ({w.rule}): {w.message}", "35") for w in res.warnings]
    painted += [(line, "33") for line in assumed_notice(pack, res) + departure_lines(res)]
    painted += [(line, "33;1") for line in _no_command_line(pack, no_command)]
    if width is None:
        return [_paint(line, code, colour) for line, code in painted]
    import textwrap

    indent = "    "
    return [
        _paint(_outdented(part, width), code, colour)
        for line, code in painted
        for part in textwrap.wrap(
            line,
            width,
            initial_indent="",
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        or [line]
    ]


def _outdented(part: str, width: int) -> str:
    """A wrapped line that runs past `width` only by its indent gives up indent to fit: SGLang's
    environment variables run to 52 letters (`SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK=8192,`
    is 57 columns), and a word is never cut."""
    spare = len(part) - len(part.lstrip(" "))
    return part[min(spare, len(part) - width) :] if len(part) > width else part


def tty_width() -> int | None:
    """The columns of the terminal stdout is, or None when it is piped (notices stay whole)."""
    try:
        return terminal_width() if sys.stdout.isatty() else None
    except (AttributeError, ValueError, OSError):
        return None


def resolution_table(
    pack: Pack,
    res: Resolution,
    *,
    colour: bool = False,
    show: str = "all",
    no_command: Unsatisfiable | None = None,
) -> str:
    """The resolved configuration, grouped by area, one aligned row per field; above it, what was
    assumed, where the answer departs from the launcher's own picks, and that no launch command
    gives it (`no_command`)."""
    groups: dict[str, list[str]] = {}
    for name, field in pack.fields.items():
        groups.setdefault(field.group, []).append(name)
    # Columns are sized per group, so one long name (a 52-letter environment variable) widens only
    # its own group. On a terminal a note that would run past the edge continues on the next line
    # under its kind; piped, every row stays one line for grep and diff.
    limit = tty_width()
    title = "predicted (what the launcher does as typed)" if res.mode == "predict" else "resolved"
    lines = [f"{pack.name} {pack.version}: {title}"]
    # Adjustments, warnings and what was assumed first: a 70-line table read through `| head`
    # must not lose them.
    lines += notices(pack, res, colour=colour, width=tty_width(), no_command=no_command)
    adjusted = {a.field for a in res.adjustments}
    for group, members in groups.items():
        lines.append("")
        lines.append(_paint(f"[{group}]", "1", colour))
        width = max(len(n) for n in members)
        vwidth = max(len(_show(res.values[n])) for n in members)
        for name in members:
            prov = res.provenance[name]
            value = _show(res.values[name])
            note = prov.rule or (prov.source if prov.source not in (None, prov.kind, "user") else "")
            row = f"  {name:<{width}}  {value:<{vwidth}}  {prov.kind:<10} {note}".rstrip()
            if limit is not None and len(row) > limit:
                row = _fold_row(row, [name, value, prov.kind, note], 2 + width + 2 + vwidth + 2, limit)
            if name in adjusted:
                row = _paint(row, "33", colour)
            lines.append(row)
    return "\n".join(lines)


def _fold_row(row: str, cells: list[str], kind_at: int, limit: int) -> str:
    """A table row too wide for the terminal, folded: the note continues under the kind column
    (or as far right as it fits, at least a short indent); when even name, value and kind do not fit,
    the name stands alone and the rest follows indented."""
    name, value, kind, note = cells
    head = row[: len(row) - len(note)].rstrip() if note else row
    if len(head) <= limit:
        return head + ("\n" + " " * max(6, min(kind_at, limit - len(note))) + note if note else "")
    return f"  {name}\n" + "\n".join(f"      {part}" for part in (f"{value}  {kind}", note) if part)


def why_text(
    pack: Pack, res: Resolution, name: str, deps: Sequence[str], possible: Sequence[Scalar] | None
) -> str:
    field = pack.fields[name]
    prov = res.provenance[name]
    value = res.values[name]
    label = field.label(value)
    lines = [f"{name} = {_show(value)}" + (f"  ({label})" if label != _show(value) else "")]
    who = {
        "user": "you set it",
        "fact": f"a fact ({_source_words(prov.source or 'fact')})",
        "adjusted": "an adjustment replaced your value",
        "rule": "the rules allow only this value",
        "preference": "a preference chose it",
        "default": "the first value of its domain that works",
    }[prov.kind]
    lines.append(f"  decided by: {who}")
    if prov.rule:
        kind = "preference" if prov.kind == "preference" else "rule"
        item = pack.preference(prov.rule) if kind == "preference" else pack.rule(prov.rule)
        lines.append(f"  {kind} {pack.name}:{item.id}: {item.because}")
        lines.append(f"    source: {item.source}")
    for rej in prov.rejected:
        why = ", ".join(rej.because) if rej.because else "(reason not computed)"
        lines.append(f"  better-ranked {_show(rej.value)} rejected because: {why}")
    if deps:
        lines.append("  depends on: " + ", ".join(f"{d}={_show(res.values[d])}" for d in deps))
    if possible is not None:
        lines.append(
            "  could also be: " + (", ".join(_show(v) for v in possible if v != value) or "nothing else")
        )
    for adj in res.adjustments:
        if adj.field == name:
            lines.append(f"  you asked for {_show(adj.requested)}; {adj.rule}: {adj.because}")
    return "\n".join(lines)


def pins_text(pack: Pack, pins: Sequence[PinRef]) -> str:
    return ", ".join(describe_pin(pack, p.field, p.value, p.source) for p in pins)
