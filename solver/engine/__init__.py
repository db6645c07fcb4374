"""The engine: satisfiability over finite domains and constraints — the condition language, the
compiled CSP (the only user of python-constraint), propagation that records reasons, supports,
open integer domains and exact counting.

Layer rule: imports the foundation (`solver.model`, `solver.errors`) and itself only; it answers
questions about domains and constraints and knows nothing of inputs, text or the command line.
"""
