"""Open integer domains: the finite working domain of one query.

A pack may declare an integer field open (`open = {min = 1}`): besides its listed values, any
integer in the range is legal (SGLang takes `--tp 6` as readily as `--tp 8`). The engine is
finite-domain, so a query works on the listed values plus the values its pins name: a pin outside
the listed values widens that field's domain for this query only. The rules are unchanged; they
read the new value like any other (divisibility is `a % b == 0`).

This is exact for every question about the request as given: the pinned value is the only value
of its field, and the other fields keep their listed domains. What a finite working domain cannot
answer is "which unlisted values would also work"; `choices` and `count` say so (the open range is
reported beside the listed values, never folded into a number).

Imports only `solver.model`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from solver.model import Pack, Pin, Scalar

__all__ = ["MARK", "base_digest", "open_fields", "widened"]

# Separates a pack's digest from the values a widened copy adds: the copy gets its own compiled
# form and plan, while what does not depend on domains (the field order) is shared by the base.
MARK = "+open:"


def base_digest(digest: str) -> str:
    """The digest of the pack a widened copy was made from (itself for a base pack)."""
    return digest.partition(MARK)[0]


def open_fields(pack: Pack) -> dict[str, str]:
    """The open fields of a pack and their ranges in words (`any integer >= 1`)."""
    return {name: f.open.text() for name, f in pack.fields.items() if f.open is not None}


def widened(pack: Pack, pins: Mapping[str, Pin] | Mapping[str, Scalar]) -> Pack:
    """`pack` itself when every pinned value is listed; otherwise a copy whose open fields also
    hold the unlisted values pinned (appended after the listed ones, which keeps their order as
    the fallback preference), with a digest of its own."""
    extra: dict[str, Scalar] = {}
    for name, pin in pins.items():
        field = pack.fields.get(name)
        if field is None or field.open is None:
            continue
        value = pin.value if isinstance(pin, Pin) else pin
        if not any(value == v and type(value) is type(v) for v in field.domain) and field.open.admits(value):
            extra[name] = value
    if not extra:
        return pack
    fields = dict(pack.fields)
    for name, value in extra.items():
        fields[name] = dataclasses.replace(fields[name], domain=(*fields[name].domain, value))
    tag = ",".join(f"{n}={v}" for n, v in sorted(extra.items()))
    digest = f"{base_digest(pack.digest)}{MARK}{tag}" if pack.digest else ""
    return dataclasses.replace(pack, fields=fields, digest=digest)
