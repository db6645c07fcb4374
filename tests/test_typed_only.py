"""`typed_only` adjustments: a launcher's alias of one flag for another (SGLang's
`--moe-runner-backend megamoe` sets `--moe-a2a-backend megamoe`). The adjustment reads its `when`
from the request as given, so it orders no decision: an ordinary adjustment's edge
runner -> dispatch closes a cycle with a runner preference that reads the dispatch, and that
preference then stops applying."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver import check
from solver.errors import PackError
from solver.model import Pack
from solver.pack.graph import analyse
from solver.pack.loader import load_directory

PACK = """
[pack]
name = "alias"
version = "1"
description = "a runner value that is an alias of a dispatch backend"
files = ["rules.toml"]
"""

RULES = """
[field.gpu]
kind = "fact"
domain = ["h100", "b200"]
required = true

[field.runner]
kind = "option"
domain = ["basic", "fast", "mega_alias"]
auto = "auto"

[field.dispatch]
kind = "option"
domain = ["none", "ring", "mega"]

[[preference]]
id = "ring-runs-fast"
field = "runner"
when = "dispatch == 'ring'"
prefer = ["fast"]
because = "the ring dispatch runs with the fast runner"
source = "test"

[[preference]]
id = "b200-rings"
field = "dispatch"
when = "gpu == 'b200'"
prefer = ["ring"]
because = "the ring dispatch is the B200 default"
source = "test"

[[rule]]
id = "mega-alias"
when = "runner == 'mega_alias'"
require = "dispatch == 'mega'"
adjusts = "dispatch"
adjust_to = ["mega"]
{typed_only}
because = "--runner mega_alias means --dispatch mega"
source = "test"
"""


def _pack(root: Path, typed_only: str) -> Pack:
    root.mkdir()
    (root / "pack.toml").write_text(PACK, encoding="utf-8")
    (root / "rules.toml").write_text(RULES.format(typed_only=typed_only), encoding="utf-8")
    return load_directory(root)


@pytest.fixture
def alias(tmp_path: Path) -> Pack:
    return _pack(tmp_path / "typed", "typed_only = true")


@pytest.fixture
def ordinary(tmp_path: Path) -> Pack:
    return _pack(tmp_path / "ordinary", "")


def test_a_typed_only_adjustment_orders_nothing(alias: Pack, ordinary: Pack) -> None:
    assert all(len(c) == 1 for c in analyse(alias).components)
    assert not any(why == "mega-alias" for _, _, why in analyse(alias).edges)
    # The same adjustment without `typed_only` ties the runner and the dispatch into a cycle.
    assert any({"runner", "dispatch"} <= set(c) for c in analyse(ordinary).components)


def test_the_preference_it_would_cut_off_still_applies(alias: Pack, ordinary: Pack) -> None:
    assert check(alias, {}, {"gpu": "b200"}).values["runner"] == "fast"
    # In the cycle the runner (declared first) is decided first, when its preference's
    # condition reads the undecided dispatch: it does not apply.
    assert check(ordinary, {}, {"gpu": "b200"}).values["runner"] == "basic"


def test_it_replaces_a_typed_value_and_says_so(alias: Pack) -> None:
    res = check(alias, {"runner": "mega_alias", "dispatch": "ring"}, {"gpu": "h100"})
    assert res.values["dispatch"] == "mega"
    [adj] = res.adjustments
    assert (adj.field, adj.requested, adj.resolved, adj.rule) == ("dispatch", "ring", "mega", "mega-alias")


def test_an_unset_field_takes_the_alias_value(alias: Pack) -> None:
    res = check(alias, {"runner": "mega_alias"}, {"gpu": "h100"})
    assert res.values["dispatch"] == "mega"
    assert res.adjustments == []


def test_it_never_fires_on_a_value_nobody_typed(alias: Pack) -> None:
    res = check(alias, {"dispatch": "none"}, {"gpu": "h100"})
    assert (res.values["runner"], res.values["dispatch"], res.adjustments) == ("basic", "none", [])


def test_typed_only_needs_an_adjustment(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "pack.toml").write_text(PACK, encoding="utf-8")
    unadjusted = 'adjusts = "dispatch"\nadjust_to = ["mega"]\n'
    text = RULES.format(typed_only="typed_only = true").replace(unadjusted, "")
    (root / "rules.toml").write_text(text, encoding="utf-8")
    with pytest.raises(PackError, match="typed_only without adjusts"):
        load_directory(root)


def test_a_what_if_value_is_given_like_a_typed_one(alias: Pack) -> None:
    # `--assume runner=mega_alias` is part of the request as much as `--set`: the alias fires
    # (it used to read only pins whose source was not `assumed`, and the request failed).
    from solver.model import Pin
    from solver.reasoning.resolution import resolve_pins

    pins = {
        "gpu": Pin(field="gpu", value="h100", source="fact"),
        "runner": Pin(field="runner", value="mega_alias", source="assumed"),
        "dispatch": Pin(field="dispatch", value="ring", source="user"),
    }
    res = resolve_pins(alias, pins, predict=True)
    assert res.values["dispatch"] == "mega"
    assert [(a.field, a.requested, a.resolved) for a in res.adjustments] == [("dispatch", "ring", "mega")]
