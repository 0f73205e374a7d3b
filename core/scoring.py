"""Answer scoring: HotpotQA normalisation, EM, token F1, placeholders, FEVER labels.

Normalisation and F1 follow the official HotpotQA evaluation script (itself the SQuAD
one) so that numbers are comparable with published results: ASCII punctuation is
deleted (not replaced by a space, so "Jay-Z" becomes "jayz"), and when either answer
normalises to yes/no/noanswer and the two differ, F1 is 0.

Placeholder decisions: only template copies and empty answers are flagged ("answer",
"your best guess", "<answer>", "[final answer]", "n/a", "", "..."). Genuine abstentions
and values that can be real answers ("unknown", "none", "I don't know", "Na") are not.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass

from core.data import TASK_FEVER, TASK_HOTPOTQA

DEFAULT_THRESHOLD: float = 0.6
"""F1 at or above which a HotpotQA answer counts as correct."""

FEVER_LABELS: tuple[str, ...] = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")

PLACEHOLDER_ANSWERS: frozenset[str] = frozenset({
    "", "answer", "final answer", "your answer", "my answer", "short answer",
    "your final answer", "my final answer", "answer here", "your answer here",
    "insert answer", "guess", "best guess", "your best guess", "my best guess",
    "your guess", "my guess", "best guess answer", "your best guess answer",
    "answer from own knowledge", "short answer here", "query keyword or answer",
})
"""Normalised answers that are copies of the prompt template, not answers."""

_RAW_PLACEHOLDERS: frozenset[str] = frozenset({"n/a", "n.a.", "n / a", "<n/a>", "[n/a]"})
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b")
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_YES_NO: frozenset[str] = frozenset({"yes", "no", "noanswer"})
_LABEL_STRIP_RE = re.compile(r"[^a-z ]+")
_NEI_ALIASES: frozenset[str] = frozenset(
    {"not enough info", "not enough information", "nei", "not enough evidence"})


@dataclass(frozen=True, slots=True)
class Score:
    """The score of one final answer.

    Attributes:
        em: exact match after normalisation.
        f1: token F1 after normalisation (1.0/0.0 for FEVER labels).
        correct: F1 ≥ threshold (HotpotQA) or exact label (FEVER).
        placeholder: the answer copies the template or is empty (what
            `lab repair` asks again).
    """

    em: bool
    f1: float
    correct: bool
    placeholder: bool


UNANSWERED: Score = Score(em=False, f1=0.0, correct=False, placeholder=False)
"""The score of an episode that never called finish."""


def normalize_answer(s: str) -> str:
    """Normalise an answer the HotpotQA/SQuAD way.

    Lower-case, delete ASCII punctuation, remove the articles a/an/the as whole words,
    and collapse whitespace.

    Args:
        s: a predicted or gold answer.

    Returns:
        The normalised answer ("" when nothing remains).
    """
    text = s.lower().translate(_PUNCT_TABLE)
    text = _ARTICLES_RE.sub(" ", text)
    return " ".join(text.split())


def exact_match(pred: str, gold: str) -> bool:
    """Whether two answers are equal after normalisation.

    Args:
        pred: predicted answer.
        gold: gold answer.

    Returns:
        True when `normalize_answer(pred) == normalize_answer(gold)`.
    """
    return normalize_answer(pred) == normalize_answer(gold)


def token_f1(pred: str, gold: str) -> float:
    """SQuAD token F1 over normalised tokens, with HotpotQA's yes/no rule.

    F1 = 2·common / (|pred tokens| + |gold tokens|), which equals 2PR/(P+R) and is
    computed in this form so that boundary values (e.g. exactly 0.6) are exact.

    Args:
        pred: predicted answer.
        gold: gold answer.

    Returns:
        F1 in [0, 1]; 0.0 when either side is yes/no/noanswer and they differ, or when
        no token is shared.
    """
    norm_pred = normalize_answer(pred)
    norm_gold = normalize_answer(gold)
    if (norm_pred in _YES_NO or norm_gold in _YES_NO) and norm_pred != norm_gold:
        return 0.0
    pred_tokens = norm_pred.split()
    gold_tokens = norm_gold.split()
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    return 2.0 * common / (len(pred_tokens) + len(gold_tokens))


def is_placeholder(answer: str | None) -> bool:
    """Whether a final answer is a template copy or empty rather than an answer.

    Args:
        answer: the finish argument (None = never answered, which is not a placeholder).

    Returns:
        True for empty/punctuation-only answers and template copies such as "answer",
        "your best guess", "<answer>", "[final answer]" or "n/a", in any case.
    """
    if answer is None:
        return False
    if answer.strip().lower() in _RAW_PLACEHOLDERS:
        return True
    return normalize_answer(answer) in PLACEHOLDER_ANSWERS


def score_answer(pred: str | None, gold: str, threshold: float = DEFAULT_THRESHOLD) -> Score:
    """Score a HotpotQA answer.

    Args:
        pred: the finish argument, or None when the episode never answered.
        gold: the gold answer.
        threshold: F1 at or above which the answer is correct.

    Returns:
        The Score; an unanswered episode scores all false / 0.0.
    """
    if pred is None:
        return UNANSWERED
    f1 = token_f1(pred, gold)
    return Score(
        em=exact_match(pred, gold),
        f1=f1,
        correct=f1 >= threshold,
        placeholder=is_placeholder(pred),
    )


def normalize_label(s: str | None) -> str | None:
    """Read a FEVER verdict as the paper's released harness reads it.

    A verdict counts when exactly one of "SUPPORT" and "REFUT" occurs in the answer,
    case-insensitive and anywhere ("The claim is SUPPORTED.", "REFUTES (born 1950)",
    "supports - the bridge opened in 1932"); an answer holding both ("SUPPORTS or
    REFUTES") or neither ("maybe") is not a verdict. Like the harness, it does not
    read negation: "not supported" reads as SUPPORTS. An answer with neither stem
    that is a bare "not enough info" label (or "NEI") reads as NOT ENOUGH INFO, so a
    gold label of that kind can be compared; FEVER sets hold none (they are skipped
    at import).

    Args:
        s: a predicted or gold label.

    Returns:
        "SUPPORTS", "REFUTES", "NOT ENOUGH INFO", or None when `s` is not a verdict.
    """
    if s is None:
        return None
    upper = s.upper()
    supports, refutes = "SUPPORT" in upper, "REFUT" in upper
    if supports != refutes:
        return "SUPPORTS" if supports else "REFUTES"
    if supports:
        return None
    text = " ".join(_LABEL_STRIP_RE.sub(" ", s.lower().replace("_", " ")).split())
    return "NOT ENOUGH INFO" if text in _NEI_ALIASES else None


def score_label(pred: str | None, gold: str) -> Score:
    """Score a FEVER verdict: correct iff the verdict read from it (`normalize_label`)
    equals the gold label.

    Args:
        pred: the finish argument, or None when the episode never answered.
        gold: the gold label.

    Returns:
        The Score (f1 is 1.0 when correct, else 0.0); unanswered scores all false / 0.0.
    """
    if pred is None:
        return UNANSWERED
    label = normalize_label(pred)
    correct = label is not None and label == normalize_label(gold)
    return Score(em=correct, f1=1.0 if correct else 0.0, correct=correct,
                 placeholder=is_placeholder(pred))


def score_note(f1: float, task: str) -> str:
    """How an answer's score reads beside it: HotpotQA's token F1 ("F1 0.67"); nothing for
    FEVER, whose verdict is right or wrong by its exact label (the correct/wrong beside it
    says which; the stored F1 of a verdict is only 1.0 or 0.0)."""
    return "" if task == TASK_FEVER else f"F1 {f1:.2f}"


def score_for_task(pred: str | None, gold: str, task: str,
                   threshold: float = DEFAULT_THRESHOLD) -> Score:
    """Score a final answer the way its task is scored.

    Args:
        pred: the finish argument, or None when the episode never answered.
        gold: the gold answer or label.
        task: "hotpotqa" (token F1 ≥ `threshold`) or "fever" (exactly one verdict
            stem in the answer, equal to the gold label).
        threshold: HotpotQA's F1 threshold (unused for FEVER).

    Returns:
        The Score.

    Raises:
        ValueError: an unknown task.
    """
    if task == TASK_FEVER:
        return score_label(pred, gold)
    if task == TASK_HOTPOTQA:
        return score_answer(pred, gold, threshold)
    raise ValueError(f"unknown task {task!r}; tasks: {TASK_HOTPOTQA}, {TASK_FEVER}")
