"""Write a pack's `launcher_flags.toml` from the launcher's own parser (SGLang 0.5.23 or vLLM 0.33.0).

Run with the oracle harness's Python, where the launcher is installed with its hardware mocked:

    ORACLE_VENV/bin/python benchmarks/launcher_flags.py sglang > constraints/sglang/launcher_flags.toml
    ORACLE_VLLM_HOME/venv/bin/python benchmarks/launcher_flags.py vllm > constraints/vllm/launcher_flags.toml

Every option string of the parser `sglang serve` / `python -m sglang.launch_server` build
(`ServerArgs.add_cli_args` on an `argparse.ArgumentParser`), or of `vllm serve`
(`ServeSubcommand.subparser_init`, a `FlexibleArgumentParser`), is listed by what the parser reads
after it, and each value flag with `choices` by the words it takes (`[launcher_flags.choices]`).
`solver/pack/parser_flags.py` checks the pack's own flags against the table when the pack loads,
and `solver/inputs/launch.py` reads typed commands with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from pathlib import Path

HARNESSES = Path("/work/shared/tools")

# How each launcher's parser reads flags beyond argparse's own rules, from its source: vLLM's
# FlexibleArgumentParser.parse_args turns `_` into `-` in a `--` flag's name up to its first `.`,
# reads `--flag.key VALUE` as one key of the JSON flag `--flag`, and `-O3` / `-O 3` as
# `--optimization-level 3`; both keep argparse's allow_abbrev. `vllm serve`'s model is an argparse
# positional, read between flags too; `sglang serve` takes it only as the first word
# (sglang/cli/serve.py::_normalize_positional_model_path). vLLM's `api_server` entry point builds
# the same parser (make_arg_parser: a `model_tag` positional) but never reads that word
# (launchers/api_server/entry.py::main serves `--model`); `vllm serve` moves its first `--model`
# to the front as that word (FlexibleArgumentParser.parse_args), so a positional model besides it
# is a second positional, and a `--config` file's entries go after it (_pull_args_from_config:
# no model first nor in the file is "No model specified!"); load_config_file calls `.items()` on
# what yaml.safe_load returns, None for an empty file. With `--served-model-name` (spelled out, `_`
# or `-`) and no `--config`, parse_args refuses a `vllm serve` whose first word (after that move)
# is a flag: "`model` should be provided as the first positional argument".
EXTRA: dict[str, dict[str, object]] = {
    "sglang": {},
    "vllm": {
        "underscores": True,
        "dotted": True,
        "positional_anywhere": True,
        "config_empty_refused": True,
        "attached": ["-O"],
        "unread_positional": [
            "python -m vllm.entrypoints.openai.api_server",
            "python3 -m vllm.entrypoints.openai.api_server",
        ],
        "model_first": ["vllm serve"],
        "needs_model_first": ["--served-model-name"],
    },
}


def _sglang_parser(harness: Path) -> argparse.ArgumentParser:
    sys.path.insert(0, str(harness / "sglang-oracle"))
    import hwmock  # type: ignore[import-not-found]
    import oracle  # type: ignore[import-not-found]
    import stubs  # type: ignore[import-not-found]

    stubs.install(list(oracle.STUB_ROOTS), {})
    hw = {"platform": "cuda", "sm": 90, "gfx": None, "gpu_mem_gb": 80, "num_gpus": 8, "cuda_version": "12.9"}
    hw |= {"hip_version": None, "device_name": "NVIDIA H100 80GB HBM3", "cpu_mem_gb": 512, "facts": {}}
    hwmock.install_torch_mocks(hw)
    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(prog="sglang serve")  # as server_args.prepare_server_args builds it
    ServerArgs.add_cli_args(parser)
    from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger  # type: ignore[import-not-found]

    # `--config FILE`: the merger raises on a key whose action it cannot write as flags.
    refused = ConfigArgumentMerger(parser).unsupported_actions.values()
    EXTRA["sglang"]["config_refused"] = sorted(
        {f for a in refused for f in a.option_strings if f[:2] == "--"}
    )
    return parser


def _vllm_parser(harness: Path) -> argparse.ArgumentParser:
    sys.path.insert(0, str(harness / "vllm-oracle"))
    sys.path.insert(1, str(harness / "sglang-oracle"))
    import stubs  # an inert orjson: the API server imports it, the parser never calls it

    stubs.install(["orjson"], {})
    import hwmock

    hw = hwmock.normalize({"sm": 90})
    hwmock.install(hw)
    import vllm  # type: ignore[import-not-found]  # noqa: F401  (the probes patch its modules)

    hwmock.patch_probes(hw)
    from vllm.entrypoints.cli.serve import ServeSubcommand  # type: ignore[import-not-found]
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found]

    top = FlexibleArgumentParser(prog="vllm")
    parser: argparse.ArgumentParser = ServeSubcommand().subparser_init(top.add_subparsers())
    return parser


def _arity(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "switch"
    if action.nargs is None or action.nargs == 1:
        return "value"
    return "optional" if action.nargs == "?" else "list"


def _json_config_class(action: argparse.Action) -> type | None:
    """The config dataclass a JSON flag's value is validated as (vLLM's `parse_dataclass`, which
    keeps it as its default argument), or None."""
    convert = action.type
    defaults = getattr(convert, "__defaults__", None) or ()
    if getattr(convert, "__name__", "") != "parse_dataclass" or not defaults:
        return None
    config_class = defaults[0]
    return config_class if isinstance(config_class, type) and dataclasses.is_dataclass(config_class) else None


def _nested_keys(flag: str, config_class: type, into: dict[str, list[str]]) -> None:
    """`flag`'s keys (its config class's fields), and under `flag.key` the keys of each field
    that holds a config dataclass of its own (pydantic refuses other keys there too)."""
    import typing

    into[flag] = sorted(f.name for f in dataclasses.fields(config_class))
    hints = typing.get_type_hints(config_class)
    for f in dataclasses.fields(config_class):
        kind = hints.get(f.name, f.type)
        for held in (kind, *typing.get_args(kind)):
            if isinstance(held, type) and dataclasses.is_dataclass(held):
                _nested_keys(f"{flag}.{f.name}", held, into)


def _toml_list(name: str, flags: list[str]) -> str:
    return f"{name} = [\n" + "".join(f'    "{flag}",\n' for flag in flags) + "]\n"


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("launcher", choices=sorted(EXTRA))
    args.add_argument("--harness", type=Path, default=HARNESSES, help="where the oracle harnesses live")
    opts = args.parse_args()
    warnings.simplefilter("ignore")
    real_stdout, sys.stdout = sys.stdout, sys.stderr  # the launchers' imports print
    parser = (_sglang_parser if opts.launcher == "sglang" else _vllm_parser)(opts.harness)
    by_arity: dict[str, list[str]] = {"switch": [], "value": [], "optional": [], "list": []}
    choices: dict[str, list[str]] = {}
    integers: list[str] = []
    json_keys: dict[str, list[str]] = {}
    negatives: dict[str, str] = {}
    # The parser's own table, not each action's option_strings: vLLM keeps `--no-enable-x` there,
    # hidden from help (EnableDisableAction), and argparse matches against this table.
    for flag, action in parser._option_string_actions.items():
        if flag not in ("-h", "--help"):
            by_arity[_arity(action)].append(flag)
            # The values a value flag's parser refuses all others of (argparse's `choices`, checked
            # on the word as typed when the flag converts no type).
            words = list(action.choices) if action.choices is not None and action.nargs != 0 else []
            if not isinstance(action.choices, list | tuple):  # a set's order differs from run to run
                words.sort()
            if words and action.type in (None, str) and all(isinstance(c, str) for c in words):
                choices[flag] = words
            # A value flag converted by int() (`+8`, ` 8`, `0_8` are 8 there), and a JSON flag whose
            # value a config dataclass validates (vLLM: pydantic, extra="forbid"): its only keys.
            if action.type is int and action.nargs != 0:
                integers.append(flag)
            # A boolean's negative spellings (argparse's `--no-x`, vLLM's `--disable-x` for
            # `--enable-x`): they set the positive flag's value false.
            if isinstance(action, argparse.BooleanOptionalAction) and flag.startswith("--"):
                negative = getattr(action, "negative_option_strings", None)
                negative = (
                    set(negative)
                    if negative is not None
                    else {f for f in action.option_strings if f.startswith("--no-")}
                )
                positive = next(f for f in action.option_strings if f not in negative)
                if flag in negative:
                    negatives[flag] = positive
            config_class = _json_config_class(action)
            if config_class is not None:
                _nested_keys(flag, config_class, json_keys)
    import importlib.metadata

    version = importlib.metadata.version(opts.launcher)
    out = [
        f"# Every flag {opts.launcher} {version}'s own parser accepts, by what it reads after it: written",
        f"# by `benchmarks/launcher_flags.py {opts.launcher}` from the installed {opts.launcher} {version}",
        "# (do not edit by hand). The pack's own flags are checked against it when the pack loads, and a",
        "# typed command is read with it: a flag the launcher lacks is an error, as it is for the launcher.",
        "[launcher_flags]",
        f"abbreviations = {'true' if parser.allow_abbrev else 'false'}",
    ]
    lists = {}
    for key, value in EXTRA[opts.launcher].items():
        if isinstance(value, list):
            lists[key] = value
        else:
            out.append(f"{key} = {'true' if value else 'false'}")
    text = "\n".join(out) + "\n"
    for key, flags in lists.items():
        text += _toml_list(key, flags)
    for arity, flags in by_arity.items():
        text += _toml_list(arity, sorted(flags))
    text += _toml_list("integers", sorted(integers))
    text += "\n[launcher_flags.choices]\n"
    for flag in sorted(choices):
        text += f"{json.dumps(flag)} = [{', '.join(json.dumps(c) for c in choices[flag])}]\n"
    if negatives:
        text += "\n[launcher_flags.negatives]\n"
        for flag in sorted(negatives):
            text += f"{json.dumps(flag)} = {json.dumps(negatives[flag])}\n"
    if json_keys:
        text += "\n[launcher_flags.json_keys]\n"
        for flag in sorted(json_keys):
            text += f"{json.dumps(flag)} = [{', '.join(json.dumps(k) for k in json_keys[flag])}]\n"
    real_stdout.write(text)


if __name__ == "__main__":
    main()
