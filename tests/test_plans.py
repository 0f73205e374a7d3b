"""Fixed evidence plans (the second seed's App. A.2): ranking, interleaving and
slicing checked by hand, determinism, and storage that never rewrites a plan."""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from core import store
from core.data import Paragraph, Question
from core.errors import ConfigError, DataError
from core.plans import (
    build_plan,
    evidence_text,
    minmax,
    overlap,
    plan_from_dict,
    supporting_indices,
    tfidf_cosine,
)
from core.store import plans as plan_rows
from tests.helpers import reads


def _q(paragraphs: list[tuple[str, str]], gold: tuple[str, ...], question: str = "q",
       qid: str = "q1", marked: tuple[int, ...] = ()) -> Question:
    return Question(id=qid, dataset="t", question=question, answer="a", type="", level="",
                    paragraphs=tuple(Paragraph(t, (s,)) for t, s in paragraphs),
                    supporting_facts=tuple((t, 0) for t in gold), supporting_paragraphs=marked)


# The question's distinct normalised tokens: {which, river, flows, through, paris} (5).
QUESTION = "Which river flows through Paris?"
PAGES = [
    ("Seine", "The Seine flows through Paris."),            # 0 gold
    ("Lyon", "Lyon is a city."),                            # 1 overlap 0/5
    ("Rivers", "A river flows through Paris and Rouen."),   # 2 overlap 4/5
    ("Paris", "Paris is the capital."),                     # 3 overlap 1/5
    ("Le Havre", "The river ends at Le Havre."),            # 4 gold; overlap 1/5
    ("Loire", "The Loire flows west."),                     # 5 overlap 1/5
]


def test_overlap_is_the_share_of_distinct_question_tokens_found() -> None:
    assert overlap(QUESTION, "Lyon Lyon is a city.") == 0
    assert overlap(QUESTION, "Rivers A river flows through Paris and Rouen.") == 0.8
    assert overlap(QUESTION, "Paris Paris is the capital.") == 0.2
    assert overlap("", "anything") == 0.0


def test_tfidf_cosine_matches_the_formula_by_hand() -> None:
    # docs: question "x y", p1 "x x", p2 "z"; df: x 2, y 1, z 1 of n = 3 documents
    idf = {w: math.log(4 / (1 + df)) + 1 for w, df in (("x", 2), ("y", 1), ("z", 1))}
    q = np.array([idf["x"], idf["y"], 0.0])
    p1 = np.array([2 * idf["x"], 0.0, 0.0])
    want = float(q @ p1 / np.linalg.norm(q) / np.linalg.norm(p1))
    got = tfidf_cosine("x y", ["x x", "z"])
    assert got[0] == pytest.approx(want) and got[1] == 0.0


def test_minmax_is_zero_when_all_equal() -> None:
    assert minmax([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert minmax([1.0, 1.0]) == [0.0, 0.0]


def test_plan_interleaves_supports_in_source_order_with_ranked_distractors() -> None:
    plan = build_plan(_q(PAGES, ("Seine", "Le Havre"), QUESTION))
    order = [p.source_index for p in plan.passages]
    # distractors by r: 2 (overlap 1, top similarity) first, 1 (nothing shared) last
    ranked = [p.source_index for p in plan.passages if not p.supporting]
    assert ranked[0] == 2 and ranked[-1] == 1
    scores = [cast(float, p.score) for p in plan.passages if not p.supporting]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0 and scores[-1] == 0.0
    # P = (g0, d0, g1, d1, d2, d3)
    assert order == [0, ranked[0], 4, *ranked[1:]]
    assert [p.supporting for p in plan.passages] == [True, False, True, False, False, False]
    # passage i → slice 1 + i mod 3
    assert [p.slice for p in plan.passages] == [1, 2, 3, 1, 2, 3]
    assert plan.visible(0) == ()
    assert [p.source_index for p in plan.visible(1)] == [0, ranked[1]]
    assert [p.source_index for p in plan.visible(2)] == [0, ranked[0], ranked[1], ranked[2]]
    assert len(plan.visible(3)) == 6
    with pytest.raises(ValueError):
        plan.visible(4)


def test_distractor_scores_by_hand() -> None:
    """r = 0.5 ℓ̃ + 0.5 s̃ with min-max over the distractors: computed here from the parts."""
    q = _q(PAGES, ("Seine", "Le Havre"), QUESTION)
    texts = [f"{t} {s}" for i, (t, s) in enumerate(PAGES) if i in (1, 2, 3, 5)]
    lex = minmax([overlap(QUESTION, t) for t in texts])
    sim = minmax(list(tfidf_cosine(QUESTION, texts)))
    want = {i: 0.5 * a + 0.5 * b for i, a, b in zip((1, 2, 3, 5), lex, sim)}
    plan = build_plan(q)
    got = {p.source_index: p.score for p in plan.passages if not p.supporting}
    assert got == pytest.approx(want, abs=1e-6)


def test_more_supports_than_distractors_and_empty_third_slice() -> None:
    plan = build_plan(_q([("A", "x"), ("B", "y"), ("C", "z")], ("A", "C")))
    assert [(p.source_index, p.supporting) for p in plan.passages] == [(0, True), (1, False),
                                                                      (2, True)]
    short = build_plan(_q([("A", "x"), ("B", "y")], ("A",)))
    assert [p.slice for p in short.passages] == [1, 2] and short.slice_passages(3) == ()
    assert short.visible(3) == short.visible(2)


def test_marked_supporting_paragraphs_win_over_titles() -> None:
    """MuSiQue marks paragraphs, and its titles may repeat."""
    q = _q([("Same", "one"), ("Same", "two"), ("Other", "three")], ("Same",), marked=(1,))
    assert supporting_indices(q) == [1]
    assert supporting_indices(_q([("Same", "one"), ("Same", "two")], ("Same",))) == [0, 1]


def test_plans_are_deterministic_and_their_hash_covers_the_text() -> None:
    q = _q(PAGES, ("Seine", "Le Havre"), QUESTION)
    a, b = build_plan(q), build_plan(q)
    assert a == b and a.sha256 == b.sha256 and a.to_json() == b.to_json()
    assert plan_from_dict(__import__("json").loads(a.to_json())) == a
    changed = _q([*PAGES[:5], ("Loire", "The Loire flows east.")], ("Seine", "Le Havre"),
                 QUESTION)
    assert build_plan(changed).sha256 != a.sha256
    assert evidence_text(q, a, 1)[0] == ("Seine", "The Seine flows through Paris.")
    with pytest.raises(DataError, match="differs from its evidence plan"):
        evidence_text(changed, a, 3)
    with pytest.raises(ConfigError, match="similarity"):
        build_plan(q, "bm25")


def test_stored_plans_are_kept_once_and_read_back(db_path: Path) -> None:
    db = store.connect(db_path)
    q = _q(PAGES, ("Seine", "Le Havre"), QUESTION)
    plans, new = plan_rows.ensure_plans(db, [q], "tfidf", build_plan)
    assert new == 1 and plans["q1"] == build_plan(q)
    again, new = plan_rows.ensure_plans(db, [q], "tfidf", lambda *_: pytest.fail("rebuilt"))
    assert new == 0 and again == plans
    row = db.conn.execute("SELECT plan_sha256, similarity FROM evidence_plans").fetchall()
    assert row == [(plans["q1"].sha256, "tfidf")]
    assert reads.plan_counts(db) == {("t", "tfidf"): 1}
