"""Reasoning: resolving a request (validate, order, pin, adjust, prefer), minimal conflicts and
repairs, the values still possible, the fewest options of a command, and the compatibility matrix.

Layer rule: imports the foundation, `solver.pack`, `solver.engine`, `solver.inputs` and
`solver.render` (an error's text is written when it is raised); never lint or cli.
"""
