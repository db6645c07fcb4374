"""The launchers' own reading of a typed command line: run with the oracle harness's Python.

    ORACLE_VENV/bin/python benchmarks/launcher_parse.py sglang < jobs.jsonl > verdicts.jsonl
    ORACLE_VLLM_HOME/venv/bin/python benchmarks/launcher_parse.py vllm < jobs.jsonl > verdicts.jsonl

One job per line in: `{"program": ["sglang", "serve"], "argv": [...], "fields": {name: [flag,
key]}}` (argv: the words after the program; key: the JSON key a dotted flag sets, else null).
One verdict per line out, same order: `{"ok": true, "values": {name: value}, "defaults": {name:
value}}` or `{"ok": false, "error": "the launcher's last message line"}`. Each command is read
exactly as the launcher's entry point reads it, up to the point where it would start resolving:

- SGLang 0.5.23, `python -m sglang.launch_server ARGV`: `prepare_server_args(ARGV)` (argparse,
  its abbreviations, the `--config` merger); `sglang serve ARGV`: `sglang.cli.main.main`'s own
  parser, then `serve`'s `--model-type` and positional-model rewrites, then the same.
- vLLM 0.33.0, `vllm serve ARGV`: the `FlexibleArgumentParser` of `vllm.entrypoints.cli.main` with
  the serve subcommand (underscores, `=`, `-O3`, dotted keys, `--config` YAML), the positional
  model copied into `model`, then `validate_parsed_serve_args`; `python -m
  vllm.entrypoints.openai.api_server ARGV`: its own `FlexibleArgumentParser`, then the same check.

`benchmarks/argv_read_oracle.py` draws the command lines and compares these readings with
confsolve's. Imports the launcher (and the harness's hardware mocks), never `solver`.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import io
import json
import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _plain(value: Any) -> Any:
    """A namespace value as JSON: an enum by its name, anything else not JSON by its text."""
    if isinstance(value, enum.Enum):
        return value.name
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _get(value: Any, key: str | None) -> Any:
    if key is None:
        return value
    if isinstance(value, dict):
        return value.get(key)
    return getattr(value, key, None)


class _Sglang:
    def __init__(self) -> None:
        from sglang.cli import main as cli_main  # type: ignore[import-not-found]
        from sglang.cli import serve as cli_serve  # type: ignore[import-not-found]
        from sglang.srt.server_args import ServerArgs, prepare_server_args  # type: ignore[import-not-found]

        self.cli_main, self.cli_serve, self.prepare = cli_main, cli_serve, prepare_server_args
        self.parser = argparse.ArgumentParser(prog="sglang serve")
        ServerArgs.add_cli_args(self.parser)  # only to find each flag's dest and default

    def _serve_argv(self, argv: list[str]) -> list[str]:
        """What `sglang serve ARGV` hands to `prepare_server_args`: its own top-level parser, then
        the two rewrites `serve` makes (the real functions, called as `serve` calls them)."""
        got: list[list[str]] = []
        real_serve = self.cli_serve.serve
        self.cli_serve.serve = lambda args, extra: got.append(list(extra))
        saved = sys.argv
        try:
            sys.argv = ["sglang", "serve", *argv]
            self.cli_main.main()
        finally:
            self.cli_serve.serve, sys.argv = real_serve, saved
        _, dispatch = self.cli_serve._extract_model_type_override(got[0])
        dispatch, _ = self.cli_serve._normalize_positional_model_path(dispatch)
        return list(dispatch)

    def read(self, program: list[str], argv: list[str], fields: dict[str, Any]) -> dict[str, Any]:
        if program[-1:] == ["serve"]:
            argv = self._serve_argv(argv)
        args = self.prepare(argv)
        values, defaults = {}, {}
        for name, (flag, key) in fields.items():
            action = self.parser._option_string_actions[flag]
            values[name] = _plain(_get(getattr(args, action.dest), key))
            defaults[name] = _plain(_get(action.default, key))
        return {"values": values, "defaults": defaults}


class _Vllm:
    def __init__(self) -> None:
        from launcher_flags import _vllm_parser  # the harness's mocks, as the flag table is made

        _vllm_parser(Path("/work/shared/tools"))
        from vllm.entrypoints.cli.serve import ServeSubcommand  # type: ignore[import-not-found]
        from vllm.entrypoints.common.cli_args import (  # type: ignore[import-not-found]
            make_arg_parser,
            validate_parsed_serve_args,
        )
        from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found]

        self.top = FlexibleArgumentParser(description="vLLM CLI")
        subparsers = self.top.add_subparsers(required=False, dest="subparser")
        self.serve = ServeSubcommand().subparser_init(subparsers)
        self.api = make_arg_parser(
            FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server.")
        )
        self.validate = validate_parsed_serve_args

    def read(self, program: list[str], argv: list[str], fields: dict[str, Any]) -> dict[str, Any]:
        if program[-1:] == ["serve"]:
            parser = self.serve
            args = self.top.parse_args(["serve", *argv])
            if getattr(args, "model_tag", None) is not None:  # ServeSubcommand.cmd
                args.model = args.model_tag
        else:
            parser = self.api
            args = self.api.parse_args(list(argv))
        self.validate(args)
        values, defaults = {}, {}
        for name, (flag, key) in fields.items():
            action = parser._option_string_actions[flag]
            values[name] = _plain(_get(getattr(args, action.dest), key))
            defaults[name] = _plain(_get(action.default, key))
        return {"values": values, "defaults": defaults}


def main() -> None:
    launcher = sys.argv[1]
    warnings.simplefilter("ignore")
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # the launchers' imports print
        reader = _Sglang() if launcher == "sglang" else _Vllm()
    import logging

    logging.disable(logging.CRITICAL)
    for line in sys.stdin:
        job = json.loads(line)
        err = io.StringIO()
        verdict: dict[str, Any]
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
                verdict = {"ok": True, **reader.read(job["program"], job["argv"], job["fields"])}
        except SystemExit:
            lines = err.getvalue().strip().splitlines()
            verdict = {"ok": False, "error": lines[-1] if lines else "exit"}
        except Exception as exc:
            verdict = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        real_stdout.write(json.dumps(verdict, default=str) + "\n")
        real_stdout.flush()


if __name__ == "__main__":
    main()
