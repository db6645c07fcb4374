"""Inputs: what a user or a launcher gives, turned into validated pins — `--set` and mappings, model
configs (`config.json`, the local hub cache), hardware detection, the environment and launch
commands (and their config files); `precedence` merges them (what the user typed wins).

Layer rule: imports the foundation, `solver.pack` and `solver.engine`; never render, reasoning,
lint or cli.
"""
