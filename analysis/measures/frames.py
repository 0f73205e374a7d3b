"""What analysis reads, each part loaded only when a measure asks for it.

`load_frames` reads almost nothing: the selection's `Fingerprint` (one aggregate
query), its runs and its errored episodes. The error-free episodes (what success,
cost and the grouping read), the decision table (Δ, I, hazard, dissociation: from
lab.db's compact ``decisions`` table, never from steps), the leaving table's backup
steps and, for callers that need step detail, the steps are each read on first use
(judgment rates are counted by SQLite: `analysis.measures.judgments`), through a
fresh connection to the same file, bounded by the fingerprint's largest episode id
so all parts describe the same episodes. A table served from the results cache
(`analysis.base.cache`) reads none of them.

`frames_from` builds the same Frames from frames in memory (hand-built or read
elsewhere), deriving the decisions with `analysis.measures.decisions.decision_table`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import pandas as pd
from sqlite_utils import Database

from analysis.base.arms import with_keys
from analysis.base.source import FrameSource
from analysis.measures.decisions import (
    REPLAYED,
    clean_episodes,
    decision_table,
    decisions_with_episodes,
    episode_column,
    errored_episodes,
    replayed_mask,
)
from core.conditions import TWO_SOURCE_ARMS
from core.end_reasons import APART
from core.store.connection import db_file
from core.store.early_reads import EarlyReads
from core.store.frames import EPISODE_KEYS
from core.store.packs import KeyPackText, PackSpan
from core.store.selection import Selection

DECISION_KEYS = ("arm", "condition_hash", "dataset", "question_set", "run", "seed",
                 "replicate", "amendment")
"""Episode columns every decision row carries, so decisions group like episodes."""
BACKUP_STEPS_SQL = "(s.tool_source = 'backup' OR s.action = 'backup_search')"
"""The steps `Frames.backup_steps` reads (SQL on STEP_FRAME_SQL's ``s``)."""
_DECISION_EPISODE_COLS = ("run", "model", "condition", "budget", "regime", "seed",
                          "question_id")


class Frames:
    """What analysis reads: error-free episodes, their steps and decisions.

    Attributes:
        episodes: finished episodes without an error.
        episode_keys: the same rows with only their key columns (`core.store.frames.
            EPISODE_KEYS`), all grouping and the decision table need.
        steps: their steps.
        decisions: the decision table (`analysis.measures.decisions.decision_table`), with the
            episodes' grouping columns.
        errored: errored episodes left out that have no complete retry.
        runs: runs present in the selection.
        errored_episodes: those errored episodes (each is counted on its row).
        apart_episodes: the complete episodes that ended with a truncated generation or
            a refusal (`apart_episodes`; in every measure, and counted on their row).
        selection: the filters and pooling the frames were loaded with.
        source: where the lazy parts are read from (None: everything is in memory).
        early: the key and decision packs being read since the command started
            (`core.store.early_reads`), taken when they describe `source`.
    """

    def __init__(self, episodes: pd.DataFrame | None = None, steps: pd.DataFrame | None = None,
                 decisions: pd.DataFrame | None = None, errored: int = 0,
                 runs: tuple[str, ...] = (), errored_episodes: pd.DataFrame | None = None,
                 selection: Selection | None = None, source: FrameSource | None = None,
                 apart_episodes: pd.DataFrame | None = None,
                 early: EarlyReads | None = None) -> None:
        self._episodes, self._steps, self._decisions = episodes, steps, decisions
        self.errored = errored
        self.runs = runs
        self.errored_episodes = (errored_episodes if errored_episodes is not None
                                 else pd.DataFrame())
        self.apart_episodes = (apart_episodes if apart_episodes is not None
                               else pd.DataFrame())
        self.selection = selection or Selection()
        self.source = source
        self._backup_steps: pd.DataFrame | None = None
        self._episode_keys: pd.DataFrame | None = None
        self._episode_columns: dict[tuple[str, ...], pd.DataFrame] = {}
        self._packs: Future[PackSpan | None] | None = None
        self._lock = threading.Lock()
        self._early = early if source is not None else None

    @property
    def episodes(self) -> pd.DataFrame:
        """Error-free episodes (read on first use)."""
        with self._lock:
            if self._episodes is None:
                self._episodes = self._read_episodes()
            return self._episodes

    @property
    def episode_keys(self) -> pd.DataFrame:
        """The rows of `episodes` with only their key columns (`EPISODE_KEYS`: what
        grouping and the decision table read), same values and dtypes; taken from
        `episodes` or a frame of `episode_columns` when one is loaded (the console's
        Δ tab after Success: 0.3 s of CPU not spent reading them again at 198k), else
        read alone (three values per episode)."""
        with self._lock:
            if self._episode_keys is None:
                loaded = self._episodes if self._episodes is not None else next(
                    iter(self._episode_columns.values()), None)
                if loaded is not None:
                    self._episode_keys = episode_keys_of(loaded)
                else:
                    self._episode_keys = self._read_episode_keys()
            return self._episode_keys

    def release_episodes(self) -> None:
        """Drop the full episode frame (and any keys-and-values frames), keeping the key
        columns: what `analysis.tables.compute.compute` does once no table left needs more, so
        that the episodes and the decision table are not both held. A later use of
        `episodes` reads them again."""
        keys = self.episode_keys
        with self._lock:
            if self.source is None:
                return  # built in memory: nothing to read them back from
            self._episode_keys = keys.copy() if self._episodes is not None else keys
            self._episodes = None
            self._episode_columns.clear()

    def episode_columns(self, values: tuple[str, ...]) -> pd.DataFrame:
        """The rows of `episodes` with their key columns and `values` (columns among
        `core.store.frames.KEY_VALUES`), same values and dtypes: `episodes` itself when
        those are loaded, a frame already read with more values, else read with the keys
        (success reads ``correct`` this way instead of the full frame: 0.3 s instead of
        1.2 s at 198k episodes).

        Args:
            values: the non-key columns wanted.

        Returns:
            The frame (other columns may be present too).
        """
        with self._lock:
            if self._episodes is not None:
                return self._episodes
            wider = [v for v in self._episode_columns if set(values) <= set(v)]
            if wider:
                return self._episode_columns[wider[0]]
            if values not in self._episode_columns:
                src = self._need_source()
                from core.store.frames import episode_keys_frame

                db = src.connect()
                try:
                    self._episode_columns[values] = with_keys(episode_keys_frame(
                        db, src.selection, src.fingerprint.max_id, values,
                        self._early_key_text(src)))
                finally:
                    db.conn.close()
            return self._episode_columns[values]

    def _early_key_text(self, src: FrameSource) -> KeyPackText | None:
        """The key packs read since the command started, when they describe `src`: the
        first read takes them (a later one reads its own; the text is not held beside
        the frames)."""
        if self._early is None:
            return None
        return self._early.take_key_packs(src.path, src.selection, src.fingerprint)

    def prefetch_decisions(self) -> None:
        """Start reading the decision packs in a thread, for a later `decisions`.

        The packs' two SQL statements run in SQLite with the GIL released, so they
        overlap the episodes' keys, read in Python meanwhile (at 198k episodes ~0.25 s
        of ~0.45 s). Only for an unfiltered selection, whose ids span lab.db's
        episodes up to the fingerprint: a filtered one reads its own, narrower range
        when `decisions` is asked for.
        """
        with self._lock:
            src = self.source
            if (src is None or self._decisions is not None or self._packs is not None
                    or src.selection.filtered or not src.fingerprint.episodes):
                return
            if self._early is not None:
                self._packs = self._early.take_decision_packs(src.path, src.selection,
                                                              src.fingerprint)
                if self._packs is not None:
                    return  # being read since the command started
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="packs")
            self._packs = pool.submit(_read_pack_span, src)
            pool.shutdown(wait=False)  # the thread ends with its one read

    @property
    def decisions(self) -> pd.DataFrame:
        """The decision table with the episodes' columns (read on first use)."""
        episodes = self.episode_keys
        with self._lock:
            if self._decisions is None:
                self._decisions = self._read_decisions(episodes)
            return self._decisions

    @property
    def steps(self) -> pd.DataFrame:
        """Steps of the error-free episodes (read on first use)."""
        episodes = self.episode_keys
        with self._lock:
            if self._steps is None:
                self._steps = self._read_steps(episodes)
            return self._steps

    @property
    def backup_steps(self) -> pd.DataFrame:
        """The steps the leaving table reads: backup tool calls and backup_search actions
        (read on first use, never every step; a filter of `steps` when those are in
        memory)."""
        if self._steps is not None or self.source is None:
            steps = self.steps
            return steps.loc[backup_step_mask(steps)].reset_index(drop=True)
        episodes = self.episode_keys
        with self._lock:
            if self._backup_steps is None:
                # a study without two-source arms reads no steps at all (the query would
                # scan every step to find none: 0.3-1 s at 198k)
                some = episodes["condition"].isin(TWO_SOURCE_ARMS).any()
                self._backup_steps = self._read_steps(episodes,
                                                      BACKUP_STEPS_SQL if some else "0")
            return self._backup_steps

    @property
    def n_episodes(self) -> int:
        """Episodes in the selection, errored ones included (no frame is read)."""
        if self.source is not None:
            return self.source.fingerprint.episodes
        return len(self.episodes) + len(self.errored_episodes)

    def _need_source(self) -> FrameSource:
        if self.source is None:
            raise ValueError("these Frames were built in memory without this part")
        return self.source

    def _read_episodes(self) -> pd.DataFrame:
        from core.store.frames import episodes_frame

        src = self._need_source()
        db = src.connect()
        try:
            frame = episodes_frame(db, selection=src.selection, upto=src.fingerprint.max_id)
        finally:
            db.conn.close()
        return clean_episodes(with_keys(frame))[0]

    def _read_episode_keys(self) -> pd.DataFrame:
        from core.store.frames import episode_keys_frame

        src = self._need_source()
        db = src.connect()
        try:
            return with_keys(episode_keys_frame(db, src.selection, src.fingerprint.max_id,
                                                text=self._early_key_text(src)))
        finally:
            db.conn.close()

    def _read_decisions(self, episodes: pd.DataFrame) -> pd.DataFrame:
        from core.store.frames import decisions_frame
        from core.store.replayed import replayed_observations

        src = self._need_source()
        packs = self._packs.result() if self._packs is not None else None
        self._packs = None
        db = src.connect()
        try:
            ints = decisions_frame(db, src.selection, src.fingerprint.max_id,
                                   episodes["episode_id"].to_numpy(), packs)
            ints[REPLAYED] = replayed_mask(ints, replayed_observations(
                db, src.fingerprint.max_id))
        finally:
            db.conn.close()
        extra = tuple(c for c in DECISION_KEYS if c not in _DECISION_EPISODE_COLS)
        return decisions_with_episodes(ints, episodes, _DECISION_EPISODE_COLS, extra)

    def _read_steps(self, episodes: pd.DataFrame, *where: str) -> pd.DataFrame:
        from core.store.frames import steps_frame

        src = self._need_source()
        db = src.connect()
        try:
            steps = steps_frame(db, selection=src.selection, upto=src.fingerprint.max_id,
                                where=where)
        finally:
            db.conn.close()
        return steps.loc[steps["episode_id"].isin(episodes["episode_id"])].reset_index(drop=True)


def _read_pack_span(src: FrameSource) -> PackSpan:
    """Every decision pack up to the source's fingerprint (`Frames.prefetch_decisions`)."""
    from core.store.packs import read_pack_span

    db = src.connect()
    try:
        return read_pack_span(db, 0, src.fingerprint.max_id)
    finally:
        db.conn.close()


def episode_keys_of(episodes: pd.DataFrame) -> pd.DataFrame:
    """The key columns (`EPISODE_KEYS`) an episode frame has, in that order.

    Args:
        episodes: an episode frame.

    Returns:
        Its rows with only those columns.
    """
    return episodes.loc[:, [c for c in EPISODE_KEYS if c in episodes]]


def backup_step_mask(steps: pd.DataFrame) -> pd.Series:
    """Steps that are backup tool calls or backup_search actions (BACKUP_STEPS_SQL).

    Args:
        steps: a step frame.

    Returns:
        Boolean mask over its rows.
    """
    mask = steps["action"] == "backup_search"
    if "tool_source" in steps:
        mask |= steps["tool_source"] == "backup"
    return mask.fillna(False).astype(bool)


def frames_from(episodes: pd.DataFrame, steps: pd.DataFrame,
                selection: Selection | None = None) -> Frames:
    """Build Frames from episode and step frames (pure).

    Args:
        episodes: `core.store.episodes_frame` output (errors included).
        steps: `core.store.steps_frame` output.
        selection: the selection they were read with (its `pool` decides the rows).

    Returns:
        The Frames, with errored episodes counted and removed.
    """
    episodes = with_keys(episodes)
    clean, errored = clean_episodes(episodes)
    steps = steps.loc[steps["episode_id"].isin(clean["episode_id"])].reset_index(drop=True)
    runs = tuple(sorted(str(r) for r in episodes["run"].unique())) if len(episodes) else ()
    decisions = decision_table(clean, steps)
    extra = [c for c in DECISION_KEYS if c not in decisions]
    if extra:  # each decision's episode's columns, as `decisions_with_episodes` puts them
        at = pd.Index(clean["episode_id"]).get_indexer(decisions["episode_id"])
        if (at < 0).any():  # cannot happen (decisions of the clean episodes only)
            raise ValueError("a decision of an episode the frame does not hold")
        decisions = decisions.assign(**{c: episode_column(clean[c], at) for c in extra})
    return Frames(clean, steps, decisions, errored, runs, errored_episodes(episodes),
                  selection or Selection(), apart_episodes=apart_episodes(clean))


def apart_episodes(episodes: pd.DataFrame) -> pd.DataFrame:
    """The complete episodes that ended with a truncated generation or a refusal
    (`core.end_reasons.APART`): not errors, so in every measure as not answering, and
    counted apart on their row (`analysis.base.arms.Grouping`).

    Args:
        episodes: an episode frame (errored rows are never counted).

    Returns:
        Those rows (none when the frame has no ``end_reason`` column).
    """
    if "end_reason" not in episodes:
        return episodes.iloc[0:0]
    mask = episodes["end_reason"].isin(APART)
    if "error" in episodes:
        mask &= episodes["error"].isna()
    return episodes.loc[mask]


def load_frames(db: Database, selection: Selection | None = None,
                runs: Sequence[str] | None = None,
                models: Sequence[str] | None = None, early: EarlyReads | None = None
                ) -> Frames:
    """The selection's Frames; episodes, decisions and steps are read on first use.

    Signature: ``load_frames(db, Selection(runs=("main",), seeds=(0, 1),
    conditions=("enforced_rule:k=7",), pool=("seeds",)))``; ``runs`` and ``models``
    are shorthands that override the selection's.

    Args:
        db: an open lab.db.
        selection: filters (runs, sets, seeds, models, conditions as arm labels or
            bare names, regimes) and the dimensions rows pool (default: everything,
            nothing pooled).
        runs: run names to keep.
        models: model names to keep.
        early: packs being read since the command started (`core.store.early_reads`);
            the frames take them where they describe this selection's data.

    Returns:
        The Frames (runs, errored episodes and the fingerprint read now).

    Raises:
        ConfigError: a condition in the selection that matches no stored arm.
    """
    from core.store.frames import episodes_frame, steps_frame
    from core.store.selection import fingerprint, selection_runs

    sel = selection or Selection()
    if runs:
        sel = replace(sel, runs=tuple(runs))
    if models:
        sel = replace(sel, models=tuple(models))
    path = db_file(db)
    if not path:
        return frames_from(episodes_frame(db, selection=sel), steps_frame(db, selection=sel),
                           sel)
    fp = fingerprint(db, sel)
    errored = with_keys(episodes_frame(db, selection=sel, upto=fp.max_id, errored=True))
    apart = with_keys(episodes_frame(db, selection=sel, upto=fp.max_id, apart=True))
    return Frames(None, None, None, len(errored), selection_runs(db, sel, fp.max_id), errored,
                  sel, FrameSource(path, sel, fp), apart, early)
