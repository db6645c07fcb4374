"""A model's shape read where its config.json writes it: vLLM's `mla_deepseek_dims` (the four MLA
dimensions FlashInfer's and TokenSpeed's MLA kernels are built for) and the model-config table's
`every = true`, tests that hold together.

Before (main 7b8e94c) the fact was never read: every Llama, Qwen or Mixtral answer listed
`mla_deepseek_dims=true` under ASSUMED ("the model's config.json (read) does not say"), an
assumption about an MLA layer those models do not have, beside the ones that matter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver import PackError, load_pack, resolve
from solver.cli.commands import main
from solver.inputs.modelconfig import facts_from_model_config
from solver.pack.loader import load_directory

MODELS = Path(__file__).parent / "fixtures" / "models"
VLLM = load_pack("vllm")
MACHINE = ["--set", "platform=cuda", "--set", "gpu_arch=sm90"]
# The fixtures with DeepSeek's MLA (kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64,
# v_head_dim 128: their published config.json files); every other fixture has no MLA layer.
DEEPSEEK_SHAPED = {
    "deepseek-r1-modelopt-nvfp4",
    "deepseek-v2-lite-chat",
    "deepseek-v3-fp8",
    "deepseek-v3.2-fp8",
    "kimi-k2-instruct",
}


# phi-4 has 10 KV heads, no value of the vLLM pack's num_key_value_heads: its config is refused
# (an input error naming the key), on main too.
READ_BY_VLLM = sorted(p.name for p in MODELS.iterdir() if p.name != "phi-4")


@pytest.mark.parametrize("name", READ_BY_VLLM)
def test_the_vllm_pack_reads_the_mla_shape_from_every_fixture(name: str) -> None:
    pins = facts_from_model_config(VLLM, MODELS / name)
    assert pins["mla_deepseek_dims"].value is (name in DEEPSEEK_SHAPED)
    assert pins["mla_deepseek_dims"].source == "model-config"
    # What is read never contradicts the architecture rules (arch-deepseek-is-mla needs it true).
    res = resolve(VLLM, {}, {**pins, "platform": "cuda", "gpu_arch": "sm90"}, reasons=False)
    assert res.values["mla_deepseek_dims"] is (name in DEEPSEEK_SHAPED)


@pytest.mark.parametrize("command", ["check", "resolve"])
@pytest.mark.parametrize("name", ["llama-3.1-8b-instruct", "qwen3-8b", "mixtral-8x7b-instruct"])
def test_a_model_without_mla_is_not_assumed_to_have_deepseek_s_mla_shape(
    capsys: pytest.CaptureFixture[str], command: str, name: str
) -> None:
    argv = [command, "--pack", "vllm", "--model-config", str(MODELS / name), *MACHINE]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "mla_deepseek_dims" not in {a["field"] for a in doc["assumed"]}, doc["assumed"]
    assert doc["provenance"]["mla_deepseek_dims"]["source"] == "model-config"
    assert main(argv) == 0
    assert "mla_deepseek_dims" not in capsys.readouterr().out.split("\n\n", 1)[0]  # the notices


# --- `every = true`: the tests of an entry hold together ---------------------------------------

FIELDS = """
[field.shaped]
kind = "fact"
domain = [true, false]
"""


def _pack(root: Path, entry: str) -> Path:
    root.mkdir(parents=True)
    (root / "pack.toml").write_text('[pack]\nname = "m"\nversion = "1"\nfiles = ["fields.toml", "mc.toml"]\n')
    (root / "fields.toml").write_text(FIELDS)
    (root / "mc.toml").write_text("[model_config]\n[model_config.facts.shaped]\n" + entry)
    return root


EVERY = "equals = { a = [512], b = [64] }\nevery = true\notherwise = false\n"


@pytest.mark.parametrize(
    ("config", "read"),
    [
        ({"a": 512, "b": 64}, True),
        ({"a": 512, "b": 32}, False),  # one test fails
        ({"a": 512}, False),  # a key missing fails its test
        ({}, False),
    ],
)
def test_every_test_of_an_entry_must_hold(tmp_path: Path, config: dict[str, Any], read: bool) -> None:
    pack = load_directory(_pack(tmp_path / "pack", EVERY))
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert facts_from_model_config(pack, tmp_path / "config.json")["shaped"].value is read
    # Without `every`, one test holding is enough (as before).
    anyone = load_directory(_pack(tmp_path / "any", EVERY.replace("every = true\n", "")))
    assert facts_from_model_config(anyone, tmp_path / "config.json")["shaped"].value is (config != {})


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('equals = { a = [1] }\nevery = "yes"\n', "every: must be true or false"),
        ('present = ["a"]\nunless = { every = true }\n', "unless.every: needs tests"),
    ],
)
def test_a_misshapen_every_is_a_pack_error(tmp_path: Path, entry: str, says: str) -> None:
    with pytest.raises(PackError) as caught:
        load_directory(_pack(tmp_path / "pack", entry))
    assert says in str(caught.value), str(caught.value)
