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
from typing import Any, ClassVar

import pytest

import solver
from solver import frozen, model
from solver.engine.backtrack import SearchTrace
from solver.engine.constraint import Constraint
from solver.engine.csp import compile_pack
from solver.errors import InputIssue, PackProblem, Unsatisfiable
from solver.frozen import Frozen, Mutable, frozen_type
from solver.pack.condition import Condition, _Operand
from solver.pack.crosscheck import PackSemantics
from solver.pack.loader import semantics
from solver.pack.text import FileIndex, index_of
from solver.reasoning.plan import Plan, plan_for
from solver.records import Record
from solver.render.steps import Chain, Step

RECORDS: list[type[Frozen]] = sorted(
    (c for c in vars(model).values() if isinstance(c, type) and issubclass(c, Record) and c is not Record),
    key=lambda c: c.__name__,
)
RECORDS += [InputIssue, PackProblem, PackSemantics, Plan, Condition, _Operand, Step, Chain]  # `frozen_type`'s
MUTABLE: list[type[Mutable]] = [FileIndex, Constraint, SearchTrace]  # `mutable_type`'s, on `check`'s path
# The modules that make them: imported in a new interpreter by the test of what a class holds when made.
MAKERS = sorted({c.__module__ for c in [*RECORDS, *MUTABLE]} | {"solver.frozen", "solver.records"})


def _reference(cls: type[Any], frozen: bool = True) -> type[Any]:
    """The dataclass the standard library makes of `cls`'s fields (`frozen=True`, or not; each field
    keyword only or not as in `cls`; its `__post_init__`)."""
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
                init=f.init,
            ),
        )
        for f in dataclasses.fields(cls)
    ]
    after = {"__post_init__": cls.__post_init__} if hasattr(cls, "__post_init__") else {}
    made: type[Any] = dataclasses.make_dataclass(cls.__name__, spec, frozen=frozen, namespace=after)
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
                Chain(steps=[Step(rule=f"r{n}", premises={}, consequence={})], split=None if n == 1 else "f"),
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
    names = [f"{c.__module__}:{c.__qualname__}" for c in [*RECORDS, *MUTABLE]]
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


def _read(found: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Fields as comparable tuples, `dataclasses.MISSING` and `frozen.MISSING` alike."""

    def missing(value: Any) -> Any:
        return "MISSING" if value is dataclasses.MISSING or value is frozen.MISSING else value

    return [
        (
            f.name,
            f.type,
            missing(f.default),
            missing(f.default_factory),
            f.init,
            f.repr,
            f.hash,
            f.compare,
            f.kw_only,
        )
        for f in found
    ]


def test_fields_are_read_as_the_library_reads_them() -> None:
    """Each made class's own reading of its fields (`frozen.fields`, what `check`'s path reads)
    is the library's (`dataclasses.fields`, made at its first read), and so is its
    `__match_args__`; every made class has its own docstring (the library would make one up)."""
    for cls in [*RECORDS, *MUTABLE]:
        assert _read(frozen.fields(cls)) == _read(dataclasses.fields(cls)), cls.__name__
        assert cls.__match_args__ == tuple(
            f.name for f in dataclasses.fields(cls) if f.init and not f.kw_only
        ), cls.__name__
        assert dataclasses.is_dataclass(cls) and "__dataclass_fields__" in vars(cls)
        assert cls.__dict__.get("__doc__"), cls.__name__


def _declared(make: Any, field: Any, base: type[Any]) -> tuple[type[Any], type[Any]]:
    """One declaration, made by `make` (`field` its field specifier, `base` the first base)."""

    @make
    class Base(base):  # type: ignore[valid-type,misc]
        """A base."""

        limit: ClassVar[int] = 3
        a: int
        b: str = "x"
        c: tuple[int, ...] = field(default_factory=tuple)
        d: int = field(default=4, compare=False, repr=False)
        e: int = field(init=False, default=0)
        g: int = field(default=5, kw_only=True)

    @make
    class Derived(Base):
        """Its subclass."""

        b: str = "y"  # redefined: keeps its place
        h: tuple[int, ...] = field(default=(), hash=False)

    return Base, Derived


def test_a_declaration_is_read_as_the_library_reads_it() -> None:
    """ClassVars, defaults left on the class or removed, factories, `init=False`, keyword-only
    fields, a subclass redefining a default: the fields, the class attributes, `__match_args__`,
    `__dataclass_params__` and records (repr, equality, hash) of a class made here are those of
    the same declaration made by the library, and its refusals are the library's, word for word."""
    library = dataclasses.dataclass(frozen=True)
    ours, theirs = _declared(frozen_type, frozen.field, Frozen), _declared(library, dataclasses.field, object)
    for made, same in zip(ours, theirs, strict=True):
        assert _read(dataclasses.fields(made)) == _read(dataclasses.fields(same))
        assert _read(frozen.fields(made)) == _read(dataclasses.fields(same))
        assert made.__match_args__ == same.__match_args__
        for name in ("limit", "a", "b", "c", "d", "e", "g", "h"):
            assert vars(made).get(name, "absent") == vars(same).get(name, "absent"), (made, name)
        assert made.__dataclass_params__.frozen is False  # what the library was asked (`solver.frozen`)
        for values in ({"a": 1}, {"a": 1, "c": (2,), "d": 9}, {"a": 2, "g": 7}):
            mine, its = made(**values), same(**values)
            assert repr(mine) == repr(its) and hash(mine) == hash(its)
            assert (mine == made(a=1)) == (its == same(a=1))
            assert frozen.replace(mine, a=5) == made(**{**values, "a": 5})
    with pytest.raises(ValueError, match="init=False, it cannot be specified") as refused:
        frozen.replace(ours[0](a=1), e=2)
    with pytest.raises(ValueError) as library_refused:
        dataclasses.replace(theirs[0](a=1), e=2)
    assert str(refused.value) == str(library_refused.value)
    said = []
    for make, specifier, base in ((frozen_type, frozen.field, Frozen), (library, dataclasses.field, object)):
        words = []
        for body in (
            {"__annotations__": {"a": "list[int]"}, "a": []},  # a mutable default
            {"__annotations__": {}, "a": specifier(default=1)},  # a field() with no annotation
            {"__annotations__": {"a": "int", "b": "int"}, "a": 1},  # no default after a default
        ):
            try:
                make(type("Refused", (base,), {"__module__": __name__, "__doc__": "r", **body}))
            except (TypeError, ValueError) as exc:
                words.append(f"{type(exc).__name__}: {exc}")
        said.append(words)
    assert len(said[0]) == 3 and said[0] == said[1]


def test_mutable_classes_behave_as_the_librarys_dataclasses() -> None:
    """`mutable_type`'s classes (the three dataclasses that are not frozen on `check`'s path) and
    the dataclass the library makes of each: the same constructor, repr, equality, no hash, and
    fields that can be assigned (fails on 487ea0a: they were the library's own)."""
    pack = solver.load_pack("sglang")
    compiled = compile_pack(pack)
    samples: dict[type[Any], list[Any]] = {
        FileIndex: [
            index_of('[pack]\nname = "x"\n[[rule]]\nid = "a"\n'),
            index_of("[field.tp]\n"),
            FileIndex(),
        ],
        Constraint: list(compiled.rules.values())[:3],
        SearchTrace: [SearchTrace(), SearchTrace(domains={"a": (1, 2)}, steps=3), SearchTrace(broken=["r"])],
    }
    for cls in MUTABLE:
        reference = _reference(cls, frozen=False)
        assert cls.__match_args__ == reference.__match_args__
        values = [{f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.init} for r in samples[cls]]
        for a, b in itertools.product(values, repeat=2):
            ours, theirs = (cls(**a), cls(**b)), (reference(**a), reference(**b))
            assert repr(ours[0]) == repr(theirs[0])
            assert (ours[0] == ours[1]) == (theirs[0] == theirs[1])
            assert ours[0] != theirs[0]
        record = cls(**values[0])
        with pytest.raises(TypeError, match="unhashable type"):
            hash(record)
        for f in dataclasses.fields(record):
            setattr(record, f.name, getattr(record, f.name))
        said = []
        for make in (cls, reference):
            try:
                make(no_such_field=1)
            except TypeError as refused:
                said.append(str(refused))
        assert len(said) == 2 and said[0] == said[1]
