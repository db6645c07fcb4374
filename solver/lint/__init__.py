"""Pack analyses: `confsolve lint` (finding codes, their explanations and the checks behind them)
and the semantic diff of two packs (`confsolve diff`), which reuses lint's fact sampling.

Layer rule: imports every layer below (foundation, pack, engine, inputs, render, reasoning); never
cli.
"""
