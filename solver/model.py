"""The data of confsolve: packs (fields, rules, preferences) and answers (resolutions, conflicts).

Owns the pydantic models that everything else passes around and that the JSON output is made of.
Must not import the solver, the graph or the condition language: a front end can depend on this
module alone (the way Spack keeps its result types apart from its solver).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField

__all__ = [
    "AdjustmentRecord",
    "ConflictReport",
    "Field",
    "Pack",
    "Pin",
    "PinRef",
    "Preference",
    "Provenance",
    "Rejection",
    "Repair",
    "Resolution",
    "Rule",
    "RuleRef",
    "Scalar",
    "WarningRecord",
]

Scalar = str | int | bool
FieldKind = Literal["fact", "option"]
PinSource = Literal["user", "fact", "env", "model-config", "assumed", "detected"]
ProvenanceKind = Literal["user", "fact", "adjusted", "rule", "preference", "default"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Field(BaseModel):
    """A named setting with a finite, ordered domain: a fact about the environment or an option."""

    model_config = _FROZEN

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
    absent: Scalar | None = None  # the value the launcher spells by leaving its flag out
    labels: dict[str, str] = PydanticField(default_factory=dict)
    file: str = ""

    @property
    def cli_flag(self) -> str:
        """The launcher flag for this field (`--kebab-case` unless the pack names another)."""
        return self.flag or "--" + self.name.replace("_", "-")

    def label(self, value: Scalar) -> str:
        """How explanations name a value: its label when the pack gives one."""
        key = str(value).lower() if isinstance(value, bool) else str(value)
        return self.labels.get(key, key)


class Rule(BaseModel):
    """A hard rule (or a warning): `when` implies `require`; `forbid` is `require not`."""

    model_config = _FROZEN

    id: str
    when: str | None = None
    require: str | None = None
    forbid: str | None = None
    because: str
    source: str
    severity: Literal["error", "warn"] = "error"
    adjusts: str | None = None
    adjust_to: tuple[Scalar, ...] = ()
    acknowledged: tuple[str, ...] = ()
    file: str = ""

    @property
    def is_adjustment(self) -> bool:
        return self.adjusts is not None


class Preference(BaseModel):
    """A ranked list of values for one field, applied when the field is auto and `when` holds."""

    model_config = _FROZEN

    id: str
    field: str
    when: str | None = None
    prefer: tuple[Scalar, ...] = ()
    same_as: str | None = None
    because: str
    source: str
    file: str = ""


class Pack(BaseModel):
    """Fields, rules, preferences and named value sets of one launcher, loaded from TOML."""

    model_config = _FROZEN

    name: str
    version: str
    description: str = ""
    fields: dict[str, Field]
    rules: tuple[Rule, ...] = ()
    preferences: tuple[Preference, ...] = ()
    sets: dict[str, tuple[Scalar, ...]] = PydanticField(default_factory=dict)
    model_config_map: dict[str, Any] = PydanticField(default_factory=dict)
    # `[lint.acknowledged]`: finding subject (rule, preference, field, set, FIELD=VALUE or a
    # fact combination) -> "CODE: reason" entries that `confsolve lint` accepts as known.
    acknowledged: dict[str, tuple[str, ...]] = PydanticField(default_factory=dict)
    digest: str = ""
    directory: str | None = None

    def rule(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def preference(self, pref_id: str) -> Preference:
        for pref in self.preferences:
            if pref.id == pref_id:
                return pref
        raise KeyError(pref_id)

    @property
    def options(self) -> list[str]:
        return [name for name, f in self.fields.items() if f.kind == "option"]

    @property
    def facts(self) -> list[str]:
        return [name for name, f in self.fields.items() if f.kind == "fact"]


class Pin(BaseModel):
    """A value fixed by input, with where it came from."""

    model_config = _FROZEN

    field: str
    value: Scalar
    source: PinSource


# --- answers --------------------------------------------------------------------------------

_OUT = ConfigDict(frozen=True)


class PinRef(BaseModel):
    """A pin as it appears in an explanation."""

    model_config = _OUT

    field: str
    value: Scalar
    source: str


class RuleRef(BaseModel):
    """A rule as it appears in an explanation: enough to act on it and to check it upstream."""

    model_config = _OUT

    id: str
    because: str
    source: str


class Rejection(BaseModel):
    """A better-ranked value that could not be used, and the minimal reason (pins and rules)."""

    model_config = _OUT

    value: Scalar
    because: list[str]


class Provenance(BaseModel):
    """Who decided a field's value and why."""

    model_config = _OUT

    kind: ProvenanceKind
    source: str | None = None
    rule: str | None = None
    because: str | None = None
    rejected: list[Rejection] = PydanticField(default_factory=list)


class AdjustmentRecord(BaseModel):
    """A user value replaced by a declared adjustment rule."""

    model_config = _OUT

    field: str
    requested: Scalar
    resolved: Scalar
    rule: str
    because: str


class WarningRecord(BaseModel):
    model_config = _OUT

    rule: str
    message: str


class Resolution(BaseModel):
    """A value for every field, with provenance, adjustments and warnings."""

    model_config = _OUT

    pack: dict[str, str]
    values: dict[str, Scalar]
    provenance: dict[str, Provenance]
    adjustments: list[AdjustmentRecord] = PydanticField(default_factory=list)
    warnings: list[WarningRecord] = PydanticField(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The contract's `resolved` document."""
        return {"schema": 1, "status": "resolved", **self.model_dump(mode="json")}


class ConflictReport(BaseModel):
    """A minimal set of pins and rules that cannot all hold."""

    model_config = _OUT

    pins: list[PinRef]
    rules: list[RuleRef]


class Repair(BaseModel):
    """A minimal change to the user's pins that makes the request solvable, verified by resolving."""

    model_config = _OUT

    set: dict[str, Scalar] = PydanticField(default_factory=dict)
    unset: list[str] = PydanticField(default_factory=list)
    values: dict[str, Scalar] = PydanticField(default_factory=dict)
    alternatives: dict[str, list[Scalar]] = PydanticField(default_factory=dict)
    changes: int = 0
    rank_loss: int = 0
