"""Results rows shaped like `lab results --format json`'s, for a study too large to
simulate in a test: models × arms × two budgets × two runs (one confirmatory, one
exploratory) × the main regime family and `plausible`. The figures draw them directly
(`synthetic_study`), so a drawing check needs no lab.db.
"""

from __future__ import annotations

import itertools
from typing import Any

from analysis.figures.study import RowDict, StudyRows
from core.regimes import FAILURE_REGIMES, MEAN6
from core.store.selection import Selection

MODELS = ("qwen3-8b", "llama-3.1-8b")
ARMS = ("none", "budget", "enforced_rule:k=7", "stated_rule", "two_source")
BUDGETS = (8, 16)
RUNS = (("confirm", "A1"), ("pilot", "exploratory"))
"""(run, amendment): the first is confirmatory, the second exploratory."""
FAMILIES = {"main": ",".join(MEAN6), "plausible": "plausible"}
HAZARD_FAMILIES = {"main": ",".join(FAILURE_REGIMES), "plausible": "plausible"}


def _row(table: str, model: str, arm: str, budget: int, run: tuple[str, str],
         regimes: str, measure: str, scope: str, estimate: float | None,
         half: float = 0.1) -> RowDict:
    low = None if estimate is None else estimate - half
    high = None if estimate is None else estimate + half
    return {"table": table, "model": model, "arm": arm, "condition": arm.split(":")[0],
            "condition_hash": "0" * 64, "budget": budget, "dataset": "hotpot",
            "question_set": "fresh30", "runs": run[0], "amendment": run[1], "seeds": "0",
            "replicates": "0", "regimes": regimes, "measure": measure, "scope": scope,
            "estimate": estimate, "ci_low": low, "ci_high": high, "n": 30,
            "unit": "questions", "p": None, "p_holm": None, "holm_m": 0, "judgments": "",
            "detail": "", "errored": 0, "version": "0.1.0",
            "provenance": f"{run[0]}: {run[1]}"}


def study_table_rows() -> dict[str, list[RowDict]]:
    """Every table's rows of the synthetic study; estimates differ by group so that a
    line joining two groups zig-zags."""
    rows: dict[str, list[RowDict]] = {t: [] for t in (
        "success", "hazard", "delta", "budgets", "cost", "leaving", "judgments")}
    for (m_i, model), (a_i, arm), budget, run in itertools.product(
            enumerate(MODELS), enumerate(ARMS), BUDGETS, RUNS):
        base = 0.1 + 0.05 * a_i + 0.02 * m_i + (0.1 if budget == 16 else 0.0)
        for fam, regimes in FAMILIES.items():
            shift = 0.3 if fam == "plausible" else 0.0
            for r_i, regime in enumerate(regimes.split(",")):
                undefined = arm == "two_source" and regime == "clean"  # drawn "n.a."
                rows["success"].append(_row("success", model, arm, budget, run, regime,
                                            "success", regime, None if undefined else
                                            base + 0.02 * r_i + shift))
            if fam == "main":
                rows["success"].append(_row("success", model, arm, budget, run, regimes,
                                            "success", "mean6", base))
            hz = HAZARD_FAMILIES[fam]
            for j in range(8):
                rows["hazard"].append(_row("hazard", model, arm, budget, run, hz, "hazard",
                                           f"j={j}", min(0.9, base + 0.05 * j + shift)))
            for measure, scope in (("beta", "pooled"), ("beta", "question FE"),
                                   ("gamma", "pooled"), ("gamma", "question FE")):
                rows["hazard"].append(_row("hazard", model, arm, budget, run, hz, measure,
                                           scope, 0.05 * a_i - shift, 0.05))
            for scope in ("own judgments, by t", "stated judgments, by t"):
                rows["delta"].append(_row("delta", model, arm, budget, run, regimes,
                                          "delta", scope, 0.1 * a_i - shift))
            rows["cost"].append(_row("cost", model, arm, budget, run, regimes, "utility",
                                     "", base - 0.05 * budget / 8))
            rows["cost"].append(_row("cost", model, arm, budget, run, regimes,
                                     "tool calls", "", 2.0 + a_i + budget / 4, 0.5))
            rows["cost"].append(_row("cost", model, arm, budget, run, regimes,
                                     "success", "mean6" if fam == "main" else regimes,
                                     base + shift))
            if arm == "none":
                rows["judgments"].append(_row("judgments", model, arm, budget, run, regimes,
                                              "USELESS on failed", "", 0.97 - 0.01 * m_i))
                if fam == "main":
                    rows["judgments"].append(_row(
                        "judgments", model, arm, budget, run, "persistent",
                        "answered after 5 own useless", "", 0.05 + 0.02 * m_i))
        if budget == 8:
            for regime in ("persistent", "plausible"):
                for b in BUDGETS:
                    rows["budgets"].append(_row(
                        "budgets", model, arm, 8, run, regime, f"median_action@{b}",
                        f"{regime} · 16 vs 8", 3.0 + a_i + b / 8, 0.5))
            if arm == "two_source":
                for measure in ("switched_by_4", "ever_switched", "leave_delta"):
                    rows["leaving"].append(_row("leaving", model, arm, budget, run,
                                                "persistent", measure, "failing primary",
                                                0.4 + 0.1 * m_i))
    return rows


def trace_table2_rows() -> list[RowDict]:
    """The second seed's Table 2 rows (ECE raw and calibrated by depth) of one trace
    model on two datasets, as `lab results trace_table2 --format json` gives them."""
    out = []
    for dataset, depth, (measure, est) in itertools.product(
            ("hotpotqa", "nq"), range(4), (("ece_raw", 0.3), ("ece_cal", 0.1))):
        row = _row("trace_table2", "sim-trace", f"depth {depth}", 0, ("sim", ""), "",
                   measure, "", est - 0.02 * depth, 0.0)
        out.append(row | {"budget": None, "dataset": dataset, "question_set": "sim",
                          "ci_low": None, "ci_high": None, "seeds": "", "replicates": "",
                          "condition_hash": "", "unit": "answer states"})
    return out


def synthetic_study(rows: dict[str, list[RowDict]] | None = None,
                    **fields: Any) -> StudyRows:
    """A StudyRows holding `rows` (default `study_table_rows()`), with no lab.db."""
    table_rows = study_table_rows() if rows is None else rows
    provenance: list[dict[str, Any]] = [
        {"run": run, "amendment": None if amendment == "exploratory" else amendment,
         "deviations": []} for run, amendment in RUNS]
    values: dict[str, Any] = {
        "tables": (), "rows": table_rows, "provenance": provenance,
        "runs": tuple(r for r, _ in RUNS), "errored": 0, "pooled": "", "n_episodes": 7200,
        "selection": Selection(), "resamples": 200, "seed": 0,
        "amendments": [{"id": "A1", "title": "main study", "state": "frozen",
                        "frozen_at": "2026-12-04T10:00:00+00:00",
                        "content_sha256": "a" * 64, "prev_sha256": None}]}
    values.update(fields)
    return StudyRows(**values)


def lone_table_study(names: tuple[str, ...] | None = None, lone: str = "leaving"
                     ) -> StudyRows:
    """The synthetic study whose `lone` table's rows come only from the exploratory run
    and only at the larger budget: on its own rows that table would choose that run and
    budget, where the study's confirmatory runs and primary budget have none. Only the
    tables `names` when given (as `study_rows(names=…)` computes them)."""
    rows = study_table_rows()
    rows[lone] = [r | {"budget": 16} for r in rows[lone] if r["runs"] == "pilot"]
    return synthetic_study({t: r for t, r in rows.items() if names is None or t in names})
