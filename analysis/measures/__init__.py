"""The measures (docs/results.md): success, Δ and its drill-down, I and the hazard,
cost, judgments, dissociation, leaving and budgets, and the frames they read; `compute`
runs them all.
"""
