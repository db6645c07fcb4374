"""Lint: rule-base analysis of a pack (`confsolve lint`) — finding codes, their explanations and
the checks behind them.

Layer rule: imports the foundation, `solver.pack`, `solver.engine`, `solver.reasoning` and
`solver.render`; never cli.
"""
