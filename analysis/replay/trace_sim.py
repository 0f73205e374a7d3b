"""A trace sim: the second seed's depth 0–3 answer states from a known model.

The model is `core.models.sim_trace`'s (the built-in `sim-trace` that `lab traces
collect` can ask draws the same states): question i of dataset D has an ability z_i
(a keyed uniform draw in [0, 1)); at depth t its answer is correct with probability

    p_t(i) = clip(base[t] + spread · (z_i − 0.5), 0, 1),

base rising with depth (evidence helps), drawn independently per depth (so a later
state can lose a right answer: harmful transitions exist), and it states the
confidence round(100 · min(1, p_t(i) + overstate)): over-confident by a known amount,
which an isotonic map fitted on depth 0 must remove there. Every draw is keyed by
(seed, model, dataset, question, depth), so a trace does not depend on how many
other questions, models or datasets are simulated.

`sim_traces` returns the frame `core.store.traces.load_traces` returns, and
`sim_questions` the texts the Adaptive proxy reads; no database, no model calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.replay.traces import DEPTHS
from core.canonical import keyed_uniform
from core.models.sim_trace import BASE, OVERSTATE, SPREAD, ability, chance, is_right, stated

__all__ = ["BASE", "COLUMNS", "OVERSTATE", "SPREAD", "chance", "depth_zero_ece",
           "expected_accuracy", "sim_questions", "sim_traces"]
COLUMNS = ("id", "run", "model", "dataset", "set_name", "question_id", "depth", "answer",
           "confidence", "parsed", "correct", "judge_correct", "prompt_tokens",
           "completion_tokens", "plan_sha256", "error", "created_at")
"""The columns of `core.store.traces.load_traces`."""
_WORDS = ("which", "film", "director", "born", "river", "city", "band", "album", "first",
          "same", "both", "whose", "before", "after", "country", "team")


def sim_questions(n: int, dataset: str = "hotpotqa", seed: int = 0) -> dict[str, str]:
    """Question id → a question text of 5–22 words (the proxy's depths vary).

    Args:
        n: questions.
        dataset: dataset name (part of the ids and of the draws).
        seed: sim seed.

    Returns:
        The texts, ids "{dataset}-q{i}".
    """
    out = {}
    for i in range(n):
        qid = f"{dataset}-q{i}"
        length = 5 + int(keyed_uniform(seed, "len", dataset, qid) * 18)
        words = [_WORDS[int(keyed_uniform(seed, "w", dataset, qid, j) * len(_WORDS))]
                 for j in range(length)]
        out[qid] = " ".join(words).capitalize() + "?"
    return out


def sim_traces(n: int, models: Sequence[str] = ("sim-trace",),
               datasets: Sequence[str] = ("hotpotqa",), seed: int = 0,
               base: Sequence[float] = BASE, spread: float = SPREAD,
               overstate: float = OVERSTATE, run: str = "sim", set_name: str = "sim"
               ) -> pd.DataFrame:
    """Traces of `n` questions per dataset for each model, as `load_traces` returns them.

    Args:
        n: questions per dataset.
        models: model names (each draws its own answers).
        datasets: dataset names.
        seed: sim seed.
        base: P(correct) at depths 0–3 for z = 0.5.
        spread: how much ability moves P(correct).
        overstate: stated confidence − true chance (capped at 100).
        run: run name in every row.
        set_name: question set name in every row.

    Returns:
        One row per model × question × depth.
    """
    rows: list[tuple[object, ...]] = []
    for model in models:
        for dataset in datasets:
            for i in range(n):
                qid = f"{dataset}-q{i}"
                z = ability(seed, model, dataset, qid)
                for depth in range(DEPTHS):
                    p = chance(z, depth, base, spread)
                    right = int(is_right(seed, model, dataset, qid, depth, p))
                    rows.append((len(rows) + 1, run, model, dataset, set_name, qid, depth,
                                 "gold" if right else "wrong", stated(p, overstate), 1, right,
                                 None, 200 + 150 * depth, 8, f"plan-{dataset}-{i}", None,
                                 "2026-01-01T00:00:00"))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def expected_accuracy(n: int, depth: int, model: str = "sim-trace", dataset: str = "hotpotqa",
                      seed: int = 0) -> float:
    """The sim's mean true P(correct) at a depth over its n questions (for tests)."""
    zs = [ability(seed, model, dataset, f"{dataset}-q{i}") for i in range(n)]
    return float(np.mean([chance(z, depth) for z in zs]))


def depth_zero_ece(n: int = 300, seed: int = 0, split_seed: int = 0) -> tuple[float, float, int]:
    """Held-out ECE at depth 0 of the trace sim, raw and through the depth-zero map fitted
    on its calibration split (`lab validate-measures` checks the map lowers it).

    Args:
        n: questions.
        seed: sim seed.
        split_seed: split seed.

    Returns:
        (raw ECE, calibrated ECE, test states).
    """
    from analysis.replay.calibration import ece
    from analysis.replay.traces import build_traces, fit_map, split_mask

    tr = build_traces(sim_traces(n, seed=seed), "sim-trace")
    cal = split_mask(tr, split_seed)
    iso = fit_map(tr.take(cal)).iso
    test = tr.take(~cal)
    conf, right = test.confidence[:, 0], test.correct[:, 0]
    return ece(conf, right), ece(iso.predict(conf), right), len(test)
