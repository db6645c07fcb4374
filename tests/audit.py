"""The trust audit of a replayed resolution, one home for the SGLang and vLLM differential runs.

Whatever the launcher answered, a resolution must never change what the user set without a
reported adjustment, nor fill a fact nobody gave without listing it as assumed (the mission's
"never wrong in silence"). The replays run it on every record they resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from solver import Pack


def audit(pack: Pack, options: Mapping[str, Any], facts: Mapping[str, Any], resolution: Any) -> list[str]:
    """What a resolution would leave unsaid: a value the user set that changed with no reported
    adjustment, and a fact nobody gave that was filled by a preference or the domain's order
    without being listed as assumed (facts the rules force from the request are derived, not
    assumed)."""
    found = []
    adjusted = {a.field: a for a in resolution.adjustments}
    for name, given in options.items():
        if given == "auto" and "auto" not in pack.fields[name].domain:
            continue  # `auto` where it is no value means unset (contract-vllm.md)
        now = resolution.values.get(name)
        if now != given and not (name in adjusted and adjusted[name].requested == given):
            found.append(f"{name}={given} became {now} with no adjustment reported")
    assumed = {a.field for a in resolution.assumed}
    for name, spec in pack.fields.items():
        if spec.kind != "fact" or name in facts or name in assumed:
            continue
        if resolution.provenance[name].kind in ("default", "preference"):
            found.append(f"fact {name}={resolution.values.get(name)} filled but not listed as assumed")
    return found
