"""Registered tests evaluated on the data (docs/prereg.md): the data each test reads, how
each kind becomes parts with a verdict, the outcomes, and the pre-registration document.
"""
