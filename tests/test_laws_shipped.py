"""Laws of trust on the shipped packs (SGLang, vLLM), for seeded random requests: a device drawn
from the pack's platforms, a few facts and one to four typed options at random values.

The same laws as tests/test_laws_trust.py, where a wrong answer costs a user a failed launch:
what `resolve` answers, `check` of its command line takes as typed; what `check` accepts,
`resolve` answers; nothing typed changes without a reported adjustment; giving the facts it
assumed changes nothing; a repair gets the values it promised. The default run draws
`QUICK` requests per pack and law; `pytest -m long` (or `CONFSOLVE_LONG=1`) forty times as many,
`CONFSOLVE_EXAMPLES=N` exactly N, `CONFSOLVE_SEED=S` another draw (a failure names its request,
which is all it takes to replay). `CONFSOLVE_WIDE=1` draws wider requests for a hunt: any GPU of
the platform the pack knows (not five CUDA and two ROCm ones), up to eight facts and six options.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import cache, partial
from typing import Any

import pytest
from generated import KNOWN_BUGS
from test_laws import LONG_FACTOR

from solver import check, load_pack, resolve, valid_choices
from solver.engine.opendomain import query_pack
from solver.errors import Unsatisfiable
from solver.inputs.launch import read_command
from solver.inputs.pins import collect_pins
from solver.launcher import to_argv
from solver.model import Pack, Repair, Resolution, Scalar
from solver.pack.given import for_request
from solver.pack.loader import semantics

pytestmark = pytest.mark.property

QUICK = 12
_DEVICES = {"cuda": ["sm80", "sm89", "sm90", "sm100", "sm120"], "hip": ["gfx942", "gfx950"]}
Request = tuple[dict[str, Scalar], dict[str, Scalar]]


def _count(long: bool = False) -> int:
    exact = int(os.environ.get("CONFSOLVE_EXAMPLES", "0"))
    return exact or QUICK * (LONG_FACTOR if long or os.environ.get("CONFSOLVE_LONG") == "1" else 1)


@cache
def _pack(name: str) -> Pack:
    return load_pack(name)


def requests(
    name: str, law: str, count: int, around: bool = False
) -> Iterator[tuple[Pack, dict[str, Scalar], dict[str, Scalar]]]:
    """`count` requests on pack `name`, the same for every run of one law (seeded by the law's
    name, the count and `CONFSOLVE_SEED`), each valid (typed values of the fields' domains).
    `around`: the draw around the rules that adjust a typed value or read a resource (`_around`)."""
    if around:
        yield from _around(name, law, count)
        return
    pack = _pack(name)
    rng = random.Random(f"{law}/{name}/{count}/{os.environ.get('CONFSOLVE_SEED', '14')}")
    platforms = list(pack.fields["platform"].domain)
    facts_pool = [n for n in pack.facts if n not in ("platform", "gpu_arch")]
    options = [n for n in pack.options if len(pack.fields[n].domain) > 1]
    wide = os.environ.get("CONFSOLVE_WIDE") == "1"
    arch = pack.fields["gpu_arch"].domain
    arches = {p: [a for a in arch if str(a)[:2] == d[0][:2]] for p, d in _DEVICES.items()}  # sm*, gfx*
    for _ in range(count):
        platform = rng.choice(["cuda", "cuda", "hip", rng.choice(platforms)])
        facts: dict[str, Scalar] = {"platform": platform}
        if platform in _DEVICES:
            facts["gpu_arch"] = rng.choice((arches if wide else _DEVICES)[platform])
        for fact in rng.sample(facts_pool, rng.randint(0, 8 if wide else 3)):
            facts[fact] = rng.choice(pack.fields[fact].domain)
        typing = rng.sample(options, rng.randint(1, 6 if wide else 4))
        typed = {n: rng.choice(pack.fields[n].domain) for n in typing}
        yield pack, typed, facts


def _around(name: str, law: str, count: int) -> Iterator[tuple[Pack, dict[str, Scalar], dict[str, Scalar]]]:
    """`requests(..., around=True)`: each request drawn around one rule, at random, of those that
    adjust a typed value or read an option the search may not choose (a resource: a parallel
    size, the quantization, the dtype): the options it reads typed (a resource only half the
    time: unset, the launcher's default is what the search must keep) and the facts it reads
    given, each at a random value of its domain. The plain draw types one to four of all the
    options (22 on SGLang, 18 on vLLM) and seldom meets a rule's fields together: on an engine
    mutated to report no adjustment of a resource (SGLang's `--ep-size` under an a2a backend),
    the typed law passed it on both packs and failed here; on one whose search chose the
    resources, the resources law passed vLLM's plain draw and failed here."""
    pack = _pack(name)
    sem = semantics(pack)
    resources = {n for n in pack.options if not pack.fields[n].search}
    rules = [r.id for r in pack.rules if r.adjusts or resources & set(sem.rules[r.id].fields)]
    rng = random.Random(f"around/{law}/{name}/{count}/{os.environ.get('CONFSOLVE_SEED', '14')}")
    arch = pack.fields["gpu_arch"].domain
    for _ in range(count):
        read = sem.rules[rng.choice(rules)].fields
        platform = rng.choice(pack.fields["platform"].domain if "platform" in read else ["cuda", "hip"])
        facts: dict[str, Scalar] = {"platform": platform}
        if platform in _DEVICES:
            facts["gpu_arch"] = rng.choice([a for a in arch if str(a)[:2] == _DEVICES[platform][0][:2]])
        typed: dict[str, Scalar] = {}
        for field in read:
            spec = pack.fields[field]
            if field in facts or rng.random() >= (0.5 if field in resources else 0.75):
                continue
            (facts if spec.kind == "fact" else typed)[field] = rng.choice(spec.domain)
        if not typed:
            option = rng.choice([n for n in pack.options if len(pack.fields[n].domain) > 1])
            typed[option] = rng.choice(pack.fields[option].domain)
        yield pack, typed, facts


# A law that needs answers asks `count` requests, and more (of at most DRAWS x `count`) until one
# exercised it: a pack change can leave a fixed draw with none (vLLM 0.33.0+16 refused all twelve
# of the assumed-real law's, and the law went unexercised; SGLang 0.5.23+23 the repairs law's).
DRAWS = 20


def _answer(
    fn: Any, pack: Pack, options: Mapping[str, Scalar], facts: Mapping[str, Scalar], *, repairs: bool = False
) -> Any:
    """`fn`'s answer or its `Unsatisfiable`; without repairs unless a law applies them (the
    answer is the same: tests/test_laws_answers.py; they were most of a conflict's cost)."""
    try:
        return fn(pack, dict(options), dict(facts), repairs=repairs)
    except Unsatisfiable as exc:
        return exc


def _given_back(pack: Pack, got: Resolution, facts: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The facts of the request with the ones the answer assumed given."""
    return {**facts, **{a.field: a.value for a in got.assumed}}


def _request_pack(pack: Pack, options: Mapping[str, Scalar], facts: Mapping[str, Scalar]) -> Pack:
    """The pack the request under test works on, as `resolve` and `check` make it
    (`solver.engine.opendomain.query_pack`): open domains widened by its values, and each
    `given(FIELD)` of a rule answered as the request gives FIELD (`given(F) == V` by the value
    typed), with no `given()` left (`answer_all`: false for a field it does not give, where the
    pack itself would leave the call). A law that asks the pack itself reads a given fact's
    `given()` as false (vLLM's `arch-moe`, `given(has_sliding_window) or not has_sliding_window`,
    then refuses a Mixtral the request's `has_sliding_window=true` allows), and one that asks
    `valid_choices` of a field a rule asks about, or pins the facts the answer assumed, reads it
    as typed (picking a value types it: a Mixtral's window, false unless the request gives one,
    becomes free): neither is the request."""
    pins = collect_pins(pack, dict(options), dict(facts))
    return for_request(query_pack(pack, pins), pins, answer_all=True)


def _typed_from(pack: Pack, argv: list[str], got: Resolution) -> dict[str, Scalar]:
    """The options a launcher reading `argv` gets (read back as confsolve reads a launch
    command), with the environment options (not flags) at the answer's values."""
    typed = dict(read_command(pack, argv).options)
    typed.update({n: got.values[n] for n in pack.options if pack.fields[n].env})
    return typed


def _law_every_typed_value_is_kept_or_reported_as_adjusted(name: str, count: int) -> None:
    """`resolve` and `check`: a typed option keeps its value unless a reported adjustment
    declared on it replaced it; a given fact keeps its value."""
    exercised = 0
    for drawn, (pack, options, facts) in enumerate(requests(name, "typed", DRAWS * count)):
        if drawn >= count and exercised:
            break
        for fn in (resolve, check):
            got = _answer(fn, pack, options, facts)
            if not isinstance(got, Resolution):
                continue
            exercised += 1
            adjusted = {a.field: a for a in got.adjustments}
            for field, value in options.items():
                record = adjusted.get(field)
                if record is None:
                    assert got.values[field] == value, (fn.__name__, options, facts, field)
                else:
                    assert record.requested == value and record.resolved == got.values[field]
                    assert pack.rule(record.rule).adjusts == field
            assert all(got.values[n] == v for n, v in facts.items()), (fn.__name__, options, facts)
    assert exercised, "no request resolved: the law was not exercised"


def _law_what_check_accepts_resolve_answers_and_says_where_it_departs(name: str, count: int) -> None:
    """`check` ok ⇒ `resolve` works and keeps every typed value `check` kept (the launcher takes
    the command as typed, so the best answer needs no change to it); an option whose value
    differs is a departure `resolve` lists (the launcher's pick being `check`'s value), or a typed
    one an adjustment of `check` replaced. `check` refused at the launcher's own pick of an unset
    option ⇒ where `resolve` answers, that option is a departure (`_departs_where_the_launcher_fails`)."""
    exercised = 0
    for pack, options, facts in requests(name, "check-then-resolve", count):
        predicted = _answer(check, pack, options, facts)
        if not isinstance(predicted, Resolution):
            _departs_where_the_launcher_fails(pack, options, facts, predicted)
            continue
        exercised += 1
        searched = _answer(resolve, pack, options, facts)
        assert isinstance(searched, Resolution), (options, facts, str(searched)[:400])
        departures = {d.field: d for d in searched.departures}
        adjusted = {a.field for a in predicted.adjustments}
        for field, value in searched.values.items():
            if value == predicted.values[field] or pack.fields[field].kind == "fact":
                continue
            if field in options:  # (what `check` kept, `resolve` keeps: not adjusted by resolve alone)
                assert field in adjusted, (options, facts, field)
            else:
                assert field in departures, (options, facts, field, predicted.values[field], value)
                assert departures[field].launcher == predicted.values[field]
    assert exercised, "check accepted no request: the law was not exercised"


def _departs_where_the_launcher_fails(
    pack: Pack, options: Mapping[str, Scalar], facts: Mapping[str, Scalar], refused: Unsatisfiable
) -> None:
    """`check` refused the request at the launcher's own pick of an unset option
    (`launcher_default`): where `resolve` answers, it lists that option as a departure from a pick
    that fails (`launcher` None) to its value. No other shipped law asks `resolve` where `check`
    fails: an engine mutated to report no departure at all passed this law's plain draws (ok
    where `check` is: the search seldom leaves a launcher's pick that works), and said nothing
    of the attention backend it chose for a DeepSeek-V3 on a B200 with an fp8_e5m2 KV cache."""
    failing = refused.launcher_default
    if failing is None:
        return
    searched = _answer(resolve, pack, options, facts)
    if not isinstance(searched, Resolution):
        return
    field = failing["field"]
    departure = next((d for d in searched.departures if d.field == field), None)
    assert departure is not None, (options, facts, field, searched.values[field])
    assert departure.launcher is None and departure.resolved == searched.values[field], (options, facts)


def _keeps_an_adjusted_pin(options: Mapping[str, Scalar], repair: Repair) -> bool:
    """The repair promises another value for a typed option it neither unsets nor sets: the
    known bug of repairs verified on the adjusted request (`repairs-keep-adjusted-pins`)."""
    if "repairs-keep-adjusted-pins" not in KNOWN_BUGS:
        return False
    kept = [n for n in options if n not in repair.unset and n not in repair.set]
    return any(repair.values[n] != options[n] for n in kept)


def _law_the_launch_command_resolve_writes_is_taken_as_typed(name: str, count: int, minimal: bool) -> None:
    """The flags `resolve` writes (`to_argv`, every option or `minimal=True`), read back as a
    launch command and given to `check` with the facts the answer assumed: the launcher takes
    them as typed (nothing adjusted) and lands on exactly the answer."""
    exercised = 0
    for drawn, (pack, options, facts) in enumerate(requests(name, "argv", DRAWS * count)):
        if drawn >= count and exercised:
            break
        got = _answer(resolve, pack, options, facts)
        if not isinstance(got, Resolution):
            continue
        exercised += 1
        try:
            argv = to_argv(got, pack, minimal=minimal)
        except Unsatisfiable as exc:  # no command gives the answer (`command_options`)
            raise AssertionError((options, facts, exc.message)) from None
        taken = _answer(check, pack, _typed_from(pack, argv, got), _given_back(pack, got, facts))
        assert isinstance(taken, Resolution), (options, facts, argv, str(taken)[:400])
        assert taken.adjustments == [], (options, facts, argv, taken.adjustments)
        differ = {n: (v, taken.values[n]) for n, v in got.values.items() if taken.values[n] != v}
        assert not differ, (options, facts, argv, differ)
    assert exercised, "no request resolved: the law was not exercised"


def _law_giving_the_facts_an_answer_assumed_changes_nothing(name: str, count: int) -> None:
    """Given at the values ASSUMED named, the facts change nothing: the same values and
    adjustments, and nothing assumed."""
    exercised = 0
    for drawn, (pack, options, facts) in enumerate(requests(name, "assumed", DRAWS * count)):
        if drawn >= count and exercised:
            break
        for fn in (resolve, check):
            got = _answer(fn, pack, options, facts)
            if not isinstance(got, Resolution):
                continue
            exercised += 1
            again = _answer(fn, pack, options, _given_back(pack, got, facts))
            assert isinstance(again, Resolution), (fn.__name__, options, facts, str(again)[:400])
            assert again.values == got.values, (fn.__name__, options, facts)
            # In order: adjustments are listed in the pack's field order, whichever fired first.
            assert again.adjustments == got.adjustments, (fn.__name__, options, facts)
            assert again.assumed == []
    assert exercised, "no request resolved: the law was not exercised"


def _law_each_repair_applied_gets_the_answer_it_promised(name: str, count: int) -> None:
    """A repair applied to the request as typed and asked again in the same mode resolves to
    exactly its `values` (the known bugs of tests/generated.py's KNOWN_BUGS aside). Asked of
    `count` conflicting requests, drawn until there are that many (of at most DRAWS x `count`): a
    draw of `count` requests, most of which resolve, held none with a repair to apply after a
    pack change (SGLang 0.5.23+23), and the law went unexercised."""
    exercised = conflicts = 0
    for pack, options, facts in requests(name, "repairs", DRAWS * count):
        if conflicts >= count:
            break
        for fn in (resolve, check):
            if fn is check and "check-repairs-are-searched" in KNOWN_BUGS:
                continue
            got = _answer(fn, pack, options, facts, repairs=True)
            if not isinstance(got, Unsatisfiable):
                continue
            conflicts += fn is resolve
            for repair in got.repairs:
                if _keeps_an_adjusted_pin(options, repair):
                    continue
                typed = {n: v for n, v in options.items() if n not in repair.unset}
                given = {n: v for n, v in facts.items() if n not in repair.unset}
                for field, value in repair.set.items():
                    (typed if pack.fields[field].kind == "option" else given)[field] = value
                again = _answer(fn, pack, typed, given)
                exercised += 1
                assert isinstance(again, Resolution), (fn.__name__, options, facts, repair)
                differ = {n: (v, again.values[n]) for n, v in repair.values.items() if again.values[n] != v}
                assert not differ, (fn.__name__, options, facts, repair.set, repair.unset, differ)
    assert exercised, "no repair was applied: the law was not exercised"


def _law_every_fact_the_answer_holds_on_is_given_forced_or_assumed(name: str, count: int) -> None:
    """Nothing assumed silently: in `resolve` and `check`, a fact nobody gave that ASSUMED does not
    name has the one value the given inputs (the typed options at the answer's values, the given
    facts) and the assumed facts leave possible (`valid_choices`): the answer never holds on a
    fact's value only because of an option it decided itself."""
    exercised = 0
    for drawn, (pack, options, facts) in enumerate(requests(name, "assumed-silently", DRAWS * count)):
        if drawn >= count and exercised:
            break
        own = _request_pack(pack, options, facts)
        for fn in (resolve, check):
            got = _answer(fn, pack, options, facts)
            if not isinstance(got, Resolution):
                continue
            exercised += 1
            known = _given_back(pack, got, facts)
            unsaid = [n for n in pack.facts if n not in known]
            typed = {n: got.values[n] for n in options}
            # (`given()` as the request answers it: the facts it assumed are not given by it.)
            possible = valid_choices(own, typed, known, fields=unsaid, reasons=False).possible
            for field in unsaid:
                assert possible[field] == [got.values[field]], (fn.__name__, options, facts, field)
    assert exercised, "no request resolved: the law was not exercised"


def _law_every_assumed_fact_is_a_real_assumption(name: str, count: int) -> None:
    """Nothing said assumed that is not: in `resolve` and `check`, each fact under ASSUMED has
    another value that holds with the facts given, whatever the flags (vLLM said a DeepSeek's
    `is_hybrid=false` ASSUMED, though its architecture's rule decides it: failed on bda0cd8;
    SGLang said `a2a_dispatch_budget_raised=false` ASSUMED on mps for a W4A16 MoE checkpoint,
    though only a search shows the facts decide it: failed on 01bb169). Asked of the request's
    own pack (`_request_pack`): a typed `has_sliding_window=true` lets a Mixtral hold there."""
    from solver.reasoning.plan import plan_for

    exercised = 0
    for drawn, (pack, options, facts) in enumerate(requests(name, "assumed-real", DRAWS * count)):
        if drawn >= count and exercised:
            break
        cp = plan_for(_request_pack(pack, options, facts)).compiled
        for fn in (resolve, check):
            got = _answer(fn, pack, options, facts)
            if not isinstance(got, Resolution):
                continue
            exercised += 1
            for record in got.assumed:
                others = [v for v in pack.fields[record.field].domain if v != record.value]
                said = (fn.__name__, options, facts, record.field, record.value)
                assert any(cp.satisfiable({**facts, record.field: v}, task="law") for v in others), said
    assert exercised, "no request resolved: the law was not exercised"


def _law_no_resource_is_chosen_to_make_another_flag_work(name: str, count: int) -> None:
    """No resource chosen: an option the search may not choose (`search = false`: GPU counts,
    parallel sizes, the checkpoint's quantization and dtype), left unset, is never a departure
    from the launcher's own pick and has the value `check` of the same request gives it; typed,
    it keeps its value unless a reported adjustment replaced it."""
    exercised = 0
    for drawn, (pack, options, facts) in enumerate(requests(name, "resources", DRAWS * count)):
        if drawn >= count and exercised:
            break
        got = _answer(resolve, pack, options, facts)
        if not isinstance(got, Resolution):
            continue
        exercised += 1
        own = _answer(check, pack, options, facts)
        departed = {d.field for d in got.departures}
        adjusted = {a.field for a in got.adjustments}
        for field, spec in pack.fields.items():
            if spec.kind != "option" or spec.search:
                continue
            if field in options:
                assert got.values[field] == options[field] or field in adjusted, (options, facts, field)
                continue
            assert field not in departed, (options, facts, field, got.values[field])
            if isinstance(own, Resolution):
                assert got.values[field] == own.values[field], (options, facts, field)
    assert exercised, "no request resolved: the law was not exercised"


LAWS: dict[str, Callable[[str, int], None]] = {
    "typed": _law_every_typed_value_is_kept_or_reported_as_adjusted,
    "check-then-resolve": _law_what_check_accepts_resolve_answers_and_says_where_it_departs,
    "argv": partial(_law_the_launch_command_resolve_writes_is_taken_as_typed, minimal=False),
    "minimal-argv": partial(_law_the_launch_command_resolve_writes_is_taken_as_typed, minimal=True),
    "assumed": _law_giving_the_facts_an_answer_assumed_changes_nothing,
    "repairs": _law_each_repair_applied_gets_the_answer_it_promised,
    "assumed-silently": _law_every_fact_the_answer_holds_on_is_given_forced_or_assumed,
    "assumed-real": _law_every_assumed_fact_is_a_real_assumption,
    "resources": _law_no_resource_is_chosen_to_make_another_flag_work,
}


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_the_law_holds_for_random_requests(name: str, law: str) -> None:
    """Each law above, `QUICK` requests per pack (`CONFSOLVE_LONG=1`: forty times as many)."""
    LAWS[law](name, _count())


@pytest.mark.long
@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_the_law_holds_for_many_random_requests(name: str, law: str) -> None:
    """The long run (`pytest -m long`): each law for forty times `QUICK` requests per pack, on
    another draw than the default run's."""
    LAWS[law](name, _count(long=True))


@pytest.mark.long
@pytest.mark.parametrize("law", ["resources", "typed", "check-then-resolve"])
@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_the_law_holds_around_resources(name: str, law: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The laws about resources and typed values on the draw `around` the rules that adjust a
    typed value or read a resource (`_around`), forty times `QUICK` requests (`pytest -m long`;
    `CONFSOLVE_EXAMPLES=N` exactly N)."""
    monkeypatch.setattr(sys.modules[__name__], "requests", partial(requests, around=True))
    LAWS[law](name, _count(long=True))


def test_resolve_departs_where_the_launcher_default_fails() -> None:
    """A DeepSeek-V3 on a B200 with `--kv-cache-dtype fp8_e5m2`: SGLang's own attention backend
    there (trtllm_mla) runs no e5m2 cache, so `check` refuses, and `resolve` takes another and
    says so, a departure from a pick that fails (the check-then-resolve law on one request)."""
    pack = _pack("sglang")
    options: dict[str, Scalar] = {"kv_cache_dtype": "fp8_e5m2"}
    facts: dict[str, Scalar] = {"platform": "cuda", "gpu_arch": "sm100"}
    facts["architecture"] = "DeepseekV3ForCausalLM"
    refused = _answer(check, pack, options, facts)
    assert isinstance(refused, Unsatisfiable) and refused.launcher_default is not None
    assert refused.launcher_default["field"] == "attention_backend"
    _departs_where_the_launcher_fails(pack, options, facts, refused)


@pytest.mark.parametrize("minimal", [False, True], ids=["full", "minimal"])
def test_the_command_for_a_gptq_marlin_moe_leaves_the_moe_runner_unset(minimal: bool) -> None:
    """Found by the argv law: a GPTQ Marlin MoE model needs `--moe-runner-backend` left unset
    (`moe-gptq-marlin-runner-auto`: SGLang asserts it when it loads the model); the command
    `resolve` wrote typed `--moe-runner-backend marlin`, which `check` (and SGLang) refuses
    (failed on main f9f5f24; the launcher picks marlin itself, so the flag is left out)."""
    pack = _pack("sglang")
    facts: dict[str, Scalar] = {"platform": "cuda", "gpu_arch": "sm100", "is_moe": True}
    got = _answer(resolve, pack, {"quantization": "gptq_marlin"}, facts)
    assert isinstance(got, Resolution)
    argv = to_argv(got, pack, minimal=minimal)
    taken = _answer(check, pack, _typed_from(pack, argv, got), _given_back(pack, got, facts))
    assert isinstance(taken, Resolution), argv
    assert taken.values == got.values


@pytest.mark.parametrize("fn", [resolve, check], ids=["resolve", "check"])
def test_giving_the_assumed_facts_lists_the_adjustments_in_the_same_order(fn: Any) -> None:
    """Found by the assumed law: on NPU, `--moe-a2a-backend ascend_tp --dp-size 8
    --decode-attention-backend torch_native` fires both adjustments in one order, and with the
    facts it assumed given, in the other (failed on main f9f5f24). The answer lists them in the
    pack's field order, whichever the fixpoint tried first."""
    pack = _pack("sglang")
    options: dict[str, Scalar] = {
        "moe_a2a_backend": "ascend_tp",
        "dp_size": 8,
        "decode_attention_backend": "torch_native",
    }
    facts: dict[str, Scalar] = {"platform": "npu"}
    got = fn(pack, options, facts)
    again = fn(pack, options, _given_back(pack, got, facts))
    assert len(got.adjustments) == 2 and again.adjustments == got.adjustments
    order = list(pack.fields)
    assert [a.field for a in got.adjustments] == sorted((a.field for a in got.adjustments), key=order.index)


# Seed 1930002's `-m long` draws on which the assumed laws misread `given()` (vLLM 0.33.0+15's
# `arch-moe`: `given(has_sliding_window) or not has_sliding_window`): the answers were right.
_WINDOW_REQUESTS: list[Request] = [
    (
        {"disable_sliding_window": True},
        {"platform": "cuda", "gpu_arch": "sm80", "architecture": "MixtralForCausalLM"},
    ),
    (
        {"all2all_backend": "naive", "moe_backend": "b12x"},
        {
            "platform": "cuda",
            "gpu_arch": "sm100",
            "has_sinks": False,
            "head_size": 192,
            "has_sliding_window": True,
        },
    ),
    ({"block_size": 16}, {"platform": "cuda", "gpu_arch": "sm90"}),  # has_sliding_window assumed
]


def _asking(monkeypatch: pytest.MonkeyPatch, drawn: list[Request]) -> None:
    """The laws ask `drawn` (on vLLM) instead of their random requests."""
    pack = _pack("vllm")
    fixed = [(pack, dict(options), dict(facts)) for options, facts in drawn]
    monkeypatch.setattr(sys.modules[__name__], "requests", lambda name, law, count: iter(fixed))


@pytest.mark.parametrize("law", ["assumed-silently", "assumed-real"])
def test_the_assumed_laws_answer_given_as_the_request_does(law: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Mixtral's window is false unless the request gives one: `assumed-silently` read it as
    typed (`valid_choices` types a field a rule asks about) and found it free; `assumed-real` asked
    the pack itself, where `given(has_sliding_window)` is false, and found no architecture but
    `other` for a request that gives a window (both failed on main e66de50 with seed 1930002)."""
    _asking(monkeypatch, _WINDOW_REQUESTS)
    LAWS[law]("vllm", len(_WINDOW_REQUESTS))


@pytest.mark.parametrize(
    ("law", "wrong"),
    [("assumed-real", "said"), ("assumed-silently", "unsaid")],
    ids=["forced-said-assumed", "assumed-left-unsaid"],
)
def test_the_assumed_laws_still_catch_a_window_said_wrongly(
    law: str, wrong: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers mutated on the fact a rule asks `given()` of: a Mixtral's window (forced false)
    listed ASSUMED, or an assumed window left out of ASSUMED; each law still fails on it."""
    from solver.model import AssumedRecord

    def mutated(fn: Callable[..., Any]) -> Callable[..., Any]:
        def answer(pack: Pack, options: dict[str, Scalar], facts: dict[str, Scalar], **how: Any) -> Any:
            got = fn(pack, options, facts, **how)
            kept = [a for a in got.assumed if a.field != "has_sliding_window"]
            if wrong == "said" and "has_sliding_window" not in facts:
                window = got.values["has_sliding_window"]
                kept.append(AssumedRecord(field="has_sliding_window", value=window, because="mutated"))
            return got.model_copy(update={"assumed": kept})

        return answer

    _asking(monkeypatch, _WINDOW_REQUESTS)
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "resolve", mutated(resolve))
    monkeypatch.setattr(module, "check", mutated(check))
    with pytest.raises(AssertionError, match="has_sliding_window"):
        LAWS[law]("vllm", len(_WINDOW_REQUESTS))
