"""CS115: a preference's bare `given(FIELD)` of a field an adjustment puts back on auto.

After such an adjustment a rule reads `given(FIELD)` as true (the request typed it) and a
preference as false (the launcher's chain then decides the field): `lint` says so, and a value
read (`given(FIELD) in [VALUES]`, the value as typed) is the explicit way to mean "typed".
"""

from __future__ import annotations

from pathlib import Path

from solver import Pack, load_pack, resolve
from solver.lint.static import acknowledge, static_checks

ROOT = Path(__file__).resolve().parent.parent

FIELDS = """
[field.ckpt]
kind = "fact"
domain = ["none", "fp8"]

[field.quant]
kind = "option"
domain = ["none", "fp8", "awq"]

[field.runner]
kind = "option"
domain = ["auto", "fast", "slow"]

[[preference]]
id = "quant-from-checkpoint"
field = "quant"
when = "ckpt == 'fp8'"
prefer = ["fp8"]
because = "the checkpoint's method: --quant fp8"
source = "launcher.py::load"

[[rule]]
id = "checkpoint-method-wins"
when = "ckpt == 'fp8'"
require = "quant == 'fp8'"
adjusts = "quant"
{adjust_to}
because = "the launcher loads the checkpoint with its own method; pass --quant fp8"
source = "launcher.py::load"

[[preference]]
id = "fast-when-typed"
field = "runner"
when = "{when}"
prefer = ["fast"]
because = "a typed --quant fp8 picks --runner fast"
source = "launcher.py::overrides"
"""


def _pack(tmp_path: Path, when: str, adjust_to: str = "") -> Pack:
    (tmp_path / "pack.toml").write_text(
        '[pack]\nname = "given115"\nversion = "1"\ndescription = "CS115"\nfiles = ["all.toml"]\n'
    )
    (tmp_path / "all.toml").write_text(FIELDS.format(when=when, adjust_to=adjust_to))
    return load_pack(str(tmp_path))


def _cs115(pack: Pack) -> list[list[str]]:
    return [f.ids for f in static_checks(pack) if f.code == "CS115"]


def test_a_bare_given_of_a_field_adjusted_to_auto_is_reported(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "quant == 'fp8' and given(quant)")
    assert _cs115(pack) == [["fast-when-typed", "checkpoint-method-wins"]]
    # Not a value read (the value as typed: one meaning everywhere), nor a bare given() of a field
    # whose adjustment sets a value (the pin is kept: given in rules and preferences alike).
    assert _cs115(_pack(tmp_path, "given(quant) in ['fp8']")) == []
    assert _cs115(_pack(tmp_path, "quant == 'fp8' and given(quant)", 'adjust_to = ["fp8"]')) == []


def test_what_the_finding_says_is_what_the_preference_does(tmp_path: Path) -> None:
    """--quant awq over an fp8 checkpoint: the adjustment drops the typed value, so the bare
    given() reads false and the preference does not apply (what CS115 says), while the value read
    (typed awq, not fp8) also does not; --quant fp8 typed: both apply."""
    for when in ("quant == 'fp8' and given(quant)", "given(quant) in ['fp8']"):
        pack = _pack(tmp_path, when)
        assert bool(_cs115(pack)) == ("quant ==" in when), when
        adjusted = resolve(pack, options={"quant": "awq"}, facts={"ckpt": "fp8"})
        assert adjusted.values["quant"] == "fp8" and adjusted.values["runner"] != "fast", when
        typed = resolve(pack, options={"quant": "fp8"}, facts={"ckpt": "fp8"})
        assert typed.values["runner"] == "fast", when


def test_the_shipped_packs_acknowledge_every_cs115_with_a_reason() -> None:
    for name in ("sglang", "vllm"):
        pack = load_pack(str(ROOT / "constraints" / name))
        found = [f for f in acknowledge(pack, static_checks(pack)) if f.code == "CS115"]
        assert all(f.acknowledged for f in found), [f.ids for f in found if not f.acknowledged]


def test_sglang_reads_the_typed_quantization_in_the_runner_preferences() -> None:
    """SGLang 0.5.23's Llama 4 and SM110 / SM12x NVFP4 overrides read --quantization as typed
    (ModelConfig replaces it only later, at load): the pack says so with a value read."""
    pack = load_pack(str(ROOT / "constraints" / "sglang"))
    whens = {p.id: p.when or "" for p in pack.preferences}
    assert "given(quantization) in" in whens["moe-llama4-sm100-trtllm"]
    assert "given(quantization) ==" in whens["moe-modelopt-fp4-sm120-flashinfer-cutlass"]
