"""Read-only frames of finished episodes and steps for analysis, filtered in SQL.

Every episode row carries what tells its arm and its provenance apart: the arm
label (`core.conditions.arm_label` of the stored condition spec, computed once per
distinct spec), ``condition_hash``, the question's ``dataset``, ``question_set``,
``run`` and its ``amendment`` (NULL when exploratory), ``seed`` and ``replicate``.
A `Selection` says which episodes to read; its filters become the SQL WHERE clause.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlite_utils import Database

from core.conditions import arm_label, parse_condition
from core.errors import ConfigError

POOLABLE = ("runs", "seeds", "replicates", "sets")
"""Dimensions `Selection.pool` may merge into one row (never arm, model, budget, dataset)."""

EPISODE_FRAME_SQL = """
SELECT e.id AS episode_id, r.name AS run, r.amendment_id AS amendment, e.cell_id, c.model,
       c.condition, c.condition_hash, c.condition_spec, c.regime, c.budget,
       c.seed, c.replicate, COALESCE(c.question_set, '') AS question_set,
       COALESCE(q.dataset, '') AS dataset, e.question_id, e.answered, e.answer,
       e.answer_action, e.correct, e.f1, e.em, e.placeholder, e.tool_calls, e.extra_calls,
       e.format_failures, e.forced_turns, e.refused_calls, e.input_tokens, e.output_tokens,
       e.cache_read_tokens, e.cache_write_tokens, e.cost_usd, e.end_reason, e.error,
       e.started_at, e.finished_at,
       (SELECT COALESCE(sum(s.input_tokens), 0) FROM steps s WHERE s.episode_id = e.id)
           AS acting_input_tokens,
       (SELECT COALESCE(sum(s.output_tokens), 0) FROM steps s WHERE s.episode_id = e.id)
           AS acting_output_tokens
FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id
LEFT JOIN questions q ON q.id = e.question_id
"""

STEP_FRAME_SQL = """
SELECT s.episode_id, s.t, s.action, s.obs_index, s.obs_failed, s.obs_source, s.obs_ref,
       s.judgment,
       s.judgment_source, s.stated_judgment, s.rule_signal, s.streak, s.forced, s.refused,
       s.format_failure
FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id
JOIN runs r ON r.id = c.run_id
"""


@dataclass(frozen=True)
class Selection:
    """Which episodes analysis reads, and which dimensions its rows pool.

    Every filter is a tuple; empty means "all".

    Attributes:
        runs: run names.
        sets: question set names.
        seeds: seeds.
        models: model names.
        conditions: arm labels (``enforced_rule:k=7``: exactly that arm) or bare
            condition names (``enforced_rule``: every arm of that condition).
        regimes: regime names.
        pool: dimensions merged into one row, among POOLABLE ("runs", "seeds",
            "replicates", "sets"); by default rows split on all of them.

    Raises:
        ConfigError: a `pool` entry that is not in POOLABLE.
    """

    runs: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    models: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()
    regimes: tuple[str, ...] = ()
    pool: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bad = [p for p in self.pool if p not in POOLABLE]
        if bad:
            raise ConfigError(f"cannot pool '{bad[0]}'; choose from {', '.join(POOLABLE)} "
                              "(e.g. --pool seeds,runs)")


def _in(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def arm_labels(db: Database) -> dict[str, tuple[str, str]]:
    """Every stored arm: condition_hash → (condition name, arm label).

    Args:
        db: an open lab.db.

    Returns:
        The mapping, one label computed per distinct condition spec.
    """
    rows = db.conn.execute(
        "SELECT DISTINCT condition_hash, condition, condition_spec FROM cells").fetchall()
    return {h: (name, arm_label(spec)) for h, name, spec in rows}


def _canonical_label(text: str) -> str:
    """The label of an arm as the user typed it (knob order and spelling normalised)."""
    try:
        return parse_condition(text).label()
    except ConfigError:
        return text


def condition_hashes(db: Database, conditions: Sequence[str]) -> list[str]:
    """The condition hashes a `--conditions` list selects.

    Args:
        db: an open lab.db.
        conditions: arm labels (``enforced_rule:k=7``) or bare names (``enforced_rule``,
            every arm of that condition).

    Returns:
        The matching stored condition hashes.

    Raises:
        ConfigError: an entry that matches no stored arm (the message lists them).
    """
    arms = arm_labels(db)
    out: list[str] = []
    for text in conditions:
        if ":" in text:
            label = _canonical_label(text)
            hits = [h for h, (_, lab) in arms.items() if lab in (text, label)]
        else:
            hits = [h for h, (name, _) in arms.items() if name == text]
        if not hits:
            known = sorted({lab for _, lab in arms.values()})
            raise ConfigError(f"no arm '{text}' in lab.db; arms: {', '.join(known) or 'none'} "
                              "(a bare name selects every arm of that condition)")
        out += hits
    return out


def _where(db: Database, sel: Selection) -> tuple[str, list[Any]]:
    clauses, args = [], []
    for column, values in (("r.name", sel.runs), ("c.question_set", sel.sets),
                           ("c.seed", sel.seeds), ("c.model", sel.models),
                           ("c.regime", sel.regimes)):
        if values:
            clause, vals = _in(column, values)
            clauses.append(clause)
            args += vals
    if sel.conditions:
        clause, vals = _in("c.condition_hash", condition_hashes(db, sel.conditions))
        clauses.append(clause)
        args += vals
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _selection(selection: Selection | None, runs: Sequence[str] | None,
               models: Sequence[str] | None) -> Selection:
    sel = selection or Selection()
    if runs:
        sel = replace(sel, runs=tuple(runs))
    if models:
        sel = replace(sel, models=tuple(models))
    return sel


def episodes_frame(db: Database, runs: Sequence[str] | None = None,
                   models: Sequence[str] | None = None, selection: Selection | None = None):
    """Finished episodes (errored ones included) with their cell, run and arm, as a DataFrame.

    Args:
        db: an open lab.db.
        runs: run names (shorthand for `selection.runs`).
        models: model names (shorthand for `selection.models`).
        selection: the filters (the `pool` field is not used here).

    Returns:
        One row per episode, ordered by id, with the `arm` label column added.

    Raises:
        ConfigError: a condition in the selection that matches no stored arm.
    """
    import pandas as pd

    where, args = _where(db, _selection(selection, runs, models))
    frame = pd.read_sql_query(EPISODE_FRAME_SQL + where + " ORDER BY e.id", db.conn,
                              params=args)
    labels = {spec: arm_label(spec) for spec in frame["condition_spec"].unique()}
    frame.insert(frame.columns.get_loc("condition") + 1, "arm",
                 frame["condition_spec"].map(labels).astype(object))
    return frame


def steps_frame(db: Database, runs: Sequence[str] | None = None,
                models: Sequence[str] | None = None, selection: Selection | None = None):
    """Steps of finished episodes (never the live tables), as a pandas DataFrame.

    Args:
        db: an open lab.db.
        runs: run names (shorthand for `selection.runs`).
        models: model names (shorthand for `selection.models`).
        selection: the filters.

    Returns:
        One row per step, ordered by episode and t.
    """
    import pandas as pd

    where, args = _where(db, _selection(selection, runs, models))
    return pd.read_sql_query(STEP_FRAME_SQL + where + " ORDER BY s.episode_id, s.t", db.conn,
                             params=args)


def check_selection(db: Database, selection: Selection) -> None:
    """Refuse a selection naming something lab.db does not hold.

    Args:
        db: an open lab.db.
        selection: the filters.

    Raises:
        ConfigError: one line naming the first unknown value and listing the known ones.
    """
    def known(sql: str) -> list[Any]:
        return [r[0] for r in db.conn.execute(sql).fetchall()]

    checks = (
        ("run named", "runs", selection.runs, "SELECT DISTINCT r.name FROM runs r JOIN cells c "
         "ON c.run_id = r.id JOIN episodes e ON e.cell_id = c.id ORDER BY r.name"),
        ("question set", "sets", selection.sets, "SELECT DISTINCT c.question_set FROM cells c "
         "JOIN episodes e ON e.cell_id = c.id WHERE c.question_set IS NOT NULL ORDER BY 1"),
        ("seed", "seeds", selection.seeds, "SELECT DISTINCT c.seed FROM cells c JOIN episodes e "
         "ON e.cell_id = c.id ORDER BY 1"),
        ("episodes of model", "models", selection.models, "SELECT DISTINCT c.model FROM cells c "
         "JOIN episodes e ON e.cell_id = c.id ORDER BY 1"),
        ("regime", "regimes", selection.regimes, "SELECT DISTINCT c.regime FROM cells c "
         "JOIN episodes e ON e.cell_id = c.id ORDER BY 1"),
    )
    for what, plural, wanted, sql in checks:
        have = known(sql)
        missing = [v for v in wanted if v not in have]
        if missing:
            raise ConfigError(f"no {what} '{missing[0]}' in lab.db; {plural}: "
                              f"{', '.join(map(str, have)) or 'none'}")
    if selection.conditions:
        condition_hashes(db, selection.conditions)
