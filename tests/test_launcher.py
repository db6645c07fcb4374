"""Launcher integration: flags from a pack, a Namespace resolved, flags back out, the example."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from solver import InvalidInput, Pack, PackError, Unsatisfiable, load_pack
from solver.launcher import add_arguments, resolve_namespace, to_argv
from solver.model import Field, Scalar
from solver.reasoning.resolution import resolve

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "tests" / "fixtures" / "packs" / "toy"
EXAMPLE = ROOT / "examples" / "launch.py"


@pytest.fixture(scope="module")
def toy() -> Pack:
    return load_pack(TOY)


@pytest.fixture(scope="module")
def sglang() -> Pack:
    try:
        return load_pack("sglang")
    except PackError as exc:  # the pack is written in parallel; its own tests report it
        pytest.skip(f"the sglang pack does not load yet: {exc}")


def parser_for(pack: Pack, *args: str) -> tuple[argparse.ArgumentParser, list[str]]:
    parser = argparse.ArgumentParser(prog="launcher", exit_on_error=True)
    parser.add_argument("--port", type=int, default=30000)
    for flag in args:
        parser.add_argument(flag, default=None)
    return parser, add_arguments(parser, pack)


# --- add_arguments ----------------------------------------------------------------------------


def test_every_field_becomes_a_kebab_flag_with_dest_default_and_choices(toy: Pack) -> None:
    parser, added = parser_for(toy)
    assert added == ["gpu", "quant", "kernel", "fusion", "tp", "ep"]
    actions = {a.dest: a for a in parser._actions}
    assert actions["kernel"].option_strings == ["--kernel"]
    assert actions["kernel"].choices == ["triton", "cutlass", "trtllm", "auto"]
    assert actions["tp"].choices == [1, 2, 4, 8]
    assert all(actions[name].default is None for name in added)
    ns = parser.parse_args([])
    assert {name: getattr(ns, name) for name in added} == dict.fromkeys(added)


def test_values_are_typed_from_the_domain_and_bools_are_bare_flags(toy: Pack) -> None:
    parser, _ = parser_for(toy)
    ns = parser.parse_args(["--tp", "8", "--fusion", "--kernel", "auto", "--quant", "fp8"])
    assert (ns.tp, ns.fusion, ns.kernel, ns.quant) == (8, True, "auto", "fp8")
    assert parser.parse_args(["--fusion", "false"]).fusion is False
    assert parser.parse_args(["--fusion", "yes"]).fusion is True


@pytest.mark.parametrize(
    ("argv", "tokens"),
    [
        (["--kernel", "cutlas"], ["--kernel", "cutlas", "cutlass"]),
        (["--tp", "3"], ["--tp", "3", "1, 2, 4, 8"]),
        (["--tp", "eight"], ["--tp", "eight"]),
        (["--fusion", "maybe"], ["--fusion", "maybe"]),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_flag_value_and_choices(
    toy: Pack, capsys: pytest.CaptureFixture[str], argv: list[str], tokens: list[str]
) -> None:
    parser, _ = parser_for(toy)
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for token in tokens:
        assert token in err


def test_flags_the_launcher_already_has_are_kept_and_skipped(toy: Pack) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tp", type=int, default=None, help="the launcher's own")
    parser.add_argument("--my-kernel", dest="kernel", default=None)
    added = add_arguments(parser, toy)
    assert "tp" not in added and "kernel" not in added
    assert parser._option_string_actions["--tp"].help == "the launcher's own"
    assert "--kernel" not in parser._option_string_actions
    # The launcher's own flags are still read by resolve_namespace.
    ns = parser.parse_args(["--gpu", "b200", "--tp", "4", "--my-kernel", "triton"])
    res = resolve_namespace(ns, toy)
    assert (res.values["tp"], res.values["kernel"]) == (4, "triton")
    assert res.provenance["tp"].kind == "user"


def test_fields_limits_the_flags_and_an_unknown_field_is_named(toy: Pack) -> None:
    parser = argparse.ArgumentParser()
    assert add_arguments(parser, toy, fields=["gpu", "kernel"]) == ["gpu", "kernel"]
    with pytest.raises(InvalidInput, match="kernal"):
        add_arguments(argparse.ArgumentParser(), toy, fields=["kernal"])


def test_help_explains_auto_and_unknown_and_groups_by_field_group(toy: Pack) -> None:
    parser, _ = parser_for(toy)
    text = " ".join(parser.format_help().split())
    assert "default: auto" in text and "chosen by the toy pack's preferences" in text
    assert "default: unknown" in text
    titles = [g.title for g in parser._action_groups]
    assert {"hardware (toy pack)", "kernels (toy pack)", "parallel (toy pack)"} <= set(titles)


def test_a_percent_sign_in_a_pack_help_does_not_break_help() -> None:
    pack = Pack(
        name="p", version="1", fields={"x": Field(name="x", kind="option", domain=(1, 2), help="50% faster")}
    )
    parser = argparse.ArgumentParser()
    add_arguments(parser, pack)
    assert "50% faster" in parser.format_help()


def test_environment_facts_are_not_flags_unless_asked_for(sglang: Pack) -> None:
    env = [n for n, f in sglang.fields.items() if f.env]
    assert env, "the sglang pack has environment facts"
    added = add_arguments(argparse.ArgumentParser(), sglang)
    assert not set(env) & set(added)
    assert add_arguments(argparse.ArgumentParser(), sglang, fields=env[:1]) == env[:1]


# --- resolve_namespace ------------------------------------------------------------------------


def test_resolve_namespace_ignores_the_launchers_own_attributes(toy: Pack) -> None:
    parser, _ = parser_for(toy)
    parser.add_argument("--model-path")
    ns = parser.parse_args(["--gpu", "b200", "--quant", "fp4", "--model-path", "/m", "--kernel", "auto"])
    res = resolve_namespace(ns, toy)
    assert res.values["kernel"] == "trtllm"
    assert res.provenance["kernel"].kind == "preference"
    assert res.provenance["gpu"].kind == "fact"
    assert res == resolve(toy, {"quant": "fp4"}, {"gpu": "b200"}, reasons=False)


def test_a_typed_fact_wins_over_one_that_was_read(toy: Pack) -> None:
    parser, _ = parser_for(toy)
    ns = parser.parse_args(["--gpu", "b200", "--quant", "fp4"])
    res = resolve_namespace(ns, toy, {"gpu": "a100"})
    assert res.values["gpu"] == "b200"
    ns = parser.parse_args(["--quant", "fp8"])
    res = resolve_namespace(ns, toy, {"gpu": "h100"})
    assert res.values["gpu"] == "h100" and res.provenance["gpu"].kind == "fact"


def test_a_conflict_raises_unsatisfiable_whose_text_is_the_explanation(toy: Pack) -> None:
    parser, _ = parser_for(toy)
    with pytest.raises(Unsatisfiable) as exc:
        resolve_namespace(parser.parse_args(["--gpu", "a100", "--quant", "fp4"]), toy)
    assert "fp4-needs-b200" in str(exc.value) and "--quant fp4" in str(exc.value)
    assert exc.value.repairs


def test_strict_turns_an_adjustment_into_a_conflict(toy: Pack) -> None:
    parser, _ = parser_for(toy)
    ns = parser.parse_args(["--gpu", "h100", "--quant", "none", "--kernel", "cutlass"])
    res = resolve_namespace(ns, toy)
    assert res.values["kernel"] == "triton" and res.adjustments
    with pytest.raises(Unsatisfiable):
        resolve_namespace(ns, toy, strict=True)


def test_a_bad_value_set_on_the_namespace_is_invalid_input(toy: Pack) -> None:
    ns = argparse.Namespace(gpu="b200", tp=3, port=1)
    with pytest.raises(InvalidInput, match="--tp 3"):
        resolve_namespace(ns, toy)


# --- to_argv ----------------------------------------------------------------------------------


def test_to_argv_renders_every_option_in_pack_order_with_bare_true_flags(toy: Pack) -> None:
    res = resolve(toy, {"quant": "fp4", "tp": 8}, {"gpu": "b200"})
    assert to_argv(res, toy) == ["--quant", "fp4", "--kernel", "trtllm", "--tp", "8", "--ep", "1"]
    res = resolve(toy, {"quant": "fp8"}, {"gpu": "b200"})
    assert "--fusion" in to_argv(res, toy)
    assert to_argv(res, toy, include_facts=True)[:2] == ["--gpu", "b200"]
    assert to_argv(res, toy, only=["kernel", "gpu"]) == ["--gpu", "b200", "--kernel", "cutlass"]


def test_a_value_the_launcher_spells_by_absence_is_left_out() -> None:
    class LauncherField(Field):  # a pack field with the `absent` attribute
        absent: Scalar | None = None

    pack = Pack(
        name="p",
        version="1",
        fields={
            "quantization": LauncherField(
                name="quantization", kind="option", domain=("none", "fp8"), absent="none"
            ),
            "tp_size": Field(name="tp_size", kind="option", domain=(1, 2)),
        },
    )
    assert to_argv(resolve(pack), pack) == ["--tp-size", "1"]
    assert to_argv(resolve(pack, {"quantization": "fp8"}), pack)[:2] == ["--quantization", "fp8"]


@pytest.mark.parametrize(
    "pins",
    [
        ({"quant": "fp4"}, {"gpu": "b200"}),
        ({"kernel": "cutlass", "tp": 4}, {"gpu": "h100"}),
        ({"fusion": False}, {"gpu": "a100"}),
    ],
)
def test_to_argv_round_trips_through_add_arguments(toy: Pack, pins: tuple[dict[str, Any], ...]) -> None:
    """Law: parsing the rendered flags and resolving again gives the same configuration."""
    res = resolve(toy, *pins)
    parser, _ = parser_for(toy)
    argv = to_argv(res, toy, include_facts=True, explicit_false=True)
    again = resolve_namespace(parser.parse_args(argv), toy)
    assert again.values == res.values


def test_false_is_left_out_as_a_store_true_server_expects_unless_asked(toy: Pack) -> None:
    res = resolve(toy, {"fusion": False}, {"gpu": "a100"})
    assert "--fusion" not in to_argv(res, toy)
    argv = to_argv(res, toy, explicit_false=True)
    assert argv[argv.index("--fusion") + 1] == "false"


def test_sglang_round_trip_and_flag_spellings(sglang: Pack) -> None:
    parser, added = parser_for(sglang)
    assert {"attention_backend", "tp_size", "enable_dp_attention", "gpu_arch"} <= set(added)
    ns = parser.parse_args(
        ["--platform", "cuda", "--gpu-arch", "sm90", "--architecture", "LlamaForCausalLM", "--tp-size", "8"]
    )
    res = resolve_namespace(ns, sglang)
    argv = to_argv(res, sglang)
    assert argv[argv.index("--tp-size") + 1] == "8"
    assert "--attention-backend" in argv and "--gpu-arch" not in argv
    argv = to_argv(res, sglang, include_facts=True, explicit_false=True)
    again = resolve_namespace(parser.parse_args(argv), sglang)
    assert again.values == res.values


# --- the example launcher ---------------------------------------------------------------------


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("launch_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_prints_the_server_command_in_process(toy: Pack, capsys: pytest.CaptureFixture[str]) -> None:
    code = load_example().main(
        ["--model-path", "org/model", "--port", "8000", "--gpu", "b200", "--quant", "fp4"], pack=toy
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.strip() == (
        "python -m sglang.launch_server --model-path org/model --port 8000 "
        "--quant fp4 --kernel trtllm --tp 1 --ep 1"
    )


def test_example_explains_a_conflict_and_exits_1(toy: Pack, capsys: pytest.CaptureFixture[str]) -> None:
    code = load_example().main(["--model-path", "m", "--gpu", "a100", "--quant", "fp4"], pack=toy)
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert "fp4-needs-b200" in captured.err and "What you can change" in captured.err


def test_example_as_a_program_with_the_sglang_pack(sglang: Pack, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16"})
    )
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--model-path",
            str(model),
            "--platform",
            "cuda",
            "--gpu-arch",
            "sm90",
            "--tp-size",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"python -m sglang.launch_server --model-path {model} --port 30000")
    assert "--tp-size 2" in done.stdout and "--attention-backend" in done.stdout
    bad = subprocess.run(
        [sys.executable, str(EXAMPLE), "--model-path", "m", "--gpu-arch", "sm9"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert bad.returncode == 2 and "sm90" in bad.stderr and "Traceback" not in bad.stderr
