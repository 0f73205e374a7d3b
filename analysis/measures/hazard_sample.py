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


