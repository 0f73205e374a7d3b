"""The probes table (migration 0006): reads and writes of replayed probes (docs/replay.md).

A probe is keyed by (episode, t, kind); a complete probe is never written twice, and
an errored one (its model call failed after retries) is replaced by a later success.
Nothing here touches steps or episodes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from core.conditions import Condition
from core.errors import StoreError
from core.probes import At, ProbeRecord, RecordedEpisode, parse_at, select_points
from core.regimes import parse_regime
from core.store.episodes import COMPLETE, episode_steps
from core.store.events import log_event
from core.store.model_results import upsert_sql, write_results
from core.store.selection import Selection, where_clause, with_filters
from core.store.trajectories import observation_text, question_lookup

if TYPE_CHECKING:  # pandas loads on first use, not on import
    import pandas as pd

    from core.data import Question

PROBE_COLUMNS = ("episode_id", "t", "kind", "model", "source", "judgment", "answer", "em",
                 "f1", "correct", "placeholder", "confidence", "p_continue", "p_answer_now",
                 "prefer", "reason", "parse_ok", "raw", "input_tokens", "output_tokens",
                 "cost_usd", "latency_ms", "error", "prompts_sha256", "created_at")
EXPORT_COLUMNS = ("episode_id", "t", "kind", "answer", "correct", "f1", "confidence",
                  "p_continue", "p_answer_now", "prefer", "parse_ok", "source")
"""Columns of probes.csv (docs/export.md)."""

_INSERT = upsert_sql("probes", PROBE_COLUMNS, PROBE_COLUMNS[:3], PROBE_COLUMNS[3:])


def write_probes(db: Database, records: Iterable[ProbeRecord]) -> int:
    """Store probes in one transaction; a complete probe already stored is kept as is.

    Returns:
        The number of rows inserted or (errored rows) replaced.
    """
    return write_results(db, _INSERT, PROBE_COLUMNS, records)


def probed(db: Database, episode_ids: Sequence[int], kind: str) -> set[tuple[int, int]]:
    """(episode, t) pairs that already have a complete probe of `kind`."""
    out: set[tuple[int, int]] = set()
    for chunk in _chunks(episode_ids):
        out.update(db.conn.execute(
            f"SELECT episode_id, t FROM probes WHERE kind = ? AND error IS NULL AND episode_id "
            f"IN ({', '.join('?' * len(chunk))})", (kind, *chunk)).fetchall())
    return out


def _chunks(ids: Sequence[int], size: int = 500) -> Iterable[Sequence[int]]:
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


def episode_question_ids(db: Database, episode_ids: Sequence[int]) -> list[str]:
    """The question id of each episode, in the given order.

    Raises:
        KeyError: an episode id that is not stored.
    """
    found: dict[int, str] = {}
    for chunk in _chunks(episode_ids):
        found.update(db.conn.execute(f"SELECT id, question_id FROM episodes WHERE id IN "
                                     f"({', '.join('?' * len(chunk))})", list(chunk)))
    return [found[e] for e in episode_ids]


def cell_episodes(db: Database, cell_id: int, question_ids: Sequence[str]) -> list[int]:
    """Ids of the complete episodes of a cell's questions, in id order."""
    rows = db.conn.execute(
        f"SELECT id FROM episodes WHERE cell_id = ? AND {COMPLETE} AND question_id IN "
        f"({', '.join('?' * len(question_ids)) or 'NULL'}) ORDER BY id",
        (cell_id, *question_ids)).fetchall()
    return [int(r[0]) for r in rows]


def run_cells(db: Database, run: str, models: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Cells of a run that have complete episodes, with their model and question ids.

    Raises:
        StoreError: no such run, or no complete episode of the given models in it.
    """
    if db.conn.execute("SELECT 1 FROM runs WHERE name = ?", (run,)).fetchone() is None:
        known = [r[0] for r in db.conn.execute("SELECT name FROM runs ORDER BY name")]
        raise StoreError(f"no run '{run}' in lab.db; runs: {', '.join(known) or 'none'}")
    rows = db.conn.execute(
        f"SELECT c.id, c.model, c.run_id, group_concat(e.question_id, char(31)) FROM cells c "
        f"JOIN runs r ON r.id = c.run_id JOIN episodes e ON e.cell_id = c.id AND e.{COMPLETE} "
        f"WHERE r.name = ? GROUP BY c.id ORDER BY c.id", (run,)).fetchall()
    cells = [{"cell_id": c, "model": m, "run_id": r, "question_ids": sorted(q.split("\x1f"))}
             for c, m, r, q in rows]
    if models:
        have = sorted({c["model"] for c in cells})
        missing = [m for m in models if m not in have]
        if missing:
            raise StoreError(f"run '{run}' has no finished episodes of model '{missing[0]}'; "
                             f"its models: {', '.join(have) or 'none'}")
        cells = [c for c in cells if c["model"] in models]
    if not cells:
        raise StoreError(f"run '{run}' has no finished episodes to replay yet")
    return cells


def recorded_episode(db: Database, episode_id: int,
                     question_of: Callable[[str], Question | None] | None = None
                     ) -> RecordedEpisode:
    """A stored episode with its cell's arm, regime and budget and its observation texts.

    Args:
        db: an open lab.db.
        episode_id: the episode.
        question_of: the stored questions by id (`question_lookup`), shared by the calls
            of one job so each question is read once; None reads them for this episode.

    Raises:
        StoreError: no complete episode with this id.
    """
    row = db.conn.execute(
        f"SELECT e.question_id, c.model, c.condition_spec, c.regime, c.budget, c.seed, "
        f"e.answer, e.answer_action, e.placeholder, c.model_spec FROM episodes e JOIN cells c "
        f"ON c.id = e.cell_id WHERE e.id = ? AND e.{COMPLETE}", (episode_id,)).fetchone()
    if row is None:
        raise StoreError(f"no complete episode {episode_id} in lab.db")
    qid, model, spec, regime, budget, seed, answer, action, placeholder, model_spec = row
    prompt_format = str(json.loads(model_spec).get("prompt_format", "react"))
    question_of = question_of or question_lookup(db)
    question = question_of(qid)
    if question is None:
        raise StoreError(f"episode {episode_id}: question '{qid}' is not in lab.db")
    steps = tuple(episode_steps(db, episode_id))
    shown = tuple(observation_text(s, question_of, regime == "answerless", qid)[0]
                  for s in steps)
    return RecordedEpisode(episode_id, model, question, Condition(**json.loads(spec)),
                           parse_regime(regime), int(budget), int(seed), steps, shown,
                           answer, action, bool(placeholder), prompt_format)


def judgments(db: Database, episode_ids: Sequence[int]) -> dict[int, dict[int, str | None]]:
    """Per episode, the judgment per step: recorded in-run, else replayed.

    Args:
        db: an open lab.db.
        episode_ids: the episodes.

    Returns:
        {episode: {t: "USELESS"/"USEFUL"/None}} for steps that have either.
    """
    out: dict[int, dict[int, str | None]] = {}
    for chunk in _chunks(list(episode_ids)):
        marks = ", ".join("?" * len(chunk))
        for eid, t, judgment, _source in db.conn.execute(
                f"SELECT episode_id, t, judgment, judgment_source FROM steps WHERE episode_id "
                f"IN ({marks}) AND judgment_source IS NOT NULL", chunk):
            out.setdefault(eid, {})[t] = judgment
        for eid, t, judgment in db.conn.execute(
                f"SELECT episode_id, t, judgment FROM probes WHERE kind = 'judgment' AND "
                f"error IS NULL AND episode_id IN ({marks})", chunk):
            out.setdefault(eid, {}).setdefault(t, judgment)
    return out


def recorded_judgments(db: Database, episode_ids: Sequence[int]) -> set[tuple[int, int]]:
    """(episode, t) steps whose judgment the episode recorded itself (the side channel,
    ``steps.judgment_source`` set), asked whatever the reply was: `lab replay judgments`
    does not ask these again unless told to (``--refresh``)."""
    out: set[tuple[int, int]] = set()
    for chunk in _chunks(list(episode_ids)):
        out.update(db.conn.execute(
            f"SELECT episode_id, t FROM steps WHERE judgment_source IS NOT NULL AND "
            f"discarded = 0 AND episode_id IN ({', '.join('?' * len(chunk))})",
            chunk).fetchall())
    return out


PROBE_FRAME_SQL = ("SELECT p.episode_id, p.t, p.kind, p.model AS probe_model, p.source, "
                   "p.judgment, p.answer, p.em, p.f1, p.correct, p.placeholder, p.confidence, "
                   "p.p_continue, p.p_answer_now, p.prefer, p.parse_ok, p.input_tokens AS "
                   "probe_input_tokens, p.output_tokens AS probe_output_tokens, p.cost_usd "
                   "AS probe_cost_usd FROM probes p JOIN episodes e ON e.id = p.episode_id "
                   "JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id")


def probes_frame(db: Database, selection: Selection | None = None,
                 kinds: Sequence[str] = ()) -> pd.DataFrame:
    """Complete probes of the selected episodes as a DataFrame (errored probes left out).

    Args:
        db: an open lab.db.
        selection: the episode filters.
        kinds: probe kinds to keep (default all).

    Returns:
        One row per probe, ordered by episode, t and kind.
    """
    import pandas as pd

    where, args = where_clause(db, with_filters(selection, None, None))
    clauses = ["p.error IS NULL"]
    if kinds:
        clauses.append(f"p.kind IN ({', '.join('?' * len(kinds))})")
        args = [*args, *kinds]
    where = (where + " AND " if where else " WHERE ") + " AND ".join(clauses)
    return pd.read_sql_query(PROBE_FRAME_SQL + where + " ORDER BY p.episode_id, p.t, p.kind",
                             db.conn, params=args)


def probe_counts(db: Database) -> dict[str, int]:
    """Complete probes per kind."""
    return dict(db.conn.execute(
        "SELECT kind, count(*) FROM probes WHERE error IS NULL GROUP BY kind").fetchall())


def episode_points(db: Database, episode_ids: Sequence[int]
                   ) -> dict[int, list[tuple[int, int]]]:
    """Decision points of each episode with the input tokens its history had, from SQL.

    The same points as `core.probes.step_decision_points`: steps with an observation,
    neither refused nor discarded, before the budget's last action.

    Returns:
        {episode: [(t, estimated history tokens), ...]} in t order.
    """
    out: dict[int, list[tuple[int, int]]] = {}
    for chunk in _chunks(list(episode_ids)):
        for eid, t, tokens in db.conn.execute(
                f"SELECT s.episode_id, s.t, s.input_tokens + s.output_tokens FROM steps s "
                f"JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id "
                f"WHERE s.obs_index IS NOT NULL AND s.refused = 0 AND s.discarded = 0 AND "
                f"s.t < c.budget AND s.episode_id IN ({', '.join('?' * len(chunk))}) "
                f"ORDER BY s.episode_id, s.t", chunk):
            out.setdefault(eid, []).append((t, int(tokens)))
    return out


def placeholder_episodes(db: Database, episode_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    """Answered episodes whose answer is a placeholder: {episode: (finish action, tokens)}."""
    out: dict[int, tuple[int, int]] = {}
    for chunk in _chunks(list(episode_ids)):
        for eid, action, tokens in db.conn.execute(
                f"SELECT e.id, e.answer_action, coalesce((SELECT s.input_tokens + "
                f"s.output_tokens FROM steps s WHERE s.episode_id = e.id AND s.t = "
                f"e.answer_action AND s.discarded = 0), 0) FROM episodes e WHERE "
                f"e.placeholder = 1 AND e.answered = 1 AND e.{COMPLETE} AND e.id IN "
                f"({', '.join('?' * len(chunk))})", chunk):
            out[eid] = (int(action), int(tokens))
    return out


def probe_targets(db: Database, kind: str, at: At, episode_ids: Sequence[int]
                  ) -> dict[int, list[tuple[int, int]]]:
    """Per episode, the (t, history tokens) a replay of `kind` at `at` probes (stored or
    not): the finish action of a placeholder answer for repair, else the decision points
    `at` selects.

    Returns:
        {episode: [(t, estimated history tokens), ...]}.
    """
    eids = list(episode_ids)
    if kind == "repair":
        return {e: [p] for e, p in placeholder_episodes(db, eids).items()}
    points = episode_points(db, eids)
    judged = judgments(db, eids) if at.mode not in ("every", "t") else {}
    out = {}
    for eid, pts in points.items():
        chosen = set(select_points([t for t, _ in pts], at, judged.get(eid)))
        out[eid] = [(t, tok) for t, tok in pts if t in chosen]
    return out


def replay_progress(db: Database, jobs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Probe progress of a replay grid's jobs: what `lab status` shows for it.

    The expected probes are every point the jobs' requests select on their episodes
    (without judgments the episodes recorded in-run, unless ``refresh``), stored or not.

    Args:
        db: an open lab.db.
        jobs: the grid's replay jobs rows (cell_id, question_ids as JSON or a list,
            params).

    Returns:
        {"kind", "expected", "stored" (complete probes), "errored" (probes whose last
        call failed: what `lab retry --errored` asks again), "finished" (the complete
        probes' created_at, sorted)}.
    """
    targets: set[tuple[int, int]] = set()
    kinds: set[str] = set()
    by_params: dict[str, set[int]] = {}
    for job in jobs:
        qids = job["question_ids"]
        qids = json.loads(qids) if isinstance(qids, str) else qids
        by_params.setdefault(job["params"], set()).update(
            cell_episodes(db, job["cell_id"], qids))
    for params, eids in by_params.items():
        p = json.loads(params)
        kinds.add(p["kind"])
        ordered = sorted(eids)
        skip = (recorded_judgments(db, ordered)
                if p["kind"] == "judgment" and not p.get("refresh") else set())
        for eid, points in probe_targets(db, p["kind"], parse_at(p["at"]), ordered).items():
            targets.update((eid, t) for t, _ in points if (eid, t) not in skip)
    finished: list[str] = []
    errored = 0
    kind = next(iter(kinds)) if len(kinds) == 1 else ",".join(sorted(kinds))
    probed_eids = sorted({e for e, _ in targets})
    for k in kinds:
        for chunk in _chunks(probed_eids):
            for eid, t, error, created in db.conn.execute(
                    f"SELECT episode_id, t, error, created_at FROM probes WHERE kind = ? AND "
                    f"episode_id IN ({', '.join('?' * len(chunk))})", (k, *chunk)):
                if (eid, t) not in targets:
                    continue
                if error is None:
                    finished.append(str(created))
                else:
                    errored += 1
    return {"kind": kind, "expected": len(targets), "stored": len(finished),
            "errored": errored, "finished": sorted(finished)}


def errored_probe_questions(db: Database, cell_id: int, question_ids: Sequence[str],
                            kind: str) -> dict[str, int]:
    """Questions (of `question_ids`, in that order) of a cell whose episode has probes of
    `kind` stored with an error (no complete one replaced them), with how many:
    `lab retry --errored` queues them again."""
    eids = cell_episodes(db, cell_id, question_ids)
    bad: dict[int, int] = {}
    for chunk in _chunks(eids):
        bad.update(db.conn.execute(
            f"SELECT episode_id, count(*) FROM probes WHERE kind = ? AND error IS NOT NULL AND "
            f"episode_id IN ({', '.join('?' * len(chunk))}) GROUP BY episode_id",
            (kind, *chunk)).fetchall())
    qid_of = dict(zip(eids, episode_question_ids(db, eids)))
    errored = {qid_of[e]: int(n) for e, n in bad.items()}
    return {q: errored[q] for q in question_ids if q in errored}


def pending_replay(db: Database, cell_id: int, params: str) -> set[str]:
    """Questions of a cell held by active replay jobs with the same params."""
    out: set[str] = set()
    for (ids,) in db.conn.execute(
            "SELECT question_ids FROM jobs WHERE cell_id = ? AND kind = 'replay' AND params = ? "
            "AND state IN ('queued', 'running', 'paused')", (cell_id, params)):
        out.update(json.loads(ids))
    return out


_BATCH_EVENT = re.compile(r"^job (\d+): batch (\S+) (submitted|stored)\b")


def record_batch(db: Database, job_id: int, batch_id: str, state: str, probes: int) -> None:
    """Note in the event log that a replay job's Message Batch was submitted or stored.

    The log is what a resumed job reads (`open_batches`) to poll the batch it already
    paid for instead of submitting its probes again.

    Args:
        db: an open lab.db.
        job_id: the replay job.
        batch_id: the API's batch id.
        state: "submitted" or "stored".
        probes: probes sent (submitted) or stored from its results (stored).
    """
    log_event(db, "replay_batch", f"job {job_id}: batch {batch_id} {state} ({probes:,} probes)")


def open_batches(db: Database, job_id: int) -> list[str]:
    """Batch ids a replay job submitted whose results are not stored yet, oldest first."""
    state: dict[str, str] = {}
    for (detail,) in db.conn.execute(
            "SELECT detail FROM events WHERE kind = 'replay_batch' AND detail LIKE ? ORDER BY id",
            (f"job {job_id}: batch %",)):
        m = _BATCH_EVENT.match(detail)
        if m and int(m.group(1)) == job_id:
            state[m.group(2)] = m.group(3)
    return [b for b, s in state.items() if s == "submitted"]
