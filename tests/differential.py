"""Differential replay: any file of SGLang's own records (the oracle format) against confsolve.

Owns the three-class comparison the differential workflow measures (README, "SGLang pack"):
SGLang *accepts* a launch, *refuses* it at start-up (its resolution raised), or accepts it and then
*fails at load* (its own load-time code raised, the oracle's probe shows it). A refusal agrees with
a confsolve conflict (or invalid input); a load failure agrees with a conflict *or* a warning, and
is never hidden; an acceptance agrees with a resolution. Where both accept, the values SGLang
decided are compared field by field (the mapping from records to our fields is tests/oracle.py's).

confsolve is given what SGLang saw: the scenario's machine and flags and the model's `config.json`
(read through the pack's `--model-config` table), not only the architecture name. Every
scenario's failure inside confsolve is caught and counted as a crash, never raised.

Used by benchmarks/differential.py (the command) and tests/test_differential.py (the committed
regression fixture). Keeps no state between calls besides the configs written to a directory.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import oracle
import recordfiles
from audit import audit

from solver import InvalidInput, Pack, Resolution, SolverBudgetExceeded, Unsatisfiable
from solver.inputs.pins import collect_pins
from solver.reasoning.resolution import resolve_pins

ACCEPTS = "accepts"
REFUSES = "refuses at start-up"
LOAD_FAILS = "fails at load"
CLASSES = (ACCEPTS, REFUSES, LOAD_FAILS)

# Record keys a fixture keeps (the rest of an oracle record is for people reading it).
_SHARED_FUSION = oracle._SHARED_FUSION_OFF


# --- reading records ----------------------------------------------------------------------------


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a `.jsonl` or `.jsonl.gz` file, in order (blank lines skipped)."""
    return recordfiles.read_jsonl(path)


def repeated_ids(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The scenario ids that occur more than once (make_random.py numbers each seed's draw from
    RND-00000, so two seeds' records can share ids)."""
    seen = Counter(str(r["scenario"].get("id", "?")) for r in records)
    return [i for i, n in seen.items() if n > 1]


def sglang_class(record: Mapping[str, Any]) -> str:
    result = record["sglang"]
    if not result.get("ok"):
        return REFUSES
    load = result.get("load") or {}
    return LOAD_FAILS if load.get("ok") is False else ACCEPTS


def pattern(message: str) -> str:
    """A message with its particulars (numbers, quoted names, paths) blanked, to group by."""
    line = message.strip().splitlines()[0] if message.strip() else ""
    line = re.sub(r"/[\w./+-]+", "PATH", line)
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", line)
    line = re.sub(r"\b\d+(\.\d+)?\b", "N", line)
    return line if len(line) <= 140 else line[:137] + "..."


# --- one scenario -------------------------------------------------------------------------------


@dataclass
class Case:
    """One record replayed."""

    id: str
    sglang: str  # one of CLASSES
    ours: str  # resolved | warned | conflict | invalid | budget | crash
    rules: tuple[str, ...] = ()  # our conflict's rules, or the warnings' rules
    detail: str = ""  # SGLang's error or load failure; our crash
    config: str | None = None
    compared: dict[str, bool] = field(default_factory=dict)
    differences: list[oracle.Difference] = field(default_factory=list)
    silent: list[str] = field(default_factory=list)  # what `audit` found said nowhere
    seconds: float = 0.0

    @property
    def agrees(self) -> bool:
        if self.sglang == ACCEPTS:
            return self.ours in ("resolved", "warned")
        if self.sglang == REFUSES:
            return self.ours in ("conflict", "invalid")
        return self.ours in ("conflict", "invalid", "warned")

    @property
    def cause(self) -> str:
        """Why the verdicts differ: our rules when we refuse, SGLang's message when it does."""
        if self.ours == "crash":
            return f"confsolve crashed: {self.detail}"
        if self.ours == "budget":
            return "confsolve's search budget ran out"
        if self.sglang == ACCEPTS:
            return "ours: " + (", ".join(self.rules) or self.ours)
        return pattern(self.detail)


def inputs(
    pack: Pack, scenario: Mapping[str, Any], config_dir: Path | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(options, facts) for confsolve: the scenario's machine and flags, the model's config."""
    options, facts, _ignored = oracle.inputs_for(pack, scenario, config_dir)
    return options, facts


def replay(
    pack: Pack, record: Mapping[str, Any], store: oracle.ConfigStore | None = None, *, explain: bool = True
) -> Case:
    """One record: our verdict, its agreement class and the field comparison."""
    scenario, result = record["scenario"], record["sglang"]
    kind = sglang_class(record)
    case = Case(
        id=str(scenario.get("id", "?")),
        sglang=kind,
        ours="resolved",
        detail=_sglang_detail(result, kind),
        config=record.get("config"),
    )
    start = time.perf_counter()
    try:
        if store is not None and case.config is None:
            case.config = store.key_for(scenario)
        config_dir = store.directory(case.config) if store is not None else None
        try:
            options, facts = inputs(pack, scenario, config_dir)
        except InvalidInput as exc:  # a command-line record's words the launch-command reader refuses
            case.ours, case.rules = "invalid", tuple(sorted({i.field for i in exc.issues}))
            case.seconds = time.perf_counter() - start
            return case
        res = _verdict(pack, options, facts, case, explain=explain)
        if res is not None:
            _compare(pack, result, res, case)
            case.silent = audit(pack, options, facts, res)
    except Exception as exc:  # a crash is a result to count, never a traceback
        case.ours, case.detail = "crash", f"{type(exc).__name__}: {exc}"
    case.seconds = time.perf_counter() - start
    return case


def _sglang_detail(result: Mapping[str, Any], kind: str) -> str:
    if kind == REFUSES:
        error = result.get("error") or {}
        return f"{error.get('type', '?')}: {error.get('message', '')}"
    if kind == LOAD_FAILS:
        error = result["load"].get("error") or {}
        return f"[{error.get('check', '?')}] {error.get('type', '?')}: {error.get('message', '')}"
    return ""


def _verdict(
    pack: Pack, options: Mapping[str, Any], facts: Mapping[str, Any], case: Case, *, explain: bool
) -> Resolution | None:
    try:
        pins = collect_pins(pack, options, facts)
        res = resolve_pins(pack, pins, reasons=False, explain_failure=False, **oracle.PREDICT)
    except Unsatisfiable:
        case.ours = "conflict"
        if explain and case.sglang != REFUSES:
            case.rules = _conflict_rules(pack, options, facts)
        return None
    except InvalidInput as exc:
        case.ours = "invalid"
        case.rules = tuple(sorted({i.field for i in exc.issues}))
        return None
    except SolverBudgetExceeded:
        case.ours = "budget"
        return None
    if res.warnings:
        case.ours = "warned"
        case.rules = tuple(sorted({w.rule for w in res.warnings}))
    return res


def _conflict_rules(pack: Pack, options: Mapping[str, Any], facts: Mapping[str, Any]) -> tuple[str, ...]:
    try:
        resolve_pins(pack, collect_pins(pack, options, facts), reasons=False, **oracle.PREDICT)
    except Unsatisfiable as exc:
        return tuple(r.id for r in exc.conflict.rules)
    return ()


def _compare(pack: Pack, result: Mapping[str, Any], res: Resolution, case: Case) -> None:
    if not result.get("ok"):
        return
    for name in [*result["resolved"], *oracle.EXTRA_COMPARED]:
        if name in oracle.NOT_COMPARED or name not in pack.fields:
            continue
        expected = oracle.sglang_value(pack, name, result)
        if expected is None:
            continue
        ours = oracle._canonical(name, res.values[name])
        same = ours == expected and isinstance(ours, bool) == isinstance(expected, bool)
        case.compared[name] = same
        if not same:
            case.differences.append(
                oracle.Difference(
                    case.id, name, oracle.show(expected), oracle.show(ours), oracle._why(res, name)
                )
            )


# --- the report ---------------------------------------------------------------------------------


@dataclass
class Summary:
    cases: list[Case]

    def by_class(self) -> dict[str, tuple[int, int]]:
        """class -> (agreeing, total)."""
        out: dict[str, tuple[int, int]] = {}
        for kind in CLASSES:
            rows = [c for c in self.cases if c.sglang == kind]
            out[kind] = (sum(c.agrees for c in rows), len(rows))
        return out

    @property
    def verdict(self) -> tuple[int, int]:
        return sum(c.agrees for c in self.cases), len(self.cases)

    @property
    def fields(self) -> tuple[int, int]:
        compared = [ok for c in self.cases for ok in c.compared.values()]
        return sum(compared), len(compared)

    def per_field(self) -> dict[str, tuple[int, int]]:
        agree: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for case in self.cases:
            for name, ok in case.compared.items():
                total[name] += 1
                agree[name] += ok
        return {name: (agree[name], total[name]) for name in sorted(total)}

    def crashes(self) -> list[Case]:
        return [c for c in self.cases if c.ours == "crash"]

    @property
    def silent(self) -> list[tuple[str, str]]:
        """(scenario, finding) for every silent change or unlisted assumption `audit` found."""
        return [(c.id, finding) for c in self.cases for finding in c.silent]

    def verdict_causes(self) -> dict[tuple[str, str], list[str]]:
        """(SGLang's class, our verdict) + cause -> scenario ids, the disagreements only."""
        groups: dict[tuple[str, str], list[str]] = {}
        for case in self.cases:
            if not case.agrees:
                groups.setdefault((f"SGLang {case.sglang} / ours {case.ours}", case.cause), []).append(
                    case.id
                )
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def field_causes(self) -> dict[tuple[str, str], list[str]]:
        """field + (SGLang's value, ours, our provenance) -> scenario ids."""
        groups: dict[tuple[str, str], list[str]] = {}
        for case in self.cases:
            for d in case.differences:
                groups.setdefault((d.field, f"SGLang {d.sglang} / ours {d.ours} [{d.why}]"), []).append(
                    case.id
                )
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def warned_accepts(self) -> Counter[str]:
        """Warnings on launches SGLang accepted and loaded (agreeing, but worth a look)."""
        return Counter(
            rule for c in self.cases if c.sglang == ACCEPTS and c.ours == "warned" for rule in c.rules
        )

    def load_agreements(self) -> Counter[str]:
        """How load failures were caught: by a conflict or a warning, and which rules."""
        return Counter(
            f"{c.ours}: {', '.join(c.rules) or '-'}"
            for c in self.cases
            if c.sglang == LOAD_FAILS and c.agrees
        )

    def to_json(self) -> dict[str, Any]:
        agree, total = self.verdict
        fagree, ftotal = self.fields
        return {
            "schema": 1,
            "mode": oracle.MODE,
            "scenarios": total,
            "verdict": {"agree": agree, "total": total, "rate": pct(agree, total)},
            "classes": {
                k: {"agree": a, "total": t, "rate": pct(a, t)} for k, (a, t) in self.by_class().items()
            },
            "fields": {
                "agree": fagree,
                "total": ftotal,
                "rate": pct(fagree, ftotal),
                "per_field": {k: {"agree": a, "total": t} for k, (a, t) in self.per_field().items()},
            },
            "crashes": [{"id": c.id, "detail": c.detail} for c in self.crashes()],
            "silent": [{"scenario": sid, "finding": finding} for sid, finding in self.silent],
            "verdict_disagreements": [
                {"kind": k, "cause": cause, "count": len(ids), "scenarios": ids}
                for (k, cause), ids in self.verdict_causes().items()
            ],
            "field_disagreements": [
                {"field": f, "cause": cause, "count": len(ids), "scenarios": ids}
                for (f, cause), ids in self.field_causes().items()
            ],
            "warned_accepts": dict(self.warned_accepts()),
            "load_failures_caught": dict(self.load_agreements()),
        }


pct = recordfiles.pct


def run(
    pack: Pack,
    records: Iterable[Mapping[str, Any]],
    store: oracle.ConfigStore | None = None,
    *,
    explain: bool = True,
    progress: Callable[[Case], None] | None = None,
) -> Summary:
    cases: list[Case] = []
    for record in records:
        case = replay(pack, record, store, explain=explain)
        cases.append(case)
        if progress is not None:
            progress(case)
    return Summary(cases)


def run_fixture(
    pack: Pack,
    directory: Path,
    scratch: Path,
    select: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
) -> Summary:
    """Replay a compact fixture directory (records.jsonl.gz and configs.json.gz, written by
    `benchmarks/differential.py --fixture`), writing its config files under `scratch`; `select`
    picks the records to replay (all of them by default)."""
    with gzip.open(directory / "configs.json.gz", "rt", encoding="utf-8") as handle:
        configs = json.load(handle)
    store = oracle.ConfigStore(scratch, configs)
    records = list(read_records(directory / "records.jsonl.gz"))
    return run(pack, select(records) if select is not None else records, store, explain=False)


# --- the compact fixture ------------------------------------------------------------------------


def compact(record: Mapping[str, Any], config: str | None) -> dict[str, Any]:
    """What replaying needs of a record: the scenario, SGLang's verdict and decided values."""
    result = record["sglang"]
    out: dict[str, Any] = {"ok": bool(result.get("ok"))}
    if not result.get("ok"):
        error = result.get("error") or {}
        out["error"] = {
            "type": error.get("type"),
            "message": _first(error.get("message", "")),
            "where": error.get("where"),
        }
    else:
        out["resolved"] = result.get("resolved", {})
        out["model"] = result.get("model", {})
        out["warnings"] = [w for w in result.get("warnings") or () if _SHARED_FUSION in w]
        load = result.get("load")
        if load is not None:
            kept: dict[str, Any] = {"ok": load.get("ok")}
            if load.get("error"):
                error = load["error"]
                kept["error"] = {
                    "type": error.get("type"),
                    "check": error.get("check"),
                    "message": _first(error.get("message", "")),
                    "where": error.get("where"),
                }
            out["load"] = kept
    row: dict[str, Any] = {"scenario": record["scenario"], "sglang": out}
    if config is not None:
        row["config"] = config
    return row


def _first(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:300] if lines else ""
