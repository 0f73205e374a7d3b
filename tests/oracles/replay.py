"""References for the answer-now policies and the trace study's split."""

from __future__ import annotations

import numpy as np

from analysis.replay.policies import PolicyResult
from analysis.replay.traces import CAL_SHARE


def best_policy(results: list[PolicyResult], lam: float) -> PolicyResult | None:
    """The eligible policy (no missing branch, not the agent) with the highest mean utility.

    Ties go to the policy listed first (fewer knobs, smaller cap)."""
    eligible = [r for r in results if r.name != "agent" and r.missing == 0]
    if not eligible:
        return None
    means = [float(np.mean(r.utility(lam))) for r in eligible]
    return eligible[int(np.argmax(means))]


def source_order_counts(n: int, share: float = CAL_SHARE) -> tuple[int, int]:
    """The seed's own split sizes (App. A.4: by source order, the first ⌊share·n⌋
    calibration, the rest test), for comparing split sizes with its Table 5."""
    n_cal = int(np.floor(share * n + 1e-9))
    return n_cal, n - n_cal


