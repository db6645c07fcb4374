"""The minimal reason of every excluded value of a configurator state, computed apart from the
clicks: in a worker process of lower priority when the pack can be loaded there (from its
directory, `solver.serve.workers`), so that this CPU-heavy pass (two full `valid_choices` with
reasons) never holds the server's interpreter lock while a click is being answered.

A value the facts alone exclude gets its reason among the facts (scope `facts`); any other
excluded value its reason among all the inputs (scope `choices`).
"""

from __future__ import annotations

from typing import Any

from solver.model import Pack, Scalar
from solver.serve.workers import PackProcess
from solver.values import show as _key

__all__ = ["ReasonWorker", "excluded_reasons"]

Values = tuple[tuple[str, Scalar], ...]


def excluded_reasons(pack: Pack, values: Values) -> dict[str, dict[str, Any]]:
    """Field -> excluded value -> {"scope", "pins", "rules"} for the state `values`."""
    from solver.inputs.pins import collect_pins
    from solver.reasoning.diagnose import valid_choices

    facts_only = tuple((n, v) for n, v in values if pack.fields[n].kind == "fact")
    scopes = [("choices", values), ("facts", facts_only)] if facts_only != values else [("facts", values)]
    found: dict[str, dict[str, Any]] = {name: {} for name in pack.fields}
    # Every field at once: one pass per scope shares its witnesses and propagation states
    # across fields, where a pass per field would repeat them.
    for scope, given in scopes:
        choices = valid_choices(pack, collect_pins(pack, dict(given)), fields=list(pack.fields), reasons=True)
        for name, excluded in choices.excluded.items():
            for value, items in excluded.items():
                # The facts' own reason wins for a value the facts alone exclude.
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

    def reasons(self, values: Values) -> dict[str, dict[str, Any]]:
        future = self.process.submit(excluded_reasons, values)
        found = self.process.result(future) if future is not None else None
        return found if found is not None else excluded_reasons(self.pack, values)

    def close(self) -> None:
        self.process.close()
