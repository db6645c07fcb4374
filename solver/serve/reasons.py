"""The minimal reason of every excluded value of a configurator state, computed apart from the
clicks: in a worker process of lower priority when the pack can be loaded there (from its
directory, `solver.serve.workers`), so that this CPU-heavy pass (two or three `valid_choices` with
reasons) never holds the server's interpreter lock while a click is being answered.

A value the facts alone exclude gets its reason among the facts (scope `facts`); an option's
value the given facts allow but not with the facts the resolution assumes, its reason among
those (scope `assumed`: it names the assumed fact, "head_size=128"); any other excluded value its
reason among all the inputs (scope `choices`), an option's with the assumed facts pinned too.
The scopes are the state's (`Configurator._choices`), pass for pass.
"""

from __future__ import annotations

from typing import Any

from solver.model import Pack, Pin, Scalar
from solver.serve.workers import PackProcess
from solver.values import show as _key

__all__ = ["ReasonWorker", "excluded_reasons"]

Values = tuple[tuple[str, Scalar], ...]


def excluded_reasons(pack: Pack, values: Values, assumed: Values = ()) -> dict[str, dict[str, Any]]:
    """Field -> excluded value -> {"scope", "pins", "rules"} for the state `values`, whose
    resolution assumes the facts `assumed`."""
    from solver.inputs.pins import collect_pins
    from solver.reasoning.assumedchoices import choices_under

    facts_only = tuple((n, v) for n, v in values if pack.fields[n].kind == "fact")
    pinned = {n: Pin(field=n, value=v, source="assumed") for n, v in assumed}
    everything = list(pack.fields)
    options = [n for n in everything if pack.fields[n].kind == "option"]
    # Later passes win: the narrowest scope that excludes a value gives its reason.
    passes: list[tuple[str, Values, dict[str, Pin], list[str]]] = []
    if facts_only != values:
        passes.append(("choices", values, pinned, everything))
    if pinned:
        passes.append(("assumed", facts_only, pinned, options))
    passes.append(("facts", facts_only, {}, everything))
    found: dict[str, dict[str, Any]] = {name: {} for name in pack.fields}
    # Every field at once: one pass per scope shares its witnesses and propagation states
    # across fields, where a pass per field would repeat them.
    for scope, given, under, names in passes:
        pins = collect_pins(pack, dict(given))
        choices = choices_under(pack, pins, under, fields=names, reasons=True)
        for name, excluded in choices.excluded.items():
            for value, items in excluded.items():
                found[name][_key(value)] = {
                    "scope": scope,
                    "pins": [
                        {
                            "field": i.name,
                            "value": None if i.value is None else _key(i.value),
                            "source": i.source,
                        }
                        for i in items
                        if i.kind == "pin"
                    ],
                    "rules": [_rule_ref(pack, i.name) for i in items if i.kind == "rule"],
                }
    return found


def _rule_ref(pack: Pack, rule_id: str) -> dict[str, str]:
    rule = pack.rule(rule_id)
    return {"id": rule.id, "because": rule.because, "source": rule.source}


class ReasonWorker:
    """The reasons of a state, in a worker process of lower priority (`solver.serve.workers`),
    or in the calling thread for a pack without a directory and after the worker has died."""

    def __init__(self, pack: Pack) -> None:
        self.pack = pack
        self.process = PackProcess(pack, lower_priority=True)

    def reasons(self, values: Values, assumed: Values = ()) -> dict[str, dict[str, Any]]:
        future = self.process.submit(excluded_reasons, values, assumed)
        found = self.process.result(future) if future is not None else None
        return found if found is not None else excluded_reasons(self.pack, values, assumed)

    def close(self) -> None:
        self.process.close()
