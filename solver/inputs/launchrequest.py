"""A typed launch command as the request it is: what `confsolve check -- COMMAND` reads, for a
launcher's own code.

`read_request(pack, words)` reads the command as the launcher's parser does
(`solver.inputs.launch.read_command`), opens its config file as the launcher does (the file's
options under the command line's), takes the pack's environment variables typed in front, and
returns the options, the model to read facts from and the notes on what the parser set aside, as
data: a launcher gets everything `check` prints without parsing text.

>>> from solver import check, load_pack
>>> pack = load_pack("vllm")
>>> req = read_request(pack, ["vllm", "serve", "m", "-tp", "2", "--tensor-parallel-size", "4"])
>>> req.options, req.model
({'tensor_parallel_size': '4'}, 'm')
>>> req.notes[0]
'-tp 2 is given again as --tensor-parallel-size 4: vllm 0.33.0 reads the last one'
>>> machine = {"platform": "cuda", "gpu_arch": "sm90", "architecture": "LlamaForCausalLM"}
>>> res = check(pack, req.options, machine)
>>> res.values["tensor_parallel_size"], res.provenance["tensor_parallel_size"].kind
(4, 'user')

Imports `solver.inputs.launch`, `solver.inputs.launchconfig` (PyYAML, only for a config file),
`solver.inputs.pins`, `solver.inputs.precedence` and `solver.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from solver.errors import Collector, InputIssue, input_issues
from solver.inputs.launch import LaunchCommand, read_command_into
from solver.inputs.pins import coerce, env_value, shown
from solver.inputs.precedence import read_values
from solver.model import Pack
from solver.values import show as _spelled

__all__ = ["LaunchRequest", "read_request", "read_request_into"]


@dataclass(frozen=True)
class LaunchRequest:
    """A launch command read as its launcher reads it."""

    command: LaunchCommand  # the words as read (`write_command` writes them back)
    # Every field the command sets, as `--set` takes them: its flags over its config file's
    # entries, and the pack's environment variables typed in front (`VAR=1 vllm serve ...`).
    options: dict[str, str] = field(default_factory=dict)
    model: str | None = None  # the model it serves (the command's, else its config file's); None: the default
    config_options: tuple[str, ...] = ()  # the fields its config file sets
    # What the launcher's parser reads and sets aside, each said: an option or the model given
    # again, a word it takes and never reads, a config file it never opens.
    notes: tuple[str, ...] = ()


def read_request(pack: Pack, words: Sequence[str]) -> LaunchRequest:
    """The request a typed launch command makes (see the module docstring). Raises `InvalidInput`
    with every issue when the launcher would refuse the command (a flag it lacks, a value its
    parser refuses, a config file it cannot read, a value set aside that it still refuses)."""
    issues = input_issues()
    request = read_request_into(pack, words, issues)
    issues.check()
    return request


def read_request_into(pack: Pack, words: Sequence[str], issues: Collector[InputIssue]) -> LaunchRequest:
    """`read_request`, adding the command's issues to `issues` (a caller that goes on collecting,
    as the command line does: the request read besides is returned, its model and values to be
    checked too); raises only for a command of no program the pack lists."""
    command = read_command_into(pack, words, issues)
    env_fields = {n: f for n, f in pack.fields.items() if f.env}
    environment = {n: env_value(env_fields[n], v) for n, v in command.environment if n in env_fields}
    sources = [{**command.options, **environment}]
    model = command.model
    from_file: LaunchCommand | None = None
    if command.config is not None:
        from solver.inputs.launchconfig import read_config

        # The launcher puts the file's flags before the command line's: a typed flag wins.
        with issues.collect():  # a file it cannot read: said with the command's other issues
            from_file = read_config(pack, command.config)
    if from_file is not None:
        if command.model_not_first and from_file.model is None:
            issues.add(_no_model_first(pack, command))
        sources.insert(0, from_file.options)
        model = model or from_file.model
    issues.add(*_set_aside_issues(pack, command, from_file))
    # The one precedence merge: the file under the command's flags.
    options = {name: _spelled(value) for name, value in read_values(pack, (), *sources).items()}
    return LaunchRequest(
        command=command,
        options=options,
        model=model,
        config_options=tuple(from_file.options) if from_file is not None else (),
        notes=command.repeated,
    )


def _no_model_first(pack: Pack, command: LaunchCommand) -> InputIssue:
    """A `model_first` command with a config file: its parser puts the file's flags after the
    first word when that is the model, and refuses the command when neither it nor the file
    gives one (a model later on the line is not looked at)."""
    program = " ".join(command.program)
    flags = " or ".join((pack.launcher.model_flags if pack.launcher else ()) or ("the model flag",))
    later = f" ({shown(command.model)} comes later)" if command.model else ""
    return InputIssue(
        field="launch command",
        value=command.config,
        message=(
            f"`{program}` with a config file needs the model as its first word, or in the file{later}: "
            f"{pack.name} {pack.version.partition('+')[0]} refuses it with 'No model specified!'; "
            f"write `{program} MODEL ...` or give {flags} (moved first)"
        ),
    )


def _set_aside_issues(
    pack: Pack, command: LaunchCommand, from_file: LaunchCommand | None
) -> list[InputIssue]:
    """The values a later word replaces (an option typed again, a config file's entry the command
    line sets too) are still read by the launcher's parser, which refuses one it cannot convert:
    each must be a value of its field too, or it is an input error naming it."""
    aside = list(command.set_aside)
    if from_file is not None:
        aside += list(from_file.set_aside)
        aside += [(n, v) for n, v in from_file.options.items() if n in command.options]
    issues = []
    for name, value in aside:
        _, issue = coerce(pack.fields[name], value)
        if issue is not None:
            issues.append(
                replace(issue, message=f"{issue.message} (replaced by a later value, but still read)")
            )
    return issues
