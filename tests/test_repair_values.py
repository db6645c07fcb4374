"""A repair that changes a size the user typed names the working size nearest the typed one
(`solver.reasoning.diagnose.nearest_first`), not the first listed that fits.

SGLang's --max-running-requests and --cuda-graph-max-bs-decode list their sizes largest first
after 0 (not set); a user who typed 8 where at least 64 is needed was told to use the largest
size that fits (512 here, 2048 on a pack without an upper bound), and the speculative default
(48) came before a size nearer the typed 128. The rule: nearest the typed value first; of two
as near, the smaller (it asks less of the machine); the value that spells the flag left out
(0) is no size and comes last (dropping the flag is its own repair, "leave ... on auto").
Either search (`resolve`) or the launcher's own defaults (`check`) give the same order. A
repair is a suggestion: the answer itself never sets the size (the field is `search = false`).
"""

from __future__ import annotations

import pytest
from test_engine import write_pack

from solver import check, load_pack, resolve
from solver.errors import Unsatisfiable
from solver.model import Pack
from solver.pack.loader import load_directory

FIELDS = """
[field.gpu]
kind = "fact"
domain = ["small", "large"]

[field.max_requests]
kind = "option"
domain = [0, 2048, 1024, 512, 256, 128, 64, 48, 8]
open = { min = 0 }
absent = 0
search = false
"""

RULES = """
[[rule]]
id = "small-gpu-request-cap"
when = "gpu == 'small' and max_requests > 0"
require = "max_requests >= 64 and max_requests <= 512"
because = "on a small GPU the request cap must be between 64 and 512"
source = "q/docs"

[[rule]]
id = "large-gpu-request-band"
when = "gpu == 'large' and max_requests > 0"
require = "max_requests <= 256 or max_requests >= 512"
because = "on a large GPU a request cap between 256 and 512 splits the pool unevenly"
source = "q/docs"
"""


@pytest.fixture(scope="module")
def sizes_pack(tmp_path_factory: pytest.TempPathFactory) -> Pack:
    root = tmp_path_factory.mktemp("sizes")
    return load_directory(write_pack(root, {"fields.toml": FIELDS, "rules.toml": RULES}))


@pytest.mark.parametrize("ask", [resolve, check], ids=["resolve", "check"])
@pytest.mark.parametrize(
    ("gpu", "typed", "offered"),
    [
        # Below the sizes that fit: the smallest that fits first (a1e60f3: 512, 256, 128).
        ("small", 8, [64, 128, 256]),
        # Two as near (256 and 512 both 128 away): the smaller first (a1e60f3: 2048, 1024, 512).
        ("large", 384, [256, 512, 128]),
        # Above them all: the largest that fits, as before.
        ("small", 4000, [512, 256, 128]),
    ],
)
def test_a_typed_size_is_repaired_to_the_nearest_size_that_fits(
    sizes_pack: Pack, ask: object, gpu: str, typed: int, offered: list[int]
) -> None:
    with pytest.raises(Unsatisfiable) as info:
        ask(sizes_pack, {"max_requests": typed}, {"gpu": gpu})  # type: ignore[operator]
    repairs = info.value.repairs
    assert repairs is not None
    sizes = [r.set["max_requests"] for r in repairs if "max_requests" in r.set]
    assert sizes == offered, [(r.set, r.unset) for r in repairs]
    # Each verified: resolving with it keeps the size the repair names.
    for repair in repairs:
        if "max_requests" in repair.set:
            assert repair.values["max_requests"] == repair.set["max_requests"]
    # Dropping the flag is still offered, first (the fewest changes, nothing typed instead).
    assert repairs[0].unset == ["max_requests"] and not repairs[0].set
    assert f"use --max-requests {offered[0]}" in info.value.message


def test_sglang_eagle3_megamoe_request_cap_repair_is_the_nearest_size() -> None:
    """The DeepGEMM MegaMoE budget at 256 tokens per rank with EAGLE3 on Qwen3-MoE (4 draft
    tokens a request): a typed --max-running-requests 128 is over it; 64 fits (64 x 4 = 256) and
    is nearer 128 than SGLang's own speculative cap 48, which a1e60f3 named (the preferences'
    first). (tests/cases/sglang/r25-megamoe-verify-mrr-typed-conflict.toml's request.)"""
    sglang = load_pack("sglang")
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm100",
        "architecture": "Qwen3MoeForCausalLM",
        "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK": 256,
    }
    options = {
        "moe_a2a_backend": "megamoe",
        "disaggregation_mode": "decode",
        "speculative_algorithm": "EAGLE3",
        "max_running_requests": 128,
    }
    with pytest.raises(Unsatisfiable) as info:
        check(sglang, options, facts)
    sizes = [
        r.set["max_running_requests"] for r in info.value.repairs or () if "max_running_requests" in r.set
    ]
    assert sizes and sizes[0] == 64, sizes
    assert "use --max-running-requests 64" in info.value.message
    # Nothing else of the user's changes with it: the repair is the size alone.
    first = next(r for r in info.value.repairs or () if "max_running_requests" in r.set)
    assert set(first.set) == {"max_running_requests"} and not first.unset
    again = check(sglang, {**options, "max_running_requests": 64}, facts)
    assert again.values["max_running_requests"] == 64


def test_a_size_nobody_typed_keeps_the_preferences_order(sizes_pack: Pack) -> None:
    """Nearest applies to a value the user typed only: the order of other fields' values and of
    sizes nobody typed is the preferences' (here a fact the repair states is no option)."""
    from solver.model import Pin
    from solver.reasoning.diagnose import nearest_first

    ranked = [0, 2048, 1024, 512, 256, 128, 64, 48, 8]
    typed = Pin(field="max_requests", value=300, source="user")
    assert nearest_first(sizes_pack, typed, ranked) == [256, 128, 512, 64, 48, 8, 1024, 2048, 0]
    picked = Pin(field="max_requests", value=300, source="launcher-default")
    assert nearest_first(sizes_pack, picked, ranked) == ranked
    fact = Pin(field="gpu", value="small", source="fact")
    assert nearest_first(sizes_pack, fact, ["large", "small"]) == ["large", "small"]


def test_repairs_keep_the_typed_precision_before_changing_it() -> None:
    """FP8 weights with the CUTLASS MoE runner and --ep-size 8 on Hopper (SGLang refuses FP8
    CUTLASS MoE with expert parallelism; the rule says: drop --ep-size or change the runner).
    Of the repairs of one kind, those that keep the user's precision (an option the solver never
    picks whose values are not sizes, `changes_setup`) come first: the runner and the EP size
    before the weights. (On a1e60f3 the first repair was "leave --quantization on auto", no
    quantization, and "use --quantization bitsandbytes" came before any other runner.)"""
    sglang = load_pack("sglang")
    options = {"quantization": "fp8", "moe_runner_backend": "cutlass", "tp_size": 8, "ep_size": 8}
    facts = {"platform": "cuda", "architecture": "Qwen3MoeForCausalLM", "gpu_arch": "sm90"}
    with pytest.raises(Unsatisfiable) as info:
        resolve(sglang, options, facts)
    repairs = info.value.repairs or []
    changed = [set(r.set) | set(r.unset) for r in repairs]
    assert changed[0] == {"moe_runner_backend"} and repairs[0].unset, changed
    # Within each kind (dropping a flag, typing another value), the precision's repairs last.
    for kind in (
        [c for r, c in zip(repairs, changed, strict=True) if r.unset],
        [c for r, c in zip(repairs, changed, strict=True) if r.set],
    ):
        precision = [i for i, c in enumerate(kind) if "quantization" in c]
        others = [i for i, c in enumerate(kind) if "quantization" not in c]
        assert not precision or not others or max(others) < min(precision), changed
    assert all(r.set.get("quantization") in (None, "fp8") for r in repairs), changed
