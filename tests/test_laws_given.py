"""The launch-command law on generated packs whose rules read `given(OPTION)` (a launcher that
refuses a value typed, or takes it only typed: solver.pack.given).

The oracle of tests/generated.py reads no request marks, so these laws judge with the engine's
own `check` (itself judged against the oracle on packs without `given()`, tests/test_laws.py)
and, where the engine says no command gives an answer, with every command there is.
"""

from __future__ import annotations

import itertools
import math

from generated import Case, Cond, FieldSpec, PackSpec, PrefSpec, RuleSpec, cases
from hypothesis import assume, event, example, given
from test_laws import law
from test_laws_trust import answer

from solver.errors import Unsatisfiable
from solver.model import Resolution, Scalar
from solver.reasoning.minimal import command_options, minimal_options

# The most commands tried when the engine says none gives the answer (each is one `check`).
_COMMANDS = 256


def _lands(case: Case, got: Resolution, typed: dict[str, Scalar], facts: dict[str, Scalar]) -> bool:
    """Whether the launcher given `typed` (with the answer's facts) lands on exactly `got`, as typed."""
    again = answer(case, predict=True, options=typed, facts=facts)
    return isinstance(again, Resolution) and again.values == got.values and not again.adjustments


_A_IS_P = Cond("cmp", op="==", name="a", value="p")
# The launcher takes `a = p` (its first value), which a warn rule flags; `a = q` works only left
# out, so the search's departure to q is one no command gives (`--a q` refused), while the
# launcher's own p, warned, is one.
_DEPARTS_TO_A_VALUE_REFUSED_TYPED = Case(
    spec=PackSpec(
        fields=(FieldSpec("a", "option", ("p", "q")),),
        sets=(),
        rules=(
            RuleSpec("a-p-is-slow", _A_IS_P, forbid=True, severity="warn"),
            RuleSpec("a-q-untyped", Cond("given", name="a"), when=Cond("not", parts=(_A_IS_P,)), forbid=True),
        ),
        prefs=(),
    ),
    options={},
    facts={},
    strict=False,
)


_F0_IS_MINUS_ONE = Cond("cmp", op="==", name="f0", value=-1)
# Found by this law (seed 1630002): every option is the launcher's own pick; typing `--f4 q`
# with `--f0 -1` is refused, and with `--f0` typed the launcher no longer takes `f4 = f1`, so the
# whole command less `--f4` misses the answer, while the empty command lands on it.
_THE_FULL_COMMAND_LESS_THE_REFUSED_FLAG_MISSES = Case(
    spec=PackSpec(
        fields=(
            FieldSpec("f0", "option", (-1, 0, 1), search=False),
            FieldSpec("f1", "fact", ("q", "p", "r"), depends_on=("f0",), search=False),
            FieldSpec("f4", "option", ("p", "q"), search=False),
        ),
        sets=(),
        rules=(
            RuleSpec("r3", _F0_IS_MINUS_ONE, when=Cond("given", name="f4"), forbid=True),
            RuleSpec(
                "r5",
                Cond("cmp", op="==", name="f1", other="f4"),
                when=Cond("not", parts=(Cond("given", name="f0"),)),
            ),
        ),
        prefs=(),
    ),
    options={},
    facts={},
    strict=True,
)


_F0_IS_P = Cond("cmp", op="==", name="f0", value="p")
# Found by this law (round 18, its generator drawing `given(F) == V` too; the same with
# `given(f1)`): r1 refuses `--f1 r` and `--f3 -1` typed together; left out together the launcher
# takes f3 = 0, but `--f3 -1` alone lands (the launcher reaches f1 = r itself). Leaving out both
# was the only try: "no command gives this answer" (failed on main bda0cd8).
_ONE_OF_TWO_REFUSED_FLAGS_LEFT_OUT = Case(
    spec=PackSpec(
        fields=(
            FieldSpec("f0", "fact", ("p", "q"), search=False),
            FieldSpec("f1", "option", ("r", "p", "q"), depends_on=("f0",), search=False),
            FieldSpec("f2", "fact", ("p", "q", "r"), search=False),
            FieldSpec("f3", "option", (-1, 0)),
        ),
        sets=(),
        rules=(
            RuleSpec(
                "r1",
                Cond("and", parts=(Cond("given", name="f3"), Cond("given", name="f1"))),
                when=Cond(
                    "and",
                    parts=(
                        Cond("cmp", op="==", name="f0", other="f2"),
                        _F0_IS_P,
                        Cond("cmp", op="==", name="f1", value="r"),
                    ),
                ),
                forbid=True,
            ),
            RuleSpec("r2", _F0_IS_P, when=Cond("cmp", op="==", name="f3", value=0), forbid=True),
        ),
        prefs=(PrefSpec("p0", "f0", same_as="f1"), PrefSpec("p1", "f3", prefer=(0,))),
    ),
    options={},
    facts={},
    strict=True,
)


@law(150)
@given(case=cases(unsearched=True, given_rules=True))
@example(case=_ONE_OF_TWO_REFUSED_FLAGS_LEFT_OUT)
@example(case=_DEPARTS_TO_A_VALUE_REFUSED_TYPED)
@example(case=_THE_FULL_COMMAND_LESS_THE_REFUSED_FLAG_MISSES)
def test_the_command_of_an_answer_lands_on_it_typed(case: Case) -> None:
    """What `resolve` answers, its launch command (every option, or the fewest: `--format argv
    [--minimal]`, less the options a `given()` rule refuses typed where the launcher reaches
    them itself) brings the launcher, given the answer's facts, to exactly that answer with
    nothing adjusted. Where the engine says no command does (`command_options` raises), none
    does: no choice of typed and left-out options lands on it; and the launcher's own answer to
    the request fails too (else `resolve` should have given a command's answer: failed on main
    8916668 for `_DEPARTS_TO_A_VALUE_REFUSED_TYPED`, and for
    `_THE_FULL_COMMAND_LESS_THE_REFUSED_FLAG_MISSES`, where the full command said none did)."""
    got = answer(case, predict=False)
    if not isinstance(got, Resolution):
        return
    pack = case.pack
    event(
        "given() read"
        if any(r.body.given_names() or (r.when and r.when.given_names()) for r in case.spec.rules)
        else "plain"
    )
    facts = {n: v for n, v in got.values.items() if pack.fields[n].kind == "fact"}
    options = [n for n in pack.fields if pack.fields[n].kind == "option"]
    for minimal in (False, True):
        fields = minimal_options(pack, got.values) if minimal else options
        try:
            typed = command_options(pack, got, fields)
        except Unsatisfiable as exc:
            event("no command")
            # The launcher's own answer to the request is one its command gives: when there is
            # one, `resolve` must not answer what no command gives.
            assert not isinstance(answer(case, predict=True), Resolution), exc.message
            shapes = [[None, *pack.fields[n].domain] for n in options]
            assume(math.prod(len(s) for s in shapes) <= _COMMANDS)
            for command in itertools.product(*shapes):
                chosen = {n: v for n, v in zip(options, command, strict=True) if v is not None}
                assert not _lands(case, got, chosen, facts), (exc.message, chosen)
            continue
        chosen = {n: got.values[n] for n in typed}
        assert _lands(case, got, chosen, facts), (minimal, chosen)
