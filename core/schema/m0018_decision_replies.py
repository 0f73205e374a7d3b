"""lab.db migration 0018: the decide arm's decision-turn reply on its step."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0018_decision_replies"


def migrate(db: Database) -> None:
    """The decide arm asks its decision in a turn of its own and that reply stays in the
    agent's history; a probe that rebuilds the history needs it verbatim.

    - steps.decision_raw: the decision turn's reply as the model wrote it, on the acting
      step that followed it (the step whose `decision` was parsed from it); NULL on
      every other step and on episodes stored before this column existed.
    """
    db.conn.execute("ALTER TABLE steps ADD COLUMN decision_raw TEXT")
