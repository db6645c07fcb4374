"""Reasoning: resolving a request (validate, order, pin, adjust, prefer), minimal conflicts and
repairs, the values still possible, and the semantic diff of two packs.

Layer rule: imports the foundation, `solver.pack`, `solver.engine` and `solver.inputs`; never cli.
"""
