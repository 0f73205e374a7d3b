"""Offline stopping policies on recorded trajectories (the main paper, App. D.2,
Table 17).

A policy that fires at a decision point is credited with the answer-now branch
replayed there and the tool calls made so far; when the episode ended before the
policy fired (the agent answered, or the budget ran out), it is credited with the
episode's own outcome and calls. Policies:

- ``cap c``: fires after the c-th observation (c = 1 … budget − 1);
- ``own k``: fires when the agent's own useless run (side-channel judgments,
  recorded or replayed) reaches k;
- ``own k or cap c``: whichever fires first;
- ``agent``: the episode as it ran.

Utility is success − λ · tool calls, λ ∈ LAMBDAS (judgment calls and other extra
calls are not charged, as in the paper's Table 17). An estimate over several regimes
is the equal-weight mean of the regimes' values (`analysis.replay.branches.RegimeCells`),
never one mean over their pooled episodes. A policy needing a branch that is not
stored on some episode is not eligible; ties go to the policy listed first.

The table has two scopes (`policy_table`):

- **best on unaided** (paper Table 17): per model and λ, every policy is evaluated
  on the unaided (``none``) runs in mean4 (MEAN4: clean, persistent, plausible,
  recover_after_2, the regimes with answer-now branches), the best is chosen there
  (exploratory: on the same data), and each arm's regret is that policy's utility
  minus the arm's own runs' utility over the same regimes, paired by question
  (negative: the arm does better). "Would stopping have paid" (stop_paid): at the
  first point of each unaided run where its own run reaches five, the answer-now
  branch against what the agent went on to do, a mean over those decisions.
- **best on own branches**: each arm's best policy on its own branches, its regret
  against the agent as it ran, every policy's success, calls and utility, and
  stop_paid, per regime family (the main regimes are never averaged with plausible).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping
from analysis.base.rows import Row, Table, interval_row, make_row, with_holm
from analysis.measures.decisions import arm_groups
from analysis.measures.success import QuestionMatrix
from analysis.replay.branches import (
    Branches,
    BranchPoints,
    RegimeCells,
    build_branches,
    first_true,
    own_runs_matrix,
    paired_regime_differences,
    regime_cells,
)
from analysis.stats.bootstrap import N_BOOT, bootstrap_intervals
from core.conditions import LAMBDA

LAMBDAS = (0.0, 0.02, LAMBDA)
"""Prices per tool call the utility is reported at (paper Table 17)."""
STOP_RUN = 5
"""The own-useless run of "would stopping have paid" (paper App. D.2)."""
MEAN4 = ("clean", "persistent", "plausible", "recover_after_2")
"""The regimes the paper's Table 17 averages: those with answer-now branches (mean4)."""
UNAIDED = "none"
"""The arm whose runs the best policy is chosen on (paper Table 17: the unaided runs)."""


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


@dataclass(frozen=True)
class GroupPolicies:
    """Every policy on one group's episodes in its regimes with answer-now branches.

    Attributes:
        branches: the episodes' decision points (only regimes with a branch).
        cells: their question × regime grid.
        results: `policies` of the branches, the agent last.
        success: (policies,) success, the equal-weight mean over the regimes.
        calls: (policies,) tool calls, averaged the same way.
    """

    branches: Branches
    cells: RegimeCells
    results: tuple[PolicyResult, ...]
    success: np.ndarray
    calls: np.ndarray

    @property
    def regimes(self) -> tuple[str, ...]:
        """The regimes averaged."""
        return self.cells.regimes

    def utility(self, lam: float) -> np.ndarray:
        """(policies,) success − λ · calls, averaged over the regimes."""
        return self.success - lam * self.calls

    def best(self, lam: float) -> int | None:
        """Index of the eligible policy (every branch it needs stored, not the agent) with
        the highest utility; ties go to the one listed first; None when none is eligible."""
        ok = np.array([r.name != "agent" and r.missing == 0 for r in self.results])
        if not ok.any():
            return None
        return int(np.argmax(np.where(ok, self.utility(lam), -np.inf)))

    def matrix(self, i: int, lam: float) -> QuestionMatrix:
        """Policy i's utility per question and regime (for the question bootstrap)."""
        return self.cells.matrix(self.results[i].utility(lam))


def group_policies(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                   points: BranchPoints | None = None) -> GroupPolicies | None:
    """Every policy on one group's episodes, in the group's regimes that have branches.

    A regime where no episode has an answer-now branch is left out: there every
    policy would lack the branches it needs.

    Args:
        episodes: one group's error-free episodes.
        steps: their steps (judgments merged with replayed ones).
        probes: their answer_now probes.
        points: steps and probes prepared once for every group of a table.

    Returns:
        The GroupPolicies, or None when no episode has a branch.
    """
    b = build_branches(episodes, steps, probes, points=points)
    regime = episodes["regime"].astype(str).to_numpy()
    keep = pd.Series(regime).isin(pd.unique(regime[b.has_branch.any(axis=1)])).to_numpy()
    if not keep.any():
        return None
    b = b.take(keep)
    cells = regime_cells(b.question_id, regime[keep])
    results = tuple(policies(b))
    means = cells.average(np.stack([r.correct for r in results] + [r.calls for r in results]))
    return GroupPolicies(b, cells, results, means[:len(results)], means[len(results):])


def _stop_paid_row(arm: ArmKey, gp: GroupPolicies, scope: str, n_boot: int,
                   seed: int) -> Row | None:
    """stop_paid: answer now − continue, a mean over the decisions (the paper's n),
    with a question-cluster interval; None when no run reaches the point."""
    mask, now, cont, extra = stopping_paid(gp.branches)
    if not mask.any():
        return None
    names, idx = np.unique(gp.branches.question_id[mask].astype(str), return_inverse=True)
    diff = np.bincount(idx, weights=now - cont, minlength=len(names))
    count = np.bincount(idx, minlength=len(names)).astype(float)
    iv = bootstrap_intervals(lambda w: (w @ diff) / (w @ count), len(names), n_boot, seed,
                             with_p=True)[0]
    return interval_row(
        arm, "stop_paid", iv, scope, regimes=gp.regimes, with_p=True,
        detail=(f"answer now {now.mean():.3f} vs continue {cont.mean():.3f}; n="
                f"{int(mask.sum())} decisions; answering better on {int(np.sum(now > cont))}, "
                f"continuing on {int(np.sum(cont > now))}; continuing spent "
                f"{extra.mean():.1f} more calls"))


def unaided_rows(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                 n_boot: int = N_BOOT, seed: int = 0, grouping: Grouping | None = None,
                 reference: str = UNAIDED, regimes: Sequence[str] = MEAN4,
                 points: BranchPoints | None = None) -> tuple[list[Row], list[str]]:
    """Table 17: the best policy on the unaided runs and every arm's regret against it.

    Per group of the `reference` arm (model × budget × dataset × set × run × seed ×
    replicate) and λ: the best policy on its episodes in `regimes` (those with
    branches), its utility, and for every arm of the same model, budget, dataset,
    set, run, seed and replicate (the reference included) the regret: that utility
    minus the arm's own runs' utility over the same regimes, paired by question. Then
    stop_paid on the reference runs.

    Args:
        episodes: error-free episode frame.
        steps: its steps (judgments merged with replayed ones).
        probes: the answer_now probes of these episodes.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: pooling and errored episodes.
        reference: the arm label the best policy is chosen on ("none": unaided).
        regimes: the regimes averaged (default MEAN4, the paper's).
        points: steps and probes prepared once for every group (`BranchPoints`).

    Returns:
        (rows, notes on the groups left out).
    """
    sel = episodes.loc[episodes["regime"].astype(str).isin(regimes)]
    groups = list(arm_groups(sel, grouping))
    rows: list[Row] = []
    bare = 0
    unpaired = {k.pair_key() for k, _ in groups} - {k.pair_key() for k, _ in groups
                                                     if k.is_arm(reference)}
    for ref, frame in ((k, f) for k, f in groups if k.is_arm(reference)):
        gp = group_policies(frame, steps, probes, points)
        if gp is None:
            bare += 1
            continue
        members = [(ref, frame)] + [(k, f) for k, f in groups
                                    if k.pair_key() == ref.pair_key() and not k.is_arm(reference)]
        chosen = {lam: best for lam in LAMBDAS if (best := gp.best(lam)) is not None}
        m_best = [gp.matrix(best, lam) for lam, best in chosen.items()]
        by_lam: dict[float, list[Row]] = {lam: [] for lam in LAMBDAS}
        for arm, group in members:
            if not chosen:
                break
            own = [own_runs_matrix(group, gp.regimes, lam) for lam in chosen]
            best_iv, own_iv, regret, covered = paired_regime_differences(m_best, own, n_boot,
                                                                         seed)
            for k, (lam, best) in enumerate(chosen.items()):
                scope, name = f"λ={lam:g} · best on {reference}", gp.results[best].name
                if arm == ref:  # on all of the reference's questions
                    by_lam[lam].append(interval_row(ref, "best_utility", best_iv[k], scope,
                                                    detail=name, regimes=gp.regimes))
                by_lam[lam].append(interval_row(
                    arm, "regret", regret[k], scope, with_p=True, regimes=covered,
                    detail=(f"{name} on {reference} {best_iv[k].estimate:.3f} − own runs "
                            f"{own_iv[k].estimate:.3f}")))
        for lam in LAMBDAS:
            rows.extend(by_lam[lam] if lam in chosen else [
                _no_best_row(ref, f"λ={lam:g} · best on {reference}", gp.regimes)])
        paid = _stop_paid_row(ref, gp, f"own {STOP_RUN}: answer now − continue · {reference}",
                              n_boot, seed)
        rows.extend([paid] if paid else [])
    notes = []
    if bare:
        notes.append(f"{bare} '{reference}' groups have no answer-now branches in "
                     f"{', '.join(regimes)} (lab replay answer-now --run R --at every): no "
                     "best policy or regret for them.")
    if unpaired:
        notes.append(f"{len(unpaired)} model × budget × dataset × set × run × seed × replicate "
                     f"groups have no '{reference}' runs to choose the best policy on; their "
                     f"arms get no regret (`--pool` merges runs or seeds).")
    return rows, notes


def _no_best_row(arm: ArmKey, scope: str, regimes: Sequence[str]) -> Row:
    return make_row(arm, "best_utility", scope, regimes=regimes, detail=(
        "no policy has every branch it needs; run lab replay answer-now --at every"))


def own_rows(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
             n_boot: int = N_BOOT, seed: int = 0, grouping: Grouping | None = None,
             points: BranchPoints | None = None) -> tuple[list[Row], int]:
    """Each arm's best policy on its own branches, per regime family.

    Args:
        episodes: error-free episode frame.
        steps: its steps.
        probes: answer_now probes of these episodes.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: pooling and errored episodes.
        points: steps and probes prepared once for every group (`BranchPoints`).

    Returns:
        (rows, groups left out for want of branches).
    """
    rows: list[Row] = []
    skipped = 0
    for arm, group in arm_groups(episodes, grouping, families=True):
        gp = group_policies(group, steps, probes, points)
        if gp is None:
            skipped += 1
            continue
        covers = gp.regimes
        agent = len(gp.results) - 1
        chosen = {lam: best for lam in LAMBDAS if (best := gp.best(lam)) is not None}
        m_best = [gp.matrix(best, lam) for lam, best in chosen.items()]
        m_agent = [gp.matrix(agent, lam) for lam in chosen]
        best_iv, agent_iv, regret, _ = (paired_regime_differences(m_best, m_agent, n_boot, seed)
                                        if chosen else ([], [], [], ()))
        for lam in LAMBDAS:
            scope = f"λ={lam:g} · best on own branches"
            if lam not in chosen:
                rows.append(_no_best_row(arm, scope, covers))
                continue
            k, name = list(chosen).index(lam), gp.results[chosen[lam]].name
            rows.append(interval_row(arm, "best_utility", best_iv[k], scope, detail=name,
                                     regimes=covers))
            rows.append(interval_row(arm, "agent_utility", agent_iv[k], scope,
                                     regimes=covers))
            rows.append(interval_row(arm, "regret", regret[k], scope, detail=f"{name} − agent",
                                     with_p=True, regimes=covers))
        n = len(gp.branches.episode_id)
        for i, r in enumerate(gp.results):
            detail = f"{r.missing} episodes lack the branch it needs" if r.missing else ""
            rows.append(make_row(arm, "success", r.name, float(gp.success[i]), n, "episodes",
                                 detail, regimes=covers))
            rows.append(make_row(arm, "calls", r.name, float(gp.calls[i]), n, "episodes",
                                 detail, regimes=covers))
            for lam in LAMBDAS:
                rows.append(make_row(arm, "utility", f"{r.name} @ λ={lam:g}",
                                     float(gp.utility(lam)[i]), n, "episodes", detail,
                                     regimes=covers))
        paid = _stop_paid_row(arm, gp, f"own {STOP_RUN}: answer now − continue", n_boot, seed)
        rows.extend([paid] if paid else [])
    return rows, skipped


def policy_table(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                 n_boot: int = N_BOOT, seed: int = 0, grouping: Grouping | None = None,
                 reference: str = UNAIDED, regimes: Sequence[str] = MEAN4) -> Table:
    """The policies table: Table 17 (best on the unaided runs, every arm's regret), then
    each arm's best policy on its own branches (see the module docstring).

    Args:
        episodes: error-free episode frame.
        steps: its steps (judgments merged with replayed ones).
        probes: the answer_now probes of these episodes.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: pooling and errored episodes.
        reference: the arm the Table 17 scope chooses the best policy on (default
            "none", the paper's unaided runs).
        regimes: the regimes the Table 17 scope averages (default MEAN4, the paper's).

    Returns:
        Table "policies" (long layout).
    """
    points = BranchPoints(steps, probes)  # read per group, prepared once
    table17, notes = unaided_rows(episodes, steps, probes, n_boot, seed, grouping, reference,
                                  regimes, points)
    own, skipped = own_rows(episodes, steps, probes, n_boot, seed, grouping, points)
    averaged = ", ".join(regimes)
    notes = [f"Exploratory (paper App. D.2). 'best on {reference}' (Table 17): every policy is "
             f"evaluated on the {reference} runs in {averaged} (those with answer-now "
             "branches), each regime's value the mean over its questions and the estimate "
             "their equal-weight mean, as the paper's mean4 (which averages the main regimes "
             "with plausible); the best policy per λ is chosen on the same data; regret = "
             f"its utility − the arm's own runs' utility over the same regimes, paired by "
             "question (negative: the arm does better).",
             "'best on own branches': each arm's best policy on its own branches, per regime "
             "family (the main regimes and plausible are never averaged together); regret = "
             "best − the agent as it ran.",
             "A policy that fires is credited with the answer-now branch there; an episode "
             "that ended first keeps its own outcome. Utility = success − λ·tool calls "
             "(judgment calls not charged); a policy lacking a branch it needs is not "
             "eligible.",
             f"stop_paid: at the first point where the agent's own judgments (recorded or "
             f"replayed) reach {STOP_RUN} USELESS in a row, the branch − the agent's own "
             "success, a mean over those decisions (question-cluster bootstrap).", *notes]
    if skipped:
        notes.append(f"{skipped} groups have no answer-now branches (lab replay answer-now "
                     f"--run R) and are left out.")
    return Table("policies", "Offline stopping policies (matched replay of answer-now "
                 "branches; Table 17)", with_holm([*table17, *own]), tuple(notes),
                 pooled=(grouping or Grouping()).pooled)
