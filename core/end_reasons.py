"""How an episode ended, and which endings are counted apart.

Every stored episode has an `end_reason`: ``finish`` (it answered), ``budget`` (its
actions ran out), ``format_failure`` (a turn without a readable action ended it),
``generation_truncated`` (an acting turn was cut at max_tokens), ``refusal`` (the model
refused) or ``error`` (a model or harness error; left out of every measure).

Truncated generations and refusals are neither format failures nor errors: they are
complete episodes that did not answer, so success counts them as not answering, and
every place that counts how episodes ended shows them in their own count (the main
paper, App. D.3, reports truncated generations apart from format failures). This module
is the one place that names them, for the store, the analysis and the console alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from core.models.base import END_REFUSAL, END_TRUNCATED

END_FINISH = "finish"
END_BUDGET = "budget"
END_FORMAT_FAILURE = "format_failure"
END_ERROR = "error"

END_REASONS = (END_FINISH, END_BUDGET, END_FORMAT_FAILURE, END_TRUNCATED, END_REFUSAL,
               END_ERROR)
"""Every end reason an episode is stored with."""

APART = (END_TRUNCATED, END_REFUSAL)
"""The end reasons counted apart from format failures and errors, in display order."""

APART_FIELDS = MappingProxyType({END_TRUNCATED: "truncated", END_REFUSAL: "refused"})
"""The short name of each APART reason: its column in tables, its key in JSON rows and
status dicts, and the word the console shows beside its count."""

_LABELS = MappingProxyType({
    END_FINISH: "answered",
    END_BUDGET: "actions ran out",
    END_FORMAT_FAILURE: "no readable action",
    END_TRUNCATED: "cut at max_tokens",
    END_REFUSAL: "the model refused",
    END_ERROR: "error",
})


def end_label(reason: str) -> str:
    """A reader's words for an end reason (the reason itself when it is not known).

    Args:
        reason: a stored end_reason.

    Returns:
        E.g. "cut at max_tokens" for ``generation_truncated``.
    """
    return _LABELS.get(reason, reason)


def end_text(reason: str) -> str:
    """An end reason as an episode's end line shows it: the stored name, and for the
    APART reasons what it means ("generation_truncated: cut at max_tokens"), so a
    truncation or refusal is never read as a format failure.

    Args:
        reason: a stored end_reason.

    Returns:
        The text.
    """
    return f"{reason}: {end_label(reason)}" if reason in APART else reason


def apart_counts(reasons: Iterable[str | None]) -> dict[str, int]:
    """How many of some end reasons are each APART reason, zeros included.

    Args:
        reasons: end reasons (of complete episodes; None is skipped).

    Returns:
        APART_FIELDS name → count, in APART order.
    """
    wanted = list(reasons)
    return {APART_FIELDS[r]: sum(x == r for x in wanted) for r in APART}


def apart_text(counts: Mapping[str, int]) -> str:
    """The non-zero APART counts as a reader sees them, e.g. "2 truncated · 1 refused".

    Args:
        counts: APART_FIELDS name → count (missing names count 0).

    Returns:
        The text, "" when every count is 0.
    """
    return " · ".join(f"{counts[name]:,} {name}" for name in APART_FIELDS.values()
                      if counts.get(name))


def apart_sql(column: str = "end_reason", error: str = "error") -> str:
    """SQL aggregates counting each APART reason among complete episodes, comma-joined
    in APART order (for a SELECT over `episodes`).

    Args:
        column: the end_reason column's expression.
        error: the error column's expression (an errored episode is never counted).

    Returns:
        E.g. ``count(CASE WHEN error IS NULL AND end_reason = 'refusal' THEN 1 END)``, …
    """
    return ", ".join(f"count(CASE WHEN {error} IS NULL AND {column} = '{r}' THEN 1 END)"
                     for r in APART)
