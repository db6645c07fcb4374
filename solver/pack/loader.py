"""Read a pack directory (TOML) into a checked `Pack`, reporting every problem at once.

A pack is untrusted data: nothing in it runs. Its files are read with bounded sizes and nesting
(`solver.pack.files`); each table is validated into its record here (fields, rules, preferences,
the manifest's example and launcher; named sets and conditions in `solver.pack.named`, which also
writes each named condition out where it is read), with did-you-mean hints and each problem placed
at its line (`_Locator`); the checks across tables and the conditions are in
`solver.pack.crosscheck`. No check recurses over the pack's data, so a hostile pack ends in a
`PackError`, not in a hang. A checked pack is kept by digest, in memory and on disk
(`solver.pack.cache`). Imports the standard library, `solver.model`, `solver.errors` and
`solver.pack`; never networkx or python-constraint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solver import frozen
from solver.bounded import PACKS_KEPT, Lru, digest_family
from solver.errors import Collector, PackError, PackProblem, pack_problems
from solver.model import (
    AssumedGroup,
    Field,
    Launcher,
    Pack,
    Preference,
    RecordInvalid,
    Rule,
    Scalar,
)
from solver.pack import prebuilt
from solver.pack.crosscheck import (
    PackSemantics,
    check_cycles,
    check_detect,
    check_flags,
    check_ids,
    check_model_config,
    check_references,
    parse_conditions,
)
from solver.pack.domains import domain_problems
from solver.pack.files import (
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_PACK_BYTES,
    MAX_TOML_NESTING,
    RefusedFile,
    pack_digest,
    parse_toml,
    read_bounded,
    read_files,
)
from solver.pack.named import collect_conditions, collect_sets, expand_conditions, expand_records
from solver.pack.parser_flags import check_parser_flags, collect_parser_flags
from solver.pack.text import FileIndex, did_you_mean, index_of

if TYPE_CHECKING:
    from solver.budget import Budget

__all__ = [
    "MAX_DOMAIN",
    "MAX_FIELDS",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_PACK_BYTES",
    "MAX_RULES",
    "MAX_TOML_NESTING",
    "PackSemantics",
    "RefusedFile",
    "keep_semantics",
    "load_directory",
    "read_bounded",
    "semantics",
]

MAX_FIELDS = 20_000
MAX_RULES = 200_000
MAX_DOMAIN = 1_000

_FIELD_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"  # (compiled where used: files only)
_FILE_KEYS = {
    "pack",
    "sets",
    "conditions",
    "field",
    "rule",
    "preference",
    "model_config",
    "lint",
    "launcher_flags",
}


# By digest, the most recently used kept (widened packs, one per unlisted value a request pins,
# must not accumulate in a long-lived process).
_SEMANTICS: Lru[str, PackSemantics] = Lru(PACKS_KEPT, family=digest_family, sized=True)
_CACHE: Lru[str, Pack] = Lru(PACKS_KEPT, family=digest_family, sized=True)


def semantics(pack: Pack) -> PackSemantics:
    """The parsed conditions of a loaded (or hand-built) pack."""
    found = _SEMANTICS.get(pack.digest) if pack.digest else None
    if found is None and pack.digest:
        from solver.pack import condcache

        found = condcache.recall(pack.digest)
        if found is not None:
            _SEMANTICS.put(pack.digest, found)
    if found is None:
        problems = pack_problems(pack.name)
        found = parse_conditions(pack, problems)
        problems.check()
        if pack.digest:
            _SEMANTICS.put(pack.digest, found)
    return found


def keep_semantics(pack: Pack, found: PackSemantics) -> None:
    """Keep the conditions of a pack made from a loaded one (`solver.pack.given.for_request`),
    which parsed only what it changed."""
    if pack.digest:
        _SEMANTICS.put(pack.digest, found)


def _known(digest: str, root: Path) -> Pack | None:
    """The pack with this digest from the process cache, a shipped pack's prebuilt form or the disk
    cache, naming `root` as its directory."""
    pack = _CACHE.get(digest)
    if pack is not None:
        # Kept by content: the same bytes read from another directory are that directory's pack
        # (a conflict's `--pack DIR`, the shipped compiled count read beside it), not the first
        # directory this process read them from.
        return pack if pack.directory == str(root) else frozen.replace(pack, directory=str(root))
    from solver.pack import cache

    pack = prebuilt.recall(digest, root, _SEMANTICS.put)
    try:
        pack = pack or Pack.from_json((cache.read(digest) or {})["pack"], digest=digest, directory=str(root))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    _CACHE.put(digest, pack)
    return pack


def _store(pack: Pack) -> None:
    """Put a checked pack in the on-disk cache, if it survives the JSON round trip unchanged."""
    from solver.pack import cache

    doc = pack.model_dump(mode="json", exclude={"digest", "directory"})
    try:
        again = Pack.from_json(doc, digest=pack.digest, directory=pack.directory)
    except (KeyError, TypeError, ValueError, AttributeError):
        return
    if again == pack:
        cache.write(pack.digest, pack=doc)


def load_directory(directory: str | Path, *, budget: Budget | None = None, fresh: bool = False) -> Pack:
    """Load and check the pack in `directory` (`fresh`: from its files, neither cached nor prebuilt);
    raise one `PackError` listing every problem.

    `budget` is charged a step per `LOAD_BYTES_PER_STEP` bytes of the pack's files once they are
    read (bounded) and before anything is parsed, cached or not: a command's total that runs out
    here ends it before the expensive part (`CommandBudgetExceeded`)."""
    root = Path(directory)
    name = root.name
    # Every problem of every file, reported at once (one `PackError`, or `DependencyCycle` when
    # cycles are all there is, named by `name` as it is when raised: the manifest's name once
    # the pack is assembled); the checks below `add` to the collector.
    problems = pack_problems(lambda: name)
    found = read_files(root, problems, None if fresh else lambda head: prebuilt.listed(root, head))
    if found is None:
        raise PackError(problems.problems, root.name)
    manifest, pack_name, files = found
    if budget is not None:
        budget.charge_loading(sum(len(raw) for _, raw in files), pack_name)
    # The digest covers the name and bytes of every file, so a pack seen before (in this process,
    # or in the on-disk cache) is found without parsing or checking anything again. A pack with a
    # file that could not be read is never looked up: the cache must not hide a broken file.
    digest = pack_digest(files)
    if not problems and not fresh:
        known = _known(digest, root)
        if known is not None:
            return known
    if manifest is None:  # listed by a prebuilt form whose digest is not these files'
        manifest = parse_toml("pack.toml", files[0][1], problems)
        if manifest is None:
            raise PackError(problems.problems, root.name)
    docs = [("pack.toml", manifest)]
    where = _Locator(files)
    for name, raw in files[1:]:
        doc = parse_toml(name, raw, problems)
        if doc is not None:
            docs.append((name, doc))
        else:  # its names are declared, only broken: their uses elsewhere are not problems too
            where.broken.update(where.index(name).declared())
    pack = _assemble(root, docs, digest, problems, where)
    name = pack.name if pack else root.name
    problems.check(lambda found: where.finish(found, pack))
    assert pack is not None
    _CACHE.put(digest, pack)
    _store(pack)
    return pack


class _Locator:
    """Positions and cascades for one load: the text index of each file (built on first use,
    only for a pack with problems), and the names whose declaration failed."""

    def __init__(self, files: list[tuple[str, bytes]]) -> None:
        self._raw = dict(files)
        self._indexes: dict[str, FileIndex] = {}
        self.broken: set[str] = set()

    def index(self, file: str) -> FileIndex:
        found = self._indexes.get(file)
        if found is None:
            found = self._indexes[file] = index_of(self._raw.get(file, b"").decode("utf-8", "replace"))
        return found

    def line(self, file: str, where: str, key: str | None = None) -> int | None:
        return self.index(file).line_of(where, key) if file in self._raw else None

    def finish(self, problems: list[PackProblem], pack: Pack | None) -> list[PackProblem]:
        """The problems to report: cascades of a failed declaration left out, a did-you-mean
        for an unknown name, and each placed at its line."""
        known = [*pack.fields, *pack.sets, *pack.conditions] if pack is not None else []
        out: list[PackProblem] = []
        hints = 0
        for problem in problems:
            unknown = re.search(_UNKNOWN_NAME, problem.message)
            message = problem.message
            if unknown is not None:
                if unknown.group(1) in self.broken:
                    continue  # its declaration failed, and that failure is reported
                if hints < _MAX_HINTS and "did you mean" not in message:
                    hints += 1
                    message = _add_hint(message, unknown, known)
            line = problem.line
            if line is None and problem.file:
                line = self.line(problem.file, problem.where)
            out.append(PackProblem(problem.where, message, problem.file, line))
        return out


# How the checks below name a field or set that is not declared (one pattern, so that a
# cascade of a failed declaration is recognised wherever it shows).
_UNKNOWN_NAME = r"unknown (?:name|field) '([A-Za-z_][A-Za-z0-9_]*)'"
_MAX_HINTS = 200  # difflib over the pack's names per hint: bounded for a hostile pack


def _add_hint(message: str, unknown: re.Match[str], known: list[str]) -> str:
    end = unknown.end()  # "unknown name 'x'" + " (did you mean 'y'?)" + ": not a field ..."
    return message[:end] + did_you_mean(unknown.group(1), known) + message[end:]


def _assemble(
    root: Path,
    docs: list[tuple[str, dict[str, Any]]],
    digest: str,
    problems: Collector[PackProblem],
    where: _Locator,
) -> Pack | None:
    meta = docs[0][1]["pack"]
    name, version = meta.get("name"), meta.get("version")
    if not isinstance(name, str) or not name:
        problems.add(PackProblem("pack.name", "missing or not a string", "pack.toml"))
        name = root.name
    if not isinstance(version, str) or not version:
        problems.add(PackProblem("pack.version", "missing or not a string", "pack.toml"))
        version = "0"
    fields: dict[str, Field] = {}
    sets: dict[str, tuple[Scalar, ...]] = {}
    rules: list[Rule] = []
    prefs: list[Preference] = []
    model_config: dict[str, Any] = {}
    model_config_file = ""
    acknowledged: dict[str, tuple[str, ...]] = {}
    named: dict[str, tuple[str, str]] = {}
    for file, doc in docs:
        for key in doc:
            if key not in _FILE_KEYS:
                problems.add(
                    PackProblem(
                        key,
                        f"unknown table [{key}]{did_you_mean(key, _FILE_KEYS)} "
                        f"(expected one of {', '.join(sorted(_FILE_KEYS))})",
                        file,
                        where.line(file, "", key) or where.line(file, key),
                    )
                )
        collect_sets(doc.get("sets", {}), file, sets, problems, where.line, where.broken)
        collect_conditions(doc.get("conditions", {}), file, named, problems, where.line, where.broken)
        _collect_fields(doc.get("field", {}), file, fields, problems, where)
        rules += _collect(doc.get("rule", []), Rule, "rule", file, problems, where)
        prefs += _collect(doc.get("preference", []), Preference, "preference", file, problems, where)
        section = doc.get("model_config", {})
        if isinstance(section, dict):
            model_config.update(section)
            if section:
                model_config_file = file
        else:
            problems.add(PackProblem("model_config", "must be a table", file))
        _collect_acknowledged(doc.get("lint", {}), file, acknowledged, problems)
    if len(fields) > MAX_FIELDS or len(rules) + len(prefs) > MAX_RULES:
        problems.add(
            PackProblem(
                "pack", f"too large: at most {MAX_FIELDS} fields and {MAX_RULES} rules and preferences"
            )
        )
        return None
    conditions = expand_conditions(named, fields, sets, problems, where.line, where.broken)
    rules = expand_records(rules, conditions, ("when", "require", "forbid"))
    prefs = expand_records(prefs, conditions, ("when",))
    launcher = collect_parser_flags(docs, _collect_launcher(meta.get("launcher"), problems), problems)
    check_flags(fields, launcher, problems)
    check_parser_flags(fields, launcher, problems)
    check_detect(fields, launcher, problems)
    example = _collect_example(meta.get("example", {}), fields, problems)
    assumed_groups = _collect_assumed_groups(meta.get("assumed_groups", {}), fields, prefs, problems)
    # Every part was validated on its own above; the pack itself adds no types to check.
    pack = Pack(
        name=name,
        version=version,
        description=str(meta.get("description", "")),
        fields=fields,
        rules=tuple(rules),
        preferences=tuple(prefs),
        sets=sets,
        conditions=conditions,
        model_config_map=model_config,
        acknowledged=acknowledged,
        launcher=launcher,
        example=example,
        assumed_groups=assumed_groups,
        digest=digest,
        directory=str(root),
    )
    check_ids(pack, problems)
    check_references(pack, problems)
    check_cycles(pack, problems)
    if model_config:
        check_model_config(pack, model_config_file, problems)
    found = parse_conditions(pack, problems)
    if not problems:
        _SEMANTICS.put(digest, found)
        from solver.pack import condcache

        condcache.keep(digest, found)  # compiled conditions for the next start (on disk)
    return pack


def _collect_example(
    table: Any, fields: Mapping[str, Field], problems: Collector[PackProblem]
) -> dict[str, Scalar]:
    """`[pack] example`: fields of the pack, each with a value of its domain."""
    if not isinstance(table, dict):
        problems.add(PackProblem("pack.example", "must be a table of field = value", "pack.toml"))
        return {}
    example: dict[str, Scalar] = {}
    for name, value in table.items():
        field = fields.get(name)
        if field is None:
            meant = did_you_mean(name, fields)
            problems.add(PackProblem("pack.example", f"names no field: {name!r}{meant}", "pack.toml"))
        elif value not in field.domain or type(value) is not type(field.domain[0]):
            problems.add(
                PackProblem("pack.example", f"{name} = {value!r} is not a value of {name}", "pack.toml")
            )
        else:
            example[name] = value
    return example


def _collect_assumed_groups(
    table: Any, fields: Mapping[str, Field], prefs: Iterable[Preference], problems: Collector[PackProblem]
) -> dict[str, AssumedGroup]:
    """`[pack.assumed_groups]`: each member a preference that fills a fact, or a fact its domain's
    first value fills when nothing else does, in one group at most."""
    where = "pack.assumed_groups"
    if not isinstance(table, dict):
        problems.add(PackProblem(where, "must be a table of [pack.assumed_groups.NAME]", "pack.toml"))
        return {}
    facts = {n for n, f in fields.items() if f.kind == "fact" and not f.env}
    of_fact = {p.id for p in prefs if p.field in facts} | facts
    groups: dict[str, AssumedGroup] = {}
    seen: dict[str, str] = {}
    for name, body in table.items():
        try:
            group = AssumedGroup.model_validate(body)
        except RecordInvalid as exc:
            text = _validation_text(exc, AssumedGroup)[0]
            problems.add(PackProblem(f"{where}.{name}", text, "pack.toml"))
            continue
        for pref_id in group.members:
            if pref_id not in of_fact:
                meant = did_you_mean(pref_id, of_fact)
                problems.add(
                    PackProblem(
                        f"{where}.{name}",
                        f"{pref_id!r} is not a preference that fills a fact, nor a fact{meant}",
                        "pack.toml",
                    )
                )
            elif pref_id in seen:
                problems.add(
                    PackProblem(
                        f"{where}.{name}", f"{pref_id!r} is already in group {seen[pref_id]!r}", "pack.toml"
                    )
                )
            seen[pref_id] = name
        groups[name] = group
    return groups


def _collect_launcher(table: Any, problems: Collector[PackProblem]) -> Launcher | None:
    """`[pack.launcher]` validated (pydantic), with its command strings split as a shell would."""
    if table is None:
        return None
    if not isinstance(table, dict):
        problems.add(PackProblem("pack.launcher", "must be a table", "pack.toml"))
        return None
    try:
        launcher = Launcher.model_validate(table)
    except RecordInvalid as exc:
        problems.add(PackProblem("pack.launcher", _validation_text(exc, Launcher)[0], "pack.toml"))
        return None
    import shlex

    for command in launcher.commands + launcher.positional_model:
        try:
            words = shlex.split(command)
        except ValueError as exc:
            words = []
            problems.add(PackProblem("pack.launcher", f"command {command!r}: {exc}", "pack.toml"))
        if not words or any(w.startswith("-") for w in words[:1]):
            problems.add(
                PackProblem(
                    "pack.launcher", f"command {command!r} must start with a program name", "pack.toml"
                )
            )
    for command in launcher.positional_model:
        if command not in launcher.commands:
            problems.add(
                PackProblem(
                    "pack.launcher",
                    f"positional_model names {command!r}, which is not in commands",
                    "pack.toml",
                )
            )
    return launcher


def _collect_acknowledged(
    table: Any, file: str, acknowledged: dict[str, tuple[str, ...]], problems: Collector[PackProblem]
) -> None:
    """`[lint.acknowledged]`: subject = ["CODE: reason", ...]. Whether each entry is well formed
    and still matches a finding is lint's business (CS161-CS163); here only the shape."""
    if not isinstance(table, dict) or set(table) - {"acknowledged"}:
        problems.add(PackProblem("lint", "must be a table with only [lint.acknowledged]", file))
        return
    entries = table.get("acknowledged", {})
    if not isinstance(entries, dict):
        problems.add(PackProblem("lint.acknowledged", "must be a table of SUBJECT = [entries]", file))
        return
    for subject, items in entries.items():
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            problems.add(PackProblem(f"lint.acknowledged {subject}", "must be a list of strings", file))
        elif subject in acknowledged:
            problems.add(PackProblem(f"lint.acknowledged {subject}", "acknowledged twice", file))
        else:
            acknowledged[subject] = tuple(items)


def _collect_fields(
    table: Any, file: str, fields: dict[str, Field], problems: Collector[PackProblem], where_is: _Locator
) -> None:
    if not isinstance(table, dict):
        problems.add(PackProblem("field", "must be a table of [field.NAME] tables", file))
        return
    field_name_pattern = re.compile(_FIELD_NAME)
    for field_name, body in table.items():
        where = f"field {field_name}"
        if not field_name_pattern.match(field_name):
            problems.add(PackProblem(where, "field names are identifiers", file))
            continue
        if field_name in fields:
            problems.add(PackProblem(where, f"declared twice (first in {fields[field_name].file})", file))
            continue
        if not isinstance(body, dict):
            problems.add(PackProblem(where, "must be a table", file))
            continue
        try:
            field = Field.model_validate({**body, "name": field_name, "file": file})
        except RecordInvalid as exc:
            text, key = _validation_text(exc, Field)
            problems.add(PackProblem(where, text, file, where_is.line(file, where, key)))
            where_is.broken.add(field_name)
            continue
        problems.add(*(PackProblem(where, msg, file) for msg in domain_problems(field, MAX_DOMAIN)))
        fields[field_name] = field


def _collect(
    items: Any, model: type[Any], what: str, file: str, problems: Collector[PackProblem], where_is: _Locator
) -> list[Any]:
    if not isinstance(items, list):
        problems.add(PackProblem(what, f"use [[{what}]] entries", file))
        return []
    out = []
    for index, body in enumerate(items):
        label = body.get("id", f"#{index + 1}") if isinstance(body, dict) else f"#{index + 1}"
        where = f"{what} {label}"
        if not isinstance(body, dict):
            problems.add(PackProblem(where, "must be a table", file))
            continue
        try:
            item = model.model_validate({**body, "file": file})
        except RecordInvalid as exc:
            text, key = _validation_text(exc, model)
            problems.add(PackProblem(where, text, file, where_is.line(file, where, key)))
            continue
        for attr in ("because", "source"):
            if not getattr(item, attr).strip():
                problems.add(PackProblem(where, f"`{attr}` is empty", file))
        out.append(item)
    return out


# Keys a record has that a pack file does not write (set by the loader).
_INTERNAL_KEYS = {"name", "file"}


def _validation_text(exc: RecordInvalid, model: type[Any]) -> tuple[str, str | None]:
    """What is wrong with a table, in a pack author's words, and the first key at fault.

    A misspelled key is one problem, not two: "unknown key 'becuase' (did you mean 'because'?)"
    stands for pydantic's "extra input" and the "missing" of the key it means."""
    keys = [f.name for f in frozen.fields(model) if f.name not in _INTERNAL_KEYS]
    errors = exc.errors()
    extra = [str(e["loc"][0]) for e in errors if e["loc"] and e["msg"] == "Extra inputs are not permitted"]
    meant = {k: did_you_mean(k, keys) for k in extra}
    parts: list[str] = []
    first: str | None = None
    for err in errors:
        key = str(err["loc"][0]) if err["loc"] else None
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        if key in meant:
            parts.append(
                f"unknown key {key!r}{meant[key]} (a {model.__name__.lower()} has: {', '.join(keys)})"
            )
        elif err["msg"] == "Field required" and any(f"'{key}'" in hint for hint in meant.values()):
            continue  # the misspelled key above is this one
        elif err["msg"] == "Field required":
            parts.append(f"`{loc}` is required")
        else:
            parts.append(f"{loc}: {err['msg']}")
        first = first or key
    return "; ".join(parts), (extra[0] if extra else first)
