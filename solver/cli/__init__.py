"""The command line (`confsolve`, `python -m solver`): thin commands that gather inputs, call the
library and print text or JSON; shell completion; launch commands after `--`.

Layer rule: the top layer; it may import every other layer, and nothing below imports it.
"""
