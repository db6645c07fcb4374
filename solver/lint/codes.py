"""The lint findings: the codes (CS1xx) with their severities and `--explain` texts, a `Finding`,
and the `LintReport` they make up (text and JSON). Only the standard library: `confsolve lint
--explain` and the JSON Schema read the table without loading any pack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.model import Scalar

__all__ = ["CODES", "SEVERITIES", "Code", "Finding", "LintReport", "explain_code"]

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Code:
    severity: str
    title: str
    explain: str


CODES: dict[str, Code] = {
    "CS100": Code(
        "error",
        "the rules contradict each other",
        (
            "No assignment of all fields satisfies the hard rules, so every request fails. The finding "
            "names a minimal set of rules that cannot hold together: change one of them. The other "
            "semantic checks are skipped until this is fixed."
        ),
    ),
    "CS101": Code(
        "error",
        "dead value",
        (
            "No configuration can take FIELD=VALUE under any facts: the rules listed (a minimal set) "
            "exclude it everywhere. Setting it always ends in a conflict and auto never picks it. Fix "
            "the rules or remove the value; if it stays on purpose (the launcher accepts the flag but "
            "this version rejects it everywhere), acknowledge `FIELD=VALUE` in [lint.acknowledged]."
        ),
    ),
    "CS102": Code(
        "warning",
        "dead rule",
        (
            "The rule's `when` can never hold, on its own or given the other rules (listed: a minimal "
            "set that excludes it), so the rule never restricts anything. Usually a typo in `when` or a "
            "case another rule already forbids."
        ),
    ),
    "CS103": Code(
        "warning",
        "always-true rule",
        (
            "The rule holds for every combination of values of the fields it reads, so it never "
            "restricts anything (for example `require` lists every value of the field)."
        ),
    ),
    "CS104": Code(
        "warning",
        "redundant rule",
        (
            "The other rules imply this one: they cannot hold together with its negation. The finding "
            "names a minimal set of rules that imply it. Removing it changes no answer; keep it (and "
            "acknowledge it) when it gives users a clearer explanation than the rules that imply it. "
            "A rule over facts alone is compared with the other fact-only rules only (stating over the "
            "facts what rules about options imply is what CS121 asks for). For a warning rule: it can "
            "never be violated, so its warning is never shown."
        ),
    ),
    "CS105": Code(
        "info",
        "require can never hold",
        (
            "The rule's `require` (or `forbid`) cannot hold for any value of its own fields, so the rule "
            'just forbids its `when`. Writing it as `forbid = "<when>"` reads better in explanations.'
        ),
    ),
    "CS111": Code(
        "warning",
        "preference never applies",
        (
            "The preference's `when` can never hold given the rules (listed: a minimal set), so it never "
            "ranks anything."
        ),
    ),
    "CS112": Code(
        "warning",
        "preference entry never feasible",
        (
            "A value the preference ranks can never be used where the preference applies: the rules "
            "listed (a minimal set) exclude it whenever `when` holds. Remove the entry or fix the rules."
        ),
    ),
    "CS113": Code(
        "warning",
        "preference entry always shadowed",
        (
            "A ranked value can never be chosen because an earlier entry (of this preference, or of an "
            "earlier one for the same field that applies whenever this one does) works wherever it "
            "works: no rule allows the later value where it forbids the earlier one. Reorder or remove "
            "the entry."
        ),
    ),
    "CS114": Code(
        "warning",
        "adjustment value never works",
        (
            "An `adjust_to` value can never satisfy the rules when the adjustment fires (its `when` "
            "holds): the replacement always falls through to the next value or to auto."
        ),
    ),
    "CS115": Code(
        "warning",
        "preference reads given() of a field an adjustment puts back on auto",
        (
            "The preference's `when` reads a bare `given(FIELD)`, and the adjustments listed replace a "
            "typed FIELD with the launcher's own choice (no `adjust_to`). After such an adjustment a "
            "preference reads `given(FIELD)` as false (the launcher's chain decides FIELD), while a rule "
            "reads it as true (the request typed it). If the launcher reads the flag as typed, say so: "
            "`given(FIELD) in [VALUES]` or `given(FIELD) == VALUE` reads the value typed, before any "
            "adjustment. If it reads only a value the adjustment left in place, acknowledge the finding "
            "with that reason."
        ),
    ),
    "CS121": Code(
        "warning",
        "facts with no configuration",
        (
            "Auto-resolution is not total: for the facts shown (a machine and model the fact-only rules "
            "allow), no choice of the options satisfies the rules listed, so every request with these "
            "facts fails. If the combination is really unsupported, say so with a rule over the facts "
            "alone (a clearer message); otherwise fix the rules. Fact combinations are enumerated when "
            "there are few, else sampled with a fixed seed (--samples, --seed)."
        ),
    ),
    "CS131": Code(
        "info",
        "strongly connected fields",
        (
            "These fields decide each other (through preferences, `same_as`, adjustments or "
            "`depends_on`), so they are decided together in declaration order and a preference whose "
            "condition reads an undecided member does not apply. Break the cycle if that is not "
            "intended."
        ),
    ),
    "CS141": Code(
        "warning",
        "because names no flag or value",
        (
            "A `because` is what the user reads: it should name the flag or value to change (a field "
            "the rule reads, its --flag, or one of its values), not only what the code does."
        ),
    ),
    "CS142": Code(
        "warning",
        "source names no upstream reference",
        (
            "A `source` should let a reviewer find the fact upstream: a file path, file::function, an "
            "issue or PR (#1234) or a URL."
        ),
    ),
    "CS151": Code("warning", "unused named set", ("No condition uses this named set. Remove it or use it.")),
    "CS152": Code(
        "warning",
        "unused field",
        (
            "No rule, preference, adjustment or depends_on mentions this field, so the pack says "
            "nothing about it; every value is always possible."
        ),
    ),
    "CS153": Code(
        "warning",
        "unused named condition",
        ("No rule, preference or other named condition reads this named condition. Remove it or use it."),
    ),
    "CS161": Code(
        "error",
        "malformed acknowledgement",
        (
            'Acknowledgements are strings "CODE: reason" with a known code and a non-empty reason, '
            "on a rule (`acknowledged = [...]`) or in [lint.acknowledged] of any pack file."
        ),
    ),
    "CS162": Code(
        "warning",
        "stale acknowledgement",
        ("An acknowledgement that matches no finding any more. Remove it so acknowledgements stay true."),
    ),
    "CS163": Code(
        "warning",
        "acknowledgement for an unknown id",
        (
            "[lint.acknowledged] keys must name a rule, preference, field, named set, FIELD=VALUE "
            "or PREFERENCE:VALUE of the pack."
        ),
    ),
    "CS190": Code(
        "info",
        "check not completed",
        (
            "A check ran out of its search budget and was skipped for the ids shown; the rest of the "
            "report stands. Raise it with --budget."
        ),
    ),
}


@dataclass
class Finding:
    """One finding: a code, the ids it is about (the subject first), and a one-line message."""

    code: str
    ids: list[str]
    message: str
    witness: dict[str, Scalar] | None = None
    reason: list[str] | None = None
    acknowledged: str | None = None

    @property
    def severity(self) -> str:
        return CODES[self.code].severity

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "ids": self.ids,
            "title": CODES[self.code].title,
            "message": self.message,
            "acknowledged": self.acknowledged,
        }
        if self.witness is not None:
            doc["witness"] = {k: v for k, v in self.witness.items()}
        if self.reason is not None:
            doc["reason"] = self.reason
        return doc


# Stats that measure time: in the text, never in the JSON document.
_TIMING_STATS = ("seconds", "timings")


@dataclass
class LintReport:
    """Every finding of one pack, plus what was checked and how long it took."""

    pack: dict[str, str]
    findings: list[Finding]
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        """Error findings that are not acknowledged: these fail CI."""
        return [f for f in self.findings if f.severity == "error" and f.acknowledged is None]

    def to_json(self) -> dict[str, Any]:
        # No timings: the same pack gives the same document, byte for byte (the text has them).
        stats = {k: v for k, v in self.stats.items() if k not in _TIMING_STATS}
        return {
            "schema": 1,
            "status": "linted",
            "pack": self.pack,
            "findings": [f.to_json() for f in self.findings],
            "stats": stats,
        }

    def text(self) -> str:
        lines = []
        for f in self.findings:
            ack = f"  [acknowledged: {f.acknowledged}]" if f.acknowledged is not None else ""
            lines.append(f"{f.severity:<7} {f.code} {f.ids[0]}: {f.message}{ack}")
        counts = {
            s: sum(1 for f in self.findings if f.severity == s and f.acknowledged is None) for s in SEVERITIES
        }
        acked = sum(1 for f in self.findings if f.acknowledged is not None)
        lines.append(
            f"{self.pack['name']} {self.pack['version']}: {counts['error']} error(s), "
            f"{counts['warning']} warning(s), {counts['info']} info, {acked} acknowledged "
            f"({self.stats.get('seconds', 0):.1f} s; `confsolve lint --explain CODE` says more)"
        )
        return "\n".join(lines)


def explain_code(code: str) -> str:
    """The `--explain` text of a finding code."""
    entry = CODES[code.upper()]
    return f"{code.upper()} ({entry.severity}): {entry.title}\n\n{entry.explain}"
