"""The bundled demo questions in a lab.db: loaded once, and the `demo` question set."""

from __future__ import annotations

from collections.abc import Sequence

from sqlite_utils import Database

from core import store
from core.data import Question, ids_hash
from core.demo_data import demo_questions
from core.demo_fever import demo_fever_questions
from core.errors import StoreError

DEMO_SET = "demo"
"""The question set of all demo HotpotQA questions (what `lab demo` runs on)."""


def load_demo_questions(db: Database, hotpot: Sequence[Question] | None = None) -> int:
    """Store the bundled demo questions (HotpotQA and FEVER) that are not stored yet.

    Args:
        db: an open lab.db.
        hotpot: the demo HotpotQA questions when the caller has built them already.

    Returns:
        How many questions were new.
    """
    hotpot = demo_questions() if hotpot is None else hotpot
    new, _ = store.insert_questions(db, [*hotpot, *demo_fever_questions()])
    return int(new)


def ensure_demo_set(db: Database) -> None:
    """Load the demo questions and create the demo question set (all of them) once.

    Args:
        db: an open lab.db.
    """
    questions = demo_questions()
    load_demo_questions(db, questions)
    ids = [q.id for q in questions]
    try:
        store.question_set(db, DEMO_SET)
    except StoreError:
        store.save_question_set(db, DEMO_SET, "demo", ids, 0, [], False, ids_hash(ids))
