"""A launcher's config file (`--config FILE.yaml` in a launch command) read as the flags it stands for.

A launcher's config file is a YAML mapping of flag names (without dashes) to values; the launcher
turns each entry into flags placed before the command line's own, so a flag typed on the command
line wins over the file. This module does the same turning and hands the words to
`solver.inputs.launch.read_command`, so a file's entries are read with exactly the flag table of the
pack and, where the pack lists it, the launcher's whole parser: `tp-size: 8` and
`tensor-parallel-size: 8` set one option (`tp_size: 8` too, unless that parser has no such
flag); `true` on a bare flag writes the flag, `false` leaves it out (or writes `--no-flag` where
the pack says the launcher has one); a list becomes a flag with several values; a mapping its
JSON text; a flag the launcher's config reader refuses is refused.

PyYAML is imported only here, only when a command line names a config file (about 15 ms).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from solver.errors import InputIssue, InvalidInput
from solver.inputs.launch import LaunchCommand, flag_words, read_command
from solver.model import Launcher, Pack
from solver.values import show

__all__ = ["MAX_CONFIG_BYTES", "read_config"]

MAX_CONFIG_BYTES = 1 << 20  # a launcher config file is a few dozen lines


def _invalid(path: str, message: str) -> InvalidInput:
    named = path or "''"  # (an empty --config read "config file : ...")
    return InvalidInput([InputIssue(field="--config", value=path, message=f"config file {named}: {message}")])


def _load(path: str, empty_refused: bool = False) -> dict[str, Any]:
    if Path(path).suffix.lower() not in (".yaml", ".yml"):
        raise _invalid(path, "must be a YAML file (.yaml or .yml), as the launcher requires")
    try:
        # (a FIFO would wait for a writer forever, a device never end)
        if not stat.S_ISREG(os.stat(os.path.expanduser(path)).st_mode):
            raise _invalid(path, "is not a regular file")
        with open(os.path.expanduser(path), "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise _invalid(path, f"cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise _invalid(path, f"is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        import yaml
    except ImportError:
        raise _invalid(path, "reading it needs PyYAML (pip install pyyaml)") from None
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        raise _invalid(path, f"is not valid YAML ({type(exc).__name__})") from None
    if data is None and empty_refused:  # (the launcher's reader calls `.items()` on what it read)
        raise _invalid(path, "holds no entries, and the launcher's config reader fails on an empty file")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _invalid(path, "must hold a mapping of flag names to values at its top level")
    return data


def _words(pack: Pack, data: dict[str, Any]) -> list[str]:
    """The flags the entries stand for, in file order."""
    launcher = pack.launcher or Launcher()
    booleans = {flag: f for f in pack.fields.values() if f.flag_value != "value" for flag in f.all_flags}
    table = {"--no-" + flag[2:] for flag, f in booleans.items() if f.flag_value == "boolean_optional"}
    switches = {f for f, takes in launcher.flags.items() if takes == "switch"}
    words: list[str] = []
    for key, value in data.items():
        flag = f"--{key}"
        # Both launchers' config readers find a bare flag by its key with `_` or `-` (vLLM: as its
        # parser reads the flag); true writes the key as typed, for the parser to read (SGLang's
        # refuses `--a_b`), false writes `--no-KEY` where the parser has it, else nothing.
        bare = "--" + str(key).replace("_", "-")
        if isinstance(value, bool) and bare in booleans and booleans[bare].flag_value == "store_false":
            words += flag_words(booleans[bare], value)
        elif isinstance(value, bool) and (bare in booleans or bare in switches):
            no_flag = f"--no-{key}"
            words += [flag] if value else [no_flag] if no_flag in launcher.flags or no_flag in table else []
        elif isinstance(value, bool):
            words += [flag, show(value)]
        elif isinstance(value, list):
            words += [flag, *(str(v) for v in value)] if value else []  # an empty list: no flag
        elif isinstance(value, dict):
            words += [flag, json.dumps(value)]
        else:
            words += [flag, str(value)]
    return words


def read_config(pack: Pack, path: str) -> LaunchCommand:
    """The config file's entries read like flags given alone (see the module docstring); its
    keys may use `_` or `-`. Raises `InvalidInput` naming the file for a missing, oversized,
    non-YAML or misshapen file and for entries the pack's flags refuse."""
    launcher = pack.launcher
    data = _load(path, launcher is not None and launcher.config_empty_refused)
    normalised: dict[str, Any] = {}
    flags = {flag for f in pack.fields.values() for flag in f.all_flags}
    if launcher is not None:
        flags |= set(launcher.model_flags)
    refused = []
    for key, value in data.items():
        name = str(key)
        if launcher is not None and launcher.flags:
            # The launcher's parser is known: its merger writes `--KEY` as the key is spelled, and
            # the parser reads that as it reads any flag (`tp_size` is no flag of one without
            # `underscores`), except the flags the merger refuses outright.
            if f"--{name.replace('_', '-')}" in launcher.config_refused:
                refused.append(name)
        elif f"--{name}" not in flags and f"--{name.replace('_', '-')}" in flags:
            name = name.replace("_", "-")  # no parser table: a key with `_` or `-` between words
        normalised[name] = value
    if refused:
        listed = ", ".join(refused)
        raise _invalid(path, f"{pack.name} refuses {listed} in a config file: give it on the command line")
    return read_command(pack, _words(pack, normalised))
