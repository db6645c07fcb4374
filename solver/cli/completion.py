"""Shell completion: `confsolve completion bash|zsh|fish` and the hidden `confsolve __complete`.

Owns the three shell scripts and the completer they call (hand-written rather than shtab's static
scripts, which cannot offer solver-computed values and have no fish, or argcomplete, which needs
the whole parser built and its import on every TAB; README, "Conventions and libraries").
The scripts are thin: they hand the words typed so far to `confsolve __complete`, which knows the
commands and flags (from the real parser, so they never drift) and, for `--set FIELD=`, offers
only the values still possible given the other inputs already typed (`valid_choices(...,
reasons=False)`: exact, each value backed by a whole configuration). Completion never fails
loudly: a bad or half-typed input is skipped.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from constraints import DEFAULT_PACK
from solver.errors import SolverError
from solver.values import show as _show

__all__ = ["BASH_SCRIPT", "FISH_SCRIPT", "SCRIPTS", "ZSH_SCRIPT", "complete", "register"]

BASH_SCRIPT = r"""# bash completion for confsolve; load it with:  source <(confsolve completion bash)
_confsolve_complete() {
    local IFS=$'\n'
    # The whole line up to the cursor: bash splits FIELD=VALUE at '=' (COMP_WORDBREAKS), so the
    # completer re-splits it and answers with the part after the last word break.
    COMPREPLY=($("${COMP_WORDS[0]}" __complete --wordbreaks "$COMP_WORDBREAKS" \
                 --line "${COMP_LINE:0:COMP_POINT}" 2>/dev/null))
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]]; then
        compopt -o nospace 2>/dev/null
    fi
}
complete -o default -F _confsolve_complete confsolve
"""

ZSH_SCRIPT = r"""#compdef confsolve
# zsh completion for confsolve; load it (after compinit) with:  source <(confsolve completion zsh)
_confsolve() {
    local -a candidates with_eq others
    candidates=("${(@f)$("${words[1]}" __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    candidates=(${candidates:#})
    if (( ${#candidates} == 0 )); then
        _files
        return
    fi
    with_eq=(${(M)candidates:#*=})
    others=(${candidates:#*=})
    (( ${#with_eq} )) && compadd -S '' -- "${with_eq[@]}"
    (( ${#others} )) && compadd -- "${others[@]}"
    return 0
}
compdef _confsolve confsolve
"""

FISH_SCRIPT = r"""# fish completion for confsolve; load it with:  confsolve completion fish | source
function __confsolve_complete
    # The words before the cursor, the program's own first, and the word under it.
    set -l words (commandline -opc)
    set -l program $words[1]
    set -e words[1]
    set -l found ($program __complete -- $words (commandline -ct) 2>/dev/null)
    if test (count $found) -eq 0
        __fish_complete_path (commandline -ct)  # a path, or nothing to offer: files
        return
    end
    printf '%s\n' $found
end
# -f: only what the function offers; -k: in its order (values a warn rule flags come last).
complete -c confsolve -f -k -a '(__confsolve_complete)'
"""

SCRIPTS = {"bash": BASH_SCRIPT, "zsh": ZSH_SCRIPT, "fish": FISH_SCRIPT}

_ASSIGNMENT_FLAGS = ("--set", "--assume")


@dataclass
class _State:
    """What the words before the cursor say: the inputs typed and what the cursor is in."""

    values: dict[str, list[str]] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    positionals: int = 0
    pending: Any = None  # the action of an option whose value is under the cursor

    def last(self, dest: str, default: str | None = None) -> str | None:
        """The value an option was given last (argparse keeps the last one too)."""
        given = self.values.get(dest)
        return given[-1] if given else default

    @property
    def pack(self) -> str:
        return self.last("pack") or DEFAULT_PACK


def _scan(parser: argparse.ArgumentParser, words: Sequence[str]) -> _State:
    state = _State()
    index, only_positionals = 0, False
    while index < len(words):
        word = words[index]
        index += 1
        if only_positionals or not word.startswith("-") or word == "-":
            state.positionals += 1
            continue
        if word == "--":
            only_positionals = True
            continue
        flag, eq, inline = word.partition("=")
        action = parser._option_string_actions.get(flag)
        if action is None:
            continue
        if action.nargs == 0:
            state.flags.add(action.dest)
        elif eq:
            state.values.setdefault(action.dest, []).append(inline)
        elif index < len(words):
            state.values.setdefault(action.dest, []).append(words[index])
            index += 1
        else:
            state.pending = action
    return state


def _inputs(state: _State, pack: Any, skip: str | None) -> tuple[Any, Any]:
    """Options and facts from the typed inputs, leaving out what is malformed and `skip`."""
    from solver.cli.queries import gather
    from solver.inputs.pins import _lookup, coerce

    def usable(item: str) -> bool:
        raw, eq, value = item.partition("=")
        name = _lookup(pack, raw.strip())
        return (
            bool(eq)
            and name is not None
            and name != skip
            and coerce(pack.fields[name], value.strip())[1] is None
        )

    ns = argparse.Namespace(
        set=[s for s in state.values.get("set", []) if usable(s)],
        assume=[s for s in state.values.get("assume", []) if usable(s)],
        model_config=state.last("model_config"),
        env_from_os="env_from_os" in state.flags,
        pack=state.pack,
    )
    try:
        return gather(ns, pack)
    except (SolverError, OSError, ValueError):
        ns.model_config = None
        return gather(ns, pack)


def _assignment(flag: str, prefix: str, state: _State) -> list[str]:
    from solver import load_pack
    from solver.inputs.pins import _lookup

    try:
        pack = load_pack(state.pack)
    except (SolverError, OSError):
        return []
    raw, eq, typed = prefix.partition("=")
    if not eq:
        taken = {_lookup(pack, s.partition("=")[0].strip()) for s in state.values.get("set", [])}
        names = [
            n for n, f in pack.fields.items() if n not in taken and (flag == "--set" or f.kind == "fact")
        ]
        return [f"{n}=" for n in names if n.startswith(raw)]
    name = _lookup(pack, raw.strip())
    if name is None:
        return []
    fld = pack.fields[name]
    try:
        from solver.reasoning.diagnose import valid_choices

        options, facts = _inputs(state, pack, skip=name)
        found = valid_choices(pack, options, facts, fields=[name], reasons=False)
        warned = list(found.warned.get(name, {}))
        values = [v for v in found.possible[name] if v not in warned]
    except SolverError:
        values, warned = list(fld.domain), []
    # Values a warn rule flags (the launcher takes them; they are expected to fail) come last.
    shown = [_show(v) for v in values] + ([fld.auto] if fld.auto else []) + [_show(v) for v in warned]
    matches = [v for v in shown if v.startswith(typed)]
    if typed and not matches and fld.aliases:
        # A GPU name or compute capability (`gpu_arch=H1`): complete the alias, which --set takes.
        folded = typed.lower()
        matches = [
            alias
            for alias, meant in fld.aliases.items()
            if alias.lower().startswith(folded) and meant in values
        ]
    return [f"{raw}={v}" for v in matches]


def _fields_of(state: _State) -> list[str]:
    from solver import load_pack

    try:
        return list(load_pack(state.pack).fields)
    except (SolverError, OSError):
        return []


def _complete_command(parser: argparse.ArgumentParser, rest: Sequence[str], cur: str) -> list[str]:
    state = _scan(parser, rest)
    for flag in _ASSIGNMENT_FLAGS:
        if cur.startswith(flag + "=") and flag in parser._option_string_actions:
            return [f"{flag}={c}" for c in _assignment(flag, cur[len(flag) + 1 :], state)]
    if state.pending is not None:
        action = state.pending
        if action.option_strings and action.option_strings[-1] in _ASSIGNMENT_FLAGS:
            return _assignment(action.option_strings[-1], cur, state)
        if action.choices:
            return [str(c) for c in action.choices if str(c).startswith(cur)]
        if action.dest == "pack":
            import constraints

            return [n for n in constraints.shipped_packs() if n.startswith(cur)]
        return []  # a path or free text: the shell's own file completion takes over
    if cur.startswith("-"):
        return sorted(f for f in parser._option_string_actions if f.startswith(cur))
    positionals = [a for a in parser._actions if not a.option_strings]
    if state.positionals >= len(positionals):
        return []
    action = positionals[state.positionals]
    if action.choices:
        return [str(c) for c in action.choices if str(c).startswith(cur)]
    if str(action.metavar or "").endswith("FIELD"):
        return [n for n in _fields_of(state) if n.startswith(cur)]
    return []


def _strip_wordbreaks(candidates: list[str], cur: str, wordbreaks: str) -> list[str]:
    """Bash replaces only the text after the last word break (e.g. '='): answer with that part."""
    breaks = [ch for ch in wordbreaks if not ch.isspace() and ch not in "\"'"]
    cut = max((cur.rfind(ch) for ch in breaks), default=-1)
    if cut < 0:
        return candidates
    head = cur[: cut + 1]
    return [c[len(head) :] for c in candidates if c.startswith(head)]


def complete(words: Sequence[str], wordbreaks: str = "") -> list[str]:
    """Candidates for the last of `words` (the words after `confsolve`; the last may be "")."""
    from solver.cli.commands import build_parser

    words = list(words) or [""]
    cur, before = words[-1], words[:-1]
    # Only the command being completed is built (and its module imported): completion runs on
    # every TAB, so it starts as fast as `confsolve check`.
    parser = build_parser(before[0] if before else False)
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = [c for c in subparsers.choices if not c.startswith("_")]
    if not before:
        found = [c for c in [*commands, "--help"] if c.startswith(cur)]
    else:
        sub = subparsers.choices.get(before[0]) if before[0] in commands else None
        found = [] if sub is None else _complete_command(sub, before[1:], cur)
    return _strip_wordbreaks(found, cur, wordbreaks)


def _split_line(line: str) -> list[str]:
    """The words of a half-typed command line (unclosed quotes allowed); "" if it ends in a space."""
    for closing in ("", '"', "'"):
        try:
            words = shlex.split(line + closing)
            break
        except ValueError:
            continue
    else:
        words = line.split()
    if not line or line[-1].isspace():
        words.append("")
    return words[1:]  # the program's own name


def cmd_complete(args: argparse.Namespace) -> int:
    words = _split_line(args.line) if args.line is not None else args.words
    try:
        found = complete(words, args.wordbreaks)
    except (SolverError, OSError, ValueError):
        found = []
    if found and args.line is not None:  # bash inserts a candidate as it is: quote it here
        found = [_bash_quoted(word) for word in found]
    if found:  # (zsh's compadd and fish quote what they insert themselves)
        print("\n".join(found))
    return 0


_SHELL_SPECIAL = re.compile(r"([^A-Za-z0-9_./:=@%+,-])")


def _bash_quoted(word: str) -> str:
    """`word` as bash must see it typed: every character the shell would read specially
    (spaces, quotes, `$`, `;`, `*`, ...) behind a backslash."""
    return _SHELL_SPECIAL.sub(r"\\\1", word)


def cmd_completion(args: argparse.Namespace) -> int:
    print(SCRIPTS[args.shell], end="")
    return 0


def register(sub: Any, add_inputs: Callable[..., None]) -> None:
    """`confsolve completion bash|zsh|fish` and the hidden `confsolve __complete`."""
    p = sub.add_parser(
        "completion",
        help="a shell completion script (bash, zsh or fish)",
        description="Print a completion script. bash: source <(confsolve "
        "completion bash); zsh (after compinit): source <(confsolve "
        "completion zsh); fish: confsolve completion fish | source (or save it "
        "as ~/.config/fish/completions/confsolve.fish). --set FIELD=<TAB> offers only the values "
        "still possible given the inputs already typed. No --json: "
        "the output is a shell script for the shell to source, not a "
        "document (`confsolve choices --json` gives the values).",
    )
    p.add_argument("shell", choices=list(SCRIPTS))
    p.set_defaults(func=cmd_completion)
    # No help= keeps it out of `confsolve --help`: it is the scripts' interface, not a user's.
    p = sub.add_parser("__complete", add_help=False)
    p.add_argument("--wordbreaks", default="")
    p.add_argument("--line", default=None)
    p.add_argument("words", nargs="*")
    p.set_defaults(func=cmd_complete)
