"""The resolution half of `confsolve diff`: resolve the same requests in both packs and report
what changed ("with gpu_arch=sm90, attention_backend now resolves to triton instead of fa3").

Owns which requests are compared: machines drawn over the facts both packs share, as the new
pack's rules over facts allow them (the pinned facts included), or real models (`diff --models`)
that each pack reads with its own `[model_config]`, on machines drawn for them. A request that
either pack's rules over facts rule out is not a machine under that pack and is not compared.

Imports the standard library and `solver.lint.diffreport` at module level; `solver.lint.checks`,
`solver.inputs.modelconfig`, `solver.pack.modelconfig` and `solver.reasoning.resolution` inside
functions (`solver.lint.diff` imports this module when a diff runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solver import progress as _progress
from solver.lint.diffreport import ResolutionChange

if TYPE_CHECKING:
    from solver.lint.diff import Side
    from solver.model import Pack, Scalar

__all__ = ["ENUMERATE_REQUESTS", "SAMPLES", "resolutions"]

SAMPLES = 200  # requests drawn when the shared facts have more than ENUMERATE_REQUESTS combinations
ENUMERATE_REQUESTS = 512


@dataclass
class _Request:
    """One request resolved in both packs: what the report shows (`shown`: the facts drawn, and
    the model's as read), what each pack is given, and the model it describes (if any)."""

    shown: dict[str, Scalar]
    old: dict[str, Scalar]
    new: dict[str, Scalar]
    model: str | None = None


def _shared_facts(old: Side, new: Side, pins: Mapping[str, Scalar]) -> list[str]:
    return [
        n
        for n, f in old.pack.fields.items()
        if f.kind == "fact" and n in new.pack.fields and new.pack.fields[n].kind == "fact" and n not in pins
    ]


def _drawn_requests(
    old: Side, new: Side, pins: Mapping[str, Scalar], samples: int, seed: int
) -> tuple[list[_Request], bool]:
    """Machines drawn over the shared facts, as the new pack's rules over facts allow them."""
    from solver.lint.checks import fact_combinations

    facts = _shared_facts(old, new, pins)
    allowed: dict[str, list[Scalar]] = {
        n: [v for v in old.cp.domains[n] if v in new.cp.domains[n]] for n in facts
    }
    # Machines are drawn as the new pack describes them (the version being adopted; its rules
    # over facts are usually the tighter ones), so the sample is not spent on impossible ones;
    # the pinned facts take part, so that their rules (a pinned model's traits) shape the draw.
    fixed = _pinned_facts(new, pins)
    names = [*fixed, *facts]
    world = [r for r in new.cp.rule_ids if set(new.cp.rules[r].fields) <= set(names)]
    combos, enumerated = fact_combinations(
        new.cp,
        names,
        world,
        samples=samples,
        seed=seed,
        allowed={**allowed, **fixed},
        enumerate_up_to=ENUMERATE_REQUESTS,
    )
    drawn = [{n: combo[n] for n in facts} for combo in combos]
    return [_Request(d, {**d, **pins}, {**d, **pins}) for d in drawn], enumerated


def _pinned_facts(side: Side, pins: Mapping[str, Scalar]) -> dict[str, list[Scalar]]:
    fields = side.pack.fields
    return {
        n: [v]
        for n, v in pins.items()
        if n in fields and fields[n].kind == "fact" and v in side.cp.domains[n]
    }


def _model_requests(
    old: Side,
    new: Side,
    pins: Mapping[str, Scalar],
    models: Mapping[str, Path],
    samples: int,
    seed: int,
) -> tuple[list[_Request], dict[str, Any]]:
    """Requests for real models: each pack reads the model's facts with its own `[model_config]`
    table (a model one pack cannot read is reported, not compared), and the facts that are not
    model traits (the machine: platform, GPU, installed kernels, environment) are drawn for it
    as the new pack's rules over facts allow them together with the model's traits."""
    from solver.errors import InvalidInput
    from solver.inputs.modelconfig import facts_from_model_config
    from solver.lint.checks import fact_combinations

    # A trait either pack reads from configs is the model's to give: one a config leaves out
    # stays unknown, as it does for `--model-config` (never drawn: a drawn trait would describe
    # another model). Only the machine is drawn.
    traits = _traits(old.pack) | _traits(new.pack)
    machine_facts = [n for n in _shared_facts(old, new, pins) if n not in traits]
    per_model = max(4, -(-samples // max(len(models), 1)))
    report: dict[str, Any] = {
        "given": len(models),
        "read_by_both": 0,
        "without_machine": [],
        "not_read": [],
        "read_differently": [],
    }
    requests: list[_Request] = []
    for index, (label, path) in enumerate(models.items()):
        readings: dict[str, dict[str, Scalar]] = {}
        for side, tag in ((old, "old"), (new, "new")):
            try:
                read = facts_from_model_config(side.pack, path, skip=set(pins), flag="--models")
            except InvalidInput as exc:
                report["not_read"].append({"model": label, "pack": tag, "message": exc.issues[0].message})
                continue
            readings[tag] = {n: pin.value for n, pin in read.items()}
        if len(readings) < 2:
            continue
        report["read_by_both"] += 1
        before, after = readings["old"], readings["new"]
        for name in [n for n in new.pack.fields if n in before or n in after]:
            if name in old.pack.fields and before.get(name) != after.get(name):
                report["read_differently"].append(
                    {"model": label, "field": name, "old": before.get(name), "new": after.get(name)}
                )
        # Each pack gets its own reading; a trait only the other pack reads (a field it has but
        # does not read from configs) is given too, so both describe the same model.
        old_model, new_model = _reading(old, before, after), _reading(new, after, before)
        draw = [n for n in machine_facts if n not in old_model and n not in new_model]
        fixed = {**_pinned_facts(new, pins), **{n: [v] for n, v in new_model.items()}}
        names = [*fixed, *draw]
        world = [r for r in new.cp.rule_ids if set(new.cp.rules[r].fields) <= set(names)]
        combos, _ = fact_combinations(
            new.cp,
            names,
            world,
            samples=per_model,
            seed=seed + index,
            allowed=fixed,
            enumerate_up_to=per_model,
        )
        if not combos:
            report["without_machine"].append(label)
        for combo in combos:
            machine = {n: combo[n] for n in draw}
            requests.append(
                _Request(
                    {**old_model, **new_model, **machine},
                    {**old_model, **machine, **pins},
                    {**new_model, **machine, **pins},
                    label,
                )
            )
    return requests, report


def _traits(pack: Pack) -> set[str]:
    """The facts a pack's `[model_config]` table reads from a model."""
    from solver.pack.modelconfig import compile_model_config_map

    table = compile_model_config_map(pack)
    out = {rule.fact for rule in table.facts}
    if table.format is not None:
        out.add(table.format.fact)
        out.update(n for d in table.format.detect for n in d.implies)
    return out


def _reading(side: Side, own: Mapping[str, Scalar], other: Mapping[str, Scalar]) -> dict[str, Scalar]:
    given = {n: v for n, v in other.items() if n in side.cp.domains and v in side.cp.domains[n]}
    return {**given, **own}


def resolutions(
    old: Side,
    new: Side,
    pins: Mapping[str, Scalar],
    samples: int,
    seed: int,
    models: Mapping[str, Path] | None = None,
) -> tuple[dict[str, Any], list[ResolutionChange]]:
    """Resolve the same requests (drawn machines, or real models on drawn machines, plus the
    pins) in both packs and compare."""
    from solver.errors import SolverBudgetExceeded, SolverError
    from solver.model import Pin
    from solver.reasoning.resolution import resolve_pins

    model_report: dict[str, Any] | None = None
    if models is None:
        requests, enumerated = _drawn_requests(old, new, pins, samples, seed)
    else:
        requests, model_report = _model_requests(old, new, pins, models, samples, seed)
        enumerated = False

    def resolved(side: Side, request: Mapping[str, Scalar]) -> Any:
        given = {
            n: Pin(field=n, value=v, source="user" if side.pack.fields[n].kind == "option" else "fact")
            for n, v in request.items()
            if n in side.pack.fields
        }
        try:
            return resolve_pins(side.pack, given, reasons=False, explain_failure=False, budget=side.budget)
        except SolverBudgetExceeded:
            raise  # undecided is not "does not resolve": the diff ends with exit 4
        except SolverError:
            return None

    # Either pack may still rule a request out by a rule over facts alone (its fact-consistency
    # rules: an architecture's traits, a GPU's platform): such a request is not a machine under
    # that pack, so its resolutions are not compared (not "only resolves before" or "only now").
    def impossible(side: Side, request: Mapping[str, Scalar]) -> bool:
        fields = side.pack.fields
        return any(
            not rule.condition.evaluate(request)
            for rule in side.cp.rules.values()
            if all(n in request and fields[n].kind == "fact" for n in rule.fields)
        )

    shared = [n for n in old.pack.fields if n in new.pack.fields]
    found: dict[tuple[str, Scalar, Scalar], list[tuple[_Request, str | None, str | None]]] = {}
    tally = {
        "compared": 0,
        "old_only": 0,
        "new_only": 0,
        "machines_ruled_out": 0,
        "machines_ruled_out_before": 0,
    }
    _progress.phase("resolving requests in both packs", len(requests))
    for request in requests:
        _progress.advance()
        if impossible(new, request.new):
            tally["machines_ruled_out"] += 1
            continue
        if impossible(old, request.old):
            tally["machines_ruled_out_before"] += 1
            continue
        before, after = resolved(old, request.old), resolved(new, request.new)
        if before is None or after is None:
            if before is not None:
                tally["old_only"] += 1
            elif after is not None:
                tally["new_only"] += 1
            continue
        tally["compared"] += 1
        for name in shared:
            a, b = before.values[name], after.values[name]
            if name in request.new or name in request.old or a == b:
                continue
            found.setdefault((name, a, b), []).append(
                (request, before.provenance[name].rule, after.provenance[name].rule)
            )
    stats: dict[str, Any] = {
        "requests": len(requests),
        **tally,
        "enumerated": enumerated,
        "seed": None if enumerated else seed,
    }
    if model_report is not None:
        stats["models"] = model_report
    return stats, [_change(key, members, requests, pins) for key, members in _by_size(found)]


def _by_size(found: dict[Any, list[Any]]) -> list[tuple[Any, list[Any]]]:
    return sorted(found.items(), key=lambda item: -len(item[1]))


def _change(
    key: tuple[str, Scalar, Scalar],
    members: list[tuple[_Request, str | None, str | None]],
    requests: Sequence[_Request],
    pins: Mapping[str, Scalar],
) -> ResolutionChange:
    """One resolution change, with what its requests have in common that others do not."""
    name, a, b = key
    first = members[0][0].shown
    where = {
        n: v
        for n, v in first.items()
        if all(m[0].shown.get(n) == v for m in members) and any(r.shown.get(n) != v for r in requests)
    }
    models = sorted({m[0].model for m in members if m[0].model is not None})
    return ResolutionChange(
        name,
        a,
        b,
        len(members),
        where if len(members) > 1 else {},
        {**first, **pins},
        members[0][1],
        members[0][2],
        models,
    )
