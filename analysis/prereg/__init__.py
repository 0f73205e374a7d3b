"""Registered tests evaluated on the data (SPEC §12): the data each test reads, how
each kind becomes parts with a verdict, the outcomes, and the pre-registration document.
"""
