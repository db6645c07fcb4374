"""Read a pack directory (TOML) into a checked `Pack`, reporting every problem at once.

A pack is untrusted data: nothing in it runs. Conditions are parsed by `solver.expr`; sizes are
bounded so a hostile pack ends in a `PackError`, not in a hang or a memory blow-up.
Imports the standard library, `solver.model`, `solver.expr` and `solver.errors`; never networkx or
python-constraint.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from solver.errors import DependencyCycle, PackError, PackProblem
from solver.expr import Condition, ExprError, parse, rule_condition
from solver.model import Field, Pack, Preference, Rule, Scalar

__all__ = ["MAX_DOMAIN", "MAX_FIELDS", "MAX_RULES", "PackSemantics", "load_directory", "semantics"]

MAX_FIELDS = 20_000
MAX_RULES = 200_000
MAX_DOMAIN = 1_000
MAX_FILE_BYTES = 16 * 1024 * 1024

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SET_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
_FILE_KEYS = {"pack", "sets", "field", "rule", "preference", "model_config", "lint"}


@dataclass(frozen=True)
class PackSemantics:
    """The parsed conditions of a pack, kept beside it so they are parsed once."""

    rules: dict[str, Condition]
    whens: dict[str, Condition]
    preferences: dict[str, Condition | None]


_SEMANTICS: dict[str, PackSemantics] = {}
_CACHE: dict[str, Pack] = {}


def semantics(pack: Pack) -> PackSemantics:
    """The parsed conditions of a loaded (or hand-built) pack."""
    found = _SEMANTICS.get(pack.digest) if pack.digest else None
    if found is None:
        problems: list[PackProblem] = []
        found = _parse_conditions(pack, problems)
        if problems:
            raise PackError(problems, pack.name)
        if pack.digest:
            _SEMANTICS[pack.digest] = found
    return found


def load_directory(directory: str | Path) -> Pack:
    """Load and check the pack in `directory`; raise one `PackError` listing every problem."""
    root = Path(directory)
    # The digest covers the raw bytes, so a pack seen before (in this process, or in the on-disk
    # cache) is found without parsing or checking anything again.
    raw = _read_raw(root)
    if raw is not None:
        known = _known(hashlib.sha256(b"".join(raw)).hexdigest(), root)
        if known is not None:
            return known
    problems: list[PackProblem] = []
    manifest = root / "pack.toml"
    docs = _read_files(root, manifest, problems)
    if docs is None:
        raise PackError(problems, root.name)
    digest = hashlib.sha256(b"".join(raw for _, raw, _ in docs)).hexdigest()
    cached = _CACHE.get(digest)
    if cached is not None:
        return cached
    pack = _assemble(root, docs, digest, problems)
    if problems:
        cycles = [p for p in problems if p.where == "depends_on cycle"]
        raise (DependencyCycle if cycles and len(cycles) == len(problems) else PackError)(
            problems, pack.name if pack else root.name
        )
    assert pack is not None
    _CACHE[digest] = pack
    _store(pack)
    return pack


def _read_raw(root: Path) -> list[bytes] | None:
    """The bytes of pack.toml and of the files it lists, or None at the first irregularity (the
    full load then reports it)."""
    try:
        head = (root / "pack.toml").read_bytes()
        files = tomllib.loads(head.decode("utf-8"))["pack"]["files"]
        out = [head]
        for name in files:
            path = root / name
            if (
                not isinstance(name, str)
                or Path(name).name != name
                or not name.endswith(".toml")
                or path.stat().st_size > MAX_FILE_BYTES
            ):
                return None
            out.append(path.read_bytes())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return None
    return out


def _known(digest: str, root: Path) -> Pack | None:
    """The pack with this digest from the process cache or the on-disk cache, if either has it."""
    pack = _CACHE.get(digest)
    if pack is not None:
        return pack
    from solver import cache

    entry = cache.read(digest)
    if entry is None or not isinstance(entry.get("pack"), dict):
        return None
    try:
        pack = Pack.model_validate({**entry["pack"], "digest": digest, "directory": str(root)})
    except ValidationError:
        return None
    _CACHE[digest] = pack
    return pack


def _store(pack: Pack) -> None:
    """Put a checked pack in the on-disk cache, if it survives the JSON round trip unchanged."""
    from solver import cache

    doc = pack.model_dump(mode="json", exclude={"digest", "directory"})
    again = Pack.model_validate({**doc, "digest": pack.digest, "directory": pack.directory})
    if again == pack:
        cache.write(pack.digest, pack=doc)


def _read_files(
    root: Path, manifest: Path, problems: list[PackProblem]
) -> list[tuple[str, bytes, dict[str, Any]]] | None:
    if not root.is_dir():
        problems.append(PackProblem("pack", f"{root} is not a directory"))
        return None
    head = _read_toml(manifest, problems)
    if head is None:
        if not manifest.is_file():
            problems[-1:] = [PackProblem("pack", f"no pack.toml in {root}", "pack.toml")]
        return None
    raw_manifest, doc = head
    meta = doc.get("pack")
    if not isinstance(meta, dict):
        problems.append(PackProblem("pack", "pack.toml needs a [pack] table", "pack.toml"))
        return None
    files = meta.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        problems.append(PackProblem("pack.files", "must be a list of file names", "pack.toml"))
        return None
    docs = [("pack.toml", raw_manifest, doc)]
    for name in files:
        path = root / name
        if Path(name).name != name or not name.endswith(".toml"):
            problems.append(PackProblem("pack.files", f"{name!r} is not a .toml file name", "pack.toml"))
            continue
        loaded = _read_toml(path, problems)
        if loaded is not None:
            docs.append((name, loaded[0], loaded[1]))
    return docs


def _read_toml(path: Path, problems: list[PackProblem]) -> tuple[bytes, dict[str, Any]] | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            problems.append(PackProblem("file", f"larger than {MAX_FILE_BYTES} bytes", path.name))
            return None
        raw = path.read_bytes()
        return raw, tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        problems.append(PackProblem("file", "listed in pack.toml but missing", path.name))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(PackProblem("file", f"cannot be read: {exc}", path.name))
    except tomllib.TOMLDecodeError as exc:
        problems.append(PackProblem("file", f"not valid TOML: {exc}", path.name))
    return None


def _assemble(
    root: Path,
    docs: list[tuple[str, bytes, dict[str, Any]]],
    digest: str,
    problems: list[PackProblem],
) -> Pack | None:
    meta = docs[0][2]["pack"]
    name, version = meta.get("name"), meta.get("version")
    if not isinstance(name, str) or not name:
        problems.append(PackProblem("pack.name", "missing or not a string", "pack.toml"))
        name = root.name
    if not isinstance(version, str) or not version:
        problems.append(PackProblem("pack.version", "missing or not a string", "pack.toml"))
        version = "0"
    fields: dict[str, Field] = {}
    sets: dict[str, tuple[Scalar, ...]] = {}
    rules: list[Rule] = []
    prefs: list[Preference] = []
    model_config: dict[str, Any] = {}
    acknowledged: dict[str, tuple[str, ...]] = {}
    for file, _, doc in docs:
        for key in doc:
            if key not in _FILE_KEYS:
                problems.append(
                    PackProblem(
                        key, f"unknown table [{key}] (expected one of {', '.join(sorted(_FILE_KEYS))})", file
                    )
                )
        _collect_sets(doc.get("sets", {}), file, sets, problems)
        _collect_fields(doc.get("field", {}), file, fields, problems)
        rules += _collect(doc.get("rule", []), Rule, "rule", file, problems)
        prefs += _collect(doc.get("preference", []), Preference, "preference", file, problems)
        section = doc.get("model_config", {})
        if isinstance(section, dict):
            model_config.update(section)
        else:
            problems.append(PackProblem("model_config", "must be a table", file))
        _collect_acknowledged(doc.get("lint", {}), file, acknowledged, problems)
    if len(fields) > MAX_FIELDS or len(rules) + len(prefs) > MAX_RULES:
        problems.append(
            PackProblem(
                "pack", f"too large: at most {MAX_FIELDS} fields and {MAX_RULES} rules and preferences"
            )
        )
        return None
    try:
        pack = Pack(
            name=name,
            version=version,
            description=str(meta.get("description", "")),
            fields=fields,
            rules=tuple(rules),
            preferences=tuple(prefs),
            sets=sets,
            model_config_map=model_config,
            acknowledged=acknowledged,
            digest=digest,
            directory=str(root),
        )
    except ValidationError as exc:
        problems.append(PackProblem("pack", _validation_text(exc), "pack.toml"))
        return None
    _check_ids(pack, problems)
    _check_references(pack, problems)
    _check_cycles(pack, problems)
    found = _parse_conditions(pack, problems)
    if not problems:
        _SEMANTICS[digest] = found
    return pack


def _collect_sets(
    table: Any, file: str, sets: dict[str, tuple[Scalar, ...]], problems: list[PackProblem]
) -> None:
    if not isinstance(table, dict):
        problems.append(PackProblem("sets", "must be a table of NAME = [values]", file))
        return
    for set_name, values in table.items():
        if not _SET_NAME.match(set_name):
            problems.append(PackProblem(f"set {set_name}", "set names are UPPER_CASE", file))
        elif set_name in sets:
            problems.append(PackProblem(f"set {set_name}", "declared twice", file))
        elif (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str | int | bool) for v in values)
        ):
            problems.append(PackProblem(f"set {set_name}", "must be a non-empty list of literals", file))
        else:
            sets[set_name] = tuple(values)


def _collect_acknowledged(
    table: Any, file: str, acknowledged: dict[str, tuple[str, ...]], problems: list[PackProblem]
) -> None:
    """`[lint.acknowledged]`: subject = ["CODE: reason", ...]. Whether each entry is well formed
    and still matches a finding is lint's business (CS161-CS163); here only the shape."""
    if not isinstance(table, dict) or set(table) - {"acknowledged"}:
        problems.append(PackProblem("lint", "must be a table with only [lint.acknowledged]", file))
        return
    entries = table.get("acknowledged", {})
    if not isinstance(entries, dict):
        problems.append(PackProblem("lint.acknowledged", "must be a table of SUBJECT = [entries]", file))
        return
    for subject, items in entries.items():
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            problems.append(PackProblem(f"lint.acknowledged {subject}", "must be a list of strings", file))
        elif subject in acknowledged:
            problems.append(PackProblem(f"lint.acknowledged {subject}", "acknowledged twice", file))
        else:
            acknowledged[subject] = tuple(items)


def _collect_fields(table: Any, file: str, fields: dict[str, Field], problems: list[PackProblem]) -> None:
    if not isinstance(table, dict):
        problems.append(PackProblem("field", "must be a table of [field.NAME] tables", file))
        return
    for field_name, body in table.items():
        where = f"field {field_name}"
        if not _FIELD_NAME.match(field_name):
            problems.append(PackProblem(where, "field names are identifiers", file))
            continue
        if field_name in fields:
            problems.append(PackProblem(where, f"declared twice (first in {fields[field_name].file})", file))
            continue
        if not isinstance(body, dict):
            problems.append(PackProblem(where, "must be a table", file))
            continue
        try:
            field = Field.model_validate({**body, "name": field_name, "file": file})
        except ValidationError as exc:
            problems.append(PackProblem(where, _validation_text(exc), file))
            continue
        problems += [PackProblem(where, msg, file) for msg in _domain_problems(field)]
        fields[field_name] = field


def _domain_problems(field: Field) -> list[str]:
    out: list[str] = []
    domain = field.domain
    if not domain:
        return ["the domain is empty"]
    if len(domain) > MAX_DOMAIN:
        out.append(f"the domain has {len(domain)} values; at most {MAX_DOMAIN}")
    kinds = {type(v) for v in domain}
    if len(kinds) > 1:
        out.append("domain values must all be strings, all integers or all booleans")
    if len(set(map(repr, domain))) != len(domain):
        out.append("the domain lists a value twice")
    if field.auto is not None and any(field.auto == v for v in domain):
        out.append(f"auto spelling {field.auto!r} is also a domain value")
    if field.absent is not None and not any(
        field.absent == v and type(field.absent) is type(v) for v in domain
    ):
        out.append(f"absent value {field.absent!r} is not a domain value")
    for key in field.labels:
        if key not in {str(v) for v in domain}:
            out.append(f"label for {key!r}, which is not a domain value")
    if field.env and field.kind != "fact":
        out.append("an environment field must be a fact")
    return out


def _collect(items: Any, model: type[Any], what: str, file: str, problems: list[PackProblem]) -> list[Any]:
    if not isinstance(items, list):
        problems.append(PackProblem(what, f"use [[{what}]] entries", file))
        return []
    out = []
    for index, body in enumerate(items):
        label = body.get("id", f"#{index + 1}") if isinstance(body, dict) else f"#{index + 1}"
        where = f"{what} {label}"
        if not isinstance(body, dict):
            problems.append(PackProblem(where, "must be a table", file))
            continue
        try:
            item = model.model_validate({**body, "file": file})
        except ValidationError as exc:
            problems.append(PackProblem(where, _validation_text(exc), file))
            continue
        for attr in ("because", "source"):
            if not getattr(item, attr).strip():
                problems.append(PackProblem(where, f"`{attr}` is empty", file))
        out.append(item)
    return out


def _check_ids(pack: Pack, problems: list[PackProblem]) -> None:
    seen: dict[str, str] = {}
    items: list[Rule | Preference] = [*pack.rules, *pack.preferences]
    for item in items:
        kind = "rule" if isinstance(item, Rule) else "preference"
        if not _ID.match(item.id):
            problems.append(PackProblem(f"{kind} {item.id}", "ids are letters, digits, - _ . : +", item.file))
        if item.id in seen:
            problems.append(
                PackProblem(f"{kind} {item.id}", f"duplicate id (first in {seen[item.id]})", item.file)
            )
        seen.setdefault(item.id, item.file)
    for set_name in pack.sets:
        if set_name in pack.fields:
            problems.append(PackProblem(f"set {set_name}", "has the same name as a field"))


def _check_references(pack: Pack, problems: list[PackProblem]) -> None:
    fields = pack.fields
    for field in fields.values():
        for dep in field.depends_on:
            if dep not in fields:
                problems.append(
                    PackProblem(
                        f"field {field.name}",
                        f"depends_on unknown field {dep!r}{_hint(dep, fields)}",
                        field.file,
                    )
                )
    for pref in pack.preferences:
        where = f"preference {pref.id}"
        target = fields.get(pref.field)
        if target is None:
            problems.append(
                PackProblem(where, f"unknown field {pref.field!r}{_hint(pref.field, fields)}", pref.file)
            )
            continue
        problems += [PackProblem(where, msg, pref.file) for msg in _values_problems(target, pref.prefer)]
        if not pref.prefer and pref.same_as is None:
            problems.append(PackProblem(where, "needs `prefer` values or `same_as`", pref.file))
        if pref.same_as is not None:
            other = fields.get(pref.same_as)
            if other is None:
                problems.append(
                    PackProblem(where, f"same_as names unknown field {pref.same_as!r}", pref.file)
                )
            elif {type(v) for v in other.domain} != {type(v) for v in target.domain}:
                problems.append(
                    PackProblem(where, f"same_as {pref.same_as} has another value type", pref.file)
                )
    for rule in pack.rules:
        where = f"rule {rule.id}"
        if rule.adjusts is None:
            if rule.adjust_to:
                problems.append(PackProblem(where, "adjust_to without adjusts", rule.file))
            continue
        target = fields.get(rule.adjusts)
        if target is None:
            problems.append(PackProblem(where, f"adjusts unknown field {rule.adjusts!r}", rule.file))
            continue
        if rule.severity != "error":
            problems.append(PackProblem(where, "an adjustment must have severity error", rule.file))
        problems += [PackProblem(where, msg, rule.file) for msg in _values_problems(target, rule.adjust_to)]


def _values_problems(field: Field, values: Iterable[Scalar]) -> list[str]:
    out = []
    for value in values:
        if not any(value == v and type(value) is type(v) for v in field.domain):
            out.append(f"{value!r} is not a value of {field.name}")
    return out


def _check_cycles(pack: Pack, problems: list[PackProblem]) -> None:
    """depends_on must be acyclic; report each cycle as the whole chain."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for dep in pack.fields[name].depends_on:
            if dep not in pack.fields:
                continue
            if state.get(dep) == 1:
                chain = [*stack[stack.index(dep) :], dep]
                problems.append(PackProblem("depends_on cycle", " -> ".join(chain)))
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[name] = 2

    for name in pack.fields:
        if name not in state:
            visit(name)


def _parse_conditions(pack: Pack, problems: list[PackProblem]) -> PackSemantics:
    fields, sets = pack.fields, pack.sets
    for set_name, values in sets.items():
        if len({type(v) for v in values}) > 1:
            problems.append(PackProblem(f"set {set_name}", "mixes value types"))
    rules: dict[str, Condition] = {}
    whens: dict[str, Condition] = {}
    prefs: dict[str, Condition | None] = {}
    for rule in pack.rules:
        try:
            rules[rule.id] = rule_condition(rule.when, rule.require, rule.forbid, fields, sets)
            if rule.when is not None:
                whens[rule.id] = parse(rule.when, fields, sets)
        except ExprError as exc:
            problems.append(PackProblem(f"rule {rule.id}", str(exc), rule.file))
            continue
        if rule.adjusts is not None and rule.adjusts not in rules[rule.id].fields:
            problems.append(
                PackProblem(
                    f"rule {rule.id}", f"adjusts {rule.adjusts}, which the rule does not read", rule.file
                )
            )
    for pref in pack.preferences:
        try:
            prefs[pref.id] = parse(pref.when, fields, sets) if pref.when is not None else None
        except ExprError as exc:
            problems.append(PackProblem(f"preference {pref.id}", str(exc), pref.file))
    return PackSemantics(rules=rules, whens=whens, preferences=prefs)


def _hint(name: str, known: Mapping[str, Any]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)
