"""Registered tests of a pre-registration amendment, evaluated on the data (SPEC §12).

Each test becomes an Outcome like a line of the paper's Tables 4–5: the document,
the test id, the prediction, pass / fail / n.a. and the numbers with 95%
intervals, plus whether every episode it used started after the amendment was
frozen (checked against lab.db, not taken on trust).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from analysis.delta import time_matched_contrast
from analysis.hazard import integration_index
from analysis.measures import Frames
from analysis.stats import Interval, holm
from analysis.success import paired_success
from core.conditions import parse_condition

LAMBDA = 0.05
OPS: Mapping[str, Callable[[float, float], bool]] = MappingProxyType({
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq})


@dataclass(frozen=True)
class Outcome:
    """One registered test's verdict."""

    document: str
    test_id: str
    prediction: str
    outcome: str
    numbers: str
    after_freeze: bool | None
    episodes: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def _fmt(x: float, signed: bool = True) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _iv(iv: Interval) -> str:
    return f"{_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}]"


def prediction_text(test: Mapping[str, Any]) -> str:
    """A one-line reading of a registered test (its own `prediction` if given)."""
    if test.get("prediction"):
        return str(test["prediction"])
    kind = test["kind"]
    where = f" on {test['regime']}" if test.get("regime") else ""
    if kind == "paired_diff":
        sign = {"greater": ">", "less": "<"}.get(test.get("alternative", "greater"), "≠")
        corr = ", Holm" if test.get("correction", "holm") == "holm" else ""
        return f"{test['a']} {sign} {test['b']} ({test['metric']}{where}); one-sided{corr}"
    if kind == "noninferiority":
        return f"{test['a']} ≥ {test['b']} {test['margin']:+g} ({test['metric']}{where}; 95% LB)"
    if kind in ("delta_bound", "index_bound"):
        name = "Δ" if kind == "delta_bound" else "I"
        side = "upper bound" if test["bound"] == "upper" else "lower bound"
        cmp = test.get("comparison", "<" if test["bound"] == "upper" else ">")
        return f"{name}({test['condition']}) 95% {side} {cmp} {test['threshold']:+g}"
    if kind == "median_action":
        return f"median answering action of {test['condition']}{where} {test['op']} {test['value']:g}"
    at = f" at action {test['at_action']}" if test.get("at_action") else ""
    return f"share answered{at} of {test['condition']}{where} {test['op']} {test['value']:g}"


class _Data:
    """In-scope episodes and decisions, selectable by model and condition."""

    def __init__(self, frames: Frames, scope: Mapping[str, Any]) -> None:
        self.scope = scope
        ep = frames.episodes
        hashes = {parse_condition(c).spec_hash() for c in scope.get("conditions", [])}
        mask = (ep["model"].isin(scope.get("models", [])) & ep["condition_hash"].isin(hashes)
                & ep["regime"].isin(scope.get("regimes", []))
                & ep["question_set"].isin(scope.get("question_sets", []))
                & ep["budget"].isin(scope.get("budgets", [8])))
        self.episodes = ep.loc[mask]
        self.decisions = frames.decisions.loc[
            frames.decisions["episode_id"].isin(self.episodes["episode_id"])]
        self.used: set[int] = set()

    def _hash(self, condition: str) -> str:
        for c in self.scope.get("conditions", []):
            if c == condition:
                return parse_condition(c).spec_hash()
        return parse_condition(condition).spec_hash()

    def arm(self, model: str, condition: str, regime: str | None = None) -> pd.DataFrame:
        ep = self.episodes
        sel = ep.loc[(ep["model"] == model) & (ep["condition_hash"] == self._hash(condition))]
        if regime:
            sel = sel.loc[sel["regime"] == regime]
        self.used.update(int(i) for i in sel["episode_id"])
        return sel

    def arm_decisions(self, model: str, condition: str) -> pd.DataFrame:
        ids = self.arm(model, condition)["episode_id"]
        return self.decisions.loc[self.decisions["episode_id"].isin(ids)]


def _metric_frame(ep: pd.DataFrame, metric: str) -> pd.DataFrame:
    if metric in ("mean6", "success"):
        return ep
    out = ep.copy()
    if metric == "utility":
        out["correct"] = ep["correct"].astype(float) - LAMBDA * ep["tool_calls"].astype(float)
    else:
        out["correct"] = ep["tool_calls"].astype(float)
    return out


def _paired(data: _Data, test: Mapping[str, Any], model: str, regime_key: str,
            n_boot: int, seed: int) -> Interval | None:
    a = _metric_frame(data.arm(model, test["a"]), test["metric"])
    b = _metric_frame(data.arm(model, test["b"]), test["metric"])
    if a.empty or b.empty:
        return None
    label = "mean6" if regime_key == "mean6" else regime_key
    for name, iv in paired_success(a, b, n_boot, seed):
        if name == label or (label == "mean6" and name.startswith("mean6")):
            return iv if iv.defined else None
    return None


def _eval_paired(data: _Data, test: Mapping[str, Any], models: Sequence[str], n_boot: int,
                 seed: int) -> tuple[str, str]:
    key = test.get("regime") or "mean6"
    ivs = {m: _paired(data, test, m, key, n_boot, seed) for m in models}
    have = {m: iv for m, iv in ivs.items() if iv is not None}
    if not have:
        return "n.a.", "no paired data"
    alt = test.get("alternative", "greater")
    ps = []
    for iv in have.values():
        greater = iv.p  # share of resampled differences <= 0
        p = greater if alt == "greater" else (1 - greater if alt == "less" else
                                              min(1.0, 2 * min(greater, 1 - greater)))
        ps.append(max(p, 1.0 / max(iv.n_boot, 1)) if not math.isnan(p) else math.nan)
    adjusted = holm(ps) if test.get("correction", "holm") == "holm" and len(ps) > 1 else ps
    alpha = float(test.get("alpha", 0.05))
    passed = [p < alpha for p in adjusted]
    parts = [f"{m} {_iv(iv)} p={p:.3f}" + (f" (Holm {q:.3f})" if q != p else "")
             for (m, iv), p, q in zip(have.items(), ps, adjusted)]
    missing = [m for m in models if m not in have]
    verdict = "pass" if all(passed) and not missing else "fail"
    tally = f"{sum(passed)}/{len(models)}"
    return verdict, f"{tally}: " + "; ".join(parts) + (
        f"; no data: {', '.join(missing)}" if missing else "")


def _eval_noninferiority(data: _Data, test: Mapping[str, Any], models: Sequence[str],
                         n_boot: int, seed: int) -> tuple[str, str]:
    regimes = test.get("regimes") or [test.get("regime") or "mean6"]
    parts, passed, total = [], 0, 0
    for m in models:
        for r in regimes:
            total += 1
            iv = _paired(data, test, m, r, n_boot, seed)
            if iv is None:
                parts.append(f"{m} {r}: no data")
                continue
            ok = iv.low > test["margin"]
            passed += ok
            parts.append(f"{m} {r}: {_iv(iv)} LB {'>' if ok else '≤'} {test['margin']:+g}")
    if total and all(p.endswith("no data") for p in parts):
        return "n.a.", "; ".join(parts)
    return ("pass" if passed == total else "fail"), f"{passed}/{total}: " + "; ".join(parts)


def _eval_bound(data: _Data, test: Mapping[str, Any], models: Sequence[str], n_boot: int,
                seed: int) -> tuple[str, str]:
    upper = test["bound"] == "upper"
    cmp = OPS[test.get("comparison", "<" if upper else ">")]
    parts, passed, defined = [], 0, 0
    for m in models:
        dec = data.arm_decisions(m, test["condition"])
        if test["kind"] == "delta_bound":
            iv = time_matched_contrast(dec, test.get("judgments", "side_channel"),
                                       n_boot=n_boot, seed=seed).interval
        else:
            iv = integration_index(dec, n_boot, seed).index
        if dec.empty or not iv.defined:
            parts.append(f"{m}: –")
            continue
        defined += 1
        bound = iv.high if upper else iv.low
        ok = bool(cmp(bound, test["threshold"]))
        passed += ok
        parts.append(f"{m} {_iv(iv)}")
    if not defined:
        return "n.a.", "undefined (no decisions in the groups compared)"
    return _verdict(passed, defined, len(models)), f"{passed}/{len(models)}: " + "; ".join(parts)


def _eval_answers(data: _Data, test: Mapping[str, Any], models: Sequence[str]
                  ) -> tuple[str, str]:
    cmp = OPS[test["op"]]
    parts, passed, defined = [], 0, 0
    for m in models:
        ep = data.arm(m, test["condition"], test.get("regime"))
        answered = ep.loc[ep["answered"].astype(bool)]
        if test["kind"] == "median_action":
            value = float(np.median(answered["answer_action"])) if len(answered) else math.nan
            text = f"{m} median {_fmt(value, False)} ({len(answered)} answers)"
        elif test.get("at_action"):
            hits = int((answered["answer_action"] == test["at_action"]).sum())
            value = hits / len(answered) if len(answered) else math.nan
            text = f"{m} {hits}/{len(answered)} = {_fmt(value, False)}"
        else:
            value = len(answered) / len(ep) if len(ep) else math.nan
            text = f"{m} {len(answered)}/{len(ep)} = {_fmt(value, False)}"
        parts.append(text)
        if math.isnan(value):
            continue
        defined += 1
        passed += bool(cmp(value, test["value"]))
    if not defined:
        return "n.a.", "no episodes"
    return _verdict(passed, defined, len(models)), f"{passed}/{len(models)}: " + "; ".join(parts)


def _verdict(passed: int, defined: int, total: int) -> str:
    """fail if any defined model fails; n.a. if all defined pass but some are undefined."""
    if passed < defined:
        return "fail"
    return "pass" if defined == total else "n.a."


def evaluate(amendment: Mapping[str, Any], frames: Frames, n_boot: int = 2000,
             seed: int = 0) -> list[Outcome]:
    """Evaluate every registered test of one amendment on the in-scope episodes.

    Args:
        amendment: the amendment row (tests, scope, frozen_at, id).
        frames: the analysis frames of lab.db (all runs).
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        One Outcome per registered test, in registration order.
    """
    scope = amendment.get("scope") or {}
    out = []
    for test in amendment.get("tests") or []:
        data = _Data(frames, scope)
        models = test.get("models") or scope.get("models", [])
        kind = test["kind"]
        if kind == "paired_diff":
            verdict, numbers = _eval_paired(data, test, models, n_boot, seed)
        elif kind == "noninferiority":
            verdict, numbers = _eval_noninferiority(data, test, models, n_boot, seed)
        elif kind in ("delta_bound", "index_bound"):
            verdict, numbers = _eval_bound(data, test, models, n_boot, seed)
        else:
            verdict, numbers = _eval_answers(data, test, models)
        used = data.episodes.loc[data.episodes["episode_id"].isin(data.used)]
        after = None
        if amendment.get("frozen_at") and len(used):
            after = bool((used["started_at"] > amendment["frozen_at"]).all())
        out.append(Outcome(amendment["id"], test["id"], prediction_text(test), verdict,
                           numbers, after, len(used)))
    return out

