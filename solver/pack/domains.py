"""The checks of one field's domain at load: its values and every key that names one.

Moved out of `solver.pack.loader` (at its 600-line bound): a pure function of a `Field`, which the
loader runs on every field of an untrusted pack and reports all at once.
"""

from __future__ import annotations

from solver.model import Field
from solver.values import same, show

__all__ = ["domain_problems"]


def domain_problems(field: Field, max_domain: int) -> list[str]:
    """What is wrong with one field's declared domain and the keys that name its values (each a
    sentence for a `PackProblem` of the field; none: the field is well formed). `max_domain`:
    the loader's bound on a domain's size (`solver.pack.loader.max_domain`)."""
    out: list[str] = []
    domain = field.domain
    if not domain:
        return ["the domain is empty"]
    if len(domain) > max_domain:
        out.append(f"the domain has {len(domain)} values; at most {max_domain}")
    kinds = {type(v) for v in domain}
    if len(kinds) > 1:
        out.append("domain values must all be strings, all integers or all booleans")
    if len(set(map(repr, domain))) != len(domain):
        out.append("the domain lists a value twice")
    if field.auto is not None and any(field.auto == v for v in domain):
        out.append(f"auto spelling {field.auto!r} is also a domain value")
    if field.absent is not None and not any(same(field.absent, v) for v in domain):
        out.append(f"absent value {field.absent!r} is not a domain value")
    if field.unread and not field.env:
        out.append(
            "unread says how a launcher reads an environment variable: only a field with env = true has it"
        )
    for key in field.labels:
        if key not in {str(v) for v in domain}:
            out.append(f"label for {key!r}, which is not a domain value")
    for key, sets in field.rewrites.items():
        if key not in {show(v) for v in domain}:
            out.append(f"rewrites {key!r}, which is not a domain value")
        if field.kind != "option" or not sets or field.name in sets:
            out.append(f"rewrites {key!r}: an option's value rewritten to other fields' values")
    if field.env and field.kind != "fact":
        out.append("an environment field must be a fact")
    if field.flag_value != "value" and kinds != {bool}:
        out.append(f"flag_value = {field.flag_value!r} needs a boolean field")
    if field.open is not None:
        if kinds != {int}:
            out.append("open = {...} needs an integer field")
        elif not all(field.open.admits(v) for v in domain):
            out.append(f"the listed values must lie in the open range ({field.open.text()})")
    return out
