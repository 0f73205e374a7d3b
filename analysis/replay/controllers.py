"""Confidence-gated controllers on matched answer states: the second seed's π (its Eq. 1).

Every controller here, on the seed's depth-0…3 traces (`analysis.replay.trace_tables`)
and on the answer-now branches of ReAct trajectories (this module), is the same π:
with confidence κ at the current state and remaining retrieval budget b,

- commit when κ ≥ τ_hi (credited with that state's answer),
- retrieve when κ < τ_hi and b > 0 (go on to the next state),
- abstain when κ ≤ τ_lo and b = 0,
- escalate otherwise (τ_lo < κ < τ_hi at b = 0).

Defaults (τ_lo, τ_hi) = (0.3, 0.7) and at most 3 retrievals (`Gate`); every row says
which were used. A missing confidence is never a number: it retrieves while budget
remains and escalates at b = 0. On ReAct branches a trajectory's next recorded
decision point is the "retrieval", and the budget at a point is the smaller of the
retrievals left and the recorded points left after it (a trajectory that ends spends
its budget).

It runs on raw confidence and on isotonic-calibrated confidence. The isotonic map is
fitted on the depth-zero records (here: each episode's first decision point; `--fit-depths
all` for every point) of a calibration split of questions, frozen, and everything is
evaluated on the disjoint rest (never in-sample). Reported per group: success,
coverage, accuracy of committed answers, abstain and escalate rates, tool calls,
utility at the λ grid, TPC (over-searching §3.2: Σ cost / Σ correct with cost =
output + 0.25·input tokens of the answer state + 500·tool calls), abstention accuracy
(share of abstentions where committing would have been wrong), ECE (10 equal-width
bins) overall and by depth t (observations seen), and AURC of the risk–coverage
curve over all matched answer states.

Groups split by regime family (the main regimes never pool with plausible); within a
family a group's estimates pool its regimes that have answer-now branches with a
stated confidence, and every row lists those regimes.

Which branches: where a group has branches asked with the confidence request (`lab
replay answer-now --confidence`, kind ``answer_now_confidence``) the controllers read
those and only those; otherwise the main paper's branches, which carry a confidence
only where the model wrote one unasked. The two are never mixed within a group, and
the table says which each group read and which groups were left out for want of a
confidence (asked without one: run the replay with --confidence).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.base.arms import Grouping, regime_order
from analysis.base.rows import Table, interval_row, make_row, with_holm
from analysis.measures.decisions import arm_groups
from analysis.replay.branches import Branches, BranchPoints, build_branches, question_means
from analysis.replay.calibration import (
    RiskCoverage,
    calibration_split,
    ece,
    fit_isotonic,
    risk_coverage,
)
from analysis.replay.gate import Gate
from analysis.replay.policies import LAMBDAS
from analysis.stats.bootstrap import N_BOOT, cluster_mean, paired_difference
from core.errors import ConfigError
from core.probes import ANSWER_NOW, ANSWER_NOW_CONFIDENCE

FIT_DEPTHS = ("0", "all")
"""Which records fit the isotonic map: depth zero only (the seed's §4.1) or every depth."""
SEARCH_COST = 500.0
"""TPC's cost of one tool call in tokens (over-searching §3.2, μ = 500)."""


COMMIT, RETRIEVE, ABSTAIN, ESCALATE = "commit", "retrieve", "abstain", "escalate"


def pi(kappa: np.ndarray, budget: np.ndarray, gate: Gate) -> np.ndarray:
    """The seed's Eq. 1, elementwise.

    Args:
        kappa: confidence in [0, 1] (NaN: none stated).
        budget: remaining retrievals b (broadcast with `kappa`).
        gate: thresholds.

    Returns:
        "commit", "retrieve", "abstain" or "escalate" per element.
    """
    k = np.asarray(kappa, dtype=float)
    b = np.broadcast_to(np.asarray(budget), k.shape)
    with np.errstate(invalid="ignore"):
        commit = k >= gate.tau_hi
        low = k <= gate.tau_lo
    return np.where(commit, COMMIT, np.where(b > 0, RETRIEVE,
                                             np.where(low, ABSTAIN, ESCALATE)))


@dataclass(frozen=True)
class Replay:
    """Where π stopped on each trajectory.

    Attributes:
        stop: (N,) index of the state it acted on (= retrievals made).
        action: (N,) "commit", "abstain" or "escalate".
    """

    stop: np.ndarray
    action: np.ndarray


def replay(kappa: np.ndarray, n_states: np.ndarray, gate: Gate) -> Replay:
    """Walk π along each trajectory from its first state until it stops.

    The budget at state t is min(max_retrievals, n_states − 1) − t: a retrieval reveals
    the next state, and a trajectory with no further state has spent its budget.

    Args:
        kappa: (N, T) confidence at each state (NaN: none stated, or no state).
        n_states: (N,) states each trajectory has (≥ 1).
        gate: thresholds and budget.

    Returns:
        The Replay.
    """
    k = np.asarray(kappa, dtype=float)
    n = np.asarray(n_states, dtype=np.int64)
    limit = np.minimum(gate.max_retrievals, np.maximum(n - 1, 0))
    stop = np.full(len(k), -1, dtype=np.int64)
    action = np.full(len(k), ESCALATE, dtype=object)
    for t in range(k.shape[1] if k.ndim == 2 else 0):
        live = (stop < 0) & (t <= limit)
        if not live.any():
            break
        act = pi(k[:, t], limit - t, gate)
        done = live & (act != RETRIEVE)
        stop[done] = t
        action[done] = act[done]
    stop = np.where(stop < 0, limit, stop)  # no state at all: escalate at the first
    return Replay(stop, action.astype(str))


@dataclass(frozen=True)
class ControllerOutcome:
    """Per-episode result of one controller.

    Attributes:
        action: "commit", "abstain" or "escalate" per episode.
        correct: 1 when it committed a correct answer.
        calls: tool calls made before it acted.
        cost: TPC cost of the answer state it acted on plus 500 per call.
        abstained_wrong: 1 where it abstained and the branch there was wrong.
        retrievals: recorded points it moved past (its retrievals).
    """

    action: np.ndarray
    correct: np.ndarray
    calls: np.ndarray
    cost: np.ndarray
    abstained_wrong: np.ndarray
    retrievals: np.ndarray


def run_controller(b: Branches, confidence: np.ndarray, gate: Gate | None = None
                   ) -> ControllerOutcome:
    """Replay π on every episode's recorded decision points (the next point is the
    retrieval).

    Args:
        b: the episodes' decision points and branches.
        confidence: (E, P) the confidence it reads (raw or calibrated).
        gate: thresholds and budget (default (0.3, 0.7), 3 retrievals).

    Returns:
        The per-episode outcome.
    """
    gate = gate or Gate()
    usable = b.has_branch & ~np.isnan(confidence)
    kappa = np.where(usable, confidence, np.nan)
    n_points = b.valid.sum(axis=1)
    r = replay(kappa, np.maximum(n_points, 1), gate)
    rows = np.arange(len(r.stop))
    at = r.stop
    committed = r.action == COMMIT
    abstained = r.action == ABSTAIN
    branch = np.nan_to_num(b.correct[rows, at])
    calls = b.n_obs[rows, at].astype(float)
    cost = np.nan_to_num(b.cost[rows, at]) + SEARCH_COST * calls
    return ControllerOutcome(r.action, np.where(committed, branch, 0.0), calls, cost,
                             np.where(abstained, 1.0 - branch, 0.0), at.astype(float))


ASKED_DETAIL = "branches asked for a confidence"
UNASKED_DETAIL = "branches asked without a confidence request (confidence volunteered)"
"""What a row's detail says about the branches its controllers read."""


def branch_kind(group: pd.DataFrame, probes: pd.DataFrame) -> str:
    """The branch kind the controllers read for a group of episodes: the branches asked
    with a confidence request where the group has any, else the main paper's branches."""
    asked = probes.loc[probes["kind"] == ANSWER_NOW_CONFIDENCE, "episode_id"]
    return ANSWER_NOW_CONFIDENCE if asked.isin(group["episode_id"]).any() else ANSWER_NOW


def _with_confidence(group: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                     points: BranchPoints | None = None
                     ) -> tuple[Branches, tuple[str, ...], str]:
    """The group's branches (of `branch_kind`) in its regimes with a stated-confidence
    branch, those regimes (none: the group is left out) and the branch kind read."""
    kind = branch_kind(group, probes)
    b = build_branches(group, steps, probes, kind, points)
    regime = group["regime"].astype(str).to_numpy()
    stated = (b.has_branch & ~np.isnan(b.confidence)).any(axis=1)
    keep = pd.Series(regime).isin(pd.unique(regime[stated])).to_numpy()
    return b.take(keep), regime_order(regime[keep]), kind


def _skip_reason(group: pd.DataFrame, probes: pd.DataFrame) -> str:
    """Why a group without a stated confidence is left out: "none" (no answer-now
    branch at all), "unasked" (only branches without a confidence request) or "silent"
    (asked for a confidence, none stated)."""
    mine = probes.loc[probes["episode_id"].isin(group["episode_id"]), "kind"]
    if (mine == ANSWER_NOW_CONFIDENCE).any():
        return "silent"
    return "unasked" if (mine == ANSWER_NOW).any() else "none"


def _skip_notes(reasons: list[str]) -> list[str]:
    """The notes naming the groups left out, by why (see `_skip_reason`)."""
    texts = {
        "unasked": "{n} groups have only answer-now branches asked without confidence and "
                   "none stated one: run lab replay answer-now --confidence --run R (the "
                   "controllers read the branches asked for a confidence); left out.",
        "silent": "{n} groups have answer-now branches asked for a confidence but no reply "
                  "stated one (parsed as 'Confidence: N'); left out.",
        "none": "{n} groups have no answer-now branches (lab replay answer-now --confidence "
                "--run R) and are left out."}
    return [texts[r].format(n=reasons.count(r)) for r in texts if r in reasons]


def _depth_ece(b: Branches, confidence: np.ndarray) -> dict[int, tuple[float, int]]:
    mask = b.has_branch & ~np.isnan(confidence)
    out = {}
    for depth in np.unique(b.n_obs[mask]):
        sel = mask & (b.n_obs == depth)
        out[int(depth)] = (ece(confidence[sel], b.correct[sel]), int(sel.sum()))
    return out


def controller_table(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                     n_boot: int = N_BOOT, seed: int = 0, grouping: Grouping | None = None,
                     gate: Gate | None = None, split_seed: int = 0, fit_depths: str = "0"
                     ) -> Table:
    """The controllers table (raw and isotonic-calibrated confidence) per group.

    Args:
        episodes: error-free episode frame.
        steps: its steps.
        probes: answer-now probes of these episodes (both kinds: each group reads its
            confidence-request branches where it has any, else the paper's).
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: pooling and errored episodes.
        gate: π's thresholds and budget (default (0.3, 0.7), 3 retrievals).
        split_seed: seed of the calibration/evaluation split of questions.
        fit_depths: "0" fits the isotonic map on each calibration episode's first
            decision point (the seed's depth zero), "all" on every point.

    Returns:
        Table "controllers" (long layout).
    """
    gate = gate or Gate()
    if fit_depths not in FIT_DEPTHS:
        raise ConfigError(f"--fit-depths must be one of {', '.join(FIT_DEPTHS)}, not "
                          f"{fit_depths!r}")
    rows = []
    skipped: list[str] = []
    kinds_read: list[str] = []
    points = BranchPoints(steps, probes)  # read per group, prepared once
    for arm, group in arm_groups(episodes, grouping, families=True):
        b, covers, kind = _with_confidence(group, steps, probes, points)
        if not covers:
            skipped.append(_skip_reason(group, probes))
            continue
        kinds_read.append(kind)
        asked = ASKED_DETAIL if kind == ANSWER_NOW_CONFIDENCE else UNASKED_DETAIL
        cal = calibration_split(b.question_id, seed=split_seed)
        fit, ev = b.take(cal), b.take(~cal)
        fit_mask = fit.has_branch & ~np.isnan(fit.confidence)
        if fit_depths == "0":
            fit_mask[:, 1:] = False
        iso = fit_isotonic(fit.confidence[fit_mask], fit.correct[fit_mask])
        if not len(ev.episode_id) or not fit_mask.any():
            rows.append(make_row(arm, "controller", "", regimes=covers, detail="too few "
                                 "questions to split into calibration and evaluation sets"))
            continue
        split = (f"isotonic fitted on {int(fit_mask.sum())} "
                 f"{'first-point' if fit_depths == '0' else 'answer'} states of "
                 f"{len(np.unique(fit.question_id))} questions (split seed {split_seed}), "
                 f"evaluated on {len(np.unique(ev.question_id))} others")
        confs = {"raw": ev.confidence, "isotonic": iso.predict(ev.confidence)}
        q = ev.question_id
        per_q = {}
        for name, conf in confs.items():
            out = run_controller(ev, conf, gate)
            n = len(out.action)
            per_q[name] = question_means(out.correct, q)
            rows.append(interval_row(arm, "success", cluster_mean(per_q[name], n_boot, seed),
                                     name, detail=f"{gate.text}; {split}; {asked}",
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
                    ("retrievals", out.retrievals.mean(), n),
                    ("abstention_accuracy", out.abstained_wrong[abstained].mean()
                     if abstained.any() else np.nan, int(abstained.sum())),
                    ("tpc", out.cost.sum() / out.correct.sum() if out.correct.sum()
                     else np.inf, n)):
                rows.append(make_row(arm, measure, name, float(value), size, "episodes",
                                     detail=gate.text, regimes=covers))
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
    notes = [f"The second seed's π (Eq. 1): commit at confidence ≥ τ_hi = {gate.tau_hi:g}; "
             f"else retrieve (go on to the next recorded decision point) while budget "
             f"remains (at most {gate.max_retrievals}, and no more than the points recorded); "
             f"once it is spent, abstain at ≤ τ_lo = {gate.tau_lo:g}, else escalate. Every "
             "controller reads the same answer states (matched trajectory replay).",
             "Isotonic calibration is fitted on "
             + ("each calibration episode's first decision point (the seed's depth zero)"
                if fit_depths == "0" else "every answer state") + " of a calibration split of "
             "questions, frozen, and evaluated on the disjoint rest; ECE uses 10 equal-width "
             "bins (by depth t = observations seen); TPC = Σ(output + 0.25·input tokens + "
             "500·calls) / Σ correct.",
             "One row group per regime family (the main regimes never pool with plausible), "
             "over its regimes with answer-now branches (regimes column)."]
    if kinds_read:
        asked_n = kinds_read.count(ANSWER_NOW_CONFIDENCE)
        notes.append(f"Branches read: asked for a confidence (lab replay answer-now "
                     f"--confidence) in {asked_n} groups; asked without one in "
                     f"{len(kinds_read) - asked_n} groups (the confidence their replies "
                     f"stated unasked). A group never mixes the two.")
    notes += _skip_notes(skipped)
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
        probes: answer-now probes of these episodes (both kinds, as `controller_table`).
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
    points = BranchPoints(steps, probes)
    for arm, group in groups:
        b, _, _ = _with_confidence(group, steps, probes, points)
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
