"""Every record class of `solver.model` (and each `frozen_type` class on `check`'s path) behaves as
the frozen dataclass the standard library makes of it (equality, hash, repr, frozenness, the
constructor), though its equality, hash, repr and frozenness are `Frozen`'s own, made once for all
from each class's field names, and its constructor is compiled when it is first called
(`solver.frozen`): the library compiles up to six functions per dataclass, most of a class's
creation, paid by every first start of `confsolve check` (benchmarks/README, rounds cold27, cold28)."""

from __future__ import annotations

import dataclasses
import itertools
import subprocess
import sys
from typing import Any

import pytest

import solver
from solver import model
from solver.errors import InputIssue, PackProblem, Unsatisfiable
from solver.frozen import Frozen, frozen_type
from solver.pack.crosscheck import PackSemantics
from solver.pack.expr import Condition, _Operand
from solver.pack.loader import semantics
from solver.reasoning.plan import Plan, plan_for
from solver.records import Record
from solver.render.steps import Step

RECORDS: list[type[Frozen]] = sorted(
    (c for c in vars(model).values() if isinstance(c, type) and issubclass(c, Record) and c is not Record),
    key=lambda c: c.__name__,
)
RECORDS += [InputIssue, PackProblem, PackSemantics, Plan, Condition, _Operand, Step]  # `frozen_type`'s
# The modules that make them: imported in a new interpreter by the test of what a class holds when made.
MAKERS = sorted({c.__module__ for c in RECORDS} | {"solver.frozen", "solver.records"})


def _reference(cls: type[Frozen]) -> type[Any]:
    """The dataclass the standard library makes of `cls`'s fields (`frozen=True`, each field keyword
    only or not as in `cls`)."""
    spec = [
        (
            f.name,
            f.type,
            dataclasses.field(
                default=f.default,
                default_factory=f.default_factory,
                compare=f.compare,
                hash=f.hash,
                repr=f.repr,
                kw_only=f.kw_only,
            ),
        )
        for f in dataclasses.fields(cls)
    ]
    made: type[Any] = dataclasses.make_dataclass(cls.__name__, spec, frozen=True)
    made.__qualname__ = cls.__qualname__
    return made


def _walk(value: Any, found: dict[type[Any], list[Frozen]]) -> None:
    if isinstance(value, Frozen):
        if len(found.setdefault(type(value), [])) < 40:
            found[type(value)].append(value)
        for f in dataclasses.fields(value):
            _walk(getattr(value, f.name), found)
    elif isinstance(value, dict):
        for item in value.values():
            _walk(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _walk(item, found)


@pytest.fixture(scope="module")
def instances() -> dict[type[Any], list[Frozen]]:
    """Records of every class, as the shipped packs and their answers hold them."""
    found: dict[type[Any], list[Frozen]] = {}
    pack = solver.load_pack("sglang")
    _walk(pack, found)
    _walk(solver.load_pack("vllm"), found)
    machine = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"}
    _walk(solver.resolve(pack, {"tp_size": 8}, machine), found)
    _walk(solver.check(pack, {"tp_size": 2}, {**machine, "architecture": "DeepseekV3ForCausalLM"}), found)
    with pytest.raises(Unsatisfiable) as refused:
        moe = {"platform": "cuda", "architecture": "Qwen3MoeForCausalLM", "gpu_arch": "sm100"}
        solver.resolve(pack, {"quantization": "fp8", "moe_runner_backend": "flashinfer_cutlass"}, moe)
    _walk((refused.value.conflict, refused.value.repairs), found)
    vllm = solver.load_pack("vllm")
    _walk([semantics(pack), semantics(vllm), plan_for(pack), plan_for(vllm)], found)
    try:
        solver.resolve(pack, {"tp_size": "eight", "nosuch": 1}, machine)
    except solver.InvalidInput as invalid:
        _walk(invalid.issues, found)
    # The answers above hold none of these: built by hand, two of each.
    for n in (1, 2):
        _walk(
            [
                model.Pin(field="tp_size", value=n, source="user"),
                model.Rejection(value=f"fa{n}", because=["r", str(n)]),
                model.AdjustmentRecord(field="f", requested=n, resolved=n + 1, rule="r", because="b"),
                model.WarningRecord(rule=f"w{n}", message="m"),
                PackProblem(where=f"rule r{n}", message="m", file="rules.toml", line=n),
                model.DepartureRecord(
                    field="f", launcher=None if n == 1 else "x", resolved=n, rule=None, because="b"
                ),
                _Operand(kind="const", value=n, display=str(n)),
                Step(rule=f"r{n}", premises={"a": (n,)}, consequence={"b": ()}),
            ],
            found,
        )
    return found


def test_records_share_one_equality_hash_and_repr() -> None:
    """No record class has generated methods of its own (fails on a1e60f3: 19 classes x 3)."""
    for cls in RECORDS:
        own = {"__eq__", "__hash__", "__repr__", "__setattr__", "__delattr__"} & set(vars(cls))
        assert not own, (cls.__name__, own)


def test_making_a_class_compiles_nothing() -> None:
    """In a new interpreter, once the modules are imported, no class has a method of its own that
    the library would have written: its constructor comes at its first call (fails on a0ebea6:
    each record had `__init__`, `__setattr__` and `__delattr__`; Condition, _Operand and Step six)."""
    names = [f"{c.__module__}:{c.__qualname__}" for c in RECORDS]
    script = (
        "import importlib, sys\n"
        f"for m in {MAKERS!r}: importlib.import_module(m)\n"
        "written = {'__init__', '__eq__', '__hash__', '__repr__', '__setattr__', '__delattr__'}\n"
        "from solver.frozen import Frozen\n"
        "first = Frozen.__dict__['__init__']  # each class's constructor before its first call\n"
        f"for name in {names!r}:\n"
        "    module, _, qual = name.partition(':')\n"
        "    cls = getattr(sys.modules[module], qual)\n"
        "    own = {n for n in written & set(vars(cls)) if vars(cls)[n] is not first}\n"
        "    if own: print(name, sorted(own))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == ""


def test_constructors_refuse_and_fill_as_the_librarys() -> None:
    """A missing or unknown argument is refused in the library's words; defaults and factories fill
    the rest (a new value from each factory per record)."""
    for cls in RECORDS:
        reference = _reference(cls)
        said: list[list[str]] = [[], []]
        for words, make in zip(said, (cls, reference), strict=True):
            for args in ({}, {"no_such_field": 1}):
                try:
                    make(**args)
                except TypeError as refused:
                    words.append(str(refused))
                else:
                    words.append("made")
        assert said[0] == said[1], cls.__name__
        fields = dataclasses.fields(cls)
        required = {
            f.name: None
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        ours, theirs = cls(**required), reference(**required)
        assert repr(ours) == repr(theirs)
        again = cls(**required)
        for f in fields:
            if f.default_factory is not dataclasses.MISSING:
                assert getattr(ours, f.name) is not getattr(again, f.name), (cls.__name__, f.name)


def test_records_behave_as_the_standard_librarys_frozen_dataclasses(
    instances: dict[type[Any], list[Frozen]],
) -> None:
    assert [c.__name__ for c in RECORDS if c not in instances] == []
    for cls in RECORDS:
        reference = _reference(cls)
        records = instances.get(cls, [])
        values = [{f.name: getattr(r, f.name) for f in dataclasses.fields(r)} for r in records]
        # A record with one field changed to another record's value: equal and unequal pairs.
        if len(values) >= 2:
            names = [f.name for f in dataclasses.fields(cls)]
            values += [{**values[0], name: values[1][name]} for name in names]
        for a, b in itertools.product(values[:6], repeat=2):
            ours, theirs = (cls(**a), cls(**b)), (reference(**a), reference(**b))
            assert repr(ours[0]) == repr(theirs[0])
            assert (ours[0] == ours[1]) == (theirs[0] == theirs[1])
            assert (ours[0] != ours[1]) == (theirs[0] != theirs[1])
            try:
                expected: int | type[BaseException] = hash(theirs[0])
            except TypeError:
                expected = TypeError
            if expected is TypeError:
                with pytest.raises(TypeError):
                    hash(ours[0])
            else:
                assert hash(ours[0]) == expected
        for a in values[:3]:
            record = cls(**a)
            assert record != reference(**a) and record != object()  # another class is never equal
            for name in a:
                with pytest.raises(dataclasses.FrozenInstanceError):
                    setattr(record, name, None)
                with pytest.raises(dataclasses.FrozenInstanceError):
                    delattr(record, name)
            assert dataclasses.replace(record) == record


def test_a_record_inside_itself_is_shown_as_the_library_shows_it() -> None:
    """`reprlib.recursive_repr`'s '...' where a record is reached again while it is being shown."""
    shown = []
    for cls in (model.Repair, _reference(model.Repair)):
        loop: list[Any] = []
        record = cls(set={"a": loop}, unset=["b"])  # type: ignore[dict-item]
        loop.append(record)
        shown.append(repr(record))
    assert shown[0] == shown[1]
    assert "..." in shown[0]


def test_a_class_made_from_a_built_one_gets_its_own_constructor() -> None:
    """A class made from another made class is built with its own fields, also after its base was
    built (fails on the first-use constructor put on the base only: the subclass then inherited
    the base's compiled one and refused its own field)."""

    @frozen_type
    class Base(Frozen):
        x: int

    @frozen_type
    class Derived(Base):
        y: int = 0

    assert repr(Base(1)) == "test_a_class_made_from_a_built_one_gets_its_own_constructor.<locals>.Base(x=1)"
    assert (Derived(1, 2).x, Derived(1, 2).y) == (1, 2)
    assert Base(3).x == 3
