"""Packs: the only code that reads pack files (TOML) — loading and checking them, the condition
language, where a problem is in its file, the `[model_config]` table, the JSON Schema of the
files, the field dependency graph and the on-disk cache.

Layer rule: imports the foundation (`solver.errors`, `solver.values`, `solver.model`,
`solver.validation`, `solver.bounded`) and itself; never engine, inputs, reasoning, render, lint
or cli (solver/README.md; tests/test_layers.py checks it).
"""
