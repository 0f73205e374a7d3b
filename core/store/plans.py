"""The evidence_plans table (migration 0014): the second seed's fixed evidence plans, stored once.

A plan is keyed by (dataset, question, similarity) and never rewritten: once stored it
is the evidence every model is shown for that question, whatever later code would
build (`core.plans`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from sqlite_utils import Database

from core.data import Question
from core.episode import utc_now
from core.plans import EvidencePlan, plan_from_dict
from core.store.base import write


def load_plans(db: Database, dataset: str, question_ids: Sequence[str], similarity: str
               ) -> dict[str, EvidencePlan]:
    """Stored plans of the given questions (those stored), by question id."""
    out: dict[str, EvidencePlan] = {}
    for i in range(0, len(question_ids), 500):
        chunk = list(question_ids[i:i + 500])
        for qid, plan in db.conn.execute(
                f"SELECT question_id, plan FROM evidence_plans WHERE dataset = ? AND "
                f"similarity = ? AND question_id IN ({', '.join('?' * len(chunk))})",
                (dataset, similarity, *chunk)):
            out[qid] = plan_from_dict(json.loads(plan))
    return out


def save_plans(db: Database, plans: Sequence[EvidencePlan]) -> int:
    """Store plans not stored yet, in one transaction (a stored plan is kept as it is).

    Returns:
        Plans newly stored.
    """
    n = 0
    now = utc_now()
    with write(db):
        for plan in plans:
            n += db.conn.execute(
                "INSERT OR IGNORE INTO evidence_plans (question_id, dataset, plan_sha256, "
                "similarity, plan, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (plan.question_id, plan.dataset, plan.sha256, plan.similarity, plan.to_json(),
                 now)).rowcount
    return n


def ensure_plans(db: Database, questions: Sequence[Question], similarity: str,
                 build: Callable[[Question, str], EvidencePlan]) -> tuple[dict[str, EvidencePlan],
                                                                          int]:
    """The questions' plans: the stored ones, and the rest built and stored now.

    Args:
        db: an open lab.db.
        questions: the questions (of one or more datasets).
        similarity: the distractor similarity term.
        build: makes a question's plan (`core.plans.build_plan`).

    Returns:
        ({question id: plan}, plans newly stored).
    """
    out: dict[str, EvidencePlan] = {}
    new: list[EvidencePlan] = []
    with write(db):
        by_dataset: dict[str, list[Question]] = {}
        for q in questions:
            by_dataset.setdefault(q.dataset, []).append(q)
        for dataset, qs in by_dataset.items():
            stored = load_plans(db, dataset, [q.id for q in qs], similarity)
            out.update(stored)
            for q in qs:
                if q.id not in stored:
                    out[q.id] = build(q, similarity)
                    new.append(out[q.id])
        save_plans(db, new)
    return out, len(new)


