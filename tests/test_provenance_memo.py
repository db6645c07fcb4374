"""What provenance remembers per compiled pack answers as if computed again.

`facts_force` (does a forced fact's value follow from the facts, or from the flags?) is kept
under the compiled pack's entry budget by the values of the fields the rules reading the fact
read and which of them the request gives: a request that gives a fact another one did not must
not be served the other's answer. Checked on the shipped SGLang pack's scenario case files, one
memo for all of them, each request's resolution asked with its pins and with each given fact
taken out in turn (the same values, another given-ness)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from solver import load_pack
from solver.inputs.pins import collect_pins
from solver.reasoning.forcing import facts_force, facts_force_walk
from solver.reasoning.plan import plan_for
from solver.reasoning.resolution import resolve

CASES = Path(__file__).resolve().parent / "cases"


def test_facts_force_remembered_is_the_walk() -> None:
    pack = load_pack("sglang")
    plan = plan_for(pack)
    facts = [n for n, spec in pack.fields.items() if spec.kind == "fact"]
    asked = differ = 0
    for path in sorted(CASES.rglob("*.toml")):
        case = tomllib.loads(path.read_text())
        if case.get("pack", "sglang") != "sglang":
            continue
        request = case.get("request", {})
        options, given = dict(request.get("options", {})), dict(request.get("facts", {}))
        try:
            solution = resolve(pack, options, given, reasons=False).values
        except Exception:  # a conflict or an input problem: no resolution to ask about
            continue
        pins = collect_pins(pack, options, given)
        for dropped in [None, *(n for n in pins if pack.fields[n].kind == "fact")]:
            some = {n: p for n, p in pins.items() if n != dropped}
            for name in facts:
                walked = facts_force_walk(plan, name, solution, some)
                assert facts_force(plan, name, solution, some) is walked, (path.name, name, dropped)
                asked += 1
                differ += dropped is not None and walked != facts_force_walk(plan, name, solution, pins)
    # (The given-ness must matter somewhere, else this law would not guard the key.)
    assert asked > 1000 and differ > 0, (asked, differ)
