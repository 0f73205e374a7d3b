"""Decision points with their answer-now branches, as padded arrays per episode (issue 12).

The offline policies (`analysis.policies`) and the confidence-gated controllers
(`analysis.controllers`) replay stopping rules over the same matched answer states:
for each episode, its decision points in order (a step with an observation, not
refused or discarded, before the budget's last action), the observations seen there
(``n_obs``), the useless run of the agent's own judgments (recorded, or replayed
where the arm asked none), and the answer-now branch stored at that point (its
correctness and verbalized confidence; NaN where no branch is stored). Pure: frames
in, arrays out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.decisions import run_lengths


@dataclass(frozen=True)
class Branches:
    """Episodes × decision points (padded to the longest episode).

    Attributes:
        episode_id: (E,) episode ids, in the order of the episode frame given.
        question_id: (E,) their questions (bootstrap clusters).
        valid: (E, P) the point exists.
        t: (E, P) the step the point follows (0 where not valid).
        n_obs: (E, P) observations seen there (tool calls so far).
        own_run: (E, P) consecutive USELESS own judgments ending there.
        correct: (E, P) answer-now branch correct (NaN: no branch stored).
        confidence: (E, P) its verbalized confidence in [0, 1] (NaN: none stated).
        cost: (E, P) the branch's TPC cost (output + 0.25·input tokens of the fork).
        agent_correct: (E,) the episode's own outcome.
        agent_calls: (E,) its tool calls.
        budget: (E,) its budget.
    """

    episode_id: np.ndarray
    question_id: np.ndarray
    valid: np.ndarray
    t: np.ndarray
    n_obs: np.ndarray
    own_run: np.ndarray
    correct: np.ndarray
    confidence: np.ndarray
    cost: np.ndarray
    agent_correct: np.ndarray
    agent_calls: np.ndarray
    budget: np.ndarray

    def take(self, rows: np.ndarray) -> Branches:
        """The same arrays for a subset of episodes (boolean mask or indices)."""
        return Branches(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))

    @property
    def has_branch(self) -> np.ndarray:
        """(E, P) a branch is stored at the point."""
        return self.valid & ~np.isnan(self.correct)


def decision_steps(steps: pd.DataFrame, episodes: pd.DataFrame) -> pd.DataFrame:
    """The decision points of the episodes with their own-judgment run.

    Args:
        steps: the step frame (judgments already merged with replayed ones).
        episodes: the episode frame (episode_id, budget).

    Returns:
        episode_id, t, n_obs, own_run per decision point, ordered.
    """
    st = steps.loc[steps["episode_id"].isin(episodes["episode_id"])]
    if "discarded" in st:
        st = st.loc[~st["discarded"].fillna(0).astype(bool)]
    obs = st.loc[st["obs_index"].notna()].sort_values(["episode_id", "t"], kind="stable")
    eid = obs["episode_id"].to_numpy()
    start = np.r_[True, eid[1:] != eid[:-1]] if len(eid) else np.zeros(0, dtype=bool)
    useless = (obs["judgment"] == "USELESS").to_numpy()
    # refused turns have no observation, so runs here count observations only
    out = pd.DataFrame({"episode_id": eid, "t": obs["t"].to_numpy().astype(np.int64),
                        "n_obs": obs["obs_index"].to_numpy().astype(np.int64),
                        "own_run": run_lengths(start, useless, ~useless)})
    budget = episodes.set_index("episode_id")["budget"]
    return out.loc[out["t"].to_numpy() < budget.reindex(out["episode_id"]).to_numpy()]


def build_branches(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame
                   ) -> Branches:
    """Padded decision-point arrays of the episodes with their answer-now branches.

    Args:
        episodes: the episode frame (error-free).
        steps: its step frame.
        probes: answer_now probes (`core.store.probes.probes_frame`); branch answers
            are scored raw.

    Returns:
        The Branches, episodes in the order of `episodes`.
    """
    points = decision_steps(steps, episodes)
    br = probes.loc[probes["kind"] == "answer_now", ["episode_id", "t", "correct", "confidence",
                                                     "probe_input_tokens",
                                                     "probe_output_tokens"]]
    points = points.merge(br, on=["episode_id", "t"], how="left")
    order = pd.Index(episodes["episode_id"].to_numpy())
    e_idx = order.get_indexer(points["episode_id"].to_numpy())
    points = points.assign(_e=e_idx).loc[e_idx >= 0]
    pos = points.groupby("_e").cumcount().to_numpy()
    n_e = len(order)
    n_p = int(pos.max()) + 1 if len(pos) else 1
    e = points["_e"].to_numpy()

    def grid(values: np.ndarray, fill: float, dtype: type) -> np.ndarray:
        out: np.ndarray = np.full((n_e, n_p), fill, dtype=dtype)
        out[e, pos] = values
        return out

    valid = grid(np.ones(len(points), dtype=bool), False, bool)
    cost = (points["probe_output_tokens"].to_numpy(dtype=float)
            + 0.25 * points["probe_input_tokens"].to_numpy(dtype=float))
    return Branches(
        episode_id=order.to_numpy(), question_id=episodes["question_id"].to_numpy(),
        valid=valid, t=grid(points["t"].to_numpy(), 0, np.int64),
        n_obs=grid(points["n_obs"].to_numpy(), 0, np.int64),
        own_run=grid(points["own_run"].to_numpy(), 0, np.int64),
        correct=grid(points["correct"].to_numpy(dtype=float), np.nan, float),
        confidence=grid(points["confidence"].to_numpy(dtype=float), np.nan, float),
        cost=grid(cost, np.nan, float),
        agent_correct=episodes["correct"].to_numpy(dtype=float),
        agent_calls=episodes["tool_calls"].to_numpy(dtype=float),
        budget=episodes["budget"].to_numpy(dtype=np.int64))


def first_true(mask: np.ndarray) -> np.ndarray:
    """Per row, the index of the first True (−1 when none)."""
    if mask.shape[1] == 0:
        return np.full(mask.shape[0], -1)
    idx = mask.argmax(axis=1)
    return np.where(mask.any(axis=1), idx, -1)


def question_means(values: np.ndarray, questions: np.ndarray) -> np.ndarray:
    """Mean of per-episode values per question (the bootstrap's clusters), sorted by id."""
    frame = pd.DataFrame({"q": questions, "v": values})
    return frame.groupby("q", sort=True)["v"].mean().to_numpy()
