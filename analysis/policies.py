"""Offline stopping policies on recorded trajectories (SPEC §13.6; paper App. D.2, Table 17).

A policy that fires at a decision point is credited with the answer-now branch
replayed there and the tool calls made so far; when the episode ended before the
policy fired (the agent answered, or the budget ran out), it is credited with the
episode's own outcome and calls. Policies:

- ``cap c``: fires after the c-th observation (c = 1 … budget − 1);
- ``own k``: fires when the agent's own useless run (side-channel judgments,
  recorded or replayed) reaches k;
- ``own k or cap c``: whichever fires first;
- ``agent``: the episode as it ran.

Utility is success − λ · tool calls, λ ∈ LAMBDAS. The best policy is chosen per
group on the same data (exploratory, as in the paper); a policy needing a branch
that is not stored on some episode is not eligible (its episodes are counted in the
row's detail). Regret = best utility − the agent's, with a question-paired bootstrap
interval. "Would stopping have paid": at the first point where the own run reaches
five, the answer-now branch against what the agent went on to do (paired by
question).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.arms import Grouping
from analysis.branches import Branches, build_branches, first_true, question_means
from analysis.decisions import arm_groups
from analysis.rows import Table, interval_row, make_row
from analysis.stats import N_BOOT, cluster_mean, paired_difference
from core.conditions import LAMBDA

LAMBDAS = (0.0, 0.02, LAMBDA)
"""Prices per tool call the utility is reported at (paper Table 17)."""
STOP_RUN = 5
"""The own-useless run of "would stopping have paid" (paper App. D.2)."""


@dataclass(frozen=True)
class PolicyResult:
    """One policy on one group's episodes.

    Attributes:
        name: "cap 3", "own 5", "own 3 or cap 5" or "agent".
        correct: (E,) per-episode success under the policy.
        calls: (E,) per-episode tool calls.
        missing: episodes where it fired at a point with no stored branch.
        fired: (E,) whether it fired before the episode ended (None: the agent).
    """

    name: str
    correct: np.ndarray
    calls: np.ndarray
    missing: int
    fired: np.ndarray | None = None

    def utility(self, lam: float) -> np.ndarray:
        """Per-episode success − λ · calls."""
        return self.correct - lam * self.calls


def _fire(b: Branches, fire: np.ndarray, name: str) -> PolicyResult:
    rows = np.arange(len(fire))
    fired = fire >= 0
    idx = np.where(fired, fire, 0)
    branch = b.correct[rows, idx]
    correct = np.where(fired, branch, b.agent_correct)
    calls = np.where(fired, b.n_obs[rows, idx], b.agent_calls).astype(float)
    missing = int(np.sum(fired & np.isnan(branch)))
    return PolicyResult(name, np.nan_to_num(correct), calls, missing, fired)


def policies(b: Branches) -> Iterator[PolicyResult]:
    """Every simple policy on the episodes, then the agent as it ran.

    Args:
        b: the episodes' decision points and branches.

    Yields:
        PolicyResult per policy.
    """
    top = int(b.budget.max()) if len(b.budget) else 0
    caps = {c: first_true(b.valid & (b.n_obs >= c)) for c in range(1, top)}
    owns = {k: first_true(b.valid & (b.own_run >= k)) for k in range(1, top)}
    for c, fire in caps.items():
        yield _fire(b, fire, f"cap {c}")
    for k, fire in owns.items():
        yield _fire(b, fire, f"own {k}")
    for k, own in owns.items():
        for c, cap in caps.items():
            both = np.where((own >= 0) & ((cap < 0) | (own <= cap)), own, cap)
            yield _fire(b, both, f"own {k} or cap {c}")
    yield PolicyResult("agent", b.agent_correct.astype(float), b.agent_calls.astype(float), 0)


def recovered_policy(results: list[PolicyResult]) -> tuple[str, float] | None:
    """The simple policy that reproduces the agent as it ran (how a sim is recovered).

    A policy reproduces an episode when it gives the agent's own success and tool
    calls there; among those reproducing the most episodes, the one that does so by
    firing on the most (a rule that never fires reproduces whatever the agent did).

    Returns:
        (policy name, share of episodes it reproduces), or None without policies.
    """
    agent = results[-1]
    best: tuple[float, float, str] | None = None
    for r in results[:-1]:
        same = (r.calls == agent.calls) & (r.correct == agent.correct)
        fired = r.fired if r.fired is not None else np.zeros(len(same), dtype=bool)
        key = (float(np.mean(same)), float(np.mean(same & fired)), r.name)
        if best is None or key[:2] > best[:2]:
            best = key
    return None if best is None else (best[2], best[0])


def best_policy(results: list[PolicyResult], lam: float) -> PolicyResult | None:
    """The eligible policy (no missing branch, not the agent) with the highest mean utility.

    Ties go to the policy listed first (fewer knobs, smaller cap)."""
    eligible = [r for r in results if r.name != "agent" and r.missing == 0]
    if not eligible:
        return None
    means = [float(np.mean(r.utility(lam))) for r in eligible]
    return eligible[int(np.argmax(means))]


def stopping_paid(b: Branches, run: int = STOP_RUN) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray, np.ndarray]:
    """At the first point where the own run reaches `run`: branch vs continuing.

    Returns:
        (mask of episodes with such a point and a stored branch, answer-now success,
        the agent's own success, extra calls the agent made after that point), the
        last three over the masked episodes.
    """
    fire = first_true(b.valid & (b.own_run >= run))
    rows = np.arange(len(fire))
    idx = np.where(fire >= 0, fire, 0)
    branch = b.correct[rows, idx]
    mask = (fire >= 0) & ~np.isnan(branch)
    extra = b.agent_calls - b.n_obs[rows, idx]
    return mask, branch[mask], b.agent_correct[mask].astype(float), extra[mask]


def policy_table(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                 n_boot: int = N_BOOT, seed: int = 0, grouping: Grouping | None = None
                 ) -> Table:
    """The policies table: per group and λ, the best policy, the agent, regret, and
    every policy's success, calls and utility; plus "would stopping have paid".

    Args:
        episodes: error-free episode frame.
        steps: its steps (judgments merged with replayed ones).
        probes: the answer_now probes of these episodes.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: pooling and errored episodes.

    Returns:
        Table "policies" (long layout).
    """
    rows = []
    skipped = 0
    for arm, group in arm_groups(episodes, grouping):
        b = build_branches(group, steps, probes)
        if not b.has_branch.any():
            skipped += 1
            continue
        q = b.question_id
        results = list(policies(b))
        agent = results[-1]
        for lam in LAMBDAS:
            best = best_policy(results, lam)
            scope = f"λ={lam:g}"
            if best is None:
                rows.append(make_row(arm, "best_policy", scope, detail="no policy has every "
                                     "branch it needs; run lab replay answer-now --at every"))
                continue
            u_best = question_means(best.utility(lam), q)
            u_agent = question_means(agent.utility(lam), q)
            rows.append(interval_row(arm, "best_utility", cluster_mean(u_best, n_boot, seed),
                                     scope, detail=best.name))
            rows.append(interval_row(arm, "agent_utility", cluster_mean(u_agent, n_boot, seed),
                                     scope))
            rows.append(interval_row(arm, "regret", paired_difference(u_best, u_agent, n_boot,
                                                                      seed),
                                     scope, detail=f"{best.name} − agent", with_p=True))
        for r in results:
            detail = f"{r.missing} episodes lack the branch it needs" if r.missing else ""
            rows.append(make_row(arm, "success", r.name, float(np.mean(r.correct)), len(q),
                                 "episodes", detail))
            rows.append(make_row(arm, "calls", r.name, float(np.mean(r.calls)), len(q),
                                 "episodes", detail))
            for lam in LAMBDAS:
                rows.append(make_row(arm, "utility", f"{r.name} @ λ={lam:g}",
                                     float(np.mean(r.utility(lam))), len(q), "episodes",
                                     detail))
        mask, now, cont, extra = stopping_paid(b)
        if mask.any():
            qm = q[mask]
            diff = paired_difference(question_means(now, qm), question_means(cont, qm),
                                     n_boot, seed)
            rows.append(interval_row(
                arm, "stop_paid", diff, f"own {STOP_RUN}: answer now − continue",
                detail=(f"answer now {now.mean():.3f} vs continue {cont.mean():.3f}; n="
                        f"{int(mask.sum())} decisions; answering better on "
                        f"{int(np.sum(now > cont))}, continuing on {int(np.sum(cont > now))}; "
                        f"continuing spent {extra.mean():.1f} more calls"), with_p=True))
    notes = ["Exploratory (paper App. D.2): a policy that fires at a decision point is "
             "credited with the answer-now branch there; an episode that ended first keeps "
             "its own outcome. Utility = success − λ·tool calls; the best policy is chosen "
             "on the same data; regret = best − agent (question-paired bootstrap).",
             f"stop_paid: at the first point where the agent's own judgments (recorded or "
             f"replayed) reach {STOP_RUN} USELESS in a row."]
    if skipped:
        notes.append(f"{skipped} groups have no answer-now branches (lab replay answer-now "
                     f"--run R) and are left out.")
    return Table("policies", "Offline stopping policies (matched replay of answer-now "
                 "branches)", tuple(rows), tuple(notes),
                 pooled=(grouping or Grouping()).pooled)
