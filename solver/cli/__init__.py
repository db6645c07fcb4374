"""The command line (`confsolve`, `python -m solver`): thin commands that gather inputs, call the
library and print the answer with the formats table's writer (`solver/render/formats.py`: `--format`
choices and what `--json` prints come from there); shell completion; launch commands after `--`.

Layer rule: the top layer; it may import every other layer, and nothing below imports it.
"""
