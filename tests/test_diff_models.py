"""`diff --models`: resolutions compared on real models, each read by each pack's own
`[model_config]`, on machines drawn for them; a model one pack cannot read is reported and not
compared; the model paths are hostile input like any other (exit 2, never a traceback)."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from solver import load_pack
from solver.cli.commands import main
from solver.lint.diff import diff
from solver.render.schema import output_schema

FIELDS = """
[field.gpu]
kind = "fact"
domain = ["a100", "h100", "b200"]

[field.arch]
kind = "fact"
domain = ["LlamaForCausalLM", "MixtralForCausalLM", "other"]

[field.is_moe]
kind = "fact"
domain = [false, true]

[field.is_mla]
kind = "fact"
domain = [false, true]

[field.kernel]
kind = "option"
domain = ["triton", "cutlass"]
"""

RULES = """
[[rule]]
id = "mixtral-is-moe"
when = "arch == 'MixtralForCausalLM'"
require = "is_moe"
because = "Mixtral routes experts"
source = "t"

[[rule]]
id = "cutlass-not-a100"
when = "kernel == 'cutlass'"
forbid = "gpu == 'a100'"
because = "cutlass needs SM90+"
source = "t"
"""

MODEL_CONFIG = """
[model_config]
config = "config.json"

[model_config.facts.arch]
value = ["architectures.0"]
{fallback}

[model_config.facts.is_moe]
above = {{ num_local_experts = 1 }}
otherwise = false

[model_config.facts.is_mla]
present = ["kv_lora_rank"]
"""

PREFER_CUTLASS = """
[[preference]]
id = "moe-cutlass"
field = "kernel"
when = "is_moe and gpu != 'a100'"
prefer = ["cutlass"]
because = "MoE runs cutlass on SM90+"
source = "t"
"""

MODELS = {
    "llama": {"config.json": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}},
    "mixtral": {"config.json": {"architectures": ["MixtralForCausalLM"], "num_local_experts": 8}},
}


def _pack(root: Path, *, prefer: bool, fallback: bool = True) -> Path:
    root.mkdir(parents=True)
    (root / "pack.toml").write_text(
        f'[pack]\nname = "m"\nversion = "{int(prefer)}"\n'
        'files = ["fields.toml", "rules.toml", "model_config.toml"]\n'
    )
    (root / "fields.toml").write_text(FIELDS)
    (root / "rules.toml").write_text(RULES + (PREFER_CUTLASS if prefer else ""))
    (root / "model_config.toml").write_text(
        MODEL_CONFIG.format(fallback='fallback = "other"' if fallback else "")
    )
    return root


def _models(root: Path, models: dict[str, dict[str, Any]] = MODELS) -> Path:
    for name, files in models.items():
        (root / name).mkdir(parents=True)
        for file, content in files.items():
            (root / name / file).write_text(json.dumps(content))
    return root


@pytest.fixture
def packs(tmp_path: Path) -> tuple[Path, Path]:
    return _pack(tmp_path / "old", prefer=False), _pack(tmp_path / "new", prefer=True)


def test_a_change_is_reported_on_the_models_it_happens_on(packs: tuple[Path, Path], tmp_path: Path) -> None:
    """The new pack prefers cutlass for MoE models off A100: the change is on Mixtral only, every
    request is a machine the packs allow for that model, and a trait the config does not give
    (is_mla: no kv_lora_rank, no `otherwise`) stays unknown instead of being drawn."""
    old, new = (load_pack(p) for p in packs)
    with_models = {n: p for n, p in sorted((d.name, d) for d in _models(tmp_path / "models").iterdir())}
    result = diff(old, new, models=with_models, samples=12)
    models = result.requests["models"]
    assert models["given"] == 2 == models["read_by_both"]
    assert models["not_read"] == [] and models["read_differently"] == []
    assert result.requests["compared"] == result.requests["requests"] > 0
    assert [(c.field, c.old, c.new, c.models) for c in result.changes] == [
        ("kernel", "triton", "cutlass", ["mixtral"])
    ]
    change = result.changes[0]
    assert change.example["arch"] == "MixtralForCausalLM" and change.example["is_moe"] is True
    assert change.example["gpu"] in ("h100", "b200") and "is_mla" not in change.example
    assert change.count == 2  # the two GPUs off A100 (three GPUs: every machine is enumerated)
    assert "on 1 model(s): mixtral" in change.text()
    # Without --models, traits are drawn like any fact: is_mla is part of every request.
    drawn = diff(old, new, samples=12)
    assert all("is_mla" in c.example for c in drawn.changes)


def test_a_model_one_pack_cannot_read_is_reported_and_not_compared(tmp_path: Path) -> None:
    """The old pack has no fallback for an architecture it does not list: Qwen3 is an input error
    there, so it is reported as not read by the old pack; the others are still compared. When no
    model is read by both, the diff says it compared nothing instead of "no resolution changed"."""
    old = load_pack(_pack(tmp_path / "old", prefer=False, fallback=False))
    new = load_pack(_pack(tmp_path / "new", prefer=True))
    qwen = {"qwen": {"config.json": {"architectures": ["Qwen3ForCausalLM"]}}}
    root = _models(tmp_path / "models", {**MODELS, **qwen})
    result = diff(old, new, models={d.name: d for d in sorted(root.iterdir())}, samples=12)
    models = result.requests["models"]
    assert models["read_by_both"] == 2
    assert [(m["model"], m["pack"]) for m in models["not_read"]] == [("qwen", "old")]
    assert "Qwen3ForCausalLM" in models["not_read"][0]["message"]
    assert "not read by the old pack: qwen" in result.text()

    only = _models(tmp_path / "only", qwen)
    nothing = diff(old, new, models={"qwen": only / "qwen"}, samples=12)
    assert nothing.comparable()["models"] is False and nothing.requests["compared"] == 0
    text = nothing.text()
    assert "not comparable: no model is read by both packs" in text and "no resolution changed" not in text


def test_a_trait_read_differently_is_reported(tmp_path: Path) -> None:
    """The new pack reads is_moe from a key the old one does not know: the reading differs and
    the diff says so (each pack resolves with its own reading)."""
    old = load_pack(_pack(tmp_path / "old", prefer=True))
    new_root = _pack(tmp_path / "new", prefer=True)
    table = (new_root / "model_config.toml").read_text()
    (new_root / "model_config.toml").write_text(
        table.replace("{ num_local_experts = 1 }", "{ num_local_experts = 1, n_routed_experts = 1 }")
    )
    new = load_pack(new_root)
    deepseek = {
        "deepseek": {"config.json": {"architectures": ["DeepseekV3ForCausalLM"], "n_routed_experts": 256}}
    }
    root = _models(tmp_path / "models", deepseek)
    result = diff(old, new, models={"deepseek": root / "deepseek"}, samples=12)
    assert result.requests["models"]["read_differently"] == [
        {"model": "deepseek", "field": "is_moe", "old": False, "new": True}
    ]
    assert {c.field for c in result.changes} == {"kernel"}
    assert "read differently: deepseek: is_moe false -> true" in result.text()


def test_archives_and_directories_give_the_same_diff(
    packs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config archive (the form tests/fixtures keeps the oracle's configs in, also under
    "configs") gives the diff its directories give; the document validates against the schema."""
    old, new = (str(p) for p in packs)
    directory = _models(tmp_path / "models")
    archive = tmp_path / "configs.json.gz"
    archive.write_bytes(gzip.compress(json.dumps({"configs": MODELS, "scenarios": {}}).encode()))
    documents = []
    for source in (directory, archive):
        assert main(["diff", old, new, "--models", str(source), "--json", "--samples", "12"]) == 0
        documents.append(json.loads(capsys.readouterr().out))
    assert documents[0] == documents[1]
    jsonschema.Draft202012Validator(output_schema()).validate(documents[0])
    assert documents[0]["comparable"]["models"] is True
    assert documents[0]["resolution_changes"][0]["models"] == ["mixtral"]


def test_the_shipped_fixture_models_are_read_by_the_sglang_pack(tmp_path: Path) -> None:
    """The repo's own model fixtures and the oracle's config archive: every model is read by the
    SGLang pack on both sides of a diff against itself with one preference fewer, on Hopper."""
    from solver.engine.count import Limit
    from solver.inputs.modelset import models_at

    root = Path(__file__).parent / "fixtures"
    shipped = Path(__file__).parent.parent / "constraints" / "sglang"
    copy = tmp_path / "sglang"
    shutil.copytree(shipped, copy)
    with (copy / "pack.toml").open("a") as head:
        head.write("\n# the same rules, other bytes: a diff that runs in full\n")
    with models_at([root / "models", root / "oracle" / "configs.json.gz"]) as models:
        assert len(models) >= 50
        some = dict(list(models.items())[::9])
        result = diff(
            load_pack("sglang"),
            load_pack(copy),
            {"gpu_arch": "sm90"},
            models=some,
            samples=len(some),
            limit=Limit(steps=1, seconds=None),  # the counts are not what this test is about
        )
    assert (
        result.requests["models"]["read_by_both"] == len(some) and not result.requests["models"]["not_read"]
    )
    assert result.requests["compared"] > 0 and result.changes == []


def _gzip_bomb(path: Path) -> Path:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with path.open("wb") as out:
        out.write(packer.compress(b'{"m": {"config.json": {"x": "'))
        chunk = b"0" * (1 << 20)
        for _ in range(80):  # 80 MB of zeros, ~80 KB on disk
            out.write(packer.compress(chunk))
        out.write(packer.compress(b'"}}}') + packer.flush())
    return path


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda t: t / "absent", "no such file or directory"),
        (lambda t: (t / "empty").mkdir() or t / "empty", "empty directory"),
        (lambda t: _loop(t), "cannot be read"),
        (lambda t: _write(t / "a.json.gz", b"not gzip"), "not a gzip file"),
        (lambda t: _write(t / "b.json.gz", gzip.compress(b"[1, 2]")), "not a config archive"),
        (lambda t: _write(t / "c.json.gz", gzip.compress(b"[" * 100_000)), "not valid JSON"),
        (
            lambda t: _write(t / "d.json.gz", gzip.compress(b'{"m": {"../../evil.json": {}}}')),
            "not a plain file name",
        ),
        (lambda t: _gzip_bomb(t / "e.json.gz"), "holds more than"),
    ],
    ids=[
        "missing",
        "empty",
        "link-loop",
        "not-gzip",
        "not-archive",
        "deep-json",
        "path-in-archive",
        "gzip-bomb",
    ],
)
def test_hostile_model_paths_exit_2_naming_the_path(
    packs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, needle: str
) -> None:
    source = make(tmp_path)
    old, new = (str(p) for p in packs)
    assert main(["diff", old, new, "--models", str(source)]) == 2
    err = capsys.readouterr().err
    assert f"--models {source}" in err and needle in err and "Traceback" not in err
    assert not (tmp_path.parent / "evil.json").exists()


def test_an_empty_models_path_is_refused_not_read_as_the_working_directory(
    packs: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `--models ''` read the working directory's subdirectories as models, and said nothing
    (tmp_path / "a-model").mkdir()
    (tmp_path / "a-model" / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    monkeypatch.chdir(tmp_path)
    old, new = (str(p) for p in packs)
    assert main(["diff", old, new, "--models", ""]) == 2
    err = capsys.readouterr().err
    assert "--models '': an empty path" in err and "Traceback" not in err


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _loop(tmp: Path) -> Path:
    os.symlink(tmp / "loop-b", tmp / "loop-a")
    os.symlink(tmp / "loop-a", tmp / "loop-b")
    return tmp / "loop-a"


def test_pinned_facts_shape_the_drawn_machines(packs: tuple[Path, Path]) -> None:
    """`--set arch=MixtralForCausalLM`: the machines drawn follow the rules over the pinned fact
    (is_moe), so none is ruled out afterwards (they all were before the pins took part)."""
    old, new = (load_pack(p) for p in packs)
    result = diff(old, new, {"arch": "MixtralForCausalLM"})
    assert result.requests["machines_ruled_out"] == 0 == result.requests["machines_ruled_out_before"]
    assert result.requests["compared"] == result.requests["requests"] == 6  # 3 GPUs x is_mla


@pytest.mark.parametrize("how", ["ctrl-c", "deadline"])
def test_an_interrupted_diff_leaves_no_archive_behind(tmp_path: Path, how: str) -> None:
    """The archive's configs are written to a private directory: a diff ended while its worker
    is still busy (Ctrl-C, which leaves the worker behind; a --deadline) removes it all the same."""
    import signal
    import subprocess
    import sys
    import time

    from hostile import ROOT, sglang_pack

    sglang_pack()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFSOLVE_")}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(scratch))
    archive = ROOT / "tests" / "fixtures" / "differential" / "configs.json.gz"
    seed = ROOT / "tests" / "fixtures" / "packs" / "sglang-seed"
    argv = [sys.executable, "-m", "solver", "diff", "sglang", str(seed), "--models", str(archive)]
    if how == "deadline":
        argv += ["--deadline", "5"]
    # Ctrl-C as a terminal delivers it: a suite started in the background ignores SIGINT, and
    # its children would inherit that (test_manners' `_sigint_as_on_a_terminal`).
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    if how == "ctrl-c":
        time.sleep(3.0)
        if proc.poll() is not None:
            pytest.skip("the diff finished within 3 s on this machine")
        proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if how == "ctrl-c" else 4), err.decode()[-2000:]
    assert b"Traceback" not in err
    assert list(scratch.iterdir()) == []


def test_a_scratch_of_an_ended_command_makes_no_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a worker still in the diff after Ctrl-C ended its command made its directory after the
    # command's cleanup (or between making and listing it): a confsolve-models-* left in TMPDIR
    from solver.inputs import modelset

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    scratch = modelset._Scratch()
    modelset.remove_scratch()  # the command ends; its worker goes on
    with pytest.raises(RuntimeError):
        scratch.write(0, "00000", {"config.json": "{}"})
    fresh = modelset._Scratch()  # the next command's
    assert fresh.write(0, "00000", {"config.json": "{}"}).joinpath("config.json").is_file()
    modelset.remove_scratch()
    assert list(tmp_path.iterdir()) == []


def test_a_worker_between_two_models_when_the_command_ends_makes_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race behind round 28's one failure of the Ctrl-C test above (at load 22): Ctrl-C's
    # cleanup (`remove_scratch`, main thread) ran while the worker was between two models of an
    # archive; the worker's next `mkdir(parents=True)` made the removed scratch again, and the
    # process ended before the worker reached its own cleanup. Here the cleanup runs at that
    # very point, and the worker's own cleanup never does (as when the process exits under it).
    from solver.inputs import modelset

    class EndsTheCommand(dict[str, Any]):
        def __iter__(self) -> Iterator[str]:
            modelset.remove_scratch()  # Ctrl-C, in the main thread
            return super().__iter__()

    scratch_dir = tmp_path / "tmp"
    scratch_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_dir))
    archive = {"a": {"config.json": {}}, "b": EndsTheCommand({"config.json": {}})}
    monkeypatch.setattr(modelset, "_read_archive", lambda path, shown: archive)
    (tmp_path / "m.json.gz").write_bytes(b"")
    worker = modelset.models_at([tmp_path / "m.json.gz"])
    with contextlib.suppress(RuntimeError):  # refused: its command has ended
        worker.__enter__()  # its __exit__ never runs, as in the ended process
    assert list(scratch_dir.iterdir()) == []
