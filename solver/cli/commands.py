"""`confsolve` and `python -m solver`: a thin command line over the public API.

Each command is a small function: gather inputs, call the library, print text or JSON, return the
exit code (EXIT_CODES: 0 resolved, 1 conflict, 2 bad input or usage, 3 broken pack, 4 search
budget, 70 internal error, 74 output not written, 130 Ctrl-C). Expected errors print one message and
no traceback. Imports stay lazy so `--help` and `check` start fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from constraints import DEFAULT_PACK
from solver.cli import MODES, PACK_HELP, SEARCH_LIMIT
from solver.cli.streams import drop_stdout, tolerant_stdout

if TYPE_CHECKING:
    from solver.errors import SolverError

# Nothing else at module level: `confsolve --help` imports this module and argparse, and no more;
# each command imports what it uses (pydantic, the engine) when it runs.

__all__ = ["DEFAULT_PACK", "build_parser", "main"]

EXIT_OK, EXIT_CONFLICT, EXIT_USAGE, EXIT_PACK, EXIT_BUDGET = 0, 1, 2, 3, 4
EXIT_INTERNAL, EXIT_OUTPUT, EXIT_INTERRUPTED = 70, 74, 130

# Every exit code, as `--help` and README.md list them (tests/test_cli.py checks both).
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "resolved (or the command's work done)",
    EXIT_CONFLICT: "conflict (or lint/diff found errors)",
    EXIT_USAGE: "bad input or usage",
    EXIT_PACK: "broken pack",
    EXIT_BUDGET: "budget exceeded (--budget steps, loading the pack included, or --deadline)",
    EXIT_INTERNAL: "internal error (a bug: please report it)",
    EXIT_OUTPUT: "the output could not be written (disk full, stdout closed, I/O error); a reader that goes "
    "away (| head) ends quietly with the command's own code",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


class _Parser(argparse.ArgumentParser):
    """argparse that exits with the contract's usage code (2) and a one-line hint."""

    def error(self, message: str) -> Any:
        from solver.cli.terminal import unknown_command

        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {unknown_command(message)}\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # Made for every argument added: told the width (`shutil.get_terminal_size`'s), argparse
        # does not import shutil (with bz2, lzma and zlib) to ask, which `check` never needs.
        from solver.render.width import terminal_width

        make: Callable[..., argparse.HelpFormatter] = self.formatter_class  # (typeshed: prog only)
        return make(prog=self.prog, width=terminal_width(sys.__stdout__) - 2)


_MODE_HELP = {
    "--strict": "treat adjustments (values the launcher would override) as conflicts",
    "--deny-warnings": "treat warnings (combinations the launcher accepts but that are expected to fail) "
    "as conflicts, like -D warnings (exit 1)",
}


def _add_inputs(p: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    """The inputs of a command that reads a request (its modes: those `MODES` gives it)."""
    g = p.add_argument_group("inputs")
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="fix a field: an option (source user) or a fact (source fact); "
        "--set attention-backend=fa3 equals --set attention_backend=fa3",
    )
    g.add_argument(
        "--assume",
        action="append",
        default=[],
        metavar="FACT=VALUE",
        help="a what-if fact, recorded as source 'assumed' (e.g. gpu_arch=sm100)",
    )
    g.add_argument(
        "--model-config",
        metavar="PATH",
        help="a Hugging Face config.json (or a model directory) to read facts from",
    )
    g.add_argument(
        "--env-from-os",
        action="store_true",
        help="read the pack's environment facts from this process's environment",
    )
    g.add_argument(
        "--detect",
        action="store_true",
        help="detect the platform, GPU architecture and GPU count with the vendor tools on PATH "
        "(nvidia-smi, rocminfo, rocm-smi) and, with platform=cpu, the CPU's AMX support; source "
        "'detected', reported on stderr, and what you --set wins",
    )
    for flag, said in _MODE_HELP.items():
        if p.prog.split()[-1] in MODES[flag]:
            g.add_argument(flag, action="store_true", help=said)
    g.add_argument(
        "--pack",
        default=DEFAULT_PACK,
        metavar="NAME_OR_PATH",
        help=PACK_HELP,
    )
    _add_budget(g, p.prog.split()[-1])
    _add_colour(g)
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the contract's JSON document")


def _steps(text: str) -> int:
    """argparse type of --budget: a positive whole number of search steps."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of steps, got {text!r}")
    return value


def _add_budget(p: Any, command: str = "") -> None:
    # SUPPRESS: no default, so the option given before the command is not reset by the
    # subcommand's parser (argparse copies a subparser's defaults over the parent's values).
    p.add_argument(
        "--budget",
        type=_steps,
        default=argparse.SUPPRESS,
        metavar="N",
        dest="search_budget",
        help="stop the command after N search steps in all (each search included), with exit 4 "
        f"(default: $CONFSOLVE_BUDGET, else no total: {SEARCH_LIMIT.get(command, SEARCH_LIMIT[''])})",
    )


def _add_deadline(p: Any) -> None:
    p.add_argument(
        "--deadline",
        metavar="SECONDS",
        default=argparse.SUPPRESS,
        help="stop the whole command after SECONDS with exit 4 (default: "
        "$CONFSOLVE_DEADLINE, else none; --budget counts search steps instead)",
    )


# Commands that may run for minutes: a progress line on a terminal's stderr while they work.
LONG_COMMANDS = frozenset({"count", "lint", "diff", "matrix"})


def _add_colour(p: Any) -> None:
    p.add_argument(
        "--color",
        "--colour",
        choices=["auto", "always", "never"],
        default=argparse.SUPPRESS,
        dest="color",
        help="colour the text output: auto (default: on a terminal, or wherever FORCE_COLOR is "
        "set and not 0; never while NO_COLOR is set, which wins), always or never",
    )


class _Version(argparse.Action):
    """`--version`: confsolve's version and each shipped pack's, read from pack.toml alone."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="print confsolve's version and the shipped packs' versions",
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(version_text())
        parser.exit(EXIT_OK)


def version_text() -> str:
    """`confsolve 0.1.0` and one line per shipped pack (`pack sglang 0.5.23+2`)."""
    import tomllib
    from importlib import metadata

    import constraints

    try:
        own = metadata.version("confsolve")
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        own = "unknown (not installed)"
    lines = [f"confsolve {own}"]
    for name in constraints.shipped_packs():
        directory = constraints.pack_directory(name)
        try:
            meta = tomllib.loads((directory / "pack.toml").read_text(encoding="utf-8"))["pack"]  # type: ignore[operator]
            lines.append(f"pack {name} {meta.get('version', '?')}")
        except (OSError, ValueError, KeyError, TypeError):
            lines.append(f"pack {name} (pack.toml unreadable)")
    return "\n".join(lines)


# Every command, in the order of `confsolve --help`: name -> ("module:function" that builds it,
# its line in `confsolve --help`, or None to leave it out). The function is called as
# function(subparsers, add_inputs) and adds the full subparser of every name that points at it,
# in this order, with `set_defaults(func=...)` where func(args) -> exit code. Only the command
# that runs is built (and its module imported), alone: what argparse prints once it has a command
# (that command's help, usage and errors, the top-level usage line) lists no other. Without a
# command (`--help`, none, an unknown one) every command is a placeholder with its name and help
# line, so `--help` and the invalid-choice error read as with all built. tests/test_cli.py checks
# these lines against what the functions register.
COMMANDS: dict[str, tuple[str, str | None]] = {
    "resolve": ("solver.cli.queries:_add_resolve", "the best configuration that works, explained"),
    "why": ("solver.cli.queries:_add_why", "why a field has its value"),
    "choices": ("solver.cli.queries:_add_choices", "the values still possible for each option"),
    "check": ("solver.cli.queries:_add_check", "what the launcher does with the request as typed"),
    "graph": ("solver.cli.queries:_add_graph", "the field dependency graph"),
    "packs": ("solver.cli.queries:_add_packs", "the shipped packs"),
    "show": ("solver.cli.queries:_add_show", "the fields, facts and rules of a pack"),
    "schema": ("solver.render.schema:register", "the JSON Schema of every --json document"),
    "matrix": ("solver.cli.matrix:register", "a compatibility table of two fields"),
    "completion": ("solver.cli.completion:register", "a shell completion script (bash, zsh or fish)"),
    "__complete": ("solver.cli.completion:register", None),
    "lint": (
        "solver.cli.lint:register_cli",
        "analyse a pack: dead values, dead or redundant rules, unreachable preferences, totality, cycles",
    ),
    "count": ("solver.cli.count:register_cli", "the exact number of valid configurations"),
    "diff": (
        "solver.cli.diff:register_cli",
        "what changed between two packs: rules, valid configurations, resolutions",
    ),
    "serve": ("solver.serve:register", "the configurator page on a local web server"),
}


def build_parser(command: bool | str = True) -> argparse.ArgumentParser:
    """The `confsolve` parser: every command complete when `command` is True; only that command
    when it is a name (and no other: see COMMANDS); otherwise placeholders, none built. ~20
    placeholder parsers were half of building `check`'s (round cold28)."""
    parser = _Parser(
        prog="confsolve",
        description="Resolve, explain and check LLM-serving launcher configurations "
        f"against a declarative rule pack (default: {DEFAULT_PACK}).",
        epilog="Exit codes: " + "; ".join(f"{c} {t}" for c, t in EXIT_CODES.items()) + ".",
    )
    _add_budget(parser)
    _add_deadline(parser)
    _add_colour(parser)
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = {spec for name, (spec, _) in COMMANDS.items() if command is True or name == command}
    built: set[str] = set()
    for name, (spec, help_line) in COMMANDS.items():
        if spec in wanted:
            if spec not in built:
                built.add(spec)
                _build(spec, sub)
            continue
        if command in COMMANDS:
            continue  # a named command's parse and messages read no other (see COMMANDS)
        if help_line is None:  # without help=, argparse leaves it out of the list of commands
            placeholder = sub.add_parser(name, add_help=False)
        else:
            placeholder = sub.add_parser(name, add_help=False, help=help_line)
        placeholder.set_defaults(func=_not_built)
    return parser


def _build(spec: str, sub: Any) -> None:
    import importlib

    module_name, _, function = spec.partition(":")
    register: Callable[[Any, Callable[..., None]], None] = getattr(
        importlib.import_module(module_name), function
    )
    register(sub, _add_inputs)
    # Every command takes the command-level deadline, after its name too.
    for parser in sub.choices.values():
        if "--deadline" not in parser._option_string_actions:
            _add_deadline(parser)


def _not_built(args: argparse.Namespace) -> int:
    """The func of a placeholder: never run (main builds the command it runs)."""
    raise RuntimeError(f"command {args.command!r} was parsed before it was built")


def _command_of(words: Sequence[Any]) -> bool | str:
    """The command `main` must build for these words: its name; False for none (--help, no or an
    unknown command); True for every command when the words are unusual (another option before
    the command: argparse then decides)."""
    skip = False
    for word in words:
        if not isinstance(word, str):
            return True
        if skip:
            skip = False
        elif word in ("-h", "--help"):
            return False  # argparse prints the top-level help before it reads a command
        elif word in ("--budget", "--color", "--colour", "--deadline"):
            skip = True
        elif word == "--version":
            return False
        elif not word.startswith(("--budget=", "--color=", "--colour=", "--deadline=")):
            if word.startswith("-"):
                return True
            return word if word in COMMANDS else False
    return False


def _help(name: str) -> str:
    return COMMANDS[name][1] or ""


def emit_error(exc: SolverError, as_json: bool) -> int:
    """Print the error (its JSON document with --json) and return its exit code, which stays the
    error's even when the reader of the output has gone away."""
    try:
        if as_json:
            import json

            print(json.dumps(exc.to_json(), indent=2, sort_keys=True))
            _flush()
        else:
            from solver.cli.terminal import write_answer

            write_answer("", f"confsolve: {exc}\n", prose=True)
    except BrokenPipeError:
        drop_stdout()
    return exc.exit_code


def _add_format(p: Any, answer: str) -> None:
    """A command's `--format`: its choices, default and help are the formats table's
    (`solver/render/formats.py`), so a format added there is a choice here."""
    from solver.render import formats

    table = formats.ANSWERS[answer]
    p.add_argument("--format", choices=table.choices, default=table.default, help=table.help)


def _answer(args: argparse.Namespace, answer: str, *subject: Any) -> None:
    """Print `answer` in the format the command line chose (`--format`, `--json`), with the
    formats table's writer: its text on stdout, then its notes (if any) on stderr."""
    from solver.cli.terminal import write_answer
    from solver.render import formats

    fmt = formats.chosen(answer, getattr(args, "format", None), bool(getattr(args, "json", False)))
    # On a terminal, text folds to its width (a matrix comes in blocks of columns that fit); every
    # other format stays whole.
    write_answer(*formats.write(answer, fmt, *subject), prose=fmt == "text")


LAUNCH_COMMANDS = ("resolve", "why", "choices", "check")


def _split_launch(words: list[Any]) -> tuple[list[Any], list[str] | None]:
    """confsolve's words and the launch command after the first `--`, for a command that reads
    one (None: no `--`, or another command, whose parser then sees the `--` itself)."""
    if "--" not in words or _command_of(words) not in LAUNCH_COMMANDS:
        return words, None
    at = words.index("--")
    return words[:at], [str(w) for w in words[at + 1 :]]


@contextmanager
def _colour(choice: str | None) -> Iterator[None]:
    """--color for the duration of one command."""
    if choice is None:
        yield
        return
    from solver.render import text

    saved, text.COLOUR_CHOICE = text.COLOUR_CHOICE, choice
    try:
        yield
    finally:
        text.COLOUR_CHOICE = saved


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (see EXIT_CODES). Ctrl-C ends any command quietly
    with 130; stdout that cannot be written ends it with a one-line message and 74, or quietly
    with the command's own code when the reader went away (`| head`)."""
    try:
        code = _main(argv)
    except KeyboardInterrupt:
        _quiet_exit()
        if _IN_PROCESS_OF_ITS_OWN:  # a long command's worker may still be inside a step
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    if _IN_PROCESS_OF_ITS_OWN and _COMMAND in ENDS_AT_ONCE:
        _end_at_once(code)
    return code


# True when `main` runs as the `confsolve` process itself (no argv given), not called by a program
# or a test: only then may it end the process at once.
_IN_PROCESS_OF_ITS_OWN = False
_COMMAND: str | None = None  # the command `_main` parsed

# The commands that answer one question on stdout and stderr and leave nothing else behind. Once
# the answer is written they end the process without the interpreter's teardown, which frees the
# compiled pack object by object and collects garbage one last time: ~25 ms of CPU, a sixth of a
# first `confsolve check` (README, performance: the cold `check` row).
ENDS_AT_ONCE = frozenset({"check", "resolve", "why", "choices"})


def _end_at_once(code: int) -> None:
    """End the process now with `code` when nothing is left for the interpreter's exit to do:
    stdout and stderr flushed, no `atexit` handler registered, no other thread. Otherwise return,
    and the process exits as usual."""
    import atexit
    import threading

    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (AttributeError, OSError, ValueError):
        return  # a stream that cannot be flushed: the usual exit reports or drops it
    if atexit._ncallbacks() or threading.active_count() > 1:
        return
    os._exit(code)


def _main(argv: Sequence[str] | None) -> int:
    global _IN_PROCESS_OF_ITS_OWN, _COMMAND
    _IN_PROCESS_OF_ITS_OWN = argv is None
    _COMMAND = None
    words, launch = _split_launch(sys.argv[1:] if argv is None else list(argv))
    argv = words
    if sys.stdout is None:  # started with stdout closed (`>&-`): no answer could be written
        with suppress(AttributeError, OSError, ValueError):
            print("confsolve: cannot write the output: stdout is closed", file=sys.stderr)
        return EXIT_OUTPUT
    tolerant_stdout()
    # Only the command that runs is built and its module imported (see COMMANDS): some import the
    # explanation engine, which would cost every `confsolve check` and `--help` its start-up time.
    parser = build_parser(_command_of(words))
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is _not_built:  # not expected: _command_of missed it
        parser = build_parser()
        args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return EXIT_USAGE
    args.launch = launch
    _COMMAND = args.command
    as_json = bool(getattr(args, "json", False)) or getattr(args, "format", None) == "json"
    code = EXIT_OK
    try:
        code = _run(args, as_json)
        _flush()
    except BrokenPipeError:
        drop_stdout()
    except OSError as exc:  # stdout could not be written: a full disk (> /dev/full), EIO
        drop_stdout()
        with suppress(OSError, ValueError):
            print(f"confsolve: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_OUTPUT
    return code


def _quiet_exit() -> None:
    """After Ctrl-C: what is still buffered for stdout is dropped (the reader may be gone too),
    so the interpreter's last flush neither blocks nor prints a second error."""
    with suppress(Exception):
        drop_stdout()
    progress = sys.modules.get("solver.progress")
    active = getattr(progress, "_ACTIVE", None)
    if active is not None:
        with suppress(Exception):
            active.close()  # the progress line of the interrupted command
    _remove_scratch()


def _remove_scratch() -> None:
    """The files an interrupted worker would have removed itself (`diff --models` archives)."""
    models = sys.modules.get("solver.inputs.modelset")
    if models is not None:
        with suppress(Exception):
            models.remove_scratch()


def _flush() -> None:
    """Flush stdout now, so that a reader that went away shows here (as BrokenPipeError) and not
    in the interpreter's last flush; a stdout that is None or closed has nothing to flush."""
    with suppress(AttributeError, ValueError):
        sys.stdout.flush()


def _run(args: argparse.Namespace, as_json: bool) -> int:
    from solver.errors import InputIssue, InvalidInput, SolverError

    try:
        from solver import progress
        from solver.budget import Budget

        # The command's search budget, handed to the library calls it makes (no module global):
        # --budget (else CONFSOLVE_BUDGET, checked here before any work) bounds the whole command.
        args.command_budget = Budget.for_command(getattr(args, "search_budget", None))
        raw = getattr(args, "deadline", None)
        deadline = (
            progress.parse_seconds(raw, "--deadline") if raw is not None else progress.deadline_from_env()
        )

        def work() -> int:
            with (
                _colour(getattr(args, "color", None)),
                progress.reporting(
                    args.command, deadline=deadline, quiet=as_json or args.command not in LONG_COMMANDS
                ),
            ):
                done: int = args.func(args)
            return done

        if args.command in LONG_COMMANDS or deadline is not None:
            # A deep stack (the counter may recurse once per field), and a deadline the waiting
            # thread enforces even while the work is inside one long step (loading a huge pack).
            from solver.cli.stack import run_deep

            def timed_out() -> BaseException:
                from solver.errors import DeadlineExceeded

                exc = DeadlineExceeded(args.command, progress.current_phase(), deadline or 0)
                exc.abandoned = True  # the worker is still inside its step
                return exc

            # The worker's own check fires first when it can; this one is the backstop.
            return run_deep(work, seconds=None if deadline is None else deadline + 0.5, on_timeout=timed_out)
        return work()
    except SolverError as exc:
        if not as_json and getattr(args, "request_pack", None) is not None:
            from solver.errors import Unsatisfiable

            if isinstance(exc, Unsatisfiable):  # repairs in the syntax the request came in
                from solver.cli.launch import rewrite_conflict

                exc = rewrite_conflict(args, exc)
        code = emit_error(exc, as_json)
        if getattr(exc, "abandoned", False) and _IN_PROCESS_OF_ITS_OWN:
            # The worker still holds the interpreter inside one long step: the answer is out,
            # so end now rather than when the interpreter manages to stop it.
            _flush()
            with suppress(Exception):
                sys.stderr.flush()
            _remove_scratch()
            os._exit(code)
        return code
    except RecursionError:
        return emit_error(
            InvalidInput([InputIssue(field="input", value=None, message="input nested too deeply")]), as_json
        )
    except (BrokenPipeError, KeyboardInterrupt):
        raise  # the reader went away, or Ctrl-C: main handles them
    except OSError as exc:
        if _is_stdout_error(exc):
            raise  # stdout could not be written: main handles it
        return _internal_error(exc)
    except Exception as exc:  # a bug in confsolve: say so, without a traceback unless asked
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    if os.environ.get("CONFSOLVE_DEBUG"):
        raise exc
    print(
        f"confsolve: internal error ({type(exc).__name__}: {exc}); "
        "rerun with CONFSOLVE_DEBUG=1 for details and report it",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _is_stdout_error(exc: OSError) -> bool:
    """Whether an OSError came from writing stdout: its errno is one a write to a full, closed
    or failing stream gives, and stdout is not a healthy writable stream afterwards."""
    import errno

    return exc.errno in (errno.ENOSPC, errno.EIO, errno.EPIPE, errno.EFBIG, errno.EDQUOT)
