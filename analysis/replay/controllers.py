"""Confidence-gated controllers on matched answer states (issue 12; matched-trajectory replay).

Every controller walks the same recorded decision points of each episode (the same
trajectory prefix, evidence and budget for all of them) and reads the verbalized
confidence of the answer-now branch stored there:

- commit when confidence ≥ τ_hi (credited with that branch's answer),
- abstain when confidence ≤ τ_lo,
- otherwise retrieve (go on to the next recorded decision point); a missing
  confidence also retrieves;
- escalate when the recorded trajectory has no further decision point (budget spent
  or the agent stopped).

It runs on raw confidence and on isotonic-calibrated confidence. The isotonic map
is fitted on a calibration split of questions and everything is evaluated on the
disjoint rest (never in-sample). Reported per group: success, coverage, accuracy of
committed answers, abstain and escalate rates, tool calls, utility at the λ grid,
TPC (over-searching §3.2: Σ cost / Σ correct with cost = output + 0.25·input tokens
of the answer state + 500·tool calls), abstention accuracy (share of abstentions
where committing would have been wrong), ECE (10 equal-width bins) overall and by
depth t (observations seen), and AURC of the risk–coverage curve over all matched
answer states.

Groups split by regime family (the main regimes never pool with plausible); within a
family a group's estimates pool its regimes that have answer-now branches with a
stated confidence, and every row lists those regimes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.measures.arms import Grouping, regime_order
from analysis.replay.branches import Branches, build_branches, question_means
from analysis.replay.calibration import (RiskCoverage, calibration_split, ece, fit_isotonic,
                                  risk_coverage)
from analysis.measures.decisions import arm_groups
from analysis.replay.policies import LAMBDAS
from analysis.tables.rows import Table, interval_row, make_row, with_holm
from analysis.stats.bootstrap import N_BOOT, cluster_mean, paired_difference

TAU_HI = 0.8
TAU_LO = 0.2
SEARCH_COST = 500.0
"""TPC's cost of one tool call in tokens (over-searching §3.2, μ = 500)."""


@dataclass(frozen=True)
class ControllerOutcome:
    """Per-episode result of one controller.

    Attributes:
        action: "commit", "abstain" or "escalate" per episode.
        correct: 1 when it committed a correct answer.
        calls: tool calls made before it acted.
        cost: TPC cost of the answer state it acted on plus 500 per call.
        abstained_wrong: 1 where it abstained and the branch there was wrong.
    """

    action: np.ndarray
    correct: np.ndarray
    calls: np.ndarray
    cost: np.ndarray
    abstained_wrong: np.ndarray


def run_controller(b: Branches, confidence: np.ndarray, tau_hi: float = TAU_HI,
                   tau_lo: float = TAU_LO) -> ControllerOutcome:
    """Replay the controller on every episode's recorded decision points.

    Args:
        b: the episodes' decision points and branches.
        confidence: (E, P) the confidence it reads (raw or calibrated).
        tau_hi: commit threshold.
        tau_lo: abstain threshold.

    Returns:
        The per-episode outcome.
    """
    usable = b.has_branch & ~np.isnan(confidence)
    conf = np.where(usable, confidence, 0.5 * (tau_hi + tau_lo))
    commit = usable & (conf >= tau_hi)
    abstain = usable & (conf <= tau_lo) & ~commit
    acts = commit | abstain
    first = np.where(acts.any(axis=1), acts.argmax(axis=1), -1)
    last = np.where(b.valid.any(axis=1), b.valid.shape[1] - 1 - b.valid[:, ::-1].argmax(axis=1),
                    0)
    rows = np.arange(len(first))
    at = np.where(first >= 0, first, last)
    committed = (first >= 0) & commit[rows, np.maximum(first, 0)]
    abstained = (first >= 0) & ~committed
    branch = np.nan_to_num(b.correct[rows, at])
    action = np.where(committed, "commit", np.where(abstained, "abstain", "escalate"))
    calls = b.n_obs[rows, at].astype(float)
    cost = np.nan_to_num(b.cost[rows, at]) + SEARCH_COST * calls
    return ControllerOutcome(action, np.where(committed, branch, 0.0), calls, cost,
                             np.where(abstained, 1.0 - branch, 0.0))


def _with_confidence(group: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame
                     ) -> tuple[Branches, tuple[str, ...]]:
    """The group's branches in its regimes with a stated-confidence branch, and those
    regimes (none: the group is left out)."""
    b = build_branches(group, steps, probes)
    regime = group["regime"].astype(str).to_numpy()
    stated = (b.has_branch & ~np.isnan(b.confidence)).any(axis=1)
    keep = pd.Series(regime).isin(pd.unique(regime[stated])).to_numpy()
    return b.take(keep), regime_order(regime[keep])


def _depth_ece(b: Branches, confidence: np.ndarray) -> dict[int, tuple[float, int]]:
    mask = b.has_branch & ~np.isnan(confidence)
    out = {}
    for depth in np.unique(b.n_obs[mask]):
        sel = mask & (b.n_obs == depth)
        out[int(depth)] = (ece(confidence[sel], b.correct[sel]), int(sel.sum()))
    return out


def controller_table(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                     n_boot: int = N_BOOT, seed: int = 0, grouping: Grouping | None = None,
                     tau_hi: float = TAU_HI, tau_lo: float = TAU_LO, split_seed: int = 0
                     ) -> Table:
    """The controllers table (raw and isotonic-calibrated confidence) per group.

    Args:
        episodes: error-free episode frame.
        steps: its steps.
        probes: answer_now probes of these episodes.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: pooling and errored episodes.
        tau_hi: commit threshold.
        tau_lo: abstain threshold.
        split_seed: seed of the calibration/evaluation split of questions.

    Returns:
        Table "controllers" (long layout).
    """
    rows = []
    skipped = 0
    for arm, group in arm_groups(episodes, grouping, families=True):
        b, covers = _with_confidence(group, steps, probes)
        if not covers:
            skipped += 1
            continue
        cal = calibration_split(b.question_id, seed=split_seed)
        fit, ev = b.take(cal), b.take(~cal)
        fit_mask = fit.has_branch & ~np.isnan(fit.confidence)
        iso = fit_isotonic(fit.confidence[fit_mask], fit.correct[fit_mask])
        if not len(ev.episode_id) or not fit_mask.any():
            rows.append(make_row(arm, "controller", "", regimes=covers, detail="too few "
                                 "questions to split into calibration and evaluation sets"))
            continue
        split = (f"isotonic fitted on {len(np.unique(fit.question_id))} questions, evaluated "
                 f"on {len(np.unique(ev.question_id))} others")
        confs = {"raw": ev.confidence, "isotonic": iso.predict(ev.confidence)}
        q = ev.question_id
        per_q = {}
        for name, conf in confs.items():
            out = run_controller(ev, conf, tau_hi, tau_lo)
            n = len(out.action)
            per_q[name] = question_means(out.correct, q)
            rows.append(interval_row(arm, "success", cluster_mean(per_q[name], n_boot, seed),
                                     name, detail=f"τ_hi={tau_hi:g}, τ_lo={tau_lo:g}; {split}",
                                     regimes=covers))
            committed = out.action == "commit"
            abstained = out.action == "abstain"
            for measure, value, size in (
                    ("coverage", committed.mean(), n),
                    ("committed_accuracy", out.correct[committed].mean() if committed.any()
                     else np.nan, int(committed.sum())),
                    ("abstain", abstained.mean(), n),
                    ("escalate", (out.action == "escalate").mean(), n),
                    ("calls", out.calls.mean(), n),
                    ("abstention_accuracy", out.abstained_wrong[abstained].mean()
                     if abstained.any() else np.nan, int(abstained.sum())),
                    ("tpc", out.cost.sum() / out.correct.sum() if out.correct.sum()
                     else np.inf, n)):
                rows.append(make_row(arm, measure, name, float(value), size, "episodes",
                                     regimes=covers))
            for lam in LAMBDAS:
                rows.append(make_row(arm, "utility", f"{name} @ λ={lam:g}",
                                     float(np.mean(out.correct - lam * out.calls)), n,
                                     "episodes", regimes=covers))
            mask = ev.has_branch & ~np.isnan(conf)
            rows.append(make_row(arm, "ece", name, ece(conf[mask], ev.correct[mask]),
                                 int(mask.sum()), "answer states", detail="10 equal-width bins",
                                 regimes=covers))
            for depth, (value, size) in _depth_ece(ev, conf).items():
                rows.append(make_row(arm, "ece", f"{name}, t={depth}", value, size,
                                     "answer states", regimes=covers))
            rc = risk_coverage(conf[mask], ev.correct[mask])
            rows.append(make_row(arm, "aurc", name, rc.aurc, int(mask.sum()), "answer states",
                                 detail="matched answer states, all depths", regimes=covers))
        rows.append(interval_row(arm, "success_diff", paired_difference(
            per_q["isotonic"], per_q["raw"], n_boot, seed), "isotonic − raw", with_p=True,
            regimes=covers))
    notes = [f"Commit at confidence ≥ {tau_hi:g}, abstain ≤ {tau_lo:g}, else retrieve; escalate "
             "when the recorded trajectory has no further decision point. Every controller "
             "reads the same answer states (matched trajectory replay).",
             "Isotonic calibration is fitted on a calibration split of questions and "
             "evaluated on the disjoint rest; ECE uses 10 equal-width bins (by depth t = "
             "observations seen); TPC = Σ(output + 0.25·input tokens + 500·calls) / Σ correct.",
             "One row group per regime family (the main regimes never pool with plausible), "
             "over its regimes with answer-now branches (regimes column)."]
    if skipped:
        notes.append(f"{skipped} groups have no answer-now branches with a stated confidence "
                     f"(lab replay answer-now --run R) and are left out.")
    return Table("controllers", "Confidence-gated controllers (commit / retrieve / abstain / "
                 "escalate) on raw and isotonic-calibrated confidence", with_holm(rows),
                 tuple(notes), pooled=(grouping or Grouping()).pooled)


def chart_curves(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                 grouping: Grouping | None = None, bins: int = 10
                 ) -> list[tuple[str, RiskCoverage, np.ndarray, np.ndarray]]:
    """Per group, what the risk–coverage and reliability charts draw (raw confidence).

    Args:
        episodes: error-free episode frame.
        steps: its steps.
        probes: answer_now probes of these episodes.
        grouping: pooling and errored episodes.
        bins: equal-width confidence bins of the reliability diagram.

    Returns:
        (group label "model arm", plus the regime family when several are shown;
        risk–coverage over every answer state with a stated confidence; mean confidence
        per non-empty bin; accuracy per non-empty bin).
    """
    out = []
    groups = list(arm_groups(episodes, grouping, families=True))
    split = len({arm.family for arm, _ in groups}) > 1
    for arm, group in groups:
        b, _ = _with_confidence(group, steps, probes)
        mask = b.has_branch & ~np.isnan(b.confidence)
        if not mask.any():
            continue
        conf, correct = b.confidence[mask], b.correct[mask]
        edges = np.minimum((conf * bins).astype(int), bins - 1)
        used = np.unique(edges)
        mean_conf = np.array([conf[edges == i].mean() for i in used])
        accuracy = np.array([correct[edges == i].mean() for i in used])
        label = f"{arm.model} {arm.arm}" + (f" {arm.family}" if split else "")
        out.append((label, risk_coverage(conf, correct), mean_conf, accuracy))
    return out
