"""Packs: the only code that reads pack files (TOML) — loading and checking them, where a problem is
in its file, the JSON Schema of the files, the field dependency graph and the on-disk cache.

Layer rule: imports the foundation (`solver.model`, `solver.errors`, `solver.validation`) and the
condition language (`solver.pack.expr`); never inputs, reasoning, render, lint or cli.
"""
