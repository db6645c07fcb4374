"""The domains a model counter's root starts from (`root_domains`): the pack's own, less the values
a set of checks refutes on their own (each check's `refutes`), before propagation.

Imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.model import Scalar

__all__ = ["root_domains"]


def root_domains(
    refutes: Sequence[Mapping[str, frozenset[Any]]],
    checks: Sequence[int],
    open_: Mapping[str, tuple[Scalar, ...]],
    fixed_: Mapping[str, Scalar],
) -> tuple[dict[str, tuple[Scalar, ...]], dict[str, Scalar], list[str]] | None:
    """The free domains and fixed values of `open_` / `fixed_` less the values `checks` refute
    (a field left with one value moves to the fixed ones, the others keep field order), and the
    fields narrowed so; None when a domain empties."""
    dead: dict[str, set[Any]] = {}
    for index in checks:
        for name, values in refutes[index].items():
            if values:
                dead.setdefault(name, set()).update(values)
    doms, fixed = dict(open_), dict(fixed_)
    for name, gone in dead.items():
        if name in fixed:
            if fixed[name] in gone:
                return None
            continue
        domain = doms[name]
        kept = tuple(v for v in domain if v not in gone)
        if not kept:
            return None
        if len(kept) == 1:
            del doms[name]
            fixed[name] = kept[0]
        elif len(kept) != len(domain):
            doms[name] = kept
    return doms, fixed, list(dead)
