"""The decision table: one row per decision point, built once from the step frame.

A decision point follows a step that returned an observation (``obs_index`` not
null). It belongs to the next VALID action of the episode: the next step whose
action was parsed and either executed (a tool call) or ``finish``. Format-failure
turns and refused forced turns are skipped, so they are never "did not answer"
decisions. The decision's ``action`` is that valid action's ``t`` and its outcome
``answer`` is whether it is ``finish``; an observation with no valid action after
it (the episode ended on the budget, a format failure or refused turns) has no
decision point. After it, ``n_obs`` observations have been seen (``obs_index``).
``final`` marks decisions at the budget's final action.

Runs are counted over observations only (format failures and refused forced turns
neither extend nor reset them):

- ``design_run`` (j): consecutive failed observations (design labels) ending here;
- ``own_run`` (s, side channel): USELESS extends the run, anything else resets it;
- ``stated_run`` (stated judgments, paper A18): "useless" extends, "useful" (which
  includes "partly useful") resets. The run is KNOWN at a decision only if every
  observation since the last reset (the latest "useful"), or since the episode
  start when there was none, has an explicit stated judgment; ``stated_known``
  says so, and where it is False ``stated_run`` is −1 (unknown), so such points
  fall out of every group of Δ and never reach a threshold. Worked example, stated
  judgments of observations 1–5: useless, none, useless, useful, useless →
  stated_run 1, −1, −1, 0, 1 (unknown from the silent observation 2 until the
  "useful" of observation 4 resets it); useless, none, useless, none → 1, −1, −1,
  −1 (never group (b)); useless, useless, useless → 1, 2, 3 (s = 3 = t, group (a)
  at t = 3).

``*_latest`` says the latest observation was judged useless; ``*_earlier`` says an
earlier observation of the episode was judged not useless (side channel: any other
reply; stated: "useful").

Grouping (`arm_groups`, `analysis.arms`): a row of any table covers one model × arm
(the full spec: label and condition hash, never the bare name) × budget × dataset ×
question set × run × seed × replicate; runs, seeds, replicates and sets are merged
only when asked (`pool`). Errored episodes leave every measure but are counted on
their row (`errored_episodes`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from analysis.arms import GROUP_KEYS, ArmKey, Grouping

ARM_KEYS = GROUP_KEYS
"""What splits rows by default: model, arm, condition_hash, budget, dataset,
question_set, run, seed, replicate (`analysis.arms.GROUP_KEYS`)."""
JUDGMENTS = ("side_channel", "stated")
_EPISODE_COLS = ("episode_id", "run", "model", "condition", "budget", "regime", "seed",
                 "question_id")


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


def _earlier(start: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Whether any earlier row of the same sequence has `flag`."""
    flag = np.asarray(flag, dtype=np.int64)
    cs = np.cumsum(flag)
    n = len(cs)
    base = np.zeros(n, dtype=np.int64)
    base[start] = cs[start] - flag[start]
    pos = np.where(start, np.arange(n), 0)
    np.maximum.accumulate(pos, out=pos)
    return (cs - flag - base[pos]) > 0


def _next_valid(eid: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Position of the next valid step after each step of the same episode (−1: none)."""
    n = len(valid)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    pos = np.where(valid, np.arange(n), n)
    at_or_after = np.minimum.accumulate(pos[::-1])[::-1]
    nxt = np.r_[at_or_after[1:], n]
    ok = nxt < n
    ok[ok] = eid[nxt[ok]] == eid[ok]
    return np.where(ok, nxt, -1)


def _flag(steps: pd.DataFrame, column: str) -> np.ndarray:
    """A 0/1 step column as bool (all False when the frame lacks it)."""
    if column not in steps:
        return np.zeros(len(steps), dtype=bool)
    return steps[column].fillna(0).to_numpy().astype(bool)


def decision_table(episodes: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Build the decision table of the given (error-free) episodes.

    Args:
        episodes: episode frame (``core.store.episodes_frame``), errors removed.
        steps: step frame (``core.store.steps_frame``); steps of other episodes
            are ignored. ``format_failure`` and ``refused`` mark invalid turns (a
            step without an action counts as a format failure).

    Returns:
        DataFrame with one row per decision point: the episode's arm, run, regime,
        seed and question, ``n_obs``, ``action``, ``final``, ``answer`` (0/1),
        ``design_run``, ``own_run``, ``own_latest``, ``own_earlier``, ``stated_run``
        (−1 when unknown), ``stated_known``, ``stated_latest``, ``stated_earlier``.
    """
    ep = episodes.loc[:, list(_EPISODE_COLS)]
    cols = ["episode_id", "t", "action", "obs_index", "obs_failed", "judgment",
            "stated_judgment"] + [c for c in ("format_failure", "refused") if c in steps]
    st = steps.loc[steps["episode_id"].isin(ep["episode_id"]), cols].sort_values(
        ["episode_id", "t"], kind="stable")
    eid = st["episode_id"].to_numpy()
    valid = (st["action"].notna().to_numpy() & ~_flag(st, "format_failure")
             & ~_flag(st, "refused"))
    nxt = _next_valid(eid, valid)
    has_next = nxt >= 0
    next_t = np.where(has_next, st["t"].to_numpy()[nxt], 0)
    next_finish = has_next & (st["action"] == "finish").to_numpy()[nxt]
    is_obs = st["obs_index"].notna().to_numpy()

    obs = st.loc[is_obs]
    oid = obs["episode_id"].to_numpy()
    start = np.r_[True, oid[1:] != oid[:-1]] if len(oid) else np.zeros(0, dtype=bool)
    failed = obs["obs_failed"].fillna(0).to_numpy().astype(bool)
    useless = (obs["judgment"] == "USELESS").to_numpy()
    said_useless = (obs["stated_judgment"] == "useless").to_numpy()
    said_useful = (obs["stated_judgment"] == "useful").to_numpy()
    silent = ~said_useless & ~said_useful
    stated_known = run_lengths(start, silent, said_useful) == 0

    table = pd.DataFrame({
        "episode_id": oid,
        "n_obs": obs["obs_index"].to_numpy().astype(np.int64),
        "action": next_t[is_obs].astype(np.int64),
        "answer": next_finish[is_obs].astype(np.int64),
        "design_run": run_lengths(start, failed, ~failed),
        "own_run": run_lengths(start, useless, ~useless),
        "own_latest": useless,
        "own_earlier": _earlier(start, ~useless),
        "stated_run": np.where(stated_known, run_lengths(start, said_useless, said_useful), -1),
        "stated_known": stated_known,
        "stated_latest": said_useless,
        "stated_earlier": _earlier(start, said_useful),
    })
    table = table.loc[has_next[is_obs]]
    table = table.merge(ep, on="episode_id", how="inner", validate="many_to_one")
    table["final"] = table["action"] >= table["budget"]
    return table.reset_index(drop=True)


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


def codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and sorted unique values of a column.

    Args:
        values: the column.

    Returns:
        (codes, uniques).
    """
    c, u = pd.factorize(values, sort=True)
    return c.astype(np.int64), np.asarray(u)
