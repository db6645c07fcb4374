"""One problem collector (solver.errors.Collector) for pack errors and input errors: a command
reports every bad input in one run, each with its field, value and did-you-mean, and exits 2."""

from __future__ import annotations

import json

import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.errors import InputIssue, InvalidInput, PackError, input_issues
from solver.inputs.pins import facts_from_environ

BAD_SETS = {"attention_backend": "flashinf", "tp_sise": "2", "platform": "cudaa"}
MEANT = {"attention_backend": "flashinfer", "tp_sise": "tp_size", "platform": "cuda"}


def _issues(capsys: pytest.CaptureFixture[str], *words: str) -> list[dict[str, object]]:
    argv = ["resolve", *(w for name, value in BAD_SETS.items() for w in ("--set", f"{name}={value}")), *words]
    assert main([*argv, "--json"]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    issues: list[dict[str, object]] = json.loads(out)["error"]["issues"]
    return issues


@pytest.mark.parametrize(
    "more",
    [(), ("--model-config", "/no/such/model"), ("--set", "oops"), ("--assume", "kv_cache_dtype=fp9")],
    ids=["sets only", "and a missing model", "and a malformed --set", "and a bad --assume"],
)
def test_three_bad_sets_are_reported_at_once_with_whatever_else_is_wrong(
    capsys: pytest.CaptureFixture[str], more: tuple[str, ...]
) -> None:
    issues = _issues(capsys, *more)
    by_field = {issue["field"]: issue for issue in issues}
    for name, value in BAD_SETS.items():
        assert by_field[name]["value"] == value, issues
        assert MEANT[name] in by_field[name]["did_you_mean"], issues  # type: ignore[operator]
    assert len(issues) == len(BAD_SETS) + (1 if more else 0), issues
    text_run = ["resolve", *(w for n, v in BAD_SETS.items() for w in ("--set", f"{n}={v}")), *more]
    assert main(text_run) == 2
    assert f"invalid input ({len(issues)} problems)" in capsys.readouterr().err


def test_every_badly_set_environment_variable_at_once() -> None:
    pack = load_pack("sglang")
    names = [name for name, field in pack.fields.items() if field.env][:2]
    with pytest.raises(InvalidInput) as caught:
        facts_from_environ(pack, dict.fromkeys(names, "maybe"))
    assert [issue.field for issue in caught.value.issues] == names


def test_the_collector_keeps_its_own_errors_and_passes_others_through() -> None:
    issues = input_issues()
    issues.add(InputIssue(field="a", value=1, message="first"))
    with issues.collect():
        raise InvalidInput([InputIssue(field="b", value=2, message="second")])
    with pytest.raises(PackError), issues.collect():
        raise PackError([], "other")  # not an input error: not this collector's to keep
    with pytest.raises(InvalidInput) as caught:
        issues.check()
    assert [issue.field for issue in caught.value.issues] == ["a", "b"]
    input_issues().check()  # nothing collected: nothing raised


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("9" * 20, f"--tp-size '{'9' * 20}' is too long for tp_size (18 digits at most)."),
        ("abc", "--tp-size 'abc' is not a value of tp_size. Allowed: any integer >= 1."),
    ],
    ids=["a size past 18 digits", "not a number"],
)
def test_a_bad_open_integer_says_what_is_allowed_in_one_sentence(
    capsys: pytest.CaptureFixture[str], value: str, says: str
) -> None:
    # A 20-digit size once read "'999...' is not a value of tp_size Allowed: any integer >= 1":
    # an integer refused as "not an integer >= 1", and no stop before "Allowed".
    assert main(["resolve", "--set", f"tp_size={value}"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Allowed: any integer >= 1." in err and "Traceback" not in err
