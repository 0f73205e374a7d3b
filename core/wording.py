"""Counted nouns in messages and logged events, so that none reads `1 jobs` and a count
reads as the console's and the tables' counts do (`3,549`, not `3549`)."""

from __future__ import annotations


def plural(n: int, noun: str) -> str:
    """`1 cell`, `2 cells`, `3,549 calls`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
