"""Explanations a user can act on: one canonical message word for word, then actionable parts
(the user's own flag spelling, the value, the rule id and its source) on the SGLang pack."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from solver import Unsatisfiable, load_pack
from solver.pack.loader import load_directory
from solver.reasoning.resolution import resolve

TOY = Path(__file__).parent / "fixtures" / "packs" / "toy"

CANONICAL = """\
No configuration satisfies this request: gpu=h100, --quant fp4, --kernel trtllm.

These cannot all hold:
  - --quant fp4  (you set it)
  - gpu=h100  (given)
  - rule toy:fp4-needs-b200: fp4 needs a Blackwell GPU; use --quant fp8
      source: toy/docs

What you can change (best first):
  1. leave --quant on auto (it resolves to fp8)
     confsolve resolve --pack {pack} --set gpu=h100 --set kernel=trtllm"""


def test_canonical_conflict_message_word_for_word() -> None:
    pack = load_pack(TOY)
    with pytest.raises(Unsatisfiable) as info:
        resolve(pack, {"quant": "fp4", "kernel": "trtllm"}, {"gpu": "h100"})
    assert str(info.value) == CANONICAL.format(pack=pack.directory)


@pytest.mark.parametrize("fresh", [True, False])
def test_the_message_names_the_directory_it_was_asked_about(tmp_path: Path, fresh: bool) -> None:
    """The same pack in two directories (one digest: one compiled plan in this process): each
    conflict's `--pack` names its own directory, whichever this process read first (the canonical
    message above depended on which tests had run before it in the same process). Read from its
    files or found by its digest (`fresh=False`: the loader's cache held the first directory's
    pack, and the second load returned it)."""
    for copy in ("first", "second"):
        root = tmp_path / copy / "toy"
        shutil.copytree(TOY, root)
        pack = load_directory(root, fresh=fresh)
        assert pack.directory == str(root)
        with pytest.raises(Unsatisfiable) as info:
            resolve(pack, {"quant": "fp4", "kernel": "trtllm"}, {"gpu": "h100"})
        assert str(info.value) == CANONICAL.format(pack=root)


def test_a_request_typing_an_asked_field_names_its_own_directory(tmp_path: Path) -> None:
    """A request that gives a field some rule asks about (`given(kernel)`) works on a copy of
    the pack with those rules answered, kept by digest (`solver.pack.given.for_request`): the
    copy made for the first directory named it in the second's conflict too."""
    for copy in ("first", "second"):
        root = tmp_path / copy / "toy"
        shutil.copytree(TOY, root)
        with (root / "rules.toml").open("a", encoding="utf-8") as rules:
            rules.write(
                '\n[[rule]]\nid = "typed-cutlass-no-fusion"\n'
                "when = \"given(kernel) and kernel == 'cutlass'\"\n"
                'forbid = "fusion"\nbecause = "a typed cutlass kernel fuses by itself; leave --fusion off"\n'
                'source = "toy/docs"\n'
            )
        pack = load_directory(root, fresh=True)
        with pytest.raises(Unsatisfiable) as info:
            resolve(pack, {"quant": "fp4", "kernel": "trtllm"}, {"gpu": "h100"})
        assert f"--pack {root} " in str(info.value), str(info.value)


@pytest.fixture(scope="module")
def sglang():  # type: ignore[no-untyped-def]
    return load_pack("sglang")


def _conflict(pack, options, facts) -> Unsatisfiable:  # type: ignore[no-untyped-def]
    with pytest.raises(Unsatisfiable) as info:
        resolve(pack, options, facts)
    return info.value


def test_issue3_nvfp4_on_hopper_blames_quantization_and_gpu_not_tp(sglang) -> None:  # type: ignore[no-untyped-def]
    """The issue's example: --quantization nvfp4_online on sm90 with --tp-size 8."""
    exc = _conflict(
        sglang, {"quantization": "nvfp4_online", "tp_size": 8}, {"platform": "cuda", "gpu_arch": "sm90"}
    )
    fields = {p.field for p in exc.conflict.pins}
    assert {"quantization", "gpu_arch"} <= fields and "tp_size" not in fields
    assert exc.conflict.rules
    message = str(exc)
    for part in (
        "--quantization nvfp4_online",
        "sm90",
        "Hopper (SM90",
        exc.conflict.rules[0].id,
        exc.conflict.rules[0].source,
    ):
        assert part in message, part
    first = exc.repairs[0]
    again = resolve(
        sglang,
        {k: v for k, v in first.values.items() if k in ("quantization", "tp_size")} | first.set,
        {"platform": "cuda", "gpu_arch": "sm90"},
    )
    assert again.values["quantization"] != "nvfp4_online"


def test_multi_rule_conflict_is_told_as_a_chain(sglang) -> None:  # type: ignore[no-untyped-def]
    """PubGrub style: the derived trait (is_mla) links the model to the rule that forbids the flag.

    (FA3 serves MLA models on Hopper only: on SM8x SGLang's FA3 backend refuses MLA. trtllm_mha on
    an MLA model, the earlier example, is a warning now: SGLang 0.5.23 accepts it at start-up.)"""
    exc = _conflict(
        sglang,
        {"attention_backend": "fa3"},
        {"platform": "cuda", "gpu_arch": "sm80", "architecture": "DeepseekV3ForCausalLM"},
    )
    message = str(exc)
    assert "Because architecture=DeepseekV3ForCausalLM and rule trait-mla-listed" in message
    assert "is_mla must be true" in message
    assert "--attention-backend fa3" in message and "the request cannot hold" in message


def test_sm120_is_named_as_blackwell_consumer(sglang) -> None:  # type: ignore[no-untyped-def]
    """Hardware facts are named precisely: sm120 is Blackwell consumer, not just Blackwell."""
    exc = _conflict(
        sglang,
        {"attention_backend": "fa3"},
        {"platform": "cuda", "gpu_arch": "sm120", "architecture": "DeepseekV3ForCausalLM"},
    )
    assert "Blackwell consumer (SM120" in str(exc)
    assert any(r.set.get("attention_backend") or "attention_backend" in r.unset for r in exc.repairs)


def test_a_fact_the_answer_assumed_is_not_called_a_what_if() -> None:
    """vLLM's FLASHMLA on an H100 with no model given: the conflict holds `head_size=128`, the
    value the answer assumed for a fact nobody gave. Its line said "(assumed (what-if))", the
    words of a what-if the user typed (`--assume`); it is not one. (Failed on main 8916668.)"""
    from solver.inputs.pins import collect_pins
    from solver.reasoning.resolution import resolve_pins

    vllm = load_pack("vllm")
    h100 = {"platform": "cuda", "gpu_arch": "sm90"}
    exc = _conflict(vllm, {"attention_backend": "FLASHMLA"}, h100)
    assert "  - head_size=128  (not given: assumed, set it if it differs)" in exc.message.splitlines()
    assert "what-if" not in exc.message
    # Typed as a what-if, it is one.
    pins = collect_pins(vllm, {"attention_backend": "FLASHMLA"}, h100)
    pins["head_size"] = pins["platform"].model_copy(
        update={"field": "head_size", "value": 128, "source": "assumed"}
    )
    with pytest.raises(Unsatisfiable) as info:
        resolve_pins(vllm, pins)
    assert "  - head_size=128  (assumed (what-if))" in info.value.message.splitlines()


def test_a_conflict_on_an_assumed_fact_offers_to_state_the_fact() -> None:
    """The same conflict: the user's FLASHMLA fails only for the model the answer assumed
    (head size 128, not MLA). The repairs changed the flag only; the model may be an MLA one, and
    then stating it is the repair: after the flags' repairs, one gives the head size and what it
    needs of the other facts nobody gave (is_mla), verified: resolving with them gives its values
    and keeps FLASHMLA. (Failed on main 8916668: no repair set a fact.)"""
    vllm = load_pack("vllm")
    h100 = {"platform": "cuda", "gpu_arch": "sm90"}
    exc = _conflict(vllm, {"attention_backend": "FLASHMLA"}, h100)
    stated = [r for r in exc.repairs if r.set and all(vllm.fields[n].kind == "fact" for n in r.set)]
    assert stated and exc.repairs[-1] is stated[-1], [(r.set, r.unset) for r in exc.repairs]
    repair = stated[0]
    assert set(repair.set) == {"head_size", "is_mla"} and repair.set["is_mla"] is True
    again = resolve(vllm, {"attention_backend": "FLASHMLA"}, {**h100, **repair.set})
    assert again.values == repair.values and again.values["attention_backend"] == "FLASHMLA"
    assert f"if it is so, give head_size={repair.set['head_size']} and is_mla=true" in exc.message


def test_a_fact_the_given_facts_decide_is_said_to_follow_from_them() -> None:
    """SGLang on a Hopper GPU with GPT-OSS's architecture and an NVFP4 checkpoint given: `check`
    fails on the launcher's own MoE runner (triton_kernel), and the conflict holds `is_moe`,
    which nobody gave but the architecture decides. Such facts were called "(assumed
    (what-if))" (failed on main 8916668, with HYV4's `is_dsa` and `has_attention_sinks`, whose
    DSA default the pack no longer refuses since 0.5.23+21); nor are they assumed: they follow
    from the facts given."""
    from solver import check

    sglang = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm90",
        "checkpoint_quant": "modelopt_fp4",
        "architecture": "GptOssForCausalLM",
    }
    with pytest.raises(Unsatisfiable) as info:
        check(sglang, {}, facts)
    lines = info.value.message.splitlines()
    assert "  - is_moe=true  (follows from the facts given)" in lines
    # And so in `check`'s one paragraph, which said "(assumed: not given)".
    from solver.render.answers import conflict_paragraph

    paragraph = conflict_paragraph(info.value, None, sglang)
    assert "is_moe=true (follows from the facts given)" in paragraph and "assumed" not in paragraph
