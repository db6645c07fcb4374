"""The writer of a shipped pack's prebuilt form (`solver.pack.prebuilt` reads it and says what it is).

`source(directory)` is the text of `constraints/NAME/prebuilt.py`: the pack loaded fresh from its
files, its conditions parsed again (so each function's generated source is known), every shape
of condition written once as a function of the module and every collection a condition tests
against once in `SETS`, all as literals (never `repr` of anything but strings, integers, booleans
and None); the text is run and read back before it is returned. `python -m solver.engine.shipped`
writes it. Imports the standard library and `solver.pack`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

from solver.pack import codegen, given
from solver.pack.crosscheck import PackSemantics
from solver.pack.expr import Condition
from solver.pack.prebuilt import FORMAT, GROUPS, MODULE, TABLES, manifest_of, read

if TYPE_CHECKING:
    from solver.model import Pack

__all__ = ["source"]


def source(directory: str | Path) -> str:
    """The text of `prebuilt.py` for the pack in `directory`, loaded fresh from its files."""
    from solver.model import Pack
    from solver.pack.graph import analyse
    from solver.pack.loader import load_directory, semantics

    pack = load_directory(directory, fresh=True)
    doc = pack.model_dump(mode="json", exclude={"digest", "directory"})
    for written in doc["fields"].values():
        # A field key at its default that older prebuilt files lack is left out: the file of a
        # pack that does not use the key stays byte-identical (the default is read back).
        if written.get("unread") == "":
            del written["unread"]
    if Pack.from_json(doc, digest=pack.digest, directory=pack.directory) != pack:
        raise ValueError(f"{directory}: the pack does not survive its JSON form")
    # The conditions that load parsed: each function was made from a source this process holds.
    found = semantics(pack)
    reads, positions = given.parsed_reads(pack), given.parsed_positions(pack)
    listing = _listing(Path(directory))  # (read once: written, then read back)
    out = _Text()
    groups = [
        (name, [(key, None if cond is None else out.record(cond)) for key, cond in group.items()])
        for name, group in _groups(found)
    ]
    lines = [
        f'"""The {pack.name} pack of this directory prebuilt for confsolve (solver.pack.prebuilt).',
        "",
        f"Written by `python -m solver.engine.shipped --prebuilt-only constraints/{Path(directory).name}`",
        "from the pack's files: do not edit (tests/test_prebuilt.py writes it again and compares).",
        '"""',
        "",
        f"FORMAT = {FORMAT!r}",
        f"DIGEST = {pack.digest!r}",
        f"MANIFEST = {_literal(_manifest(listing))}",
        f"PACK = {_literal(doc)}",
        f"ORDER = {_literal(analyse(pack).order)}",
        f"VALUE_READS = {_literal(given.encoded_reads(reads))}",
        f"VALUED_PREFERENCES = {_literal(positions)}",
        "SETS = (",
        *(f"    {_literal(members)}," for members in out.sets),
        ")",
        "CODE = []",
    ]
    for made in out.shapes:
        lines += [made.rstrip("\n"), f"CODE.append({made[4 : made.index('(')]}.__code__)"]
    for name, records in groups:
        lines.append(f"{name} = (")
        lines += [f"    ({key!r}, {record})," for key, record in records]
        lines.append(")")
    text = "\n".join(lines) + "\n"
    tables = {"value_reads": reads, "valued_preferences": positions}
    if not _reads_back(text, listing, pack, found, tables):
        raise ValueError(f"{directory}: the prebuilt text does not give the pack back")
    return text


def _manifest(listing: tuple[bytes, str, list[str]]) -> tuple[str, str, tuple[str, ...]]:
    """The digest of pack.toml's bytes, the pack's name and the files it lists (`_listing`), as
    the loader reads them (`solver.pack.prebuilt.listed`)."""
    from solver.pack.files import sha256

    head, name, files = listing
    return sha256(head).hexdigest(), name, tuple(files)


def _listing(directory: Path) -> tuple[bytes, str, list[str]]:
    """pack.toml's bytes, the pack's name and the files it lists, as the loader reads the files."""
    from solver.errors import pack_problems
    from solver.pack.files import read_files

    found = read_files(directory, pack_problems(lambda: directory.name))
    assert found is not None and found[0] is not None  # the pack loaded from these files
    _, name, files = found
    return files[0][1], name, [file for file, _ in files[1:]]


def _groups(found: PackSemantics) -> list[tuple[str, Mapping[str, Condition | None]]]:
    return list(zip(GROUPS, (found.rules, found.whens, found.preferences), strict=True))


class _Text:
    """The shapes and the collections of the conditions written so far, each once."""

    def __init__(self) -> None:
        self.shapes: list[str] = []
        self._shape_at: dict[str, int] = {}
        self.sets: list[frozenset[Any]] = []
        self._set_at: dict[tuple[tuple[str, str], ...], int] = {}

    def shape(self, made: str) -> int:
        if made not in self._shape_at:
            self._shape_at[made] = len(self.shapes)
            self.shapes.append(made)
        return self._shape_at[made]

    def consts(self, values: tuple[Any, ...]) -> str:
        parts = []
        for value in values:
            if isinstance(value, frozenset):
                key = _members_key(value)
                if key not in self._set_at:
                    self._set_at[key] = len(self.sets)
                    self.sets.append(value)
                parts.append(f"SETS[{self._set_at[key]}]")
            else:
                parts.append(_literal(value))
        return "(" + "".join(f"{p}, " for p in parts).rstrip(" ") + ")"

    def record(self, cond: Condition) -> str:
        holds, holds_consts = codegen.written(cond.holds)
        partial, partial_consts = codegen.written(cond.partial)
        parts = [
            _literal(cond.text),
            _literal(cond.fields),
            _literal(cond.literals),
            _literal(cond.given),
            str(self.shape(holds)),
            self.consts(holds_consts),
            str(self.shape(partial)),
            self.consts(partial_consts),
        ]
        return "(" + ", ".join(parts) + ")"


def _members_key(members: frozenset[Any]) -> tuple[tuple[str, str], ...]:
    """A collection by its values and their types (True and 1 are equal, yet not the same value)."""
    return tuple(sorted((type(v).__name__, repr(v)) for v in members))


def _literal(value: Any) -> str:
    """`value` as Python source that evaluates to an equal value of the same types."""
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, tuple):
        return "(" + "".join(f"{_literal(v)}, " for v in value).rstrip(" ") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, frozenset):
        ordered = sorted(value, key=lambda v: (type(v).__name__, repr(v)))
        return "frozenset(" + _literal(tuple(ordered)) + ")" if ordered else "frozenset()"
    raise TypeError(f"no literal for {type(value).__name__}")


def _reads_back(
    text: str, listing: tuple[bytes, str, list[str]], pack: Pack, found: PackSemantics, tables: dict[str, Any]
) -> bool:
    """Whether `text`, run, gives what a load reads of it (`solver.pack.prebuilt`'s `read` and
    `manifest_of`, `solver.pack.given`'s tables as it decodes them) equal to what the files give:
    `pack`, its name and listed files (`listing`, the files' `_listing`), its field order,
    `given`'s `tables` and conditions of the same texts, fields, literals, sources and constants
    (a writer's check, not a reader's)."""
    namespace: dict[str, Any] = {}
    exec(compile(text, f"<{MODULE}>", "exec", dont_inherit=True), namespace)
    module = ModuleType(MODULE)
    module.__dict__.update(namespace)
    from solver.pack.graph import analyse

    read_back = read(module, pack.digest, pack.directory)
    if read_back is None:
        return False
    again, conditions, kept = read_back
    if again != pack or kept.get("order") != list(analyse(pack).order):
        return False
    if any(given.decoded(part, kept.get(part)) != tables[part] for part in TABLES):
        return False
    head, name, files = listing
    if manifest_of(module, head) != (name, files):
        return False
    for (_, group), back in zip(_groups(found), _groups(conditions), strict=True):
        if list(back[1]) != list(group):
            return False
        for key, cond in group.items():
            again_cond = back[1][key]
            if (cond is None) != (again_cond is None):
                return False
            if cond is not None and again_cond is not None and not _same_condition(cond, again_cond):
                return False
    return True


def _same_condition(cond: Condition, again: Condition) -> bool:
    if (cond.text, cond.fields, cond.literals, cond.given) != (
        again.text,
        again.fields,
        again.literals,
        again.given,
    ):
        return False
    for mine, theirs in ((cond.holds, again.holds), (cond.partial, again.partial)):
        made, consts = codegen.written(mine)
        other, other_consts = codegen.state(theirs)
        compiled = next(
            c
            for c in compile(made, "<condition>", "exec", dont_inherit=True).co_consts
            if isinstance(c, CodeType)
        )
        if not isinstance(other, CodeType) or other.co_code != compiled.co_code or other_consts != consts:
            return False
        if [type(c) for c in other_consts] != [type(c) for c in consts]:
            return False
    return True
