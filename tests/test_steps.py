"""A conflict told as steps says, at each step, what its rule and premises imply (solver/render/steps.py).

The law, read off the message a user gets: every step names one rule of the conflict; given what
the conflict's pins and the earlier steps left of the rule's fields, the rule alone leaves exactly
the values the step states ("X must be ..." the values left, "X cannot be ..." the values it
removes, and it removes some); only the last step says "the request cannot hold", and then no
values left satisfy its rule. Checked on a small pack where three rules narrow one field in turn
(round 26's kv-scheme case: every step after the first said "the request cannot hold") and on
every conflict among the scenario case files of both shipped packs.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from test_engine import write_pack

from solver import check, load_pack
from solver.engine.opendomain import query_pack
from solver.errors import Unsatisfiable
from solver.model import Pack, Pin, Scalar
from solver.pack.loader import load_directory
from solver.reasoning.resolution import plan_for, resolve
from solver.values import show

CASES = Path(__file__).parent / "cases"

FIELDS = """
[field.gpu]
kind = "fact"
domain = ["a100", "h100", "b200"]

[field.arch]
kind = "fact"
domain = ["llama", "mla"]

[field.kv]
kind = "option"
domain = ["auto", "fp8", "fp4"]

[field.backend]
kind = "option"
domain = ["flash", "fa3", "triton", "mla"]
"""

# Four rules over one field (backend) nobody typed: three narrow it in turn, the fourth refutes.
RULES = """
[[rule]]
id = "fa3-needs-hopper"
when = "gpu == 'a100'"
forbid = "backend == 'fa3'"
because = "FA3 needs Hopper"
source = "t/docs"

[[rule]]
id = "fp8-kv-not-flash"
when = "kv == 'fp8'"
forbid = "backend == 'flash'"
because = "flash has no fp8 KV cache"
source = "t/docs"

[[rule]]
id = "llama-not-mla-backend"
when = "arch == 'llama'"
forbid = "backend == 'mla'"
because = "the mla backend serves MLA models only"
source = "t/docs"

[[rule]]
id = "fp8-kv-needs-flash-family"
when = "kv == 'fp8'"
require = "backend in ['flash', 'fa3', 'mla']"
because = "an fp8 KV cache needs a flash-family backend"
source = "t/docs"
"""


@pytest.fixture(scope="module")
def narrowing_pack(tmp_path_factory: pytest.TempPathFactory) -> Pack:
    root = tmp_path_factory.mktemp("narrowing")
    return load_directory(write_pack(root, {"fields.toml": FIELDS, "rules.toml": RULES}))


def _chain(message: str) -> list[str]:
    """The step lines of a conflict message (from the first "Because" or "Whichever" to the line
    ending in ".")."""
    lines = message.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(("Because ", "Whichever "))), None)
    if start is None:
        return []
    chain = []
    for line in lines[start:]:
        chain.append(line)
        if line.endswith("."):
            break
    return chain


def test_rules_narrowing_one_field_in_turn_are_told_as_narrowings(narrowing_pack: Pack) -> None:
    """Each rule after the first removes a value of `backend` nobody typed: each such step says
    what is left, and only the last one refutes. (On a1e60f3 the second and third steps said "the
    request cannot hold" and the last step's premise was the stale [flash, triton, mla].)"""
    with pytest.raises(Unsatisfiable) as info:
        resolve(narrowing_pack, {"kv": "fp8"}, {"gpu": "a100", "arch": "llama"})
    assert _chain(info.value.message) == [
        "Because gpu=a100 and rule fa3-needs-hopper (FA3 needs Hopper), backend cannot be fa3;",
        "because --kv fp8 and backend not in [fa3] and rule fp8-kv-not-flash (flash has no fp8 KV "
        "cache), backend cannot be flash;",
        "because arch=llama and backend in [triton, mla] and rule llama-not-mla-backend (the mla "
        "backend serves MLA models only), backend must be triton;",
        # A value the steps derived is not said as a flag the user typed (`--backend triton`).
        "because --kv fp8 and backend=triton and rule fp8-kv-needs-flash-family (an fp8 KV cache "
        "needs a flash-family backend), the request cannot hold.",
    ]
    _assert_steps_follow(narrowing_pack, info.value)


_STEP = re.compile(r"^[Bb]ecause (?:(?P<said>.*?) and )?rule (?P<rule>[^ ]+) \(")
_CONSEQUENCE = re.compile(
    r"(?P<field>\w+) (?P<verb>must|cannot) be (?P<values>.+?)(?= and \w+ (?:must|cannot) be |$)"
)


_SPLIT = re.compile(
    r"^[Ww]hichever (?P<field>\w+) is, the request cannot hold"
    r"(?: \(another (?P<flag>\S+) alone does not help\))?:$"
)
_CASE = re.compile(r"^  if (?P<said>.+?), (?P<step>because .*)$")


def _assert_steps_follow(pack: Pack, exc: Unsatisfiable) -> None:
    """The law (see the module's docstring), on the message of `exc` and its conflict; a split
    ("whichever X is") names every value the steps before it left of X, and each case's steps
    follow from them and X's value, to a refutation."""
    chain = _chain(exc.message)
    if not chain:
        return
    # A rule's `because` is said once: a step that names it "(see above)" follows one that said it.
    for number, line in enumerate(chain):
        for rid in re.findall(r"rule (\S+) \(see above\)", line):
            assert any(
                f"rule {rid} ({pack.rule(rid).because.rstrip('.')})" in said for said in chain[:number]
            ), line
    request = {n: p for n, p in (exc.request or {}).items() if isinstance(p, Pin)}
    # The request as typed (an adjusted pin holds the launcher's value; the copy is made of the typed).
    for name, (typed, _) in (exc.adjusted or {}).items():
        request[name] = Pin(field=name, value=typed, source="user")
    pack = query_pack(pack, request)  # the copy the request was answered on (`given(FIELD)` answered)
    plan = plan_for(pack)
    given = {n: p.value for n, p in request.items()}
    known: dict[str, list[Scalar]] = {p.field: [p.value] for p in exc.conflict.pins}
    split = next((i for i, line in enumerate(chain) if _SPLIT.match(line.rstrip(";"))), None)
    if split is None:
        assert _follow(pack, plan, given, known, [line.rstrip(";.") for line in chain]), chain[-1]
        return
    steps = [line.rstrip(";") for line in chain[:split]]
    assert not _follow(pack, plan, given, known, steps), "a step before the split refutes"
    found = _SPLIT.match(chain[split].rstrip(";"))
    assert found, chain[split]
    name = found["field"]
    cases: list[tuple[str, list[str]]] = []
    for line in chain[split + 1 :]:
        case = _CASE.match(line)
        if case:
            cases.append((case["said"], [case["step"].rstrip(";.")]))
        else:
            assert line.startswith("    because ") and cases, line
            cases[-1][1].append(line.strip().rstrip(";."))
    left = known.get(name, list(plan.compiled.domains[name]))
    # Each case says one value of the split field (`X=v`, `--flag v` or `X=v (label)`), and the
    # cases say every value left, in order.
    assert [_said_value(said) for said, _ in cases] == [show(v) for v in left], (cases, left)
    for value, (_, lines) in zip(left, cases, strict=True):
        assert _follow(pack, plan, given, {**known, name: [value]}, lines), lines[-1]


def _said_value(said: str) -> str:
    said = re.sub(r" \(.*\)$", "", said)  # a fact's label
    return said.split("=", 1)[1] if "=" in said.split(" ")[0] else said.split(" ", 1)[1]


def _follow(
    pack: Pack,
    plan: object,
    given: Mapping[str, Scalar],
    known: dict[str, list[Scalar]],
    lines: Sequence[str],
) -> bool:
    """Each step line follows from `known` (updated as the steps narrow): True when the last one
    refutes (and no other does)."""
    for number, line in enumerate(lines):
        found = _STEP.match(line)
        assert found, line
        rid = found["rule"]
        because = f"({pack.rule(rid).because.rstrip('.')}), "
        then = line.split(because if because in line else "(see above), ", 1)[1]
        fields = plan.compiled.rules[rid].fields  # type: ignore[attr-defined]
        if then == "the request cannot hold":
            assert number == len(lines) - 1, f"a step before the last refutes: {line}"
            # (A field of the request that is no pin of the conflict is said as given there.)
            told = {**{f: [given[f]] for f in fields if f in given and f not in known}, **known}
            assert not _holds(plan, told, rid), f"the rule holds with its premises: {line}"
            return True
        stated = list(_CONSEQUENCE.finditer(then))
        assert stated and " and ".join(m[0] for m in stated) == then, line
        for m in stated:
            name = m["field"]
            before = known.get(name, list(plan.compiled.domains[name]))  # type: ignore[attr-defined]
            named = m["values"].split(" or ")
            left = [v for v in before if _holds(plan, known, rid, {name: v})]
            removed = [show(v) for v in before if v not in left]
            assert removed, f"{name}: the step narrows nothing: {line}"
            if m["verb"] == "must":
                assert named == [show(v) for v in left] or (named == ["nothing"] and not left), line
            else:
                assert named == removed, line
            known[name] = left
    return False


def _holds(
    plan: object, known: Mapping[str, Sequence[Scalar]], rid: str, extra: Mapping[str, Scalar] | None = None
) -> bool:
    cp = plan.compiled  # type: ignore[attr-defined]
    pins = {n: v[0] for n, v in known.items() if len(v) == 1}
    allowed = {n: v for n, v in known.items() if len(v) != 1}
    return cp.solve({**pins, **(extra or {})}, rules=[rid], allowed=allowed) is not None


def _conflict_cases() -> list[Path]:
    return [
        path
        for path in sorted(CASES.rglob("*.toml"))
        if tomllib.loads(path.read_text())["expect"].get("status") == "conflict"
        and tomllib.loads(path.read_text()).get("pack", "sglang") in ("sglang", "vllm")
    ]


@pytest.mark.parametrize("path", _conflict_cases(), ids=lambda p: p.stem)
def test_every_step_of_a_scenario_conflict_follows_from_its_premises(path: Path) -> None:
    case = tomllib.loads(path.read_text())
    pack = load_pack(case.get("pack", "sglang"))
    request = case["request"]
    ask = check if request.get("predict") else resolve
    options, facts = dict(request.get("options", {})), dict(request.get("facts", {}))
    kwargs = {} if request.get("predict") else {"strict": bool(request.get("strict", False))}
    with pytest.raises(Unsatisfiable) as info:
        ask(pack, options, facts, repairs=False, **kwargs)  # type: ignore[operator]
    _assert_steps_follow(pack, info.value)


QWEN3_NEXT_ON_B200 = {
    "platform": "cuda",
    "gpu_arch": "sm100",
    "architecture": "Qwen3NextForCausalLM",
    "checkpoint_quant": "none",
    "checkpoint_kv_cache_quant": "none",
    "num_attention_heads": 16,
    "num_gpus": 8,
}


def test_a_conflict_that_holds_by_cases_is_told_case_by_case() -> None:
    """Qwen3-Next with --block-size 96 on a B200: the backends left each fail the mamba state's
    block size for their own KV-cache dtypes, so no one rule at a time reaches the refutation.
    a0ebea6 told no chain (round 26's was nine false "cannot hold" steps); now each backend left
    is a case, each told to its own refutation, and the law holds over every case."""
    vllm = load_pack("vllm")
    options = {"attention_backend": "TRITON_FLASHINFER", "block_size": 96}
    with pytest.raises(Unsatisfiable) as info:
        resolve(vllm, options, QWEN3_NEXT_ON_B200, repairs=False)
    chain = _chain(info.value.message)
    assert any(line.startswith("whichever attention_backend is, the request cannot hold") for line in chain)
    cases = [line for line in chain if line.startswith("  if ")]
    assert [line.split(",")[0] for line in cases] == [
        "  if attention_backend=FLASH_ATTN",
        "  if attention_backend=TRITON_FLASHINFER",
        "  if attention_backend=B12X",
    ]
    _assert_steps_follow(vllm, info.value)


def test_a_split_over_a_typed_flag_says_its_values_and_each_because_once() -> None:
    """The same Qwen3-Next conflict holds without the typed --attention-backend (no pin of it):
    its cases are the backends left, said as values (`attention_backend=FLASH_ATTN`), not as if
    typed, and the split says another backend alone does not help. The four block-size rules
    each case applies again say their `because` once. On 0b3452a the cases read "if
    --attention-backend FLASH_ATTN" of a typed TRITON_FLASHINFER, and the chain said the four
    long `because`s three times each (11,800 characters)."""
    vllm = load_pack("vllm")
    options = {"attention_backend": "TRITON_FLASHINFER", "block_size": 48}
    with pytest.raises(Unsatisfiable) as info:
        resolve(vllm, options, QWEN3_NEXT_ON_B200, repairs=False)
    assert "attention_backend" not in {p.field for p in info.value.conflict.pins}
    chain = _chain(info.value.message)
    assert (
        "whichever attention_backend is, the request cannot hold "
        "(another --attention-backend alone does not help):" in chain
    )
    text = "\n".join(chain)
    assert "--attention-backend FLASH_ATTN" not in text and "if --attention-backend" not in text
    for rule in info.value.conflict.rules:
        assert text.count(rule.because.rstrip(".")) <= 1, rule.id
    assert text.count("(see above)") >= 8  # the block-size rules in the second and third cases
    _assert_steps_follow(vllm, info.value)


def test_a_rule_over_two_fields_nobody_knows_narrows_them() -> None:
    """GLM-5 (DSA) with an nvfp4 KV cache and --dsa-decode-backend trtllm: the trait rule reads
    two derived facts (is_dsa, is_mla) and the refusing rule one more field nobody typed (the
    prefill backend); a0ebea6 told no chain, as a rule waited for all but one of its fields."""
    sglang = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm120",
        "architecture": "GlmMoeDsaForCausalLM",
        "checkpoint_quant": "fp8",
    }
    with pytest.raises(Unsatisfiable) as info:
        resolve(sglang, {"kv_cache_dtype": "nvfp4", "dsa_decode_backend": "trtllm"}, facts, repairs=False)
    chain = _chain(info.value.message)
    assert chain and chain[0].endswith("is_dsa must be true;"), chain
    assert chain[-1].endswith("the request cannot hold."), chain
    _assert_steps_follow(sglang, info.value)


@pytest.mark.parametrize("block_size", [48, 96])
def test_a_split_reads_its_wide_rules_off_their_conditions_without_a_search(
    block_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Qwen3-Next splits: rules over 57,904 and 98,230 combinations of what the steps know
    (the block-size rule; TRITON_FLASHINFER's KV-cache dtypes) were answered by a search of the
    pack per value (`steps._searched`, ~0.5 ms each, 4-17 ms a rule at load 9). Their three-valued
    conditions settle them in a few hundred points (`constraint.supported`): no search is made."""
    from solver.render import steps

    def searched(*args: object) -> None:
        raise AssertionError(f"searched: {args[2]}")

    monkeypatch.setattr(steps, "_searched", searched)
    vllm = load_pack("vllm")
    options = {"attention_backend": "TRITON_FLASHINFER", "block_size": block_size}
    with pytest.raises(Unsatisfiable) as info:
        resolve(vllm, options, QWEN3_NEXT_ON_B200, repairs=False)
    assert "whichever attention_backend is, the request cannot hold" in info.value.message
    _assert_steps_follow(vllm, info.value)


def test_supported_is_what_every_combination_says() -> None:
    """The law of `constraint.supported` (the three-valued walk, subtrees settled or skipped)
    against trying every combination (`_projected`): each rule of both shipped packs over up to
    20,000 combinations of its fields' domains, every field free, and the same with the first
    field pinned at each of its first three values."""
    from solver.engine.constraint import _projected, supported
    from solver.engine.csp import compile_pack

    checked = 0
    for name in ("sglang", "vllm"):
        cp = compile_pack(load_pack(name))
        for rid, con in cp.rules.items():
            if not con.condition.three_valued or not con.fields:
                continue
            domains = {f: list(cp.domains[f]) for f in con.fields}
            sizes = [len(domains[f]) for f in con.fields]
            if math.prod(sizes) > 20_000:
                continue
            askings = [list(con.fields)] + [list(con.fields[1:])] * min(3, len(domains[con.fields[0]]))
            for at, free in enumerate(askings):
                asked = dict(domains)
                if at:
                    asked[con.fields[0]] = domains[con.fields[0]][at - 1 :]
                found = supported(con, free, asked, steps=10**9)
                assert found == _projected(con, free, asked), (name, rid, free)
                checked += 1
    assert checked > 500
