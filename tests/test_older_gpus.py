"""T4 (sm75) and V100 (sm70) as SGLang 0.5.23 treats them, replayed from SGLang's own answers.

tests/fixtures/older_gpus/ holds 76 oracle records on those GPUs (README there). SGLang stops at
model load below compute capability 7.5, runs float16 on a T4 whatever --dtype says, and refuses
the quantization methods whose kernels need 8.0; the pack must agree on every record.
"""

from __future__ import annotations

from pathlib import Path

import differential
import pytest

from solver import check, load_pack
from solver.errors import Unsatisfiable

FIXTURE = Path(__file__).parent / "fixtures" / "older_gpus"


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> differential.Summary:
    return differential.run_fixture(load_pack("sglang"), FIXTURE, tmp_path_factory.mktemp("configs"))


def test_every_record_agrees_with_sglang(summary: differential.Summary) -> None:
    counts = {kind: total for kind, (_, total) in summary.by_class().items()}
    assert all(counts.values()) and sum(counts.values()) == 76, counts
    wrong = [(c.id, c.sglang, c.ours) for c in summary.cases if not c.agrees]
    assert not wrong
    assert differential.pct(*summary.fields) == 100.0


@pytest.mark.parametrize("typed", ["V100", "sm70", "7.0"])
def test_a_v100_is_refused_with_the_reason(typed: str) -> None:
    facts = {"platform": "cuda", "gpu_arch": typed, "architecture": "LlamaForCausalLM"}
    with pytest.raises(Unsatisfiable) as info:
        check(load_pack("sglang"), {}, facts)
    assert "cuda-needs-sm75" in {rule.id for rule in info.value.conflict.rules}


def test_a_t4_runs_float16_and_says_so() -> None:
    facts = {"platform": "cuda", "gpu_arch": "T4", "architecture": "LlamaForCausalLM"}
    answer = check(load_pack("sglang"), {}, facts)
    assert "pre-ampere-runs-float16" in {w.rule for w in answer.warnings}
    quiet = check(load_pack("sglang"), {"dtype": "float16"}, facts)
    assert "pre-ampere-runs-float16" not in {w.rule for w in quiet.warnings}


@pytest.mark.parametrize("method", ["fp8", "modelopt_fp4", "mxfp4", "compressed-tensors"])
def test_a_t4_refuses_methods_that_need_ampere(method: str) -> None:
    facts = {"platform": "cuda", "gpu_arch": "sm75", "architecture": "Qwen3MoeForCausalLM"}
    with pytest.raises(Unsatisfiable) as info:
        check(load_pack("sglang"), {}, {**facts, "checkpoint_quant": method})
    assert "quant-min-capability-80" in {rule.id for rule in info.value.conflict.rules}


def test_an_awq_checkpoint_on_a_t4_runs_plain_awq() -> None:
    facts = {
        "platform": "cuda",
        "gpu_arch": "sm75",
        "architecture": "LlamaForCausalLM",
        "checkpoint_quant": "awq",
    }
    assert check(load_pack("sglang"), {}, facts).values["quantization"] == "awq"
