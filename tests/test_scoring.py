"""Tests for core.scoring: normalisation, EM, token F1 (arithmetic written out), FEVER."""

from __future__ import annotations

import dataclasses

import pytest

from core.scoring import (
    UNANSWERED,
    Score,
    exact_match,
    is_placeholder,
    normalize_answer,
    normalize_label,
    score_answer,
    score_for_task,
    score_label,
    token_f1,
)


@pytest.mark.parametrize(("raw", "expected"), [
    ("The Eiffel Tower", "eiffel tower"),
    ("  An   apple a day ", "apple day"),
    ("Theatre of the absurd", "theatre of absurd"),  # "the" only as a whole word
    ("U.S.A.", "usa"),
    ("Jay-Z", "jayz"),  # punctuation deleted, not replaced by a space
    ("Paris, France!", "paris france"),
    ("\tA\n", ""),
    ("", ""),
    ("Anthem", "anthem"),  # "an" inside a word stays
])
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_exact_match_ignores_case_articles_and_punctuation() -> None:
    assert exact_match("the Eiffel Tower.", "Eiffel tower")
    assert not exact_match("Eiffel Tower Paris", "Eiffel Tower")


def test_f1_worked_example() -> None:
    # pred "the Eiffel tower in Paris" -> "eiffel tower in paris" (4 tokens)
    # gold "Eiffel Tower" -> "eiffel tower" (2 tokens); common = 2
    # precision = 2/4 = 0.5, recall = 2/2 = 1.0, F1 = 2*0.5*1.0/(0.5+1.0) = 0.6667
    assert token_f1("the Eiffel tower in Paris", "Eiffel Tower") == pytest.approx(2 / 3)
    assert token_f1("the Eiffel tower in Paris", "Eiffel Tower") == pytest.approx(0.6667, abs=1e-4)


def test_f1_counts_repeated_tokens_once_per_occurrence() -> None:
    # pred "new new york" (3 tokens), gold "new york" (2 tokens)
    # common = min(2,1) new + min(1,1) york = 2; P = 2/3, R = 2/2, F1 = 2*2/(3+2) = 0.8
    assert token_f1("new new york", "New York") == pytest.approx(0.8)


def test_f1_no_overlap_and_empty() -> None:
    assert token_f1("Berlin", "Paris") == 0.0
    assert token_f1("", "Paris") == 0.0
    assert token_f1("the", "a") == 0.0  # both normalise to "", no tokens shared


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("yes", "yes", 1.0),
    ("Yes.", "yes", 1.0),
    ("no", "yes", 0.0),
    ("yes they did", "yes", 0.0),  # gold is yes, normalised pred differs -> 0
    ("yes", "yes they did", 0.0),  # pred is yes, differs from gold -> 0
    ("noanswer", "no answer", 0.0),
])
def test_f1_yes_no_rule(pred: str, gold: str, expected: float) -> None:
    assert token_f1(pred, gold) == expected


def test_threshold_boundary_exactly_0_6_is_correct() -> None:
    # pred "p q r s t" (5 tokens), gold "p q r u v" (5 tokens), common = 3
    # P = 3/5, R = 3/5, F1 = 2*3/(5+5) = 0.6 -> correct at threshold 0.6
    score = score_answer("p q r s t", "p q r u v")
    assert score.f1 == 0.6
    assert score.correct
    assert not score.em


def test_threshold_boundary_unequal_precision_recall() -> None:
    # pred "p q r s" (4 tokens), gold "p q r u v w" (6 tokens), common = 3
    # P = 3/4 = 0.75, R = 3/6 = 0.5, F1 = 2*0.75*0.5/1.25 = 0.6 = 2*3/(4+6)
    assert score_answer("p q r s", "p q r u v w").correct


def test_just_below_threshold_is_wrong() -> None:
    # pred "p q r s t u" (6 tokens), gold "p q r v w x y" (7 tokens), common = 3
    # F1 = 2*3/(6+7) = 6/13 = 0.4615 < 0.6
    score = score_answer("p q r s t u", "p q r v w x y")
    assert score.f1 == pytest.approx(6 / 13)
    assert not score.correct


def test_threshold_is_a_setting() -> None:
    # F1 = 2/3 from the worked example: correct at 0.6, wrong at 0.7
    assert score_answer("the Eiffel tower in Paris", "Eiffel Tower").correct
    assert not score_answer("the Eiffel tower in Paris", "Eiffel Tower", threshold=0.7).correct


def test_score_answer_exact() -> None:
    assert score_answer("The Beatles", "Beatles") == Score(True, 1.0, True, False)


def test_score_answer_unanswered() -> None:
    assert score_answer(None, "Paris") == Score(False, 0.0, False, False)
    assert score_answer(None, "Paris") is UNANSWERED


def test_score_answer_placeholder_flagged_and_wrong() -> None:
    assert score_answer("your best guess", "Paris") == Score(False, 0.0, False, True)
    assert score_answer("", "Paris") == Score(False, 0.0, False, True)


@pytest.mark.parametrize("answer", [
    "", "   ", "...", "answer", "Answer", "the answer", "Final Answer", "your answer",
    "<answer>", "[answer]", "[your best guess]", "guess", "Best guess", "your best guess",
    "My best guess.", "short answer", "N/A", "n/a", "<your answer here>",
])
def test_placeholders(answer: str) -> None:
    assert is_placeholder(answer)


@pytest.mark.parametrize("answer", [
    "Paris", "none", "None of them", "unknown", "I don't know", "Na", "The Answer (band)",
    "Guess Who", "yes", "no", "1987",
])
def test_not_placeholders(answer: str) -> None:
    assert not is_placeholder(answer)


def test_none_answer_is_not_a_placeholder() -> None:
    assert not is_placeholder(None)


# FEVER verdicts are read as the paper's released harness reads them: exactly one of
# the stems SUPPORT / REFUT anywhere in the answer, in any case. (Before, only a bare
# label was read, so "The claim is SUPPORTED." scored wrong where the paper counts it.)
@pytest.mark.parametrize(("raw", "expected"), [
    ("SUPPORTS", "SUPPORTS"),
    ("supports", "SUPPORTS"),
    ("SUPPORTED", "SUPPORTS"),
    ("**Supported.**", "SUPPORTS"),
    (" support ", "SUPPORTS"),
    ("REFUTES", "REFUTES"),
    ("Refutes.", "REFUTES"),
    ("refuted", "REFUTES"),
    ("`REFUTES`", "REFUTES"),
    ("The claim is SUPPORTED.", "SUPPORTS"),
    ("The claim is supported", "SUPPORTS"),
    ("SUPPORTS - the bridge opened in 1932", "SUPPORTS"),
    ("REFUTES (born 1950, not 1960)", "REFUTES"),
    ("The evidence refutes the claim.", "REFUTES"),
    ("unsupported", "SUPPORTS"),  # a substring, as the harness reads it
    ("not supported", "SUPPORTS"),  # negation is not read, as in the harness
    # both stems or neither: no verdict
    ("SUPPORTS or REFUTES", None),
    ("It supports part of the claim and refutes the rest", None),
    ("true", None),
    ("False", None),
    ("maybe", None),
    ("", None),
    (None, None),
    ("NOT ENOUGH INFO", "NOT ENOUGH INFO"),
    ("not_enough_info", "NOT ENOUGH INFO"),
    ("There is not enough info", None),
])
def test_normalize_label(raw: str | None, expected: str | None) -> None:
    assert normalize_label(raw) == expected


def test_score_label() -> None:
    assert score_label("Supported.", "SUPPORTS") == Score(True, 1.0, True, False)
    assert score_label("The claim is SUPPORTED.", "SUPPORTS") == Score(True, 1.0, True, False)
    assert score_label("The claim is SUPPORTED.", "REFUTES") == Score(False, 0.0, False, False)
    assert score_label("REFUTES", "SUPPORTS") == Score(False, 0.0, False, False)
    assert score_label("SUPPORTS or REFUTES", "SUPPORTS") == Score(False, 0.0, False, False)
    assert score_label("maybe", "SUPPORTS") == Score(False, 0.0, False, False)
    assert score_label("answer", "REFUTES") == Score(False, 0.0, False, True)
    assert score_label(None, "REFUTES") == UNANSWERED
    assert score_for_task("REFUTES (born 1950)", "REFUTES", "fever").correct


def test_score_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        UNANSWERED.correct = True  # type: ignore[misc]
