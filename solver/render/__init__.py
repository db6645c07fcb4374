"""Render: every writer of answers — human text, JSON documents and their schema, pictures (matrix,
DOT/SVG) and scenario case files.

Layer rule: imports the foundation and the layers below (`solver.pack`, `solver.engine`,
`solver.inputs`, `solver.reasoning`); never cli.
"""
