"""The engine: satisfiability over finite domains and constraints — the compiled CSP (the only user
of python-constraint), propagation that records reasons, supports, open integer domains and exact
counting. It takes a pack's compiled conditions; it knows nothing of inputs, text or commands.

Layer rule: imports the foundation and `solver.pack`; never inputs, reasoning, render, lint or cli.
"""
