"""Attacks on purpose, kept as tests: hostile inputs, packs, output paths, rendered outputs and the
on-disk cache. Each ends in a documented exit code with a message, or in output that cannot act
(on a shell, a spreadsheet, a browser, a terminal). The slow ones, with their time and memory
bounds, are in `benchmarks/hostile.py`; threads and memory in the long run below.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile import ROOT, TOY, assert_clean_text, sglang_pack, toml_str, write_pack

from solver import PackError, load_pack
from solver.cli.commands import main

FACTS = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]


# --- hostile inputs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "item",
    [
        "",
        "=",
        "=8",
        "tp_size=\0",
        "tp_size=8\0",
        "tp_size=" + "9" * 10_000,
        "tp_size=1" + "0" * 10_000,
        "tp_size=nan",
        "tp_size=inf",
        "tp_size=0_8",
        "tp_size=+8",
        "tp_size=８",
        "tp_size=8.0",
        "tp_size=0x8",
        "quantization=" + "x" * 1_000_000,
        "𝐪𝐮𝐚𝐧𝐭ization=fp8",
        "ｔp_size=8",
        "\0=1",
        "tp_size",
    ],
)
def test_hostile_set_values_are_refused_with_a_message(item: str, capsys: pytest.CaptureFixture[str]) -> None:
    sglang_pack()
    assert main(["check", *FACTS, "--set", item]) == 2, item[:80]
    out, err = capsys.readouterr()
    assert err.strip() and len(err) < 20_000
    assert_clean_text(out, err)


def test_plain_integers_still_work(capsys: pytest.CaptureFixture[str]) -> None:
    sglang_pack()
    for item in ("tp_size=8", "tp_size= 8", "tp-size=8", "tp_size=08"):
        assert main(["check", *FACTS, "--set", item]) == 0, item
    capsys.readouterr()


def test_an_invalid_assume_is_reported_when_the_field_is_also_set(capsys: pytest.CaptureFixture[str]) -> None:
    sglang_pack()
    assert main(["check", *FACTS, "--set", "tp_size=8", "--assume", "tp_size=banana"]) == 2
    assert "banana" in capsys.readouterr().err
    assert main(["check", *FACTS, "--set", "tp_size=8", "--assume", "no_such_fact=1"]) == 2
    assert "no_such_fact" in capsys.readouterr().err


def _hostile_config(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.json"
    if kind == "nested":
        path.write_text("[" * 200_000 + "]" * 200_000)
    elif kind == "huge":  # over the 16 MB a config may have, sparse: nothing is written
        with path.open("wb") as out:
            out.truncate(17 * 1024 * 1024)
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "nul":
        path.write_bytes(b'{"architectures": ["Llama\\u0000ForCausalLM"]}')
    return path


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("nested", "nested too deeply"),
        ("huge", "bytes; a model config is at most"),
        ("loop", "a symbolic link that leads nowhere"),
        ("nul", "LlamaForCausalLM"),
    ],
)
def test_hostile_model_configs_are_bad_input_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, needle: str
) -> None:
    """(Malformed JSON, a FIFO and /dev/zero are in test_modelconfig.py; at full size, with
    time and memory bounds, in benchmarks/hostile.py.)"""
    path = _hostile_config(tmp_path, kind)
    code = main(["check", "--set", "platform=cuda", "--set", "gpu_arch=sm90", "--model-config", str(path)])
    err = capsys.readouterr().err
    if kind == "nul":  # a NUL inside a class name: an unlisted architecture, read as `other`
        assert code in (0, 1) and "Traceback" not in err
        return
    assert code == 2, err
    assert f"--model-config {path}" in err and needle in err
    assert_clean_text(err)


def test_non_utf8_argv_is_bad_input_not_a_crash() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "solver",
            "check",
            "--pack",
            str(TOY),
            "--set",
            b"gpu=\xff\xfe".decode("utf-8", "surrogateescape"),
        ],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert_clean_text(done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def test_look_alike_names_in_a_condition_do_not_read_the_real_field(tmp_path: Path) -> None:
    fields = '[field.quant]\nkind = "option"\ndomain = ["none", "fp8"]\n'
    for name in ("𝐪𝐮𝐚𝐧𝐭", "ｑuant"):
        condition = toml_str(name + " == 'fp8'")
        rules = f'[[rule]]\nid = "r"\nforbid = {condition}\nbecause = "b"\nsource = "s"\n'
        with pytest.raises(PackError, match="plain letters"):
            load_pack(write_pack(tmp_path / name, {"f.toml": fields, "r.toml": rules}))


# --- hostile packs -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["\x1b[32mok\x1b[0m", "line\roverwritten", "\u202eevil", "bell\x07"])
def test_control_characters_in_pack_text_are_refused(text: str, tmp_path: Path) -> None:
    fields = f'[field.q]\nkind = "option"\ndomain = ["a", "b"]\nhelp = {toml_str(text)}\n'
    with pytest.raises(PackError) as caught:
        load_pack(write_pack(tmp_path / "p", {"f.toml": fields}))
    message = str(caught.value)
    assert "control character" in message
    assert "\x1b" not in message and "\r" not in message and "\u202e" not in message


def test_a_long_dotted_key_is_refused_before_the_toml_parser(tmp_path: Path) -> None:
    key = ".".join(["a"] * 20_000)  # 40 KB: quadratic in tomllib (seconds and gigabytes)
    with pytest.raises(PackError, match="nested deeper"):
        load_pack(write_pack(tmp_path / "p", {"f.toml": f"{key} = 1\n"}))


def test_a_dotted_key_within_the_limit_and_floats_are_fine(tmp_path: Path) -> None:
    floats = ", ".join("1.5" for _ in range(500))
    text = f'[field.q]\nkind = "option"\ndomain = ["a"]\nlabels.a = "x"\n# {floats}\n'
    assert load_pack(write_pack(tmp_path / "p", {"f.toml": text})).fields["q"].labels == {"a": "x"}


def test_a_pack_file_linking_out_of_the_pack_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.toml"
    outside.write_text('[field.q]\nkind = "option"\ndomain = ["a"]\n')
    root = write_pack(tmp_path / "p", {})
    (root / "pack.toml").write_text('[pack]\nname = "p"\nversion = "1"\nfiles = ["f.toml"]\n')
    (root / "f.toml").symlink_to(outside)
    with pytest.raises(PackError, match="outside the pack"):
        load_pack(root)
    inside = write_pack(tmp_path / "q", {"real.toml": outside.read_text()}, listed=["f.toml"])
    (inside / "f.toml").symlink_to(inside / "real.toml")
    assert "q" in load_pack(inside).fields  # a link within the pack is fine


def test_thousands_of_files_are_refused_from_the_manifest(tmp_path: Path) -> None:
    root = write_pack(tmp_path / "p", {}, listed=[f"f{i}.toml" for i in range(5000)])
    with pytest.raises(PackError, match="at most"):
        load_pack(root)


def test_a_big_named_set_used_by_many_rules_loads(tmp_path: Path) -> None:
    """One set of 1,000 values in 300 rules: each literal was hashed with the whole domain."""
    values = [f"v{i}" for i in range(1000)]
    fields = (
        f'[field.f]\nkind = "option"\ndomain = {json.dumps(values)}\n'
        '[field.g]\nkind = "option"\ndomain = [1, 2]\n'
    )
    sets = f"[sets]\nBIG = {json.dumps(values)}\n"
    rules = "".join(
        f'[[rule]]\nid = "r{i}"\nwhen = "f in BIG and g == {1 + i % 2}"\n'
        f'require = "f != \'v{i}\'"\nbecause = "b"\nsource = "s"\n'
        for i in range(300)
    )
    pack = load_pack(write_pack(tmp_path / "p", {"f.toml": fields, "s.toml": sets, "r.toml": rules}))
    assert len(pack.rules) == 300


# --- output paths and rendered outputs -------------------------------------------------------


def test_save_case_never_overwrites_nor_follows_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["resolve", "--pack", str(TOY), "--set", "gpu=h100"]
    existing = tmp_path / "case.toml"
    existing.write_text("keep me")
    assert main([*argv, "--save-case", str(existing)]) == 2
    assert existing.read_text() == "keep me"
    target = tmp_path / "target.txt"
    target.write_text("precious")
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    assert main([*argv, "--save-case", str(link)]) == 2
    assert target.read_text() == "precious"
    dangling = tmp_path / "dangling.toml"
    dangling.symlink_to(tmp_path / "nowhere.toml")
    assert main([*argv, "--save-case", str(dangling)]) == 2
    assert not (tmp_path / "nowhere.toml").exists()
    assert main([*argv, "--save-case", str(tmp_path / "new.toml")]) == 0
    capsys.readouterr()


SCRIPT = "<script>alert(1)</script>"


def _scripted_pack(tmp_path: Path) -> Path:
    fields = (
        f'[field.a]\nkind = "option"\ndomain = [{toml_str(SCRIPT)}, "=cmd|calc", "@x", "-y"]\n'
        f'help = {toml_str(SCRIPT)}\nlabels = {{ "@x" = {toml_str(SCRIPT)} }}\n'
        '[field.b]\nkind = "option"\ndomain = ["+1", "2"]\n'
    )
    rules = (
        f'[[rule]]\nid = "r"\nwhen = "a == \'@x\'"\nforbid = "b == \'2\'"\n'
        f"because = {toml_str(SCRIPT)}\nsource = {toml_str(SCRIPT)}\n"
    )
    return write_pack(
        tmp_path / "p", {"f.toml": fields, "r.toml": rules}, head=f"description = {toml_str(SCRIPT)}\n"
    )


def test_html_output_escapes_every_string(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _scripted_pack(tmp_path)
    assert main(["matrix", "a", "b", "--pack", str(root), "--format", "html"]) == 0
    out = capsys.readouterr().out
    assert "<script" not in out.lower() and "&lt;script&gt;" in out


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_output_escapes_the_pack_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_pack(tmp_path / "p", {"f.toml": '[field.a]\nkind = "option"\ndomain = [1]\n'}, name=SCRIPT)
    assert main(["graph", "--pack", str(root), "--format", "svg"]) == 0
    assert "<script" not in capsys.readouterr().out.lower()


def test_csv_cells_cannot_start_a_formula(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv
    import io

    root = _scripted_pack(tmp_path)
    assert main(["matrix", "a", "b", "--pack", str(root), "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    cells = [cell for row in rows for cell in row]
    assert cells and not [c for c in cells if c[:1] in ("=", "+", "-", "@")]
    assert "'=cmd|calc" in cells and "'@x" in cells and "'-y" in cells and "'+1" in cells


def test_bash_completion_quotes_what_it_offers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fields = '[field.a]\nkind = "option"\ndomain = ["x y", "$(touch z)", "ok"]\n'
    root = write_pack(tmp_path / "p", {"f.toml": fields})
    line = f"confsolve resolve --pack {root} --set a="
    assert main(["__complete", "--wordbreaks", "\"'><=;|&(:", "--line", line]) == 0
    offered = capsys.readouterr().out.splitlines()
    assert "x\\ y" in offered and "\\$\\(touch\\ z\\)" in offered and "ok" in offered


# --- the on-disk cache ---------------------------------------------------------------------


def _fresh_load(root: Path) -> Any:
    """load_pack as a new process would: the in-process caches forgotten."""
    from solver.pack import cache, loader

    loader._CACHE.clear()
    cache._entries.clear()
    return load_pack(root)


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg"
    home.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("CONFSOLVE_NO_CACHE", raising=False)
    return home / "confsolve"


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


def test_a_planted_entry_in_a_directory_others_can_write_is_never_read(
    cache_home: Path, tmp_path: Path
) -> None:
    root = write_pack(tmp_path / "p", {"f.toml": '[field.a]\nkind = "option"\ndomain = [1, 2]\n'})
    _fresh_load(root)
    (entry,) = _entries(cache_home)
    doc = json.loads(entry.read_text())
    doc["pack"]["fields"]["a"]["domain"] = [1, 2, 3]  # what a planted entry would say
    entry.write_text(json.dumps(doc))
    cache_home.chmod(0o777)  # another user could have written it
    assert _fresh_load(root).fields["a"].domain == (1, 2)
    cache_home.chmod(0o700)


def test_an_entry_that_is_a_link_or_deeply_nested_or_huge_is_a_miss(cache_home: Path, tmp_path: Path) -> None:
    root = write_pack(tmp_path / "p", {"f.toml": '[field.a]\nkind = "option"\ndomain = [1, 2]\n'})
    _fresh_load(root)
    (entry,) = _entries(cache_home)
    entry.write_text("[" * 100_000 + "]" * 100_000)
    assert _fresh_load(root).fields["a"].domain == (1, 2)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(entry.read_text())
    entry.unlink()
    entry.symlink_to(elsewhere)
    assert _fresh_load(root).fields["a"].domain == (1, 2)


def test_a_full_cache_directory_is_ignored_and_left_clean(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills while an entry is written (ENOSPC): the pack still loads, and no half
    written temporary file is left behind to pile up run after run."""
    import errno

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_fdopen(fd, mode, *args, **kwargs)
        return Full(handle) if "w" in mode else handle

    monkeypatch.setattr(os, "fdopen", fdopen)
    root = write_pack(tmp_path / "p", {"f.toml": '[field.a]\nkind = "option"\ndomain = [1, 2]\n'})
    assert _fresh_load(root).fields["a"].domain == (1, 2)
    assert cache_home.is_dir() and list(cache_home.iterdir()) == []


def test_the_key_covers_every_module_of_the_solver(tmp_path: Path) -> None:
    """On a copy of the package: editing the installed one in place, even for a moment, let the
    test runs on other cores read or import a changed `solver/validation.py`."""
    from solver.pack import cache

    installed = Path(cache.__file__).parent.parent
    copy = tmp_path / "solver"
    shutil.copytree(installed, copy, ignore=shutil.ignore_patterns("__pycache__"))
    cache._code_key = None
    assert cache.code_key(copy) == cache._code()  # (what the cache uses: the same modules)
    for edit in (copy / "validation.py", copy / "engine" / "csp.py"):
        before = cache.code_key(copy)
        edit.write_bytes(edit.read_bytes() + b"\n# changed\n")
        assert cache.code_key(copy) != before, edit.relative_to(copy)
    before = cache.code_key(copy)
    (copy / "reasoning" / "new_module.py").write_text("")
    assert cache.code_key(copy) != before


def test_an_unwritable_cache_directory_is_ignored(cache_home: Path, tmp_path: Path) -> None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    cache_home.mkdir(mode=0o500)
    root = write_pack(tmp_path / "p", {"f.toml": '[field.a]\nkind = "option"\ndomain = [1]\n'})
    assert _fresh_load(root).fields["a"].domain == (1,)
    cache_home.chmod(0o700)


def test_a_cache_path_that_is_a_file_is_ignored(cache_home: Path, tmp_path: Path) -> None:
    cache_home.write_text("not a directory")
    root = write_pack(tmp_path / "p", {"f.toml": '[field.a]\nkind = "option"\ndomain = [1]\n'})
    assert _fresh_load(root).fields["a"].domain == (1,)


def test_concurrent_processes_with_an_empty_cache_agree(cache_home: Path, tmp_path: Path) -> None:
    sglang_pack()
    # The SGLang pack given by path: the shipped one's prebuilt form (solver/pack/prebuilt.py)
    # leaves a start nothing to write, and this is about writers racing.
    copy = tmp_path / "sglang"
    shutil.copytree(ROOT / "constraints" / "sglang", copy, ignore=shutil.ignore_patterns("__*__", "*.py"))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "solver", "resolve", "--pack", str(copy), *FACTS, "--json"]
    procs = [
        subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    assert len({o[0] for o in outs}) == 1
    assert not list(cache_home.glob("*.tmp"))
    mode = stat.S_IMODE(os.stat(cache_home).st_mode)
    assert not mode & 0o077
