"""The vocabulary every analysis group shares: which episodes a row covers
(`arms`: ArmKey, Grouping), the Row and Table every measure returns (`rows`), where
frames come from (`source`) and the results cache keyed on it (`cache`).

Above `analysis.stats`, below the measures: it imports only stats and core.
"""
