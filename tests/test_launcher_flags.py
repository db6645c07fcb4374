"""A launch command is read the way the launcher's own parser reads it (`[launcher_flags]`).

Before the shipped packs listed their launcher's whole parser, a word the pack did not model was
passed through unread: `--attention-backnd fa3` (a typo SGLang refuses) answered "ok", and vLLM's
`--tensor_parallel_size 2` (which vLLM reads as `--tensor-parallel-size 2`) resolved with
tensor_parallel_size=1, both in silence. The tables come from the launchers' parsers
(benchmarks/launcher_flags.py); the last test regenerates them where the oracle harnesses are.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run

import constraints
from solver import InvalidInput, PackError, load_pack
from solver.inputs.launch import read_command

SGLANG = ["python", "-m", "sglang.launch_server"]
ROOT = Path(__file__).resolve().parent.parent


def _refused(pack: str, words: list[str]) -> str:
    with pytest.raises(InvalidInput) as caught:
        read_command(load_pack(pack), words)
    return str(caught.value)


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (
            ["--attention-backnd", "fa3"],
            "sglang 0.5.23 has no flag --attention-backnd; did you mean --attention-backend",
        ),
        (["--enable", "--tp", "2"], "--enable is ambiguous for sglang 0.5.23's parser: it could be"),
        (["--tp", "2", "stray"], "'stray' is neither a flag nor a flag's value"),
        (["--enable-metrics", "2"], "'2' is neither a flag nor a flag's value"),  # a switch takes no value
        (["--tp_size", "2"], "no flag --tp_size; did you mean --tp-size"),  # SGLang keeps `_` as typed
        (["--host"], "--host needs a value"),
    ],
)
def test_sglang_refuses_what_its_parser_refuses(words: list[str], says: str) -> None:
    assert says in _refused("sglang", [*SGLANG, *words])


def test_the_typo_only_is_reported_not_its_value_as_a_stray_word() -> None:
    text = _refused("sglang", [*SGLANG, "--attention-backnd", "fa3"])
    assert "1 problem" in text and "'fa3'" not in text


LATER = ["--mem-frac", "0.8", "--tp", "2"]


def test_sglang_reads_prefixes_and_every_arity_as_argparse_does() -> None:
    cmd = read_command(
        load_pack("sglang"),
        [
            *SGLANG,
            "--attention-back",
            "fa3",
            "--cuda-graph-bs-decode",
            "1",
            "2",
            "4",
            "--enable-metrics",
            *LATER,
        ],
    )
    assert cmd.options == {"attention_backend": "fa3", "tp_size": "2"}  # a unique prefix is the flag
    assert cmd.passthrough == (
        "--cuda-graph-bs-decode",
        "1",
        "2",
        "4",
        "--enable-metrics",
        "--mem-frac",
        "0.8",
    )


VLLM_OTHER = ["-O3", "--compilation-config.mode", "3", "--no-async-scheduling", "-O", "1"]
FLASH = ["--attention_config.flash_attn_version", "2"]
TP_UNDERSCORED = ["vllm", "serve", "--tensor_parallel_size", "2"]


def test_vllm_reads_underscores_dotted_keys_short_levels_and_a_late_model() -> None:
    cmd = read_command(
        load_pack("vllm"),
        [*TP_UNDERSCORED, *VLLM_OTHER[:3], *FLASH, *VLLM_OTHER[3:4], "org/model", *VLLM_OTHER[4:]],
    )
    assert cmd.options == {"tensor_parallel_size": "2", "flash_attn_version": "2"}
    assert cmd.model == "org/model" and cmd.model_positional
    # (a dotted word is read after all others, as vLLM's parser gathers them last)
    assert cmd.passthrough == (
        "-O3",
        "--no-async-scheduling",
        "-O",
        "1",
        "--compilation-config.mode",
        "3",
    )


def test_a_vllm_command_with_an_underscored_size_is_judged_with_that_size(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_attention_heads": 32,'
        ' "num_key_value_heads": 8, "hidden_size": 4096, "torch_dtype": "bfloat16"}'
    )
    words = ["vllm", "serve", str(tmp_path), "--tensor_parallel_size", "2"]
    code, out, _ = run(capsys, "check", "--pack", "vllm", "--set", "gpu_arch=sm90", "--json", "--", *words)
    assert code == 0, out
    answer = json.loads(out)
    assert answer["values"]["tensor_parallel_size"] == 2
    assert answer["provenance"]["tensor_parallel_size"]["kind"] == "user"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("tp_size: 4\n", "no flag --tp_size; did you mean --tp-size"),
        ("enable-dp-attention: true\n", "sglang refuses enable-dp-attention in a config file"),
    ],
)
def test_sglang_config_files_are_read_as_its_config_reader_reads_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, says: str
) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(text)
    facts = ["--set", "platform=cuda", "--set", "gpu_arch=sm90", "--set", "architecture=LlamaForCausalLM"]
    code, _, err = run(capsys, "check", *facts, "--", *SGLANG, "--config", str(config))
    assert code == 2 and says in err and "Traceback" not in err


def test_a_false_switch_in_a_config_file_is_left_out(tmp_path: Path) -> None:
    from solver.inputs.launchconfig import read_config

    config = tmp_path / "serve.yaml"
    config.write_text("enable-metrics: false\nenable-cache-report: true\ntp-size: 2\n")
    cmd = read_config(load_pack("sglang"), str(config))
    assert cmd.passthrough == ("--enable-cache-report",) and cmd.options == {"tp_size": "2"}


def _pack_copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(constraints.pack_directory(name), root)  # type: ignore[arg-type]
    return root


def test_a_pack_flag_the_launcher_lacks_or_reads_otherwise_is_reported_with_the_rest(tmp_path: Path) -> None:
    root = _pack_copy(tmp_path, "sglang")
    table = root / "launcher_flags.toml"
    text = table.read_text()
    text = text.replace('    "--tp-size",\n', "")  # the parser lost a flag the pack models
    head, _, switches = text.partition("switch = [\n")  # ... and reads another one with a value:
    text = head + "switch = [\n" + switches.replace('    "--enable-dp-attention",\n', "", 1)
    text = text.replace("value = [\n", 'value = [\n    "--enable-dp-attention",\n    "--host",\n', 1)
    table.write_text(text)
    pack_toml = root / "pack.toml"
    pack_toml.write_text(
        pack_toml.read_text().replace("[pack.launcher]\n", "[pack.launcher]\ndotted = true\n")
    )
    with pytest.raises(PackError) as caught:
        load_pack(root)
    messages = [f"{p.where}: {p.message}" for p in caught.value.problems]
    assert any("--tp-size is not a flag of the launcher's parser" in m for m in messages), messages
    assert any("--enable-dp-attention takes a value in the launcher's parser" in m for m in messages), (
        messages
    )
    assert any(
        "--host is also listed as switch" in m or "--host is also listed as value" in m for m in messages
    )
    assert any("dotted: write it in [launcher_flags]" in m for m in messages), messages


@pytest.mark.long  # imports each launcher (a minute or two); run with -m long where the harnesses are
@pytest.mark.parametrize(
    ("launcher", "python"),
    [
        ("sglang", Path(os.environ.get("ORACLE_VENV", "/work/oracle-sglang")) / "bin" / "python"),
        ("vllm", Path(os.environ.get("ORACLE_VLLM_HOME", "/work/oracle-vllm")) / "venv" / "bin" / "python"),
    ],
)
def test_the_shipped_tables_are_what_the_launchers_parsers_say(launcher: str, python: Path) -> None:
    if not python.exists():
        pytest.skip(f"no {launcher} oracle harness at {python}")
    made = subprocess.run(
        [str(python), str(ROOT / "benchmarks" / "launcher_flags.py"), launcher],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    shipped = (ROOT / "constraints" / launcher / "launcher_flags.toml").read_text()
    assert made.stdout == shipped, f"regenerate: {sys.executable} benchmarks/launcher_flags.py {launcher}"
