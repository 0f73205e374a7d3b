"""Text tables that fit a width and say what their short names mean: regime columns in
the canonical order, a wide table split into blocks that each repeat the row's key
columns (model, arm and what else tells the rows apart), and the abbreviations of a
table's headers spelled out under it. Only layout: `analysis.tables.text` calls these
with cells already formatted.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence

from core.regimes import regime_sort_key

GAP = 2
"""Spaces between two columns (`analysis.tables.text.align`)."""


def canonical_columns(columns: Sequence[str]) -> list[str]:
    """Per-regime columns in the canonical order (clean, persistent, rec1–5, late,
    plausible, answerless), other columns (mean6, a variant …) after them in their order.

    Args:
        columns: column keys (regime names or not), in the order the rows gave them.

    Returns:
        The same keys, reordered.
    """
    def key(item: tuple[int, str]) -> tuple[int, tuple[int, int], int]:
        index, name = item
        regime = regime_sort_key(name)
        return (0, regime, 0) if regime is not None else (1, (0, 0), index)

    return [name for _, name in sorted(enumerate(columns), key=key)]


def blocks(widths: Sequence[int], keys: int, width: int | None,
           together: Sequence[Sequence[int]] = (),
           repeat: Sequence[int] | None = None) -> list[list[int]]:
    """Column indexes of each block when the table is wider than `width`: the first block
    starts with the `keys` first columns, every later one with `repeat` (by default the
    same), and each takes as many of the others as fit (at least one group, so a single
    wide column makes a block of its own). When the first group fits beside `repeat` but
    not beside every key column, the first block holds the key columns alone.

    Args:
        widths: each column's width.
        keys: how many leading columns are keys (the first block shows them all).
        width: the widest a line may be; None keeps one block.
        together: groups of column indexes never split between blocks (an interval
            and its p), in order; columns in none are groups of one.
        repeat: the columns every later block starts with (None: the `keys` first).

    Returns:
        Lists of column indexes, the first holding every column when all fit.
    """
    every = list(range(len(widths)))
    if width is None or sum(widths) + GAP * (len(widths) - 1) <= width:
        return [every]
    grouped = {i: list(g) for g in together for i in g[:1]}
    inside = {i for g in together for i in g}
    groups = [grouped.get(i, [i]) for i in every[keys:] if i in grouped or i not in inside]
    head, later = every[:keys], list(every[:keys] if repeat is None else repeat)

    def used(columns: Sequence[int]) -> int:
        return sum(widths[i] for i in columns) + GAP * (len(columns) - 1)

    out: list[list[int]] = []
    block: list[int] = []
    taken = used(head)
    for group in groups:
        size = sum(GAP + widths[i] for i in group)
        if taken + size > width and (block or (not out and used(later) + size <= width)):
            out.append((later if out else head) + block)
            block, taken = [], used(later)
        block += group
        taken += size
    if block:
        out.append((later if out else head) + block)
    return out


def abbreviation_lines(pairs: Iterable[tuple[str, str]], width: int) -> list[str]:
    """`  abbreviations: pers. = persistent, med.act = median action, …`, wrapped.

    Args:
        pairs: (short, long) names used in the table; repeats and identical pairs are
            left out.
        width: the widest a line may be.

    Returns:
        The wrapped lines, or none when nothing is abbreviated.
    """
    seen = dict.fromkeys((s, long) for s, long in pairs if s != long)
    if not seen:
        return []
    text = "abbreviations: " + ", ".join(f"{s} = {long}" for s, long in seen)
    return textwrap.wrap(text, width=width, initial_indent="  ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False)


def wrap_line(line: str, width: int) -> list[str]:
    """One line of text wrapped to `width`, continuation lines under its indent + 2.

    Args:
        line: the line.
        width: the widest a line may be.

    Returns:
        The lines (the line itself when it fits).
    """
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()))
    return textwrap.wrap(line.strip(), width=width, initial_indent=indent,
                         subsequent_indent=indent + "  ", break_long_words=False,
                         break_on_hyphens=False)


def elide_middle(text: str, width: int) -> str:
    """`text` cut to `width` characters in its middle (`sim-haz…-own`), so its start and
    its end (a seed, a run's suffix) both stay.

    Args:
        text: the text.
        width: the most characters it may take (at least 1).

    Returns:
        The text itself when it fits, else its head, "…" and its tail.
    """
    if len(text) <= width:
        return text
    keep = max(width - 1, 0)
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head):] if keep > head else \
        text[:head] + "…"


def fit_parts(parts: Sequence[str], width: int, sep: str = " · ") -> str:
    """Parts joined by `sep` in at most `width` characters: the longest part is elided in
    its middle (`elide_middle`) a character at a time until the whole fits, so every part
    keeps its start and its end (a label keeps its model and its seed); the joined text
    is elided in the middle only when even parts of three characters do not fit.

    Args:
        parts: the parts (model, then what tells a line apart).
        width: the most characters the result may take.
        sep: what joins the parts.

    Returns:
        The label.
    """
    out = list(parts)
    while len(sep.join(out)) > width:
        longest = max(range(len(out)), key=lambda i: len(out[i]))
        if len(out[longest]) <= 3:
            break
        out[longest] = elide_middle(out[longest], len(out[longest]) - 1)
    return elide_middle(sep.join(out), width)
