"""Byte-identical check for a refactoring: every CLI command's text and JSON, and the public API's
answers, over every scenario case file (tests/cases/**.toml) and every shipped pack, written to a
directory; a second run compares against the first. Runs under PYTHONHASHSEED=0.

    python benchmarks/golden_outputs.py --out /tmp/golden-before        # on the old commit
    python benchmarks/golden_outputs.py --compare /tmp/golden-before    # on the new one

Runs the CLI in process (`main` of the CLI, stdout and stderr captured), so a few hundred commands
take a minute, not ten. Each case becomes `--pack P --set field=value ...` (facts and options alike,
as a user types them) for resolve, check, choices, why (each field the case expects a value of) in
text and `--json`, and `resolve --format argv`; and once, on the shipped and toy packs, every
`--format` and `--json` of every command (`graph --format svg` with a fake `dot`), each command's
`--help` (at 100 columns) and a bad `--format`. Exit 0 when every output matches; else the first
differences and exit 1.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"
TOY = ROOT / "tests" / "fixtures" / "packs" / "toy"


def _run(argv: list[str]) -> str:
    try:  # the layered tree, else the flat one (the check compares the two)
        from solver.cli.commands import main
    except ImportError:
        from solver.cli import main  # type: ignore[attr-defined,no-redef,unused-ignore]

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    head = f"$ confsolve {' '.join(argv)}\nexit {code}\n"
    return f"{head}--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"


def _case_request(path: Path) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    case = tomllib.loads(path.read_text())
    name = case.get("pack", "sglang")
    local = (path.parent / name).resolve()
    pack = str(local.relative_to(ROOT)) if local.is_dir() else name
    if local.is_dir():
        pack = "./" + pack
    request = case["request"]
    return pack, request.get("facts", {}), request.get("options", {}), request, case["expect"]


def _cli_outputs(path: Path) -> Iterator[tuple[str, str]]:
    pack, facts, options, request, expect = _case_request(path)
    words = ["--pack", pack]
    for name, value in {**facts, **options}.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        words += ["--set", f"{name}={text}"]
    if request.get("strict"):
        words.append("--strict")
    check_or_resolve = "check" if request.get("predict") else "resolve"
    for command in (check_or_resolve, "check", "choices"):
        yield f"{command}.txt", _run([command, *words])
        yield f"{command}.json", _run([command, *words, "--json"])
    yield "argv.txt", _run(["resolve", *words, "--format", "argv"])
    for field in sorted(expect.get("values", {}))[:3]:
        yield f"why-{field}.txt", _run(["why", field, *words])
        yield f"why-{field}.json", _run(["why", field, *words, "--json"])


def _api_outputs(path: Path) -> Iterator[tuple[str, str]]:
    import solver

    pack_name, facts, options, request, _ = _case_request(path)
    pack = solver.load_pack(pack_name)
    strict = bool(request.get("strict"))
    try:
        res = solver.resolve(pack, options, facts, strict=strict, predict=bool(request.get("predict")))
        yield "api-resolve.json", json.dumps(res.model_dump(mode="json"), indent=1, default=repr)
    except (solver.Unsatisfiable, solver.InvalidInput) as exc:
        yield "api-resolve.txt", f"{type(exc).__name__}\n{exc}"
    explained = solver.explain(pack, options, facts, strict=strict)
    yield "api-explain.txt", "None" if explained is None else str(explained)
    try:
        choices = solver.valid_choices(pack, options, facts)
        yield "api-choices.txt", repr(choices)
    except (solver.Unsatisfiable, solver.InvalidInput) as exc:
        yield "api-choices.txt", f"{type(exc).__name__}\n{exc}"


def _pack_outputs() -> Iterator[tuple[str, str]]:
    yield "packs.txt", _run(["packs"])
    yield "packs.json", _run(["packs", "--json"])
    yield "schema.txt", _run(["schema"])
    for pack in ("sglang", "vllm", "./" + str(TOY.relative_to(ROOT))):
        tag = Path(pack).name
        yield f"{tag}-show.txt", _run(["show", "--pack", pack])
        yield f"{tag}-show.json", _run(["show", "--pack", pack, "--json"])
        yield f"{tag}-graph.dot", _run(["graph", "--pack", pack])
        yield f"{tag}-graph.json", _run(["graph", "--pack", pack, "--json"])
        yield f"{tag}-choices.txt", _run(["choices", "--pack", pack])
        yield f"{tag}-resolve-empty.txt", _run(["resolve", "--pack", pack])
        yield f"{tag}-check-empty.txt", _run(["check", "--pack", pack])
    toy = "./" + str(TOY.relative_to(ROOT))
    yield "toy-lint.txt", _run(["lint", "--pack", toy])
    yield "toy-lint.json", _run(["lint", "--pack", toy, "--json"])
    yield "toy-count.txt", _run(["count", "--pack", toy])
    yield "toy-count.json", _run(["count", "--pack", toy, "--json"])
    yield "toy-matrix.txt", _run(["matrix", "--pack", toy, "gpu", "quant"])
    yield "completion-bash.txt", _run(["completion", "bash"])
    yield from _format_outputs(toy)


def _format_outputs(toy: str) -> Iterator[tuple[str, str]]:
    """Every --format and --json of every command, the --help texts that list them, and a bad
    --format (argparse lists the choices): what a change to the formats table must keep."""
    request = ["--pack", toy, "--set", "gpu=h100", "--set", "quant=fp8"]
    for fmt in ("text", "json", "argv"):
        yield f"toy-resolve-format-{fmt}.txt", _run(["resolve", *request, "--format", fmt])
    yield "toy-resolve-minimal.txt", _run(["resolve", *request, "--format", "argv", "--minimal"])
    yield "toy-resolve-argv-json.txt", _run(["resolve", *request, "--format", "argv", "--json"])
    yield "toy-resolve-text-json.txt", _run(["resolve", *request, "--format", "text", "--json"])
    yield "toy-resolve-minimal-text.txt", _run(["resolve", *request, "--minimal"])
    for fmt in ("markdown", "csv", "html", "text"):
        yield f"toy-matrix-{fmt}.txt", _run(["matrix", "--pack", toy, "quant", "gpu", "--format", fmt])
    yield "toy-matrix.json", _run(["matrix", "--pack", toy, "quant", "gpu", "--json"])
    yield (
        "toy-matrix-csv-json.json",
        _run(["matrix", "--pack", toy, "quant", "gpu", "--format", "csv", "--json"]),
    )
    yield "toy-count-by.txt", _run(["count", "--pack", toy, "--by", "gpu"])
    yield "toy-count-by.json", _run(["count", "--pack", toy, "--by", "gpu", "--json"])
    yield "toy-count-bounded.json", _run(["count", "--pack", toy, "--limit", "1", "--json"])
    yield "toy-count-bounded.txt", _run(["count", "--pack", toy, "--limit", "1"])
    yield "lint-explain.txt", _run(["lint", "--explain", "CS101"])
    yield "lint-explain.json", _run(["lint", "--explain", "CS101", "--json"])
    v2 = "./" + str((TOY.parent / "toy-v2").relative_to(ROOT))
    yield "toy-diff.txt", _run(["diff", toy, v2])
    yield "toy-diff.json", _run(["diff", toy, v2, "--json"])
    yield "schema-json.txt", _run(["schema", "--kind", "graph", "--json"])
    for pack in ("sglang", "vllm", toy):
        tag = Path(pack).name
        yield f"{tag}-graph-mermaid.txt", _run(["graph", "--pack", pack, "--format", "mermaid"])
        yield f"{tag}-graph-format-json.json", _run(["graph", "--pack", pack, "--format", "json"])
        yield (
            f"{tag}-graph-mermaid-json.json",
            _run(["graph", "--pack", pack, "--format", "mermaid", "--json"]),
        )
    with _fake_dot(None):
        yield "toy-graph-svg-no-dot.txt", _run(["graph", "--pack", toy, "--format", "svg"])
    with _fake_dot('#!/bin/sh\n[ "$1" = -Tsvg ] || exit 3\necho "<svg>"; /bin/cat; echo "</svg>"\n'):
        yield "toy-graph-svg.txt", _run(["graph", "--pack", toy, "--format", "svg"])
    for command in ("resolve", "graph", "matrix"):
        yield f"bad-format-{command}.txt", _run([command, "--format", "yaml"])
    with _columns(100):
        for command in (
            "resolve",
            "why",
            "choices",
            "check",
            "graph",
            "packs",
            "show",
            "schema",
            "matrix",
            "lint",
            "count",
            "diff",
            "completion",
            "serve",
        ):
            yield f"help-{command}.txt", _run([command, "--help"])


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps --help to the terminal: one width, so help texts compare anywhere."""
    import os

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


@contextlib.contextmanager
def _fake_dot(script: str | None) -> Iterator[None]:
    """PATH with only a fake Graphviz `dot` (None: no `dot` at all), so `--format svg` is the same
    output on every machine."""
    import os
    import tempfile

    saved = os.environ["PATH"]
    with tempfile.TemporaryDirectory() as scratch:
        if script is not None:
            dot = Path(scratch) / "dot"
            dot.write_text(script)
            dot.chmod(0o755)
        os.environ["PATH"] = scratch if script is not None else scratch + "/none"
        try:
            yield
        finally:
            os.environ["PATH"] = saved


def collect() -> dict[str, str]:
    outputs: dict[str, str] = {}
    for name, text in _pack_outputs():
        outputs[f"packs/{name}"] = text
    for path in sorted(CASES.rglob("*.toml")):
        key = str(path.relative_to(CASES).with_suffix(""))
        for name, text in _cli_outputs(path):
            outputs[f"{key}/{name}"] = text
        for name, text in _api_outputs(path):
            outputs[f"{key}/{name}"] = text
    return {key: _normalised(text) for key, text in outputs.items()}


def _normalised(text: str) -> str:
    """The repository's own path (a shipped pack's directory) as `<repo>`, so two checkouts compare
    as one, and the seconds a command reports (`0.2 s`) as `<t> s`: they are the machine's."""
    return re.sub(r"\b\d+\.\d+ s\b", "<t> s", text.replace(str(ROOT), "<repo>"))


def main() -> int:
    import os

    if os.environ.get("PYTHONHASHSEED") != "0":
        # Some answers list reasons in set order, which follows the string hash seed; compare like
        # with like: one fixed seed for every run.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    os.chdir(ROOT)  # pack paths in the outputs are relative to the repository
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", type=Path, help="write every output under this directory")
    group.add_argument("--compare", type=Path, help="compare every output with this directory")
    args = parser.parse_args()
    outputs = collect()
    if args.out:
        for key, text in outputs.items():
            target = args.out / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        (args.out / "INDEX.json").write_text(json.dumps(sorted(outputs), indent=0))
        print(f"wrote {len(outputs)} outputs under {args.out}")
        return 0
    expected_keys = json.loads((args.compare / "INDEX.json").read_text())
    before = {key: _normalised((args.compare / key).read_text()) for key in expected_keys}
    differ = [key for key in expected_keys if before[key] != outputs.get(key)]
    extra = sorted(set(outputs) - set(expected_keys))
    for key in differ[:10]:
        print(f"DIFFERS: {key}")
        import difflib

        old = before[key].splitlines(keepends=True)
        new = (outputs.get(key) or "").splitlines(keepends=True)
        sys.stdout.writelines(list(difflib.unified_diff(old, new, "before", "after"))[:40])
    for key in extra[:10]:
        print(f"NEW: {key}")
    print(f"{len(expected_keys) - len(differ)}/{len(expected_keys)} outputs identical; {len(extra)} new")
    return 1 if differ or extra else 0


if __name__ == "__main__":
    raise SystemExit(main())
