"""How a results row names an arm that ran with a prompt pack.

A cell run with a prompt pack (another wording of the prompt pieces, docs/prompts.md)
has its own arm hash, so its episodes never pool with the built-in wording's; its
label says so too, or a table would show two rows with the same name: the arm's
label, then `PACK_MARK` and the first `PACK_PREFIX` hex digits of the pack's sha256,
e.g. ``enforced_rule:k=2 · pack 1a2b3c4d``. An arm without a pack keeps its bare
label.
"""

from __future__ import annotations

PACK_MARK = " · pack "
"""Between an arm's label and its pack's short hash."""
PACK_PREFIX = 8
"""Hex digits of the pack's sha256 a label shows (a prefix of the full hash that
`lab prompts list` prints)."""


def label_with_pack(label: str, pack: str | None) -> str:
    """An arm's label as results rows show it.

    Args:
        label: the arm's label (`core.conditions.arm_label`).
        pack: the sha256 of the cell's prompt pack; None or "" for the built-in wording.

    Returns:
        ``label`` itself without a pack, else ``label · pack <first 8 hex digits>``.
    """
    return f"{label}{PACK_MARK}{pack[:PACK_PREFIX]}" if pack else label


def split_pack(label: str) -> tuple[str, str]:
    """(the arm's label without its pack marker, the pack's short hash or "")."""
    base, mark, short = label.rpartition(PACK_MARK)
    return (base, short) if mark else (label, "")
