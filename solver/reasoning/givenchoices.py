"""The choices of a field some rule asks whether the request gives (`given(FIELD)`).

Picking a value of such a field types it, so its choices are those of the request that gives
it: `--moe-runner-backend flashinfer_cutedsl` with `--quantization` unset fails in SGLang 0.5.23,
yet `modelopt_fp4` is a choice of `quantization` there, because typing it is what mends the
request. Every other field's choices are those of the request as it is
(`solver.pack.given.for_request`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solver.model import Pack, Pin
from solver.pack.given import for_request, given_fields

if TYPE_CHECKING:
    from solver.reasoning.diagnose import Choices

__all__ = ["typed_apart", "typed_choices"]


def typed_apart(pack: Pack, pins: Mapping[str, Pin], names: Sequence[str]) -> list[str]:
    """Those of `names` a rule asks about and the request does not give."""
    asked = given_fields(pack)
    return [n for n in names if n in asked and n not in pins] if asked else []


def typed_choices(
    choices: Callable[..., Choices],
    pack: Pack,
    pins: Mapping[str, Pin],
    names: Sequence[str],
    apart: Sequence[str],
    **kw: Any,
) -> Choices:
    """`choices` (`valid_choices`) of `names`, each field of `apart` asked of the pack in which the
    request gives it; the answers in the order of `names`."""
    rest = [n for n in names if n not in apart]
    parts = [choices(pack, pins, fields=rest, **kw)] if rest else []
    parts += [choices(for_request(pack, {*pins, name}), pins, fields=[name], **kw) for name in apart]
    out = parts[0]
    for part in parts[1:]:
        for table in ("possible", "excluded", "open", "warned"):
            getattr(out, table).update(getattr(part, table))
    for table in ("possible", "excluded", "open", "warned"):
        found = getattr(out, table)
        setattr(out, table, {n: found[n] for n in names if n in found})
    return out
