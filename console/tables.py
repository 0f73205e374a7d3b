"""Text tables printed by the CLI (interim: mean6 per model × condition)."""

from __future__ import annotations

from sqlite_utils import Database

from core import store
from core.regimes import MEAN6


def demo_tables(db: Database, run: str = "demo") -> str:
    """mean6 success per model × condition of a run, as aligned text."""
    frame = store.episodes_frame(db, runs=[run])
    frame = frame[frame["error"].isna() & frame["regime"].isin(MEAN6)]
    if frame.empty:
        return "no finished episodes"
    per_regime = frame.groupby(["model", "condition", "regime"])["correct"].mean()
    mean6 = per_regime.groupby(["model", "condition"]).mean().unstack("condition")
    return "mean6 success (equal-weight mean over the six regimes)\n" + mean6.to_string(
        float_format=lambda v: f"{v:.3f}")
