"""The measures (SPEC §13.1-13.5): success, Δ and its drill-down, I and the hazard,
cost, judgments, dissociation, leaving and budgets, and the frames they read; `compute`
runs them all.
"""
