"""The options a launch command writes: every option, or the fewest that bring the launcher to a
resolution (what `--format argv [--minimal]`, `to_argv` and the configurator's commands write; the
launcher decides the rest by itself, the same way).

A rule may read whether a flag is typed (`given(FIELD)`, `solver.pack.given`): SGLang 0.5.23
builds GPTQ Marlin MoE experts only with `--moe-runner-backend` left unset, and picks marlin
itself. An answer made with such a field not given holds for a command that leaves it out, so a
command that would type it where a rule then refuses leaves it out instead, when the launcher
reaches the same value by itself (`command_options`); where it does not, no command of the
launcher gives the answer, and that is said (`Unsatisfiable`), never a command the launcher refuses.

Resolves in predict mode, so it sits with the reasoning, above `solver.inputs.launch`, which writes
the command.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from solver.errors import SolverError, Unsatisfiable
from solver.inputs.flagwords import flag_words
from solver.model import ConflictReport, Pack, PinRef, Resolution, Rule, RuleRef, Scalar
from solver.pack.given import given_fields, refusing
from solver.pack.loader import semantics
from solver.values import show

__all__ = ["command_options", "minimal_options"]


def _launcher_choice(pack: Pack, options: Mapping[str, Scalar], facts: Mapping[str, Scalar]) -> Any:
    """What the launcher would decide by itself for these options and facts (predict mode: each
    unset option follows the launcher's own default chain). Resolution is imported here, when a
    command is asked for: `solver.launcher` imports this module at start-up."""
    from solver.reasoning.resolution import resolve

    return resolve(pack, dict(options), dict(facts), reasons=False, predict=True)


def _facts(pack: Pack, values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    return {n: v for n, v in values.items() if pack.fields[n].kind == "fact"}


def _typed(pack: Pack, values: Mapping[str, Scalar], names: Collection[str]) -> list[str]:
    """Those of `names` the command types: an option written as words (not one the launcher
    spells by leaving its flag out, `absent` or a false switch; not an environment variable)."""
    fields = pack.fields
    return [
        n
        for n in names
        if fields[n].kind == "option" and not fields[n].env and flag_words(fields[n], values[n])
    ]


def _reads_given(pack: Pack, rules: Sequence[Rule]) -> set[str]:
    base = semantics(pack).rules
    return {name for rule in rules for name in base[rule.id].given}


def minimal_options(pack: Pack, values: Mapping[str, Scalar]) -> list[str]:
    """The options to write so that the launcher, left to decide the rest itself, ends at
    `values` (a resolution's): start from those that differ from its own choice with none given,
    and add any that still differ once those are given, until nothing differs. An option whose
    being typed a rule refuses (`given(FIELD)`) waits a round while others differ: giving them may
    bring the launcher to its value. Falls back to every option when the launcher's own choice
    cannot be predicted (the request conflicts without them)."""
    options = [n for n, f in pack.fields.items() if f.kind == "option"]
    facts = _facts(pack, values)
    asked = given_fields(pack)
    needed: list[str] = []
    while True:
        try:
            own = _launcher_choice(pack, {n: values[n] for n in needed}, facts).values
        except SolverError:
            return options
        differ = [n for n in options if n not in needed and own[n] != values[n]]
        if not differ:
            return [n for n in options if n in _irredundant(pack, values, facts, options, needed)]
        held: set[str] = set()
        if asked.intersection(differ):
            refused = refusing(pack, values, _typed(pack, values, [*needed, *differ]))
            held = _reads_given(pack, refused).intersection(differ)
        needed += [n for n in differ if n not in held] or differ


def _irredundant(
    pack: Pack,
    values: Mapping[str, Scalar],
    facts: Mapping[str, Scalar],
    options: Sequence[str],
    needed: Sequence[str],
) -> list[str]:
    """`needed` less each option the launcher reaches by itself once the others are typed, latest
    added first. A round adds every option that differs at once, and one of them may follow from
    another: SGLang caps the running requests at 48 by itself once `--speculative-algorithm` is
    typed, so `--max-running-requests 48` need not be written beside it."""
    kept = list(needed)
    for name in reversed(needed):
        rest = [n for n in kept if n != name]
        try:
            own = _launcher_choice(pack, {n: values[n] for n in rest}, facts)
        except SolverError:
            continue
        if not own.adjustments and all(own.values[n] == values[n] for n in options):
            kept = rest
    return kept


def command_options(pack: Pack, res: Resolution, fields: Sequence[str]) -> list[str]:
    """Those of `fields` (the options a command would write: every one, or `minimal_options`'s)
    that the launch command writes: all of them, unless typing one makes a rule reading
    `given(FIELD)` refuse the answer where the request did not give that field; such a field is
    left out when the launcher, given the rest, reaches the answer by itself. Raises
    `Unsatisfiable` (the rule, and the launcher's own pick) when it does not: no command of the
    launcher gives this answer.

    Typing the options the launcher does not refuse can change its own picks of those left out
    (a rule reading `given(...)` of another): where leaving out only the refused ones misses the
    answer, the fewest options (`minimal_options`) are tried before saying no command gives it
    (tests/test_laws_given.py)."""
    found = _command(pack, res, fields)
    if isinstance(found, list):
        return found
    fewest = minimal_options(pack, res.values)
    if set(fewest) < set(fields):
        again = _command(pack, res, fewest)
        if isinstance(again, list):
            return again
    raise found


def _command(pack: Pack, res: Resolution, fields: Sequence[str]) -> list[str] | Unsatisfiable:
    """`command_options` for `fields` alone: the error (returned) when leaving out the refused
    ones misses the answer."""
    asked = given_fields(pack)
    gave = {n for n, p in res.provenance.items() if p.kind in ("user", "adjusted", "fact")}
    facts = [n for n in gave if pack.fields[n].kind == "fact"]
    typed = [*_typed(pack, res.values, fields), *facts]
    if asked.intersection(typed) == asked.intersection(gave):
        return list(fields)  # the launcher reads the same marks the answer was made with
    refused = refusing(pack, res.values, typed)
    if not refused:
        return list(fields)
    apart = _reads_given(pack, refused).intersection(typed).difference(gave)
    own: Mapping[str, Scalar] | None = None
    # Leaving out fewer of them may do: a rule that reads two typed fields refuses only both
    # typed, and the launcher may reach one of them by itself (tests/test_laws_given.py).
    for left in _left_out(sorted(apart)):
        whole = len(left) == len(apart)
        if not whole and refusing(pack, res.values, [n for n in typed if n not in left]):
            continue
        kept = [n for n in fields if n not in left]
        try:
            predicted = _launcher_choice(pack, {n: res.values[n] for n in kept}, _facts(pack, res.values))
        except SolverError:
            predicted = None
        if predicted is not None and not predicted.adjustments:
            if all(predicted.values[n] == v for n, v in res.values.items()):
                return kept
            if whole:
                own = predicted.values
    # Name the fields the launcher does not reach left out (all of them when it cannot be told).
    missed = [n for n in sorted(apart) if own is None or own[n] != res.values[n]] or sorted(apart)
    rules = [rule for rule in refused if _reads_given(pack, [rule]).intersection(missed)] or refused
    return _no_command(pack, res, rules, missed, own)


# The most fields a command leaves out in turn, one subset at a time, before only all of them
# together are tried (a rule reads one or two `given(...)`: a few fields at most).
_SUBSETS_OF = 4


def _left_out(apart: Sequence[str]) -> list[tuple[str, ...]]:
    """The subsets of `apart` a command may leave out, fewest first, all of them last (and only
    that one for more than `_SUBSETS_OF` fields)."""
    if len(apart) > _SUBSETS_OF:
        return [tuple(apart)]
    return [c for size in range(1, len(apart) + 1) for c in itertools.combinations(apart, size)]


def _no_command(
    pack: Pack,
    res: Resolution,
    refused: Sequence[Rule],
    apart: Collection[str],
    own: Mapping[str, Scalar] | None,
) -> Unsatisfiable:
    """No command gives the answer: typing a field makes `refused` refuse it, and left out the
    launcher picks `own` (None: it refuses, or cannot be predicted)."""
    names = list(apart) or sorted(_reads_given(pack, refused))
    typed = ", ".join(f"{pack.fields[n].cli_flag} {show(res.values[n])}" for n in names)
    if own is None:
        left = "left out, the launcher does not reach this answer by itself"
    else:
        picks = [f"{pack.fields[n].cli_flag} {show(own[n])}" for n in pack.fields if own[n] != res.values[n]]
        left = "left out, the launcher picks " + ", ".join(picks[:4]) + (" ..." if len(picks) > 4 else "")
    because = "; ".join(f"{rule.id}: {rule.because}" for rule in refused)
    message = (
        f"no {pack.name} launch command gives this answer: typed, {typed} is refused ({because}); "
        f"{left}. Type another value of {', '.join(pack.fields[n].cli_flag for n in names)}, "
        "or resolve with it given"
    )
    conflict = ConflictReport(
        pins=[PinRef(field=n, value=res.values[n], source="typed by the command") for n in names],
        rules=[RuleRef(id=rule.id, because=rule.because, source=rule.source) for rule in refused],
    )
    return Unsatisfiable(conflict, message=message)
