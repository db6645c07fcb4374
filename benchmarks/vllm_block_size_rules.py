"""Write constraints/vllm/block_size_user.toml: Qwen3-Next's alignment over a typed --block-size.

vLLM raises a typed --block-size below Qwen3-Next's per-GPU mamba state to the smallest multiple of
itself that holds it (`Platform._align_hybrid_block_size`). The pack says so with one adjustment
per typed size (an adjustment's replacement is one of a list, so the multiple of the typed size is
written out). Every answer comes from the thresholds of block_size.toml's
`block-size-qwen3-next-*-holds-mamba-state` rules, the one place the mamba state is measured: a
size below a KV class's threshold x is raised to x * ceil(threshold / x).

    python benchmarks/vllm_block_size_rules.py            # rewrite the file (the sizes it has)
    python benchmarks/vllm_block_size_rules.py --check    # exit 1 when the file is not what it writes
    python benchmarks/vllm_block_size_rules.py --sizes 48,80,112   # other sizes

Which backends take the typed size before the alignment (a pinned backend whose kernel blocks are
larger refuses it first: block_size.toml's [conditions]) follows from the size: off a multiple of
64, `BACKEND_REFUSES_OFF_64`; a multiple of 64 but not of 128, FA4's head-256 kernel and B12X; a
multiple of 128, B12X alone (it takes 64 and 128 only).
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
import tomllib
from math import ceil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "constraints" / "vllm"
OUT = PACK / "block_size_user.toml"
# The five sizes block_size.toml adjusts itself (per -tp group, with its own wording).
OWN = (16, 32, 64, 128, 256)
GROUPS = (
    ("tp1-2", "tensor_parallel_size in [1, 2]", "-tp 1 or 2"),
    ("tp4", "tensor_parallel_size == 4", "-tp 4"),
    ("tp8", "tensor_parallel_size == 8", "-tp 8"),
    ("tp16", "tensor_parallel_size == 16", "-tp 16"),
    # --dtype float32 over a typed KV-cache dtype: the state doubles (block_size.toml's QN_F32_STATE)
    ("tp1-2-f32", "(tensor_parallel_size in [1, 2] and QN_F32_STATE)", "-tp 1 or 2 in float32"),
    ("tp4-f32", "(tensor_parallel_size == 4 and QN_F32_STATE)", "-tp 4 in float32"),
    ("tp8-f32", "(tensor_parallel_size == 8 and QN_F32_STATE)", "-tp 8 in float32"),
    ("tp16-f32", "(tensor_parallel_size == 16 and QN_F32_STATE)", "-tp 16 in float32"),
)
# The largest --block-size of the pack's domain: an answer above it cannot be given (the holds rules
# then refuse the request).
LARGEST = 4096
SOURCE = (
    "vllm/platforms/interface.py::Platform._align_hybrid_block_size; "
    "vllm/v1/attention/backends/triton_attn.py::TritonAttentionBackend.customize_spec; "
    "vllm/model_executor/layers/quantization/turboquant/config.py::TurboQuantConfig.slot_size_aligned"
)
HEADER = (
    "Qwen3-Next's hybrid alignment over a user's --block-size other than 16, 32, 64, 128 and 256 (those"
    " five are in block_size.toml). vLLM raises a --block-size below the per-GPU mamba state to the"
    " smallest multiple of itself that holds it (Platform._align_hybrid_block_size: the kernel alignment"
    " is max(the backend's smallest kernel block, --block-size), times cdiv(mamba page, that many tokens'"
    " attention page)); a size that already holds it is kept. One rule per size, over every -tp group and"
    " KV-cache class whose state the size is below (the thresholds of block_size.toml's"
    " block-size-qwen3-next-*-holds-mamba-state rules); `adjust_to` lists each case's answer, smallest"
    " first, so the first one those rules allow is vLLM's. Generated from those thresholds by"
    " benchmarks/vllm_block_size_rules.py (--check: the file is what it writes) for the sizes users type"
    " besides the five ({sizes}): each rule costs every query and lint its share, so the other multiples"
    " of 16 are left to the holds rules, which refuse them below the state (KNOWN_DIFFERENCES, kind 9)."
)
THRESHOLD = re.compile(r"\(kv_cache_dtype (in \[[^\]]*\]|== '[^']*') and block_size >= (\d+)\)")

Thresholds = dict[str, list[tuple[list[str], int]]]


def thresholds(block_size_toml: Path) -> Thresholds:
    """Per -tp group, each KV class (its dtypes) and the tokens a block needs to hold the state."""
    rules = tomllib.loads(block_size_toml.read_text())["rule"]
    out: Thresholds = {}
    f32 = next(r for r in rules if r["id"] == "block-size-qwen3-next-f32-holds-mamba-state")["require"]
    for group, cond, _ in GROUPS:
        if group.endswith("-f32"):
            # the float32 rule holds every -tp: this group's part runs from its -tp to the next one
            start = f32.index(f"({cond.strip('()').removesuffix(' and QN_F32_STATE')} and (")
            end = f32.find("(tensor_parallel_size", start + 1)
            text = f32[start : end if end > 0 else len(f32)]
        else:
            rid = f"block-size-qwen3-next-{group}-holds-mamba-state"
            text = next(r for r in rules if r["id"] == rid)["require"]
        classes: list[tuple[list[str], int]] = []
        for match in THRESHOLD.finditer(text):
            spec = match.group(1)
            kvs = re.findall(r"'([^']*)'", spec)
            classes.append((kvs, int(match.group(2))))
        out[group] = classes
    return out


def backend_guard(size: int) -> str:
    """The `when` clause leaving out pinned backends that refuse the typed size before alignment."""
    if size % 64:
        return "not BACKEND_REFUSES_OFF_64"
    if size % 128:
        return "not (given(attention_backend) and (FA4_HD256_KERNEL or attention_backend == 'B12X'))"
    return "not (given(attention_backend) and attention_backend == 'B12X')"


def rule_for(size: int, thr: Thresholds) -> str | None:
    """The adjustment of a typed --block-size `size`, or None when it holds every state."""
    parts: list[str] = []
    targets: set[int] = set()
    plain: list[str] = []
    covered: dict[str, set[str]] = {}  # per -tp group, the KV-cache dtypes its 16-bit-model part forbids
    for group, cond, label in GROUPS:
        below = [(kvs, n) for kvs, n in thr[group] if size < n]
        if not below:
            continue
        targets.update(t for _, n in below if (t := size * ceil(n / size)) <= LARGEST)
        kvs_below = [k for kvs, _ in below for k in kvs]
        base = group.removesuffix("-f32")
        if base != group:  # a float32 part: only the KV-cache dtypes the group's own part leaves
            kvs_below = [k for k in kvs_below if k not in covered.get(base, set())]
            if not kvs_below:
                continue
            parts.append(f"({cond.strip('()')} and kv_cache_dtype in {kvs_below!r})")
        elif len(below) == len(thr[group]):
            parts.append(cond)
        else:
            parts.append(f"({cond} and kv_cache_dtype in {kvs_below!r})")
        covered.setdefault(base, set()).update(kvs_below)
        sixteen_bit_kvs, sixteen_bit = thr[group][0]
        if sixteen_bit_kvs == ["auto", "float16", "bfloat16"] and size < sixteen_bit:
            plain.append(f"{size * ceil(sixteen_bit / size)} at {label}")
    if not parts:
        return None
    said = (
        f" ({', '.join(plain)} with a 16-bit KV cache; more with a quantized one)"
        if plain
        else " with this quantized KV cache"
    )
    because = (
        f"Qwen3-Next's attention blocks must hold its per-GPU mamba state: vLLM raises --block-size {size} "
        f"to the smallest multiple of {size} that does{said}; choose a larger --block-size or leave it unset"
    )
    return (
        f'[[rule]]\nid = "block-size-qwen3-next-from-{size}"\n'
        f"when = \"architecture == 'Qwen3NextForCausalLM' and {backend_guard(size)}\"\n"
        f'forbid = "block_size == {size} and ({" or ".join(parts)})"\n'
        f'adjusts = "block_size"\nadjust_to = {sorted(targets)}\n'
        f'because = "{because}"\nsource = "{SOURCE}"\n'
    )


def render(sizes: list[int], thr: Thresholds) -> str:
    rules = [r for r in (rule_for(s, thr) for s in sizes) if r is not None]
    header = textwrap.fill(
        HEADER.format(sizes=", ".join(str(s) for s in sizes)), width=98, break_on_hyphens=False
    )
    return textwrap.indent(header, "# ") + "\n\n" + "\n".join(rules) + "\n"


def sizes_in(path: Path) -> list[int]:
    return [int(m) for m in re.findall(r'id = "block-size-qwen3-next-from-(\d+)"', path.read_text())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the file differs from what this writes")
    ap.add_argument("--sizes", help="comma-separated typed sizes (default: the sizes the file has)")
    args = ap.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(",")) if args.sizes else sizes_in(OUT)
    if any(s in OWN or s % 16 for s in sizes):
        ap.error(f"sizes must be multiples of 16 other than {OWN}")
    text = render(sizes, thresholds(PACK / "block_size.toml"))
    if args.check:
        same = OUT.read_text() == text
        print(f"{OUT.name}: {'as generated' if same else 'differs from the generator'}")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT.name}: {len(sizes)} sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
