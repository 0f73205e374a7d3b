"""Reads behind the console's Trajectories screen: a filtered episode list, one
episode with its steps and observation texts, and the same episode under other arms.

Fast on large lab.db files: filters on run, model, arm and regime are resolved on
the small `cells` table first, and episodes are then read by primary key (newest
first, keyset-paged with LIMIT) or through the unique (cell_id, question_id) index.

Matched arms: failure draws depend only on (seed, question, observation index) and
the question set's pool, so the same (model, regime, seed, budget, question set,
question) under different arms sees the same failed pages; any difference between
the episodes is the arm's.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core.conditions import arm_label
from core.data import TASK_HOTPOTQA, Question
from core.episode import Step
from core.errors import ConfigError, StoreError
from core.kb import paragraph_observation, resolve_ref, strip_supporting_facts
from core.store.episodes import episode_steps
from core.store.imports import NO_TEXT, episode_imported
from core.store.traces import TRACE_CONDITION

OUTCOMES = ("correct", "wrong", "unanswered", "errored")
"""Outcome filter values: answered correctly, answered wrongly, no answer, ended in an error."""
_OUTCOME_SQL = {
    "correct": "e.error IS NULL AND e.answered = 1 AND e.correct = 1",
    "wrong": "e.error IS NULL AND e.answered = 1 AND e.correct = 0",
    "unanswered": "e.error IS NULL AND e.answered = 0",
    "errored": "e.error IS NOT NULL",
}
PAGE = 200
"""Episodes per page of the list."""


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes to list; empty fields match everything.

    Attributes:
        run: run name.
        model: model name.
        arm: arm label (e.g. `enforced_rule:k=7`) or a bare condition name, which
            matches every arm of that condition.
        regime: regime name.
        outcome: one of OUTCOMES.
        question: text contained in the question id or the question itself.
        seed: the cell's seed.
        before_id: list only episodes with a smaller id (the next page).
        limit: at most this many episodes.
    """

    run: str = ""
    model: str = ""
    arm: str = ""
    regime: str = ""
    outcome: str = ""
    question: str = ""
    seed: int | None = None
    before_id: int | None = None
    limit: int = PAGE

    def describe(self) -> str:
        """The filter as the text `parse_filter` reads back ("" when empty)."""
        parts = [f"{k}={shlex.quote(str(v))}" for k, v in
                 (("run", self.run), ("model", self.model), ("arm", self.arm),
                  ("regime", self.regime), ("outcome", self.outcome), ("seed", self.seed))
                 if v not in ("", None)]
        if self.question:
            parts.append(shlex.quote(self.question))
        return " ".join(parts)


_KEYS = ("run", "model", "arm", "regime", "outcome", "question", "seed")
_ALIASES = {"condition": "arm", "q": "question", "models": "model", "runs": "run"}


def parse_filter(text: str) -> EpisodeFilter:
    """Read a filter typed by a person: `key=value` pairs, other words search questions.

    Keys: run, model, arm (or condition), regime, outcome, seed, question (or q).
    Example: `model=sim-own5 arm=enforced_rule:k=2 outcome=wrong demo-00`.

    Args:
        text: the filter text.

    Returns:
        The EpisodeFilter.

    Raises:
        ConfigError: an unknown key, outcome or a seed that is not a number.
    """
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"filter {text!r}: {exc}") from None
    values: dict[str, Any] = {}
    free: list[str] = []
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            free.append(word)
            continue
        key = _ALIASES.get(key.strip().lower(), key.strip().lower())
        if key not in _KEYS:
            raise ConfigError(f"filter: unknown key '{key}'; use {', '.join(_KEYS)} "
                              "(e.g. model=sim-own5 outcome=wrong)")
        values[key] = value.strip()
    if free:
        values["question"] = " ".join([values.get("question", ""), *free]).strip()
    if values.get("outcome") and values["outcome"] not in OUTCOMES:
        raise ConfigError(f"filter: outcome must be one of {', '.join(OUTCOMES)}, "
                          f"got '{values['outcome']}'")
    if "seed" in values:
        try:
            values["seed"] = int(values["seed"]) if values["seed"] != "" else None
        except ValueError:
            raise ConfigError(f"filter: seed must be a number, got '{values['seed']}'") from None
    return EpisodeFilter(**values)


@dataclass(frozen=True)
class EpisodeRow:
    """One episode as listed.

    Attributes:
        id: episode id.
        run: run name.
        model: model name.
        arm: arm label.
        regime: regime name.
        seed: the cell's seed.
        budget: action budget.
        question_set: question set of the cell (the failure-draw pool), or None.
        question_id: question id.
        outcome: one of OUTCOMES.
        answer_action: action at which it answered, or None.
        steps: number of steps (tool calls + answer), i.e. the last action.
    """

    id: int
    run: str
    model: str
    arm: str
    regime: str
    seed: int
    budget: int
    question_set: str | None
    question_id: str
    outcome: str
    answer_action: int | None
    steps: int


@dataclass(frozen=True)
class Facets:
    """Values present in lab.db, offered as filter hints."""

    runs: tuple[str, ...]
    models: tuple[str, ...]
    arms: tuple[str, ...]
    regimes: tuple[str, ...]


@dataclass(frozen=True)
class _Cell:
    id: int
    run: str
    model: str
    arm: str
    condition: str
    regime: str
    seed: int
    budget: int
    question_set: str | None


_CELL_SQL = ("SELECT c.id, r.name, c.model, c.condition_spec, c.condition, c.regime, c.seed, "
             "c.budget, c.question_set FROM cells c JOIN runs r ON r.id = c.run_id")


def _cells(db: Database, where: str = "", args: Sequence[Any] = ()) -> list[_Cell]:
    """Episode cells (a trace cell of `lab traces collect` holds no episodes, and its
    "none" condition spec is no arm: left out)."""
    labels: dict[str, str] = {}
    out = []
    for cid, run, model, spec, cond, regime, seed, budget, qset in db.conn.execute(
            _CELL_SQL + where, tuple(args)):
        if cond == TRACE_CONDITION:
            continue
        if spec not in labels:
            labels[spec] = arm_label(spec)
        out.append(_Cell(cid, run, model, labels[spec], cond, regime, seed, budget, qset))
    return out


def facets(db: Database) -> Facets:
    """Runs, models, arm labels and regimes that have cells in lab.db.

    Args:
        db: an open lab.db.

    Returns:
        The Facets, each sorted.
    """
    cells = _cells(db)
    return Facets(*(tuple(sorted({getattr(c, f) for c in cells}))
                    for f in ("run", "model", "arm", "regime")))


def _matches(cell: _Cell, f: EpisodeFilter) -> bool:
    return ((not f.run or cell.run == f.run) and (not f.model or cell.model == f.model)
            and (not f.regime or cell.regime == f.regime)
            and (f.seed is None or cell.seed == f.seed)
            and (not f.arm or cell.arm == f.arm or (":" not in f.arm and cell.condition == f.arm)))


_OUTCOME_CASE = ("CASE WHEN e.error IS NOT NULL THEN 'errored' WHEN e.answered = 0 THEN "
                 "'unanswered' WHEN e.correct = 1 THEN 'correct' ELSE 'wrong' END")


def _episode_where(f: EpisodeFilter, cells: dict[int, _Cell] | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    if cells is not None:
        clauses.append(f"e.cell_id IN ({', '.join('?' * len(cells))})")
        args += list(cells)
    if f.outcome:
        clauses.append(_OUTCOME_SQL[f.outcome])
    if f.question:
        clauses.append("(e.question_id LIKE ? ESCAPE '\\' OR e.question_id IN "
                       "(SELECT id FROM questions WHERE question LIKE ? ESCAPE '\\'))")
        pattern = "%" + f.question.replace("\\", "\\\\").replace("%", "\\%").replace(
            "_", "\\_") + "%"
        args += [pattern, pattern]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _cell_selection(db: Database, f: EpisodeFilter) -> dict[int, _Cell] | None:
    """The cells the filter allows, or None when it does not restrict cells.

    Run, model, regime, seed and the condition name are matched in SQL; a full arm
    label (with knobs) is then compared on the few cells left.
    """
    clauses: list[str] = []
    args: list[Any] = []
    for column, value in (("r.name", f.run), ("c.model", f.model), ("c.regime", f.regime),
                          ("c.seed", f.seed), ("c.condition", f.arm.partition(":")[0])):
        if value not in ("", None):
            clauses.append(f"{column} = ?")
            args.append(value)
    if not clauses:
        return None
    cells = _cells(db, " WHERE " + " AND ".join(clauses), args)
    return {c.id: c for c in cells if _matches(c, f)}


def _cells_by_id(db: Database, ids: Sequence[int]) -> dict[int, _Cell]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return {c.id: c for c in _cells(db, f" WHERE c.id IN ({', '.join('?' * len(wanted))})",
                                     wanted)}


def list_episodes(db: Database, f: EpisodeFilter) -> list[EpisodeRow]:
    """Finished episodes matching the filter, newest first, at most `f.limit`.

    Args:
        db: an open lab.db.
        f: the filter (its `before_id` pages on).

    Returns:
        The episodes.
    """
    cells = _cell_selection(db, f)
    if cells is not None and not cells:
        return []
    where, args = _episode_where(f, cells)
    if f.before_id is not None:
        where += (" AND " if where else " WHERE ") + "e.id < ?"
        args.append(f.before_id)
    sql = (f"SELECT e.id, e.cell_id, e.question_id, {_OUTCOME_CASE}, e.answer_action, "
           "(SELECT max(t) FROM steps s WHERE s.episode_id = e.id) "
           f"FROM episodes e{where} ORDER BY e.id DESC LIMIT ?")
    found = db.conn.execute(sql, (*args, f.limit)).fetchall()
    if cells is None:
        cells = _cells_by_id(db, [r[1] for r in found])
    out = []
    for eid, cid, qid, outcome, action, steps in found:
        c = cells[cid]
        out.append(EpisodeRow(eid, c.run, c.model, c.arm, c.regime, c.seed, c.budget,
                              c.question_set, qid, outcome, action, int(steps or 0)))
    return out


def count_episodes(db: Database, f: EpisodeFilter) -> int:
    """How many finished episodes match the filter (ignoring paging).

    Args:
        db: an open lab.db.
        f: the filter.

    Returns:
        The count.
    """
    cells = _cell_selection(db, f)
    if cells is not None and not cells:
        return 0
    where, args = _episode_where(f, cells)
    return int(db.conn.execute(f"SELECT count(*) FROM episodes e{where}", args).fetchone()[0])


@dataclass(frozen=True)
class EpisodeDetail:
    """One finished episode: what it was, how it ended, and every step.

    Attributes:
        row: the episode as listed.
        question: the question text.
        gold: the gold answer.
        answer: the agent's answer, or None.
        f1: answer F1.
        end_reason: finish, budget, format_failure, generation_truncated, refusal or
            error (`core.end_reasons`).
        error: the error message, or None.
        tool_calls: tool calls.
        extra_calls: judgment calls, discarded turns and probes.
        forced_turns: forced turns.
        refused_calls: refused tool calls.
        input_tokens: input tokens.
        output_tokens: output tokens.
        steps: the steps, in order.
        observations: the observation text shown at each step (None when it had no
            observation), reconstructed from the knowledge base as the agent saw it.
        titles: the title of the page behind each observation ("" when none).
        probes: replayed probes of the episode (`lab replay`, `lab repair`), each a dict
            of t, kind, judgment, answer, correct, confidence, p_continue,
            p_answer_now, prefer, parse_ok, error; shown at the step t they follow.
        imported: the episode was imported from a released file: it has no text, and
            each observation reads `core.store.imports.NO_TEXT`.
        task: the question's task ("hotpotqa" or "fever": how its answer was scored).
    """

    row: EpisodeRow
    question: str
    gold: str
    answer: str | None
    f1: float
    end_reason: str
    error: str | None
    tool_calls: int
    extra_calls: int
    forced_turns: int
    refused_calls: int
    input_tokens: int
    output_tokens: int
    steps: tuple[Step, ...]
    observations: tuple[str | None, ...]
    titles: tuple[str, ...]
    probes: tuple[dict[str, Any], ...] = ()
    imported: bool = False
    task: str = TASK_HOTPOTQA


def episode_probe_rows(db: Database, episode_id: int) -> tuple[dict[str, Any], ...]:
    """The replayed probes of one episode, by t and kind (none on a lab.db without them)."""
    if not db.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'probes'").fetchone():
        return ()
    cur = db.conn.execute(
        "SELECT t, kind, judgment, answer, correct, confidence, p_continue, p_answer_now, "
        "prefer, parse_ok, error FROM probes WHERE episode_id = ? ORDER BY t, kind",
        (episode_id,))
    cols = [d[0] for d in cur.description]
    return tuple(dict(zip(cols, r)) for r in cur.fetchall())


def question_lookup(db: Database) -> Callable[[str], Question | None]:
    """A lookup of stored questions by id (None when not stored), each read once.

    A stored question never changes (`insert_questions` refuses different content for
    an id it holds), so one lookup may serve every episode of a job or a replay.
    """
    from core.store.questions import load_questions

    cache: dict[str, Question | None] = {}

    def get(qid: str) -> Question | None:
        if qid not in cache:
            try:
                (cache[qid],) = load_questions(db, ids=[qid])
            except StoreError:
                cache[qid] = None
        return cache[qid]

    return get


def observation_text(step: Step, question_of: Callable[[str], Question | None],
                     answerless: bool, episode_question: str) -> tuple[str | None, str]:
    """The observation the agent saw at `step`, rebuilt from the knowledge base.

    Stored text wins; otherwise `obs_ref` ("question_id#page") names the page, shown
    as a search result shows it. A real (not failed) page of the episode's own
    question comes from the answerless KB when the regime removes supporting facts.

    Args:
        step: a stored step.
        question_of: looks up a question by id (None when not stored).
        answerless: the episode ran in the answerless regime.
        episode_question: the episode's question id.

    Returns:
        (text or None when the step had no observation, page title or "").
    """
    if step.obs_index is None:
        return None, ""
    title = ""
    page = None
    hit = resolve_ref(step.obs_ref, question_of) if step.obs_ref else None
    if hit is not None:
        q, p = hit
        pages = (strip_supporting_facts(q) if answerless and not step.obs_failed
                 and q.id == episode_question else q.paragraphs)
        page = pages[p]
        title = page.title
    if step.obs_text is not None:
        return step.obs_text, title
    if page is not None:
        return paragraph_observation(page), title
    return (f"(page {step.obs_ref} is not in lab.db)" if step.obs_ref else None), title


_DETAIL_SQL = (
    "SELECT e.id, e.cell_id, e.question_id, " + _OUTCOME_CASE + ", e.answer_action, "
    "e.answer, e.f1, e.end_reason, e.error, e.tool_calls, e.extra_calls, e.forced_turns, "
    "e.refused_calls, e.input_tokens, e.output_tokens FROM episodes e WHERE e.id = ?")


def episode_detail(db: Database, episode_id: int) -> EpisodeDetail:
    """One finished episode with its steps and observation texts.

    Args:
        db: an open lab.db.
        episode_id: the episode.

    Returns:
        The EpisodeDetail.

    Raises:
        StoreError: no finished episode has this id.
    """
    row = db.conn.execute(_DETAIL_SQL, (episode_id,)).fetchone()
    if row is None:
        raise StoreError(f"no finished episode {episode_id} in lab.db")
    (eid, cid, qid, outcome, action, answer, f1, end_reason, error, calls, extra, forced,
     refused, tok_in, tok_out) = row
    (cell,) = _cells(db, " WHERE c.id = ?", (cid,))
    steps = tuple(episode_steps(db, eid))
    question_of = question_lookup(db)
    q = question_of(qid)
    imported = episode_imported(db, eid)
    shown = [((NO_TEXT if s.obs_index is not None else None), "") if imported else
             observation_text(s, question_of, cell.regime == "answerless", qid) for s in steps]
    listed = EpisodeRow(eid, cell.run, cell.model, cell.arm, cell.regime, cell.seed,
                        cell.budget, cell.question_set, qid, outcome, action,
                        max((s.t for s in steps), default=0))
    return EpisodeDetail(listed, q.question if q else "(question not in lab.db)",
                         q.answer if q else "", answer, float(f1), end_reason, error, calls,
                         extra, forced, refused, tok_in, tok_out, steps,
                         tuple(t for t, _ in shown), tuple(t for _, t in shown),
                         episode_probe_rows(db, eid), imported,
                         q.task if q else TASK_HOTPOTQA)


def matched_episodes(db: Database, episode_id: int) -> list[EpisodeRow]:
    """The same (model, regime, seed, budget, question set, question) under every arm.

    One episode per arm: the one in the same run as `episode_id` when there is one,
    else the newest. The given episode comes first, the other arms follow by label.

    Args:
        db: an open lab.db.
        episode_id: the episode to match.

    Returns:
        The matched episodes (just the given one when no other arm ran it).

    Raises:
        StoreError: no finished episode has this id.
    """
    row = db.conn.execute("SELECT cell_id, question_id FROM episodes WHERE id = ?",
                          (episode_id,)).fetchone()
    if row is None:
        raise StoreError(f"no finished episode {episode_id} in lab.db")
    (me,) = _cells(db, " WHERE c.id = ?", (row[0],))
    peers = _cells(db, " WHERE c.model = ? AND c.regime = ? AND c.seed = ? AND c.budget = ? "
                       "AND c.question_set IS ?",
                   (me.model, me.regime, me.seed, me.budget, me.question_set))
    by_cell = {c.id: c for c in peers}
    found = db.conn.execute(
        f"SELECT e.id, e.cell_id, {_OUTCOME_CASE}, e.answer_action, "
        "(SELECT max(t) FROM steps s WHERE s.episode_id = e.id) FROM episodes e "
        f"WHERE e.question_id = ? AND e.cell_id IN ({', '.join('?' * len(by_cell))}) "
        "ORDER BY e.id DESC", (row[1], *by_cell)).fetchall()
    best: dict[str, EpisodeRow] = {}
    for eid, cid, outcome, action, steps in found:
        c = by_cell[cid]
        ep = EpisodeRow(eid, c.run, c.model, c.arm, c.regime, c.seed, c.budget, c.question_set,
                        row[1], outcome, action, int(steps or 0))
        held = best.get(c.arm)
        if eid == episode_id or held is None or (held.run != me.run and c.run == me.run
                                                  and held.id != episode_id):
            best[c.arm] = ep
    first = best.pop(me.arm)
    return [first, *(best[a] for a in sorted(best))]


def episodes_fingerprint(db: Database) -> tuple[int, int]:
    """(number of finished episodes, highest episode id): changes when episodes are added.

    Args:
        db: an open lab.db.

    Returns:
        The pair ((0, 0) for an empty lab.db).
    """
    n, top = db.conn.execute("SELECT count(*), coalesce(max(id), 0) FROM episodes").fetchone()
    return int(n), int(top)


def step_key(step: Step | None) -> tuple[Any, ...] | None:
    """What two arms' steps must share to count as the same move.

    Args:
        step: a step, or None when the episode had already ended.

    Returns:
        (action, argument, forced, refused, format failure), or None.
    """
    if step is None:
        return None
    return (step.action, (step.argument or "").strip(), step.forced, step.refused,
            step.format_failure)


def first_divergence(trajectories: Sequence[Sequence[Step]]) -> int | None:
    """The first action at which the episodes of matched arms differ.

    Steps are aligned by action index t; they differ when their action, argument,
    forced/refused flags or format failure differ, or when one episode has ended.

    Args:
        trajectories: the steps of each matched episode.

    Returns:
        The action t of the first divergence, or None when all are identical.
    """
    if len(trajectories) < 2:
        return None
    by_t = [{s.t: s for s in steps} for steps in trajectories]
    last = max((max(d, default=0) for d in by_t), default=0)
    for t in range(1, last + 1):
        if len({step_key(d.get(t)) for d in by_t}) > 1:
            return t
    return None


__all__ = ["OUTCOMES", "EpisodeDetail", "EpisodeFilter", "EpisodeRow", "Facets", "PAGE",
           "count_episodes", "episode_detail", "episodes_fingerprint", "facets",
           "first_divergence", "list_episodes", "matched_episodes", "observation_text",
           "parse_filter", "step_key"]
