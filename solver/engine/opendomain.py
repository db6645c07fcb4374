"""Open integer domains: the finite working domain of one query.

A pack may declare an integer field open (`open = {min = 1}`): besides its listed values, any
integer in the range is legal (SGLang takes `--tp 6` as readily as `--tp 8`). The engine is
finite-domain, so a query works on the listed values plus the values its pins name: a pin outside
the listed values widens that field's domain for this query only, and the domains of the other
open fields that share a rule with it (`--ep 3` lets `tp_size` be 3, so a2a backends that set
ep to tp, and `choices`, find it). The rules are unchanged; they read the new values like any
other (divisibility is `a % b == 0`).

This is exact for every question about the request as given: the pinned value is the only value
of its field, and every answer holds over the working domain. What a finite working domain cannot
answer is "which unlisted values would also work"; `choices` and `count` say so (the open range is
reported beside the listed values, never folded into a number).

Imports `solver.model`, `solver.values`, and `solver.pack.loader` (for the rules' fields) when a
value is unlisted.
"""

from __future__ import annotations

from collections.abc import Mapping

from solver import frozen
from solver.bounded import PACKS_KEPT, Lru, digest_family
from solver.model import Pack, Pin, Scalar
from solver.values import same

__all__ = ["MARK", "open_fields", "origin", "query_pack", "widened"]

# Separates a pack's digest from the values a widened copy adds: the copy gets its own compiled
# form and plan, while what does not depend on domains (the field order) is shared by the base.
MARK = "+open:"


# By digest: the fields whose pin can make a request's pack a copy (open fields, and the fields a
# rule asks `given(FIELD)` of). Every request asks; most pin none of them.
_SPECIAL: Lru[str, frozenset[str]] = Lru(PACKS_KEPT, family=digest_family)


def query_pack(pack: Pack, pins: Mapping[str, Pin] | Mapping[str, Scalar], *, typed: bool = True) -> Pack:
    """The pack one request works on: open domains widened by its pinned values, then its rules'
    `given(FIELD)` answered for the fields it pins (`solver.pack.given.for_request`); `pack`
    itself, after one set test, when it pins no open field and no field a rule asks about.
    `typed`: the pins' values are the ones typed, read by `given(FIELD) == VALUE` as typed even
    where an adjustment replaces them (a request to resolve); False: each pinned field's own
    value is the one typed (choices: picking a value types it, and no pin is adjusted)."""
    from solver.pack.given import for_request, given_fields, valued_fields

    special = _SPECIAL.get(pack.digest) if pack.digest else None
    if special is None:
        special = given_fields(pack).union(valued_fields(pack))
        special = special.union(n for n, f in pack.fields.items() if f.open is not None)
        if pack.digest:
            _SPECIAL.put(pack.digest, special)
    if special.isdisjoint(pins):
        return pack
    made = for_request(widened(pack, pins), pins if typed else list(pins))
    if made is not pack:
        # The copy carries its origin: a table by digest could drop it (packs are kept 8 per
        # family) and a repair would then be verified on the copy, under this request's answers.
        # Not a field of the record: it would join the pack's equality and its dumps.
        object.__setattr__(made, _ORIGIN, pack)
    return made


_ORIGIN = "_query_origin"


def origin(pack: Pack) -> Pack:
    """The pack `query_pack` made `pack` from for a request (`pack` itself when it is not such a
    copy): another request, a repair of this one, is asked of it, not of this request's copy,
    whose `given(FIELD)` are this request's answers."""
    found = vars(pack).get(_ORIGIN)
    return pack if found is None else found


def _listed(domain: tuple[Scalar, ...], value: Scalar) -> bool:
    return any(same(value, v) for v in domain)


def _neighbours(pack: Pack, name: str) -> set[str]:
    """The other fields of the rules that read `name` (conditions parsed once per pack)."""
    from solver.pack.loader import semantics

    found: set[str] = set()
    for cond in semantics(pack).rules.values():
        if name in cond.fields:
            found.update(cond.fields)
    found.discard(name)
    return found


def open_fields(pack: Pack) -> dict[str, str]:
    """The open fields of a pack and their ranges in words (`any integer >= 1`)."""
    return {name: f.open.text() for name, f in pack.fields.items() if f.open is not None}


def widened(pack: Pack, pins: Mapping[str, Pin] | Mapping[str, Scalar]) -> Pack:
    """`pack` itself when every pinned value is listed; otherwise a copy whose open fields also
    hold the unlisted values pinned (appended after the listed ones, which keeps their order as
    the fallback preference), with a digest of its own."""
    extra: dict[str, list[Scalar]] = {}
    for name, pin in pins.items():
        field = pack.fields.get(name)
        if field is None or field.open is None:
            continue
        value = pin.value if isinstance(pin, Pin) else pin
        if not _listed(field.domain, value) and field.open.admits(value):
            extra.setdefault(name, []).append(value)
            # An open field that shares a rule with this one may take the value too (ep_size 3
            # pinned: tp_size 3 divides by it); listing it keeps `choices` from calling the
            # field impossible when only unlisted values work.
            for other in _neighbours(pack, name):
                opened = pack.fields[other].open
                if (
                    other not in pins
                    and opened is not None
                    and opened.admits(value)
                    and not _listed(pack.fields[other].domain, value)
                ):
                    extra.setdefault(other, []).append(value)
    if not extra:
        return pack
    fields = dict(pack.fields)
    for name, values in extra.items():
        added = tuple(dict.fromkeys(values))
        fields[name] = frozen.replace(fields[name], domain=(*fields[name].domain, *added))
    tag = ",".join(f"{n}={'|'.join(map(str, dict.fromkeys(v)))}" for n, v in sorted(extra.items()))
    digest = f"{pack.digest.partition(MARK)[0]}{MARK}{tag}" if pack.digest else ""
    return frozen.replace(pack, fields=fields, digest=digest)
