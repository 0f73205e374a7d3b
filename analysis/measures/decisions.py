"""The decision table: one row per decision point, with its episode's columns.

The definitions (which observation a decision follows, the next valid action, the
design, own and stated runs, A18's unknown stated runs, ``*_latest`` and
``*_earlier``) live in one place, `core.decisions.episode_decisions`, a pure
function of one episode's steps. lab.db stores its output per episode when the
episode is stored (table ``decisions``, integer columns); `decision_table` applies
the same function to step frames (hand-built frames, tests), and
`decisions_with_episodes` turns either into the frame every measure reads.

Grouping (`arm_groups`, `analysis.base.arms`): a row of any table covers one model × arm
(the full spec: label and condition hash, never the bare name) × budget × dataset ×
question set × run × seed × replicate; runs, seeds, replicates and sets are merged
only when asked (`pool`). Errored episodes leave every measure but are counted on
their row (`errored_episodes`).

Where a decision's judgments came from: ``own_replayed`` says that the side-channel
judgment of its latest observation was replayed (`lab replay judgments`) rather than
asked in-run; `judgment_sources` turns counts of each into a row's ``judgments`` text.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from analysis.base.arms import GROUP_KEYS, ArmKey, Grouping
from analysis.stats.codes import one_text, sorted_codes
from core.decisions import COLUMNS, STEP_FIELDS, episode_decisions
from core.store.packs import run_positions

ARM_KEYS = GROUP_KEYS
"""What splits rows by default: model, arm, condition_hash, budget, dataset,
question_set, run, seed, replicate (`analysis.base.arms.GROUP_KEYS`)."""
JUDGMENTS = ("side_channel", "stated")
_EPISODE_COLS = ("episode_id", "run", "model", "condition", "budget", "regime", "seed",
                 "question_id")
_DECISION_ORDER = ("episode_id", "n_obs", "action", "answer", "design_run", "own_run",
                   "own_latest", "own_earlier", "stated_run", "stated_known", "stated_latest",
                   "stated_earlier")
_FLAGS = frozenset({"own_latest", "own_earlier", "stated_known", "stated_latest",
                    "stated_earlier"})
REPLAYED = "own_replayed"
"""Decision column: the latest observation's side-channel judgment was replayed."""
_OBS_BITS = 20
"""A decision's (episode, n_obs) as one int64 key: episode << 20 | n_obs (runs and
observation counts stay below 32,768, `core.store.decisions.PACKED_FIELDS`)."""


def errored_episodes(episodes: pd.DataFrame) -> pd.DataFrame:
    """Errored episodes whose (cell, question) has no complete episode.

    An errored episode stays on record when a retry later stores a complete one
    beside it; such a superseded error is not counted. Without a ``cell_id`` column
    (hand-built frames) every errored episode counts.

    Args:
        episodes: the episode frame (errors included).

    Returns:
        The errored episodes still missing a complete run.
    """
    if "error" not in episodes:
        return episodes.iloc[0:0]
    bad = episodes["error"].notna()
    if "cell_id" not in episodes or not bad.any():
        return episodes.loc[bad]
    done = episodes.loc[~bad, ["cell_id", "question_id"]].drop_duplicates()
    done = pd.MultiIndex.from_frame(done)
    keys = pd.MultiIndex.from_frame(episodes.loc[bad, ["cell_id", "question_id"]])
    return episodes.loc[bad].loc[~keys.isin(done)]


def clean_episodes(episodes: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Split off episodes that ended in an error (excluded from every measure).

    Args:
        episodes: the episode frame.

    Returns:
        (episodes without an error, number of errored episodes that have no complete
        retry: `errored_episodes`).
    """
    bad = episodes["error"].notna() if "error" in episodes else pd.Series(False,
                                                                         index=episodes.index)
    return (episodes.loc[~bad].reset_index(drop=True),
            len(errored_episodes(episodes)) if bad.any() else 0)


def run_lengths(start: np.ndarray, extend: np.ndarray, reset: np.ndarray) -> np.ndarray:
    """Current run length at each row of concatenated sequences, vectorised.

    Args:
        start: True at the first row of each sequence (the run starts at 0 before it).
        extend: True where the row extends the run by one.
        reset: True where the row resets the run to 0 (takes precedence).

    Returns:
        int array: the run length after each row.
    """
    extend = np.asarray(extend, dtype=bool) & ~np.asarray(reset, dtype=bool)
    cs = np.cumsum(extend)
    n = len(cs)
    anchor_value = np.zeros(n, dtype=np.int64)
    has_anchor = np.asarray(start, dtype=bool) | np.asarray(reset, dtype=bool)
    # A sequence start anchors at the count before it; a reset anchors at its own count.
    anchor_value[start] = cs[start] - extend[start]
    anchor_value[reset] = cs[reset]
    pos = np.where(has_anchor, np.arange(n), 0)
    np.maximum.accumulate(pos, out=pos)
    return (cs - anchor_value[pos]).astype(np.int64)


def decision_table(episodes: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Build the decision table of the given (error-free) episodes from their steps.

    Args:
        episodes: episode frame (``core.store.episodes_frame``), errors removed.
        steps: step frame (``core.store.steps_frame``); steps of other episodes
            are ignored. ``format_failure``, ``refused`` and ``discarded`` mark invalid
            turns (a step without an action counts as a format failure).

    Returns:
        DataFrame with one row per decision point: the episode's arm, run, regime,
        seed and question, ``n_obs``, ``action``, ``final``, ``answer`` (0/1),
        ``design_run``, ``own_run``, ``own_latest``, ``own_earlier``, ``stated_run``
        (−1 when unknown), ``stated_known``, ``stated_latest``, ``stated_earlier``,
        ``own_replayed`` (the steps' ``judgment_source`` says "replay").
    """
    ep = episodes.loc[:, list(_EPISODE_COLS)]
    st = steps.loc[steps["episode_id"].isin(ep["episode_id"])]
    st = st.assign(**{c: False for c in STEP_FIELDS if c not in st})
    st = st.sort_values("episode_id", kind="stable")
    budgets = dict(zip(ep["episode_id"].tolist(), ep["budget"].tolist()))
    rows: list[tuple[int, ...]] = []
    records = st.loc[:, ["episode_id", *STEP_FIELDS]].itertuples(index=False, name=None)
    for episode_id, group in itertools.groupby(records, key=lambda r: r[0]):
        rows += [(episode_id, *d) for d in episode_decisions([r[1:] for r in group],
                                                             int(budgets[episode_id]))]
    ints = pd.DataFrame(rows, columns=["episode_id", *COLUMNS]) if rows else pd.DataFrame(
        {c: np.zeros(0, dtype=np.int64) for c in ("episode_id", *COLUMNS)})
    ints[REPLAYED] = replayed_mask(ints, replayed_steps(st))
    return decisions_with_episodes(ints, ep, _EPISODE_COLS[1:])


def replayed_steps(steps: pd.DataFrame) -> np.ndarray:
    """The (episode, obs_index) of the observations whose judgment a step frame took from a
    replay (``judgment_source`` "replay", `core.store.frames.STEP_FRAME_SQL`).

    Args:
        steps: a step frame (without ``judgment_source``: none was replayed).

    Returns:
        int64 array (rows × 2), the layout of `core.store.replayed.replayed_observations`.
    """
    if "judgment_source" not in steps or not len(steps):
        return np.zeros((0, 2), dtype=np.int64)
    hit = (steps["judgment_source"] == "replay").to_numpy(dtype=bool) \
        & steps["obs_index"].notna().to_numpy()
    if "discarded" in steps:
        hit &= ~steps["discarded"].fillna(False).to_numpy(dtype=bool)
    return np.column_stack([steps["episode_id"].to_numpy()[hit],
                            steps["obs_index"].to_numpy()[hit]]).astype(np.int64)


def replayed_mask(ints: pd.DataFrame, replayed: np.ndarray) -> np.ndarray:
    """Which decisions follow an observation whose judgment was replayed.

    Args:
        ints: decision rows with ``episode_id`` and ``n_obs``.
        replayed: (episode, obs_index) pairs (`replayed_steps`,
            `core.store.replayed.replayed_observations`).

    Returns:
        A boolean array, one per row.
    """
    if not len(replayed) or not len(ints):
        return np.zeros(len(ints), dtype=bool)
    key = (ints["episode_id"].to_numpy(np.int64) << _OBS_BITS) | ints["n_obs"].to_numpy(np.int64)
    return np.isin(key, (replayed[:, 0] << _OBS_BITS) | replayed[:, 1])


def judgment_sources(side_channel: int, replay: int) -> str:
    """A row's ``judgments`` text: where the side-channel judgments it read came from.

    Args:
        side_channel: judgments (or decisions, in the row's unit) asked in-run.
        replay: those replayed by `lab replay judgments`.

    Returns:
        "side_channel 1,204", "replay 96", "both: side_channel 1,108, replay 96", or ""
        when both are 0.
    """
    if side_channel and replay:
        return f"both: side_channel {side_channel:,}, replay {replay:,}"
    if replay:
        return f"replay {replay:,}"
    return f"side_channel {side_channel:,}" if side_channel else ""


def decisions_with_episodes(ints: pd.DataFrame, episodes: pd.DataFrame,
                            columns: Sequence[str], after: Sequence[str] = ()) -> pd.DataFrame:
    """The decision frame: integer decision columns typed, plus episode columns.

    Args:
        ints: ``episode_id`` and the `core.decisions.COLUMNS` (integers), ordered by
            episode and step (from lab.db's ``decisions`` or `episode_decisions`), and
            optionally ``own_replayed`` (`replayed_mask`; all False without it).
        episodes: the episode frame, ordered by ``episode_id``; decisions of episodes
            not in it are dropped.
        columns: episode columns copied onto each decision (after the decision's own).
        after: episode columns copied after ``final``.

    Returns:
        One row per decision point: episode_id, n_obs, action, answer, the runs and
        flags (flags as bool), ``own_replayed`` (bool), the episode `columns`, ``final``
        (bool), then `after`.
    """
    ids = episodes["episode_id"].to_numpy()
    dec_ids = ints["episode_id"].to_numpy()
    pos = run_positions(ids, dec_ids)
    keep = pos < len(ids)
    keep[keep] = ids[pos[keep]] == dec_ids[keep]
    if not keep.all():
        ints, pos = ints.loc[keep], pos[keep]
    data: dict[str, object] = {"episode_id": ints["episode_id"].to_numpy(np.int64)}
    for c in _DECISION_ORDER[1:]:
        values = ints[c].to_numpy()
        # int64 columns are kept as they are (no copy: 7 MB each at 886k decisions)
        data[c] = (values.astype(bool, copy=False) if c in _FLAGS
                   else values.astype(np.int64, copy=False))
    data[REPLAYED] = (ints[REPLAYED].to_numpy(dtype=bool) if REPLAYED in ints
                      else np.zeros(len(ints), dtype=bool))
    for c in columns:
        data[c] = episode_column(episodes[c], pos)
    data["final"] = ints["final"].to_numpy().astype(bool, copy=False)
    for c in after:
        data[c] = episode_column(episodes[c], pos)
    # no copy into consolidated blocks: each column keeps the array built above
    return pd.DataFrame(data, copy=False)


def episode_column(column: pd.Series, pos: np.ndarray) -> pd.Series:
    """An episode column at the given positions, with a fresh RangeIndex: the episode
    column's values, in its dtype or as a categorical of them.

    A column holding one value on every episode (a study's one run, dataset, question
    set, replicate, often its budget and seed) is its first row's value read through a
    read-only view with stride 0 instead of a copy per decision (7 MB of fresh pages
    per column at 886,000 decisions): the same values and dtype. A text column holding
    several values and no missing one (the model, condition, arm, condition hash, regime
    and question id) is a categorical: each row's code among the column's distinct
    values, sorted (a few integers' bytes a decision, not a pointer to a string; the
    tables' groups, runs and question codes are read from the codes,
    `analysis.stats.codes`). A text column with a missing value keeps its dtype (a
    categorical would turn None into NaN); numbers are taken as they are."""
    values = column.array
    backing = getattr(values, "_ndarray", None)  # numpy-backed (object, str, int64)
    if isinstance(backing, np.ndarray) and len(pos) and _one_value(backing):
        return pd.Series(values._from_backing_data(np.broadcast_to(backing[:1], len(pos))),
                         dtype=column.dtype, copy=False)
    if isinstance(backing, np.ndarray) and backing.dtype == object and len(pos):
        codes, uniques = sorted_codes(column)  # by runs: a cell's episodes hold one value
        if not pd.isna(uniques[-1]):  # no missing value (None would come back as NaN)
            return pd.Series(pd.Categorical.from_codes(codes[pos], categories=uniques),
                             copy=False)
    return pd.Series(values.take(pos), dtype=column.dtype, copy=False)


def _one_value(values: np.ndarray) -> bool:
    """Whether a 1-d array holds one value on every row: the same text (or None) on every
    row of an object array (`analysis.stats.codes.one_text`); equal integers, booleans or
    floats (a NaN is never equal) on every row of any other dtype."""
    if values.dtype == object:
        return one_text(values)
    return bool(values.ndim == 1 and len(values) and values.dtype.kind in "biuf"
                and (values == values[0]).all())


def judgment_columns(judgments: str) -> tuple[str, str, str]:
    """(run, latest, earlier) column names for a judgment source.

    Args:
        judgments: "side_channel" (recorded or replayed) or "stated".

    Returns:
        The three column names of the decision table.

    Raises:
        ValueError: for another source.
    """
    if judgments == "side_channel":
        return "own_run", "own_latest", "own_earlier"
    if judgments == "stated":
        return "stated_run", "stated_latest", "stated_earlier"
    raise ValueError(f"judgments must be one of {JUDGMENTS}, got {judgments!r}")


def arm_groups(frame: pd.DataFrame, grouping: Grouping | None = None,
               families: bool = False) -> Iterator[tuple[ArmKey, pd.DataFrame]]:
    """Iterate over the rows' groups (arm by full spec × …, see ARM_KEYS) in a stable order.

    Args:
        frame: an episode or decision frame.
        grouping: what to pool and the errored episodes to count (default: nothing
            pooled, no errors).
        families: also split by regime family (`core.regimes.regime_family`).

    Yields:
        (ArmKey, sub-frame) pairs.
    """
    yield from (grouping or Grouping()).groups(frame, families)
