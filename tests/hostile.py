"""Shared helpers for the hostile-input tests (fuzz, untrusted packs, budgets, determinism, cases).

Not a test module: paths of the fixture packs, the shipped SGLang pack when it loads, a TOML
writer for generated packs, and the checks every hostile case ends with (a documented exit code,
a message, no traceback).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from solver import PackError, load_pack
from solver.model import Pack

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TOY = FIXTURES / "packs" / "toy"
MALICIOUS = FIXTURES / "packs" / "malicious"

# Exit codes of the contract, and 4 for an exhausted search budget (solver/errors.py).
DOCUMENTED_EXITS = {0, 1, 2, 3}
INTERNAL_ERROR = 70

# How each exit code shows up in a `--json` document.
STATUS_FOR_EXIT = {
    0: {"resolved", "choices", "checked", "why", "counted", "linted", "pack", "packs"},
    1: {"conflict"},
    2: {"error"},
    3: {"error"},
    4: {"error"},
}


def toy_pack() -> Pack:
    return load_pack(TOY)


@cache
def _sglang_or_reason() -> Pack | str:
    try:
        return load_pack("sglang")
    except PackError as exc:  # the pack is written in parallel; its own tests report this
        return f"the sglang pack does not load yet: {str(exc).splitlines()[0]}"


def sglang_pack() -> Pack:
    """The shipped SGLang pack, or skip the test while it does not load."""
    found = _sglang_or_reason()
    if isinstance(found, str):
        pytest.skip(found)
    return found


def sglang_loads() -> bool:
    return not isinstance(_sglang_or_reason(), str)


# --- TOML ----------------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_str(text: str) -> str:
    """A TOML basic string holding exactly `text` (every control character escaped)."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    """A TOML value (inline form) for str, int, bool, list and dict; raw text passes through."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else "nan"
    if isinstance(value, str):
        return toml_str(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{toml_str(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


class Raw:
    """Text put into a TOML document as it is (to write broken or exotic values on purpose)."""

    def __init__(self, text: str) -> None:
        self.text = text


def table(header: str, body: Mapping[str, Any]) -> str:
    """`[header]` (or `[[header]]` when it is written so) with `key = value` lines."""
    head = header if header.startswith("[") else f"[{header}]"
    lines = [head] + [
        f"{toml_str(k) if not k.isidentifier() else k} = {toml_value(v)}" for k, v in body.items()
    ]
    return "\n".join(lines) + "\n"


def write_pack(
    directory: Path,
    files: Mapping[str, str],
    *,
    name: str = "generated",
    listed: Sequence[str] | None = None,
    head: str = "",
) -> Path:
    """A pack directory: `pack.toml` listing `files` (or `listed`), and the files' text."""
    directory.mkdir(parents=True, exist_ok=True)
    names = list(files) if listed is None else list(listed)
    (directory / "pack.toml").write_text(
        f'[pack]\nname = {toml_str(name)}\nversion = "1"\nfiles = {toml_value(names)}\n{head}',
        encoding="utf-8",
    )
    for file, text in files.items():
        (directory / file).write_text(text, encoding="utf-8")
    return directory


def synthetic_pack(root: Path, n: int, tag: str) -> Path:
    """benchmarks/synthetic.py's seeded pack of `n` fields (`tag` in its name: a digest of its own)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import synthetic

    spec = synthetic.generate(n, seed=1)
    named = f'name = "synthetic{n}"'
    spec.files["pack.toml"] = spec.files["pack.toml"].replace(named, f'name = "synthetic{n}{tag}"')
    written: Path = synthetic.write(spec, root / f"syn{n}{tag}")
    return written


# --- outcome checks -----------------------------------------------------------------------


def assert_clean_text(*texts: str) -> None:
    """No traceback and no "internal error" in what a user sees."""
    for text in texts:
        assert "Traceback (most recent call last)" not in text, text[-2000:]
        assert "internal error" not in text, text[-2000:]


def assert_cli_outcome(
    argv: Sequence[str], code: Any, out: str, err: str, *, allowed: set[int] = DOCUMENTED_EXITS
) -> None:
    """A documented exit code, a message for every failure, and valid JSON with `--json`."""
    shown = f"argv={list(argv)!r}\ncode={code!r}\nstdout={out[-1500:]}\nstderr={err[-1500:]}"
    assert code in allowed, shown
    assert_clean_text(out, err)
    if code != 0:
        assert (out + err).strip(), f"a failure says why\n{shown}"
    if "--json" in argv and out.strip() and code != 0 and not err.startswith("usage:"):
        doc = json.loads(out)
        assert doc["schema"] == 1, shown
        assert doc["status"] in STATUS_FOR_EXIT[code], shown
        if doc["status"] == "error":
            assert doc["error"]["type"] and doc["error"]["message"], shown
    elif "--json" in argv and code == 0 and out.strip().startswith("{"):
        doc = json.loads(out)
        assert doc["schema"] == 1 and doc["status"] in STATUS_FOR_EXIT[0], shown


def run_cli(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
    **kwargs: Any,
) -> subprocess.CompletedProcess[bytes]:
    """`python -m solver ARGV` in a fresh interpreter (bytes in, bytes out)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CONFSOLVE_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "solver", *argv],
        capture_output=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd or ROOT,
        check=False,
        **kwargs,
    )
