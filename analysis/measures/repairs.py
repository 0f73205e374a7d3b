"""Repaired answers (docs/replay.md): raw results stay primary; `--repaired` swaps them in.

A repair is a probe of kind "repair" (`lab repair`); it changes only the answer and
its scores (answer, em, f1, correct, placeholder) of the episodes that have one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlite_utils import Database

from analysis.measures.frames import Frames
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
    hit = out["episode_id"].isin(rep.index).to_numpy()
    for column in SCORE_COLUMNS:
        repaired = out["episode_id"].map(rep[column]).to_numpy()
        values = np.where(hit, repaired, out[column].to_numpy(dtype=object))
        out[column] = (values if column == "answer"
                       else values.astype(episodes[column].dtype))
    return out, int(hit.sum())


def repaired_frames(db: Database, frames: Frames) -> tuple[Frames, int]:
    """The frames with repaired answers swapped in (decisions do not depend on them).

    Returns:
        (frames, number of episodes whose answer was repaired).
    """
    repairs = probes_frame(db, frames.selection, kinds=("repair",))
    episodes, n = with_repairs(frames.episodes, repairs)
    if not n:
        return frames, 0
    return type(frames)(episodes, frames.steps, frames.decisions, frames.errored, frames.runs,
                        frames.errored_episodes, frames.selection,
                        apart_episodes=frames.apart_episodes), n
