"""`lab results beliefs`: what an agent says continuing and answering now are worth, beside
what they were worth (the main paper, App. C.4 "Beliefs probe" and its Figure 6;
docs/replay.md).

The decision points are those with a belief probe stored (`lab replay beliefs`): after
step t's observation, before action t + 1. Each row covers one group (model × arm ×
budget × dataset × question set × run × seed × replicate, as every table: runs, sets and
seeds are pooled only when asked) × regime × k, where k is the number of failed results
so far (observations whose design label is failed, up to and including the one the point
follows). Every measure is a mean over the row's decision points, with its own n:

- ``p_continue``, ``p_answer_now``: the self-reported probabilities of answering right by
  continuing and by answering now (parsed replies only: a reply that does not parse is
  missing, never coerced);
- ``prefers_answering``: the share of parsed replies whose ``prefer`` is answer_now (the
  agent's own report favours answering);
- ``answers``: the share of those points at which the agent's next action is finish (the
  decision table's definition, `core.decisions`);
- ``answers_when_preferring``: that share among the points whose report favours
  answering (the paper's "answers at 32 of 595 decision points");
- ``value_continue`` (V_c): the success of the recorded trajectory from the point on,
  i.e. the episode's own success;
- ``value_answer_now`` (V_f): the success of the answer-now branch stored at the point
  (`lab replay answer-now`; missing where none is stored);
- ``ideal_continue``: the ideal observer E[V_c | k] after k results that all failed, a
  reference rather than an optimum. It puts an equal prior on the regimes the probe was
  run on (the group's regimes with a parsed belief reply), updates it with the rate
  q_r(i) at which the model's own usefulness replies (its side-channel judgments,
  recorded or replayed: USELESS against USEFUL, unparsed replies left out) call the
  result at position i of regime r useless, P(r | k) ∝ Π_{i ≤ k} q_r(i), and averages
  the regimes' realized values of continuing at position k, V_r(k) (the mean episode
  success over regime r's decision points after its k-th observation):
  E[V_c | k] = Σ_r P(r | k) V_r(k). A regime with no judged observation at some position
  up to k, or no decision point at position k, is left out at that k; the row's detail
  gives the posterior. It depends on k alone, so every regime's row at k carries the
  same value; k = 0 (no failed result yet) has none.

The realized values read repaired answers where `lab repair` stored one (the paper
reports raw results as primary and uses repaired ones only here); an answer-now
branch's own answer is scored as stored. Exploratory, as in the paper: means without
intervals.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping, regime_order
from analysis.base.rows import Row, Table, make_row
from analysis.measures.repairs import with_repairs
from core.probes import ANSWER_NOW

BELIEF = "belief"
"""The belief probe's kind (`core.probes.KINDS`)."""
REPAIR = "repair"
"""An answer repair's kind (`lab repair`)."""
PREFERS_ANSWERING = "answer_now"
"""The belief reply's ``prefer`` value that favours answering now."""
MEASURES = ("p_continue", "ideal_continue", "value_continue", "p_answer_now",
            "value_answer_now", "answers", "prefers_answering", "answers_when_preferring")
"""The measures of each row group, in table order."""


def belief_points(episodes: pd.DataFrame, steps: pd.DataFrame, decisions: pd.DataFrame,
                  probes: pd.DataFrame) -> pd.DataFrame:
    """Every decision point of the episodes with what the table reads there.

    A decision point follows a step with an observation that was neither discarded nor
    refused, before the budget's last action (where probes are asked).

    Args:
        episodes: error-free episodes (episode_id, regime, budget, correct).
        steps: their steps (t, obs_index, obs_failed, judgment, discarded, refused).
        decisions: the decision table (episode_id, n_obs, answer).
        probes: belief and answer-now probes (`core.store.probes.probes_frame`).

    Returns:
        One row per point: episode_id, t, n_obs, k (failed results so far), judgment,
        regime, correct (V_c), answer (next action is finish), belief (a probe is
        stored), parsed, p_continue, p_answer_now, prefer, branch (V_f, NaN: none).
    """
    st = steps
    for flag in ("discarded", "refused"):
        if flag in st:
            st = st.loc[~st[flag].fillna(0).astype(bool)]
    st = st.loc[st["obs_index"].notna()].sort_values(["episode_id", "t"], kind="stable")
    failed = st["obs_failed"].fillna(0).astype(np.int64) if "obs_failed" in st else 0
    pts = pd.DataFrame({"episode_id": st["episode_id"].to_numpy(),
                        "t": st["t"].to_numpy().astype(np.int64),
                        "n_obs": st["obs_index"].to_numpy().astype(np.int64),
                        "failed": np.asarray(failed), "judgment": st["judgment"].to_numpy()})
    pts["k"] = pts.groupby("episode_id", sort=False)["failed"].cumsum().astype(np.int64)
    ep = episodes[["episode_id", "regime", "budget", "correct"]]
    pts = pts.merge(ep, on="episode_id", how="inner")
    pts = pts.loc[pts["t"] < pts["budget"]]
    answer = decisions[["episode_id", "n_obs", "answer"]].drop_duplicates(
        ["episode_id", "n_obs"])
    pts = pts.merge(answer, on=["episode_id", "n_obs"], how="left")
    pts["answer"] = pts["answer"].fillna(0).astype(float)
    pts["correct"] = pts["correct"].astype(float)
    belief = probes.loc[probes["kind"] == BELIEF,
                        ["episode_id", "t", "parse_ok", "p_continue", "p_answer_now", "prefer"]]
    belief = belief.drop_duplicates(["episode_id", "t"]).assign(belief=True)
    pts = pts.merge(belief, on=["episode_id", "t"], how="left")
    pts["belief"] = pts["belief"].fillna(False).astype(bool)
    pts["parsed"] = pts["belief"] & pts["parse_ok"].fillna(0).astype(bool)
    branch = probes.loc[probes["kind"] == ANSWER_NOW, ["episode_id", "t", "correct"]]
    branch = branch.drop_duplicates(["episode_id", "t"]).rename(columns={"correct": "branch"})
    pts = pts.merge(branch, on=["episode_id", "t"], how="left")
    pts["branch"] = pts["branch"].astype(float)
    return pts.sort_values(["episode_id", "t"], kind="stable").reset_index(drop=True)


def useless_rates(points: pd.DataFrame) -> dict[tuple[str, int], float]:
    """q_r(i): per (regime, position i), the share of judged observations there that the
    model's own judgment calls USELESS (USELESS against USEFUL; other replies and
    unjudged observations left out); absent where none is judged."""
    judged = points.loc[points["judgment"].isin(("USELESS", "USEFUL"))]
    useless = (judged["judgment"] == "USELESS").astype(float)
    rates = useless.groupby([judged["regime"].astype(str), judged["n_obs"]]).mean()
    return {(str(r), int(i)): float(v) for (r, i), v in rates.items()}


def continue_values(points: pd.DataFrame) -> dict[tuple[str, int], tuple[float, int]]:
    """V_r(i): per (regime, position i), the mean realized value of continuing (episode
    success) over the decision points after the i-th observation, with their count."""
    grouped = points.groupby([points["regime"].astype(str), points["n_obs"]])["correct"]
    means, counts = grouped.mean(), grouped.size()
    return {(str(r), int(i)): (float(means[(r, i)]), int(counts[(r, i)]))
            for (r, i) in means.index}


def ideal_observer(rates: dict[tuple[str, int], float],
                   values: dict[tuple[str, int], tuple[float, int]], regimes: Sequence[str],
                   k: int) -> tuple[float, int, dict[str, float]]:
    """E[V_c | k] after k results that all failed (see the module docstring).

    Args:
        rates: q_r(i) of one group (`useless_rates`).
        values: V_r(i) of the group with their counts (`continue_values`).
        regimes: the regimes the prior is spread over, equally.
        k: failed results seen.

    Returns:
        (the expectation, NaN when no regime is left or none has weight; the decision
        points behind the regimes' values at k; each regime's posterior).
    """
    if k < 1 or not regimes:
        return np.nan, 0, {}
    prior = 1.0 / len(regimes)
    weight: dict[str, float] = {}
    for r in regimes:
        if (r, k) in values and all((r, i) in rates for i in range(1, k + 1)):
            weight[r] = prior * float(np.prod([rates[(r, i)] for i in range(1, k + 1)]))
    total = sum(weight.values())
    if total <= 0:
        return np.nan, sum(values[(r, k)][1] for r in weight), {r: 0.0 for r in weight}
    posterior = {r: w / total for r, w in weight.items()}
    expectation = sum(posterior[r] * values[(r, k)][0] for r in posterior)
    return float(expectation), sum(values[(r, k)][1] for r in posterior), posterior


def _mean(values: pd.Series) -> tuple[float, int]:
    v = values.dropna().astype(float)
    return (float(v.mean()) if len(v) else np.nan), int(len(v))


def _group_rows(arm: ArmKey, points: pd.DataFrame) -> list[Row]:
    """The rows of one group: per regime with a belief probe, per k, every measure."""
    probed = points.loc[points["belief"]]
    regimes = regime_order(probed.loc[probed["parsed"], "regime"].astype(str).unique())
    rows: list[Row] = []
    rates, values_at = useless_rates(points), continue_values(points)
    ideal: dict[int, tuple[float, int, dict[str, float]]] = {}
    for regime in regime_order(probed["regime"].astype(str).unique()):
        in_regime = probed.loc[probed["regime"].astype(str) == regime]
        for k in sorted(int(x) for x in in_regime["k"].unique()):
            at = in_regime.loc[in_regime["k"] == k]
            parsed = at.loc[at["parsed"]]
            prefers = parsed["prefer"] == PREFERS_ANSWERING
            if k not in ideal:
                ideal[k] = ideal_observer(rates, values_at, regimes, k)
            e_c, n_c, posterior = ideal[k]
            unparsed = len(at) - len(parsed)
            note = f"{unparsed} replies did not parse" if unparsed else ""
            prior = (f"equal prior over {', '.join(regimes)}; posterior "
                     + ", ".join(f"{r} {w:.2f}" for r, w in posterior.items())
                     if posterior else "no failed result yet" if k < 1 else
                     "no regime has judged observations up to k and a decision point at k")
            values = {
                "p_continue": (*_mean(parsed["p_continue"]), note),
                "p_answer_now": (*_mean(parsed["p_answer_now"]), note),
                "prefers_answering": (*_mean(prefers.astype(float)), note),
                "answers": (*_mean(parsed["answer"]), ""),
                "answers_when_preferring": (*_mean(parsed.loc[prefers, "answer"]), ""),
                "value_continue": (*_mean(parsed["correct"]), ""),
                "value_answer_now": (*_mean(parsed["branch"]), ""),
                "ideal_continue": (e_c, n_c, prior),
            }
            for measure in MEASURES:
                estimate, n, detail = values[measure]
                rows.append(make_row(arm, measure, f"k={k}", estimate, n, "decisions",
                                     detail, regimes=(regime,)))
    return rows


def belief_table(episodes: pd.DataFrame, steps: pd.DataFrame, decisions: pd.DataFrame,
                 probes: pd.DataFrame, grouping: Grouping | None = None) -> Table:
    """The beliefs table (see the module docstring).

    Args:
        episodes: error-free episodes.
        steps: their steps (judgments merged with replayed ones).
        decisions: the decision table.
        probes: the belief, answer-now and repair probes of these episodes (a repair's
            answer replaces its episode's raw one here).
        grouping: pooling and errored episodes.

    Returns:
        Table "beliefs" (long layout); groups without a belief probe have no rows.
    """
    grouping = grouping or Grouping()
    episodes, _ = with_repairs(episodes, probes.loc[probes["kind"] == REPAIR])
    points = belief_points(episodes, steps, decisions, probes)
    rows: list[Row] = []
    skipped = 0
    for arm, group in grouping.groups(episodes):
        mine = points.loc[points["episode_id"].isin(group["episode_id"])]
        if not mine["belief"].any():
            skipped += 1
            continue
        rows += _group_rows(arm, mine)
    notes = ["Exploratory, as in the main paper (App. C.4, Figure 6): means over the "
             "decision points with a belief probe, by regime and k, the failed results so "
             "far; no intervals. V_c (value_continue) is the episode's own success from the "
             "point on, V_f (value_answer_now) the answer-now branch's; repaired answers "
             "where `lab repair` stored one.",
             "ideal_continue: E[V_c | k] after k results that all failed, an equal prior "
             "over the regimes the probe was run on, updated with the rate at which the "
             "model's own judgments call the result at each position of each regime "
             "useless, then the regimes' values of continuing at position k averaged; the "
             "same at k in every regime's rows."]
    if skipped:
        notes.append(f"{skipped} groups have no belief probes (lab replay beliefs --run R) "
                     "and are left out.")
    return Table("beliefs", "Beliefs about continuing and answering now, beside their "
                 "realized values (the main paper's Figure 6)", tuple(rows), tuple(notes),
                 pooled=grouping.pooled)
