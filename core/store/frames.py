"""Read-only frames of finished episodes and steps for analysis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlite_utils import Database


EPISODE_FRAME_SQL = """
SELECT e.id AS episode_id, r.name AS run, e.cell_id, c.model, c.condition, c.condition_hash,
       c.condition_spec, c.regime, c.budget,
       c.seed, c.replicate, c.question_set, e.question_id, e.answered, e.answer,
       e.answer_action, e.correct, e.f1, e.em, e.placeholder, e.tool_calls, e.extra_calls,
       e.format_failures, e.forced_turns, e.refused_calls, e.input_tokens, e.output_tokens,
       e.cache_read_tokens, e.cache_write_tokens, e.cost_usd, e.end_reason, e.error,
       e.started_at, e.finished_at
FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id
"""

STEP_FRAME_SQL = """
SELECT s.episode_id, s.t, s.action, s.obs_index, s.obs_failed, s.obs_source, s.obs_ref,
       s.judgment,
       s.judgment_source, s.stated_judgment, s.rule_signal, s.streak, s.forced, s.refused,
       s.format_failure
FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id
JOIN runs r ON r.id = c.run_id
"""


def _where(runs: Sequence[str] | None, models: Sequence[str] | None) -> tuple[str, list[Any]]:
    clauses, args = [], []
    if runs:
        clauses.append(f"r.name IN ({', '.join('?' * len(runs))})")
        args += list(runs)
    if models:
        clauses.append(f"c.model IN ({', '.join('?' * len(models))})")
        args += list(models)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def episodes_frame(db: Database, runs: Sequence[str] | None = None,
                   models: Sequence[str] | None = None):
    """Finished episodes joined with their cell and run, as a pandas DataFrame."""
    import pandas as pd

    where, args = _where(runs, models)
    return pd.read_sql_query(EPISODE_FRAME_SQL + where + " ORDER BY e.id", db.conn, params=args)


def steps_frame(db: Database, runs: Sequence[str] | None = None,
                models: Sequence[str] | None = None):
    """Steps of finished episodes (never the live tables), as a pandas DataFrame."""
    import pandas as pd

    where, args = _where(runs, models)
    return pd.read_sql_query(STEP_FRAME_SQL + where + " ORDER BY s.episode_id, s.t", db.conn,
                             params=args)
