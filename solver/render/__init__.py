"""Render: writers of answers that are already computed, behind one formats table
(`formats.py`: for every answer, its formats, each with its writer and the JSON document kinds it
prints; the command line's `--format` choices and what it prints come from there) — human text
(`answers.py`, from the pieces in `text.py`), JSON documents (`documents.py`), the graph (DOT,
Mermaid, SVG), the matrix (text, Markdown, CSV, HTML), launch commands (argv); and the JSON Schema
of every document, and scenario case files. They know the records, not how the records were
reached.

Layer rule: imports the foundation, `solver.pack`, `solver.engine` and `solver.inputs`; never
reasoning, lint or cli (records from above, like the matrix, are read through annotations only).
"""
