"""Decision points with their answer-now branches, as padded arrays per episode
(docs/replay.md).

The offline policies (`analysis.replay.policies`) and the confidence-gated controllers
(`analysis.replay.controllers`) replay stopping rules over the same matched answer states:
for each episode, its decision points in order (a step with an observation, not
refused or discarded, before the budget's last action), the observations seen there
(``n_obs``), the useless run of the agent's own judgments (recorded, or replayed
where the arm asked none), and the answer-now branch stored at that point (its
correctness and verbalized confidence; NaN where no branch is stored). Pure: frames
in, arrays out.

Estimates over several regimes average them: `RegimeCells` lays episodes out by
question × regime, a regime's value is the mean over its questions (each question the
mean of its episodes there), and the estimate is the equal-weight mean of the regimes'
values, as mean6 is (`analysis.measures.success`); episodes of different regimes are never
pooled into one mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.base.arms import regime_order
from analysis.measures.decisions import run_lengths
from analysis.measures.success import QuestionMatrix, restrict
from analysis.stats.bootstrap import N_BOOT, Interval, bootstrap_intervals, safe_ratio


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


def _observation_points(steps: pd.DataFrame, episodes: pd.DataFrame | None) -> pd.DataFrame:
    """`decision_steps` before its budget cut: every decision point of the episodes
    (of every episode in `steps` when `episodes` is None), ordered."""
    st = steps if episodes is None else steps.loc[steps["episode_id"].isin(
        episodes["episode_id"])]
    if "discarded" in st:
        st = st.loc[~st["discarded"].fillna(0).astype(bool)]
    obs = st.loc[st["obs_index"].notna()].sort_values(["episode_id", "t"], kind="stable")
    eid = obs["episode_id"].to_numpy()
    start = np.r_[True, eid[1:] != eid[:-1]] if len(eid) else np.zeros(0, dtype=bool)
    useless = (obs["judgment"] == "USELESS").to_numpy()
    # refused turns have no observation, so runs here count observations only
    return pd.DataFrame({"episode_id": eid, "t": obs["t"].to_numpy().astype(np.int64),
                         "n_obs": obs["obs_index"].to_numpy().astype(np.int64),
                         "own_run": run_lengths(start, useless, ~useless)})


def _branch_columns(probes: pd.DataFrame, kind: str) -> pd.DataFrame:
    return probes.loc[probes["kind"] == kind, ["episode_id", "t", "correct", "confidence",
                                               "probe_input_tokens", "probe_output_tokens"]]


class BranchPoints:
    """Every episode's decision points joined with its branches, computed once for a
    whole table and read per group (`build_branches(..., points=)`): a table of many
    groups otherwise filters, sorts and joins the whole step frame once per group.

    Every step of the computation is per episode (runs restart at each episode, the
    budget cut compares an episode's own t and budget), so a group's slice of the
    whole equals the group computed alone.
    """

    def __init__(self, steps: pd.DataFrame, probes: pd.DataFrame) -> None:
        """Args: steps: the step frame (judgments merged with replayed ones); probes:
        the answer-now probes (`core.store.probes.probes_frame`)."""
        self.steps = steps
        self.probes = probes
        self._all: pd.DataFrame | None = None
        self._by_kind: dict[str, pd.DataFrame] = {}

    def of(self, episodes: pd.DataFrame, kind: str) -> pd.DataFrame:
        """The decision points (with their `kind` branches) of `episodes`, in the order
        `decision_steps` and the join in `build_branches` give them."""
        if kind not in self._by_kind:
            if self._all is None:
                self._all = _observation_points(self.steps, None)
            self._by_kind[kind] = self._all.merge(_branch_columns(self.probes, kind),
                                                  on=["episode_id", "t"], how="left")
        points = self._by_kind[kind]
        e_idx = pd.Index(episodes["episode_id"].to_numpy()).get_indexer(
            points["episode_id"].to_numpy())
        inside = e_idx >= 0
        budget = episodes["budget"].to_numpy()[e_idx[inside]]
        rows = np.flatnonzero(inside)[points["t"].to_numpy()[inside] < budget]
        return points.iloc[rows]


def decision_steps(steps: pd.DataFrame, episodes: pd.DataFrame) -> pd.DataFrame:
    """The decision points of the episodes with their own-judgment run.

    Args:
        steps: the step frame (judgments already merged with replayed ones).
        episodes: the episode frame (episode_id, budget).

    Returns:
        episode_id, t, n_obs, own_run per decision point, ordered.
    """
    out = _observation_points(steps, episodes)
    budget = episodes.set_index("episode_id")["budget"]
    return out.loc[out["t"].to_numpy() < budget.reindex(out["episode_id"]).to_numpy()]


def build_branches(episodes: pd.DataFrame, steps: pd.DataFrame, probes: pd.DataFrame,
                   kind: str = "answer_now", points: BranchPoints | None = None) -> Branches:
    """Padded decision-point arrays of the episodes with their answer-now branches.

    Args:
        episodes: the episode frame (error-free).
        steps: its step frame.
        probes: answer-now probes (`core.store.probes.probes_frame`); branch answers
            are scored raw.
        kind: which branches to read: "answer_now" (the main paper's, the default) or
            "answer_now_confidence" (asked with a confidence request); the other kind
            is ignored, so the two never mix at one decision point.
        points: the same steps and probes prepared once for many groups (the result
            is the same).

    Returns:
        The Branches, episodes in the order of `episodes`.
    """
    if points is None:
        joined = decision_steps(steps, episodes).merge(_branch_columns(probes, kind),
                                                       on=["episode_id", "t"], how="left")
    else:
        joined = points.of(episodes, kind)
    order = pd.Index(episodes["episode_id"].to_numpy())
    e_idx = order.get_indexer(joined["episode_id"].to_numpy())
    joined = joined.assign(_e=e_idx).loc[e_idx >= 0]
    pos = joined.groupby("_e").cumcount().to_numpy()
    n_e = len(order)
    n_p = int(pos.max()) + 1 if len(pos) else 1
    e = joined["_e"].to_numpy()

    def grid(values: np.ndarray, fill: float, dtype: type) -> np.ndarray:
        out: np.ndarray = np.full((n_e, n_p), fill, dtype=dtype)
        out[e, pos] = values
        return out

    valid = grid(np.ones(len(joined), dtype=bool), False, bool)
    cost = (joined["probe_output_tokens"].to_numpy(dtype=float)
            + 0.25 * joined["probe_input_tokens"].to_numpy(dtype=float))
    return Branches(
        episode_id=order.to_numpy(), question_id=episodes["question_id"].to_numpy(),
        valid=valid, t=grid(joined["t"].to_numpy(), 0, np.int64),
        n_obs=grid(joined["n_obs"].to_numpy(), 0, np.int64),
        own_run=grid(joined["own_run"].to_numpy(), 0, np.int64),
        correct=grid(joined["correct"].to_numpy(dtype=float), np.nan, float),
        confidence=grid(joined["confidence"].to_numpy(dtype=float), np.nan, float),
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


@dataclass(frozen=True)
class RegimeCells:
    """Where each episode falls in a question × regime grid.

    Attributes:
        questions: (Q,) question ids, sorted (the bootstrap's clusters).
        regimes: (R,) regimes, in `analysis.base.arms.regime_order`.
        cell: (E,) each episode's cell, question index · R + regime index.
        count: (Q, R) episodes per cell (0: the question did not run there).
    """

    questions: tuple[str, ...]
    regimes: tuple[str, ...]
    cell: np.ndarray
    count: np.ndarray

    def means(self, values: np.ndarray) -> np.ndarray:
        """Per-cell means of per-episode values.

        Args:
            values: (E,) or (K, E) per-episode values (K quantities at once).

        Returns:
            (Q, R) or (K, Q, R) means, 0 in empty cells.
        """
        v = np.atleast_2d(np.asarray(values, dtype=float))
        n_q, n_r = self.count.shape
        size = n_q * n_r
        flat = (np.arange(v.shape[0])[:, None] * size + self.cell[None, :]).ravel()
        sums = np.bincount(flat, weights=v.ravel(), minlength=v.shape[0] * size)
        out = sums.reshape(-1, n_q, n_r) / np.maximum(self.count, 1)
        return out[0] if np.ndim(values) == 1 else out

    def matrix(self, values: np.ndarray) -> QuestionMatrix:
        """The question matrix of per-episode values (for the question bootstrap)."""
        return QuestionMatrix(self.questions, self.regimes, self.means(values), self.count > 0)

    def average(self, values: np.ndarray) -> np.ndarray:
        """Equal-weight mean over the regimes of each regime's mean over its questions.

        Args:
            values: (E,) or (K, E) per-episode values.

        Returns:
            A float, or (K,) for (K, E) values.
        """
        present = self.count > 0
        per_regime = (self.means(values) * present).sum(axis=-2) / np.maximum(
            present.sum(axis=0), 1)
        return per_regime.mean(axis=-1)


def regime_cells(questions: np.ndarray, regimes: np.ndarray) -> RegimeCells:
    """The question × regime grid of episodes.

    Args:
        questions: (E,) each episode's question.
        regimes: (E,) each episode's regime.

    Returns:
        The RegimeCells.
    """
    q_names, q_idx = np.unique(np.asarray(questions).astype(str), return_inverse=True)
    order = regime_order(str(r) for r in regimes)
    r_idx = pd.Index(order).get_indexer(np.asarray(regimes).astype(str))
    cell = q_idx.reshape(-1) * len(order) + r_idx
    count = np.bincount(cell, minlength=len(q_names) * len(order)).reshape(len(q_names),
                                                                           len(order))
    return RegimeCells(tuple(q_names.tolist()), order, cell, count)


def regime_mean_intervals(matrices: Sequence[QuestionMatrix],
                          pairs: Sequence[tuple[int, int]] = (), n_boot: int = N_BOOT,
                          seed: int = 0) -> tuple[Interval, ...]:
    """Means over regimes, and differences of them, from one set of question resamples.

    Each matrix's estimate is the equal-weight mean over its regimes of each regime's
    mean over its questions (questions weighted by how often a resample drew them);
    a pair (i, j) is matrix i's minus matrix j's in the same resample, so a
    difference is paired by question.

    Args:
        matrices: question matrices on the same questions and regimes (`restrict`).
        pairs: (i, j) indices into `matrices`.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        One Interval per matrix, then one per pair (with p: share of resampled
        differences ≤ 0); NaN in a resample that drew no question of some regime.
    """
    k, n_r = len(matrices), len(matrices[0].regimes)
    value = np.concatenate([m.value * m.present for m in matrices], axis=1)
    present = np.concatenate([m.present for m in matrices], axis=1).astype(float)
    full = bool(present.all())

    def stat(w: np.ndarray) -> np.ndarray:
        den = w.sum(axis=1, keepdims=True) if full else w @ present
        per = safe_ratio(w @ value, den).reshape(len(w), k, n_r).mean(axis=2)
        return np.column_stack([per, *(per[:, i] - per[:, j] for i, j in pairs)])

    return bootstrap_intervals(stat, len(matrices[0].questions), n_boot, seed, with_p=True)


def paired_regime_differences(a: Sequence[QuestionMatrix], b: Sequence[QuestionMatrix],
                              n_boot: int = N_BOOT, seed: int = 0
                              ) -> tuple[list[Interval], list[Interval], list[Interval],
                                         tuple[str, ...]]:
    """Means over regimes of A's and B's matrices and A[i] − B[i], on the questions and
    regimes both have, every resample drawing the same questions for all of them.

    Args:
        a: per-question, per-regime values of A (e.g. one per λ), on the same questions
            and regimes.
        b: those of B, as many.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        (A's means, B's means, the differences A[i] − B[i], the regimes covered).
    """
    common = tuple(sorted(set(a[0].questions) & set(b[0].questions)))
    regimes = regime_order(set(a[0].regimes) & set(b[0].regimes))
    ms = [restrict(m, common, regimes) for m in (*a, *b)]
    k = len(a)
    ivs = regime_mean_intervals(ms, [(i, k + i) for i in range(k)], n_boot, seed)
    return list(ivs[:k]), list(ivs[k:2 * k]), list(ivs[2 * k:]), regimes


def own_runs_matrix(episodes: pd.DataFrame, regimes: Sequence[str], lam: float
                    ) -> QuestionMatrix:
    """An arm's own runs in `regimes`: success − λ · tool calls per question and regime.

    Args:
        episodes: the arm's error-free episodes.
        regimes: the regimes kept.
        lam: price per tool call.

    Returns:
        The QuestionMatrix.
    """
    sub = episodes.loc[episodes["regime"].astype(str).isin(regimes)]
    cells = regime_cells(sub["question_id"].to_numpy(), sub["regime"].to_numpy())
    return cells.matrix(sub["correct"].to_numpy(dtype=float)
                        - lam * sub["tool_calls"].to_numpy(dtype=float))
