"""Synthetic frames for analysis tests: decisions with a known hazard, random episodes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.regimes import MEAN6

REGIMES = (*MEAN6, "plausible")
"""The regimes `random_episodes` draws from."""


def synthetic_hazard(beta: float, gamma: float, n_q: int = 400, per_q: int = 30,
                     seed: int = 1) -> pd.DataFrame:
    """Decisions after a useless result with P(answer) linear in run and earlier useful."""
    rng = np.random.default_rng(seed)
    regimes = ["persistent", "recover_after_1", "recover_after_2", "recover_after_3",
               "late_onset_from_3"]
    n = n_q * per_q
    q = np.repeat(np.arange(n_q), per_q)
    n_obs = rng.integers(1, 7, n)
    earlier = (n_obs >= 2) & (rng.random(n) < 0.4)
    run = np.where(earlier, rng.integers(1, np.maximum(n_obs, 2)), n_obs)
    regime = rng.integers(0, 5, n)
    u = rng.uniform(-0.03, 0.03, n_q)[q]
    p = 0.02 + 0.01 * (n_obs - 1) + 0.01 * regime + beta * run + gamma * earlier + u
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in q], "regime": np.array(regimes)[regime],
        "n_obs": n_obs, "action": n_obs + 1, "final": False, "own_latest": True,
        "own_run": run, "own_earlier": earlier, "answer": (rng.random(n) < p).astype(int),
        "model": "m", "condition": "none", "budget": 8})


def random_episodes(n: int = 900, seed: int = 0) -> pd.DataFrame:
    """Random episodes of three models × three arms, some cells missing."""
    rng = np.random.default_rng(seed)
    conditions = np.array(["none", "enforced_rule:k=3", "none:judge=true"])
    answered = rng.random(n) < 0.8
    frame = pd.DataFrame({
        "episode_id": np.arange(n), "model": rng.choice(["m1", "m2", "m3"], n),
        "condition": conditions[rng.integers(0, 3, n)], "budget": 8,
        "regime": np.array(REGIMES)[rng.integers(0, len(REGIMES), n)],
        "seed": rng.integers(0, 2, n), "question_id": rng.integers(0, 12, n).astype(str),
        "correct": rng.integers(0, 2, n), "answered": answered.astype(int),
        "answer_action": np.where(answered, rng.integers(1, 9, n), np.nan),
        "tool_calls": rng.integers(0, 9, n), "extra_calls": rng.integers(0, 5, n),
        "input_tokens": rng.integers(100, 5000, n), "output_tokens": rng.integers(10, 500, n),
        "cost_usd": rng.random(n) / 7})
    return frame.sample(frac=1, random_state=seed).reset_index(drop=True)
