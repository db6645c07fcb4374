"""confsolve: resolve LLM-serving launcher configurations from declarative rule packs.

>>> from solver import load_pack, resolve
>>> pack = load_pack("sglang")
>>> res = resolve(pack, {"quantization": "fp8"},
...               {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"})
>>> res.provenance["quantization"].kind
'user'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path

    from solver.budget import Budget
    from solver.errors import (
        DependencyCycle,
        InputIssue,
        InvalidInput,
        PackError,
        SolverBudgetExceeded,
        SolverError,
        Unsatisfiable,
    )
    from solver.model import Pack, Pin, Resolution

# The exceptions and models are imported on first use (PEP 562): the models need pydantic, which
# `import solver` (e.g. by `confsolve --help`) should not pay for.
_LAZY = {
    **dict.fromkeys(
        (
            "DependencyCycle",
            "InputIssue",
            "InvalidInput",
            "PackError",
            "SolverBudgetExceeded",
            "SolverError",
            "Unsatisfiable",
        ),
        "solver.errors",
    ),
    **dict.fromkeys(("Pack", "Pin", "Resolution"), "solver.model"),
    "Budget": "solver.budget",
}

__all__ = [
    "Budget",
    "DependencyCycle",
    "InputIssue",
    "InvalidInput",
    "Pack",
    "PackError",
    "Pin",
    "Resolution",
    "SolverBudgetExceeded",
    "SolverError",
    "Unsatisfiable",
    "check",
    "explain",
    "load_pack",
    "looks_like_path",
    "prepare_choices",
    "resolve",
    "valid_choices",
]


def _command_line() -> int:
    """The `confsolve` console script (and `python -m solver`): `solver.cli.commands.main`, whose
    own import a Ctrl-C may interrupt too. Ended then as quietly as a command is (exit 130, no
    traceback): this package imports nothing at its top but `typing`, so the import guarded here
    is nearly the whole start.

    The process, which is the command's own, runs with fewer young garbage collections
    (`solver.engine.collector.fewer_collections`): a first `check` makes ~30,000 objects that live
    to its end (the modules, the pack) and next to no cycles, and the collector, run every 700 new
    objects, walked them ~50 times, ~15 ms of its ~200 (benchmarks/README, round cold28)."""
    try:
        from solver.engine.collector import fewer_collections

        with fewer_collections():
            from solver.cli.commands import main

            return main()
    except KeyboardInterrupt:  # (main ends its own Ctrl-C: this one cut an import short)
        return 130  # solver.cli.commands.EXIT_INTERRUPTED (not imported: it is what was cut short)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'solver' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_pack(name_or_path: str | Path, *, budget: Budget | None = None) -> Pack:
    """A shipped pack by name (`"sglang"`) or a pack directory by path; cached by content.

    `budget` (a command's, see `solver.budget`) is charged for loading, a step per
    `LOAD_BYTES_PER_STEP` bytes of pack files whether or not the pack is cached, before any
    parsing: a total that this runs out raises `CommandBudgetExceeded` (exit 4).

    A string is a path only when it looks like one (it holds a path separator, or starts with
    `.` or `~`): a bare name always means a shipped pack, so a `./sglang` directory in the working
    directory (an SGLang checkout) never shadows the shipped SGLang pack. A path that does not
    exist is bad input naming it (`InvalidInput`), not a broken pack.
    """
    import os

    from solver.errors import InputIssue, InvalidInput
    from solver.inputs.arguments import need
    from solver.pack.loader import load_directory

    need(name_or_path, (str, os.PathLike), "load_pack", "name_or_path", "a pack's name or directory")
    if isinstance(name_or_path, str) and not looks_like_path(name_or_path):
        import constraints

        directory = constraints.pack_directory(name_or_path)
        if directory is None:
            names = constraints.shipped_packs()
            close = _close_pack_names(name_or_path, names)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}? Shipped" if close else "; shipped"
            raise InvalidInput(
                [
                    InputIssue(
                        field="pack",
                        value=name_or_path,
                        did_you_mean=close,
                        allowed=tuple(names),
                        message=f"no pack named {name_or_path!r}{hint} packs: {', '.join(names)}"
                        f" (a directory is given as a path: ./{name_or_path})",
                    )
                ]
            )
        return load_directory(directory, budget=budget)
    from pathlib import Path

    path = Path(name_or_path).expanduser() if isinstance(name_or_path, str) else Path(name_or_path)
    try:
        exists, is_dir = path.exists(), path.is_dir()
        has_manifest = is_dir and (path / "pack.toml").exists()
    except (OSError, ValueError):  # a NUL byte, a name too long
        exists = is_dir = has_manifest = False
    if not has_manifest:
        # Bad input (exit 2), not a broken pack (exit 3): the path names no pack at all.
        import constraints

        names = constraints.shipped_packs()
        close = _close_pack_names(path.name, names)
        what = (
            "the path does not exist"
            if not exists
            else "it is a file; a pack is a directory holding pack.toml and the files it lists"
            if not is_dir
            else "the directory has no pack.toml (a pack directory holds pack.toml and the files it lists)"
        )
        hint = f"; did you mean the shipped pack {' or '.join(repr(c) for c in close)}?" if close else "."
        raise InvalidInput(
            [
                InputIssue(
                    field="pack",
                    value=str(name_or_path),
                    did_you_mean=close,
                    allowed=tuple(names),
                    message=f"no pack at {str(name_or_path)!r}: {what}{hint} Shipped packs, given by name: "
                    f"{', '.join(names)}.",
                )
            ]
        )
    return load_directory(path, budget=budget)


def _close_pack_names(typed: str, names: list[str]) -> tuple[str, ...]:
    """The shipped pack names `typed` may mean: by spelling, ignoring case (`SGLang`, `sglangg`)."""
    import difflib

    lowered = {n.lower(): n for n in names}
    found = difflib.get_close_matches(typed.lower(), list(lowered), n=2)
    return tuple(lowered[f] for f in found)


def looks_like_path(text: str) -> bool:
    """Whether a `--pack` value names a directory rather than a shipped pack: it holds a path
    separator, or starts with `.` or `~`."""
    import os

    seps = {"/", os.sep, *([os.altsep] if os.altsep else [])}
    return text.startswith((".", "~")) or any(sep in text for sep in seps)


def resolve(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    strict: bool = False,
    reasons: bool = True,
    predict: bool = False,
    deny_warnings: bool = False,
    budget: Budget | None = None,
    repairs: bool = True,
) -> Resolution:
    """Resolve a request; see `solver.reasoning.resolution.resolve` (`budget`: `solver.budget`;
    `repairs=False`: a conflict without its repairs, the rest of the answer the same)."""
    from solver.reasoning.resolution import resolve as _resolve

    _arguments("resolve", pack, budget)

    return _resolve(
        pack,
        options,
        facts,
        strict=strict,
        reasons=reasons,
        predict=predict,
        deny_warnings=deny_warnings,
        budget=budget,
        repairs=repairs,
    )


def check(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    strict: bool = False,
    reasons: bool = False,
    deny_warnings: bool = False,
    budget: Budget | None = None,
    repairs: bool = True,
) -> Resolution:
    """What the launcher itself does with the request as typed: `resolve(..., predict=True)`.

    Unset options take the launcher's own default chain, never another value; raises
    `Unsatisfiable` (with `.launcher_default` when it is the launcher's own pick that fails)."""
    _arguments("check", pack, budget)
    return resolve(
        pack,
        options,
        facts,
        strict=strict,
        reasons=reasons,
        predict=True,
        deny_warnings=deny_warnings,
        budget=budget,
        repairs=repairs,
    )


def valid_choices(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    fields: list[str] | None = None,
    reasons: bool = True,
    budget: Budget | None = None,
) -> Any:
    """The values each option can still take; see `solver.reasoning.diagnose.valid_choices`."""
    from solver.inputs.arguments import need_names
    from solver.reasoning.diagnose import valid_choices as _valid_choices

    _arguments("valid_choices", pack, budget)
    fields = need_names(fields, "valid_choices", "fields")

    return _valid_choices(pack, options, facts, fields=fields, reasons=reasons, budget=budget)


def prepare_choices(pack: Pack) -> int:
    """Do up front what every later `valid_choices` on this pack reuses (a server calls it once
    at start); see `solver.reasoning.diagnose.prepare_choices`."""
    from solver.reasoning.diagnose import prepare_choices as _prepare

    _arguments("prepare_choices", pack, None)

    return _prepare(pack)


def explain(
    pack: Pack,
    options: Any = None,
    facts: Any = None,
    *,
    strict: bool = False,
    keep: Collection[str] = (),
    budget: Budget | None = None,
) -> Unsatisfiable | None:
    """The conflict and repairs of an impossible request, or None when it resolves.

    `keep`: fields whose given values the repairs leave alone when any repair can (a
    configurator's choice just made); only when none can do the repairs change them."""
    from solver.errors import Unsatisfiable
    from solver.inputs.arguments import need_names

    _arguments("explain", pack, budget)
    keep = need_names(keep, "explain", "keep") or ()
    try:
        resolve(pack, options, facts, strict=strict, reasons=False, budget=budget)
    except Unsatisfiable as exc:
        if not keep:
            return exc
        from solver.inputs.pins import collect_pins
        from solver.reasoning.diagnose import unsatisfiable_for
        from solver.reasoning.resolution import plan_for

        return unsatisfiable_for(plan_for(pack).within(budget), collect_pins(pack, options, facts), keep=keep)
    return None


def _arguments(call: str, pack: Any, budget: Any) -> None:
    """A call's `pack` and `budget` of the right kinds, else `InvalidInput` naming them."""
    from solver.budget import Budget
    from solver.inputs.arguments import need, need_pack

    need_pack(pack, call)
    need(budget, (Budget, type(None)), call, "budget", "a solver.budget.Budget or None")
