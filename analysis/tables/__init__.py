"""How results are reported: text tables, terminal plots, CSV export and each row's
provenance.
"""
