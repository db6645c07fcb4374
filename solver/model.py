"""The data of confsolve: packs (fields, rules, preferences) and answers (resolutions, conflicts).

Owns the record types that everything else passes around and that the JSON output is made of.
Must not import the solver, the graph or the condition language: a front end can depend on this
module alone (the way Spack keeps its result types apart from its solver).

The records are frozen dataclasses (`solver.frozen`), not pydantic models: importing pydantic cost a
cold `confsolve check` more than its whole budget (issue #7). Pydantic validates what a pack's TOML
says, in `solver.validation` only; a pack from the on-disk cache (stored after a round trip through
the validated form) is rebuilt without it. `Record` (`solver.records`) keeps the part of pydantic's
model API the code uses (`model_validate`, `model_construct`, `model_copy`, `model_dump`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from typing import Any, Literal

from solver import frozen
from solver.errors import RecordInvalid
from solver.records import Record, record_type
from solver.values import same, show

__all__ = [
    "DETECTED_HOSTS",
    "DETECTED_QUANTITIES",
    "AdjustmentRecord",
    "AssumedGroup",
    "AssumedRecord",
    "ConflictReport",
    "DepartureRecord",
    "Field",
    "Launcher",
    "OpenRange",
    "Pack",
    "Pin",
    "PinRef",
    "Preference",
    "Provenance",
    "Record",
    "RecordInvalid",
    "Rejection",
    "Repair",
    "Resolution",
    "Rule",
    "RuleRef",
    "Scalar",
    "WarningRecord",
    "given_key",
    "given_marks",
    "typed_key",
]

Scalar = str | int | bool
FieldKind = Literal["fact", "option"]
# How a launcher flag carries a field's value: `value` (`--flag VALUE`), `store_true` (a bare flag
# true, none false), `store_false`, `boolean_optional` (`--flag` true, `--no-flag` false: argparse's).
FlagValue = Literal["value", "store_true", "store_false", "boolean_optional"]
# "launcher-default": a value the launcher picks by itself for a flag left unset (predict mode's
# conflicts name it; only explanations carry it, never a request).
# What a launcher's parser reads after a flag: nothing, one word, one unless a flag follows, all up to one.
FlagArity = Literal["switch", "value", "optional", "list"]
PinSource = Literal["user", "fact", "env", "model-config", "assumed", "detected", "launcher-default"]
ProvenanceKind = Literal["user", "fact", "adjusted", "rule", "preference", "default"]


@record_type
class OpenRange(Record):
    """An open integer domain: besides the listed values, any integer from `min` to `max`
    (no `max`: unbounded) is a legal value; a query works on the listed values plus the ones it
    pins (see `solver.opendomain`)."""

    min: int = 1
    max: int | None = None

    def admits(self, value: object) -> bool:
        return type(value) is int and value >= self.min and (self.max is None or value <= self.max)

    def text(self) -> str:
        if self.max is None:
            return f"any integer >= {self.min}"
        return f"any integer from {self.min} to {self.max}"


@record_type
class Field(Record):
    """A named setting with a finite, ordered domain: a fact about the environment or an option."""

    name: str
    kind: FieldKind
    domain: tuple[Scalar, ...]
    help: str = ""
    group: str = "other"
    depends_on: tuple[str, ...] = ()
    required: bool = False
    env: bool = False
    auto: str | None = None
    flag: str | None = None
    # The launcher's spellings of this field's flag, the first the one written out; `flag` is the
    # older one-spelling form (a pack gives one of the two).
    flags: tuple[str, ...] = ()
    flag_value: FlagValue = "value"
    absent: Scalar | None = None  # the value the launcher spells by leaving its flag out
    open: OpenRange | None = None  # an integer field that also takes unlisted values in a range
    # False: the solver never picks a value for this option to make other rules hold (precision,
    # resources): unset, it takes the launcher's own default chain as `check` does, and when that
    # fails the answer is a conflict whose repairs say which flag to set.
    search: bool = True
    labels: dict[str, str] = frozen.field(default_factory=dict)
    # Other spellings of values, matched ignoring case where a value is typed (`"H100" = "sm90"`).
    aliases: dict[str, str] = frozen.field(default_factory=dict)
    # Typed values the launcher rewrites before any of its checks reads the request: a typed
    # VALUE (as `labels` spells it) leaves this field unset, its default, and sets each named
    # field to its value (SGLang's `--moe-runner-backend megamoe` is `--moe-a2a-backend megamoe`
    # with the runner on auto). `given(FIELD)` answers the request as rewritten; a rule reporting
    # the rewrite reads the value typed (`given(FIELD) == VALUE`): solver.pack.given.
    rewrites: dict[str, dict[str, Scalar]] = frozen.field(default_factory=dict)
    file: str = ""
    # An environment variable: what the launcher does with a value that is neither a domain value
    # nor one of `aliases` (its reader quoted: "SGLang's EnvBool warns and runs its default, off"),
    # said where such a value is refused, so the user learns the launcher would not read it as meant.
    unread: str = ""

    @property
    def cli_flag(self) -> str:
        """The launcher flag for this field (`--kebab-case` unless the pack names another)."""
        if self.flags:
            return self.flags[0]
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def all_flags(self) -> tuple[str, ...]:
        """Every spelling of the flag the launcher accepts, the canonical one first."""
        return self.flags or (self.cli_flag,)

    def admits(self, value: Scalar) -> bool:
        """Whether `value` is legal: a listed value, or one the open range allows."""
        listed = any(same(value, v) for v in self.domain)
        return listed or (self.open is not None and self.open.admits(value))

    def label(self, value: Scalar) -> str:
        """How explanations name a value: its label when the pack gives one."""
        key = show(value)
        return self.labels.get(key, key)


@record_type
class Rule(Record):
    """A hard rule (or a warning): `when` implies `require`; `forbid` is `require not`."""

    id: str
    when: str | None = None
    require: str | None = None
    forbid: str | None = None
    because: str
    source: str
    severity: Literal["error", "warn"] = "error"
    adjusts: str | None = None
    adjust_to: tuple[Scalar, ...] = ()
    # Adjusts a typed value because of another value the request gives (a launcher's alias:
    # `--moe-runner-backend megamoe` is `--moe-a2a-backend megamoe`): fires only when every field
    # its `when` reads is given, so it orders no decision and adds no edge to the field graph.
    typed_only: bool = False
    acknowledged: tuple[str, ...] = ()
    file: str = ""

    @property
    def is_adjustment(self) -> bool:
        return self.adjusts is not None


@record_type
class Preference(Record):
    """A ranked list of values for one field, applied when the field is auto and `when` holds."""

    id: str
    field: str
    when: str | None = None
    prefer: tuple[Scalar, ...] = ()
    same_as: str | None = None
    because: str
    source: str
    file: str = ""


@record_type
class Launcher(Record):
    """`[pack.launcher]` and `[launcher_flags]` (its parser): see constraints/README.md, inputs/launch.py."""

    commands: tuple[str, ...] = ()
    positional_model: tuple[str, ...] = ()
    model_flags: tuple[str, ...] = ()
    config_flag: str | None = None
    detect: dict[str, str] = frozen.field(default_factory=dict)  # `--detect`: a quantity's fact
    detect_platforms: dict[str, str] = frozen.field(default_factory=dict)  # a host's `platform`
    flags: dict[str, FlagArity] = frozen.field(default_factory=dict)  # what each flag reads
    abbreviations: bool = False  # argparse's allow_abbrev: a flag's unique prefix is that flag
    underscores: bool = False  # `--a_b` is `--a-b` (up to a first `.`)
    dotted: bool = False  # `--flag.key VALUE` sets one key of the JSON flag `--flag`
    positional_anywhere: bool = False  # the positional model between flags too, not first alone
    attached: tuple[str, ...] = ()  # short flags whose value may be attached (`-O3`)
    config_refused: tuple[str, ...] = ()  # flags its `--config` file may not set (it raises)
    choices: dict[str, list[str]] = frozen.field(default_factory=dict)  # a value flag's only words
    integers: tuple[str, ...] = ()  # value flags it reads with int(): `+8`, ` 8`, `0_8` are 8
    json_keys: dict[str, list[str]] = frozen.field(default_factory=dict)  # a JSON flag's only keys
    unread_positional: tuple[str, ...] = ()  # commands taking one word without a flag, never read
    model_first: tuple[str, ...] = ()  # commands moving a first `--model` to the front, as the model
    needs_model_first: tuple[str, ...] = ()  # flags with which a model_first command needs it first
    negatives: dict[str, str] = frozen.field(default_factory=dict)  # a switch -> the flag it turns off
    config_empty_refused: bool = False  # its `--config` reader fails on an empty file


@record_type
class AssumedGroup(Record):
    """`[pack.assumed_groups.NAME]`: facts nobody gave that one reason covers, named together on
    one line of the ASSUMED notice instead of one line each (JSON `assumed` keeps one entry per
    fact). `members` maps a preference id, or a fact (shown with its value), to how the line names
    the fact; a fact joins the line only when that preference filled it with its first value (a
    fact member: its domain's first value did), so the line's `reason` (and `then`) applied."""

    reason: str
    members: dict[str, str]
    then: str = ""


# What `--detect` can find (solver/inputs/detect.py): the accelerator kind, the GPU architecture (smXY,
# a gfx target), how many GPUs, whether the CPU has AMX tiles; and the kinds of host it tells apart.
DETECTED_QUANTITIES = ("platform", "gpu_arch", "gpu_count", "cpu_amx")
DETECTED_HOSTS = ("nvidia", "amd", "cpu")


@record_type
class Pack(Record):
    """Fields, rules, preferences, named value sets and conditions of one launcher, from TOML."""

    name: str
    version: str
    description: str = ""
    fields: dict[str, Field]
    rules: tuple[Rule, ...] = ()
    preferences: tuple[Preference, ...] = ()
    sets: dict[str, tuple[Scalar, ...]] = frozen.field(default_factory=dict)
    conditions: dict[str, str] = frozen.field(default_factory=dict)  # [conditions], expanded
    model_config_map: dict[str, Any] = frozen.field(default_factory=dict)
    # `[lint.acknowledged]`: finding subject (rule, preference, field, set, FIELD=VALUE or a
    # fact combination) -> "CODE: reason" entries that `confsolve lint` accepts as known.
    acknowledged: dict[str, tuple[str, ...]] = frozen.field(default_factory=dict)
    launcher: Launcher | None = None
    # `[pack] example`: the facts of a common machine and model, shown to a user who gave a command
    # nothing to resolve (launcher knowledge lives in the pack, not in solver/).
    example: dict[str, Scalar] = frozen.field(default_factory=dict)
    # `[pack.assumed_groups]`: how the ASSUMED notice groups facts that share a reason.
    assumed_groups: dict[str, AssumedGroup] = frozen.field(default_factory=dict)
    digest: str = ""
    directory: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], **extra: Any) -> Pack:
        """Rebuild a pack from `model_dump(mode="json")` of a validated one, without validating
        again: only for documents this program wrote (the on-disk cache, which stores one only
        after this round trip gave back an equal pack). Malformed input raises KeyError,
        TypeError or ValueError."""

        def record(kind: type[Any], body: Mapping[str, Any]) -> Any:
            return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in body.items()})

        def field(body: Mapping[str, Any]) -> Field:
            opened = body.get("open")
            made: Field = record(Field, {**body, "open": None})
            return made if opened is None else frozen.replace(made, open=OpenRange(**opened))

        launcher = doc.get("launcher")
        nested = ("fields", "rules", "preferences", "sets", "acknowledged", "launcher", "assumed_groups")
        return cls(
            **{k: v for k, v in doc.items() if k not in nested},
            assumed_groups={n: AssumedGroup(**g) for n, g in doc.get("assumed_groups", {}).items()},
            fields={n: field(f) for n, f in doc["fields"].items()},
            launcher=None if launcher is None else record(Launcher, launcher),
            rules=tuple(record(Rule, r) for r in doc["rules"]),
            preferences=tuple(record(Preference, p) for p in doc["preferences"]),
            sets={n: tuple(v) for n, v in doc["sets"].items()},
            acknowledged={n: tuple(v) for n, v in doc["acknowledged"].items()},
            **extra,
        )

    def rule(self, rule_id: str) -> Rule:
        found = self._rules_by_id.get(rule_id)
        if found is None:
            raise KeyError(rule_id)
        return found

    def preference(self, pref_id: str) -> Preference:
        found = self._preferences_by_id.get(pref_id)
        if found is None:
            raise KeyError(pref_id)
        return found

    # By id, made at the first lookup (each lookup scanned the tuple: the page's warned values
    # and reasons, explanations, lint look up many): the first of a repeated id, as a scan
    # finds it (the loader refuses a pack that repeats one; a pack built in code may). Not
    # fields: equality, `replace` and `model_dump` never see them; a replaced pack makes its own.
    @functools.cached_property
    def _rules_by_id(self) -> dict[str, Rule]:
        return _first_by_id(self.rules)

    @functools.cached_property
    def _preferences_by_id(self) -> dict[str, Preference]:
        return _first_by_id(self.preferences)

    @property
    def options(self) -> list[str]:
        return [name for name, f in self.fields.items() if f.kind == "option"]

    @property
    def facts(self) -> list[str]:
        return [name for name, f in self.fields.items() if f.kind == "fact"]


def _first_by_id(records: tuple[Any, ...]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for record in records:
        found.setdefault(record.id, record)
    return found


@record_type
class Pin(Record):
    """A value fixed by input, with where it came from."""

    field: str
    value: Scalar
    source: PinSource


def given_key(name: str) -> str:
    """How decided values mark that the request gives `name`: `given(name)`, which no field is spelled."""
    return f"given({name})"


def typed_key(name: str) -> str:
    """How decided values may carry the value the request typed for `name` (`given(name) ==
    VALUE` reads it; without it, the field's own value, which is the typed one unless adjusted)."""
    return f"typed({name})"


def given_marks(names: Collection[str]) -> dict[str, bool]:
    return {given_key(name): True for name in names}


@record_type
class PinRef(Record):
    """A pin as it appears in an explanation."""

    field: str
    value: Scalar
    source: str


@record_type
class RuleRef(Record):
    """A rule as it appears in an explanation: enough to act on it and to check it upstream."""

    id: str
    because: str
    source: str


@record_type
class Rejection(Record):
    """A better-ranked value that could not be used, and the minimal reason (pins and rules)."""

    value: Scalar
    because: list[str]


@record_type
class Provenance(Record):
    """Who decided a field's value and why."""

    kind: ProvenanceKind
    source: str | None = None
    rule: str | None = None
    because: str | None = None
    rejected: list[Rejection] = frozen.field(default_factory=list)


@record_type
class AdjustmentRecord(Record):
    """A user value replaced by a declared adjustment rule."""

    field: str
    requested: Scalar
    resolved: Scalar
    rule: str
    because: str


@record_type
class WarningRecord(Record):
    """A `warn` rule the answer breaks: the rule's id and its message (the rule's `because`)."""

    rule: str
    message: str


@record_type
class AssumedRecord(Record):
    """A fact nobody gave (not typed, read, detected or from the environment) that a preference
    or the domain's order filled: the answer holds only if the fact is so."""

    field: str
    value: Scalar
    because: str


@record_type
class DepartureRecord(Record):
    """Where a searched resolution differs from what the launcher would pick by itself for a
    flag left unset: `launcher` is its own pick (None: its default chain fails here)."""

    field: str
    launcher: Scalar | None
    resolved: Scalar
    rule: str | None
    because: str


@record_type
class Resolution(Record):
    """A value for every field, with provenance, adjustments and warnings.

    `mode`: "search" (the best working configuration) or "predict" (what the launcher itself
    does with the request as typed). `assumed`: facts that no input gave. `departures`: in
    search mode, the unset options whose value differs from the launcher's own pick."""

    pack: dict[str, str]
    values: dict[str, Scalar]
    provenance: dict[str, Provenance]
    adjustments: list[AdjustmentRecord] = frozen.field(default_factory=list)
    warnings: list[WarningRecord] = frozen.field(default_factory=list)
    mode: Literal["search", "predict"] = "search"
    assumed: list[AssumedRecord] = frozen.field(default_factory=list)
    departures: list[DepartureRecord] = frozen.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The contract's `resolved` document."""
        return {"schema": 1, "status": "resolved", **self.model_dump(mode="json")}


@record_type
class ConflictReport(Record):
    """A minimal set of pins and rules that cannot all hold."""

    pins: list[PinRef]
    rules: list[RuleRef]


@record_type
class Repair(Record):
    """A minimal change to the user's pins that makes the request solvable, verified by resolving."""

    set: dict[str, Scalar] = frozen.field(default_factory=dict)
    unset: list[str] = frozen.field(default_factory=list)
    values: dict[str, Scalar] = frozen.field(default_factory=dict)
    alternatives: dict[str, list[Scalar]] = frozen.field(default_factory=dict)
    changes: int = 0
    rank_loss: int = 0
