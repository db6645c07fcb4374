"""What `check`'s one-paragraph conflict answer quotes, and which repair a failing launcher default
offers first (solver/render/answers.py `quoted_rule`, solver/reasoning/chainfailure.py).

The paragraph quotes one rule's `because` next to "Try: <the first repair>". The law: the quoted
rule reads a field the user can set, an option or a field the first repair changes, never derived
facts alone (an architecture's traits). a0ebea6 quoted the conflict's first rule when no flag was
typed: "sparse MLA (index_topk) is a kind of MLA; set is_mla=true or is_sparse_mla=false" for
DeepSeek-V3.2 on an A100, beside "Try: set gpu_arch=sm90".

When the launcher's own default for a flag left unset fails, setting that flag otherwise came
first even when the default is the flag left out: an aggregated server was told to become a PD
decode server to fit the MoE all-to-all the user typed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from solver import check, load_pack
from solver.engine.csp import compile_pack
from solver.engine.opendomain import query_pack
from solver.errors import Unsatisfiable
from solver.model import Pack
from solver.pack.loader import semantics
from solver.render.answers import conflict_paragraph

CASES = Path(__file__).parent / "cases"


def _quoted(pack: Pack, exc: Unsatisfiable) -> str | None:
    """The id of the rule whose `because` the paragraph quotes (read off the paragraph), or None
    when it quotes none and says that no rule alone is the reason."""
    paragraph = conflict_paragraph(exc, None, pack)
    said = paragraph.split(" cannot hold together under ", 1)[1].split(". ", 1)[1]
    if said.startswith(NO_RULE_ALONE):
        return None
    becauses = {r.id: r.because.rstrip().rstrip(".") for r in exc.conflict.rules}
    # (a because that starts with a plain word starts the sentence: capitalized)
    quoted = [rid for rid, b in becauses.items() if said.startswith((b, b[:1].upper() + b[1:]))]
    assert quoted, paragraph
    return quoted[0]


NO_RULE_ALONE = "No rule alone is the reason: together they leave "


def _assert_quotes_what_the_user_can_set(pack: Pack, exc: Unsatisfiable) -> None:
    """The law: the quoted rule reads the first repair's field when a rule of the conflict does
    (its "Try:" answers it), else a flag the user typed when one does. When none of several rules
    reads either, no rule is quoted where an option nobody set is read (each rule only narrows
    it: 0b3452a quoted "this backend belongs to another platform" of a backend nobody typed),
    and the paragraph names those options."""
    rid = _quoted(pack, exc)
    request = exc.request or {}
    # (a rule reads FIELD through `given(FIELD)` too: answered in the request's copy of the pack)
    cp = compile_pack(query_pack(pack, request) if request else pack)

    def reads(rule: str) -> set[str]:
        return set(cp.rules[rule].fields) | set(semantics(pack).rules[rule].given)

    first = exc.repairs[0] if exc.repairs else None
    repaired = set(first.set) | set(first.unset) if first is not None else set()
    typed = {p.field for p in exc.conflict.pins if p.source in ("user", "adjusted")}
    rules = [r.id for r in exc.conflict.rules]
    for marked in (repaired, typed):
        if any(marked & reads(r) for r in rules):
            assert rid is not None and marked & reads(rid), (rid, marked)
            return
    pinned = {p.field for p in exc.conflict.pins}
    unset = {
        f
        for r in rules
        for f in reads(r)
        if f in pack.fields and pack.fields[f].kind == "option" and f not in request and f not in pinned
    }
    if len(rules) > 1 and unset:
        assert rid is None, (rid, unset)
        said = conflict_paragraph(exc, None, pack).split(NO_RULE_ALONE, 1)[1].split(" (not given)", 1)[0]
        # (named as the user types them: each option by its launcher flag)
        assert set(said.split(" and ")) == {pack.fields[f].cli_flag for f in unset}, (said, unset)
    else:
        assert rid is not None


def test_dsv32_on_an_a100_quotes_the_backends_gpu_rule_not_a_trait() -> None:
    vllm = load_pack("vllm")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm80",
        "architecture": "DeepseekV32ForCausalLM",
        "num_attention_heads": 128,
    }
    with pytest.raises(Unsatisfiable) as info:
        check(vllm, {"tensor_parallel_size": 8}, facts)
    assert dict(info.value.repairs[0].set) == {"gpu_arch": "sm90"}
    assert _quoted(vllm, info.value) == "backend-needs-hopper"
    assert "Hopper" in conflict_paragraph(info.value, None, vllm)


def _cases() -> list[Path]:
    return [
        path
        for path in sorted(CASES.rglob("*.toml"))
        if tomllib.loads(path.read_text()).get("pack", "sglang") in ("sglang", "vllm")
    ]


@pytest.mark.parametrize("path", _cases(), ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_check_quotes_a_rule_the_user_can_act_on(path: Path) -> None:
    """Every scenario case, as `check` (and so golden's check.txt) answers it."""
    case = tomllib.loads(path.read_text())
    pack = load_pack(case.get("pack", "sglang"))
    request = case["request"]
    try:
        check(pack, dict(request.get("options", {})), dict(request.get("facts", {})))
    except Unsatisfiable as exc:
        if all(pack.rule(r.id).severity == "warn" for r in exc.conflict.rules):
            return  # (--deny-warnings: every rule is quoted)
        _assert_quotes_what_the_user_can_set(pack, exc)


MORI = {
    "platform": "cuda",
    "gpu_arch": "sm90",
    "architecture": "DeepseekV3ForCausalLM",
    "checkpoint_quant": "fp8",
}


@pytest.mark.parametrize("predict", [False, True], ids=["resolve", "check"])
def test_a_failing_serving_mode_default_is_kept_before_the_typed_flag(predict: bool) -> None:
    """--moe-a2a-backend mori at -tp 8 on an H100: SGLang's own --disaggregation-mode null fails
    the MoRI token budget. First: drop or change the all-to-all the user typed; making the server
    a PD decode server (a0ebea6's first repair) changes how it is deployed, and comes after."""
    from solver.reasoning.resolution import resolve

    sglang = load_pack("sglang")
    with pytest.raises(Unsatisfiable) as info:
        resolve(sglang, {"ep_size": 8, "moe_a2a_backend": "mori", "tp_size": 8}, MORI, predict=predict)
    exc = info.value
    assert exc.launcher_default is not None and exc.launcher_default["field"] == "disaggregation_mode"
    changed = [set(r.set) | set(r.unset) for r in exc.repairs]
    assert changed[0] == {"moe_a2a_backend"}, changed
    assert {"disaggregation_mode"} in changed  # still offered


DSV32_ON_A100S = {
    "platform": "cuda",
    "gpu_arch": "sm80",
    "architecture": "DeepseekV32ForCausalLM",
    "checkpoint_quant": "fp8",
    "checkpoint_kv_cache_quant": "none",
    "num_attention_heads": 128,
    "num_gpus": 8,
    "has_flashinfer": True,
}


def test_a_conflict_no_change_fixes_says_so_in_a_sentence() -> None:
    """DeepSeek-V3.2 on 8 A100s with --decode-context-parallel-size 8 (resolve_ab's vllm:405): no
    change of the given inputs makes it solvable, which `resolve` says and `check`'s paragraph did
    not (0b3452a ended on the quoted rule, "... this backend belongs to another platform ..."),
    and the quoted `because` starts its sentence with a capital."""
    vllm = load_pack("vllm")
    with pytest.raises(Unsatisfiable) as info:
        check(vllm, {"decode_context_parallel_size": 8}, DSV32_ON_A100S)
    assert info.value.repairs == [] and info.value.repairs_searched
    paragraph = conflict_paragraph(info.value, None, vllm)
    assert "No change of the given inputs makes this request solvable." in paragraph
    said = paragraph.split(" cannot hold together under ", 1)[1].split(". ", 1)[1]
    assert said[0].isupper(), said


def test_no_rule_is_quoted_when_each_only_narrows_an_option_nobody_set() -> None:
    """resolve_ab's vllm:405 again: the conflict's pins are two given facts (an A100, DeepSeek-V3.2)
    and its ten rules narrow --attention-backend, which nobody typed, until no value is left. No
    repair exists and no rule reads a typed flag; 0b3452a quoted the first rule reading an option,
    "This backend belongs to another platform (ROCm, XPU, CPU); ... or leave --attention-backend
    unset", of a backend nobody chose. The paragraph says no rule alone is the reason."""
    vllm = load_pack("vllm")
    with pytest.raises(Unsatisfiable) as info:
        check(vllm, {"decode_context_parallel_size": 8}, DSV32_ON_A100S)
    exc = info.value
    assert len(exc.conflict.rules) > 1 and not exc.repairs
    paragraph = conflict_paragraph(exc, None, vllm)
    assert not any(r.because.rstrip(".").lower() in paragraph.lower() for r in exc.conflict.rules), paragraph
    assert f"{NO_RULE_ALONE}--attention-backend (not given) no value." in paragraph, paragraph
    _assert_quotes_what_the_user_can_set(vllm, exc)


def test_no_rule_alone_says_nothing_without_an_unset_option() -> None:
    """`_no_rule_alone` names the options nobody set; a conflict reading none (or of no rule) gets
    no sentence at all (5e2b239: "together they leave  (not given) no values that hold together.")."""
    from types import SimpleNamespace

    from solver.engine.csp import compile_pack
    from solver.render import answers

    vllm = load_pack("vllm")
    exc = SimpleNamespace(conflict=SimpleNamespace(rules=[], pins=[]), request={})
    assert answers._no_rule_alone(exc, vllm, compile_pack(vllm)) == ""


def test_the_paragraph_spells_values_as_the_other_answers_do() -> None:
    """A derived yes/no in the paragraph reads `is_moe=true` (0b3452a: Python's `is_moe=True`)."""
    sglang = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm90",
        "architecture": "Qwen3MoeForCausalLM",
        "checkpoint_quant": "compressed-tensors",
        "weight_group_size": 128,
    }
    with pytest.raises(Unsatisfiable) as info:
        check(sglang, {"moe_a2a_backend": "megamoe"}, facts)
    paragraph = conflict_paragraph(info.value, None, sglang)
    assert "is_moe=true (follows from the facts given)" in paragraph, paragraph
    assert "True" not in paragraph


def test_the_paragraph_reads_the_pack_s_names_once_not_per_paragraph() -> None:
    """Whether the quoted `because` starts with a name of the pack (kept in its spelling) was a
    scan of every field's domain per paragraph (`_named`, 487ea0a); the names are read in one
    pass per pack. Counted through the pack's `fields` (read whole for the names' set)."""
    vllm = load_pack("vllm")
    with pytest.raises(Unsatisfiable) as info:
        check(vllm, {"decode_context_parallel_size": 8}, DSV32_ON_A100S)

    class Counted(dict):  # type: ignore[type-arg]
        scans = 0

        def values(self):  # type: ignore[no-untyped-def]
            Counted.scans += 1
            return super().values()

    counted = vllm.model_copy(update={"fields": Counted(vllm.fields)})
    assert isinstance(counted.fields, Counted) and counted.digest == vllm.digest
    with pytest.raises(Unsatisfiable) as flashmla:
        check(vllm, {"attention_backend": "FLASHMLA"}, {"platform": "cuda", "gpu_arch": "sm90"})
    asked = [info.value, flashmla.value] * 3
    said = [conflict_paragraph(exc, None, counted) for exc in asked]
    assert said == [conflict_paragraph(exc, None, vllm) for exc in asked]
    assert "Try:" in said[1]
    assert Counted.scans <= 1, Counted.scans
