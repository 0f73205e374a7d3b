"""Per-arm references of the measures the library computes for every group at once:
stopping and cost, judgment rates, the hazard curve, the hazard LPM's sample and fit,
and each group's hazard sample as a frame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.measures.cost import (
    JudgmentRates,
    Rate,
    StoppingCost,
    _cost_frame,
    _rate,
    _stopping_costs,
)
from analysis.measures.decisions import judgment_columns
from analysis.measures.dissociation import DISSOCIATION_RUN, dissociation
from analysis.measures.failure_rows import FailureRows, _sample_rows
from analysis.measures.hazard import MAX_J, failure_decisions
from analysis.measures.hazard_sample import after_useless
from analysis.measures.success import question_matrix
from analysis.stats.bootstrap import (
    N_BOOT,
    Interval,
    bootstrap_intervals,
    cluster_sums,
    safe_ratio,
)
from analysis.stats.codes import codes
from analysis.stats.lpm import HAZARD_BOOT, HazardFit
from core.conditions import LAMBDA
from core.regimes import FAILURE_REGIMES
from tests.oracles.stats import fit_hazard


def stopping_cost(episodes: pd.DataFrame, lam: float = LAMBDA, n_boot: int = N_BOOT,
                  seed: int = 0) -> StoppingCost:
    """Stopping and cost measures of one arm.

    Args:
        episodes: error-free episodes of one arm.
        lam: price per call in units of a correct answer.
        n_boot: question-level resamples for success and utility.
        seed: bootstrap seed.

    Returns:
        The StoppingCost.
    """
    frame, values = _cost_frame(episodes, lam)
    mats = tuple(question_matrix(episodes, v) for v in values)
    return _stopping_costs(frame, np.array([0, len(frame)]), [mats], lam, n_boot, seed)[0]


def judgment_rates(steps: pd.DataFrame, decisions: pd.DataFrame) -> JudgmentRates:
    """Judgment rates and the dissociation count of one arm.

    First vs repeat needs the step frame's ``obs_ref`` column (the page shown); without
    it those four rates are 0 of 0 (undefined).

    Args:
        steps: steps of one arm's error-free episodes.
        decisions: decision table rows of the same arm.

    Returns:
        The JudgmentRates.
    """
    obs = steps.loc[steps["obs_index"].notna()]
    judged = obs["judgment"].notna()
    useless = obs["judgment"] == "USELESS"
    failed = obs["obs_failed"].fillna(0).astype(bool)
    real_search = judged & ~failed & (obs["action"] == "search")
    if "obs_ref" in obs:
        ref = obs["obs_ref"]
        repeat = ref.notna() & obs.assign(_r=ref).duplicated(["episode_id", "_r"])
    else:
        repeat = pd.Series(False, index=obs.index)
        real_search = real_search & False
    useful = obs["judgment"] == "USEFUL"
    gold, distractor = obs["obs_source"] == "gold", obs["obs_source"] == "distractor"
    stated = obs["stated_judgment"].notna()
    own = dissociation(decisions, "side_channel", DISSOCIATION_RUN)
    said = dissociation(decisions, "stated", DISSOCIATION_RUN)
    return JudgmentRates(
        _rate(judged & failed, useless), _rate(judged & ~failed, useless),
        _rate(real_search & gold & ~repeat, useful), _rate(real_search & gold & repeat, useful),
        _rate(real_search & distractor & ~repeat, useful),
        _rate(real_search & distractor & repeat, useful),
        _rate(stated & failed, obs["stated_judgment"] == "useless"),
        Rate(own.answered, own.questions), Rate(said.answered, said.questions))


@dataclass(frozen=True)
class HazardCurve:
    """P(answer) by consecutive failed observations j = 0 … MAX_J.

    Attributes:
        points: one Interval per j (NaN where no decision has that j).
        counts: decisions per j.
    """

    points: tuple[Interval, ...]
    counts: tuple[int, ...]


def hazard_curve(dec: pd.DataFrame, max_j: int = MAX_J, n_boot: int = N_BOOT,
                 seed: int = 0, regimes: Sequence[str] = FAILURE_REGIMES) -> HazardCurve:
    """P(answer) after j consecutive failed observations, j = 0 … max_j.

    Args:
        dec: decision table rows of one arm.
        max_j: largest j reported (larger runs are left out).
        n_boot: resamples.
        seed: bootstrap seed.
        regimes: the failure regimes pooled (`failure_decisions`).

    Returns:
        The curve with intervals and counts.
    """
    return _curve_of(failure_decisions(dec, regimes), max_j, n_boot, seed)


def _curve_of(d: pd.DataFrame, max_j: int, n_boot: int, seed: int) -> HazardCurve:
    """`hazard_curve` on the decisions `failure_decisions` kept."""
    d = d.loc[d["design_run"] <= max_j]
    q, _ = codes(d["question_id"])
    y = d["answer"].to_numpy()
    sums = cluster_sums(q, d["design_run"].to_numpy(), np.column_stack([np.ones_like(y), y]),
                        int(q.max()) + 1 if q.size else 0, max_j + 1)
    flat = sums.reshape(sums.shape[0], -1)

    def stat(w: np.ndarray) -> np.ndarray:
        c = (w @ flat).reshape(w.shape[0], max_j + 1, 2)
        return safe_ratio(c[..., 1], c[..., 0])

    points = bootstrap_intervals(stat, sums.shape[0], n_boot, seed)
    counts = tuple(int(x) for x in sums[..., 0].sum(axis=0))
    return HazardCurve(points, counts)


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


def group_samples(decisions: pd.DataFrame, fr: FailureRows, judgments: str
                  ) -> list[tuple[pd.DataFrame, bytes]]:
    """`hazard_sample` of every group at once, from one
    frame, each with its content as bytes (two groups' samples are equal exactly when
    their bytes are, so a model fitted on one serves the other).

    Args:
        decisions: the decision table.
        fr: its failure rows.
        judgments: "side_channel" or "stated".

    Returns:
        One (sample, content) per group of `fr.keys`.
    """
    rows, bounds = _sample_rows(decisions, fr, judgments)
    frame = sample_frame(decisions, rows, judgments)
    content = np.column_stack([
        pd.factorize(col)[0] if col.dtype == object or isinstance(col.dtype, pd.StringDtype)
        else col.to_numpy(dtype=float) for _, col in frame.items()]).astype(float)
    return [(frame.iloc[bounds[g]:bounds[g + 1]].reset_index(drop=True),
             content[bounds[g]:bounds[g + 1]].tobytes()) for g in range(len(fr.keys))]


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
