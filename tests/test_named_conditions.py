"""Named conditions: `[conditions] NAME = "condition"`, read by name in rules and preferences.

The law: a pack that reads its conditions by name answers every request exactly as the same pack
with each name written out in parentheses (brute force over a toy pack's requests, with a name
read in a `when`, a `require`, a preference, through another name, beside `given()` and beside a
quoted literal that spells the name). Then the load errors, all at once, and lint's CS153.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from solver import PackError, check, load_pack, resolve
from solver.lint.checks import lint

MANIFEST = """
[pack]
name = "named"
version = "1"
description = "named conditions against the same pack written out"
files = ["rules.toml"]
"""

FIELDS = """
[sets]
FAST = ["a100", "h100"]

[field.gpu]
kind = "fact"
domain = ["a100", "h100", "t4"]
required = true

[field.quant]
kind = "option"
domain = ["none", "fp8", "FAST_QUANT"]

[field.kernel]
kind = "option"
domain = ["auto", "triton", "cutlass"]

[field.graphs]
kind = "option"
domain = [true, false]
"""

NAMED = """
[conditions]
FAST_GPU = "gpu in FAST"
TYPED_FP8 = "quant == 'fp8' and given(quant)"
FP8_ON_FAST = "TYPED_FP8 and FAST_GPU"
"""

# Each rule/preference as written with names, and the same text with the names written out.
USES = [
    ("when", "FP8_ON_FAST", "(quant == 'fp8' and given(quant)) and (gpu in FAST)"),
    ("require", "kernel != 'triton'", "kernel != 'triton'"),
    (
        "when2",
        "quant == 'FAST_QUANT' and not FAST_GPU or not TYPED_FP8 and kernel == 'triton'",
        "quant == 'FAST_QUANT' and not (gpu in FAST)"
        " or not (quant == 'fp8' and given(quant)) and kernel == 'triton'",
    ),
    ("pref", "FAST_GPU or TYPED_FP8", "(gpu in FAST) or (quant == 'fp8' and given(quant))"),
]


def _rules(named: bool) -> str:
    pick = 1 if named else 2
    return f"""
[[rule]]
id = "fp8-fast-no-triton"
when = "{USES[0][pick]}"
require = "{USES[1][pick]}"
because = "typed fp8 on a fast GPU cannot use --kernel triton; pick cutlass"
source = "test"

[[rule]]
id = "odd-quant-needs-graphs-off"
when = "{USES[2][pick]}"
forbid = "graphs"
because = "FAST_QUANT on a slow GPU, or --kernel triton without a typed fp8, needs --graphs false"
source = "test"

[[preference]]
id = "cutlass-first"
field = "kernel"
when = "{USES[3][pick]}"
prefer = ["cutlass", "triton"]
because = "cutlass is the default --kernel on fast GPUs and with typed fp8"
source = "test"
"""


def _write(root: Path, body: str) -> Path:
    root.mkdir()
    (root / "pack.toml").write_text(MANIFEST, encoding="utf-8")
    (root / "rules.toml").write_text(body, encoding="utf-8")
    return root


def _every_request() -> Iterator[tuple[dict[str, object], dict[str, object]]]:
    domains: dict[str, list[object]] = {
        "quant": ["none", "fp8", "FAST_QUANT"],
        "kernel": ["auto", "triton", "cutlass"],
        "graphs": [True, False],
    }
    for gpu in ("a100", "h100", "t4"):
        for typed in itertools.chain.from_iterable(itertools.combinations(domains, k) for k in range(4)):
            for chosen in itertools.product(*(domains[name] for name in typed)):
                yield dict(zip(typed, chosen, strict=True)), {"gpu": gpu}


def _answer(resolution: object) -> object:
    dumped = resolution.model_dump(mode="json")  # type: ignore[attr-defined]
    for key in ("pack", "pack_version", "pack_digest", "timing"):
        dumped.pop(key, None)
    return dumped


def test_named_conditions_answer_as_the_conditions_written_out(tmp_path: Path) -> None:
    named = load_pack(_write(tmp_path / "named", FIELDS + NAMED + _rules(named=True)))
    inline = load_pack(_write(tmp_path / "inline", FIELDS + _rules(named=False)))
    assert named.conditions["FP8_ON_FAST"] == USES[0][2]
    assert [r.when for r in named.rules] == [r.when for r in inline.rules]
    seen = 0
    for options, facts in _every_request():
        for ask in (check, resolve):
            try:
                want = _answer(ask(inline, options, facts))
            except Exception as exc:  # the same refusal, whatever it is
                with pytest.raises(type(exc)):
                    ask(named, options, facts)
                continue
            assert _answer(ask(named, options, facts)) == want, (ask.__name__, options, facts)
        seen += 1
    assert seen == 3 * (1 + 3 + 3 + 2 + 9 + 6 + 6 + 18)


def test_a_quoted_literal_that_spells_a_name_is_not_replaced(tmp_path: Path) -> None:
    body = FIELDS + '[conditions]\nFAST_QUANT = "gpu in FAST"\n' + _rules(named=False)
    body += """
[[rule]]
id = "literal"
when = "quant == 'FAST_QUANT' and FAST_QUANT"
forbid = "kernel == 'triton'"
because = "--quant FAST_QUANT on a fast GPU cannot use --kernel triton"
source = "test"
"""
    pack = load_pack(_write(tmp_path / "p", body))
    assert pack.rule("literal").when == "quant == 'FAST_QUANT' and (gpu in FAST)"


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('A_NAME = "B_NAME"\nB_NAME = "A_NAME"\n', "reads itself through A_NAME -> B_NAME -> A_NAME"),
        ("FAST = \"gpu == 't4'\"\n", "is also the name of a set"),
        ("lower = \"gpu == 't4'\"\n", "condition names are UPPER_CASE"),
        ("EMPTY = 3\n", "must be a non-empty condition string"),
        ("BAD_VALUE = \"gpu == 'v100'\"\n", "v100"),
    ],
)
def test_a_broken_named_condition_is_a_load_error_naming_it(
    tmp_path: Path, table: str, expected: str
) -> None:
    body = FIELDS + "[conditions]\n" + table + _rules(named=False)
    body += """
[[rule]]
id = "reads-it"
when = "gpu == 't4'"
forbid = "kernel == 'cutlass'"
because = "t4 has no --kernel cutlass"
source = "test"
"""
    with pytest.raises(PackError) as caught:
        load_pack(_write(tmp_path / "p", body))
    text = "\n".join(str(problem) for problem in caught.value.problems)
    assert expected in text
    assert "condition " in text


def test_a_deep_chain_is_refused_not_recursed(tmp_path: Path) -> None:
    chain = "".join(f'C{i} = "C{i + 1}"\n' for i in range(40)) + "C40 = \"gpu == 't4'\"\n"
    with pytest.raises(PackError) as caught:
        load_pack(_write(tmp_path / "p", FIELDS + "[conditions]\n" + chain + _rules(named=False)))
    assert "more than 16 deep" in "\n".join(str(problem) for problem in caught.value.problems)


def test_every_problem_of_a_broken_pack_at_once(tmp_path: Path) -> None:
    table = 'A_NAME = "B_NAME"\nB_NAME = "A_NAME"\nFAST = "gpu == \'t4\'"\nlower = "gpu == \'t4\'"\n'
    with pytest.raises(PackError) as caught:
        load_pack(_write(tmp_path / "p", FIELDS + "[conditions]\n" + table + _rules(named=False)))
    text = "\n".join(str(problem) for problem in caught.value.problems)
    for part in ("reads itself", "also the name of a set", "UPPER_CASE"):
        assert part in text


def test_lint_names_an_unused_named_condition(tmp_path: Path) -> None:
    body = FIELDS + NAMED + "\nNOBODY = \"gpu == 't4'\"\n" + _rules(named=True)
    pack = load_pack(_write(tmp_path / "p", body))
    unused = {tuple(f.ids) for f in lint(pack).findings if f.code == "CS153"}
    assert unused == {("NOBODY",)}
