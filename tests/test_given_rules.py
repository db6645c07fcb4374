"""`given(FIELD)` in a hard rule: a refusal that depends on what the request types.

SGLang 0.5.23 asserts the *typed* `--quantization` for `--moe-runner-backend flashinfer_cutedsl`
(`arg_groups/moe_hook.py::handle_moe_kernel_config`): with it unset it checks `None` and refuses,
though the checkpoint's method, which the pack's `quantization` holds either way, is the one it
asks for. The toy pack below states that; every answer is checked against the semantics written
out independently (`_launcher_accepts`), over every request.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from solver import check, explain, resolve, valid_choices
from solver.bounded import digest_family
from solver.engine.count import count
from solver.engine.opendomain import query_pack
from solver.errors import Unsatisfiable
from solver.model import Pack
from solver.pack.given import for_request, given_fields
from solver.pack.loader import load_directory

PACK = """
[pack]
name = "given-rules"
version = "1"
description = "a MoE runner that asserts the typed quantization"
files = ["rules.toml"]
"""

RULES = """
[field.checkpoint]
kind = "fact"
domain = ["fp4", "bf16"]
required = true

[field.quantization]
kind = "option"
domain = ["none", "fp4", "fp8"]

[field.runner]
kind = "option"
domain = ["auto", "cutedsl"]

[[preference]]
id = "quantization-from-checkpoint"
field = "quantization"
when = "checkpoint == 'fp4'"
prefer = ["fp4"]
because = "the checkpoint's own method is used when none is typed"
source = "test"

[[rule]]
id = "fp4-checkpoint-quant"
when = "checkpoint == 'fp4'"
require = "quantization == 'fp4'"
because = "an FP4 checkpoint loads only with its own method"
source = "test"

[[rule]]
id = "cutedsl-typed-quant"
when = "runner == 'cutedsl'"
require = \"\"\"(given(quantization)
  and quantization == 'fp4')\"\"\"
because = "the cutedsl runner asserts the typed method: type --quantization fp4"
source = "test"
"""


@pytest.fixture
def pack(tmp_path: Path) -> Pack:
    root = tmp_path / "given-rules"
    root.mkdir()
    (root / "pack.toml").write_text(PACK, encoding="utf-8")
    (root / "rules.toml").write_text(RULES, encoding="utf-8")
    return load_directory(root)


def _launcher_accepts(checkpoint: str, typed: dict[str, str]) -> dict[str, str] | None:
    """The launcher, written out: unset quantization takes the checkpoint's method (none for
    bf16), unset runner is auto; cutedsl asserts the typed quantization is fp4."""
    quant = typed.get("quantization", "fp4" if checkpoint == "fp4" else "none")
    runner = typed.get("runner", "auto")
    if checkpoint == "fp4" and quant != "fp4":
        return None
    if runner == "cutedsl" and typed.get("quantization") != "fp4":
        return None
    return {"quantization": quant, "runner": runner}


def _requests() -> list[tuple[str, dict[str, str]]]:
    out = []
    domains = {"quantization": ["none", "fp4", "fp8"], "runner": ["auto", "cutedsl"]}
    for checkpoint in ("fp4", "bf16"):
        for k in range(3):
            for names in itertools.combinations(domains, k):
                for values in itertools.product(*(domains[n] for n in names)):
                    out.append((checkpoint, dict(zip(names, values, strict=True))))
    return out


def test_check_agrees_with_the_launcher_on_every_request(pack: Pack) -> None:
    seen = 0
    for checkpoint, typed in _requests():
        want = _launcher_accepts(checkpoint, typed)
        try:
            got = check(pack, typed, {"checkpoint": checkpoint}).values
        except Unsatisfiable:
            got = None
        assert (got and {n: got[n] for n in ("quantization", "runner")}) == want, (checkpoint, typed)
        seen += 1
    assert seen == 2 * (1 + 5 + 6)


def test_cutedsl_without_typed_quantization_names_the_rule(pack: Pack) -> None:
    with pytest.raises(Unsatisfiable) as caught:
        check(pack, {"runner": "cutedsl"}, {"checkpoint": "fp4"})
    assert [r.id for r in caught.value.conflict.rules] == ["cutedsl-typed-quant"]
    assert "type --quantization fp4" in caught.value.conflict.rules[0].because
    # The search does not mend it by choosing fp4 itself: what the solver picks is not typed.
    with pytest.raises(Unsatisfiable):
        resolve(pack, {"runner": "cutedsl"}, {"checkpoint": "fp4"})
    failure = explain(pack, {"runner": "cutedsl"}, {"checkpoint": "fp4"})
    assert failure is not None and "cutedsl-typed-quant" in [r.id for r in failure.conflict.rules]
    assert explain(pack, {"runner": "cutedsl", "quantization": "fp4"}, {"checkpoint": "fp4"}) is None


def test_choices_of_a_field_a_rule_asks_about_are_those_of_typing_it(pack: Pack) -> None:
    # runner=cutedsl fails with quantization unset, but picking quantization=fp4 types it and mends it.
    choices = valid_choices(pack, {"runner": "cutedsl"}, {"checkpoint": "fp4"}, reasons=True)
    assert choices.possible["quantization"] == ["fp4"]
    # The runner's own choices are those of the request as it is: quantization untyped.
    assert choices.possible["runner"] == ["auto"]
    assert [i.name for i in choices.excluded["runner"]["cutedsl"]] == ["cutedsl-typed-quant"]
    typed = valid_choices(pack, {"quantization": "fp4"}, {"checkpoint": "fp4"}, reasons=False)
    assert typed.possible["runner"] == ["auto", "cutedsl"]
    assert list(choices.possible) == ["quantization", "runner"]  # the pack's order, as without the split


def test_count_reads_set_fields_as_given(pack: Pack) -> None:
    assert count(pack, {"runner": "cutedsl", "checkpoint": "fp4"}).count == 0
    assert count(pack, {"runner": "cutedsl", "quantization": "fp4", "checkpoint": "fp4"}).count == 1
    # Nothing set: no rule's given() holds, so cutedsl is counted nowhere.
    assert count(pack, {}, by="runner").by == {"auto": 1 + 3, "cutedsl": 0}  # fp4: fp4; bf16: any


def test_a_request_copy_answers_given_and_shares_the_digest_family(pack: Pack) -> None:
    assert given_fields(pack) == {"quantization"}
    assert for_request(pack, {"runner": 1}) is pack  # gives nothing a rule asks about
    copy = for_request(pack, {"quantization": 1})
    assert copy.digest != pack.digest and digest_family(copy.digest) == pack.digest
    rule = next(r for r in copy.rules if r.id == "cutedsl-typed-quant")
    assert rule.require == "(True\n  and quantization == 'fp4')"
    assert given_fields(copy) == set()
    assert for_request(copy, {"quantization": 1}) is copy
    # Widened and answered: both marks come off for the shared field order.
    assert digest_family(query_pack(pack, {"quantization": "fp4"}).digest) == pack.digest


def test_a_copy_answers_every_given_for_a_request_that_gives_none(pack: Pack) -> None:
    """`answer_all`: the copy for a request that gives none of the fields a rule asks about reads
    each `given()` false, as the pack does, but with none left, so `valid_choices` of it lists a
    field's values as the request leaves them; the pack itself types the field whose choices are
    asked (picking a value types it). What tests/test_laws_shipped.py's assumed laws ask."""
    copy = for_request(pack, {"runner": "cutedsl"}, answer_all=True)
    assert copy is not pack and given_fields(copy) == set()
    assert digest_family(copy.digest) == pack.digest
    assert for_request(copy, {"runner": "cutedsl"}, answer_all=True) is copy
    asked = {"options": {"runner": "cutedsl"}, "facts": {"checkpoint": "fp4"}, "fields": ["quantization"]}
    assert valid_choices(pack, **asked).possible["quantization"] == ["fp4"]  # typed: it mends the request
    assert valid_choices(copy, **asked).possible["quantization"] == []  # as it is: cutedsl refused


def test_answering_replaces_only_the_calls() -> None:
    from solver.pack.given import _answered

    # Column offsets count UTF-8 bytes: a non-ASCII literal before the call must not shift it.
    assert _answered("name == 'é' or not given(q)", {"q"}, {}) == "name == 'é' or not True"
    assert _answered("given(a) and (given(b)\n or x)", {"b"}, {}) == "False and (True\n or x)"
    assert _answered("x == 'given'", {"x"}, {}) == "x == 'given'"
    # A typed value: answered by the value typed, False when not typed, and with names only
    # (a command typing an answer's values) read as the field's own value.
    typed = "given(a) == 'p' or (given(a) in S and given(b))"
    assert _answered(typed, {"a"}, {"S": ("q",)}, {"a": "q"}) == "False or (True and False)"
    assert _answered(typed, {"b"}, {"S": ("q",)}, {"b": 1}) == "False or (False and True)"
    assert _answered(typed, {"a"}, {"S": ("q",)}) == "a == 'p' or (a in S and False)"


def _allowed(values: dict[str, str], typed: set[str]) -> bool:
    """The toy pack's two rules, written out: a full configuration and what was typed."""
    if values["checkpoint"] == "fp4" and values["quantization"] != "fp4":
        return False
    return values["runner"] != "cutedsl" or ("quantization" in typed and values["quantization"] == "fp4")


def test_choices_agree_with_brute_force_on_every_request(pack: Pack) -> None:
    """A value is a choice exactly when some configuration has it with the request's other
    inputs, the field itself typed (picking it types it) and nothing else the request lacks."""
    domains = {"quantization": ["none", "fp4", "fp8"], "runner": ["auto", "cutedsl"]}
    for checkpoint, typed in _requests():
        for reasons in (False, True):
            got = valid_choices(pack, typed, {"checkpoint": checkpoint}, reasons=reasons).possible
            for name, domain in domains.items():
                others = {n: v for n, v in typed.items() if n != name}
                want = [
                    v
                    for v in domain
                    if any(
                        _allowed(
                            {"checkpoint": checkpoint, **dict(zip(domains, combo, strict=True)), name: v},
                            {*others, name},
                        )
                        for combo in itertools.product(*domains.values())
                        if all(dict(zip(domains, combo, strict=True))[n] == x for n, x in others.items())
                    )
                ]
                assert got[name] == want, (checkpoint, typed, name, reasons)


SPLIT_RULES = """
[field.family]
kind = "fact"
domain = ["gpt", "other"]
required = true

[field.attention]
kind = "option"
domain = ["a", "b"]

[field.prefill]
kind = "option"
domain = ["a", "b", "x"]

[[rule]]
id = "gpt-one-split"
when = "family == 'gpt' and not given(attention)"
forbid = "given(prefill)"
because = "type --attention too"
source = "test"

[[rule]]
id = "x-needs-b"
when = "prefill == 'x'"
require = "attention == 'b'"
because = "x runs with b only"
source = "test"
"""


def test_choices_where_typing_a_field_tightens_a_rule(tmp_path: Path) -> None:
    """Typing `prefill` alone is refused for the gpt family: its choices there are none, while
    the request's own pack (prefill untyped) allows all three; brute force on every request."""
    root = tmp_path / "split"
    root.mkdir()
    (root / "pack.toml").write_text(PACK.replace("given-rules", "split"), encoding="utf-8")
    (root / "rules.toml").write_text(SPLIT_RULES, encoding="utf-8")
    pack = load_directory(root)
    domains = {"attention": ["a", "b"], "prefill": ["a", "b", "x"]}

    def allowed(values: dict[str, str], typed: set[str]) -> bool:
        if values["family"] == "gpt" and "attention" not in typed and "prefill" in typed:
            return False
        return values["prefill"] != "x" or values["attention"] == "b"

    for family in ("gpt", "other"):
        for k in range(3):
            for names in itertools.combinations(domains, k):
                for chosen in itertools.product(*(domains[n] for n in names)):
                    typed = dict(zip(names, chosen, strict=True))
                    got = valid_choices(pack, typed, {"family": family}, reasons=False).possible
                    for name, domain in domains.items():
                        others = {n: v for n, v in typed.items() if n != name}
                        configs = [
                            dict(zip(domains, c, strict=True)) for c in itertools.product(*domains.values())
                        ]
                        want = [
                            v
                            for v in domain
                            if any(
                                allowed({"family": family, **c, name: v}, {*others, name})
                                for c in configs
                                if all(c[n] == x for n, x in others.items())
                            )
                        ]
                        assert got[name] == want, (family, typed, name)


# The pack above with a warn rule, not a hard one, reading what the request types.
WARN_RULES = (
    RULES.split('[[rule]]\nid = "cutedsl-typed-quant"')[0]
    + """
[[rule]]
id = "typed-fp8-slow"
when = "given(quantization) and quantization == 'fp8'"
require = "runner == 'cutedsl'"
severity = "warn"
because = "a typed fp8 runs slowly without the cutedsl runner: add --runner cutedsl"
source = "test"
"""
)


def test_a_field_only_a_warn_rule_asks_about_keeps_its_values_and_takes_the_copys_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where typing a field changes only what a warn rule flags, its values are the request's
    own and only the flags are those of the pack that gives it: fp8 is flagged exactly when it is
    possible and the runner typed is not cutedsl (brute force, every request), and the field is
    not listed again on that pack (SGLang's `quantization` was, at every page click, for one
    warn rule)."""
    from solver.reasoning import diagnose

    root = tmp_path / "warn"
    root.mkdir()
    (root / "pack.toml").write_text(PACK.replace("given-rules", "warn"), encoding="utf-8")
    (root / "rules.toml").write_text(WARN_RULES, encoding="utf-8")
    pack = load_directory(root)
    asked: list[list[str]] = []
    listing = diagnose._request_choices

    def counted(*args: Any, **kwargs: Any) -> Any:
        asked.append(list(args[2]))
        return listing(*args, **kwargs)

    monkeypatch.setattr(diagnose, "_request_choices", counted)
    for checkpoint, typed in _requests():
        for reasons in (False, True):
            got = valid_choices(pack, typed, {"checkpoint": checkpoint}, reasons=reasons)
            others = {n: v for n, v in typed.items() if n != "quantization"}
            want = ["fp4"] if checkpoint == "fp4" else ["none", "fp4", "fp8"]
            assert got.possible["quantization"] == want, (checkpoint, typed)
            flagged = "fp8" in want and others.get("runner") == "auto"
            assert got.warned["quantization"] == ({"fp8": ["typed-fp8-slow"]} if flagged else {}), (
                checkpoint,
                typed,
            )
    assert ["quantization"] not in asked


COMMAND_RULES = """
[field.checkpoint]
kind = "fact"
domain = ["gptq", "bf16"]
required = true

[field.quantization]
kind = "option"
domain = ["none", "gptq"]

[field.runner]
kind = "option"
domain = ["triton", "marlin"]

[field.kernel]
kind = "option"
domain = ["k1", "k2"]

[[preference]]
id = "quantization-from-checkpoint"
field = "quantization"
when = "checkpoint == 'gptq'"
prefer = ["gptq"]
because = "the checkpoint's own method is used when none is typed"
source = "test"

[[rule]]
id = "gptq-checkpoint-quant"
when = "checkpoint == 'gptq'"
require = "quantization == 'gptq'"
because = "a GPTQ checkpoint loads only with its own method"
source = "test"

[[rule]]
id = "gptq-runner-untyped"
when = "quantization == 'gptq'"
require = "runner == 'marlin' and not given(runner)"
because = "GPTQ experts take marlin only with --runner unset: leave --runner unset"
source = "test"

[[rule]]
id = "k1-slow-quantized"
when = "kernel == 'k1'"
require = "quantization == 'none'"
severity = "warn"
because = "k1 runs quantized models slowly: k2 is faster"
source = "test"

[[rule]]
id = "k2-untyped"
when = "kernel == 'k2'"
forbid = "given(kernel)"
because = "k2 asserts --kernel unset: leave --kernel unset"
source = "test"
"""


@pytest.fixture
def command_pack(tmp_path: Path) -> Pack:
    root = tmp_path / "command"
    root.mkdir()
    (root / "pack.toml").write_text(PACK.replace("given-rules", "command"), encoding="utf-8")
    (root / "rules.toml").write_text(COMMAND_RULES, encoding="utf-8")
    return load_directory(root)


def test_the_command_leaves_out_a_flag_a_rule_needs_unset_where_the_launcher_reaches_it(
    command_pack: Pack,
) -> None:
    """A GPTQ checkpoint with k1 typed: the answer's runner is marlin, which the launcher picks
    itself and refuses typed; every command (full, minimal, the command line's) leaves it out and
    lands on the answer. (Before the fix: `--runner marlin` written, and `check` refused it.)"""
    from solver.launcher import to_argv

    pack = command_pack
    got = resolve(pack, {"quantization": "none"}, {"checkpoint": "bf16"})
    assert (got.values["runner"], to_argv(got, pack, minimal=True)) == ("triton", [])  # nothing to leave out
    got = resolve(pack, {"kernel": "k1"}, {"checkpoint": "gptq"})
    assert got.values["runner"] == "marlin"
    for minimal in (False, True):
        argv = to_argv(got, pack, minimal=minimal)
        assert "--runner" not in argv and ("--kernel" in argv) is not minimal, argv
        typed = {argv[i][2:]: argv[i + 1] for i in range(0, len(argv), 2)}
        assert check(pack, typed, {"checkpoint": "gptq"}).values == got.values


# The same with k1 refused for a quantized model (a hard rule) while the launcher still defaults
# to it: left out, `--kernel` fails; typed, k2 is refused.
NO_COMMAND_RULES = (
    COMMAND_RULES.replace('severity = "warn"\n', "")
    + """
[[preference]]
id = "kernel-default"
field = "kernel"
prefer = ["k1"]
because = "the launcher's own kernel is k1"
source = "test"
"""
)


def test_an_answer_no_command_reaches_is_said_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GPTQ checkpoint where k1 fails: the launcher left to itself takes k1 and fails, and
    typed `--kernel k2` is refused, so the search's k2 (a departure from the launcher's failing
    default) is an answer no command gives: `to_argv` and `--format argv` say so (exit 1),
    naming the rule, rather than print a command the launcher refuses."""
    from clirun import run

    from solver.launcher import to_argv

    root = tmp_path / "no-command"
    root.mkdir()
    (root / "pack.toml").write_text(PACK.replace("given-rules", "no-command"), encoding="utf-8")
    (root / "rules.toml").write_text(NO_COMMAND_RULES, encoding="utf-8")
    pack = load_directory(root)
    got = resolve(pack, {}, {"checkpoint": "gptq"})
    assert got.values["kernel"] == "k2"
    assert [(d.field, d.launcher) for d in got.departures] == [("kernel", None)]
    for minimal in (False, True):
        with pytest.raises(Unsatisfiable) as caught:
            to_argv(got, pack, minimal=minimal)
        assert "k2-untyped" in [r.id for r in caught.value.conflict.rules]
        assert "--kernel k2" in caught.value.message, caught.value.message
    code, out, err = run(
        capsys, "resolve", "--pack", str(root), "--set", "checkpoint=gptq",
        "--format", "argv",
    )  # fmt: skip
    assert code == 1 and out == "" and "k2-untyped" in err, (code, out, err)


def test_an_answer_no_command_reaches_is_said_in_text_and_json_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer above, as `resolve` prints it without `--format argv`: one line above the table
    says that no command gives it, naming the flags and rules, and the JSON document carries it
    (`no_command`). On 7b8e94c only `--format argv` said it: the text and JSON were silent."""
    import jsonschema
    from clirun import run

    from solver.render.schema import output_schema

    root = tmp_path / "no-command"
    root.mkdir()
    (root / "pack.toml").write_text(PACK.replace("given-rules", "no-command"), encoding="utf-8")
    (root / "rules.toml").write_text(NO_COMMAND_RULES, encoding="utf-8")
    code, out, _ = run(capsys, "resolve", "--pack", str(root), "--set", "checkpoint=gptq")
    said = [line for line in out.splitlines() if line.startswith("NO LAUNCH COMMAND GIVES THIS ANSWER")]
    assert code == 0 and len(said) == 1, out
    assert "--kernel k2" in said[0] and "k2-untyped" in said[0] and "--format argv" in said[0], said
    code, out, _ = run(capsys, "resolve", "--pack", str(root), "--set", "checkpoint=gptq", "--json")
    doc = json.loads(out)
    assert code == 0 and "k2-untyped" in doc["no_command"]["rules"], doc
    assert "no no-command launch command gives this answer" in doc["no_command"]["message"]
    jsonschema.validate(doc, output_schema("resolved"))
    # An answer a command gives says nothing of the kind.
    code, out, _ = run(capsys, "resolve", "--pack", str(root), "--set", "checkpoint=bf16", "--json")
    assert code == 0 and "no_command" not in json.loads(out), out


def test_resolve_departs_only_to_a_value_a_command_can_type(command_pack: Pack) -> None:
    """The answer above is one no command reaches: the search departed from the launcher's k1
    (warned) to k2 with `given(kernel)` read as false, though departing means typing `--kernel`,
    which `k2-untyped` refuses. The only configuration a command gives is the launcher's own k1,
    with its warning, and k2 is said rejected for the rule that refuses it typed; the command
    leaves out both the runner and the kernel, which the launcher picks itself. (Failed on main
    8916668: kernel = k2.)"""
    from solver.launcher import to_argv

    got = resolve(command_pack, {}, {"checkpoint": "gptq"})
    assert got.values["kernel"] == "k1" and [w.rule for w in got.warnings] == ["k1-slow-quantized"]
    assert got.departures == []
    assert [(r.value, r.because) for r in got.provenance["kernel"].rejected] == [
        ("k2", ["given(kernel)", "k2-untyped"])
    ]
    assert to_argv(got, command_pack) == ["--quantization", "gptq", "--kernel", "k1"]
    assert to_argv(got, command_pack, minimal=True) == []


# `given(FIELD) == VALUE` as well as `given(FIELD)`, each read with a field the rule also reads.
REFUSAL_RULES = (
    COMMAND_RULES
    + """
[[rule]]
id = "marlin-typed-gptq"
when = "runner == 'marlin' and checkpoint == 'gptq'"
forbid = "given(quantization) == 'none'"
because = "marlin asserts the typed method matches a GPTQ checkpoint"
source = "test"
"""
)


def _refusal_by_hand(pack: Pack, given: dict[str, Any], solution: dict[str, Any]) -> bool:
    """`refusal_possible` computed afresh: each hard rule reading `given()`, under every choice of
    the marks of the options the request leaves unset, on a new mapping each time."""
    from solver.model import given_key, typed_key
    from solver.pack.loader import semantics

    rules = semantics(pack).rules
    for rule in pack.rules:
        cond = rules[rule.id]
        if rule.severity != "error" or not cond.given:
            continue
        unset = [n for n in cond.given if n not in given and pack.fields[n].kind == "option"]
        for chosen in itertools.product((False, True), repeat=len(unset)) if unset else ():
            known = {**solution, **{given_key(n): True for n in given}}
            known |= {typed_key(n): v for n, v in given.items()}
            known |= {given_key(n): c for n, c in zip(unset, chosen, strict=True)}
            if cond.partial(known) is False:
                return True
    return False


def test_refusal_possible_agrees_with_brute_force_whatever_it_remembered(tmp_path: Path) -> None:
    """`departures.refusal_possible` remembers each rule's answer by the values it reads: over
    every configuration of the pack and every request typing some options (at the answer's
    value or another, as an adjustment leaves it), asked in a shuffled order of one compiled
    pack, each answer is the one computed afresh."""
    import random

    from solver.model import Pin
    from solver.reasoning.departures import refusal_possible
    from solver.reasoning.plan import plan_for

    root = tmp_path / "refusals"
    root.mkdir()
    (root / "pack.toml").write_text(PACK.replace("given-rules", "refusals"), encoding="utf-8")
    (root / "rules.toml").write_text(REFUSAL_RULES, encoding="utf-8")
    pack = load_directory(root)
    plan = plan_for(pack)
    names = list(pack.fields)
    options = [n for n in names if pack.fields[n].kind == "option"]
    asked = []
    for values in itertools.product(*(pack.fields[n].domain for n in names)):
        solution = dict(zip(names, values, strict=True))
        for typed in itertools.product(*([None, *pack.fields[n].domain] for n in options)):
            given = {n: v for n, v in zip(options, typed, strict=True) if v is not None}
            asked.append((solution, given))
    random.Random(22).shuffle(asked)
    answers = set()
    for solution, given in asked:
        pins = {n: Pin(field=n, value=v, source="user") for n, v in given.items()}
        got = refusal_possible(plan, pack, pins, solution)
        assert got == _refusal_by_hand(pack, given, solution), (solution, given)
        answers.add(got)
    assert answers == {False, True}


def test_refusal_possible_evaluates_a_rule_once_per_values_it_reads(command_pack: Pack) -> None:
    """Asked again with the same values of what a rule reads, `refusal_possible` evaluates no rule
    (the slowest decile of resolutions spent ~8 % here); a value the rule reads changed, it
    evaluates that rule again. (Fails on 595b19b: every call evaluated every rule.)"""
    from solver.model import Pin
    from solver.pack.loader import semantics
    from solver.reasoning.departures import refusal_possible
    from solver.reasoning.plan import plan_for

    plan = plan_for(command_pack)
    plan.compiled.memo.pop("refusals", None)  # (a pack of the same digest met in another test)
    rules = semantics(command_pack).rules
    asked: list[str] = []
    for rid in ("gptq-runner-untyped", "k2-untyped"):
        cond = rules[rid]
        partial = cond.partial

        def counted(known: Any, partial: Any = partial, rid: str = rid) -> Any:
            asked.append(rid)
            return partial(known)

        object.__setattr__(cond, "partial", counted)  # (a frozen dataclass: its test double)
    solution = {"checkpoint": "bf16", "quantization": "none", "runner": "triton", "kernel": "k1"}
    pins = {"checkpoint": Pin(field="checkpoint", value="bf16", source="user")}
    try:
        assert refusal_possible(plan, command_pack, pins, solution) is False
        first = sorted(set(asked))
        assert first == ["gptq-runner-untyped", "k2-untyped"], asked
        asked.clear()
        assert refusal_possible(plan, command_pack, pins, dict(solution)) is False
        assert asked == []
        assert refusal_possible(plan, command_pack, pins, {**solution, "kernel": "k2"}) is True
        assert set(asked) == {"k2-untyped"}, asked
    finally:
        for rid in ("gptq-runner-untyped", "k2-untyped"):
            object.__setattr__(rules[rid], "partial", rules[rid].partial.__defaults__[0])
