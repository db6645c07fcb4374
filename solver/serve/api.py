"""The configurator's JSON API over the Python API: a pack's description, the state of a request
(choices, resolution with provenance, or conflict with repairs, and the launch command), the
minimal reasons for excluded values, and the facts a pasted `config.json` gives.

Answers are cached by canonical request (pins in pack order) in a bounded LRU, and a request
computed by one thread is awaited, not recomputed, by another: a click answers from the cache
whenever the page, a background warm-up or an earlier click asked the same question. Knows no
launcher: everything the page shows comes from the pack.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from solver.errors import InvalidInput, SolverError, Unsatisfiable
from solver.model import Pack, Pin, Repair, Resolution, Scalar
from solver.serve.reasons import ReasonWorker
from solver.serve.requests import BadRequest, Request, parse_request
from solver.serve.workers import PackProcess
from solver.values import show as value_key  # how the page and JSON object keys spell a value

__all__ = ["Configurator", "Listed", "find_repairs", "halves", "list_choices", "value_key"]

CACHE_ENTRIES = 512
MAX_CONFIG_BYTES = 512 * 1024
_FACT_SOURCES = ("fact", "env", "model-config", "assumed", "detected")


Values = tuple[tuple[str, Scalar], ...]


@dataclass(frozen=True)
class Listed:
    """The choices of some fields for one state: the values possible (in domain order) and, of
    those, each one a warn rule flags with the first such rule."""

    possible: dict[str, list[Scalar]]
    warned: dict[str, dict[Scalar, str]]
    cpu_ms: float = 0.0  # the CPU time it took, in the process that listed it


def list_choices(
    pack: Pack,
    values: Values,
    fields: tuple[str, ...],
    solution: Mapping[str, Scalar] | None = None,
    assumed: Values = (),
) -> Listed:
    """The choices of `fields` for the state `values` (no reasons), each option's under the
    facts `assumed` too, as `resolve` takes them (`choices_under`); `solution`: a known solution
    of `values` (and `assumed`) to start from. Module level: the helper process runs it too."""
    from solver.inputs.pins import collect_pins
    from solver.reasoning.assumedchoices import choices_under
    from solver.reasoning.diagnose import remember_solution

    start = time.thread_time()
    pins = collect_pins(pack, dict(values))
    pinned = {n: Pin(field=n, value=v, source="assumed") for n, v in assumed}
    if solution is not None:
        remember_solution(pack, pins, solution)
        if pinned:
            remember_solution(pack, {**pins, **pinned}, solution)
    found = choices_under(pack, pins, pinned, fields=list(fields), reasons=False)
    first = {n: {v: rules[0] for v, rules in w.items()} for n, w in found.warned.items()}
    return Listed(found.possible, first, (time.thread_time() - start) * 1000)


def find_repairs(pack: Pack, values: Values, keep: tuple[str, ...]) -> tuple[list[Repair], float]:
    """The ranked repairs of the conflicting state `values`, keeping `keep` when they can.
    Module level: the helper process runs it while the server finds the minimal conflict. Without
    that conflict as a hint the search tries more sets of changes, yet finds the same repairs
    (tests/test_serve.py compares). Also the CPU time it took (ms)."""
    from solver.inputs.pins import collect_pins
    from solver.reasoning.diagnose import repairs
    from solver.reasoning.plan import plan_for

    start = time.thread_time()
    found = repairs(plan_for(pack), collect_pins(pack, dict(values)), keep=keep)
    return found, (time.thread_time() - start) * 1000


def halves(pack: Pack, names: Iterable[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields (or `names`) split in two of about equal work (a field's values, the largest
    first, each to the lighter half): the first half for the helper process, the second for the
    server's."""
    loads = [0, 0]
    parts: list[list[str]] = [[], []]
    for name in sorted(pack.fields if names is None else names, key=lambda n: -len(pack.fields[n].domain)):
        at = 0 if loads[0] <= loads[1] else 1
        parts[at].append(name)
        loads[at] += len(pack.fields[name].domain)
    order = {n: i for i, n in enumerate(pack.fields)}
    far, near = (tuple(sorted(p, key=order.__getitem__)) for p in parts)
    return far, near


def prepare(pack: Pack) -> int:
    """`prepare_choices`, then what is alive leaves the collector's sight (`gc.freeze`): a full
    collection walking the pack's tables (125,000 memo entries) put ~30 ms into a later question
    (platform=xpu 25 -> 55 ms). Frozen objects are never collected as cycles, so only a process
    that serves the pack does it, once per pack (never the library's `prepare_choices`)."""
    import gc

    from solver.reasoning.diagnose import prepare_choices

    kept = prepare_choices(pack)
    gc.collect()
    gc.freeze()
    return kept


class _Answers:
    """A bounded LRU of computed answers; concurrent askers of one key share one computation."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._done: OrderedDict[Any, Any] = OrderedDict()
        self._running: dict[Any, threading.Event] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        while True:
            with self._lock:
                if key in self._done:
                    self._done.move_to_end(key)
                    self.hits += 1
                    return self._done[key]
                event = self._running.get(key)
                if event is None:
                    event = self._running[key] = threading.Event()
                    self.misses += 1
                    break
            event.wait()
        try:
            value = compute()
            with self._lock:
                self._done[key] = value
                while len(self._done) > self._size:
                    self._done.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._running[key]
            event.set()

    def known(self, key: Any) -> bool:
        with self._lock:
            return key in self._done


class Configurator:
    """The API of one pack; thread-safe (the compiled pack is; the caches lock)."""

    def __init__(self, pack: Pack) -> None:
        from solver.reasoning.resolution import plan_for

        self.pack = pack
        self.plan = plan_for(pack)
        self._answers = _Answers(CACHE_ENTRIES)
        self._busy = 0  # requests being answered now: the warm-up waits while any is
        self._clicks = 0  # states being answered now: a prefetch gives way to them
        self._busy_lock = threading.Lock()
        self._description: dict[str, Any] | None = None
        self._reason_worker = ReasonWorker(pack)
        # Half of each click's choices are listed in this process beside the server's thread.
        self._helper = PackProcess(pack, lower_priority=False)
        # Every field's listing and the options' (`_choices`), each split in two of equal work.
        self._halves = {names: halves(pack, names) for names in (tuple(pack.fields), tuple(pack.options))}
        self._prefetching = threading.Lock()
        self._helped = threading.local()  # the helper's CPU time for the answer of this thread

    # -- the pack ------------------------------------------------------------------------------
    def description(self) -> dict[str, Any]:
        """Everything the page draws that depends only on the pack."""
        if self._description is None:
            from solver.serve.describe import describe

            self._description = describe(self.pack, self.plan)
        return self._description

    # -- requests ------------------------------------------------------------------------------
    def answer(self, route: str, doc: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to one API call (`state`, `reasons`, `model-config`); raises BadRequest."""
        with self._busy_lock:
            self._busy += 1
            self._clicks += route == "state"
        try:
            start, start_cpu = time.perf_counter(), time.thread_time()
            self._helped.cpu_ms = 0.0
            if route == "state":
                out = self.state(parse_request(self.pack, doc, ("set", "keep")))
            elif route == "reasons":
                out = self.reasons(parse_request(self.pack, doc, ("set", "field")))
            elif route == "model-config":
                out = self.model_config(doc)
            else:
                raise BadRequest(f"no API call named {route!r}")
            out["elapsed_ms"] = round((time.perf_counter() - start) * 1000, 1)
            # This thread's CPU time: what the answer costs on a quiet machine, where the wall
            # time on a shared one also counts the other processes' turns.
            out["cpu_ms"] = round((time.thread_time() - start_cpu) * 1000, 1)
            if self._helped.cpu_ms:  # and the helper process's, for the half it listed
                out["helper_cpu_ms"] = round(self._helped.cpu_ms, 1)
            return out
        finally:
            with self._busy_lock:
                self._busy -= 1
                self._clicks -= route == "state"

    def prefetch(self, doc: Mapping[str, Any]) -> bool:
        """Compute the state of `doc` (a `state` request) into the cache, as the page asks when a
        person rests the pointer on a value: a click on it then finds its answer done or under
        way. Only when no other request is being answered and no other prefetch runs, so that a
        guess never delays a click (the reasons, loading meanwhile, are no click); True when it
        was computed (or known already)."""
        request = parse_request(self.pack, doc, ("set", "keep"))
        if self._clicks or not self._prefetching.acquire(blocking=False):
            return False
        try:
            self.state(request)
            return True
        finally:
            self._prefetching.release()

    def state(self, request: Request) -> dict[str, Any]:
        """Resolution (or conflict and repairs), choices, warnings and the launch command."""
        key = ("state", request.values, request.keep)
        answer: dict[str, Any] = self._answers.get(key, lambda: self._state(request))
        return dict(answer)

    def _state(self, request: Request) -> dict[str, Any]:
        # How long each part took (ms), so a slow click says where its time went.
        parts: dict[str, float] = {}

        def timed(name: str, work: Callable[[], Any]) -> Any:
            start = time.perf_counter()
            try:
                return work()
            finally:
                parts[name] = round((time.perf_counter() - start) * 1000, 1)

        pins = self._pins(request.values)
        # A `state` document (`confsolve schema --kind state`); `verdict` says which of the four.
        out: dict[str, Any] = {
            "schema": 1,
            "status": "state",
            "verdict": "resolved",
            "set": _plain(request.values),
            "parts_ms": parts,
        }
        try:
            res = timed("resolve", lambda: self._resolve(pins))
        except Unsatisfiable as exc:
            if exc.launcher_default is not None:  # a fact's assumed value failed: resolve's own
                return {**out, **timed("conflict", partial(_conflict_doc, exc, request.keep))}
            return {**out, **timed("conflict", lambda: self._conflict(request, pins))}
        except InvalidInput as exc:
            # Facts the pack requires are not given yet (the first clicks of a session): no
            # resolution, but the choices still show what each value depends on.
            return {
                **out,
                "verdict": "incomplete",
                "message": str(exc),
                "needs": [issue.field for issue in exc.issues],
                "choices": timed("choices", lambda: self._choices(request.values)),
            }
        except SolverError as exc:
            return {**out, "verdict": "error", "error": {"message": str(exc)}}
        out["resolution"] = _resolution(res)
        from solver.reasoning.diagnose import remember_solution

        remember_solution(self.pack, pins, res.values)  # the choices below start from it
        assumed = self._answers.get(("assumed", request.values), lambda: _assumed(res))
        out["choices"] = timed("choices", lambda: self._choices(request.values, res.values, assumed))
        out["command"] = timed("command", lambda: self._command(res, pins))
        return out

    def _pins(self, values: Iterable[tuple[str, Scalar]]) -> dict[str, Pin]:
        from solver.inputs.pins import collect_pins

        return collect_pins(self.pack, dict(values))

    def _resolve(self, pins: Mapping[str, Pin]) -> Resolution:
        """The resolution; on failure a bare `Unsatisfiable` (`_conflict` explains it, half in
        the helper), unless the value a fact is assumed at failed: that one comes explained as
        `resolve` explains it (the pins hold together; the assumed fact is in the conflict)."""
        from solver.reasoning.resolution import resolve_pins

        return resolve_pins(self.pack, pins, reasons=True, explain_failure=False, explain_chain=True)

    def _conflict(self, request: Request, pins: Mapping[str, Pin]) -> dict[str, Any]:
        from solver.reasoning.diagnose import unsatisfiable_for

        # The two halves of a conflict at once: its repairs in the helper process (the larger
        # half: each candidate is verified by a resolve) and its minimal conflict here.
        helper = self._helper
        future = helper.submit(find_repairs, request.values, request.keep) if helper.ready else None

        def given() -> list[Repair] | None:
            done = helper.result(future) if future is not None else None
            if done is None:  # no helper, or it died: the repairs are found here
                return None
            self._helped.cpu_ms = getattr(self._helped, "cpu_ms", 0.0) + done[1]
            return done[0]

        return _conflict_doc(
            unsatisfiable_for(self.plan, pins, keep=request.keep, repairs_given=given), request.keep
        )

    def _choices(
        self, values: Values, solution: Mapping[str, Scalar] | None = None, assumed: Values = ()
    ) -> dict[str, Any]:
        """Per field: possible values, excluded ones with their scope, warned ones with the rule.

        As the next `resolve` takes them: an option's values under the facts the resolution
        `assumed` (a model nobody gave: FLASHMLA is refused for the head size assumed), a fact's
        under the inputs as given (setting a fact makes resolve assume the others anew). Scope
        `facts`: excluded by the given facts alone (impossible on this hardware or model);
        `assumed`: by those and the assumed facts, an option's value the given facts alone
        allow (possible for another model or machine: set the fact); `choices`: by the options
        set. `solution`: a solution of `values` (the resolution), where witnesses start."""
        facts_only = tuple((n, v) for n, v in values if self.pack.fields[n].kind == "fact")
        given = solution if facts_only == values else None  # (the resolution keeps all of them)
        by_assumed = self._possible(facts_only, given, assumed)
        # Under the given facts alone, a fact's values are `by_assumed`'s (listed without the
        # assumed facts): only the options are listed again. (Known from the click that gave
        # the facts, mostly; its refutations then hold under more pins, `Supports`.)
        by_facts = self._possible(facts_only, given, (), by_assumed if assumed else None)
        full = by_assumed if facts_only == values else self._possible(values, solution, assumed)

        def scope(name: str, value: Scalar) -> str:
            if value not in by_facts.possible[name]:
                return "facts"
            if value not in by_assumed.possible[name]:
                return "assumed"  # (a fact's listing takes no assumed facts: never for a fact)
            return "choices"

        out: dict[str, Any] = {}
        for name, possible in full.possible.items():
            excluded = {
                value_key(v): scope(name, v) for v in self.pack.fields[name].domain if v not in possible
            }
            out[name] = {
                "possible": [value_key(v) for v in possible],
                "excluded": excluded,
                "warned": {
                    value_key(v): {"rule": rid, "because": self.pack.rule(rid).because}
                    for v, rid in full.warned[name].items()
                },
            }
        return out

    def _possible(
        self,
        values: Values,
        solution: Mapping[str, Scalar] | None = None,
        assumed: Values = (),
        facts_from: Listed | None = None,
    ) -> Listed:
        """The values each field can take given the others (exact; an option's under the facts
        `assumed` too), and the first warn rule of each warned one. `facts_from`: a listing of
        the same `values` whose facts' values are taken as they are (only the options are
        listed)."""
        fields = self.pack.fields

        def compute() -> Listed:
            if facts_from is None:
                return self._listed(values, solution, assumed, tuple(fields))
            options = self._listed(values, solution, assumed, tuple(self.pack.options))
            part = {n: options if fields[n].kind == "option" else facts_from for n in fields}
            return Listed({n: part[n].possible[n] for n in fields}, {n: part[n].warned[n] for n in fields})

        result: Listed = self._answers.get(("possible", values, assumed), compute)
        return result

    def _listed(
        self, values: Values, solution: Mapping[str, Scalar] | None, assumed: Values, names: tuple[str, ...]
    ) -> Listed:
        """`list_choices` of `names`: their half (`halves`) in the helper process when it is
        ready (both halves at once: a click waits for the longer one), the other half here."""
        far, near = self._halves.get(names) or halves(self.pack, names)
        given = dict(solution) if solution is not None else None
        future = (
            self._helper.submit(list_choices, values, far, given, assumed) if self._helper.ready else None
        )
        mine = list_choices(self.pack, values, near if future is not None else names, None, assumed)
        theirs = self._helper.result(future) if future is not None else None
        if future is not None and theirs is None:  # the helper died: its half is done here
            theirs = list_choices(self.pack, values, far, None, assumed)
        if theirs is None:
            return mine
        self._helped.cpu_ms = getattr(self._helped, "cpu_ms", 0.0) + theirs.cpu_ms
        return Listed(
            {n: mine.possible.get(n, theirs.possible.get(n, [])) for n in names},
            {n: mine.warned.get(n, theirs.warned.get(n, {})) for n in names},
        )

    def _command(self, res: Resolution, pins: Mapping[str, Pin]) -> dict[str, Any]:
        from solver.serve.command import launch_command

        return launch_command(self.pack, res, pins)

    def reasons(self, request: Request) -> dict[str, Any]:
        """The minimal reason of each excluded value of one field (or of every field): for a value
        the facts alone exclude, the reason among the facts; otherwise among all the inputs."""
        found = self._reasons(request.values)
        names = [request.field] if request.field else list(self.pack.fields)
        return {
            "schema": 1,
            "status": "reasons",
            "set": _plain(request.values),
            "reasons": {name: found.get(name, {}) for name in names},
        }

    def _reasons(self, values: Values) -> dict[str, dict[str, Any]]:
        def compute() -> dict[str, dict[str, Any]]:
            # Under the facts the state's resolution assumed (known when the state was answered).
            assumed = self._answers.get(("assumed", values), lambda: self._assumed_of(values))
            return self._reason_worker.reasons(values, assumed)

        result: dict[str, dict[str, Any]] = self._answers.get(("reasons", values), compute)
        return result

    def _assumed_of(self, values: Values) -> Values:
        """The facts the resolution of `values` assumes; none when it does not resolve."""
        try:
            return _assumed(self._resolve(self._pins(values)))
        except SolverError:
            return ()

    def start_helper(self) -> None:
        """Start the process that lists half of each click's choices (the pack loaded and the
        no-input choices prepared there); until it is ready, this process lists them all."""
        self._helper.start(prepare)

    def close(self) -> None:
        """Stop the worker processes (the server calls it when it closes)."""
        self._reason_worker.close()
        self._helper.close()

    def model_config(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """The facts a pasted `config.json` gives (`{"config": {...}}`), as the CLI reads them."""
        from solver.inputs.modelconfig import facts_from_model_config
        from solver.serve.requests import _known_keys

        _known_keys(doc, ("config",))
        config = doc.get("config")
        if not isinstance(config, dict):
            raise BadRequest("'config' must be the JSON object of a model's config.json")
        if not self.pack.model_config_map:
            raise BadRequest(f"pack {self.pack.name!r} reads no model config")
        import json

        text = json.dumps(config)
        if len(text) > MAX_CONFIG_BYTES:
            raise BadRequest(f"the config is {len(text)} bytes; at most {MAX_CONFIG_BYTES}")
        with tempfile.TemporaryDirectory(prefix="confsolve-serve-") as tmp:
            path = Path(tmp) / "config.json"
            path.write_text(text, encoding="utf-8")
            notes: list[str] = []
            try:
                facts = facts_from_model_config(self.pack, path, notes=notes)
            except InvalidInput as exc:
                message = str(exc).replace(os.fspath(path), "the pasted config.json")
                raise BadRequest(message, [i.to_json() for i in exc.issues]) from None
        found = {name: value_key(pin.value) for name, pin in facts.items()}
        answer: dict[str, Any] = {"schema": 1, "status": "facts", "facts": found}
        if notes:  # what was read as the launcher reads it, not as written
            answer["notes"] = [note.replace(os.fspath(path), "the pasted config.json") for note in notes]
        return answer

    # -- warm-up -------------------------------------------------------------------------------
    def warm(self, stop: threading.Event, states: Iterable[tuple[tuple[str, Scalar], ...]]) -> int:
        """Compute the given states (and their reasons) into the cache, pausing while a request is
        being answered so that the warm-up never slows a click; returns how many it computed."""
        done = 0
        for values in states:
            for job in (self.state, self.reasons):
                while self._busy and not stop.is_set():
                    time.sleep(0.02)
                if stop.is_set():
                    return done
                job(Request(values=values))
            done += 1
        return done

    def first_states(self, limit: int = 64) -> list[tuple[tuple[str, Scalar], ...]]:
        """The states a session starts from: nothing set, then each value of the first required
        facts in turn (platform, then GPU), as far as `limit` goes; impossible pairs skipped."""
        required = [n for n, f in self.pack.fields.items() if f.kind == "fact" and f.required]
        states: list[tuple[tuple[str, Scalar], ...]] = [()]
        frontier: list[tuple[tuple[str, Scalar], ...]] = [()]
        for name in required[:2]:
            nxt = []
            for base in frontier:
                possible = self._possible(base).possible.get(name, [])
                for value in possible:
                    nxt.append((*base, (name, value)))
            states += nxt
            frontier = nxt
            if len(states) >= limit:
                break
        return states[:limit]

    @property
    def cache_stats(self) -> dict[str, int]:
        return {"hits": self._answers.hits, "misses": self._answers.misses}


def _conflict_doc(exc: Unsatisfiable, keep: Iterable[str]) -> dict[str, Any]:
    """A conflict's part of a state: each repair with the kept fields it changes (`undoes`), and
    `lead` when the failure is of a fact's assumed value (what resolve says first)."""
    doc = exc.to_json()
    kept = set(keep)
    repairs = []
    for repair in doc["repairs"]:
        touched = set(repair["unset"]) | set(repair["set"])
        repairs.append({**repair, "undoes": sorted(touched & kept)})
    out = {
        "verdict": "conflict",
        "conflict": doc["conflict"],
        "message": doc["message"],
        "repairs": repairs,
        "kept": bool(repairs) and not any(r["undoes"] for r in repairs),
    }
    if exc.lead:
        out["lead"] = exc.lead
    return out


def _assumed(res: Resolution) -> Values:
    return tuple((a.field, a.value) for a in res.assumed)


def _plain(values: Iterable[tuple[str, Scalar]]) -> dict[str, str]:
    return {n: value_key(v) for n, v in values}


def _resolution(res: Resolution) -> dict[str, Any]:
    doc = res.to_json()
    return {
        "values": {n: value_key(v) for n, v in res.values.items()},
        "provenance": doc["provenance"],
        "adjustments": doc["adjustments"],
        "warnings": doc["warnings"],
        "assumed": doc.get("assumed", []),
    }
