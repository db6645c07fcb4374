"""The packs' citations against the launcher they describe, installed (SGLang 0.5.23 for the SGLang
pack, vLLM 0.33.0 for the vLLM pack): not in the default run (`-m source_audit`; README, "Tests");
the checks of the audit itself, on a launcher made up here, are.

- every environment-variable field (`env = true`) is read somewhere in the launcher: its name in a
  module of the launcher's package other than the file that only declares the variables
  (`sglang/srt/environ.py`, `vllm/envs.py`) and its tests;
- every rule's and preference's `source` names files that exist there (`python/sglang/...` is the
  repository's spelling of the installed `sglang/...`; a shorter path is found as the end of one);
- every message a `because` or a `source` quotes ("...", “...”) appears verbatim in the launcher's
  Python code, whitespace normalized: in the text, or in a string literal (implicit concatenation
  joined), or in an f-string with each `{...}` standing for the value the launcher prints there
  (the packs quote SGLang's "Tensor parallel size N is greater than the number of experts" of
  f"Tensor parallel size {self.tp_size} is greater than " f"the number of experts ..."). An
  ellipsis ("DeepEP ... mode requires deep_gemm") leaves out words: each piece is looked for.

The launcher's package directory is found at CONFSOLVE_SGLANG_SITE / CONFSOLVE_VLLM_SITE (the
directory holding `sglang/` or `vllm/`, a venv's site-packages), else in the venv of the oracle
harness (../shared/tools/*-oracle) that runs it: where the harness's own variable puts it
(ORACLE_VENV, ORACLE_VLLM_HOME/venv), else the harness's default; a pack whose launcher is not
installed is skipped and says where it looked. What the audit finds and the pack keeps on
purpose is in `KNOWN` below, each with its reason: such a finding fails nowhere, and a known
finding that no longer occurs fails (so the list shrinks as the packs are fixed).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import warnings
from pathlib import Path

import pytest

from solver import load_pack
from solver.model import Preference, Rule

# The oracle harnesses beside this repository, whose venvs hold the launchers.
_TOOLS = Path(__file__).resolve().parents[2] / "shared" / "tools"


def _harness_venvs(variable: str, below: str, default: Path) -> list[Path]:
    """Where an oracle harness builds its venv: under its own environment variable, else its default."""
    given = os.environ.get(variable)
    return [Path(given) / below if given else default]


# pack -> (the environment variable naming the site directory, the venvs tried after it, the
# package's directory name, the files that declare environment variables without reading them).
LAUNCHERS = {
    "sglang": (
        "CONFSOLVE_SGLANG_SITE",
        _harness_venvs("ORACLE_VENV", "", _TOOLS / "sglang-oracle" / ".oracle-venv"),
        "sglang",
        ("sglang/srt/environ.py",),
    ),
    "vllm": (
        "CONFSOLVE_VLLM_SITE",
        _harness_venvs("ORACLE_VLLM_HOME", "venv", _TOOLS / "vllm-oracle" / "venv"),
        "vllm",
        ("vllm/envs.py",),
    ),
}

# What the audit finds and the packs keep on purpose, each with why it stands; a citation found
# wrong is fixed in the pack, not listed here. (pack, check, rule or field, what) -> why.
_MODELOPT = "modelopt/torch/export/convert_hf_config.py"
_NOT_INSTALLED = "another project's file (NVIDIA ModelOpt's exporter), not installed with vLLM"
KNOWN: dict[tuple[str, str, str, str], str] = {
    ("sglang", "env", "SGLANG_CUTLASS_MOE", "SGLANG_CUTLASS_MOE"): "a variable 0.5.23 does not "
    "read, kept so that a command setting it is read and told so (moe-cutlass-env-ignored)",
    ("sglang", "env", "SGLANG_MINIMAX_FLYDSL_DECODE", "SGLANG_MINIMAX_FLYDSL_DECODE"): "a later "
    "SGLang's variable, kept so that a command setting it is told it is ignored "
    "(minimax-m3-flydsl-env-ignored)",
    (
        "vllm",
        "source",
        "modelopt-export-form-needs-modelopt-checkpoint",
        "modelopt/torch/export/unified_export_hf.py",
    ): _NOT_INSTALLED,
    (
        "vllm",
        "source",
        "modelopt-export-form-needs-modelopt-checkpoint",
        "convert_hf_config.py",
    ): _NOT_INSTALLED,
    ("vllm", "source", "quant-humming-modelopt-mxfp8-no-config-groups", _MODELOPT): _NOT_INSTALLED,
    ("vllm", "source", "quant-humming-modelopt-export-without-linear-group", _MODELOPT): _NOT_INSTALLED,
    ("vllm", "source", "quant-humming-modelopt-export-without-linear-group", "humming/schema/base.py"): (
        "another project's file (humming-kernels 0.1.19), not installed with vLLM"
    ),
}

_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”')
_PATH = re.compile(r"[A-Za-z0-9_.\-/]+\.py\b")
_ELLIPSIS = re.compile(r"\.\.\.|…")
# A field of a `str.format` or `%` message, where the launcher prints a value.
_FIELD = re.compile(r"\{[A-Za-z0-9_.!:]*\}|%[sdrf]")
# What a value the launcher formats into a message may be: one word (a size, a backend, a name);
# the message's own words must be most of a quote.
_VALUE = r"(\S{1,40}?)"
_OWN_WORDS = 0.5


def _site(pack: str) -> Path:
    variable, venvs, package, _ = LAUNCHERS[pack]
    given = os.environ.get(variable)
    tried = [site for venv in venvs for site in sorted(venv.glob("lib/python3*/site-packages"))] or venvs
    places = [Path(given)] if given else tried
    for place in places:
        if (place / package / "__init__.py").is_file():
            return place
    where = f"{variable}={given}" if given else f"{variable} unset; tried {', '.join(map(str, tried))}"
    pytest.skip(f"{pack}'s launcher is not installed ({where}): the audit reads its code")


def _norm(text: str) -> str:
    return " ".join(text.split())


@functools.cache
def _code(site: Path, package: str) -> Code:
    return Code(site, package)


class Code:
    """The launcher's Python files: their text, and their string literals on demand."""

    def __init__(self, site: Path, package: str) -> None:
        self.site = site
        self.package = package
        self.files = {
            p.relative_to(site).as_posix(): p.read_text(errors="replace")
            for p in sorted((site / package).rglob("*.py"))
        }
        self.text = _norm("\n".join(self.files.values()))
        self.parsed: dict[str, tuple[list[str], list[tuple[str, ...]]]] = {}

    def strings(self, path: str) -> tuple[list[str], list[tuple[str, ...]]]:
        """The string literals of one file (an implicit concatenation is one literal), and its
        f-strings, each as its literal parts with a `{...}` between each two (remembered)."""
        if path not in self.parsed:
            literals: list[str] = []
            formats: list[tuple[str, ...]] = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (the launcher's own invalid escapes)
                try:
                    tree = ast.parse(self.files[path])
                except SyntaxError:
                    tree = ast.Module(body=[], type_ignores=[])
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    literals.append(_norm(node.value))
                    if _FIELD.search(node.value):  # ("{} is not divisible by {}".format(...))
                        formats.append(tuple(re.sub(r"\s+", " ", p) for p in _FIELD.split(node.value)))
                elif isinstance(node, ast.JoinedStr):
                    parts, literal = [], ""
                    for value in node.values:
                        if isinstance(value, ast.Constant):
                            literal += str(value.value)
                        else:
                            parts.append(literal)
                            literal = ""
                    parts.append(literal)
                    # (each part's whitespace squashed, not stripped: " is not divisible by ")
                    formats.append(tuple(re.sub(r"\s+", " ", p) for p in parts))
            self.parsed[path] = (literals, formats)
        return self.parsed[path]

    def quotes(self, piece: str) -> bool:
        """Whether the launcher's code has `piece` verbatim (a value where an f-string formats one)."""
        if piece in self.text:
            return True
        # The literals are read only in the files that have most of its words (a value the
        # launcher formats in is a word or two of a message: SGLang's "16 is not divisible by 32").
        words = set(re.findall(r"[A-Za-z_]{3,}", piece))
        for path, text in self.files.items():
            if sum(w in text for w in words) * 5 < len(words) * 3:
                continue
            literals, formats = self.strings(path)
            if any(piece in literal for literal in literals):
                return True
            if any(_formatted(parts, piece) for parts in formats if _shares(parts, piece)):
                return True
        return False


def _shares(parts: tuple[str, ...], piece: str) -> bool:
    """A cheap filter: some part has eight characters running of `piece` (or all of a shorter one)."""
    width = min(8, len(piece))
    windows = {piece[i : i + width] for i in range(len(piece) - width + 1)}
    return len(parts) > 1 and any(w in part for part in parts for w in windows)


def _formatted(parts: tuple[str, ...], piece: str) -> bool:
    """Whether `piece` is part of some text the message of `parts` prints, each value between two
    parts one word: it lies within one part, or begins within one (an end of it), takes the parts
    after it whole with a value before each, and ends within a later part (a start of it); and
    the message's own characters are most of it (`_OWN_WORDS`)."""
    if any(piece in part for part in parts):
        return True
    for first in range(len(parts) - 1):
        starts = [k for k in range(len(piece) + 1) if parts[first].endswith(piece[:k])]
        for last in range(first + 1, len(parts)):
            pattern = re.compile(_VALUE + "".join(re.escape(p) + _VALUE for p in parts[first + 1 : last]))
            ends = [m for m in range(len(piece) + 1) if parts[last].startswith(piece[m:])]
            for k in starts:
                for m in ends:
                    found = pattern.fullmatch(piece, k, m) if m > k else None
                    values = sum(len(v) for v in found.groups()) if found else len(piece)
                    if found and len(piece) - values >= _OWN_WORDS * len(piece):
                        return True
    return False


def _findings(pack: str) -> list[tuple[str, str, str, str]]:
    """(check, rule or field, what) of every citation of `pack` its launcher does not bear out."""
    code = _code(_site(pack), LAUNCHERS[pack][2])
    loaded = load_pack(pack)
    found: list[tuple[str, str, str, str]] = []
    declare = set(LAUNCHERS[pack][3])
    for field in loaded.fields.values():
        if not field.env:
            continue
        word = re.compile(rf"\b{re.escape(field.name)}\b")
        readers = [
            path
            for path, text in code.files.items()
            if field.name in text and path not in declare and "/test" not in path and word.search(text)
        ]
        if not readers:
            found.append((pack, "env", field.name, field.name))
    records: list[Rule | Preference] = [*loaded.rules, *loaded.preferences]
    for record in records:
        for path in _PATH.findall(record.source or ""):
            if not _exists(code, path):
                found.append((pack, "source", record.id, path))
        for where, text in (("because", record.because), ("source", record.source or "")):
            for match in _QUOTED.finditer(text):
                quote = _norm(match.group(1) or match.group(2))
                for piece in (p.strip() for p in _ELLIPSIS.split(quote)):
                    if piece and not code.quotes(piece):
                        found.append((pack, f"quote in {where}", record.id, piece))
    return found


def _exists(code: Code, path: str) -> bool:
    """Whether the launcher has the file `path` names: `python/sglang/x.py` is the installed
    `sglang/x.py`; a path not from the package's root is the end of one of its files' paths."""
    path = path.removeprefix("python/").removeprefix("./")
    if path.startswith(code.package + "/"):
        return path in code.files
    return any(name.endswith("/" + path) for name in code.files)


@pytest.mark.source_audit
@pytest.mark.parametrize("pack", sorted(LAUNCHERS))
def test_the_pack_s_citations_are_in_the_installed_launcher(pack: str) -> None:
    found = _findings(pack)
    new = [f for f in found if f not in KNOWN]
    gone = [k for k in KNOWN if k[0] == pack and k not in found]
    report = "\n".join(f"  {check}: {rid}: {what!r}" for _, check, rid, what in new)
    assert not new, f"{len(new)} citations of the {pack} pack not in its launcher:\n{report}"
    assert not gone, f"known findings that no longer occur (take them out of KNOWN): {gone}"


# --- the audit's own checks (default run: no launcher needed) --------------------------------------


@pytest.mark.parametrize(
    ("parts", "piece", "found"),
    [
        (
            ("Tensor parallel size ", " is greater than the number of experts ", "."),
            "Tensor parallel size N is greater than the number of experts",
            True,
        ),
        (("", " is not divisible by ", ""), "16 is not divisible by 32", True),
        (
            ("The ", " DSA backend is only supported on ROCm/HIP. Pick another."),
            "The triton DSA backend is only supported on ROCm/HIP",
            True,
        ),
        (
            ("HPC attention only supports head_per_group in {4, 8}, got ", ""),
            "only supports head_per_group in {4, 8}",
            True,
        ),
        # a value is one word: a sentence is no value of a message that shares a word with it
        (("", " port ", " is unavailable"), "The triton DSA backend is only supported on ROCm/HIP", False),
        (("group ", ": CrossAttentionSpec"), "only supports head_per_group in {4, 8}", False),
        # the message's own words must be most of the quote
        (("", " is ", ""), "flashinfer_cutedsl is unsupported", False),
        (("Unsupported kv_cache_dtype: ", "."), "Unsupported kv_cache_dtype: fp4_e2m1.", True),
        (("Unsupported kv_cache_dtype: ", "."), "Unsupported block_size: 16.", False),
    ],
)
def test_a_quote_is_found_where_the_launcher_formats_a_value(
    parts: tuple[str, ...], piece: str, found: bool
) -> None:
    assert _formatted(parts, piece) is found


def _launcher(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_an_uninstalled_launcher_is_skipped_saying_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONFSOLVE_VLLM_SITE", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=f"CONFSOLVE_VLLM_SITE={tmp_path}"):
        _site("vllm")


def test_the_audit_finds_what_a_launcher_lacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A made-up SGLang with one variable declared (not read), one read, one cited file and one of
    the pack's quoted messages: the audit names the rest, and not those."""
    site = _launcher(
        tmp_path,
        {
            "sglang/__init__.py": "",
            "sglang/srt/environ.py": "SGLANG_USE_MLX = EnvBool(False)\n",
            "sglang/srt/layers/attention/vision.py": (
                "import os\nAITER = os.environ.get('SGLANG_USE_AITER')\n"
                "def divide(a, b):\n    assert a % b == 0, '{} is not divisible by {}'.format(a, b)\n"
            ),
        },
    )
    monkeypatch.setenv("CONFSOLVE_SGLANG_SITE", str(site))
    found = _findings("sglang")
    env = {what for _, check, _, what in found if check == "env"}
    assert "SGLANG_USE_MLX" in env and "SGLANG_USE_AITER" not in env  # declared only; read
    sources = {what for _, check, _, what in found if check == "source"}
    assert "python/sglang/srt/arg_groups/overrides.py" in sources
    assert not any(s.endswith("layers/attention/vision.py") for s in sources)
    quotes = {what for _, check, _, what in found if check.startswith("quote")}
    assert "16 is not divisible by 32" not in quotes and "Unknown quantization method: gptq" in quotes
