"""The experiment: data, environment, agent protocol, conditions, models and storage.

Imports nothing from console, jobs or analysis.
"""
