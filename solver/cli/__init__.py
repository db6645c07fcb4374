"""The command line (`confsolve`, `python -m solver`): thin commands that gather inputs, call the
library and print the answer with the formats table's writer (`solver/render/formats.py`: `--format`
choices and what `--json` prints come from there); shell completion; launch commands after `--`.

Layer rule: the top layer; it may import every other layer, and nothing below imports it.
"""

from constraints import DEFAULT_PACK

# Every command's `--pack` says the same (graph, show and lint said nothing).
PACK_HELP = f"a shipped pack name or a pack directory (default: {DEFAULT_PACK})"
