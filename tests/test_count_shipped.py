"""The compiled count shipped with a pack (`solver.engine.shipped`) and the compile shared by a
pack's `given()` copies (`count.compile_whole`).

A shipped form is the compile of its pack, byte for byte (made again under `-m replay`, which CI
runs: a form stale for its pack or for the compiler cannot land; the default run checks that it
was made for the pack's rules), its format is pinned, `count` reads it (no search, no
compile) and ignores one made for another pack or malformed. The shared compile has each
`given(FIELD)` a hard rule reads as a two-valued field counted as False: a count of a request's
copy (the fields it gives answered) is a pass with those fields pinned, and equals brute force
over that copy's own rules, under any pins and splits."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import lzma
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.engine import count as count_module
from solver.engine import shipped
from solver.engine.count import CountLimitReached, Limit, compile_whole, count, pack_checks
from solver.engine.ddnnf import FORMAT, compile_count
from solver.engine.diagrams import DiagramCounter
from solver.model import Pack
from solver.pack.given import for_request
from solver.pack.loader import load_directory

PACKS = Path(__file__).parent.parent / "constraints"
SHIPPED = ["sglang", "vllm"]


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_form_is_made_for_its_pack(name: str) -> None:
    """The shipped form's header names this pack's `shipped_key` (its fields, sets and rules) and
    this code's `ddnnf.FORMAT`, so `count` reads it: a rule edited without making the form again
    fails here. That the form's bytes are this compiler's for this pack (a pack compile of tens of
    seconds) is the `replay` test below; a compiler change shows in the default run through the
    pinned format (test_the_format_version_is_pinned) and the counts read from the form
    (test_count_reads_the_shipped_form)."""
    path = PACKS / name / shipped.SHIPPED_NAME
    assert path.is_file(), f"{path} missing: run python -m solver.engine.shipped {path.parent}"
    assert shipped.read_shipped(load_directory(PACKS / name)) is not None, (
        f"{path} is stale: run python -m solver.engine.shipped constraints/{name}"
    )


@pytest.mark.replay
@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_form_is_the_compile_of_its_pack(name: str) -> None:
    """Compiled again here, the pack gives the shipped bytes (unpacked: xz's packing may differ
    between liblzma versions). When this fails, the pack or the compiler changed: run
    `python -m solver.engine.shipped constraints/sglang constraints/vllm`."""
    path = PACKS / name / shipped.SHIPPED_NAME
    assert path.is_file(), f"{path} missing: run python -m solver.engine.shipped {path.parent}"
    made = shipped.shipped_bytes(load_directory(PACKS / name))
    assert lzma.decompress(path.read_bytes()) == made, (
        f"{path} is stale: run python -m solver.engine.shipped constraints/{name}"
    )


def test_the_format_version_is_pinned() -> None:
    """What the compiler writes for a fixed small pack, pinned to `FORMAT`: a change of the
    compiler or of the format that changes these bytes must bump `ddnnf.FORMAT` (and this pin),
    so that a form shipped before is not read as one of the new format."""
    from solver.pack.expr import Condition

    checks = [
        Condition.over(("a", "b"), lambda v: v[0] != v[1]),
        Condition.over(("b", "c"), lambda v: v[0] <= v[1]),
        Condition.over(("a", "c", "d"), lambda v: v[0] + v[1] != v[2]),
    ]
    counter = DiagramCounter(dict.fromkeys("abcd", (0, 1, 2)), checks)
    data = compile_count(counter, counted={"d": (True, False, True)}).to_bytes("pinned")
    assert (FORMAT, hashlib.sha256(data).hexdigest()[:16]) == (1, "e0c8ea7901dc396e")


@pytest.fixture
def no_kept_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFSOLVE_NO_CACHE", "1")
    monkeypatch.setattr(count_module, "_COMPILED", type(count_module._COMPILED)(8))


def test_count_reads_the_shipped_form(no_kept_forms: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no cache, the first wide count of the SGLang pack (and one that gives a field a
    `given()` rule reads) is a pass over the shipped form: neither a search past a few steps
    nor a compile; the narrow one equals its search."""
    pack = load_directory(PACKS / "sglang")
    narrow = {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"}
    typed = {**narrow, "quantization": "fp8", "moe_runner_backend": "flashinfer_cutedsl"}
    # A limit within SEARCH_FIRST asks for the search alone (no pass over a compiled form); the
    # narrow one takes ~140,000 steps of it since SGLang 0.5.23+32 (97,612 at +31), so the bound
    # is raised for this question only.
    monkeypatch.setattr(count_module, "SEARCH_FIRST", 1_000_000)
    searched = [
        count(pack, pins, limit=count_module.Limit(steps=1_000_000)).count for pins in (narrow, typed)
    ]

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled")

    monkeypatch.setattr(count_module, "compile_count", refuse)
    monkeypatch.setattr(count_module, "SEARCH_FIRST", 1)  # any search would go on to compile
    assert count(pack, {"platform": "cuda"}).steps < count_module.QUICK_SEARCH + 5_000
    assert [count(pack, pins).count for pins in (narrow, typed)] == searched
    # Pins that conflict end the quick search at once, before any pass but a quick one.
    answered = count_module._answered

    def quick_only(compiled: object, query: count_module._Query) -> object:
        if query.limit.steps is None or query.limit.steps > count_module.QUICK_SEARCH:
            raise AssertionError("a whole pass")
        return answered(compiled, query)  # type: ignore[arg-type]

    monkeypatch.setattr(count_module, "_answered", quick_only)
    assert count(pack, {"quantization": "fp8", "moe_runner_backend": "flashinfer_cutedsl"}).steps < 100


def test_a_short_pass_answers_before_the_diagram_counter_is_built(
    no_kept_forms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold `platform=cuda` (the shipped form's pass reads ~860 arms) builds no diagram counter
    (on def6101 it did, and searched 10,000 steps first: 1.63 -> 1.16 s CPU for the whole command
    at load 13); with a `by` split, or pins whose pass is long, the counter is built as before."""
    pack = load_directory(PACKS / "sglang")
    split = count(pack, {"platform": "cuda"}, by="gpu_arch")  # (the counter, then the pass down)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("built the diagram counter")

    monkeypatch.setattr(count_module, "_COMPILED", type(count_module._COMPILED)(8))
    monkeypatch.setattr(count_module, "_counter", refuse)
    answer = count(pack, {"platform": "cuda"})
    assert answer.count == split.count == sum((split.by or {}).values())
    assert answer.steps <= count_module.QUICK_SEARCH
    with pytest.raises(AssertionError, match="diagram counter"):
        count(pack, {"platform": "cuda"}, by="gpu_arch")


def test_a_pass_cut_short_by_a_deadline_gives_bounds(no_kept_forms: None) -> None:
    """A deadline already past stops the pass over the shipped form at its first look at the
    clock: the bounds (every combination the pins keep) hold the count."""
    pack = load_directory(PACKS / "sglang")
    # Pins whose answer takes a walk of the form (the form keeps the pack's total and may split
    # on the platform near its root, so {} or a platform alone can be answered in a few steps).
    pins = {"gpu_arch": "sm90"}
    exact = count(pack, pins).count
    with pytest.raises(CountLimitReached) as info:
        count(pack, pins, limit=Limit(steps=None), deadline=time.monotonic() - 1)
    assert info.value.upper is not None and info.value.lower <= exact <= info.value.upper


def test_a_stale_or_malformed_shipped_form_is_ignored(tmp_path: Path, no_kept_forms: None) -> None:
    """The shipped file of a pack edited since (another digest), one cut short, or not xz, is
    not read: the count compiles or searches as it would without it."""
    root = tmp_path / "sglang"
    shutil.copytree(PACKS / "sglang", root)
    # (the loader hands back the pack it has for this digest, with the directory it came from)
    pack = dataclasses.replace(load_directory(root), directory=str(root))
    assert shipped.read_shipped(pack) is not None
    good = (root / shipped.SHIPPED_NAME).read_bytes()
    for bad in (good[: len(good) // 2], b"not xz", lzma.compress(b'{"format": 1}\n')):
        (root / shipped.SHIPPED_NAME).write_bytes(bad)
        assert shipped.read_shipped(pack) is None
    (root / shipped.SHIPPED_NAME).write_bytes(good)
    facts = root / "facts.toml"
    facts.write_text(facts.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    commented = load_directory(root)  # a comment: another digest, the same rules
    assert commented.digest != pack.digest and commented.directory == str(root)
    assert shipped.read_shipped(commented) is not None
    moe = root / "moe.toml"
    text = moe.read_text(encoding="utf-8")
    moe.write_text(
        text.replace("when = \"quantization == 'nvfp4_online'\"", "when = \"quantization == 'fp8'\"", 1)
    )
    assert shipped.read_shipped(load_directory(root)) is None  # a rule edited: stale


def _bare(pack: Pack) -> Pack:
    """`pack` with everything but its fields, sets and rules emptied (and another digest, so
    that no compile kept for `pack` answers for it)."""
    return dataclasses.replace(
        pack,
        version="other",
        description="",
        digest=f"bare {pack.digest}",
        preferences=(),
        acknowledged={},
        model_config_map={},
        launcher=None,
        example={},
        assumed_groups={},
        conditions={},
        rules=tuple(
            dataclasses.replace(rule, because="", source="", acknowledged=(), file="") for rule in pack.rules
        ),
    )


def _changing_a_rule_changes_the_key(pack: Pack) -> None:
    first = pack.rules[0]
    for change in ({"severity": "warn" if first.severity == "error" else "error"}, {"id": "renamed"}):
        moved = dataclasses.replace(pack, rules=(dataclasses.replace(first, **change), *pack.rules[1:]))
        assert count_module.shipped_key(moved) != count_module.shipped_key(pack)


def test_what_the_shipped_key_leaves_out_does_not_change_the_compile() -> None:
    """`shipped_key` digests the fields, sets and rules only: emptying everything else of a pack
    (preferences, messages, sources, acknowledgements, launcher, model configs, digest) keeps the
    key and the compiled bytes; changing a rule changes the key. Here on the vLLM pack cut to
    every fifth rule (all of the rest kept; a compile of a tenth of a second), the whole pack
    under `replay` below."""
    whole = load_directory(PACKS / "vllm")
    pack = dataclasses.replace(whole, rules=whole.rules[::5], digest=f"every fifth rule of {whole.digest}")
    bare = _bare(pack)
    assert count_module.shipped_key(bare) == count_module.shipped_key(pack)
    assert shipped.shipped_bytes(bare) == shipped.shipped_bytes(pack)
    _changing_a_rule_changes_the_key(pack)


@pytest.mark.replay
def test_what_the_shipped_key_leaves_out_of_a_whole_pack_does_not_change_the_compile() -> None:
    """The same for the whole vLLM pack. Its own compile is its shipped form
    (test_a_shipped_form_is_the_compile_of_its_pack), so the bare pack is compiled and the whole
    one read: one compile of the vLLM pack fewer."""
    pack = load_directory(PACKS / "vllm")
    bare = _bare(pack)
    assert count_module.shipped_key(bare) == count_module.shipped_key(pack)
    assert shipped.shipped_bytes(bare) == lzma.decompress(
        (PACKS / "vllm" / shipped.SHIPPED_NAME).read_bytes()
    ), (
        "the bare pack compiles to other bytes than the shipped form (or the form is stale: see "
        "test_a_shipped_form_is_the_compile_of_its_pack)"
    )
    _changing_a_rule_changes_the_key(pack)


GIVEN_PACK = """
[pack]
name = "given-shared"
version = "1"
description = "rules that read what the request gives"
files = ["rules.toml"]
"""

FIELDS = ("a", "b", "c", "d")
VALUES = ("x", "y", "z")


def _leaf() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda f, v: f"{f} == '{v}'", st.sampled_from(FIELDS), st.sampled_from(VALUES)),
        st.builds(lambda f, v: f"{f} != '{v}'", st.sampled_from(FIELDS), st.sampled_from(VALUES)),
        st.builds(lambda f: f"given({f})", st.sampled_from(FIELDS)),
    )


def _condition() -> st.SearchStrategy[str]:
    return st.recursive(
        _leaf(),
        lambda inner: st.one_of(
            st.builds(lambda x: f"not ({x})", inner),
            st.builds(lambda x, y, op: f"({x}) {op} ({y})", inner, inner, st.sampled_from(["and", "or"])),
        ),
        max_leaves=5,
    )


def _pack(tmp_path: Path, rules: list[tuple[str, str, bool]]) -> Pack:
    text = "".join(f'[field.{f}]\nkind = "option"\ndomain = ["x", "y", "z"]\n\n' for f in FIELDS)
    for at, (when, require, warn) in enumerate(rules):
        text += (
            f'[[rule]]\nid = "r{at}"\nwhen = "{when}"\nrequire = "{require}"\n'
            f'severity = "{"warn" if warn else "error"}"\nbecause = "test"\nsource = "test"\n\n'
        )
    root = tmp_path / f"given-shared-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    root.mkdir(exist_ok=True)
    (root / "pack.toml").write_text(GIVEN_PACK, encoding="utf-8")
    (root / "rules.toml").write_text(text, encoding="utf-8")
    return load_directory(root)


def _brute(pack: Pack, pins: dict[str, str], part: dict[str, str] | None = None) -> int:
    """The models of the request's copy of `pack` (its `given()` answered for the fields
    `pins` gives) that keep `pins` and `part` (a split's value: not given), by enumeration."""
    checks = pack_checks(for_request(pack, pins))
    keep = {**pins, **(part or {})}
    return sum(
        1
        for row in itertools.product(VALUES, repeat=len(FIELDS))
        if all(row[FIELDS.index(f)] == v for f, v in keep.items())
        and all(c.holds([row[FIELDS.index(f)] for f in c.fields]) for c in checks)
    )


@pytest.mark.property
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rules=st.lists(st.tuples(_condition(), _condition(), st.booleans()), min_size=1, max_size=4),
    data=st.data(),
)
def test_the_shared_compile_answers_every_given_copy(tmp_path: Path, rules, data) -> None:  # type: ignore[no-untyped-def]
    """One compile of the pack as loaded (`given(FIELD)` as two-valued fields counted as
    False) answers a count of every request's copy: with it kept, and any search or other
    compile refused, the counts under up to three pins (the fields they give) and a split by any
    field equal brute force over the copy's own rules; and a first count with `SEARCH_FIRST` at
    one step (a copy's search, then the pack's compile) does too."""
    pack = _pack(tmp_path, rules)
    pins = data.draw(st.dictionaries(st.sampled_from(FIELDS), st.sampled_from(VALUES), max_size=3))
    by = data.draw(st.sampled_from(FIELDS))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(count_module, "SEARCH_FIRST", 1)
        patch.setattr(count_module, "_COMPILED", type(count_module._COMPILED)(8))
        patch.setenv("CONFSOLVE_NO_CACHE", "1")
        assert count(pack, pins).count == _brute(pack, pins)
        count_module._COMPILED.clear()
        count_module._keep(pack, compile_whole(pack))

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("searched or compiled")

        patch.setattr(count_module, "compile_count", refuse)
        patch.setattr(DiagramCounter, "count", refuse)
        patch.setattr(count_module, "QUICK_SEARCH", 0)
        assert count(pack, {}).count == _brute(pack, {})
        assert count(pack, pins).count == _brute(pack, pins)
        split = count(pack, pins, by=by).by
        assert split == {v: _brute(pack, pins, {by: v}) for v in VALUES if by not in pins or pins[by] == v}


# every --quantization a user may type, as the pack's QUANT_TYPED_METHODS lists them
QUANT_TYPED = [
    *("auto-round", "auto-round-int8", "awq", "awq_marlin", "bitsandbytes", "compressed-tensors", "fp8"),
    *("gguf", "gptq", "gptq_marlin", "humming", "mlx_q4", "mlx_q8", "modelopt", "modelopt_fp4"),
    *("modelopt_fp8", "modelopt_mixed", "modelslim", "moe_wna16", "mxfp4", "mxfp8", "mxfp_w4a8"),
    *("nvfp4_online", "petit_nvfp4", "quark", "quark_int4fp8_moe", "w4afp8", "w8a8_fp8", "w8a8_int8"),
]


FP8_FP4_REST = ["modelopt_mixed", "mxfp8", "nvfp4_online"]


def test_the_shipped_form_has_a_field_per_given_of_a_hard_rule() -> None:
    """The SGLang pack's hard rules that read `given()` ask about eight fields (page_size since
    round 18: mamba-no-buffer-page-1 meets a typed --page-size only), and since round 19 about the
    values typed (`given(F) == V`: HRM-Text's checks of the typed --attention-backend, the
    tokenspeed_mla KV), since round 22 the --quantization typed under the FlashInfer TRT-LLM
    MoE runners, and since round 23 the --moe-runner-backend typed (round 24: read plainly, the
    megamoe alias being the launcher's rewrite the field declares, not a runner typed) and a typed
    unquant / mxfp8, and since round 30 the two DSA phases typed: each is a two-valued field of
    its compiled count, counted as False."""
    compiled = shipped.read_shipped(load_directory(PACKS / "sglang"))
    assert compiled is not None
    atoms = sorted(compiled.order[level] for level in compiled.counted)
    asked = ["attention_backend", "decode_attention_backend", "ep_size", "moe_runner_backend"]
    # round 28: no hard rule reads `given(quantization)` bare any more (QUANTIZATION_UNTYPED says
    # "not typed" with the value reads below, one meaning in rules and preferences alike)
    asked += ["page_size", "prefill_attention_backend"]
    # round 30: dsa-tilelang-fp8-both-phases accepts two tilelang DSA phases over FP8 KV only as typed
    asked += ["dsa_decode_backend", "dsa_prefill_backend"]
    typed = [
        "attention_backend) in ['ascend', 'fa3', 'fa4', 'flashinfer', 'intel_xpu', 'triton']",
        "attention_backend) in ['cutedsl_mla', 'tokenspeed_mla', 'trtllm_mla']",
        "attention_backend) in ['cutedsl_mla', 'tokenspeed_mla']",
        *(f"attention_backend) in ['{v}']" for v in ("fa4", "flashmla", "hpc_ops", "intel_xpu")),
        *(f"attention_backend) in ['{v}']" for v in ("tokenspeed_mla", "trtllm_mha", "trtllm_mla")),
        "decode_attention_backend) in ['tokenspeed_mla']",
        # round 22: the FlashInfer TRT-LLM runners' start-up check reads --quantization as typed
        f"quantization) in {QUANT_TYPED}",
        f"quantization) in {['compressed-tensors', 'fp8', 'modelopt_fp4', 'modelopt_fp8', *FP8_FP4_REST]}",
        "quantization) in ['fp8', 'modelopt_fp4', 'modelopt_mixed', 'mxfp8', 'nvfp4_online']",
        # round 23: a typed --moe-runner-backend megamoe is SGLang's all-to-all alias (its
        # adjustment reads the value typed), and the wNa16 rule a typed triton
        "moe_runner_backend) in ['megamoe']",
        "moe_runner_backend) in ['triton']",
        # round 29: DeepEP's low-latency DeepGEMM check is skipped for a typed humming runner and a
        # typed flashinfer_cutedsl over ModelOpt NVFP4 (no default chain picks either)
        "moe_runner_backend) in ['flashinfer_cutedsl']",
        "moe_runner_backend) in ['humming']",
        # round 23: a typed unquant stops the SM100 overrides' copy; a typed mxfp8 drives the MXFP8 override
        "quantization) in ['mxfp8']",
        "quantization) in ['none']",
    ]
    assert atoms == sorted([f"given({name})" for name in asked] + [f"given({text}" for text in typed])
    assert set(compiled.counted.values()) == {1}
