"""Which decisions the hazard LPM fits (`analysis.stats.lpm`), read from a decision table.

After a result judged useless (its run known), after 1–`LPM_T_MAX` results, in the
failure regimes, the final action excluded; `judgments` chooses whose judgments
(`analysis.measures.decisions.judgment_columns`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.measures.decisions import judgment_columns

LPM_T_MAX = 6
"""The last number of results a fitted decision may follow."""


def after_useless(dec: pd.DataFrame, rows: np.ndarray | slice, judgments: str = "side_channel"
                  ) -> np.ndarray:
    """Which of the rows `rows` of `dec` the LPM may fit, less the regime and final-action
    tests: after a result judged useless (run known), after 1–`LPM_T_MAX` results.

    Args:
        dec: decision table rows.
        rows: positions in `dec` (or a slice).
        judgments: "side_channel" or "stated".

    Returns:
        A boolean array, one per row taken.
    """
    run_col, latest, _ = judgment_columns(judgments)
    n_obs, run = dec["n_obs"].to_numpy()[rows], dec[run_col].to_numpy()[rows]
    return (dec[latest].to_numpy(dtype=bool)[rows] & (n_obs >= 1) & (n_obs <= LPM_T_MAX)
            & (run >= 0))


def sample_frame(dec: pd.DataFrame, rows: np.ndarray, judgments: str = "side_channel"
                 ) -> pd.DataFrame:
    """The LPM's sample frame on the rows (positions in `dec`) kept, reading only the
    columns it needs.

    Args:
        dec: decision table rows.
        rows: positions of the kept rows, in order.
        judgments: "side_channel" or "stated".

    Returns:
        DataFrame with answer, action, regime, run, earlier (0/1) and question_id.
    """
    run_col, _, earlier = judgment_columns(judgments)

    def column(name: str) -> pd.Series:
        return dec[name].take(rows)

    return pd.DataFrame({
        "answer": column("answer").to_numpy(dtype=float),
        "action": column("action").to_numpy(), "regime": column("regime").astype(str).to_numpy(),
        "run": column(run_col).to_numpy(dtype=float),
        "earlier": column(earlier).to_numpy(dtype=float),
        "question_id": column("question_id").astype(str).to_numpy(),
    })


