"""Compile once, answer many: the diagram counter's search of a whole pack written down as a
decision-DNNF (`CompiledCount`), and any count of that pack under pins answered by one pass over
the part of it the pins touch.

`DiagramCounter`'s search with component caching is the trace of a decision-DNNF: a component (a
set of rule residuals) branches on one field (a decision node), each value leaves a product of
independent components (an AND node), and equal components are one cached node (a DAG). Here
that search runs once over the pack with no pins and keeps, per component, its field, the fields
it reads and its count, and per branch an *arm*: the set of values of the field that lead to the
same residuals (as bits), the fields then free, the child components, and the one-field parts as
value masks (`(level, mask)`: what a two-field component's second field allows is one too).

A count under pins is that DAG with weight 0 on the values a pin excludes: a node's count under
pins is the sum over its arms of (values of the arm the pins keep) x (free combinations the pins
keep) x (its children's counts) x (values each mask leaves that the pins keep). It is exact
because the trace branched on every value (no pin pruned it: the compile has none) and the
components were split by the rules alone, never by a pin. A node whose fields no pin touches
keeps the count it was compiled with, so a query recomputes only the nodes above its pins (on
the SGLang pack's 105k nodes and 631k arms: `platform=cuda` 642 arms, the whole pack one). A
split by a field's values is one pass down (`split`: derivatives), not one count per value.
A field may count only some of its values when no pin is on it (`counted`: a `given(FIELD)`
field counts False, the pack as loaded); its other values are still compiled, for a pass that
pins them.

Where it is used (`solver.engine.count`, for a count with a step limit above `SEARCH_FIRST` and
no time limit): a compiled form kept for the pack (in this process, or on disk next to the pack
cache, by pack digest and code) answers; without one, the count searches first and compiles the
pack only when its search passes `SEARCH_FIRST` steps (a narrow query stays a search of a
fraction of a second; a wide one pays one whole-pack compile, about the whole pack's search,
then every later count of the pack is a pass). Measured: benchmarks/README.md "Count", round
perfcount9.

Imports the standard library and `solver.engine.countfile` / `countlimit` / `diagrams`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from solver.engine.countfile import FORMAT, Arm, Record, Records, header_line, read_buffer
from solver.engine.countlimit import FIELDS_PER_STEP, Limit, Progress, StepMeter
from solver.engine.diagrams import DiagramCounter
from solver.values import same

__all__ = ["FORMAT", "SEARCH_FIRST", "CompiledCount", "compile_count"]

# Steps a count searches before it compiles the whole pack instead: the narrow queries of the
# SGLang pack finish well under it (cuda + sm100 + DeepSeek-V3: 32k steps, 0.3 s), the wide ones
# (`platform=cuda` 0.72 million, cuda + sm90 0.17 million) are cheaper compiled once (the whole
# pack: ~1 million steps) and then answered by passes.
SEARCH_FIRST = 100_000


class CompiledCount:
    """A pack's compiled count: `records` (one per node, children before parents; a list, or
    `Records` read lazily from disk: `solver.engine.countfile`) and the root arm over every field."""

    def __init__(
        self,
        order: Sequence[str],
        sizes: Sequence[int],
        records: Sequence[Record],
        root: Arm,
        counted: Mapping[int, int] | None = None,
    ) -> None:
        self.order = list(order)
        self.sizes = list(sizes)
        self.records, self.root = records, root
        self.level = {name: at for at, name in enumerate(self.order)}
        # Level -> the values a node's count counts when no pin is on it, as bits (every value
        # when not listed): a `given(FIELD)` field counts only False, the pack as loaded.
        self.counted = dict(counted or {})
        self.steps = 0  # the search steps that compiled it (0 when read from disk)

    def count(
        self,
        domains: Mapping[str, Sequence[Any]],
        pins: Mapping[str, Any] | None = None,
        *,
        limit: Limit | None = None,
        progress: Progress | None = None,
    ) -> tuple[int, int]:
        """The number of assignments that keep `pins` (values of `domains`, the pack's), and
        the arms recomputed for it (its steps, ticked on `limit` as a search's are).

        Raises ValueError when a record read from disk is malformed."""
        meter = StepMeter(limit or Limit(steps=None), progress)
        return _Pass(self, domains, pins, meter).root(), meter.steps

    def split(
        self,
        domains: Mapping[str, Sequence[Any]],
        pins: Mapping[str, Any] | None,
        by: str,
        *,
        limit: Limit | None = None,
        progress: Progress | None = None,
    ) -> tuple[list[int], int]:
        """The count under `pins` split by the values of `by` (one number per value of
        `domains[by]`, in its order), and the arms read for it.

        One pass down from the root instead of one count per value: a count is linear in the
        weight of each value of `by` (every model has one), so a value's part is the derivative
        of the count by its weight. Going down in reverse order of the nodes (parents first), a
        node reading `by` gets, from each arm that reaches it, the product of that arm's other
        factors times the parent's own factor; an arm where `by` is the branched field, a free
        field or a one-field mask adds that product to the parts of the values it keeps."""
        at_by = self.level[by]
        run = _Pass(self, domains, pins, StepMeter(limit or Limit(steps=None), progress))
        down = _Down(run, at_by, run.allowed.get(at_by, -1) & ((1 << self.sizes[at_by]) - 1))
        down.spread(self.root, -1, 1)
        down.finish()
        return down.parts, run.meter.steps

    def _allowed(
        self, domains: Mapping[str, Sequence[Any]], pins: Mapping[str, Any] | None
    ) -> tuple[dict[int, int], int]:
        """Level -> the values counted, as bits (the pins', else `counted`'s), and the levels
        whose values differ from the compiled counts' (the pinned ones), as bits."""
        allowed = dict(self.counted)
        pinned = 0
        for name, pin in (pins or {}).items():
            level = self.level[name]
            keep = sum(1 << at for at, value in enumerate(domains[name]) if same(value, pin))
            if keep != self.counted.get(level, (1 << self.sizes[level]) - 1):
                pinned |= 1 << level
            allowed[level] = keep
        return allowed, pinned

    # -- on disk: a JSON header, then one line of numbers per node (parsed when a pass needs it)
    def to_bytes(self, key: str = "") -> bytes:
        """`key`: what it was compiled from (the pack's whole digest), checked when read back."""
        records = self.records
        if isinstance(records, Records):  # its lines as they are, under a header with `key`
            return self._header(key) + records.tail()
        lines = [_line(_flat(self.root))]
        for level, reads, count, arms in records:
            numbers = [level, reads, count, len(arms)]
            for arm in arms:
                numbers += _flat(arm)
            lines.append(_line(numbers))
        return self._header(key) + "".join([line + "\n" for line in lines]).encode()

    def _header(self, key: str) -> bytes:
        return header_line(key, self.order, self.sizes, self.counted, len(self.records))

    @classmethod
    def from_bytes(cls, data: bytes, key: str = "") -> CompiledCount:
        """Raises ValueError on data this module did not write (a record is checked when read)
        or wrote for another `key` (a file name holds only the start of a digest)."""
        return cls(*read_buffer(data, key))


def _flat(arm: Arm) -> list[int]:
    mask, free, kids, parts = arm
    return [mask, free, len(kids), *kids, len(parts), *parts]


def _line(numbers: list[int]) -> str:
    return " ".join(map(str, numbers))  # decimal: parsed 40 % faster than hex (map(int, ...))


class _Pass:
    """One count under pins (`allowed`: level -> the values kept, as bits): a node no pin
    touches keeps its compiled count; the others are recomputed once each."""

    def __init__(
        self,
        dag: CompiledCount,
        domains: Mapping[str, Sequence[Any]],
        pins: Mapping[str, Any] | None,
        meter: StepMeter,
    ) -> None:
        self.dag, self.meter = dag, meter
        self.allowed, self.pinned = dag._allowed(domains, pins)
        self.memo: dict[int, int] = {}
        self.spans: dict[int, int] = {}

    def node(self, at: int) -> int:
        found = self.memo.get(at)  # (an untouched node's too: a record is looked up once)
        if found is None:
            level, reads, found, arms = self.dag.records[at]
            if reads & self.pinned:
                keep = self.allowed.get(level, -1)
                found = 0
                for arm in arms:
                    found += self.arm(arm, keep)
            self.memo[at] = found
        return found

    def root(self) -> int:
        _, free, kids, parts = self.dag.root
        return self.arm((1, free, kids, parts), -1)  # the root arm stands for no field's value

    def arm(self, arm: Arm, keep: int) -> int:
        """The count of `arm` of a node whose field keeps the values `keep` (bits)."""
        mask, free, kids, parts = arm
        self.meter.tick(1 + len(kids) // FIELDS_PER_STEP)
        total = (mask & keep).bit_count()
        if total and free:
            total *= self.span(free)
        for at in range(0, len(parts), 2):
            if not total:
                return 0
            total *= (parts[at + 1] & self.allowed.get(parts[at], -1)).bit_count()
        for kid in kids:
            if not total:
                return 0
            total *= self.node(kid)
        return total

    def span(self, free: int) -> int:
        """The combinations of the fields in `free` the pins keep."""
        found = self.spans.get(free)
        if found is None:
            found, sizes, allowed = 1, self.dag.sizes, self.allowed
            bits = free
            while bits:
                low = bits & -bits
                level = low.bit_length() - 1
                bits ^= low
                kept = allowed.get(level)
                found *= sizes[level] if kept is None else (kept & ((1 << sizes[level]) - 1)).bit_count()
            self.spans[free] = found
        return found


class _Down:
    """The downward pass of `CompiledCount.split` over the nodes that read the level `by`."""

    def __init__(self, run: _Pass, by: int, keep: int) -> None:
        self.run, self.by, self.keep = run, by, keep
        self.parts = [0] * run.dag.sizes[by]
        self.weights: dict[int, int] = {}  # node -> the derivative of the count by its count
        self.queue: list[int] = []  # nodes as negative ids: the latest (a parent) first

    def finish(self) -> None:
        """Every node reached, parents before children (a child's id is below its parents')."""
        records = self.run.dag.records
        while self.queue:
            at = -heapq.heappop(self.queue)
            level, _, _, arms = records[at]
            weight = self.weights.pop(at)
            for arm in arms:
                self.spread(arm, level, weight)

    def spread(self, arm: Arm, level: int, weight: int) -> None:
        """Hand `weight` x the arm's factors other than the one reading `by` to that one."""
        run, by, records, allowed = self.run, self.by, self.run.dag.records, self.run.allowed
        mask, free, kids, parts = arm
        run.meter.tick(1 + len(kids) // FIELDS_PER_STEP)
        reading = mask if level == by else -1  # the values a mask on `by` keeps (-1: no mask)
        factor = weight
        if level >= 0 and level != by:
            factor *= (mask & allowed.get(level, -1)).bit_count()
        if free:
            if free >> by & 1:
                reading, free = self.keep, free & ~(1 << by)
            factor *= run.span(free)
        for at in range(0, len(parts), 2):
            if parts[at] == by:
                reading = parts[at + 1]
            else:
                factor *= (parts[at + 1] & allowed.get(parts[at], -1)).bit_count()
        below = -1
        for kid in kids:
            if records[kid][1] >> by & 1:
                below = kid
            else:
                factor *= run.node(kid)
        if not factor:
            return
        if below >= 0:
            if below in self.weights:
                self.weights[below] += factor
            else:
                self.weights[below] = factor
                heapq.heappush(self.queue, -below)
            return
        bits = reading & self.keep if reading >= 0 else 0
        while bits:
            low = bits & -bits
            self.parts[low.bit_length() - 1] += factor
            bits ^= low


def compile_count(
    counter: DiagramCounter,
    *,
    counted: Mapping[str, Sequence[bool]] | None = None,
    limit: Limit | None = None,
    progress: Progress | None = None,
) -> CompiledCount:
    """The whole pack's count of `counter` (no pins) written down; raises `CountLimitReached`
    (without bounds: they would be of the pack, not of a query) when `limit` runs out.

    `counted`: fields whose counts count only some of their values when no pin is on them (a
    `given(FIELD)` field: only False). Every value is still branched on and kept (a pass with a
    pin on the field counts the others), only the counts in the records leave them out."""
    meter = StepMeter(limit or Limit(steps=None), progress)
    level = counter.diagrams.level
    weights = {
        level[name]: sum(1 << at for at, keep in enumerate(flags) if keep)
        for name, flags in (counted or {}).items()
    }
    with counter.diagrams.lock:
        compiled = _Compiler(counter, meter, weights).run()
    compiled.steps = meter.steps
    return compiled


class _Compiler:
    """`DiagramCounter._component` / `_product` recording nodes and arms instead of summing.

    A component with no model is left out of its parent (never recorded as an arm); a count
    that is 0 only because of `counted` is not: its arms are what a pin on such a field reads.
    A node has a model when it has an arm."""

    def __init__(self, counter: DiagramCounter, meter: StepMeter, counted: dict[int, int]) -> None:
        self.counter, self.meter, self.counted = counter, meter, counted
        # Each node written as its line at once (SGLang: 677k arms as tuples held ~175 MB until
        # the end; as text 20 MB), with its count and whether it has a model.
        self.lines: list[str] = []
        self.counts: list[int] = []
        self.models: list[bool] = []
        self.cache: dict[tuple[int, ...], int] = {}
        self.zero = -1  # the node of a component with no model (made when first needed)

    def run(self) -> CompiledCount:
        counter = self.counter
        residuals = [u for u in counter.roots if u != 1]
        everything = (1 << len(counter.sizes)) - 1
        if 0 in residuals:
            root: Arm = (1, 0, (self._zero(),), ())
        else:
            root, _, _ = self._product(counter._split(residuals), everything, 1)
        dd = counter.diagrams
        lines = [_line(_flat(root)), *self.lines]
        body = "".join([line + "\n" for line in lines]).encode()
        self.lines.clear()
        return CompiledCount.from_bytes(
            header_line("", dd.order, counter.sizes, self.counted, len(self.counts)) + body
        )

    def _weight(self, level: int, values: int) -> int:
        """How many of `values` (bits of the field at `level`) a compiled count counts."""
        return (values & self.counted.get(level, -1)).bit_count()

    def _span(self, free: int) -> int:
        total = self.counter._span(free)
        for level, keep in self.counted.items():
            if free >> level & 1:
                total = total // self.counter.sizes[level] * self._weight(level, keep)
        return total

    def _node(self, level: int, reads: int, count: int, arms: list[Arm]) -> int:
        numbers = [level, reads, count, len(arms)]
        for arm in arms:
            numbers += _flat(arm)
        self.lines.append(_line(numbers))
        self.counts.append(count)
        self.models.append(bool(arms))
        return len(self.counts) - 1

    def _zero(self) -> int:
        if self.zero < 0:
            self.zero = self._node(0, 0, 0, [])
        return self.zero

    def _product(
        self,
        components: dict[int, list[int]],
        fields: int,
        mask: int,
        apart: dict[int, list[int]] | None = None,
        known: dict[int, tuple[int, int]] | None = None,
    ) -> tuple[Arm, int, bool]:
        """The arm of `mask`'s values over independent `components` (`_split`) within `fields`,
        its count per value, and whether it has a model. `known`: the nodes of `apart`'s
        untouched components, shared by every value of the branch (filled in as compiled)."""
        counter = self.counter
        read = 0
        for bits in components:
            read |= bits
        free = fields & ~read
        total = self._span(free)
        kids: list[int] = []
        parts: list[int] = []
        models = True
        for bits, members in components.items():
            if not bits & (bits - 1):  # one field: a mask
                allowed = -1
                for u in members:
                    allowed &= counter._mask(u)
                level = bits.bit_length() - 1
                allowed &= (1 << counter.sizes[level]) - 1
                parts += (level, allowed)
                total *= self._weight(level, allowed)
                models = models and allowed != 0
                continue
            shared = apart is not None and known is not None and apart.get(bits) is members
            found = known.get(bits) if shared and known is not None else None
            if found is None:
                found = self._component(members, bits)
                if shared and known is not None:
                    known[bits] = found
            kid, sub = found
            kids.append(kid)
            total *= sub
            models = models and self.models[kid]
        if not models:
            return (mask, 0, (self._zero(),), ()), 0, False
        return (mask, free, tuple(kids), tuple(parts)), total, True

    def _component(self, residuals: list[int], fields: int) -> tuple[int, int]:
        """The node of a component (its id and count), compiled once per set of residuals."""
        key = tuple(sorted(set(residuals)))
        found = self.cache.get(key)
        if found is not None:
            return found, self.counts[found]
        counter = self.counter
        restrict = counter.diagrams.restrict
        level = counter._choose(residuals, fields)
        rest = fields & ~(1 << level)
        live, rows, deep, rest_residuals = counter._classify(residuals, level)
        two_fields = rest and not rest & (rest - 1)
        other = rest.bit_length() - 1
        last = 0
        if two_fields:
            last = (1 << counter.sizes[other]) - 1
            for u in rest_residuals:
                last &= counter._mask(u)
        apart = counter._split(rest_residuals)
        known: dict[int, tuple[int, int]] = {}
        cost = 1 + fields.bit_count() // FIELDS_PER_STEP
        groups: dict[Any, int] = {}  # what the values leave -> those values, as bits
        while live:
            index = (live & -live).bit_length() - 1
            live &= live - 1
            self.meter.tick(cost)
            kids = [row[index] for row in rows]
            if deep:
                kids += [restrict(u, level, index) for u in deep]
            if two_fields:
                allowed = last
                for kid in kids:
                    allowed &= counter._mask(kid)
                if allowed:
                    groups[allowed] = groups.get(allowed, 0) | 1 << index
            elif 0 not in kids:
                same_kids = tuple(kids)
                groups[same_kids] = groups.get(same_kids, 0) | 1 << index
        arms: list[Arm] = []
        total = 0
        for left, values in groups.items():
            if two_fields:
                arm: Arm = (values, 0, (), (other, left))
                sub, models = self._weight(other, left), True
            else:
                arm, sub, models = self._product(
                    counter._split([k for k in left if k != 1], apart), rest, values, apart, known
                )
            if models:
                arms.append(arm)
                total += self._weight(level, values) * sub
        found = self.cache[key] = self._node(level, fields, total, arms)
        return found, total
