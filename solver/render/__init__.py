"""Render: writers of answers that are already computed — human text (tables, conflicts, repairs),
the JSON Schema of every document, and scenario case files. They know the records, not how the
records were reached.

Layer rule: imports the foundation, `solver.pack`, `solver.engine` and `solver.inputs`; never
reasoning, lint or cli.
"""
