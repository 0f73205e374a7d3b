"""Seconds for the full analysis suite on ≥ 20,000 sim episodes. Target ≤ 10 s.

Generates a sim grid (4 policies × 3 conditions × the six mean6 regimes × the 60 demo
questions × seeds) into a temporary lab.db, then times reading the frames and
computing success with paired bootstrap, Δ (four variants and the design contrast)
with bootstrap, I, the hazard curve and the hazard model with 1,000 question-cluster
resamples, cost and judgment rates (2,000 resamples elsewhere). For comparison it
times a straightforward pandas implementation that loops over resamples (concat the
resampled questions' rows, groupby, statsmodels per resample) on a few resamples and
scales it to the same counts.

Usage: python bench/analysis.py [--seeds N] [--db PATH] [--naive-resamples R]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

# Run as `python bench/analysis.py`, this file's folder comes first on sys.path and its
# name would shadow the `analysis` package; drop that entry before importing it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))  # the checkout's root: the tests' per-arm references

import numpy as np
import pandas as pd

from analysis.measures.frames import load_frames
from analysis.tables.compute import compute
from analysis.tables.registry import EPISODES, table_names
from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.models.registry import builtin_models, make_client
from core.regimes import FAILURE_REGIMES, MEAN6, ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions
from tests.oracles.measures import hazard_sample
from tests.oracles.stats import design_matrix

MODELS = ("sim-own5", "sim-clock6", "sim-hazard-own", "sim-deadline")
CONDITIONS = ("none", "budget", "enforced_rule")
ARM_KEYS = ("model", "condition", "budget")
"""The naive loop's arms: this grid has one spec per condition name."""


async def generate(path: Path, seeds: int) -> int:
    """Run the sim grid into lab.db at `path`; return episodes stored."""
    db = store.connect(path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    pool, specs = ForeignPool(questions), builtin_models()
    run_id = store.ensure_run(db, "bench-analysis")
    stored = 0
    for seed, model, cond, regime in product(range(seeds), MODELS, CONDITIONS, MEAN6):
        cell = CellSpec(specs[model], parse_condition(cond), parse_regime(regime), None, 8, seed)
        cell_id = store.ensure_cell(db, run_id, cell.columns())
        stored += await run_questions(db, cell_id, cell, questions, pool,
                                      make_client(cell.model))
    return stored


# --- the straightforward comparison: one pandas pass per resample -------------------


def _resample(groups: dict, qids: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    return pd.concat([groups[q] for q in rng.choice(qids, size=len(qids))], ignore_index=True)


def _mean6(ep: pd.DataFrame) -> float:
    per = ep.groupby(["regime", "question_id"])["correct"].mean().groupby("regime").mean()
    return float(per.reindex(list(MEAN6)).mean())


def _delta(dec: pd.DataFrame) -> float:
    d = dec[dec["n_obs"].between(3, 6) & ~dec["final"]]
    a = d[d["own_run"] == d["n_obs"]].groupby("n_obs")["answer"].agg(["size", "sum"])
    b = d[(d["own_run"] >= 1) & (d["own_run"] <= d["n_obs"] - 2)].groupby("n_obs")["answer"].agg(
        ["size", "sum"])
    j = a.merge(b, left_index=True, right_index=True, suffixes=("_a", "_b"))
    w = j["size_a"] * j["size_b"] / (j["size_a"] + j["size_b"])
    diff = j["sum_a"] / j["size_a"] - j["sum_b"] / j["size_b"]
    return float((w * diff).sum() / w.sum()) if w.sum() else float("nan")


def _index(dec: pd.DataFrame) -> float:
    d = dec[dec["regime"].isin(FAILURE_REGIMES) & ~dec["final"]]
    return float(d[d["design_run"].between(4, 5)]["answer"].mean()
                 - d[d["design_run"].between(1, 2)]["answer"].mean())


def _hazard(dec: pd.DataFrame) -> tuple[float, ...]:
    import statsmodels.api as sm

    s = hazard_sample(dec)
    out = []
    for fe in (False, True):
        x = design_matrix(s, fe)
        out.append(float(sm.OLS(s["answer"].to_numpy(), x.to_numpy()).fit().params[
            x.columns.get_loc("run")]))
    return tuple(out)


def naive_seconds(episodes: pd.DataFrame, decisions: pd.DataFrame, r: int,
                  hazard_r: int) -> tuple[float, float]:
    """Time the loop implementation on r (hazard: hazard_r) resamples per arm.

    Returns:
        (seconds measured, seconds scaled to 2,000 / 1,000 resamples).
    """
    rng = np.random.default_rng(0)
    measured = scaled = 0.0
    ref = {k[:1] + k[2:]: g for k, g in episodes.groupby(list(ARM_KEYS)) if k[1] == "none"}
    for key, ep in episodes.groupby(list(ARM_KEYS)):
        dec = decisions[(decisions["model"] == key[0]) & (decisions["condition"] == key[1])
                        & (decisions["budget"] == key[2])]
        qids = ep["question_id"].unique()
        eg, dg = dict(tuple(ep.groupby("question_id"))), dict(tuple(dec.groupby("question_id")))
        base = ref.get(key[:1] + key[2:])
        bg = dict(tuple(base.groupby("question_id"))) if base is not None else None
        t0 = time.perf_counter()
        for _ in range(r):
            draw = rng.choice(qids, size=len(qids))
            e = pd.concat([eg[q] for q in draw], ignore_index=True)
            _mean6(e)
            if bg is not None and key[1] != "none":
                _mean6(e) - _mean6(pd.concat([bg[q] for q in draw], ignore_index=True))
            e.assign(u=e["correct"] - 0.05 * e["tool_calls"]).groupby("regime")["u"].mean()
            d = pd.concat([dg[q] for q in draw if q in dg], ignore_index=True)
            for _variant in range(5):  # four Δ variants and the design contrast
                _delta(d)
            _index(d)
            d[d["design_run"] <= 7].groupby("design_run")["answer"].mean()
        t1 = time.perf_counter()
        for _ in range(hazard_r):
            _hazard(_resample(dg, qids[np.isin(qids, list(dg))], rng))
        t2 = time.perf_counter()
        measured += t2 - t0
        scaled += (t1 - t0) * 2000 / r + (t2 - t1) * 1000 / hazard_r
    return measured, scaled


def main() -> None:
    """Generate, time the suite, time the loop implementation, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds (4,320 episodes each)")
    parser.add_argument("--db", type=Path, default=None, help="reuse or keep this lab.db")
    parser.add_argument("--naive-resamples", type=int, default=10)
    args = parser.parse_args()
    import statsmodels.api  # noqa: F401  (import time is not analysis time)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "lab.db"
        g0 = time.perf_counter()
        asyncio.run(generate(path, args.seeds))
        print(f"generated the grid in {time.perf_counter() - g0:.1f} s")
        db = store.connect(path)
        t0 = time.perf_counter()
        frames = load_frames(db)
        t1 = time.perf_counter()
        compute(frames, table_names(EPISODES), n_boot=2000, hazard_boot=1000, seed=0)
        t2 = time.perf_counter()
        n_ep, n_dec = len(frames.episodes), len(frames.decisions)
        measured, scaled = naive_seconds(frames.episodes, frames.decisions,
                                         args.naive_resamples, max(1, args.naive_resamples // 2))
    arms = frames.episodes.groupby(list(ARM_KEYS)).ngroups
    print(f"{n_ep} episodes, {n_dec} decision points, {arms} arms")
    print(f"read frames {t1 - t0:.2f} s + measures {t2 - t1:.2f} s")
    print(f"pandas loop over resamples: {measured:.1f} s on {args.naive_resamples} resamples "
          f"(hazard {max(1, args.naive_resamples // 2)}) per arm, scaled to 2,000/1,000: "
          f"{scaled:.0f} s")
    print(f"analysis suite: {t2 - t0:.2f} s (≈{scaled / (t2 - t1):.0f}× faster than the loop)")


if __name__ == "__main__":
    main()
