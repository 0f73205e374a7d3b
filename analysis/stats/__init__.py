"""Statistics shared by every measure: the seeded bootstrap, Holm and the one p
(`bootstrap`), the hazard linear probability model and its batched fits and
question-cluster bootstrap (`lpm*`), regime-mean bootstraps, and BLAS threads.
"""
