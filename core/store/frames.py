"""Read-only frames of finished episodes and steps for analysis, filtered in SQL.

Every episode row carries what tells its arm and its provenance apart: the arm
label (`core.conditions.arm_label` of the stored condition spec, computed once per
distinct spec), ``condition_hash``, the question's ``dataset``, ``question_set``,
``run`` and its ``amendment`` (NULL when exploratory), ``seed`` and ``replicate``.
A `Selection` says which episodes to read; its filters become the SQL WHERE clause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from core.conditions import arm_label
from core.end_reasons import APART
from core.pack_labels import label_with_pack
from core.store.decisions import PACKED_FIELDS, PACKED_ID_SHIFT, PACKED_OFFSET
from core.store.episode_packs import EPISODE_WORDS, word_sql
from core.store.imports import question_datasets
from core.store.layouts import require_layout
from core.store.packs import (
    PACKED_BY_ID_SQL,
    PACKED_SQL,
    KeyPackText,
    PackSpan,
    read_key_packs,
    read_packs,
    unpack_word,
    unpack_words,
)
from core.store.selection import Selection, where_clause, with_filters

if TYPE_CHECKING:  # pandas loads on first use, not on import
    import pandas as pd


CELL_FRAME_SQL = """
SELECT c.id AS cell_id, r.name AS run, r.amendment_id AS amendment, c.model, c.condition,
       c.condition_hash, c.condition_spec, c.regime, c.budget, c.seed, c.replicate,
       COALESCE(c.question_set, '') AS question_set, c.prompt_pack
FROM cells c JOIN runs r ON r.id = c.run_id
"""
"""Every cell with its run: joined to the episodes in pandas, so the cell's strings are
built once per cell, not once per episode."""

EPISODE_FRAME_SQL = """
SELECT e.id AS episode_id, e.cell_id, COALESCE(q.dataset, qr.dataset, '') AS dataset,
       e.question_id,
       e.answered, e.answer,
       e.answer_action, e.correct, e.f1, e.em, e.placeholder, e.tool_calls, e.extra_calls,
       e.format_failures, e.forced_turns, e.refused_calls, e.input_tokens, e.output_tokens,
       e.cache_read_tokens, e.cache_write_tokens, e.cost_usd, e.end_reason, e.error,
       e.started_at, e.finished_at,
       COALESCE(e.acting_input_tokens, 0) AS acting_input_tokens,
       COALESCE(e.acting_output_tokens, 0) AS acting_output_tokens,
       CASE WHEN c.condition IN ('stated_judgment_rule', 'stated_judgment_combo') THEN
           COALESCE(e.discarded_turns, 0) ELSE 0 END AS discarded_turns,
       CASE WHEN c.condition IN ('two_source', 'switch_rule') THEN
           COALESCE(e.backup_calls, 0) ELSE 0 END AS backup_calls,
       CASE WHEN c.condition = 'switch_rule' THEN
           COALESCE(e.primary_judgments, 0) ELSE 0 END AS primary_judgments
FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id
LEFT JOIN questions q ON q.id = e.question_id LEFT JOIN question_refs qr ON qr.id = e.question_id
"""
"""The episodes' own columns; the sums over steps were stored with each episode
(`core.store.decisions.TOTALS`), so reading episodes never touches steps."""
_FRAME_ORDER = ("episode_id", "run", "amendment", "cell_id", "model", "condition", "arm",
                "condition_hash", "condition_spec", "regime", "budget", "seed", "replicate",
                "question_set", "dataset", "question_id")

STEP_FRAME_SQL = """
SELECT s.episode_id, s.t, s.action, s.obs_index, s.obs_failed, s.obs_source, s.obs_ref,
       CASE WHEN s.judgment_source IS NULL THEN rp.judgment ELSE s.judgment END AS judgment,
       CASE WHEN s.judgment_source IS NULL AND rp.t IS NOT NULL THEN 'replay'
            ELSE s.judgment_source END AS judgment_source, s.stated_judgment, s.rule_signal,
       s.streak, s.forced, s.refused,
       s.format_failure, s.discarded, s.tool_source
FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id
JOIN runs r ON r.id = c.run_id
LEFT JOIN probes rp ON rp.episode_id = s.episode_id AND rp.t = s.t AND rp.kind = 'judgment'
    AND rp.error IS NULL AND s.discarded = 0
"""
"""Steps whose arm asked no judgment in-run take the replayed one (`lab replay judgments`,
source "replay"); a judgment asked in-run is never replaced."""


def episodes_frame(db: Database, runs: Sequence[str] | None = None,
                   models: Sequence[str] | None = None, selection: Selection | None = None,
                   upto: int | None = None, errored: bool = False, apart: bool = False
                   ) -> pd.DataFrame:
    """Finished episodes (errored ones included) with their cell, run and arm, as a DataFrame.

    Args:
        db: an open lab.db.
        runs: run names (shorthand for `selection.runs`).
        models: model names (shorthand for `selection.models`).
        selection: the filters (the `pool` field is not used here).
        upto: only episodes with id <= upto (the state a `Fingerprint` recorded).
        errored: only errored episodes whose (cell, question) has no complete
            episode (`analysis.measures.decisions.errored_episodes`).
        apart: only complete episodes that ended with a truncated generation or a
            refusal (`core.end_reasons.APART`; few, read beside the lazy frames).

    Returns:
        One row per episode, ordered by id, with the `arm` label column added.

    Raises:
        ConfigError: a condition in the selection that matches no stored arm.
    """
    extra = [f"e.id <= {int(upto)}"] if upto is not None else []
    if errored:
        extra.append("e.error IS NOT NULL AND NOT EXISTS (SELECT 1 FROM episodes x WHERE "
                     "x.cell_id = e.cell_id AND x.question_id = e.question_id AND "
                     "x.error IS NULL"
                     + (f" AND x.id <= {int(upto)})" if upto is not None else ")"))
    if apart:
        extra.append("e.error IS NULL AND e.end_reason IN ("
                     + ", ".join(f"'{reason}'" for reason in APART) + ")")
    sel = with_filters(selection, runs, models)
    where, args = where_clause(db, sel, *extra)
    cells = _cells(db)
    frame = _read_episodes(db, where, args, cells, sel.filtered)
    if frame is None:
        frame = _read_frame(db, EPISODE_FRAME_SQL + where + " ORDER BY e.id", args)
    return _join_cells(frame, cells)


EPISODE_KEYS = _FRAME_ORDER
"""The columns `episode_keys_frame` reads: what tells episodes' groups apart."""


KEY_VALUES = ("answered", "correct", "em", "placeholder", "tool_calls", "extra_calls",
              "format_failures", "forced_turns", "refused_calls", "input_tokens",
              "output_tokens", "cache_read_tokens", "cache_write_tokens", "answer_action",
              "acting_input_tokens", "acting_output_tokens", "discarded_turns", "backup_calls",
              "primary_judgments", "cost_usd")
"""Episode columns `episode_keys_frame` can read beside the keys, with the values and
dtypes `episodes_frame` gives them: a table that needs only these (success needs
``correct``, cost its calls, tokens and dollars) never reads the full episode frame.
The integers are int64 (``acting_*`` 0 where NULL; the arm-only counts 0 outside their
arms, `_ARM_ONLY`); ``answer_action`` (NULL when unanswered) is float64 with NaN, and
``cost_usd`` float64 (NaN where NULL), as in `episodes_frame`."""


def episode_keys_frame(db: Database, selection: Selection | None = None,
                       upto: int | None = None, values: Sequence[str] = (),
                       text: KeyPackText | None = None) -> pd.DataFrame:
    """The error-free episodes' key columns (_FRAME_ORDER), as a DataFrame.

    The rows of `episodes_frame` without an error, in its order, with its EPISODE_KEYS
    columns, episode_id … question_id (every cell column, the dataset and the question) with
    the same values and dtypes; only three values per episode are read (its id, cell
    and question) and, for `values`, one integer per `EPISODE_WORDS` word holding some
    (and ``cost_usd``); the cell's columns are joined by position.

    Signature: ``episode_keys_frame(db, Selection(seeds=(0,)), upto=fp.max_id)``.

    Args:
        db: an open lab.db.
        selection: the filters (the `pool` field is not used here).
        upto: only episodes with id <= upto (the state a `Fingerprint` recorded).
        values: KEY_VALUES columns to read too, after the keys (values and dtypes as in
            `episodes_frame`).
        text: for an unfiltered selection, `core.store.packs.key_pack_text(db, upto)`
            when already read (`core.store.early_reads`); None: read here.

    Returns:
        One row per error-free episode, ordered by id.

    Raises:
        ConfigError: a condition in the selection that matches no stored arm.
        ValueError: a `values` column outside KEY_VALUES.
    """
    import numpy as np
    import pandas as pd

    bad = [v for v in values if v not in KEY_VALUES]
    if bad:
        raise ValueError(f"episode_keys_frame reads no column {bad[0]!r}")
    values = tuple(values)
    sel = selection or Selection()
    where, args = where_clause(db, sel, *([f"e.id <= {int(upto)}"] if upto is not None else []))
    joins = (" JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id"
             if sel.filtered else "")
    # the values come in EPISODE_WORDS' words, one integer each (word 1 holds cell_id);
    # errored rows are read too (a flag) so the dtypes are those of episodes_frame's read
    wanted = {"_answer_action" if v == "answer_action" else v for v in values}
    words = [i for i, word in enumerate(EPISODE_WORDS)
             if i and any(name in wanted for _, name, _ in word)]
    cell = [] if 1 in words else [("cell_id", "i8")]
    fields = np.dtype([("episode_id", "i8"), ("question_id", object), ("bad", "?"), *cell,
                       *((f"w{i}", "i8") for i in words),
                       *((("cost_usd", "f8"),) if "cost_usd" in values else ())])
    rows = None if sel.filtered else read_key_packs(db, upto, fields, text)
    text = None  # the packs' BLOB and text are not held while the frame is built
    if rows is None:  # a filtered selection, or episodes some writer left unpacked
        cursor = db.conn.execute("SELECT e.id, e.question_id, e.error IS NOT NULL"
                                 + ("" if 1 in words else ", e.cell_id")
                                 + "".join(f", {word_sql(i)}" for i in words)
                                 + (", e.cost_usd" if "cost_usd" in values else "")
                                 + f" FROM episodes e{joins}{where} ORDER BY e.id", args)
        try:
            read = np.fromiter(cursor, dtype=fields)
        except (TypeError, ValueError, OverflowError):  # a NULL id or question, a value
            frame = episodes_frame(db, selection=sel, upto=upto)  # past its bits: plainly
            return frame.loc[frame["error"].isna(),
                             [*EPISODE_KEYS, *values]].reset_index(drop=True)
        rows = {name: read[name] for name in fields.names or ()}
    cells = _cells(db)
    names = ["episode_id", "cell_id", "dataset", "question_id", *values]
    if not len(rows["episode_id"]):
        return _join_cells(pd.DataFrame(columns=names, dtype=object), cells)
    ints: dict[str, Any] = {} if 1 in words else {"cell_id": rows["cell_id"]}
    for i in words:
        ints.update(unpack_word(EPISODE_WORDS[i], rows[f"w{i}"]))
    cell_at = pd.Index(cells["cell_id"]).get_indexer(ints["cell_id"])
    keep = (cell_at >= 0) & ~rows["bad"]  # the join: an episode of no stored cell is no row
    rows = {k: rows[k][keep] for k in ("episode_id", "question_id", "cost_usd") if k in rows}
    condition = cells["condition"].to_numpy()[cell_at[keep]]
    ints = {k: v[keep] for k, v in ints.items()}
    if "cost_usd" in values:
        ints["cost_usd"] = rows["cost_usd"]
    codes, questions = pd.factorize(rows["question_id"])
    datasets = question_datasets(db)
    # one object per dataset name (SQLite gives each row its own): equal names are the
    # same object on every row, as the cells' columns are, so grouping hashes them once
    one: dict[str, str] = {}
    columns = {"episode_id": rows["episode_id"], "cell_id": ints["cell_id"],
               "dataset": np.array([one.setdefault(d, d) for d in
                                    (datasets.get(q, "") or "" for q in questions)],
                                   dtype=object)[codes],
               "question_id": np.asarray(questions, dtype=object)[codes],
               **{v: _value(ints, v, condition) for v in values}}
    return _join_cells(pd.DataFrame({c: pd.Series(columns[c]) for c in names}, columns=names),
                       cells)


def _value(ints: dict[str, Any], column: str, condition: Any) -> Any:
    """A KEY_VALUES column from `episode_keys_frame`'s unpacked words, as `episodes_frame`
    has it (`condition`: each row's cell condition, for the arm-only counts)."""
    import numpy as np

    if column in dict(_ARM_ONLY):
        return _arm_only(column, ints[column], condition)
    if column != "answer_action":
        return ints[column]
    packed = ints["_answer_action"]  # answer_action + 1, 0 when unanswered
    action = packed.astype(np.float64) - 1  # NaN where unanswered, as _read_episodes
    action[packed == 0] = np.nan
    return action


def _arm_only(column: str, values: Any, condition: Any) -> Any:
    """An `_ARM_ONLY` count as EPISODE_FRAME_SQL reads it: `values` (int64) where the
    episode's condition keeps that count, 0 for every other arm."""
    import numpy as np

    return np.where(np.isin(condition, dict(_ARM_ONLY)[column]), values, 0)


_EPISODE_VALUES = ("f1", "cost_usd", "question_id", "answer", "end_reason", "error",
                   "started_at", "finished_at")
"""EPISODE_FRAME_SQL's columns read as they are, after the packed words."""
_ARM_ONLY = (("discarded_turns", ("stated_judgment_rule", "stated_judgment_combo")),
             ("backup_calls", ("two_source", "switch_rule")),
             ("primary_judgments", ("switch_rule",)))
"""Counts EPISODE_FRAME_SQL reads only for these conditions (0 for every other arm)."""


def _episode_sql(joined: bool) -> str:
    """The packed read: the words in hex (NULL when a value does not fit its bits), then
    _EPISODE_VALUES; joined with cells and runs only when the WHERE clause needs them."""
    words, every, narrow, wide = [], [], [], []
    for word in EPISODE_WORDS:
        parts, shift = [], 0
        for expr, _, bits in word:
            every.append(expr)
            if bits < 32:
                narrow.append(expr)
            elif bits == 32:
                wide.append(expr)
            parts.append(f"(({expr}) << {shift})" if shift else f"({expr})")
            shift += bits
        words.append(" | ".join(parts))
    # every field fits: none negative, the 15/16-bit ones below 2^15, the 31/32-bit ones
    # below 2^31 (e.id and e.cell_id, 62 and 48 bits, are SQLite rowids)
    fits = (f"min({', '.join(every)}) >= 0 AND max({', '.join(narrow)}) < 32768 "
            f"AND max({', '.join(wide)}) < 2147483648 "
            f"AND max({', '.join(e for e in every if e not in narrow + wide)}) < 281474976710656")
    hexed = f"printf('{'%016x' * len(words)}', {', '.join(words)})"
    joins = " JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id" if joined else ""
    return (f"SELECT CASE WHEN {fits} THEN {hexed} END, "
            f"{', '.join('e.' + v for v in _EPISODE_VALUES)} FROM episodes e{joins}")


def _read_episodes(db: Database, where: str, args: Sequence[Any], cells: Any,
                   joined: bool) -> Any:
    """EPISODE_FRAME_SQL's frame (same columns, values and dtypes as `_read_frame`) with
    nine values per episode read instead of thirty, and no join when no filter needs one.

    Each value sqlite3 hands to Python costs more than SQLite's own work, so the integers
    come packed in one hex text; the arm-only counts are zeroed by the cell's condition
    and the dataset is looked up per question, here rather than per row in SQL.

    Returns:
        The frame, or None when there are no rows or an integer does not fit its bits
        (the caller then reads it plainly).
    """
    import numpy as np
    import pandas as pd

    names = [d[0] for d in db.conn.execute(EPISODE_FRAME_SQL + " LIMIT 0").description]
    cursor = db.conn.execute(_episode_sql(joined) + where + " ORDER BY e.id", list(args))
    fields = [("words", object), ("f1", "f8"), ("cost_usd", "f8"),
              *((v, object) for v in _EPISODE_VALUES[2:])]
    try:
        rows = np.fromiter(cursor, dtype=np.dtype(fields))
    except (TypeError, ValueError):  # a NULL word (a value past its bits) or a NULL REAL
        return None
    if not len(rows) or any(w is None for w in rows["words"]):
        return None
    ints = unpack_words(rows["words"])
    cell_at = pd.Index(cells["cell_id"]).get_indexer(ints["cell_id"])
    if (cell_at < 0).any():  # the join: an episode of no stored cell and run is no row
        keep = cell_at >= 0
        rows, cell_at, ints = rows[keep], cell_at[keep], {k: v[keep] for k, v in ints.items()}
    condition = cells["condition"].to_numpy()[cell_at]
    for column, _ in _ARM_ONLY:
        ints[column] = _arm_only(column, ints[column], condition)
    action = ints["_answer_action"].astype(np.float64) - 1
    action[ints["_answer_action"] == 0] = np.nan
    # one string object per question (the same values), its dataset looked up once
    codes, questions = pd.factorize(rows["question_id"])
    datasets = question_datasets(db)
    question_id = np.asarray(questions, dtype=object)[codes]
    dataset = np.array([datasets.get(q, "") or "" for q in questions], dtype=object)[codes]
    columns = {"dataset": dataset, "question_id": question_id, "answer_action": action,
               **{v: rows[v].copy() for v in _EPISODE_VALUES if v != "question_id"}}
    return pd.DataFrame({c: pd.Series(columns[c] if c in columns else ints[c])
                         for c in names}, columns=names)


def _read_frame(db: Database, sql: str, args: Sequence[Any]) -> Any:
    """A query's rows as a DataFrame, built column by column.

    The same frame as ``pandas.read_sql_query`` (same values and dtypes), about a
    third faster on 200,000 rows: each column is inferred once from a list instead of
    row records.
    """
    import pandas as pd

    cursor = db.conn.execute(sql, list(args))
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    if not rows:
        return pd.DataFrame(columns=names, dtype=object)
    return pd.DataFrame({n: list(c) for n, c in zip(names, zip(*rows))}, columns=names)


def _cells(db: Database) -> Any:
    """Every cell's columns (CELL_FRAME_SQL) with its arm label; a cell run with a prompt
    pack has the pack's short hash in its label (`core.pack_labels`), so its rows never
    look like the built-in wording's."""
    import pandas as pd

    cells = pd.read_sql_query(CELL_FRAME_SQL, db.conn)
    packs = cells.pop("prompt_pack")
    labels = {spec: arm_label(spec) for spec in cells["condition_spec"].unique()}
    arms = cells["condition_spec"].map(labels).astype(object)
    if packs.notna().any():
        arms = pd.Series([label_with_pack(a, p if isinstance(p, str) else None)
                          for a, p in zip(arms, packs)], index=arms.index, dtype=object)
    cells.insert(cells.columns.get_loc("condition") + 1, "arm", arms)
    return cells


def _join_cells(episodes: Any, cells: Any) -> Any:
    """Episode rows with their cell's columns (`_cells`), in _FRAME_ORDER then the rest:
    a left join by position, each cell column taken once, not merged."""
    import pandas as pd

    at = pd.Index(cells["cell_id"]).get_indexer(episodes["cell_id"])
    if (at < 0).any():
        frame = episodes.merge(cells, on="cell_id", how="left", validate="many_to_one")
    else:
        frame = pd.concat([episodes.reset_index(drop=True),
                           cells.drop(columns="cell_id").take(at).reset_index(drop=True)],
                          axis=1)
    rest = [c for c in episodes.columns if c not in _FRAME_ORDER]
    return frame.loc[:, [*_FRAME_ORDER, *rest]]


def steps_frame(db: Database, runs: Sequence[str] | None = None,
                models: Sequence[str] | None = None, selection: Selection | None = None,
                upto: int | None = None, where: Sequence[str] = ()) -> pd.DataFrame:
    """Steps of finished episodes (never the live tables), as a pandas DataFrame.

    Args:
        db: an open lab.db.
        runs: run names (shorthand for `selection.runs`).
        models: model names (shorthand for `selection.models`).
        selection: the filters.
        upto: only steps of episodes with id <= upto.
        where: further SQL conditions on the steps (alias ``s``), e.g. only the
            backup steps the leaving table reads.

    Returns:
        One row per step, ordered by episode and t.
    """
    extra = [*where] + ([f"e.id <= {int(upto)}"] if upto is not None else [])
    where, args = where_clause(db, with_filters(selection, runs, models), *extra)
    return _read_frame(db, STEP_FRAME_SQL + where + " ORDER BY s.episode_id, s.t, "
                       "s.discarded DESC", args)


def decisions_frame(db: Database, selection: Selection | None = None, upto: int | None = None,
                    episode_ids: Any = None, packs: PackSpan | None = None
                    ) -> pd.DataFrame:
    """The stored decision points of the selection's complete episodes (integers only).

    Args:
        db: an open lab.db.
        selection: the filters.
        upto: only episodes with id <= upto.
        episode_ids: when given (ascending), the episodes already selected (complete,
            within `selection` and `upto`): the decisions are read by id range without
            joining episodes, cells and runs, and those of other episodes dropped here;
            one BLOB per episode from `decision_packs` when the packs hold every row
            of `decisions` in the range, else the rows themselves.
        packs: the packs of an id range holding every `episode_ids` already read
            (`read_pack_span`); read here when None.

    Returns:
        DataFrame with episode_id and the `core.decisions.COLUMNS` but ``t``, int64 but
        the one-bit fields (``answer``, ``final`` and the flags: bool), ordered by
        episode and step (``stated_run`` −1 where unknown).

    Raises:
        StoreError: lab.db records another layout for the decisions or their packs
            (`core.store.layouts.require_layout`).
    """
    import itertools

    import numpy as np
    import pandas as pd

    require_layout(db, "decisions")
    ids = None if episode_ids is None else np.asarray(episode_ids, dtype=np.int64)
    if ids is not None and not (ids[1:] > ids[:-1]).all():
        ids = np.unique(ids)
    from_packs = (None if ids is None or not len(ids) or ids[-1] >= 1 << (63 - PACKED_ID_SHIFT)
                  else read_packs(db, ids, packs))
    if from_packs is not None:
        packed = from_packs
    elif ids is not None and (not len(ids) or ids[-1] < 1 << (63 - PACKED_ID_SHIFT)):
        packed = np.zeros((0, 3), dtype=np.int64)
        if len(ids):
            cursor = db.conn.execute(PACKED_BY_ID_SQL, (int(ids[0]), int(ids[-1])))
            pairs = np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64)
            pairs = pairs.reshape(-1, 2)
            episode = pairs[:, 1] >> PACKED_ID_SHIFT
            at = np.minimum(np.searchsorted(ids, episode), len(ids) - 1)
            keep = ids[at] == episode
            if not keep.all():
                pairs, episode = pairs[keep], episode[keep]
            pairs[:, 1] &= (1 << PACKED_ID_SHIFT) - 1
            packed = np.column_stack([episode, pairs])
    else:
        extra = ["e.error IS NULL"] + ([f"e.id <= {int(upto)}"] if upto is not None else [])
        where, args = where_clause(db, selection or Selection(), *extra)
        cursor = db.conn.execute(PACKED_SQL + where + " ORDER BY d.episode_id, d.seq", args)
        flat = np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64)
        packed = flat.reshape(-1, 3)
    return pd.DataFrame(_unpacked(packed), copy=False)


def _unpacked(packed: Any) -> dict[str, Any]:
    """`decisions_frame`'s columns from its (episode_id, word 0, word 1) rows: each
    field shifted and masked in place in its own new array, a one-bit field tested into
    a bool array through one scratch array (each int64 temporary of a million decisions
    is 7 MB of fresh pages the kernel zeroes: 12 fields once, not twice, and the flags
    an eighth of it)."""
    import numpy as np

    out: dict[str, Any] = {"episode_id": packed[:, 0]}
    scratch = np.empty(len(packed), dtype=np.int64)
    for name, which, shift, bits in PACKED_FIELDS:
        word = packed[:, 1 + which]
        if bits == 1:
            out[name] = np.not_equal(np.bitwise_and(word, 1 << shift, out=scratch), 0)
        else:
            field = np.right_shift(word, shift)
            out[name] = np.bitwise_and(field, (1 << bits) - 1, out=field)
    for name, offset in PACKED_OFFSET.items():
        out[name] -= offset
    return out


