"""Repaired answers (SPEC §8.5): raw results stay primary; `--repaired` swaps them in.

A repair is a probe of kind "repair" (`lab repair`); it changes only the answer and
its scores (answer, em, f1, correct, placeholder) of the episodes that have one.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
from sqlite_utils import Database

from analysis.measures import Frames
from core.store.probes import probes_frame

SCORE_COLUMNS = ("answer", "em", "f1", "correct", "placeholder")


def with_repairs(episodes: pd.DataFrame, repairs: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Episodes with their repaired answers and scores where a repair is stored.

    Args:
        episodes: the episode frame.
        repairs: repair probes (episode_id and SCORE_COLUMNS).

    Returns:
        (the frame, number of episodes changed); other rows are untouched.
    """
    rep = repairs.loc[repairs["episode_id"].isin(episodes["episode_id"])]
    rep = rep.drop_duplicates("episode_id").set_index("episode_id")
    if rep.empty:
        return episodes, 0
    out = episodes.copy()
    hit = out["episode_id"].isin(rep.index)
    ids = out.loc[hit, "episode_id"]
    for column in SCORE_COLUMNS:
        values = rep.loc[ids, column].to_numpy()
        if column != "answer":
            values = values.astype(out[column].dtype)
        out.loc[hit, column] = values
    return out, int(hit.sum())


def repaired_frames(db: Database, frames: Frames) -> tuple[Frames, int]:
    """The frames with repaired answers swapped in (decisions do not depend on them).

    Returns:
        (frames, number of episodes whose answer was repaired).
    """
    repairs = probes_frame(db, frames.selection, kinds=("repair",))
    episodes, n = with_repairs(frames.episodes, repairs)
    return replace(frames, episodes=episodes), n
