"""One precedence merge: what the user typed wins over what was read, detected or assumed.

A request's values come from several sources. The user's own words (`--set`, a launch command's
flags, a launcher's parsed flags) are final; everything else is read from somewhere and only fills
in what the user left unset. Among the read sources a later one wins over an earlier one: the
command line passes them lowest first (`--detect`, then `--env-from-os`, then `--model-config`,
then `--assume`), a launcher passes its `facts` mapping as one source. Both `solver.cli.queries`
(`gather`) and `solver.launcher` (`resolve_namespace`) merge through `read_values`, so a field is
named the same way (`solver.inputs.pins` finds it by field name, flag or alias) on both paths.

>>> from solver.model import Field, Pack
>>> pack = Pack(name="demo", version="1", fields={
...     "gpu": Field(name="gpu", kind="fact", domain=("a", "b", "c")),
...     "tp_size": Field(name="tp_size", kind="option", domain=(1, 2), flags=("--tp",))})
>>> read_values(pack, {"--tp": "2"}, {"gpu": "b", "tp_size": 1}, {"gpu": "c"})
{'gpu': 'c'}
>>> read_values(pack, {"gpu": "a"}, {"gpu": "b", "tp_size": 1})
{'tp_size': 1}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from solver.inputs.pins import _lookup
from solver.model import Pack

__all__ = ["read_values", "typed_fields"]

V = TypeVar("V")


def typed_fields(pack: Pack, typed: Iterable[Any]) -> set[Any]:
    """The fields the user typed, by the pack's name for them (a key the pack does not know is
    kept as it is: it names no field, so nothing read can be overridden by it)."""
    return {_lookup(pack, key) or key for key in typed}


def read_values(pack: Pack, typed: Iterable[Any], *sources: Mapping[Any, V]) -> dict[Any, V]:
    """The values of `sources` (lowest precedence first: a later source's value for a field
    replaces an earlier one's, in the earlier one's place) for the fields the user did not type.

    `typed` is the user's own keys (a mapping's keys, or a set of names); whatever the user typed
    for a field is the value, so no source's value for it is kept, not even to be checked
    against the typed one."""
    skip = typed_fields(pack, typed)
    merged: dict[Any, V] = {}
    for source in sources:
        merged.update(source)
    return {key: value for key, value in merged.items() if (_lookup(pack, key) or key) not in skip}
