"""Counted nouns in messages and logged events, so that none reads `1 jobs`."""

from __future__ import annotations


def plural(n: int, noun: str) -> str:
    """`1 cell`, `2 cells`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
