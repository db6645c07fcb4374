"""Seeded synthetic packs for the scaling benchmark: N fields, about 3N rules, satisfiable by construction.

Shape, chosen to look like the SGLang pack at a larger scale:
- 15% facts, 85% options; domains of 2-20 values (strings, integers, or booleans for size 2);
- rules of arity 1-4 (10% / 45% / 30% / 15%), `when` -> `require`, over fields near each other in
  declaration order (a window of +-25, one field in ten anywhere), so the constraint graph has
  clusters with a few long links, as real packs do;
- preferences on 40% of the options, conditioned on one or two earlier fields (so the field graph is
  acyclic) and ranking one to three values;
- a planted configuration satisfies every rule: a rule the planted values would break gets the
  planted value added to its `require` set. So every request made of planted values resolves.

`python benchmarks/synthetic.py 1000 --out DIR` writes a pack directory to look at.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WINDOW = 25
RULES_PER_FIELD = 3.0
FACT_SHARE = 0.15
PREF_SHARE = 0.4


@dataclass
class Synthetic:
    """The generated pack as TOML texts, plus what the requests need to know about it."""

    n_fields: int
    seed: int
    files: dict[str, str]
    names: list[str]
    kinds: dict[str, str]
    domains: dict[str, list[Any]]
    planted: dict[str, Any]
    pairs: list[tuple[str, Any, str, Any]] = field(default_factory=list)
    """Option pairs (a, x, b, y) that a binary rule forbids together: impossible requests."""


def _lit(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    return f"'{value}'"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def _in(name: str, values: list[Any]) -> str:
    if len(values) == 1:
        return f"{name} == {_lit(values[0])}"
    return f"{name} in [{', '.join(_lit(v) for v in values)}]"


def generate(n_fields: int, seed: int = 0) -> Synthetic:
    rng = random.Random(seed * 1_000_003 + n_fields)
    names = [f"f{i:05d}" for i in range(n_fields)]
    kinds: dict[str, str] = {}
    domains: dict[str, list[Any]] = {}
    planted: dict[str, Any] = {}
    for name in names:
        kinds[name] = "fact" if rng.random() < FACT_SHARE else "option"
        size = rng.randint(2, 20)
        style = rng.random()
        if size == 2 and style < 0.5:
            domain: list[Any] = [False, True]
        elif style < 0.25:
            domain = [2**k for k in range(size)]
        else:
            domain = [f"v{k}" for k in range(size)]
        domains[name] = domain
        planted[name] = rng.choice(domain)

    def near(center: int, count: int) -> list[int]:
        picked: list[int] = []
        while len(picked) < count:
            if rng.random() < 0.1:
                index = rng.randrange(n_fields)
            else:
                index = min(n_fields - 1, max(0, center + rng.randint(-WINDOW, WINDOW)))
            if index not in picked:
                picked.append(index)
        return picked

    def subset(name: str, low: float, high: float) -> list[Any]:
        domain = domains[name]
        k = max(1, min(len(domain) - 1, round(len(domain) * rng.uniform(low, high))))
        return sorted(rng.sample(domain, k), key=domain.index)

    rules: list[str] = []
    pairs: list[tuple[str, Any, str, Any]] = []
    n_rules = min(int(n_fields * RULES_PER_FIELD), 199_000)
    for r in range(n_rules):
        arity = rng.choices((1, 2, 3, 4), weights=(10, 45, 30, 15))[0]
        if arity > n_fields:
            arity = 1
        fs = [names[i] for i in near(rng.randrange(n_fields), arity)]
        when: str | None = None
        if arity == 1:
            a = fs[0]
            bad = [v for v in domains[a] if v != planted[a]]
            require = "not (" + _in(a, rng.sample(bad, 1)) + ")"
        elif arity == 2:
            a, b = fs
            sa, sb = subset(a, 0.1, 0.4), subset(b, 0.3, 0.7)
            if planted[a] in sa and planted[b] not in sb:
                sb = sorted([*sb, planted[b]], key=domains[b].index)
            when, require = _in(a, sa), _in(b, sb)
            outside = [v for v in domains[b] if v not in sb]
            if kinds[a] == kinds[b] == "option" and outside:
                pairs.append((a, sa[0], b, outside[0]))
        elif arity == 3:
            a, b, c = fs
            x = rng.choice(domains[a])
            y = rng.choice(domains[b])
            sc = subset(c, 0.3, 0.7)
            if planted[a] == x and planted[b] != y and planted[c] not in sc:
                sc = sorted([*sc, planted[c]], key=domains[c].index)
            when, require = f"{a} == {_lit(x)} and {b} != {_lit(y)}", _in(c, sc)
        else:
            a, b, c, d = fs
            sa = subset(a, 0.1, 0.3)
            y = rng.choice(domains[b])
            sc = subset(c, 0.3, 0.7)
            z = rng.choice(domains[d])
            fires = planted[a] in sa or planted[b] == y
            if fires and planted[c] not in sc and planted[d] == z:
                sc = sorted([*sc, planted[c]], key=domains[c].index)
            when = f"{_in(a, sa)} or {b} == {_lit(y)}"
            require = f"{_in(c, sc)} or {d} != {_lit(z)}"
        lines = ["[[rule]]", f'id = "r{r:06d}"']
        if when is not None:
            lines.append(f"when = {_toml(when)}")
        lines += [
            f"require = {_toml(require)}",
            'because = "synthetic rule"',
            'source = "benchmarks/synthetic.py"',
            "",
        ]
        rules.append("\n".join(lines))

    prefs: list[str] = []
    for index, name in enumerate(names):
        if kinds[name] != "option" or index == 0 or rng.random() >= PREF_SHARE:
            continue
        earlier = sorted({rng.randint(max(0, index - WINDOW), index - 1) for _ in range(rng.randint(1, 2))})
        cond = " and ".join(_in(names[e], subset(names[e], 0.3, 0.7)) for e in earlier)
        prefer = rng.sample(domains[name], min(len(domains[name]), rng.randint(1, 3)))
        prefs.append(
            "\n".join(
                [
                    "[[preference]]",
                    f'id = "p{index:06d}"',
                    f'field = "{name}"',
                    f"when = {_toml(cond)}",
                    f"prefer = {_toml(prefer)}",
                    'because = "synthetic preference"',
                    'source = "benchmarks/synthetic.py"',
                    "",
                ]
            )
        )

    field_text = []
    for name in names:
        field_text.append(f'[field.{name}]\nkind = "{kinds[name]}"\ndomain = {_toml(domains[name])}\n')
    files = {
        "pack.toml": (
            f'[pack]\nname = "synthetic{n_fields}"\nversion = "{seed}"\n'
            'description = "seeded synthetic pack (benchmarks/synthetic.py)"\n'
            'files = ["fields.toml", "rules.toml", "preferences.toml"]\n'
        ),
        "fields.toml": "\n".join(field_text),
        "rules.toml": "\n".join(rules),
        "preferences.toml": "\n".join(prefs),
    }
    return Synthetic(n_fields, seed, files, names, kinds, domains, planted, pairs)


def write(spec: Synthetic, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in spec.files.items():
        (directory / name).write_text(text)
    return directory


def resolvable_request(spec: Synthetic, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """Options and facts at planted values: half the facts and 2% of the options (resolves)."""
    rng = random.Random(seed)
    facts = {n: spec.planted[n] for n in spec.names if spec.kinds[n] == "fact" and rng.random() < 0.5}
    options = {n: spec.planted[n] for n in spec.names if spec.kinds[n] == "option" and rng.random() < 0.02}
    return options, facts


def impossible_request(spec: Synthetic, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """The resolvable request plus two options a binary rule forbids together."""
    options, facts = resolvable_request(spec, seed)
    rng = random.Random(seed + 1)
    free = [p for p in spec.pairs if p[0] not in options and p[2] not in options]
    a, x, b, y = rng.choice(free)
    return {**options, a: x, b: y}, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fields", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    spec = generate(args.fields, args.seed)
    write(spec, args.out)
    print(
        f"wrote {args.out}: {args.fields} fields, "
        f"{spec.files['rules.toml'].count('[[rule]]')} rules, "
        f"{spec.files['preferences.toml'].count('[[preference]]')} preferences"
    )


if __name__ == "__main__":
    main()
