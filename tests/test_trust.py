"""Issue #13's examples, each pinned: `check` predicts what SGLang does with the command as typed,
`resolve` says where its answer departs from SGLang's own pick, and nothing is assumed silently."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from clirun import run

from solver import check, load_pack, resolve
from solver.errors import InvalidInput, Unsatisfiable

DSV3_B200 = [
    "--set",
    "platform=cuda",
    "--set",
    "gpu_arch=sm100",
    "--set",
    "architecture=DeepseekV3ForCausalLM",
    "--set",
    "checkpoint_quant=fp8",
]


# --- check predicts; resolve searches and says where it departs ----------------------------------


def test_check_refuses_what_sglang_refuses_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    """sm100 + DeepSeek-V3 + fp8_e5m2 KV: SGLang's own trtllm_mla refuses the KV dtype."""
    code, out, _ = run(capsys, "check", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2")
    assert code == 1
    assert "--attention-backend trtllm_mla" in out and "trtllm-mla-kv-dtype" in out
    assert "Try: use --attention-backend " in out  # the repair says which flag to set


def test_check_conflict_json_names_the_failing_launcher_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "conflict"
    assert doc["launcher_default"] == {
        "field": "attention_backend",
        "value": "trtllm_mla",
        "chain": ["trtllm_mla"],
        "preference": "attn-deepseek-family-sm100",
    }
    pins = {(p["field"], p["value"], p["source"]) for p in doc["conflict"]["pins"]}
    assert ("attention_backend", "trtllm_mla", "launcher-default") in pins
    assert ("kv_cache_dtype", "fp8_e5m2", "user") in pins
    first = doc["repairs"][0]
    assert list(first["set"]) == ["attention_backend"] and not first["unset"]
    assert first["values"]["kv_cache_dtype"] == "fp8_e5m2"


def test_resolve_says_when_it_departs_from_the_launchers_own_pick(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "resolve", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["mode"] == "search"
    [first, *_] = doc["departures"]
    assert first["field"] == "attention_backend" and first["launcher"] is None
    assert "own default trtllm_mla fails here" in first["because"]
    assert first["resolved"] == doc["values"]["attention_backend"] != "trtllm_mla"
    code, out, _ = run(capsys, "resolve", *DSV3_B200, "--set", "kv_cache_dtype=fp8_e5m2")
    assert "NOT THE LAUNCHER'S OWN PICK: attention_backend: sglang's own default trtllm_mla fails" in out


def test_check_json_is_the_resolve_document_in_predict_mode(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", *DSV3_B200, "--set", "tp_size=8", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["status"] == "resolved" and doc["mode"] == "predict"
    assert {"values", "provenance", "warnings", "assumed", "adjustments"} <= set(doc)
    assert doc["values"]["attention_backend"] == "trtllm_mla"


def test_check_on_fp8_checkpoint_with_cutedsl_runner_is_refused() -> None:
    """SGLang refuses an FP8 checkpoint with the FlashInfer CuteDSL MoE runner; check must not
    re-quantize the model to make the kernel flag work."""
    pack = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm100",
        "architecture": "Qwen3MoeForCausalLM",
        "checkpoint_quant": "fp8",
    }
    with pytest.raises(Unsatisfiable) as info:
        check(pack, {"moe_runner_backend": "flashinfer_cutedsl"}, facts)
    assert "nvfp4_online" not in {str(p.value) for p in info.value.conflict.pins}


def test_check_and_resolve_agree_where_the_launcher_chain_works() -> None:
    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"}
    predicted = check(pack, {"tp_size": 8}, facts)
    searched = resolve(pack, {"tp_size": 8}, facts)
    assert predicted.values == searched.values and not searched.departures


# --- fields the search may not choose (search = false) -------------------------------------------


def test_dp_attention_alone_stays_on_one_gpu_and_is_turned_off_as_sglang_does() -> None:
    """--enable-dp-attention alone: SGLang's dp_size stays 1 and DP attention goes off (its
    attn_dp_size is 1); never a two-GPU launch."""
    pack = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm90",
        "architecture": "DeepseekV3ForCausalLM",
        "checkpoint_quant": "fp8",
    }
    for answer in (
        resolve(pack, {"enable_dp_attention": True}, facts),
        check(pack, {"enable_dp_attention": True}, facts),
    ):
        assert answer.values["tp_size"] == 1 and answer.values["dp_size"] == 1
        assert answer.values["enable_dp_attention"] is False
        [adjusted] = answer.adjustments
        assert (adjusted.field, adjusted.rule) == ("enable_dp_attention", "par-dp-attention-needs-dp")


def test_a_launcher_override_that_then_fails_is_a_conflict_not_a_quiet_default() -> None:
    """SGLang turns --speculative-algorithm NEXTN into EAGLE whatever else is set; with
    flex_attention EAGLE is refused. The request fails naming the override: it must not resolve
    with speculative decoding quietly off (the adjustment used to fall back to the default)."""
    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "DeepseekV3ForCausalLM"}
    options = {"speculative_algorithm": "NEXTN", "attention_backend": "flex_attention"}
    for ask in (resolve, check):
        with pytest.raises(Unsatisfiable) as caught:
            ask(pack, options, facts)
        pins = {(p.field, p.value, p.source) for p in caught.value.conflict.pins}
        assert ("speculative_algorithm", "EAGLE", "adjusted") in pins
        assert "flex-attention-no-speculative" in {r.id for r in caught.value.conflict.rules}
        # The text names what the user typed, not only the launcher's replacement.
        assert "your --speculative-algorithm NEXTN by sglang:spec-nextn-is-eagle" in str(caught.value)


def test_resolve_never_requantizes_the_model_to_make_a_kernel_flag_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """FP8 checkpoint + --moe-runner-backend flashinfer_cutedsl: SGLang refuses it; resolve must
    not pick --quantization nvfp4_online, only offer it as a repair."""
    code, out, _ = run(
        capsys,
        "resolve",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm100",
        "--set",
        "architecture=Qwen3MoeForCausalLM",
        "--set",
        "checkpoint_quant=fp8",
        "--set",
        "moe_runner_backend=flashinfer_cutedsl",
        "--json",
    )
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "conflict"
    assert doc["launcher_default"]["field"] == "quantization"
    assert doc["launcher_default"]["value"] == "fp8"
    assert {"quantization": "nvfp4_online"} in [r["set"] for r in doc["repairs"]]


def test_resolve_never_turns_on_dp_attention_to_fit_the_gpus() -> None:
    """--tp-size 8 --dp-size 2 on 8 GPUs needs 16 ranks. 595b19b resolved it by turning DP
    attention on (8 ranks, the two DP groups inside the TP group): a parallel layout the user did
    not ask for, which also changes what their --dp-size means. It is refused; turning it on is a
    repair the user takes or not."""
    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM", "num_gpus": 8}
    with pytest.raises(Unsatisfiable) as caught:
        resolve(pack, {"tp_size": 8, "dp_size": 2}, facts)
    assert "par-ranks-within-gpus" in {r.id for r in caught.value.conflict.rules}
    assert {"enable_dp_attention": True} in [dict(r.set) for r in caught.value.repairs]
    typed = resolve(pack, {"tp_size": 8, "dp_size": 2, "enable_dp_attention": True}, facts)
    assert typed.values["enable_dp_attention"] is True and not typed.departures


@pytest.mark.parametrize(
    "field", ["quantization", "tp_size", "dp_size", "ep_size", "dtype", "enable_dp_attention"]
)
def test_precision_and_resources_are_not_searched(field: str) -> None:
    assert load_pack("sglang").fields[field].search is False


@pytest.mark.parametrize(
    ("pack_name", "field"),
    [
        ("sglang", "kv_cache_dtype"),
        ("vllm", "kv_cache_dtype"),
        ("vllm", "decode_context_parallel_size"),
        ("vllm", "enable_expert_parallel"),
    ],
)
def test_the_cache_precision_and_parallel_layouts_are_not_searched_in_either_pack(
    pack_name: str, field: str
) -> None:
    """595b19b searched SGLang's KV dtype (vLLM's was not) and vLLM's -dcp and -ep."""
    assert load_pack(pack_name).fields[field].search is False


def test_resolve_never_picks_a_kv_cache_dtype_to_make_a_backend_work() -> None:
    """tilelang DSA decode on B200: SGLang's DSA cache defaults to fp8_e4m3, which tilelang refuses
    on CUDA. 595b19b resolved it with a bfloat16 cache it chose (twice the KV memory); now the
    request is refused and the bfloat16 cache is the first repair."""
    pack = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm100",
        "architecture": "DeepseekV32ForCausalLM",
        "checkpoint_quant": "fp8",
    }
    with pytest.raises(Unsatisfiable) as caught:
        resolve(pack, {"dsa_decode_backend": "tilelang"}, facts)
    assert dict(caught.value.repairs[0].set) == {"kv_cache_dtype": "bfloat16"}


@pytest.mark.parametrize("pack_name", ["sglang", "vllm"])
def test_the_checkpoints_quantization_is_never_searched(pack_name: str) -> None:
    """The model's precision is a fact the search may not choose: left unset it is assumed (its
    chain, said so), never picked to make a flag work."""
    assert load_pack(pack_name).fields["checkpoint_quant"].search is False


def test_a_flag_for_a_quantized_checkpoint_does_not_make_the_checkpoint_quantized() -> None:
    """--quantization modelopt_fp4 with no checkpoint given: the answer assumes the checkpoint
    is not quantized (the first value of the fact, said in ASSUMED) and warns that the method
    loads pre-quantized weights, instead of assuming whichever quantized checkpoint makes the
    flag work (it assumed an FP8 checkpoint, 'the first value of the domain that works')."""
    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm100", "architecture": "Qwen3MoeForCausalLM"}
    for answer in (check, resolve):
        got = answer(pack, {"quantization": "modelopt_fp4"}, facts)
        assumed = {a.field: a.value for a in got.assumed}
        assert got.values["checkpoint_quant"] == "none" and assumed["checkpoint_quant"] == "none"
        assert "quant-offline-method-needs-checkpoint" in [w.rule for w in got.warnings]


def test_a2a_backend_sets_ep_size_to_tp_size_as_sglang_does() -> None:
    """ep_size is not searched, but SGLang's own FORCE (par-a2a-ep-equals-tp) sets it."""
    pack = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm90",
        "architecture": "DeepseekV3ForCausalLM",
        "checkpoint_quant": "fp8",
    }
    res = resolve(pack, {"tp_size": 8, "moe_a2a_backend": "deepep"}, facts)
    assert res.values["ep_size"] == 8 and res.values["tp_size"] == 8


# --- nothing assumed silently; model paths as users give them --------------------------------------


def test_assumed_lists_exactly_the_facts_nobody_gave() -> None:
    pack = load_pack("sglang")
    res = resolve(pack, {}, {"platform": "cpu", "architecture": "LlamaForCausalLM"})
    assumed = {a.field: a.value for a in res.assumed}
    assert assumed["cpu_has_amx"] is True  # intel_amx rests on it: said, not silent
    given = {"platform", "architecture"}
    facts_by_kind = {
        n
        for n, p in res.provenance.items()
        if pack.fields[n].kind == "fact" and p.kind in ("preference", "default")
    }
    assert set(assumed) == facts_by_kind and not (set(assumed) & given)


GROUPED_PACK = """
[pack]
name = "p"
version = "1"
[pack.assumed_groups.shape]
reason = "shape unknown without a config"
then = "no split check applies"
members = { "width-unknown" = "the width", "heads-unknown" = "the heads" }
[field.heads]
kind = "fact"
domain = [0, 8]
[field.width]
kind = "fact"
domain = [0, 32, 64]
[field.tp]
kind = "option"
domain = [1, 2]
[[preference]]
id = "heads-unknown"
field = "heads"
prefer = [0]
because = "heads unknown"
source = "x"
[[preference]]
id = "width-unknown"
field = "width"
prefer = [0, 64]
because = "width unknown"
source = "x"
[[rule]]
id = "wide-split"
forbid = "width == 0 and tp == 2"
because = "a split needs a known width"
source = "x"
"""


@pytest.mark.parametrize(
    ("launch", "name", "silent"),
    [
        # (Not DeepSeek for vLLM: its architecture decides every trait its config does not say.)
        (["--", "vllm", "serve", "MODEL", "-tp", "8"], "gemma-3-27b-it", "is_hybrid=false"),
        (
            ["--", "python", "-m", "sglang.launch_server", "--model-path", "MODEL", "--tp", "8"],
            "deepseek-v3-fp8",
            "moe_experts_fp4=false",
        ),
    ],
)
def test_a_model_fact_its_read_config_does_not_say_is_not_called_unread(
    capsys: pytest.CaptureFixture[str], launch: list[str], name: str, silent: str
) -> None:
    """The model group's own reason tells the user to give the config.json; when it was given and
    read, the facts it does not say are assumed as such, not as "not read"."""
    model = str(Path(__file__).parent / "fixtures" / "models" / name)
    pack = ["--pack", "vllm"] if launch[1] == "vllm" else []
    words = [model if w == "MODEL" else w for w in launch]
    code, out, _ = run(capsys, "check", *pack, "--set", "platform=cuda", "--set", "gpu_arch=sm90", *words)
    assert code == 0
    [line] = [line for line in out.splitlines() if silent in line]
    assert line.startswith("  the model's config.json (read) does not say:"), line
    assert "not read" not in out.split("ASSUMED", 1)[1].replace("not given, not read,", "")


def test_a_cpu_without_amx_information_is_assumed_loudly(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #13's second example: `intel_amx` rests on an assumed AMX Xeon, and the text says so
    above the table, with how to say otherwise; saying otherwise gives torch_native."""
    argv = ["--set", "platform=cpu", "--set", "architecture=LlamaForCausalLM"]
    code, out, _ = run(capsys, "resolve", *argv)
    notice, table = out.split("\n\n", 1)
    assert code == 0 and "intel_amx" in table
    assert "  cpu_has_amx=true: SGLang's CPU target is Xeon with AMX; set --set cpu_has_amx=false" in notice
    code, out, _ = run(capsys, "check", *argv, "--set", "cpu_has_amx=false", "--json")
    doc = json.loads(out)
    assert doc["values"]["attention_backend"] == "torch_native"
    assert "cpu_has_amx" not in {a["field"] for a in doc["assumed"]}


def test_assumed_facts_that_share_a_pack_reason_are_one_line(tmp_path: Path) -> None:
    """The ASSUMED notice names facts one pack group covers on one line, in the group's order;
    JSON `assumed` still has one entry per fact."""
    from solver.render.text import assumed_notice

    (tmp_path / "pack.toml").write_text(GROUPED_PACK)
    pack = load_pack(str(tmp_path))
    res = resolve(pack, {}, {})
    assert [a.field for a in res.assumed] == ["heads", "width"]
    assert assumed_notice(pack, res)[1:] == [
        "  shape unknown without a config: the width, the heads — no split check applies"
    ]


def test_a_fact_its_group_preference_did_not_fill_first_keeps_its_own_line(tmp_path: Path) -> None:
    """tp=2 rules out width=0: the preference falls back to its next value, 64, which the
    group's reason ("unknown") would misdescribe, so that fact keeps its own line and value."""
    from solver.render.text import assumed_notice

    (tmp_path / "pack.toml").write_text(GROUPED_PACK)
    pack = load_pack(str(tmp_path))
    res = resolve(pack, {"tp": 2}, {})
    assert {a.field: a.value for a in res.assumed} == {"heads": 0, "width": 64}
    notice = assumed_notice(pack, res)
    assert "  shape unknown without a config: the heads — no split check applies" in notice
    assert any(line.startswith("  width=64") for line in notice)


def test_an_assumed_group_naming_no_fact_preference_is_a_pack_error(tmp_path: Path) -> None:
    from solver.errors import PackError

    bad = GROUPED_PACK.replace('"heads-unknown" = "the heads"', '"heads-unknwn" = "the heads"')
    (tmp_path / "pack.toml").write_text(bad)
    with pytest.raises(PackError) as info:
        load_pack(str(tmp_path))
    assert "'heads-unknwn' is not a preference that fills a fact, nor a fact" in str(info.value)
    assert "heads-unknown" in str(info.value)  # did you mean


def test_a_fact_member_joins_its_group_line_with_its_value(tmp_path: Path) -> None:
    """A fact listed in a group by name joins its line, shown with its value, when only its
    domain's first value filled it; otherwise it keeps its own line."""
    from solver.render.text import assumed_notice

    extra = '\n[field.family]\nkind = "fact"\ndomain = ["plain", "sparse"]\n'
    text = GROUPED_PACK.replace(
        '"heads-unknown" = "the heads" }', '"heads-unknown" = "the heads", "family" = "family" }'
    )
    (tmp_path / "pack.toml").write_text(text + extra)
    pack = load_pack(str(tmp_path))
    res = resolve(pack, {}, {})
    assert {a.field: a.value for a in res.assumed} == {"heads": 0, "width": 0, "family": "plain"}
    assert assumed_notice(pack, res)[1:] == [
        "  shape unknown without a config: the width, the heads, family=plain — no split check applies"
    ]
    # Filled by the domain's order with another value (the first did not work): its own line.
    from solver.model import AssumedRecord

    other = dataclasses.replace(
        res,
        values={**res.values, "family": "sparse"},
        assumed=[
            *[a for a in res.assumed if a.field != "family"],
            AssumedRecord(field="family", value="sparse", because="b"),
        ],
    )
    notice = assumed_notice(pack, other)
    assert "  family=sparse: b" in notice and not any("family=" in line for line in notice if "shape" in line)


def test_notices_wrap_to_a_terminal_and_stay_whole_when_piped(tmp_path: Path) -> None:
    from solver.render.text import notices

    pack = load_pack("sglang")
    res = resolve(pack, {}, {"platform": "cuda", "gpu_arch": "sm90"})
    whole = notices(pack, res)
    wrapped = notices(pack, res, width=60)
    assert len(wrapped) > len(whole) and all(len(line) <= 60 or " " not in line.strip() for line in wrapped)
    assert " ".join(line.strip() for line in wrapped) == " ".join(line.strip() for line in whole)


@pytest.mark.parametrize("columns", [80, 60])
def test_the_resolution_table_fits_a_terminal(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    """On a terminal every line of the table fits its width (39 of 107 lines ran past 80 columns:
    a 44-letter environment variable, a 34-letter architecture and a preference id on one row);
    piped, each field keeps its one aligned row for grep and diff."""
    from solver.render import text

    pack = load_pack("sglang")
    facts = {"platform": "cuda", "gpu_arch": "sm100", "architecture": "Qwen3VLMoeForConditionalGeneration"}
    res = resolve(pack, {"attention_backend": "flashinfer"}, facts)
    piped = text.resolution_table(pack, res).splitlines()
    monkeypatch.setattr(text, "tty_width", lambda: columns)
    shown = text.resolution_table(pack, res).splitlines()
    assert max(len(line) for line in piped) > columns >= max(len(line) for line in shown)
    rows = [line for line in piped if line.startswith("  ") and line.split()[0] in pack.fields]
    assert len(rows) == len(pack.fields)
    # Nothing is lost: each piped row's words are on the terminal.
    for row in rows:
        assert all(word in " ".join(shown).split() for word in row.split())


def test_the_resolution_table_sizes_its_columns_per_group() -> None:
    """One long name widens only its own group: the 52-letter environment variable of SGLang
    0.5.23+27 pushed every piped row 8 columns right. Each group's name column is as wide as that
    group's longest name, and its value column as its longest value."""
    from solver.render import text
    from solver.values import show

    pack = load_pack("sglang")
    res = resolve(pack, {}, {"platform": "cuda", "gpu_arch": "sm90"})
    table = text.resolution_table(pack, res).split("\n\n")
    groups = [block.splitlines() for block in table if block.startswith("[")]
    assert len(groups) > 3
    for head, *rows in groups:
        names = [row.split()[0] for row in rows]
        values = [show(res.values[n]) for n in names]
        name_width, value_width = max(map(len, names)), max(map(len, values))
        for row, name, value in zip(rows, names, values, strict=True):
            assert row.startswith(f"  {name:<{name_width}}  {value:<{value_width}}  "), (head, row)


def test_the_sglang_assumed_notice_fits_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """A plain request assumes ~26 facts; the notice groups the model's shape, the installed
    packages and the environment, so it stays under ten lines and still names every one."""
    argv = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]
    code, out, _ = run(capsys, "resolve", *argv)
    notice = out.split("\n\n")[0].splitlines()[1:]
    assert code == 0 and notice[0].startswith("ASSUMED") and len(notice) <= 10
    shape = "  model shape unknown without --model-config: attention heads, KV heads"
    assert any(line.startswith(shape) for line in notice)
    assert any("has_flashinfer, has_deep_gemm, has_triton_kernels" in line for line in notice)
    code, out, _ = run(capsys, "resolve", *argv, "--json")
    assumed = [a["field"] for a in json.loads(out)["assumed"]]
    assert len(assumed) == len(set(assumed))
    assert {"attention_heads_pow2", "has_flashinfer", "num_gpus"} <= set(assumed)


def test_env_from_os_reads_unset_variables_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --env-from-os the environment was looked at: a variable that is not set is known to be
    unset (its default), not assumed, and the notice no longer asks for --env-from-os."""
    pack = load_pack("sglang")
    for name, field in pack.fields.items():
        if field.env:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SGLANG_CUTLASS_MOE", "true")
    argv = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]
    code, out, _ = run(capsys, "resolve", "--env-from-os", *argv, "--json")
    doc = json.loads(out)
    assert code == 0 and not [a for a in doc["assumed"] if pack.fields[a["field"]].env]
    assert doc["values"]["SGLANG_CUTLASS_MOE"] == "1" and doc["values"]["SGLANG_USE_AITER"] == "0"
    assert doc["provenance"]["SGLANG_USE_AITER"]["source"] == "env"
    code, out, _ = run(capsys, "resolve", "--env-from-os", *argv)
    assert "--env-from-os" not in out
    code, out, _ = run(capsys, "resolve", *argv)  # not read: assumed, and the notice says how to read
    assert "(pass --env-from-os to read them)" in out


def _example_launcher() -> Any:
    """examples/launch.py as a module (it is a script, not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "launch_example", Path(__file__).parent.parent / "examples" / "launch.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def test_the_example_launcher_tells_what_it_assumed_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """examples/launch.py prints the command on stdout and, on stderr, the facts it assumed
    (here the checkpoint's quantization: --architecture alone says nothing about it)."""
    example = _example_launcher()
    facts = ["--platform", "cuda", "--gpu-arch", "sm90", "--architecture", "LlamaForCausalLM"]
    assert example.main(["--model-path", "m", *facts]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("python -m sglang.launch_server") and "ASSUMED" not in out
    assert "ASSUMED" in err and "checkpoint_quant=none" in err


def test_a_hub_id_reads_the_local_cache_and_never_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from solver.inputs.modelconfig import facts_from_model_config

    repo = tmp_path / "hub" / "models--deepseek-ai--DeepSeek-V3"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123\n")
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "kv_lora_rank": 512,
                "quantization_config": {"quant_method": "fp8"},
            }
        )
    )
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    facts = facts_from_model_config(load_pack("sglang"), "deepseek-ai/DeepSeek-V3")
    assert facts["architecture"].value == "DeepseekV3ForCausalLM"
    assert facts["checkpoint_quant"].value == "fp8"
    with pytest.raises(InvalidInput) as info:
        facts_from_model_config(load_pack("sglang"), "nobody/not-there")
    assert str(tmp_path / "hub" / "models--nobody--not-there") in str(info.value)


def test_the_example_launcher_refuses_a_model_it_cannot_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue #13's first example: a hub id with no readable config.json is an error, not an MHA
    kernel guessed for an MLA model."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    example = _example_launcher()
    code = example.main(
        ["--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "8", "--platform", "cuda", "--gpu-arch", "sm100"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "not in the local cache" in err
    assert "--model-path deepseek-ai/DeepSeek-V3:" in err and "--model-config" not in err


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["python", "-m", "sglang.launch_server", "--model-path", "{dir}"], "--model-path {dir}:"),
        (["python", "-m", "sglang.launch_server", "--model", "{dir}"], "--model {dir}:"),
        (["sglang", "serve", "{dir}"], "the launch command's model {dir}:"),
    ],
)
def test_a_model_path_error_names_the_flag_the_user_typed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str], said: str
) -> None:
    """An unreadable model of a launch command is named as the user gave it, never as
    --model-config (a flag they did not type)."""
    empty = tmp_path / "model"
    empty.mkdir()
    words = [w.format(dir=empty) for w in command]
    code, _, err = run(capsys, "check", "--", *words)
    assert code == 2
    assert said.format(dir=empty) in err and "--model-config" not in err
    assert "has no config.json" in err


def test_require_names_the_missing_fact_and_how_to_give_it() -> None:
    from solver.launcher import resolve_namespace

    pack = load_pack("sglang")
    with pytest.raises(InvalidInput) as info:
        resolve_namespace({"platform": "cuda", "gpu_arch": "sm90"}, pack, require=("architecture",))
    [issue] = info.value.issues
    assert issue.field == "architecture" and "--architecture" in issue.message


@pytest.mark.parametrize(
    ("facts", "options"),
    [({"architecture": "DeepseekV3ForCausalLM"}, {"tp_size": 8}), ({}, {"dtype": "float16"})],
)
def test_a_missing_required_fact_offers_exactly_the_values_the_inputs_allow(
    facts: dict[str, Any], options: dict[str, Any]
) -> None:
    """The list is not the one the search's own pick of a platform left: with no platform given,
    a ROCm user was offered only CUDA architectures. It is exactly `valid_choices`' list for the
    same inputs (every value listed works with them, every value left out cannot)."""
    from solver import valid_choices

    pack = load_pack("sglang")
    with pytest.raises(InvalidInput) as info:
        resolve(pack, {**facts, **options})
    offered = {issue.field: list(issue.allowed) for issue in info.value.issues}
    assert set(offered) == {"platform", "gpu_arch"}
    assert {"gfx942", "gfx950", "none"} <= set(offered["gpu_arch"])
    choices = valid_choices(pack, options, facts, fields=list(offered), reasons=False)
    assert offered == {name: list(choices.possible[name]) for name in offered}


@pytest.mark.parametrize("facts", [{}, {"platform": "cuda"}])
def test_check_asks_for_the_gpu_before_it_blames_one_nobody_named(facts: dict[str, Any]) -> None:
    """A DeepSeek FP8 checkpoint (SGLang adopts fp8) with no GPU named: `check` said the command
    fails on gpu_arch=sm75 "(assumed: not given)", a T4 the search had picked, while the same
    command works on an H100. A launcher default that fails only because of a required fact the
    request leaves open is no conflict yet: the request must name the fact, as it must before an
    answer that works (Llama's check asks for both)."""
    pack = load_pack("sglang")
    given = {**facts, "architecture": "DeepseekV3ForCausalLM", "checkpoint_quant": "fp8"}
    with pytest.raises(InvalidInput) as info:
        check(pack, {"tp_size": 8}, given)
    asked = {issue.field for issue in info.value.issues}
    assert asked == {"gpu_arch"} | ({"platform"} if not facts else set())
    # Named, it answers: fails on the T4, works on the H100.
    with pytest.raises(Unsatisfiable):
        check(pack, {"tp_size": 8}, {**given, "platform": "cuda", "gpu_arch": "sm75"})
    assert (
        check(pack, {"tp_size": 8}, {**given, "platform": "cuda", "gpu_arch": "sm90"}).values["quantization"]
        == "fp8"
    )


# --- warnings that show -----------------------------------------------------------------------------


def test_deny_warnings_turns_a_warning_into_a_conflict(capsys: pytest.CaptureFixture[str]) -> None:
    facts = [
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=sm90",
        "--set",
        "architecture=LlamaForCausalLM",
        "--set",
        "attention_backend=aiter",
    ]
    because = load_pack("sglang").rule("aiter-attention-needs-aiter").because
    code, out, _ = run(capsys, "check", *facts)
    assert code == 0 and f"WARNING (aiter-attention-needs-aiter): {because}" in out  # in full
    code, out, _ = run(capsys, "check", *facts, "--deny-warnings")
    assert code == 1 and out.startswith("conflict (--deny-warnings): sglang takes the request as typed")
    assert f"WARNING (aiter-attention-needs-aiter): {because}" in out
    code, out, _ = run(capsys, "check", *facts, "--deny-warnings", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "conflict" and doc["conflict"]["rules"]
    pack = load_pack("sglang")
    with pytest.raises(Unsatisfiable):
        check(
            pack,
            {"attention_backend": "aiter"},
            {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"},
            deny_warnings=True,
        )


@pytest.mark.parametrize(
    ("facts", "runner"),
    [
        ({"platform": "cuda", "gpu_arch": "sm120"}, "flashinfer_trtllm"),
        ({"platform": "hip", "gpu_arch": "gfx942"}, "marlin"),
        ({"platform": "cuda", "gpu_arch": "sm90", "has_triton_kernels": False}, "triton_kernel"),
    ],
)
def test_the_draft_runners_warnings_need_a_draft_model(facts: dict[str, Any], runner: str) -> None:
    """SGLang copies the target's MoE runner into the draft's whatever the speculative algorithm,
    but without one no draft model loads, so its runner cannot fail: ce45aae warned "pick another
    --speculative-moe-runner-backend" to a user who never asked for speculative decoding (the
    target's own warning beside it stays)."""
    pack = load_pack("sglang")
    model = {**facts, "architecture": "Qwen3MoeForCausalLM"}

    def draft_warnings(options: dict[str, Any]) -> set[str]:
        got = check(pack, {"moe_runner_backend": runner, **options}, model)
        return {w.rule for w in got.warnings if w.rule.startswith("spec-moe-runner-")}

    assert draft_warnings({}) == set()
    assert draft_warnings({"speculative_algorithm": "EAGLE"})


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("H100", "sm90"),
        ("h200", "sm90"),
        ("A100", "sm80"),
        ("L40S", "sm89"),
        ("B200", "sm100"),
        ("B300", "sm103"),
        ("RTX PRO 6000", "sm120"),
        ("MI300X", "gfx942"),
        ("mi355x", "gfx950"),
        ("9.0", "sm90"),
        ("12.1", "sm121"),
        ("T4", "sm75"),
        ("7.5", "sm75"),
    ],
)
def test_gpu_names_and_compute_capabilities_are_gpu_arch_values(typed: str, meant: str) -> None:
    pack = load_pack("sglang")
    platform = "hip" if meant.startswith("gfx") else "cuda"
    res = resolve(pack, {}, {"platform": platform, "gpu_arch": typed, "architecture": "LlamaForCausalLM"})
    assert res.values["gpu_arch"] == meant


def test_did_you_mean_searches_aliases(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "check",
        "--set",
        "platform=cuda",
        "--set",
        "gpu_arch=H10",
        "--set",
        "architecture=LlamaForCausalLM",
    )
    assert code == 2 and "'sm90'" in err and "'sm100'" not in err.split("did you mean")[1][:20]


def test_did_you_mean_searches_labels(capsys: pytest.CaptureFixture[str]) -> None:
    """A word of a value's label (`Hopper`) is a did-you-mean, though not an alias."""
    code, _, err = run(capsys, "check", "--set", "platform=cuda", "--set", "gpu_arch=hoper")
    assert code == 2 and "'sm90'" in err.split("did you mean")[1][:40]


@pytest.mark.parametrize(
    ("typed", "offered"), [("H1", ["gpu_arch=H100"]), ("B3", ["gpu_arch=B300"]), ("sm9", ["gpu_arch=sm90"])]
)
def test_completion_completes_gpu_names(typed: str, offered: list[str]) -> None:
    from solver.cli.completion import complete

    assert complete(["check", "--set", "platform=cuda", "--set", f"gpu_arch={typed}"]) == offered


# --- warnings that show ------------------------------------------------------------------------

CUDA_LLAMA = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]


def test_choices_json_marks_warned_values_with_their_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "choices", "attention_backend", *CUDA_LLAMA, "--json")
    entry = json.loads(out)["choices"]["attention_backend"]
    assert code == 0
    assert entry["warned"]["wave"] == {"rules": ["wave-needs-rocm"]}
    assert set(entry["warned"]) <= set(entry["possible"])  # warned values still work
    assert "triton" not in entry["warned"] and "fa3" not in entry["warned"]


def test_choices_text_shows_warned_values_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    pack = load_pack("sglang")
    code, out, _ = run(capsys, "choices", "attention_backend", *CUDA_LLAMA)
    assert code == 0 and "wave ⚠" in out and "triton ⚠" not in out
    assert f"⚠ wave works, with a warning (wave-needs-rocm: {pack.rule('wave-needs-rocm').because})" in out


def test_matrix_marks_a_working_pair_that_a_warn_rule_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "matrix", "attention_backend", "platform", "--set", "architecture=LlamaForCausalLM", "--json"
    )
    cells = {(c["row"], c["column"]): c for c in json.loads(out)["cells"]}
    assert code == 0
    assert cells[("wave", "cuda")]["ok"] and cells[("wave", "cuda")]["warned"] == {
        "rules": ["wave-needs-rocm"]
    }
    assert "warned" not in cells[("triton", "cuda")]
    code, text, _ = run(
        capsys, "matrix", "attention_backend", "platform", "--set", "architecture=LlamaForCausalLM"
    )
    assert "⚠ [" in text and "works, with a warning: wave-needs-rocm" in text


def test_choices_and_matrix_mark_the_issues_own_warning(capsys: pytest.CaptureFixture[str]) -> None:
    """Warn rules that read a fact the rules derive (has_aiter from the platform, is_mla and
    is_dsa from the architecture) flag values in choices and matrix too, as `check` warns."""
    code, out, _ = run(capsys, "choices", "attention_backend", *CUDA_LLAMA, "--json")
    warned = json.loads(out)["choices"]["attention_backend"]["warned"]
    assert warned["aiter"] == {"rules": ["aiter-attention-needs-aiter"]}
    assert warned["flashmla"] == {"rules": ["mla-backends-need-mla-model"]}
    assert warned["dsa"] == {"rules": ["dsa-needs-dsa-model"]}
    code, out, _ = run(capsys, "matrix", "attention_backend", "kv_cache_dtype", *CUDA_LLAMA, "--json")
    cells = {(c["row"], c["column"]): c for c in json.loads(out)["cells"]}
    assert code == 0 and cells[("aiter", "auto")]["warned"] == {"rules": ["aiter-attention-needs-aiter"]}


def test_matrix_warns_on_a_fact_a_wide_rule_derives(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's arch-dense (`not is_moe and not is_hybrid and ...`) makes a Llama dense, and a
    `--moe-backend` then warns (moe-backend-needs-moe), as `check` says; propagation leaves a rule
    with two open fields open, so the matrix read `is_moe` as open and flagged no cell (failed
    on bda0cd8). So does choices, once `is_moe` is no longer pinned as assumed there."""
    facts = ["--pack", "vllm", "--set", "platform=cuda", "--set", "gpu_arch=sm90"]
    facts += ["--set", "architecture=LlamaForCausalLM"]
    code, out, _ = run(capsys, "matrix", "moe_backend", "enable_expert_parallel", *facts, "--json")
    cells = {(c["row"], c["column"]): c for c in json.loads(out)["cells"]}
    assert code == 0 and cells[("triton", False)]["warned"] == {"rules": ["moe-backend-needs-moe"]}
    code, out, _ = run(capsys, "choices", "moe_backend", *facts, "--json")
    assert json.loads(out)["choices"]["moe_backend"]["warned"]["triton"] == {
        "rules": ["moe-backend-needs-moe"]
    }
    code, out, _ = run(capsys, "check", *facts, "--set", "moe_backend=triton", "--json")
    assert "moe-backend-needs-moe" in [w["rule"] for w in json.loads(out)["warnings"]]


def test_the_configurator_page_flags_aiter_on_cuda() -> None:
    from solver.serve.api import Configurator

    page = Configurator(load_pack("sglang"))
    try:
        facts = (("architecture", "LlamaForCausalLM"), ("gpu_arch", "sm90"), ("platform", "cuda"))
        warned = page._choices(facts)["attention_backend"]["warned"]
    finally:
        page.close()
    assert warned["aiter"]["rule"] == "aiter-attention-needs-aiter"


@pytest.mark.parametrize(
    "facts",
    [
        {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"},
        {
            "platform": "cuda",
            "gpu_arch": "sm100",
            "architecture": "DeepseekV3ForCausalLM",
            "checkpoint_quant": "fp8",
        },
        {"platform": "hip", "gpu_arch": "gfx942", "architecture": "LlamaForCausalLM"},
        {"platform": "cpu", "gpu_arch": "none", "architecture": "Qwen3MoeForCausalLM"},
    ],
    ids=["llama-h100", "dsv3-b200", "llama-mi300x", "qwen3moe-cpu"],
)
def test_a_value_choices_warns_about_gets_that_warning_from_check(facts: dict[str, str]) -> None:
    """Law: every rule choices gives for a warned value is among the warnings `check` prints for
    the request with that value typed (check may add warnings from the flags it then decides)."""
    from solver import valid_choices

    pack = load_pack("sglang")
    fields = ["attention_backend", "moe_runner_backend", "kv_cache_dtype"]
    found = valid_choices(pack, {}, facts, fields=fields)
    seen = 0
    for name in fields:
        for value, rules in found.warned[name].items():
            try:
                said = {w.rule for w in check(pack, {name: value}, facts).warnings}
            except Unsatisfiable:
                continue  # the launcher's own chain fails with it: check refuses it outright
            assert set(rules) <= said, (name, value, rules, said)
            seen += 1
    assert seen >= 3


def test_completion_lists_warned_values_after_the_clean_ones() -> None:
    from solver.cli.completion import complete

    offered = [w.split("=", 1)[1] for w in complete(["check", *CUDA_LLAMA, "--set", "attention_backend="])]
    assert "wave" in offered and "triton" in offered
    assert offered.index("auto") < offered.index("wave")
    assert max(offered.index(v) for v in ("triton", "fa3", "flashinfer")) < offered.index("wave")


# --- model facts nobody gave: assumed, never searched ------------------------------------------


def test_vllm_model_facts_nobody_gave_are_assumed_not_searched() -> None:
    """Qwen2.5-7B's 28 heads (the pack's assumption when no config is read) do not split over
    16 ranks: both commands refuse, naming the assumed fact, instead of picking a head count that
    divides; the first repair changes the user's flag, not the model."""
    pack = load_pack("vllm")
    facts = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "Qwen2ForCausalLM", "num_gpus": 16}
    for answer in (check, resolve):
        with pytest.raises(Unsatisfiable) as info:
            answer(pack, {"tensor_parallel_size": 16}, facts)
        assert info.value.launcher_default is not None
        assert info.value.launcher_default["field"] == "num_attention_heads"
        pins = {(p.field, p.value, p.source) for p in info.value.conflict.pins}
        assert ("num_attention_heads", 28, "assumed") in pins
        assert "num_attention_heads" not in info.value.repairs[0].set
    given = resolve(pack, {"tensor_parallel_size": 16}, {**facts, "num_attention_heads": 32})
    assert given.values["num_attention_heads"] == 32
    fits = check(pack, {"tensor_parallel_size": 4}, facts)
    assert {a.field: a.value for a in fits.assumed}["num_attention_heads"] == 28


def test_a_model_no_flag_can_serve_here_gets_the_facts_that_would_as_repairs() -> None:
    """DeepSeek-V3.2 on an A100 with expert parallelism: no flag helps (no sparse-MLA kernel for
    SM80), so the repairs are facts to change, each verified: another GPU first. Unset, the
    searched architecture fails (the MoE trait it then needs is assumed, not read off the flag),
    which hid every repair: 'No change of the given inputs makes this request solvable'."""
    pack = load_pack("vllm")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm80",
        "num_gpus": 8,
        "checkpoint_quant": "fp8",
        "architecture": "DeepseekV32ForCausalLM",
    }
    with pytest.raises(Unsatisfiable) as info:
        resolve(pack, {"enable_expert_parallel": True}, facts)
    offered = [r.set for r in info.value.repairs]
    assert offered and offered[0] == {"gpu_arch": "sm90"}
    for repair in info.value.repairs:
        assert resolve(pack, {"enable_expert_parallel": True}, {**facts, **repair.set}).values


# --- a fact is never chosen to make a flag work ------------------------------------------------

# The device is asked for when nothing decides it (required); every other fact is assumed at its
# chain's value, never searched: a search picked the model's architecture, its MLA trait, the GPU
# count or the installed kernels to make a kernel flag work ("the first value that works").
_SEARCHED_FACTS = {"platform", "gpu_arch"}


@pytest.mark.parametrize("pack_name", ["sglang", "vllm"])
def test_no_fact_but_the_device_is_searched(pack_name: str) -> None:
    pack = load_pack(pack_name)
    searched = {n for n in pack.facts if pack.fields[n].search}
    assert searched == _SEARCHED_FACTS
    assert all(pack.fields[n].required for n in searched)


@pytest.mark.parametrize(
    ("flag", "fact", "assumed", "warned"),
    [
        # it assumed architecture=DeepseekV4ForCausalLM, "the first value of the domain that works"
        ("dsv4", "architecture", "other", "dsv4-needs-deepseek-v4"),
        # it assumed is_mla=true
        ("flashmla", "is_mla", False, "mla-backends-need-mla-model"),
    ],
)
def test_a_kernel_flag_never_decides_the_model(flag: str, fact: str, assumed: Any, warned: str) -> None:
    """With no model given, an attention backend made for one kind of model is answered for the
    model the pack assumes (said in ASSUMED), with SGLang's own warning for it, instead of a
    model picked to fit the flag."""
    pack = load_pack("sglang")
    for answer in (check, resolve):
        got = answer(pack, {"attention_backend": flag}, {"platform": "cuda", "gpu_arch": "sm100"})
        assert {a.field: a.value for a in got.assumed}[fact] == assumed
        assert warned in [w.rule for w in got.warnings]


def test_a_fact_the_flags_narrowed_is_still_said_assumed() -> None:
    """--moe-runner-backend cutlass with --quantization modelopt_fp4 holds only for a dense model
    (SGLang refuses the pair for MoE layers). With no model given the answer holds for the
    assumed dense model and says so; is_moe was shown as decided by the rule, read off the
    user's flags, and left out of ASSUMED."""
    pack = load_pack("sglang")
    flags = {"moe_runner_backend": "cutlass", "quantization": "modelopt_fp4"}
    got = resolve(pack, flags, {"platform": "cuda", "gpu_arch": "sm100"})
    assert {a.field: a.value for a in got.assumed}["is_moe"] is False
    assert got.provenance["is_moe"].kind != "rule"


@pytest.mark.parametrize("pack_name", ["vllm", "sglang"])
@pytest.mark.parametrize(
    "model", ["deepseek-v3-fp8", "llama-3.1-8b-instruct", "qwen3-next-80b-a3b", "gpt-oss-120b"]
)
def test_a_fact_the_model_decides_is_not_said_assumed(pack_name: str, model: str) -> None:
    """Law: every fact under ASSUMED is a real assumption: another value of it holds with the
    facts given (the model's config, the device), whatever the flags. vLLM said DeepSeek's
    `is_hybrid=false` and Llama's `has_sinks=false` ASSUMED ("the first value of its domain"),
    though the architecture's rule over seven traits (arch-deepseek-is-mla, arch-dense) decides
    them: propagation does not narrow through it, so the fact's chain decided it first (failed
    on bda0cd8)."""
    from solver.inputs.modelconfig import facts_from_model_config
    from solver.reasoning.plan import plan_for

    pack = load_pack(pack_name)
    cp = plan_for(pack).compiled
    path = Path(__file__).parent / "fixtures" / "models" / model
    facts = {n: p.value for n, p in facts_from_model_config(pack, path).items()}
    facts.update(platform="cuda", gpu_arch="sm90")
    for predict in (False, True):
        got = resolve(pack, {}, facts, predict=predict)
        for record in got.assumed:
            others = [v for v in pack.fields[record.field].domain if v != record.value]
            held = [v for v in others if cp.satisfiable({**facts, record.field: v}, task="law") is not None]
            assert held, (record.field, record.value, got.provenance[record.field])


def _random_requests(pack: Any, seed: int, count: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """`count` requests of one to three typed options on a device drawn from the pack's own
    platform / architecture pairs (seeded)."""
    import random

    rng = random.Random(seed)
    archs = {"cuda": ["sm80", "sm89", "sm90", "sm100", "sm120"], "hip": ["gfx942", "gfx950"]}
    options = [n for n in pack.options if len(pack.fields[n].domain) > 1]
    out = []
    for _ in range(count):
        platform = rng.choice(sorted(archs))
        facts = {"platform": platform, "gpu_arch": rng.choice(archs[platform])}
        flags = {n: rng.choice(pack.fields[n].domain) for n in rng.sample(options, rng.randint(1, 3))}
        out.append((flags, facts))
    return out


@pytest.mark.parametrize("pack_name", ["sglang", "vllm"])
def test_a_fact_not_said_assumed_follows_from_the_facts(pack_name: str) -> None:
    """Law: every fact nobody gave is either under ASSUMED or follows from the facts alone (given
    and assumed): no other value of it holds with them, whatever the flags. A fact the flags
    decided and the answer did not name as assumed would be a silent assumption."""
    from solver.reasoning.plan import plan_for

    pack = load_pack(pack_name)
    cp = plan_for(pack).compiled
    checked = 0
    for flags, facts in _random_requests(pack, seed=1313, count=60):
        try:
            got = resolve(pack, flags, facts)
        except Unsatisfiable:
            continue
        assumed = {a.field for a in got.assumed}
        known = {n: got.values[n] for n in pack.facts if n in facts or n in assumed}
        for name in pack.facts:
            if name in known:
                continue
            others = [v for v in pack.fields[name].domain if v != got.values[name]]
            for value in others:
                held = cp.satisfiable({**known, name: value}, task="law")
                assert held is None, (flags, facts, name, got.values[name], value)
            checked += 1
    assert checked > 50  # the law was exercised, not skipped


# --- the README walk-through is what the CLI prints ------------------------------------------------

README = Path(__file__).parent.parent / "README.md"


def _walk_through() -> list[tuple[str, list[str]]]:
    """The `$ command` / output pairs of the README's console blocks in "Two questions, two
    commands" (continuation lines joined)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Two questions, two commands")
    section = text[start : text.index("\n## ", start + 1)]
    pairs: list[tuple[str, list[str]]] = []
    for block in section.split("```console\n")[1:]:
        lines = block.split("```", 1)[0].splitlines()
        while lines:
            command = lines.pop(0)[2:]
            while command.endswith("\\"):
                command = command[:-1] + " " + lines.pop(0).strip()
            said = []
            while lines and not lines[0].startswith("$ "):
                said.append(lines.pop(0))
            pairs.append((command, said))
    return pairs


def test_the_walk_through_has_its_commands() -> None:
    commands = [c for c, _ in _walk_through()]
    assert len(commands) >= 10 and any("--deny-warnings" in c for c in commands)


@pytest.mark.parametrize(("command", "said"), _walk_through(), ids=lambda x: x if isinstance(x, str) else "")
def test_the_walk_through_shows_what_the_cli_prints(
    command: str,
    said: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Each README line is a line the command prints, in order; `...` stands for text left out."""
    import re
    import shlex

    words = shlex.split(command)
    monkeypatch.setenv("COLUMNS", "80")  # the README shows `check` at 80 columns
    if words[0] == "confsolve":
        _, out, err = run(capsys, *words[1:])
    else:  # python examples/launch.py ...
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
        _example_launcher().main(words[2:])
        out, err = capsys.readouterr()
    printed = (out + err).splitlines()
    at = 0
    for line in said:
        pattern = re.compile(".*?".join(re.escape(part) for part in line.split("...")) + "$")
        while at < len(printed) and not pattern.match(printed[at]):
            at += 1
        assert at < len(printed), (line, out + err)
        at += 1


# --- choices list what resolve takes, for the facts it assumes ----------------------------------


@pytest.mark.parametrize(
    ("pack_name", "facts"),
    [
        ("vllm", {"platform": "cuda", "gpu_arch": "sm90"}),
        ("sglang", {"platform": "hip", "gpu_arch": "gfx942"}),
        ("sglang", {"platform": "cuda", "gpu_arch": "sm100", "architecture": "DeepseekV3ForCausalLM"}),
    ],
)
def test_choices_never_offer_a_value_resolve_refuses_for_an_assumed_fact(
    pack_name: str, facts: dict[str, str]
) -> None:
    """With no model given, `choices` offered vLLM's FLASHMLA (possible for an MLA model), and
    `resolve --set attention_backend=FLASHMLA` then refused it for the head size it assumed. Now
    the choices take the facts as the resolution assumes them: every value listed works once
    the user types the other flags of a configuration that has it (a resource left at its
    default, say), with the facts nobody gave left to resolve's assumptions."""
    from solver.reasoning.assumedchoices import choices_as_resolved
    from solver.reasoning.plan import plan_for

    pack = load_pack(pack_name)
    found, resolution = choices_as_resolved(pack, {}, facts, reasons=False)
    assert resolution is not None and found.assumed == resolution.assumed
    plan = plan_for(pack)
    compiled = plan.compiled
    assumed = {a.field: a.value for a in found.assumed}
    refused_for_a_fact = []
    for name, values in found.possible.items():
        for value in values:
            # A configuration with the value and the assumed facts. The value, and the options
            # resolve never searches (resources, precision) where it departs from their
            # defaults, typed: that must resolve with the facts left to resolve's assumptions.
            witness = compiled.satisfiable({**facts, **assumed, name: value})
            assert witness is not None, (name, value)
            typed = {name: value}
            for f, spec in pack.fields.items():
                if spec.kind == "option" and not spec.search and witness[f] != plan.chain(f, witness)[0][0]:
                    typed[f] = witness[f]
            try:
                resolve(pack, typed, facts, reasons=False)
            except Unsatisfiable:
                refused_for_a_fact.append((name, value))
    assert refused_for_a_fact == []


def test_a_fact_s_choices_are_not_narrowed_by_what_resolve_assumes_without_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Setting a fact makes resolve assume the others anew: with no model given vLLM assumes
    `is_moe=false`, yet `resolve --set architecture=MixtralForCausalLM` resolves (Mixtral makes
    it a MoE model). `choices architecture` refused Mixtral for `is_moe=false (assumed)`; every
    value it lists for a fact must resolve, and the values resolve takes must be listed."""
    pack = load_pack("vllm")
    facts = {"platform": "cuda", "gpu_arch": "sm90"}
    argv = [f"--set={k}={v}" for k, v in facts.items()]
    resolve(pack, {}, {**facts, "architecture": "MixtralForCausalLM"}, reasons=False)  # resolves
    for name in ("architecture", "head_size"):
        code, out, _ = run(capsys, "choices", name, "--pack", "vllm", "--json", *argv)
        assert code == 0
        doc = json.loads(out)
        offered = doc["choices"][name]["possible"]
        for value in pack.fields[name].domain:
            try:
                resolve(pack, {}, {**facts, name: value}, reasons=False)
                resolves = True
            except Unsatisfiable:
                resolves = False
            assert (value in offered) == resolves, (name, value)


def test_choices_say_which_assumed_fact_excludes_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    """The MLA backends are excluded for the assumed head size, said so, with the ASSUMED lines
    that say how to give the model; `--json` lists the facts under `assumed`."""
    facts = ["--pack", "vllm", "--set", "platform=cuda", "--set", "gpu_arch=sm90"]
    code, out, _ = run(capsys, "choices", "attention_backend", *facts)
    assert code == 0
    offered = out.splitlines()[0]
    assert "FLASHMLA," not in offered and "FLASH_ATTN" in offered
    assert any(
        line.startswith("    not FLASHMLA:") and "head_size=128 (assumed)" in line
        for line in out.splitlines()
    )
    assert "ASSUMED" in out and "head_size=128" in out.split("ASSUMED", 1)[1]
    code, out, _ = run(capsys, "choices", "attention_backend", "--json", *facts)
    doc = json.loads(out)
    assert {"field": "head_size", "value": 128} in [
        {k: a[k] for k in ("field", "value")} for a in doc["assumed"]
    ]
    assert "FLASHMLA" not in doc["choices"]["attention_backend"]["possible"]
    model = ["--set", "architecture=DeepseekV3ForCausalLM"]
    given = run(capsys, "choices", "attention_backend", "--json", *facts, *model)[1]
    assert "FLASHMLA" in json.loads(given)["choices"]["attention_backend"]["possible"]


def test_an_environment_group_joins_the_environment_line(tmp_path: Path) -> None:
    """A fact standing for variables no `env` field holds (SGLang's a2a dispatch budgets) is told
    on the environment line when its pack group is named `environment`, not on a line of its own."""
    from solver.render.text import assumed_lines

    pack = load_pack("sglang")
    records = resolve(pack, {}, {"platform": "cuda", "gpu_arch": "sm90"}, reasons=False).assumed
    env_fact = next(a for a in records if pack.fields[a.field].env)
    budget = next(a for a in records if a.field == "num_gpus")
    groups = dict(pack.assumed_groups)
    spec = next(iter(groups.values()))
    groups["environment"] = spec.model_copy(update={"members": {"num_gpus": "NUM_GPUS_DEFAULT"}})
    lines = assumed_lines(pack.model_copy(update={"assumed_groups": groups}), [env_fact, budget])
    env_line = next(line for line in lines if line.startswith("  environment: "))
    assert "NUM_GPUS_DEFAULT" in env_line and f"{env_fact.field}=" in env_line
    assert not any("num_gpus" in line for line in lines)


def test_the_sglang_dispatch_budget_is_told_with_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang's MoRI / pplx / DeepEP v2 dispatch budgets are environment numbers no `env` field
    holds; the fact standing for them (a2a_dispatch_budget_raised, assumed false) is named on the
    environment line with the variables, not on a line of its own (pack group `environment`)."""
    argv = ["--set", "platform=hip", "--set", "gpu_arch=gfx942", "--set", "architecture=Qwen3MoeForCausalLM"]
    argv += ["--set", "moe_a2a_backend=mori", "--set", "tp_size=8", "--set", "dp_size=8"]
    code, out, _ = run(capsys, "check", *argv, "--set", "enable_dp_attention=true")
    lines = out.splitlines()
    env_line = next(line for line in lines if line.startswith("  environment: "))
    assert code == 0 and "a2a_dispatch_budget_raised=false" in env_line
    assert "SGLANG_USE_AITER=0" in env_line
    # --env-from-os reads the variables, not the fact standing for the budgets: it comes after
    assert env_line.index("(pass --env-from-os") < env_line.index("a2a_dispatch_budget_raised")
    assert not [line for line in lines if line.startswith("  a2a_dispatch_budget_raised")]


def test_every_repair_applied_to_what_the_user_typed_gives_its_values() -> None:
    """SGLang on MUSA, `--moe-a2a-backend deepep_v2 --ep-size 8`: the launcher sets --ep-size to
    --tp-size (1), and deepep_v2 fails anyway. The repairs were found on that adjusted request
    and written without --ep-size, so "leave --moe-a2a-backend on auto" then failed on the typed
    --ep-size 8 (tp 1). Each repair, applied to what the user typed, resolves to its values;
    one that needs the adjusted value says so (`set`)."""
    pack = load_pack("sglang")
    typed, facts = {"moe_a2a_backend": "deepep_v2", "ep_size": 8}, {"platform": "musa"}
    with pytest.raises(Unsatisfiable) as raised:
        resolve(pack, typed, facts)
    assert raised.value.repairs
    for repair in raised.value.repairs:
        options = {n: v for n, v in typed.items() if n not in repair.unset} | repair.set
        assert resolve(pack, options, facts, reasons=False).values == repair.values, repair
    assert raised.value.repairs[0].set.get("ep_size") == 1
