"""The measures (SPEC §13.1-13.5): success, Δ and its drill-down, I and the hazard,
cost, judgments, dissociation, leaving and budgets, the frames they read and the arms
that group them; `compute` runs them all.
"""
