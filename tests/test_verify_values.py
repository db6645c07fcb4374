"""A repair's verification reads only the values a request resolves to
(`solver.reasoning.provenance.resolved_values`, what `solver.reasoning.verify.try_resolve` asks):
the law that they are the values the whole resolution (`resolve_unexplained`) answers, and that
one fails exactly where the other does, on generated packs (adjustments, typed `given()` reads,
preferences, warn rules, required facts), for the request and each request a repair makes of it
(one user pin unset, or set to another value), in search and predict mode, with and without the
launcher's own picks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from generated import Case, cases
from hypothesis import HealthCheck, example, given, settings
from test_laws import _REPAIR_OF_AN_ADJUSTED_PIN

from solver.errors import InvalidInput, Unsatisfiable
from solver.model import Pin, Scalar
from solver.pack.loader import load_directory
from solver.reasoning.provenance import resolve_unexplained, resolved_values


def _requests(case: Case) -> Iterator[dict[str, Pin]]:
    """The request, then each one a repair of it verifies: a user pin unset, or set to each
    other value of its field."""
    pins = {n: Pin(field=n, value=v, source=s) for n, (v, s) in case.pins().items()}  # type: ignore[arg-type]
    yield pins
    fields = case.pack.fields
    for name, pin in pins.items():
        if pin.source != "user":
            continue
        yield {n: p for n, p in pins.items() if n != name}
        for value in fields[name].domain:
            if value != pin.value:
                yield {**pins, name: Pin(field=name, value=value, source="user")}


def _answer(ask: object) -> tuple[str, Mapping[str, Scalar] | None]:
    """What a call answers: ("values", them), or the kind of failure it raised."""
    try:
        values = ask()  # type: ignore[operator]
    except (Unsatisfiable, InvalidInput) as exc:
        return type(exc).__name__, None
    return "values", values


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
@example(case=_REPAIR_OF_AN_ADJUSTED_PIN)  # (resolves only once the typed f1 = q is adjusted)
def test_a_verification_reads_the_values_the_resolution_answers(case: Case) -> None:
    pack = case.pack
    for pins in _requests(case):
        for predict in (False, True):
            for departures in (False, True):
                whole = _answer(
                    lambda p=pins, m=predict, d=departures: dict(
                        resolve_unexplained(pack, p, reasons=False, predict=m, departures=d).values
                    )
                )
                alone = _answer(
                    lambda p=pins, m=predict, d=departures: resolved_values(pack, p, predict=m, departures=d)
                )
                assert alone == whole, (pins, predict, departures)


PACK = """
[pack]
name = "required"
version = "1"
description = "a required fact the options do not decide"
files = ["rules.toml"]
"""

RULES = """
[field.gpu]
kind = "fact"
domain = ["small", "large"]
required = true

[field.kernel]
kind = "option"
domain = ["fast", "safe"]

[[rule]]
id = "small-gpu-safe-kernel"
when = "gpu == 'small'"
require = "kernel == 'safe'"
because = "the fast kernel needs the large GPU"
source = "test"
adjusts = "kernel"
adjust_to = ["safe"]
"""


def test_a_verification_fails_where_a_required_fact_is_left_open(tmp_path: Path) -> None:
    """A request that leaves a required fact to the search has no answer (`check_required`):
    its verification fails too, as the resolution does. One that holds only adjusted holds
    adjusted (a verification is not strict)."""
    root = tmp_path / "required"
    root.mkdir()
    (root / "pack.toml").write_text(PACK, encoding="utf-8")
    (root / "rules.toml").write_text(RULES, encoding="utf-8")
    pack = load_directory(root)
    for pins in ({"kernel": Pin(field="kernel", value="safe", source="user")}, {}):
        whole = _answer(lambda p=pins: dict(resolve_unexplained(pack, p, reasons=False).values))
        alone = _answer(lambda p=pins: resolved_values(pack, p))
        assert whole == alone == ("InvalidInput", None)
    decided = {"gpu": Pin(field="gpu", value="small", source="fact")}
    assert _answer(lambda: resolved_values(pack, decided)) == ("values", {"gpu": "small", "kernel": "safe"})
    typed = {**decided, "kernel": Pin(field="kernel", value="fast", source="user")}
    assert _answer(lambda: resolved_values(pack, typed)) == ("values", {"gpu": "small", "kernel": "safe"})
