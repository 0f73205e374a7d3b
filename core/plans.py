"""Fixed evidence plans of the second seed (matched trajectory replay, its §3.1 and App. A.2).

For each question the plan is its supporting passages in source order, G = (g0, g1, …),
interleaved with its distractors ranked once, D = (d0, d1, …): P = (g0, d0, g1, d1, …),
an element omitted when its list is exhausted. Passage i of P goes to slice
1 + (i mod 3); depth t shows slices 1…t (depth 0 shows nothing).

Distractors are ranked by r(d; q) = 0.5·ℓ̃(d; q) + 0.5·s̃(d; q), where ℓ is the fraction
of the question's distinct normalised tokens that appear in the passage (title and
text), s a similarity of question and passage, and ~ min–max normalisation over that
question's distractors (0 for all when they are equal); ties keep source order. The
seed's s is the cosine of BAAI/bge-m3 embeddings. No embedding model is on the box,
so lab's s is lexical and the plan records which: ``tfidf`` (the only one today) is
the cosine of TF-IDF vectors of normalised tokens (`core.scoring.normalize_answer`),
raw term counts times smoothed idf = ln((1 + n) / (1 + df)) + 1 over the question's
distractors and the question (n documents), L2-normalised — scikit-learn's
`TfidfVectorizer` defaults, written with numpy here (scikit-learn is no dependency).

Supporting passages: HotpotQA and FEVER by the titles of the supporting facts;
MuSiQue by each paragraph's `is_supporting` flag (`Question.supporting_paragraphs`).
Every distractor is kept (the seed's "retained" list, unspecified in size).

A plan serialises to canonical JSON; its sha256 is what every trace state records,
so every model is shown the same evidence (`core.store.plans` stores plans once).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.canonical import canonical_json
from core.data import Paragraph, Question
from core.errors import ConfigError, DataError
from core.scoring import normalize_answer

if TYPE_CHECKING:  # numpy loads when a plan is built, not with every `lab` command
    import numpy as np

SLICES = 3
"""Evidence slices of a plan (depths 1–3)."""
SIMILARITIES = ("tfidf",)
"""Lexical similarity terms lab can rank distractors with."""
DEFAULT_SIMILARITY = "tfidf"
PLAN_LAYOUT = 1
"""Version of the plan JSON's layout (recorded in it)."""


@dataclass(frozen=True)
class PlanPassage:
    """One passage of a plan.

    Attributes:
        source_index: the paragraph's index in the question's knowledge base.
        title: its title.
        supporting: a dataset-marked supporting passage.
        slice: the evidence slice that reveals it (1–3).
        score: a distractor's r (None for a supporting passage).
        text_sha256: sha256 of its title and text, so the plan's hash covers the evidence.
    """

    source_index: int
    title: str
    supporting: bool
    slice: int
    score: float | None
    text_sha256: str


@dataclass(frozen=True)
class EvidencePlan:
    """A question's fixed evidence plan.

    Attributes:
        question_id: the question.
        dataset: its dataset.
        similarity: the similarity term that ranked the distractors.
        passages: the plan's passages in order (passage i in slice 1 + i mod 3).
    """

    question_id: str
    dataset: str
    similarity: str
    passages: tuple[PlanPassage, ...]

    def to_dict(self) -> dict[str, object]:
        """The plan as JSON-ready data (what `evidence_plans.plan` holds)."""
        return {
            "layout": PLAN_LAYOUT, "question_id": self.question_id, "dataset": self.dataset,
            "similarity": self.similarity,
            "passages": [{"source_index": p.source_index, "title": p.title,
                          "supporting": p.supporting, "slice": p.slice,
                          "score": None if p.score is None else round(p.score, 6),
                          "text_sha256": p.text_sha256} for p in self.passages],
        }

    def to_json(self) -> str:
        """Canonical JSON of the plan."""
        return canonical_json(self.to_dict())

    @property
    def sha256(self) -> str:
        """sha256 of the canonical JSON."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def visible(self, depth: int) -> tuple[PlanPassage, ...]:
        """The passages shown at `depth` (slices 1…depth), in plan order.

        Raises:
            ValueError: depth outside 0–3.
        """
        if not 0 <= depth <= SLICES:
            raise ValueError(f"depth {depth}: depths are 0 to {SLICES}")
        return tuple(p for p in self.passages if p.slice <= depth)

    def slice_passages(self, number: int) -> tuple[PlanPassage, ...]:
        """The passages of slice `number` (1–3), in plan order."""
        return tuple(p for p in self.passages if p.slice == number)


def plan_from_dict(data: dict[str, object]) -> EvidencePlan:
    """Rebuild a stored plan from its JSON data."""
    passages = data["passages"]
    assert isinstance(passages, list)
    return EvidencePlan(str(data["question_id"]), str(data["dataset"]), str(data["similarity"]),
                        tuple(PlanPassage(int(p["source_index"]), str(p["title"]),
                                          bool(p["supporting"]), int(p["slice"]),
                                          None if p["score"] is None else float(p["score"]),
                                          str(p["text_sha256"])) for p in passages))


def tokens(text: str) -> list[str]:
    """Normalised tokens (HotpotQA normalisation: lower case, no punctuation or articles)."""
    return normalize_answer(text).split()


def passage_text(p: Paragraph) -> str:
    """What a passage is scored on: its title and text."""
    return f"{p.title} {p.text}"


def overlap(question: str, passage: str) -> float:
    """ℓ: the fraction of the question's distinct normalised tokens found in the passage."""
    q = set(tokens(question))
    return len(q & set(tokens(passage))) / len(q) if q else 0.0


def tfidf_cosine(question: str, passages: Sequence[str]) -> np.ndarray:
    """Cosine of TF-IDF vectors of the question and each passage.

    The vocabulary and idf come from the passages and the question together
    (smooth idf, raw counts, L2 norm: scikit-learn's `TfidfVectorizer` defaults).

    Returns:
        One cosine per passage, in [0, 1].
    """
    import numpy as np

    docs = [Counter(tokens(question))] + [Counter(tokens(p)) for p in passages]
    vocab = sorted(set().union(*docs))
    if not vocab:
        return np.zeros(len(passages))
    col = {w: j for j, w in enumerate(vocab)}
    tf = np.zeros((len(docs), len(vocab)))
    for i, doc in enumerate(docs):
        for w, c in doc.items():
            tf[i, col[w]] = c
    df = (tf > 0).sum(axis=0)
    idf = np.log((1 + len(docs)) / (1 + df)) + 1.0
    x = tf * idf
    norms = np.linalg.norm(x, axis=1)
    norms[norms == 0] = 1.0
    x = x / norms[:, None]
    return np.asarray(x[1:] @ x[0])


def minmax(values: Sequence[float]) -> list[float]:
    """Min–max normalised values (all 0 when they are equal)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    return [0.0 if hi == lo else (v - lo) / (hi - lo) for v in values]


def supporting_indices(question: Question) -> list[int]:
    """Source indices of the question's supporting passages, in source order."""
    marked = getattr(question, "supporting_paragraphs", ())
    if marked:
        return sorted(marked)
    return [i for i in range(len(question.paragraphs)) if question.is_gold(i)]


def rank_distractors(question: Question, indices: Sequence[int], similarity: str
                     ) -> list[tuple[int, float]]:
    """Distractors (source index, r) ranked by r, highest first, ties in source order."""
    texts = [passage_text(question.paragraphs[i]) for i in indices]
    if similarity != "tfidf":
        raise ConfigError(f"similarity {similarity!r}: choose one of {', '.join(SIMILARITIES)}")
    lex = minmax([overlap(question.question, t) for t in texts])
    sim = minmax([float(s) for s in tfidf_cosine(question.question, texts)])
    scored = [(i, 0.5 * a + 0.5 * b) for i, a, b in zip(indices, lex, sim)]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def build_plan(question: Question, similarity: str = DEFAULT_SIMILARITY) -> EvidencePlan:
    """The question's fixed evidence plan (deterministic: the same question, the same plan).

    Args:
        question: the question with its passages.
        similarity: the distractor similarity term (SIMILARITIES).

    Returns:
        The plan.

    Raises:
        ConfigError: an unknown similarity.
    """
    gold = supporting_indices(question)
    gold_set = set(gold)
    ranked = rank_distractors(
        question, [i for i in range(len(question.paragraphs)) if i not in gold_set], similarity)
    order: list[tuple[int, bool, float | None]] = []
    for k in range(max(len(gold), len(ranked))):
        if k < len(gold):
            order.append((gold[k], True, None))
        if k < len(ranked):
            order.append((ranked[k][0], False, ranked[k][1]))
    passages = tuple(
        PlanPassage(i, question.paragraphs[i].title, supporting, 1 + (n % SLICES),
                    None if score is None or math.isnan(score) else round(score, 6),
                    _text_sha(question.paragraphs[i]))
        for n, (i, supporting, score) in enumerate(order))
    return EvidencePlan(question.id, question.dataset, similarity, passages)


def _text_sha(p: Paragraph) -> str:
    return hashlib.sha256(f"{p.title}\n{p.text}".encode()).hexdigest()


def evidence_text(question: Question, plan: EvidencePlan, depth: int) -> list[tuple[str, str]]:
    """(title, text) of the passages shown at `depth`, in plan order.

    Raises:
        DataError: the question's passages no longer match the plan (it was made from
            other text).
    """
    out = []
    for p in plan.visible(depth):
        if p.source_index >= len(question.paragraphs) or _text_sha(
                question.paragraphs[p.source_index]) != p.text_sha256:
            raise DataError(f"question {question.id}: passage {p.source_index} differs from "
                              f"its evidence plan {plan.sha256[:12]}; the plan was made from "
                              f"other text")
        para = question.paragraphs[p.source_index]
        out.append((para.title, para.text))
    return out
