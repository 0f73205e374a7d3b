"""Our encoding of the second seed's measures against its own published numbers.

What the paper gives enough to recompute, and what each test checks:

1. Table 1 → the pooled operating points quoted in RQ2 and RQ4 (§5). From Table 1's
   per-dataset OA, coverage and cost (HotpotQA N = 1,852, MuSiQue N = 605) we build
   outcomes with those counts and pool them with `analysis.replay.traces.measures`
   (OA = correct commits / all, CA = correct commits / commits, coverage = commits /
   all, cost = mean retrievals). The seed's text says: Mistral moves from 35.7% CA /
   99.9% coverage to 81.6% / 43.8%, GPT-OSS from 66.1 / 97.6 to 87.9 / 75.6, Qwen
   from 56.8 / 98.8 to 76.1 / 87.7; at budget 3 Mistral's OA stays 35.7% while cost
   rises 0.12 → 2.56, GPT-OSS gains 2.0 OA points at +1.10 actions, Qwen 10.7 at +0.99;
   Fixed RAG@3 reaches 76.1–82.5% OA, the adaptive proxy 67.5–76.5% at cost 2.46;
   Qwen's calibrated endpoint beats Fixed RAG@1 by 4.5 points at +0.58 cost. All
   agree within the rounding of Table 1's one-decimal inputs (±0.15 points; ±0.01
   actions), which confirms micro-pooling (each question one episode) and OA = CA ·
   coverage. Every gated row of Table 1 also satisfies OA ≈ CA · coverage (±0.1).
2. Table 3 and App. B: 2,457 test traces × 3 adjacent transitions − 4 whose third
   slice is empty = 7,367 transitions per model (our `transition_counts` on traces of
   that shape); net = helpful − harmful per model and the Average row is the mean of
   the three models (17.7, 3.6, +14.1).
3. Table 5: the 2:1 calibration–test split by source order gives 3,702 / 1,852 for
   HotpotQA and 1,208 / 605 for MuSiQue (`source_order_counts`); our seeded hash
   split puts ≈ 2/3 of the questions in calibration.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.replay.controllers import COMMIT
from analysis.replay.trace_tables import transition_counts
from analysis.replay.traces import Outcome, Traces, measures, split_mask
from tests.oracles.replay import source_order_counts

N = {"hotpotqa": 1852, "musique": 605}
# Table 1: (OA, CA, coverage, cost) in % / actions, per model, system and dataset
TABLE1 = {
    "mistral": {"Raw-Gated": {"hotpotqa": (42.1, 42.1, 100.0, 0.07),
                              "musique": (15.9, 15.9, 99.7, 0.26)},
                "Calibrated-Gated": {"hotpotqa": (46.3, 83.1, 55.7, 2.44),
                                     "musique": (3.3, 45.5, 7.3, 2.92)},
                "Fixed RAG@1": {"hotpotqa": (66.6,) * 2 + (100.0, 1.0),
                                "musique": (34.4,) * 2 + (100.0, 1.0)},
                "Fixed RAG@3": {"hotpotqa": (83.0,) * 2 + (100.0, 3.0),
                                "musique": (54.9,) * 2 + (100.0, 3.0)},
                "Adaptive proxy": {"hotpotqa": (72.4,) * 2 + (100.0, 2.32),
                                   "musique": (52.4,) * 2 + (100.0, 2.88)}},
    "gpt": {"Raw-Gated": {"hotpotqa": (70.7, 70.9, 99.6, 0.44),
                          "musique": (45.6, 49.9, 91.4, 1.16)},
            "Calibrated-Gated": {"hotpotqa": (78.7, 89.0, 88.5, 1.43),
                                 "musique": (28.9, 80.3, 36.0, 2.59)},
            "Fixed RAG@1": {"hotpotqa": (78.2,) * 2 + (100.0, 1.0),
                            "musique": (43.3,) * 2 + (100.0, 1.0)},
            "Fixed RAG@3": {"hotpotqa": (89.3,) * 2 + (100.0, 3.0),
                            "musique": (61.7,) * 2 + (100.0, 3.0)},
            "Adaptive proxy": {"hotpotqa": (82.1,) * 2 + (100.0, 2.32),
                               "musique": (59.2,) * 2 + (100.0, 2.88)}},
    "qwen": {"Raw-Gated": {"hotpotqa": (60.9, 60.9, 99.9, 0.42),
                           "musique": (41.7, 43.7, 95.4, 1.10)},
             "Calibrated-Gated": {"hotpotqa": (75.9, 79.9, 95.0, 1.40),
                                  "musique": (38.8, 59.5, 65.3, 2.14)},
             "Fixed RAG@1": {"hotpotqa": (71.1,) * 2 + (100.0, 1.0),
                             "musique": (35.2,) * 2 + (100.0, 1.0)},
             "Fixed RAG@3": {"hotpotqa": (87.5,) * 2 + (100.0, 3.0),
                             "musique": (60.3,) * 2 + (100.0, 3.0)},
             "Adaptive proxy": {"hotpotqa": (77.4,) * 2 + (100.0, 2.32),
                                "musique": (56.9,) * 2 + (100.0, 2.88)}},
}


def _outcome(oa: float, coverage: float, cost: float, n: int) -> Outcome:
    """n episodes with round(coverage·n) commits, round(oa·n) of them right."""
    commits, right = round(coverage / 100 * n), round(oa / 100 * n)
    action = np.array([COMMIT] * commits + ["escalate"] * (n - commits))
    correct = np.array([1.0] * right + [0.0] * (n - right))
    return Outcome(action, correct, np.full(n, cost))


def pooled(model: str, system: str) -> dict[str, float]:
    """The system's measures on both datasets' episodes together, in % / actions."""
    parts = [_outcome(oa, cov, cost, N[d]) for d, (oa, _, cov, cost)
             in TABLE1[model][system].items()]
    out = Outcome(np.concatenate([p.action for p in parts]),
                  np.concatenate([p.correct for p in parts]),
                  np.concatenate([p.retrievals for p in parts]))
    m = measures(out)
    return {k: v * (1 if k == "cost" else 100) for k, v in m.items()}


@pytest.mark.parametrize("model, raw, cal", [
    ("mistral", (35.7, 99.9), (81.6, 43.8)),
    ("gpt", (66.1, 97.6), (87.9, 75.6)),
    ("qwen", (56.8, 98.8), (76.1, 87.7))])
def test_rq2_pooled_ca_and_coverage_at_tau_07(model: str, raw: tuple[float, float],
                                              cal: tuple[float, float]) -> None:
    for system, (ca, cov) in (("Raw-Gated", raw), ("Calibrated-Gated", cal)):
        got = pooled(model, system)
        assert got["CA"] == pytest.approx(ca, abs=0.15), system
        assert got["coverage"] == pytest.approx(cov, abs=0.15), system


def test_rq4_pooled_oa_and_cost_at_budget_3() -> None:
    m_raw, m_cal = pooled("mistral", "Raw-Gated"), pooled("mistral", "Calibrated-Gated")
    assert m_raw["OA"] == pytest.approx(35.7, abs=0.15)
    assert m_cal["OA"] == pytest.approx(35.7, abs=0.15)
    assert (m_raw["cost"], m_cal["cost"]) == (pytest.approx(0.12, abs=0.01),
                                              pytest.approx(2.56, abs=0.01))
    for model, gain, extra in (("gpt", 2.0, 1.10), ("qwen", 10.7, 0.99)):
        raw, cal = pooled(model, "Raw-Gated"), pooled(model, "Calibrated-Gated")
        assert cal["OA"] - raw["OA"] == pytest.approx(gain, abs=0.15)
        assert cal["cost"] - raw["cost"] == pytest.approx(extra, abs=0.01)
    rag3 = [pooled(m, "Fixed RAG@3")["OA"] for m in TABLE1]
    assert (min(rag3), max(rag3)) == (pytest.approx(76.1, abs=0.1), pytest.approx(82.5, abs=0.1))
    proxy = [pooled(m, "Adaptive proxy") for m in TABLE1]
    assert min(p["OA"] for p in proxy) == pytest.approx(67.5, abs=0.1)
    assert max(p["OA"] for p in proxy) == pytest.approx(76.5, abs=0.1)
    assert {round(p["cost"], 2) for p in proxy} == {2.46}
    q_cal, q_rag1 = pooled("qwen", "Calibrated-Gated"), pooled("qwen", "Fixed RAG@1")
    assert q_cal["OA"] - q_rag1["OA"] == pytest.approx(4.5, abs=0.15)
    assert q_cal["cost"] - q_rag1["cost"] == pytest.approx(0.58, abs=0.01)


def test_table1_gated_rows_satisfy_oa_equals_ca_times_coverage() -> None:
    for model, systems in TABLE1.items():
        for system in ("Raw-Gated", "Calibrated-Gated"):
            for dataset, (oa, ca, cov, _) in systems[system].items():
                assert oa == pytest.approx(ca * cov / 100, abs=0.1), (model, system, dataset)


def test_table3_denominator_and_average() -> None:
    n, empty = 2457, 4
    correct = np.zeros((n, 4))
    new = np.ones((n, 4), dtype=bool)
    new[:, 0] = False
    new[:empty, 3] = False  # the third slice is empty: depth 3 copies depth 2
    tr = Traces("m", np.array(["d"] * n), np.arange(n).astype(str), np.full((n, 4), 0.5),
                correct, new)
    ok, _, _ = transition_counts(tr)
    assert ok.sum() == 7367
    rows = {"mistral": (18.4, 3.7, 14.7), "gpt": (16.2, 3.4, 12.8), "qwen": (18.4, 3.6, 14.9)}
    for helpful, harmful, net in rows.values():  # Qwen: 18.4 − 3.6 = 14.8, printed 14.9
        assert helpful - harmful == pytest.approx(net, abs=0.1 + 1e-9)
    average = np.mean(list(rows.values()), axis=0)
    assert average.tolist() == pytest.approx([17.7, 3.6, 14.1], abs=0.05)


def test_table5_split_sizes() -> None:
    assert source_order_counts(3702 + 1852) == (3702, 1852)
    assert source_order_counts(1208 + 605) == (1208, 605)
    n = 5554
    tr = Traces("m", np.array(["hotpotqa"] * n), np.array([f"q{i}" for i in range(n)]),
                np.zeros((n, 4)), np.zeros((n, 4)), np.zeros((n, 4), dtype=bool))
    assert split_mask(tr, 0).mean() == pytest.approx(2 / 3, abs=0.02)
