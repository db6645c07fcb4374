"""Where a counter starts: the domains a model counter's root starts from (`root_domains`: the
pack's own, less the values a set of checks refutes on their own, before propagation; the checks
a root looks at and a start over the fields a query reads only, both of a counter's
`StartState`), and the field a diagram counter branches on first (`first_field`).

Imports only the standard library (the diagrams are `solver.engine.diagrams.Diagrams`, read).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.engine.diagrams import Diagrams
    from solver.model import Scalar

__all__ = [
    "ROOT_CANDIDATES",
    "Propagate",
    "StartState",
    "first_field",
    "left_open",
    "root_domains",
    "settled_rules",
]


def root_domains(
    refutes: Sequence[Mapping[str, frozenset[Any]]],
    checks: Sequence[int],
    open_: Mapping[str, tuple[Scalar, ...]],
    fixed_: Mapping[str, Scalar],
) -> tuple[dict[str, tuple[Scalar, ...]], dict[str, Scalar], list[str]] | None:
    """The free domains and fixed values of `open_` / `fixed_` less the values `checks` refute
    (a field left with one value moves to the fixed ones, the others keep field order), and the
    fields narrowed so; None when a domain empties."""
    dead: dict[str, set[Any]] = {}
    for index in checks:
        for name, values in refutes[index].items():
            if values:
                dead.setdefault(name, set()).update(values)
    doms, fixed = dict(open_), dict(fixed_)
    for name, gone in dead.items():
        if name in fixed:
            if fixed[name] in gone:
                return None
            continue
        domain = doms[name]
        kept = tuple(v for v in domain if v not in gone)
        if not kept:
            return None
        if len(kept) == 1:
            del doms[name]
            fixed[name] = kept[0]
        elif len(kept) != len(domain):
            doms[name] = kept
    return doms, fixed, list(dead)


# A counter's propagation (`ModelCounter._propagate`): the checks, the checks to look at, the free
# domains and the fixed values (both narrowed in place); the checks left open, or None.
Propagate = Callable[[list[int], list[int], dict[str, tuple[Any, ...]], dict[str, Any]], list[int] | None]


class StartState:
    """What every root of a model counter starts from (`ModelCounter.start`): its fields' domains
    split into the free (`open`) and the fixed ones, whether one is empty, each check's fields
    and refuted values (the counter's own lists: a check it adds later is read too), and which
    checks propagation leaves quiet at the start (`loud_among`). Its own object so that the
    roots (`domains`, `local_root`) read no private state of the counter."""

    __slots__ = ("empty", "fields", "fixed", "loud", "open", "quiet", "refutes")

    def __init__(
        self,
        domains: Mapping[str, tuple[Scalar, ...]],
        fields: Sequence[tuple[str, ...]],
        refutes: Sequence[Mapping[str, frozenset[Any]]],
    ) -> None:
        self.fields = fields
        self.refutes = refutes
        # A root copies these and narrows only the fields its checks refute values of (a pass
        # over every field's values per root: 15 % of lint's profile at 1,000 synthetic fields).
        self.open = {n: d for n, d in domains.items() if len(d) > 1}
        self.fixed = {n: d[0] for n, d in domains.items() if len(d) == 1}
        self.empty = any(not d for d in domains.values())
        self.quiet: dict[int, bool] = {}  # per check looked at: left open, nothing narrowed
        self.loud: set[int] = set()  # the checks looked at that are not quiet

    def domains(
        self, checks: Sequence[int]
    ) -> tuple[dict[str, tuple[Scalar, ...]], dict[str, Scalar], list[str]] | None:
        """`root_domains` of the counter's own domains for `checks` (None: a domain is empty)."""
        return None if self.empty else root_domains(self.refutes, checks, self.open, self.fixed)

    def local_root(
        self, only: Collection[int], extra: Collection[int], pins: Mapping[str, Scalar] | None
    ) -> tuple[list[int], dict[str, tuple[Scalar, ...]], dict[str, Scalar], frozenset[int]] | None:
        """A model counter's start for a query over the checks `only` (with `extra`) that needs
        only the values of the fields they and `pins` read: those fields' domains less the values
        `only` refutes, not propagated (the checks, the domains, the fixed values and the checks
        as a set, as `ModelCounter._root`'s; the caller propagates every check). Lint's ring
        witnesses (`around`) pin hundreds of fields outside a ring of a few hundred rules of a
        1,000-field pack, each ring new: a root of the ring's rules over every field of the pack,
        propagated and copied, then narrowed by the pins, cost the pack per witness. The same
        search: forward checking reaches one fixpoint in any order, the fields keep the pack's
        order, and a field no check reads is never searched (a root's leaves it at its first
        value)."""
        if self.empty:
            return None
        checks = sorted(only)
        read = set(chain.from_iterable(map(self.fields.__getitem__, chain(checks, extra))))
        read.update(pins or ())
        open_ = {n: d for n, d in self.open.items() if n in read}
        start = root_domains(self.refutes, checks, open_, {n: v for n, v in self.fixed.items() if n in read})
        return None if start is None else (checks, start[0], start[1], frozenset(checks))

    def loud_among(self, chosen: set[int], propagate: Propagate) -> list[int]:
        """The checks of `chosen` that propagation does not leave quiet at the start (in index
        order), each looked at once per counter (`quiet_at_start`)."""
        for index in sorted(chosen.difference(self.quiet)):
            self.quiet_at_start(index, propagate)
        return sorted(chosen & self.loud)

    def quiet_at_start(self, index: int, propagate: Propagate) -> None:
        """Whether propagation leaves check `index` open and narrows nothing when its fields hold
        their whole domains, kept in `quiet` (`ModelCounter._root` looks at the others, `loud`,
        only)."""
        names = self.fields[index]
        doms = {n: self.open[n] for n in names if n in self.open}
        before = dict(doms)
        values = {n: self.fixed[n] for n in names if n in self.fixed}
        live = len(doms) > 1 and propagate([index], [index], doms, values) == [index]
        if not (quiet := live and doms == before):
            self.loud.add(index)
        self.quiet[index] = quiet


# Fields of the most settling that the look-ahead of `first_field` compares (SGLang: architecture,
# quantization, platform; moe_runner_backend settles 25 rules to their 44-46), and values of each it
# fixes at most (evenly spaced): each costs a restrict of every rule per round of forced fields
# (vLLM's block_size, 258 values: 0.65 s at load 11; 16 of them, 0.04 s, the average within 1 %;
# the whole look-ahead ~0.05 s per counter on either pack).
ROOT_CANDIDATES = 4
ROOT_VALUES = 16


def first_field(dd: Diagrams, roots: Sequence[int]) -> str:
    """The field a diagram counter branches on first: of the `ROOT_CANDIDATES` fields whose values
    settle the most rules (`settled_rules`; those that settle at least half as many as the first),
    the one whose values leave the fewest rules open once each value and what it forces are fixed
    (`left_open`), the more settling on a tie.

    Settling alone is a near tie on both shipped packs, and a rule added tips it. SGLang's
    `architecture` and `quantization` are within one rule (46.08 / 45.33); a rule added on
    `quantization` tipped it (46.30) and the shipped compile went from 2.1 million steps to past 5
    (rounds 16 and 17 wrote their rules around it: round 16's AWQ rule, past 12 minutes with
    `quantization` first, compiles in 3.57 million steps with `architecture` first). vLLM's
    `block_size` (258 values) had tipped past `attention_backend` unnoticed (45.65 / 44.38), and
    its compile took 1.31 million steps where `attention_backend` first takes 26,549.

    After the first branch the count fixes every field a one-field residual pins, and there the
    right root is far ahead: a model's traits follow from its SGLang `architecture` (170 of 261
    rules left open; `quantization` 203, `platform` 202), and a vLLM backend decides most of that
    pack (67 of 168; `block_size` 120). Measured: benchmarks/README.md "Count", round fix18."""
    settled = settled_rules(dd, roots)
    ranked = sorted(range(len(settled)), key=lambda level: (-settled[level], level))[:ROOT_CANDIDATES]
    candidates = [level for level in ranked if 2 * settled[level] >= settled[ranked[0]]]
    scratch = dd.scratch()  # (the counter's own diagrams keep their node ids)
    return dd.order[
        min(candidates, key=lambda level: (left_open(scratch, roots, level), candidates.index(level)))
    ]


def left_open(dd: Diagrams, roots: Sequence[int], level: int) -> float:
    """The rules left open, on average over the values of the field at `level` (`ROOT_VALUES` of
    them, evenly spaced, when it has more), once the value is fixed and then, in turn, each field
    a one-field residual allows one value of (what the count branches on next, at no cost); a
    value that makes a rule false leaves none (the count stops there)."""
    size = len(dd.domains[level])
    every = range(size) if size <= ROOT_VALUES else {at * size // ROOT_VALUES for at in range(ROOT_VALUES)}
    left = [_open_after(dd, [dd.restrict(u, level, index) for u in roots]) for index in sorted(every)]
    return sum(left) / len(left)


def _open_after(dd: Diagrams, residuals: list[int]) -> int:
    """How many of `residuals` stay open once every field a one-field residual allows one value
    of is fixed, until none is (0 when a rule fails on the way: the count stops there)."""
    while 0 not in residuals:
        residuals = [u for u in residuals if u != 1]
        pins: dict[int, int] = {}  # every field forced now, fixed at once (the same fixpoint)
        for at, value in filter(None, map(dd.forced, residuals)):
            if pins.setdefault(at, value) != value:
                return 0  # two values forced on one field: none is left
        if not pins:
            return len(residuals)
        for at, value in pins.items():
            residuals = [dd.restrict(u, at, value) for u in residuals]
    return 0


def settled_rules(dd: Diagrams, roots: Sequence[int]) -> list[float]:
    """Per level of `dd`'s order, the rules its field settles, on average over its values (a rule
    is settled when fixing the field makes it true).

    Round perfcount branched first on the most settling field: a model's architecture settled 43
    of its 62 SGLang rules where the min-fill order's first field, the platform, settled 41 of 80
    and was branched six fields before it (same-run A/B, load 14-15: `platform=cuda` 9.4-10.2 ->
    5.5-6.4 s, whole pack 16.5-19.1 -> 9.5-10.5 s). As the tie-break of the whole order it was
    worse: it also lifts fields that settle many rules but leave more open, such as the attention
    backend (cuda + sm90 12.6 s with it second)."""
    settled = [0.0] * len(dd.order)
    true_at: dict[tuple[int, int], int] = {}

    def settling(u: int, level: int) -> int:
        """The values of `level` (as bits) that make `u` true: a node above the level is made
        true by the values that make every child true."""
        if u < 2:
            return -u  # true: every value (all bits set); false: none
        found = true_at.get((u, level))
        if found is None:
            at, kids = dd.nodes[u]
            if at == level:
                found = sum(1 << i for i, kid in enumerate(kids) if kid == 1)
            elif at > level:
                found = 0  # reads no `level`, and is not true
            else:
                found = -1
                for kid in set(kids):
                    found &= settling(kid, level)
            true_at[(u, level)] = found
        return found

    for u in roots:
        bits = dd.support[u]
        while bits:
            level = (bits & -bits).bit_length() - 1
            bits &= bits - 1
            size = len(dd.domains[level])
            settled[level] += (settling(u, level) & ((1 << size) - 1)).bit_count() / size
    return settled
