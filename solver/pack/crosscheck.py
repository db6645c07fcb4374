"""The checks of an assembled pack that look across its tables: ids, references to fields and sets,
`depends_on` cycles, conditions that parse against the declared names (`PackSemantics`), the
launcher's flags, the detection table and the `[model_config]` mapping. Each problem goes to the
caller's list, so one load reports them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from solver.errors import Collector, PackProblem
from solver.frozen import Frozen, frozen_type
from solver.model import DETECTED_HOSTS, DETECTED_QUANTITIES, Field, Launcher, Pack, Preference, Rule, Scalar
from solver.pack.expr import Condition, ExprError, parse, rule_conditions
from solver.values import same

__all__ = [
    "PackSemantics",
    "check_cycles",
    "check_detect",
    "check_flags",
    "check_ids",
    "check_model_config",
    "check_references",
    "flag_spellings",
    "is_flag",
    "parse_conditions",
]

_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}$"  # (compiled where used: a pack read from its files)


@frozen_type
class PackSemantics(Frozen):
    """The parsed conditions of a pack, kept beside it so they are parsed once."""

    rules: dict[str, Condition]
    whens: dict[str, Condition]
    preferences: dict[str, Condition | None]


def check_detect(
    fields: Mapping[str, Field], launcher: Launcher | None, problems: Collector[PackProblem]
) -> None:
    """`detect` maps known quantities to fact fields; `detect_platforms` known hosts to values of
    the platform fact."""
    if launcher is None:
        return
    for quantity, name in launcher.detect.items():
        if quantity not in DETECTED_QUANTITIES:
            known = ", ".join(DETECTED_QUANTITIES)
            problems.add(
                PackProblem(
                    "pack.launcher.detect", f"{quantity!r} is not detected (known: {known})", "pack.toml"
                )
            )
        elif name not in fields or fields[name].kind != "fact":
            problems.add(
                PackProblem("pack.launcher.detect", f"{quantity} = {name!r} is not a fact field", "pack.toml")
            )
    platform = fields.get(launcher.detect.get("platform", ""))
    for host, value in launcher.detect_platforms.items():
        if host not in DETECTED_HOSTS:
            known = ", ".join(DETECTED_HOSTS)
            problems.add(
                PackProblem(
                    "pack.launcher.detect_platforms",
                    f"{host!r} is not a host kind (known: {known})",
                    "pack.toml",
                )
            )
        elif platform is None or value not in platform.domain:
            problems.add(
                PackProblem(
                    "pack.launcher.detect_platforms",
                    f"{host} = {value!r} is not a value of the platform fact",
                    "pack.toml",
                )
            )


def is_flag(word: str) -> bool:
    """Whether `word` can be a flag: a dash, something after it, no space or `=`."""
    return word.startswith("-") and len(word) >= 2 and not any(c.isspace() or c == "=" for c in word)


def flag_spellings(field: Field) -> tuple[str, ...]:
    """Every flag word that sets `field`: its spellings, and their `--no-` forms when it is an
    argparse BooleanOptionalAction (`boolean_optional`)."""
    negated = field.flag_value == "boolean_optional"
    return field.all_flags + tuple("--no-" + f[2:] for f in field.all_flags if negated and f[:2] == "--")


def check_flags(
    fields: Mapping[str, Field], launcher: Launcher | None, problems: Collector[PackProblem]
) -> None:
    """Every launcher flag spells one thing: a field, the model or the config file."""
    owner: dict[str, str] = {}
    if launcher is not None:
        owner.update({flag: "the model" for flag in launcher.model_flags})
        if launcher.config_flag:
            owner[launcher.config_flag] = "the config file"
    for flag in owner:
        if not is_flag(flag):
            problems.add(PackProblem("pack.launcher", f"{flag!r} is not a flag", "pack.toml"))
    for name, field in fields.items():
        where = f"field {name}"
        if field.flags and field.flag:
            problems.add(PackProblem(where, "give `flags` or `flag`, not both", field.file))
        for flag in flag_spellings(field):
            if not is_flag(flag):
                problems.add(PackProblem(where, f"{flag!r} is not a flag", field.file))
            elif flag in owner and owner[flag] != name:
                problems.add(PackProblem(where, f"flag {flag} also spells {owner[flag]}", field.file))
            else:
                owner[flag] = name


def check_model_config(pack: Pack, file: str, problems: Collector[PackProblem]) -> None:
    """The `[model_config]` table is checked with the pack, so a broken one fails at load (and in
    lint), not at the first `--model-config`."""
    from solver.pack.modelconfig import check_model_config_map

    problems.add(
        *(PackProblem(p.where, p.message, p.file or file, p.line) for p in check_model_config_map(pack))
    )


def check_ids(pack: Pack, problems: Collector[PackProblem]) -> None:
    seen: dict[str, str] = {}
    items: list[Rule | Preference] = [*pack.rules, *pack.preferences]
    id_pattern = re.compile(_ID)
    for item in items:
        kind = "rule" if isinstance(item, Rule) else "preference"
        if not id_pattern.match(item.id):
            problems.add(PackProblem(f"{kind} {item.id}", "ids are letters, digits, - _ . : +", item.file))
        if item.id in seen:
            problems.add(
                PackProblem(f"{kind} {item.id}", f"duplicate id (first in {seen[item.id]})", item.file)
            )
        seen.setdefault(item.id, item.file)
    for set_name in pack.sets:
        if set_name in pack.fields:
            problems.add(PackProblem(f"set {set_name}", "has the same name as a field"))


def check_references(pack: Pack, problems: Collector[PackProblem]) -> None:
    fields = pack.fields
    for field in fields.values():
        for dep in field.depends_on:
            if dep not in fields:
                problems.add(
                    PackProblem(
                        f"field {field.name}",
                        f"depends_on unknown field {dep!r}{_hint(dep, fields)}",
                        field.file,
                    )
                )
        for key, sets in field.rewrites.items():
            for name, value in sets.items():
                other = fields.get(name)
                if other is None:
                    problem = f"rewrites {key!r} to unknown field {name!r}"
                elif not other.admits(value):
                    problem = f"rewrites {key!r} to {name} = {value!r}, not its value"
                else:
                    continue
                problems.add(PackProblem(f"field {field.name}", problem, field.file))
    for pref in pack.preferences:
        where = f"preference {pref.id}"
        target = fields.get(pref.field)
        if target is None:
            problems.add(
                PackProblem(where, f"unknown field {pref.field!r}{_hint(pref.field, fields)}", pref.file)
            )
            continue
        problems.add(*(PackProblem(where, msg, pref.file) for msg in _values_problems(target, pref.prefer)))
        if not pref.prefer and pref.same_as is None:
            problems.add(PackProblem(where, "needs `prefer` values or `same_as`", pref.file))
        if pref.same_as is not None:
            other = fields.get(pref.same_as)
            if other is None:
                problems.add(PackProblem(where, f"same_as names unknown field {pref.same_as!r}", pref.file))
            elif {type(v) for v in other.domain} != {type(v) for v in target.domain}:
                problems.add(PackProblem(where, f"same_as {pref.same_as} has another value type", pref.file))
    for rule in pack.rules:
        where = f"rule {rule.id}"
        if rule.adjusts is None:
            if rule.adjust_to:
                problems.add(PackProblem(where, "adjust_to without adjusts", rule.file))
            if rule.typed_only:
                problems.add(PackProblem(where, "typed_only without adjusts", rule.file))
            continue
        target = fields.get(rule.adjusts)
        if target is None:
            problems.add(PackProblem(where, f"adjusts unknown field {rule.adjusts!r}", rule.file))
            continue
        if rule.severity != "error":
            problems.add(PackProblem(where, "an adjustment must have severity error", rule.file))
        problems.add(
            *(PackProblem(where, msg, rule.file) for msg in _values_problems(target, rule.adjust_to))
        )


def _values_problems(field: Field, values: Iterable[Scalar]) -> list[str]:
    out = []
    for value in values:
        if not any(same(value, v) for v in field.domain):
            out.append(f"{value!r} is not a value of {field.name}")
    return out


def check_cycles(pack: Pack, problems: Collector[PackProblem]) -> None:
    """depends_on must be acyclic; report each cycle as the whole chain.

    Iterative depth-first search: a legal chain may be thousands of fields long. At most
    _MAX_CYCLES_SHOWN cycles are listed (a hostile pack can have quadratically many)."""
    fields = pack.fields
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    found = 0
    for start in fields:
        if start in state:
            continue
        path = [start]
        where = {start: 0}  # position on `path`
        todo = [iter(dict.fromkeys(fields[start].depends_on))]
        state[start] = 1
        while todo:
            dep = next(todo[-1], None)
            if dep is None:
                done = path.pop()
                todo.pop()
                del where[done]
                state[done] = 2
            elif dep not in fields:
                continue
            elif state.get(dep) == 1:
                found += 1
                if found <= _MAX_CYCLES_SHOWN:
                    problems.add(PackProblem("depends_on cycle", _chain([*path[where[dep] :], dep])))
            elif dep not in state:
                state[dep] = 1
                where[dep] = len(path)
                path.append(dep)
                todo.append(iter(dict.fromkeys(fields[dep].depends_on)))
    if found > _MAX_CYCLES_SHOWN:
        problems.add(PackProblem("depends_on cycle", f"... and {found - _MAX_CYCLES_SHOWN} more cycles"))


_MAX_CYCLES_SHOWN = 50


def _chain(names: list[str], ends: int = 20) -> str:
    """`a -> b -> a`; a chain longer than 2 * `ends` links shows its ends and how many are left out."""
    if len(names) <= 2 * ends:
        return " -> ".join(names)
    left_out = len(names) - 2 * ends
    return " -> ".join([*names[:ends], f"... ({left_out} more)", *names[-ends:]])


def parse_conditions(pack: Pack, problems: Collector[PackProblem]) -> PackSemantics:
    fields, sets = pack.fields, pack.sets
    for set_name, values in sets.items():
        if len({type(v) for v in values}) > 1:
            problems.add(PackProblem(f"set {set_name}", "mixes value types"))
    rules: dict[str, Condition] = {}
    whens: dict[str, Condition] = {}
    prefs: dict[str, Condition | None] = {}
    for rule in pack.rules:
        try:
            rules[rule.id], when = rule_conditions(rule.when, rule.require, rule.forbid, fields, sets)
            if when is not None:
                whens[rule.id] = when
        except ExprError as exc:
            problems.add(PackProblem(f"rule {rule.id}", str(exc), rule.file))
            continue
        if rule.adjusts is not None and rule.adjusts in rules[rule.id].given:
            problems.add(PackProblem(f"rule {rule.id}", _GIVEN_OF_ITS_TARGET.format(rule.adjusts), rule.file))
        if rule.adjusts is not None and rule.adjusts not in rules[rule.id].fields:
            problems.add(
                PackProblem(
                    f"rule {rule.id}", f"adjusts {rule.adjusts}, which the rule does not read", rule.file
                )
            )
    for pref in pack.preferences:
        try:
            prefs[pref.id] = parse(pref.when, fields, sets) if pref.when is not None else None
        except ExprError as exc:
            problems.add(PackProblem(f"preference {pref.id}", str(exc), pref.file))
    return PackSemantics(rules=rules, whens=whens, preferences=prefs)


# The launcher's override replaces the value, so whether the field was given is no longer the
# user's word: the adjustment would read its own doing (`typed_only` says "only when typed").
_GIVEN_OF_ITS_TARGET = (
    "an adjustment may not read given() of the field it adjusts: given({0}) in a rule that adjusts "
    "{0} (`typed_only = true` makes it fire only when the fields its `when` reads are given)"
)


def _hint(name: str, known: Mapping[str, Any]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
