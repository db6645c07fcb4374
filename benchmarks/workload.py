"""The fixed requests the benchmarks run: SGLang oracle scenarios and scenario case files.

The oracle file (tests/fixtures/oracle/, else /work/shared/reference/oracle/) holds what SGLang
0.5.23 resolved by itself; each scenario is mapped to our inputs the way its README says
(`sm: 90` -> `gpu_arch = "sm90"`, cpu -> `none`, `fp8_tensor` -> `fp8`, ...). Arguments the pack
has no field for are dropped. Which requests resolve and which conflict is decided by running them
once, so the sets follow the pack as it grows.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ORACLE_PATHS = (
    ROOT / "tests" / "fixtures" / "oracle" / "sglang-0.5.23.jsonl",
    Path("/work/shared/reference/oracle/sglang-0.5.23.jsonl"),
)
CASES = ROOT / "tests" / "cases"

_CHECKPOINT = {
    "fp8_tensor": "fp8",
    "w4afp8_mixed": "w4afp8",
    "compressed_tensors_fp8": "compressed-tensors",
    "compressed_tensors_w4a16": "compressed-tensors",
}


@dataclass(frozen=True)
class Request:
    id: str
    options: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    strict: bool = False


def oracle_file() -> Path | None:
    return next((p for p in ORACLE_PATHS if p.is_file()), None)


def _gpu_arch(scenario: dict[str, Any]) -> str:
    if "sm" in scenario:
        return f"sm{scenario['sm']}"
    if "gfx" in scenario:
        return str(scenario["gfx"])
    return "none"


def oracle_requests(pack: Any) -> Iterator[Request]:
    """Every oracle scenario as a request on `pack` (fields the pack lacks are skipped)."""
    path = oracle_file()
    if path is None:
        return
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        scenario = json.loads(line)["scenario"]
        facts: dict[str, Any] = {
            "platform": scenario["platform"],
            "gpu_arch": _gpu_arch(scenario),
            "architecture": scenario["architecture"],
        }
        quant = scenario.get("checkpoint_quant", "none")
        facts["checkpoint_quant"] = _CHECKPOINT.get(quant, quant)
        for name, value in {**scenario.get("env", {}), **scenario.get("facts", {})}.items():
            if name in pack.fields:
                facts[name] = value
        options = {k: v for k, v in scenario.get("args", {}).items() if k in pack.fields}
        facts = {k: v for k, v in facts.items() if k in pack.fields}
        yield Request(scenario["id"], options, facts)


def case_requests(pack_name: str = "sglang") -> Iterator[Request]:
    """The scenario case files of tests/cases/ that run on the named shipped pack."""
    for path in sorted(CASES.rglob("*.toml")):
        case = tomllib.loads(path.read_text())
        if case.get("pack", "sglang") != pack_name:
            continue
        request = case.get("request", {})
        yield Request(
            f"case:{path.stem}",
            dict(request.get("options", {})),
            dict(request.get("facts", {})),
            bool(request.get("strict", False)),
        )


def classify(pack: Any, requests: list[Request]) -> tuple[list[Request], list[Request]]:
    """Split requests into those that resolve and those that conflict (invalid ones are dropped)."""
    from solver.errors import InvalidInput, SolverBudgetExceeded
    from solver.inputs.pins import collect_pins
    from solver.reasoning.resolution import plan_for

    plan = plan_for(pack)
    ok: list[Request] = []
    bad: list[Request] = []
    for req in requests:
        try:
            pins = collect_pins(pack, req.options, req.facts)
        except InvalidInput:
            continue
        values = {n: p.value for n, p in pins.items()}
        try:
            witness = plan.compiled.satisfiable(values)
        except SolverBudgetExceeded:
            continue
        (ok if witness is not None else bad).append(req)
    return ok, bad


def impossible_from(pack: Any, resolvable: list[Request], want: int) -> list[Request]:
    """Impossible requests made from resolvable ones: pin one more option to a value it cannot take.

    Deterministic: requests and options are taken in order, the first excluded value of each
    option (in domain order) is used, and each (option, base request) pair is used once.
    """
    from solver.inputs.pins import collect_pins
    from solver.reasoning.resolution import plan_for

    cp = plan_for(pack).compiled
    out: list[Request] = []
    options = pack.options
    for index, req in enumerate(resolvable):
        if len(out) >= want:
            break
        pins = collect_pins(pack, req.options, req.facts)
        values = {n: p.value for n, p in pins.items()}
        for name in options[index % len(options) :] + options[: index % len(options)]:
            if name in values:
                continue
            bad = next((v for v in cp.domains[name] if cp.satisfiable({**values, name: v}) is None), None)
            if bad is not None:
                out.append(Request(f"{req.id}+{name}={bad}", {**req.options, name: bad}, req.facts))
                break
    return out
