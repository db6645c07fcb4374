"""The pack's `[model_config]` table, checked and compiled: how a model's `config.json` maps to facts.

A data mapping from config keys to facts (constraints/README.md, "Model configs"): which file,
which keys, tests and value maps, the weight format by file pattern. Checked when the pack loads
(every problem a `PackProblem`), compiled once per pack for `solver.inputs.modelconfig`, which
reads a model with it. Knows no launcher: every key name and spelling is the pack's.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solver.bounded import PACKS_KEPT, Lru, digest_family
from solver.errors import Collector, PackProblem, pack_problems
from solver.model import Field, Pack, Scalar
from solver.values import same

__all__ = ["ModelConfigMap", "check_model_config_map", "compile_model_config_map"]

_TOP_KEYS = {"config", "nested", "files", "two_forms", "format", "facts"}
_FORMAT_KEYS = {"fact", "detect", "default"}
_DETECT_KEYS = {"glob", "value", "standalone", "facts"}
_TEST_KEYS = ("present", "missing", "above", "equals", "contains", "differ")
_TEST_NAMES = ", ".join(_TEST_KEYS)
_VALUE_KEYS = {"value", "detail", "parts", "map", "closed", "fallback", "fallback_note", "absent", "divides"}
_FACT_KEYS = {*_VALUE_KEYS, *_TEST_KEYS, "every", "unless", "then", "otherwise"}

_MISSING: Any = object()

# Reports one problem of the table: (where, message).
_Bad = Callable[[str, str], None]


# --- the compiled table -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Tests:
    """Boolean tests over config keys; the group holds when any one test holds (`every`: when
    each one does, every key named present: a shape of several keys, such as an MLA layer's)."""

    present: tuple[str, ...] = ()
    # `missing`: the key is not written at all (a null is written), so the config class's own
    # default applies, which a launcher reading the loaded config sees.
    missing: tuple[str, ...] = ()
    above: tuple[tuple[str, float], ...] = ()
    equals: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()
    contains: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()
    differ: tuple[tuple[str, str], ...] = ()
    every: bool = False


@dataclass(frozen=True)
class _FactRule:
    """How one fact is read: a value (`value` keys) or a boolean (`present`, `above`, ... tests)."""

    fact: str
    keys: tuple[str, ...] = ()
    detail: tuple[str, ...] = ()
    # `parts`: a table of per-part objects (the first of `part_tables` found) whose `part_key`
    # values qualify `map` further ("method/detail/part"), e.g. a mixed checkpoint's layers.
    part_tables: tuple[str, ...] = ()
    part_key: str = ""
    mapping: dict[str, Scalar] = field(default_factory=dict)
    # `closed = true`: only the map's spellings (these, as the pack writes them) are read; any
    # other value is refused naming them, not matched against the fact's own values, unless the
    # entry has a `fallback`: then it is read as that, as the launcher reads it, and a notice
    # says so (`fallback_note`: what the launcher does, in the pack's words).
    closed: tuple[str, ...] = ()
    fallback: Scalar | None = None
    fallback_note: str = ""
    absent: Scalar | None = None
    divides: bool = False  # the fact is the largest domain value dividing the key's integer
    tests: _Tests | None = None
    unless: _Tests | None = None
    then: Scalar | None = None
    otherwise: Scalar | None = None


@dataclass(frozen=True)
class _Detect:
    glob: str
    value: Scalar
    standalone: bool
    implies: dict[str, Scalar]


@dataclass(frozen=True)
class _Format:
    fact: str
    detect: tuple[_Detect, ...]
    default: Scalar | None


@dataclass(frozen=True)
class ModelConfigMap:
    """A pack's `[model_config]` table, checked against the pack's facts and domains."""

    config: str = "config.json"
    nested: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    # Keys a launcher reads in either of two forms, an object or a single value (ModelOpt's
    # `kv_cache_scheme`: {"num_bits": 8, ...} or "FP8"): a test through one that holds a single
    # value fails, and a `value` entry passes over one that holds an object, without a problem.
    two_forms: frozenset[str] = frozenset()
    format: _Format | None = None
    # In table order; a fact given a list of entries has several, tried in order (the first
    # that gives a value decides).
    facts: tuple[_FactRule, ...] = ()


_COMPILED: Lru[str, ModelConfigMap] = Lru(PACKS_KEPT, family=digest_family)  # by pack digest


def check_model_config_map(pack: Pack) -> list[PackProblem]:
    """Every problem in the pack's `[model_config]` table (empty when it is usable)."""
    problems = pack_problems(pack.name)
    _compile(pack, problems)
    return problems.problems


def compile_model_config_map(pack: Pack) -> ModelConfigMap:
    """The pack's checked `[model_config]` table; `PackError` lists every problem in it."""
    found = _COMPILED.get(pack.digest) if pack.digest else None
    if found is not None:
        return found
    problems = pack_problems(pack.name)
    compiled = _compile(pack, problems)
    problems.check()
    if pack.digest:
        _COMPILED.put(pack.digest, compiled)
    return compiled


def _compile(pack: Pack, problems: Collector[PackProblem]) -> ModelConfigMap:
    raw = pack.model_config_map
    where = "model_config"

    def bad(place: str, message: str) -> None:
        problems.add(PackProblem(place, message))

    for key in raw:
        if key not in _TOP_KEYS:
            bad(where, f"unknown key {key!r} (expected {', '.join(sorted(_TOP_KEYS))})")
    config = raw.get("config", "config.json")
    if not _is_file_name(config):
        bad(f"{where}.config", 'must be a file name such as "config.json"')
        config = "config.json"
    nested: list[str] = []
    for path in _str_list(raw.get("nested", []), f"{where}.nested", bad):
        if _path_problem(path):
            bad(f"{where}.nested", f"{path!r}: {_path_problem(path)}")
        else:
            nested.append(path)
    files: dict[str, str] = {}
    table = raw.get("files", {})
    if not isinstance(table, dict):
        bad(f"{where}.files", 'must be a table of alias = "file name"')
    else:
        for alias, name in table.items():
            if not _is_file_name(name):
                bad(f"{where}.files.{alias}", "must be a file name in the model directory")
            elif "." in alias:
                bad(f"{where}.files.{alias}", "an alias is a plain name (no dots)")
            else:
                files[alias] = name
    two_forms = _paths(raw.get("two_forms", []), f"{where}.two_forms", bad)
    fmt = _compile_format(pack, raw.get("format"), bad)
    rules: list[_FactRule] = []
    facts = raw.get("facts", {})
    if not isinstance(facts, dict):
        bad(f"{where}.facts", "must be a table of [model_config.facts.FACT] tables")
        facts = {}
    for name, body in facts.items():
        rules.extend(_compile_entries(pack, name, body, bad))
    return ModelConfigMap(
        config=config,
        nested=tuple(nested),
        files=files,
        two_forms=frozenset(two_forms),
        format=fmt,
        facts=tuple(rules),
    )


def _compile_format(pack: Pack, raw: Any, bad: _Bad) -> _Format | None:
    where = "model_config.format"
    if raw is None:
        return None
    if not isinstance(raw, dict):
        bad(where, "must be a table")
        return None
    for key in raw:
        if key not in _FORMAT_KEYS:
            bad(where, f"unknown key {key!r} (expected {', '.join(sorted(_FORMAT_KEYS))})")
    target = _fact_field(pack, raw.get("fact"), where, bad)
    if target is None:
        return None
    default = raw.get("default")
    if default is not None and not _in_domain(target, default):
        bad(f"{where}.default", _not_in_domain(target, default))
        default = None
    detects: list[_Detect] = []
    items = raw.get("detect", [])
    if not isinstance(items, list):
        bad(f"{where}.detect", "must be a list of { glob, value } tables")
        items = []
    for index, item in enumerate(items):
        place = f"{where}.detect[{index}]"
        if not isinstance(item, dict):
            bad(place, 'must be a table { glob = "*.ext", value = ... }')
            continue
        for key in item:
            if key not in _DETECT_KEYS:
                bad(place, f"unknown key {key!r} (expected {', '.join(sorted(_DETECT_KEYS))})")
        glob: Any = item.get("glob")
        value: Any = item.get("value")
        if not isinstance(glob, str) or not glob or "/" in glob:
            bad(place, 'glob must be a file-name pattern such as "*.gguf"')
            continue
        if not _in_domain(target, value):
            bad(place, _not_in_domain(target, value))
            continue
        standalone = item.get("standalone", False)
        if not isinstance(standalone, bool):
            bad(place, "standalone must be true or false")
            standalone = False
        implies: dict[str, Scalar] = {}
        extra = item.get("facts", {})
        if not isinstance(extra, dict):
            bad(place, "facts must be a table of FACT = value")
            extra = {}
        for name, fact_value in extra.items():
            other = _fact_field(pack, name, f"{place}.facts", bad)
            if other is None:
                continue
            if _in_domain(other, fact_value):
                implies[name] = fact_value
            else:
                bad(f"{place}.facts", _not_in_domain(other, fact_value))
        detects.append(_Detect(glob, value, standalone, implies))
    return _Format(fact=target.name, detect=tuple(detects), default=default)


def _compile_entries(pack: Pack, name: str, body: Any, bad: _Bad) -> list[_FactRule]:
    """One entry (a table), or a list of them tried in order: the first that gives a value
    decides, so an `otherwise` before the last entry would hide every entry after it."""
    if not isinstance(body, list):
        rule = _compile_fact(pack, name, body, bad, f"model_config.facts.{name}")
        return [rule] if rule is not None else []
    if not body:
        bad(f"model_config.facts.{name}", "an empty list of entries")
    rules: list[_FactRule] = []
    for index, entry in enumerate(body):
        where = f"model_config.facts.{name}[{index}]"
        rule = _compile_fact(pack, name, entry, bad, where)
        if rule is None:
            continue
        if index < len(body) - 1 and (rule.tests is None or rule.otherwise is not None):
            what = "a `value` entry" if rule.tests is None else "`otherwise`"
            bad(where, f"{what} always gives a value, so the entries after it are never tried; move it last")
        rules.append(rule)
    return rules


def _compile_fact(pack: Pack, name: str, body: Any, bad: _Bad, where: str) -> _FactRule | None:
    target = _fact_field(pack, name, where, bad)
    if target is None:
        return None
    if not isinstance(body, dict):
        bad(where, "must be a table")
        return None
    for key in body:
        if key not in _FACT_KEYS:
            close = difflib.get_close_matches(key, sorted(_FACT_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            bad(where, f"unknown key {key!r}{hint}")
    has_value = "value" in body
    has_tests = any(k in body for k in _TEST_KEYS)
    if has_value == has_tests:
        bad(
            where,
            f"give either `value` (read a key) or tests ({_TEST_NAMES}), not both and not neither",
        )
        return None
    checked: dict[str, Scalar | None] = {}
    for key in ("fallback", "absent", "then", "otherwise"):
        value = body.get(key)
        if value is not None and not _in_domain(target, value):
            bad(f"{where}.{key}", _not_in_domain(target, value))
            value = None
        checked[key] = value
    compile_entry = _compile_value_fact if has_value else _compile_test_fact
    return compile_entry(name, target, body, checked, where, bad)


def _compile_value_fact(
    name: str,
    target: Field,
    body: Mapping[str, Any],
    checked: Mapping[str, Scalar | None],
    where: str,
    bad: _Bad,
) -> _FactRule | None:
    """A `value` entry: the fact is read from a key of config.json (mapped, or as a size)."""
    for key in ("unless", "then", "otherwise"):
        if key in body:
            bad(where, f"`{key}` belongs to test entries, not to `value` entries")
    keys = _paths(body.get("value"), f"{where}.value", bad)
    detail = _paths(body.get("detail", []), f"{where}.detail", bad)
    part_tables, part_key = _parts(body.get("parts"), f"{where}.parts", bad)
    mapping: dict[str, Scalar] = {}
    raw_map = body.get("map", {})
    if not isinstance(raw_map, dict):
        bad(f"{where}.map", 'must be a table of "config value" = fact value')
        raw_map = {}
    for spelling, value in raw_map.items():
        if not _in_domain(target, value):
            bad(f"{where}.map", f"{spelling!r}: {_not_in_domain(target, value)}")
        elif spelling.lower() in mapping:
            bad(f"{where}.map", f"{spelling!r} is listed twice (keys ignore case)")
        else:
            mapping[spelling.lower()] = value
    if not keys:
        bad(f"{where}.value", "needs at least one key path")
        return None
    closed = body.get("closed", False)
    if not isinstance(closed, bool) or (closed and not mapping):
        bad(f"{where}.closed", "must be true or false, and true only with a map")
        closed = False
    note = body.get("fallback_note", "")
    if not isinstance(note, str) or (note and not (closed and checked["fallback"] is not None)):
        bad(f"{where}.fallback_note", "must be a sentence, and only with `closed = true` and a `fallback`")
        note = ""
    divides = body.get("divides", False)
    if not isinstance(divides, bool):
        bad(f"{where}.divides", "must be true or false")
        divides = False
    if divides and (
        mapping or detail or part_tables or not any(type(v) is int and v > 0 for v in target.domain)
    ):
        bad(f"{where}.divides", "needs a fact with positive integer values, and no map, detail or parts")
        divides = False
    return _FactRule(
        fact=name,
        keys=keys,
        detail=detail,
        part_tables=part_tables,
        part_key=part_key,
        mapping=mapping,
        closed=tuple(raw_map) if closed else (),
        fallback=checked["fallback"],
        fallback_note=note,
        absent=checked["absent"],
        divides=divides,
    )


def _compile_test_fact(
    name: str,
    target: Field,
    body: Mapping[str, Any],
    checked: Mapping[str, Scalar | None],
    where: str,
    bad: _Bad,
) -> _FactRule | None:
    """A test entry: the fact is `then` when the tests hold (and `unless` does not), else
    `otherwise`."""
    for key in ("detail", "parts", "map", "closed", "fallback", "fallback_note", "absent", "divides"):
        if key in body:
            bad(where, f"`{key}` belongs to `value` entries, not to test entries")
    if "every" in body and not isinstance(body["every"], bool):
        bad(f"{where}.every", "must be true or false")
    tests = _compile_tests(body, where, bad)
    unless = None
    if "unless" in body:
        if not isinstance(body["unless"], dict) or not body["unless"]:
            bad(f"{where}.unless", "must be a table of tests")
        else:
            for key in body["unless"]:
                if key not in (*_TEST_KEYS, "every"):
                    bad(f"{where}.unless", f"unknown test {key!r}")
            unless = _compile_tests(body["unless"], f"{where}.unless", bad)
    then = checked["then"]
    if then is None:
        if "then" in body:
            return None  # reported above: not a value of the fact
        if not _in_domain(target, True):
            bad(where, f"{name} is not a true/false fact: give `then`, its value when a test holds")
            return None
        then = True
    return _FactRule(fact=name, tests=tests, unless=unless, then=then, otherwise=checked["otherwise"])


def _compile_tests(body: Mapping[str, Any], where: str, bad: _Bad) -> _Tests:
    every = body.get("every") is True
    if every and not any(key in body for key in _TEST_KEYS):
        bad(f"{where}.every", f"needs tests to hold together ({_TEST_NAMES})")
    present = _paths(body.get("present", []), f"{where}.present", bad)
    missing = _paths(body.get("missing", []), f"{where}.missing", bad)
    above: list[tuple[str, float]] = []
    for path, limit in _path_table(body.get("above", {}), f"{where}.above", bad):
        if isinstance(limit, bool) or not isinstance(limit, int | float):
            bad(f"{where}.above", f"{path}: the threshold must be a number")
        else:
            above.append((path, float(limit)))
    lists: dict[str, list[tuple[str, tuple[Scalar, ...]]]] = {"equals": [], "contains": []}
    for key, out in lists.items():
        for path, values in _path_table(body.get(key, {}), f"{where}.{key}", bad):
            if (
                not isinstance(values, list)
                or not values
                or not all(isinstance(v, str | int | bool) for v in values)
            ):
                bad(f"{where}.{key}", f"{path}: give a non-empty list of values")
            else:
                out.append((path, tuple(values)))
    differ: list[tuple[str, str]] = []
    pairs = body.get("differ", [])
    if not isinstance(pairs, list):
        bad(f"{where}.differ", "must be a list of [key, key] pairs")
        pairs = []
    for pair in pairs:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(p, str) and not _path_problem(p) for p in pair)
        ):
            bad(f"{where}.differ", f"{pair!r} is not a [key, key] pair")
        else:
            differ.append((pair[0], pair[1]))
    return _Tests(
        present=present,
        missing=missing,
        above=tuple(above),
        equals=tuple(lists["equals"]),
        contains=tuple(lists["contains"]),
        differ=tuple(differ),
        every=every,
    )


def _fact_field(pack: Pack, name: Any, where: str, bad: _Bad) -> Field | None:
    if not isinstance(name, str):
        bad(where, "needs `fact`, the name of one of the pack's facts")
        return None
    target = pack.fields.get(name)
    if target is None:
        close = difflib.get_close_matches(name, list(pack.fields), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        bad(where, f"unknown field {name!r}{hint}")
        return None
    if target.kind != "fact":
        bad(where, f"{name} is an option; a model config only gives facts")
        return None
    return target


def _str_list(raw: Any, where: str, bad: _Bad) -> list[str]:
    if isinstance(raw, str):
        return [raw]
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        bad(where, "must be a list of strings")
        return []
    return list(raw)


def _parts(raw: Any, where: str, bad: _Bad) -> tuple[tuple[str, ...], str]:
    """`parts = { tables = ["key.path", ...], key = "name" }`: (table paths, the key read in each part)."""
    if raw is None:
        return (), ""
    if not isinstance(raw, dict) or set(raw) != {"tables", "key"}:
        bad(where, 'must be { tables = ["key.path", ...], key = "name" }')
        return (), ""
    key = raw["key"]
    if not isinstance(key, str) or not key or "." in key:
        bad(f"{where}.key", "must be one key name (no dots)")
        return (), ""
    tables = _paths(raw["tables"], f"{where}.tables", bad)
    if not tables:
        bad(f"{where}.tables", "needs at least one key path")
    return tables, key


def _paths(raw: Any, where: str, bad: _Bad) -> tuple[str, ...]:
    out = []
    for path in _str_list(raw, where, bad):
        problem = _path_problem(path)
        if problem:
            bad(where, f"{path!r}: {problem}")
        else:
            out.append(path)
    return tuple(out)


def _path_table(raw: Any, where: str, bad: _Bad) -> list[tuple[str, Any]]:
    if not isinstance(raw, dict):
        bad(where, 'must be a table of "key.path" = ...')
        return []
    out = []
    for path, value in raw.items():
        problem = _path_problem(path)
        if problem:
            bad(where, f"{path!r}: {problem}")
        else:
            out.append((path, value))
    return out


def _path_problem(path: str) -> str | None:
    if not path or any(not part or part != part.strip() for part in path.split(".")):
        return 'a key path is dot-separated names, e.g. "quantization_config.quant_method"'
    return None


def _is_file_name(name: Any) -> bool:
    return isinstance(name, str) and bool(name) and Path(name).name == name and name not in {".", ".."}


def _in_domain(target: Field, value: Any) -> bool:
    return any(same(value, v) for v in target.domain)


def _not_in_domain(target: Field, value: Any) -> str:
    shown = ", ".join(str(v) for v in target.domain[:12])
    return f"{value!r} is not a value of {target.name} ({shown}{', ...' if len(target.domain) > 12 else ''})"
