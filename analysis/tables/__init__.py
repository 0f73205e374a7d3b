"""How results are reported: the Row every measure returns, text tables, terminal
plots, the results cache, CSV export and each row's provenance.
"""
