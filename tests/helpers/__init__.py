"""Helpers shared by test modules (test modules never import one another).

builders: questions, pools and stored sim grids; waiting: polls with deadlines far
above any load, never a guessed sleep.
"""
