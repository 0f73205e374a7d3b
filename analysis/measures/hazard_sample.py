"""Which decisions the hazard LPM fits (`analysis.stats.lpm`), read from a decision table.

After a result judged useless (its run known), after 1–`LPM_T_MAX` results, in the
failure regimes, the final action excluded; `judgments` chooses whose judgments
(`analysis.measures.decisions.judgment_columns`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.measures.decisions import judgment_columns
from analysis.stats.lpm import HAZARD_BOOT, HazardFit, fit_hazard
from core.regimes import FAILURE_REGIMES

LPM_T_MAX = 6
"""The last number of results a fitted decision may follow."""


def hazard_sample(dec: pd.DataFrame, judgments: str = "side_channel",
                  regimes: Sequence[str] = FAILURE_REGIMES) -> pd.DataFrame:
    """The LPM's decisions: after a result judged useless, 1–6 results, failure regimes.

    Args:
        dec: decision table rows of one arm.
        judgments: "side_channel" or "stated".
        regimes: the failure regimes fitted (default: the main family's five; another
            family's table passes its own regime, never a mix of families).

    Returns:
        DataFrame with answer, action, regime, run, earlier (0/1) and question_id.
    """
    return sample_frame(dec, np.flatnonzero(sample_mask(dec, judgments, regimes)), judgments)


def sample_mask(dec: pd.DataFrame, judgments: str = "side_channel",
                regimes: Sequence[str] = FAILURE_REGIMES) -> np.ndarray:
    """Which rows of `dec` `hazard_sample` keeps (a stated run can be unknown (−1): left out).

    Args:
        dec: decision table rows.
        judgments: "side_channel" or "stated".
        regimes: the failure regimes fitted.

    Returns:
        A boolean array, one per row.
    """
    return (dec["regime"].isin(list(regimes)).to_numpy() & ~dec["final"].to_numpy(dtype=bool)
            & after_useless(dec, slice(None), judgments))


def after_useless(dec: pd.DataFrame, rows: np.ndarray | slice, judgments: str = "side_channel"
                  ) -> np.ndarray:
    """`sample_mask` less its regime and final-action tests, on the rows `rows` of `dec`:
    after a result judged useless (run known), after 1–`LPM_T_MAX` results.

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
    """`hazard_sample`'s frame on the rows (positions in `dec`) `sample_mask` kept,
    reading only the columns it needs.

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


def hazard_model(dec: pd.DataFrame, judgments: str = "side_channel",
                 fixed_effects: bool = False, n_boot: int = HAZARD_BOOT,
                 seed: int = 0, regimes: Sequence[str] = FAILURE_REGIMES) -> HazardFit:
    """The hazard LPM answer ~ action + regime + β·run + γ·earlier [+ question].

    statsmodels gives the point estimates; the question-cluster bootstrap solves
    each resample from per-question cross-products (identical on the full sample).

    Args:
        dec: decision table rows of one arm.
        judgments: "side_channel" or "stated".
        fixed_effects: include question fixed effects.
        n_boot: resamples (1,000 by default, as in the main paper, App. C.2).
        seed: bootstrap seed.
        regimes: the failure regimes fitted (`hazard_sample`).

    Returns:
        The HazardFit (NaN coefficients where not identified).
    """
    return fit_hazard(hazard_sample(dec, judgments, regimes), judgments, fixed_effects, n_boot,
                      seed)
