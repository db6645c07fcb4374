"""The command line (`confsolve`, `python -m solver`): thin commands that gather inputs, call the
library and print the answer with the formats table's writer (`solver/render/formats.py`: `--format`
choices and what `--json` prints come from there); shell completion; launch commands after `--`.

Layer rule: the top layer; it may import every other layer, and nothing below imports it.
"""

from constraints import DEFAULT_PACK

# Every command's `--pack` says the same (graph, show and lint said nothing).
PACK_HELP = f"a shipped pack name or a pack directory (default: {DEFAULT_PACK})"

# The commands that honour --strict and --deny-warnings; the other commands that read a request
# refuse them (exit 2, `terminal.unknown_command` says which take them) rather than take them and
# change nothing: `count` counts the hard rules whatever they adjust or warn, `matrix` shows a
# pair that works only by an adjustment as ✗, and only `resolve` and `check` say warnings.
MODES: dict[str, tuple[str, ...]] = {
    "--strict": ("resolve", "check", "why", "choices"),
    "--deny-warnings": ("resolve", "check"),
}

# What stops each search of a command run without --budget (its help says): a count is one search
# under its own --limit; the others' figure is solver.budget.DEFAULT_STEPS, written out so that
# `--help` does not import solver.errors with it (tests/test_progress.py checks they agree).
SEARCH_LIMIT = {"count": "the count's --limit", "": "2000000 steps per search"}
