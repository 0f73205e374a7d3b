"""Questions and question sets."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlite_utils import Database

from core.data import Question, question_from_record, question_to_record
from core.episode import utc_now
from core.errors import LabError, StoreError
from core.kb import ref_title
from core.store.base import write


def insert_questions(db: Database, questions: Sequence[Question]) -> tuple[int, int]:
    """Store questions in one transaction: all or none.

    A question already present with the same content is skipped; one present with
    different content is refused (episodes may refer to it).

    Returns:
        (newly stored, already present).

    Raises:
        StoreError: an id exists with different content; nothing is written.
    """
    now = utc_now()
    new = same = 0
    with write(db):
        for q in questions:
            record = json.dumps(question_to_record(q), sort_keys=True, ensure_ascii=False)
            row = db.conn.execute("SELECT dataset, record FROM questions WHERE id = ?",
                                  (q.id,)).fetchone()
            if row is not None:
                if row[0] == q.dataset and row[1] == record:
                    same += 1
                    continue
                raise StoreError(f"question {q.id} is already stored (dataset {row[0]}) with "
                                 f"different content; nothing was imported")
            db.conn.execute(
                "INSERT INTO questions (id, dataset, question, answer, type, level, record, "
                "imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (q.id, q.dataset, q.question, q.answer, q.type, q.level, record, now))
            new += 1
    return new, same


def _question(row: sqlite3.Row | tuple[Any, ...]) -> Question:
    return question_from_record(json.loads(row[1]), row[0])


def load_questions(db: Database, dataset: str | None = None,
                   ids: Sequence[str] | None = None) -> list[Question]:
    """Questions of a dataset, or the given ids in the given order.

    Raises:
        StoreError: an id that is not stored.
    """
    if ids is not None:
        out = []
        for qid in ids:
            row = db.conn.execute("SELECT dataset, record FROM questions WHERE id = ?",
                                  (qid,)).fetchone()
            if row is None:
                raise StoreError(f"question '{qid}' is not in lab.db "
                                 f"(import it with `lab data import hotpotqa FILE`)")
            out.append(_question(row))
        return out
    sql, args = "SELECT dataset, record FROM questions", tuple[str, ...]()
    if dataset is not None:
        sql, args = sql + " WHERE dataset = ?", (dataset,)
    return [_question(r) for r in db.conn.execute(sql + " ORDER BY id", args)]


def question_ids(db: Database, dataset: str) -> list[str]:
    """Sorted ids of a dataset's questions."""
    return [r[0] for r in db.conn.execute(
        "SELECT id FROM questions WHERE dataset = ? ORDER BY id", (dataset,))]


def dataset_labels(db: Database, dataset: str) -> dict[str, tuple[str, str]]:
    """(type, answer) per question id of a dataset: a FEVER claim's type is "claim" and
    its answer the label (balanced question sets read them without loading pages)."""
    return {r[0]: (r[1] or "", r[2]) for r in db.conn.execute(
        "SELECT id, type, answer FROM questions WHERE dataset = ? ORDER BY id", (dataset,))}


def datasets(db: Database) -> dict[str, int]:
    """Question count per dataset."""
    return dict(db.conn.execute(
        "SELECT dataset, count(*) FROM questions GROUP BY dataset ORDER BY dataset").fetchall())


# -- question sets -------------------------------------------------------------


def save_question_set(db: Database, name: str, dataset: str, ids: Sequence[str], seed: int,
                      exclude: Sequence[str], held_out: bool, sha256: str,
                      manifest: Mapping[str, Any] | None = None) -> None:
    """Store a question set (names are unique and sets are never changed).

    Args:
        manifest: what a set imported from a list of ids recorded (file, sha256 and the
            manifest's own fields); None for a drawn set.

    Raises:
        StoreError: a set of that name exists.
    """
    with write(db):
        if db.conn.execute("SELECT 1 FROM question_sets WHERE name = ?", (name,)).fetchone():
            raise StoreError(f"question set '{name}' already exists; sets are frozen once made")
        db.conn.execute(
            "INSERT INTO question_sets (name, dataset, n, seed, exclude, ids, sha256, held_out, "
            "created_at, manifest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, dataset, len(ids), seed, json.dumps(list(exclude)), json.dumps(list(ids)),
             sha256, int(held_out), utc_now(),
             None if manifest is None else json.dumps(dict(manifest), sort_keys=True)))


def question_set(db: Database, name: str) -> dict[str, Any]:
    """One question set as a dict (ids decoded).

    Raises:
        StoreError: no such set.
    """
    row = db.conn.execute("SELECT * FROM question_sets WHERE name = ?", (name,)).fetchone()
    if row is None:
        names = [r[0] for r in db.conn.execute("SELECT name FROM question_sets ORDER BY name")]
        raise StoreError(f"no question set '{name}'"
                         + (f"; existing: {', '.join(names)}" if names else
                            " (create one with `lab sets create`)"))
    cols = [d[0] for d in db.conn.execute("SELECT * FROM question_sets LIMIT 0").description]
    out = dict(zip(cols, row))
    out["ids"] = json.loads(out["ids"])
    out["exclude"] = json.loads(out["exclude"])
    out["held_out"] = bool(out["held_out"])
    out["manifest"] = json.loads(out["manifest"]) if out.get("manifest") else None
    return out


def question_sets(db: Database) -> list[dict[str, Any]]:
    """All question sets, without their id lists."""
    cur = db.conn.execute("SELECT name, dataset, n, seed, exclude, sha256, held_out, created_at "
                          "FROM question_sets ORDER BY name")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur]


def useless_rate(db: Database, model: str) -> tuple[float | None, int]:
    """The model's development-set USELESS rate, with equal regime weights.

    random_rule's default rate (the main paper, App. A, amendment 1: a random signal
    matched to the model's own development rate, computed with equal regime weights as
    in the authors' harness): for each regime, the share of USELESS among the model's
    parsed side-channel judgments (USELESS / (USELESS + USEFUL); unparsed replies are
    left out), then the unweighted mean over the regimes, so a regime the model ran
    more often does not weigh more. Counts stored steps of finished, error-free
    episodes whose cell ran the model on a question set that is not held-out, in any
    arm.

    Returns:
        (rate or None when there is no such judgment, judgments counted).
    """
    rows = db.conn.execute(
        "SELECT c.regime, count(*), sum(s.judgment = 'USELESS') FROM steps s "
        "JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id "
        "JOIN question_sets qs ON qs.name = c.question_set "
        "WHERE c.model = ? AND qs.held_out = 0 AND e.error IS NULL "
        "AND s.judgment IN ('USELESS', 'USEFUL') GROUP BY c.regime", (model,)).fetchall()
    if not rows:
        return None, 0
    rates = [float(useless) / n for _, n, useless in rows]
    return sum(rates) / len(rates), sum(int(n) for _, n, _ in rows)


def title_resolver(db: Database) -> Callable[[str], str]:
    """Map an obs_ref ("question_id#paragraph") to the page title, loading questions lazily."""
    cache: dict[str, Question] = {}

    def question_of(qid: str) -> Question | None:
        if qid not in cache:
            try:
                (cache[qid],) = load_questions(db, ids=[qid])
            except LabError:
                return None
        return cache[qid]

    return lambda ref: ref_title(ref, question_of)
