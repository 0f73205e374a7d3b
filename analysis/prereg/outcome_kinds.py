"""How each kind of registered test turns its data into parts with a verdict.

A part is one number a test's verdict rests on: one unit (model × dataset ×
question set), and where the test asks for several, one regime, condition, regime
family or measure. Each part passes, fails or is n.a. (no data, or too little to
define the number). `analysis.prereg.outcomes` combines the parts into the test's verdict.
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

from analysis.measures.cost import charged_cost
from analysis.measures.delta import delta_regimes, design_contrast, time_matched_contrast
from analysis.measures.dissociation import dissociation
from analysis.measures.hazard import integration_index
from analysis.measures.leaving import leave_delta, switching
from analysis.measures.success import paired_regime_mean, paired_success
from analysis.prereg.outcome_data import TestData, Unit, families
from analysis.stats.bootstrap import Interval, bootstrap_p, holm
from core.conditions import LAMBDA
from core.regimes import MEAN3, MEAN6, regime_family
from core.registered_tests import DEFAULT_BUDGET, bound_rule, named_conditions, named_regimes

Z95 = 1.959963984540054
OPS: Mapping[str, Callable[[float, float], bool]] = MappingProxyType({
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq})
NA = "n.a."
REPORTED = "reported"
"""The verdict of a descriptive part: its number is reported, no verdict is drawn."""
NOT_RUN = "not run by both arms"
MISSING_DATA = ("no episodes of", "no decisions of", NOT_RUN, "no data", "not run at budget")
"""How a part's detail begins (or, for NOT_RUN, contains) when it is n.a. for want of
data, as against a number the data leave undefined."""


@dataclass(frozen=True)
class Part:
    """One number of a test with its own verdict.

    Attributes:
        unit: model × dataset × question set.
        what: what else tells this part apart (regime, condition, family, measure).
        verdict: "pass", "fail" or "n.a." (a `classify` test: the label that held).
        estimate: the point estimate (NaN when undefined).
        ci_low: 95% lower bound (NaN when the kind has none).
        ci_high: 95% upper bound.
        p: the bootstrap p of the test's alternative (paired_diff only; NaN
            otherwise), `analysis.stats.bootstrap.bootstrap_p`.
        p_adjusted: Holm-adjusted p within the part's family (its dataset and
            question set, across models), set whenever `p` is; equal to `p` under
            ``"correction": "none"``.
        detail: counts behind the number, as text.
        holm_m: the family's size (1 under ``"correction": "none"``; 0 without p).
    """

    unit: Unit
    what: str
    verdict: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    p: float = math.nan
    p_adjusted: float = math.nan
    detail: str = ""
    holm_m: int = 0


def _budget(test: Mapping[str, Any]) -> int:
    return int(test.get("budget", DEFAULT_BUDGET))


def _decide(unit: Unit, what: str, iv: Interval | None, on: str, op: str, threshold: float,
            detail: str = "") -> Part:
    """A threshold rule on one interval: `on` (estimate, ci_low, ci_high) `op` threshold."""
    if iv is None:
        return Part(unit, what, NA, detail=detail or "no data")
    value = {"estimate": iv.estimate, "ci_low": iv.low, "ci_high": iv.high}[on]
    if math.isnan(value):
        return Part(unit, what, NA, iv.estimate, iv.low, iv.high, detail=detail or "undefined")
    verdict = "pass" if OPS[op](value, threshold) else "fail"
    return Part(unit, what, verdict, iv.estimate, iv.low, iv.high, detail=detail)


def _metric_frame(ep: pd.DataFrame, metric: str, lam: float) -> pd.DataFrame:
    """Episodes with `correct` replaced by the metric's per-episode value."""
    if metric in ("mean6", "mean3", "success") or ep.empty:
        return ep
    out = ep.copy()
    if metric in ("utility", "utility_all"):
        out["correct"] = (ep["correct"].astype(float)
                          - charged_cost(ep, lam, own=metric == "utility_all"))
    else:  # tool_calls
        out["correct"] = ep["tool_calls"].astype(float)
    return out


def _paired(data: TestData, test: Mapping[str, Any], unit: Unit, regime: str, n_boot: int,
            seed: int) -> tuple[Interval | None, str]:
    """a − b on one regime (or mean6 / mean3) in one unit, paired by question."""
    lam = float(test.get("lam", LAMBDA))
    a = _metric_frame(data.arm(unit, test["a"], _budget(test), mark=False), test["metric"],
                      lam)
    b = _metric_frame(data.arm(unit, test["b"], _budget(test), mark=False), test["metric"],
                      lam)
    if a.empty or b.empty:
        missing = " and ".join(c for c, f in ((test["a"], a), (test["b"], b)) if f.empty)
        return None, f"no episodes of {missing}"
    if regime == "mean3":
        iv, detail = paired_regime_mean(a, b, MEAN3, n_boot, seed)
        _read_paired(data, a, b, MEAN3, iv)
        return iv, detail
    for name, iv in paired_success(a, b, n_boot, seed):
        if name == regime or (regime == "mean6" and name.startswith("mean6")):
            n = iv.n
            _read_paired(data, a, b, MEAN6 if regime == "mean6" else (regime,),
                         iv if iv.defined else None)
            return (iv if iv.defined else None), f"{n} questions"
    return None, f"{regime} {NOT_RUN}"


def _read_paired(data: TestData, a: pd.DataFrame, b: pd.DataFrame, regimes: Sequence[str],
                 iv: Interval | None) -> None:
    """Mark what a paired difference read: both arms' episodes in its regimes on the
    questions both arms ran (nothing when the difference is undefined)."""
    if iv is None:
        return
    common = set(a["question_id"].astype(str)) & set(b["question_id"].astype(str))
    for ep in (a, b):
        keep = ep["regime"].isin(regimes) & ep["question_id"].astype(str).isin(common)
        data.read(ep.loc[keep, "episode_id"])


def _scope(test: Mapping[str, Any]) -> str:
    """The regime a paired test reads: its `regime`, mean3 for metric mean3, or mean6."""
    return test.get("regime") or ("mean3" if test["metric"] == "mean3" else "mean6")


def holm_families(units: Sequence[Unit], ps: Sequence[float], correction: str = "holm"
                  ) -> list[tuple[float, int]]:
    """Holm-adjusted p and family size of each unit's p: one family per dataset and
    question set, across models (the paper: "Holm correction is applied across models
    within each hypothesis"). NaN p values are left out of their family.

    Args:
        units: the parts' units, aligned with `ps`.
        ps: raw p values (NaN where undefined).
        correction: "holm", or "none" (each p is its own family of one).

    Returns:
        (adjusted p, family size) per unit; (NaN, 0) where p is NaN.
    """
    out: list[tuple[float, int]] = [(math.nan, 0)] * len(ps)
    families: dict[tuple[str, str], list[int]] = {}
    for i, (u, p) in enumerate(zip(units, ps)):
        if not math.isnan(p):
            families.setdefault((u.dataset, u.question_set), []).append(i)
    for idx in families.values():
        adjusted = holm([ps[i] for i in idx]) if correction == "holm" else [ps[i] for i in idx]
        m = len(idx) if correction == "holm" else 1
        for i, q in zip(idx, adjusted):
            out[i] = (q, m)
    return out


def paired_diff(data: TestData, test: Mapping[str, Any], units: Sequence[Unit], n_boot: int,
                seed: int) -> list[Part]:
    """a − b per unit: the bootstrap p of the test's alternative (`bootstrap_p`; Holm
    across models per dataset and set) below alpha, or a threshold on the interval."""
    regime = _scope(test)
    found = [(u, *_paired(data, test, u, regime, n_boot, seed)) for u in units]
    if "on" in test:
        return [_decide(u, regime, iv, test["on"], test["op"], test["threshold"], detail)
                for u, iv, detail in found]
    alt = test.get("alternative", "greater")
    ps = [math.nan if iv is None else bootstrap_p(iv, alt) for _, iv, _ in found]
    adjusted = holm_families([u for u, _, _ in found], ps, test.get("correction", "holm"))
    alpha = float(test.get("alpha", 0.05))
    out = []
    for (u, iv, detail), p, (q, m) in zip(found, ps, adjusted):
        if iv is None or math.isnan(p):
            out.append(Part(u, regime, NA, detail=detail))
            continue
        out.append(Part(u, regime, "pass" if q < alpha else "fail", iv.estimate, iv.low,
                        iv.high, p, q, detail, m))
    return out


def noninferiority(data: TestData, test: Mapping[str, Any], units: Sequence[Unit],
                   n_boot: int, seed: int) -> list[Part]:
    """95% lower bound of a − b above the margin, per unit and regime."""
    regimes = named_regimes(test) or [_scope(test)]
    return [_decide(u, r, iv, "ci_low", ">", test["margin"], detail)
            for u in units for r in regimes
            for iv, detail in [_paired(data, test, u, r, n_boot, seed)]]


def _split_families(test: Mapping[str, Any], dec: pd.DataFrame
                    ) -> list[tuple[str, pd.DataFrame]]:
    """The test's regimes, or one slice per regime family present."""
    if named_regimes(test):
        return [("", dec.loc[dec["regime"].isin(named_regimes(test))])]
    fams = families(sorted(dec["regime"].unique())) if len(dec) else [("", ())]
    return [(f if len(fams) > 1 else "", dec.loc[dec["regime"].isin(rs)]) for f, rs in fams]


def _delta_slice(test: Mapping[str, Any], dec: pd.DataFrame) -> pd.DataFrame:
    """The decisions Δ pools in one family's slice: in the main family its five failure
    regimes, clean left out as the main paper computes Δ (App. C.1), unless the test
    names its regimes (then exactly those, clean too if named)."""
    if named_regimes(test) or dec.empty:
        return dec
    present = sorted(str(r) for r in dec["regime"].unique())
    return dec.loc[dec["regime"].isin(delta_regimes(regime_family(present[0]), present))]


def bound(data: TestData, test: Mapping[str, Any], units: Sequence[Unit], n_boot: int,
          seed: int) -> list[Part]:
    """Δ, I or the design-label contrast against a threshold, per unit and condition."""
    on, op = bound_rule(test)
    conditions = named_conditions(test)
    out = []
    for u in units:
        for c in conditions:
            dec_all = data.arm_decisions(u, c, _budget(test), mark=False)
            for fam, dec in _split_families(test, dec_all):
                what = " ".join(x for x in (c if len(conditions) > 1 else "", fam) if x)
                if test["kind"] == "delta_bound":
                    dec = _delta_slice(test, dec)
                if dec.empty:
                    out.append(Part(u, what, NA, detail=f"no decisions of {c}"))
                    continue
                data.read(dec["episode_id"].unique())
                if test["kind"] == "delta_bound":
                    con = time_matched_contrast(dec, test.get("judgments", "side_channel"),
                                                test.get("strata", "t"), n_boot, seed)
                    iv, detail = con.interval, con.detail
                elif test["kind"] == "design_contrast_bound":
                    con = design_contrast(dec, n_boot, seed)
                    iv, detail = con.interval, con.detail
                else:
                    ii = integration_index(dec, n_boot, seed)
                    iv, detail = ii.index, f"h45 over {ii.n45}, h12 over {ii.n12} decisions"
                out.append(_decide(u, what, iv, on, op, test["threshold"], detail))
    return out


def _answer_value(ep: pd.DataFrame, test: Mapping[str, Any], measure: str
                  ) -> tuple[float, str]:
    answered = ep.loc[ep["answered"].astype(bool)]
    if measure == "median_action":
        value = float(np.median(answered["answer_action"])) if len(answered) else math.nan
        return value, f"{len(answered)} answers"
    if measure == "tool_calls":
        return (float(ep["tool_calls"].mean()) if len(ep) else math.nan), f"{len(ep)} episodes"
    if test.get("at_action"):
        hits = int((answered["answer_action"] == test["at_action"]).sum())
        return (hits / len(answered) if len(answered) else math.nan), f"{hits}/{len(answered)}"
    return (len(answered) / len(ep) if len(ep) else math.nan), f"{len(answered)}/{len(ep)}"


def _episode_slices(test: Mapping[str, Any], ep: pd.DataFrame
                    ) -> list[tuple[str, pd.DataFrame]]:
    if test.get("regime"):
        return [("", ep.loc[ep["regime"] == test["regime"]])]
    return _split_families(test, ep)


def answers(data: TestData, test: Mapping[str, Any], units: Sequence[Unit]) -> list[Part]:
    """median_action / answered_share: a point value `op` value, per unit and condition."""
    conditions = named_conditions(test)
    out = []
    for u in units:
        for c in conditions:
            for fam, ep in _episode_slices(test, data.arm(u, c, _budget(test), mark=False)):
                data.read(ep["episode_id"])
                value, detail = _answer_value(ep, test, test["kind"])
                what = " ".join(x for x in (c if len(conditions) > 1 else "", fam) if x)
                iv = Interval(value) if not math.isnan(value) else None
                out.append(_decide(u, what, iv, "estimate", test["op"], test["value"], detail))
    return out


def budget_contrast(data: TestData, test: Mapping[str, Any], units: Sequence[Unit]
                    ) -> list[Part]:
    """metric at budgets[0] − metric at budgets[1] (|…| when absolute) `op` threshold, on
    the same regimes at both budgets: the test's regime(s), or every regime both
    budgets ran, one part per regime family (the part names the regimes)."""
    hi, lo = test["budgets"]
    conditions = named_conditions(test)
    out = []
    for u in units:
        for c in conditions:
            ep_hi, ep_lo = data.arm(u, c, hi, mark=False), data.arm(u, c, lo, mark=False)
            ran_hi, ran_lo = set(ep_hi["regime"].astype(str)), set(ep_lo["regime"].astype(str))
            prefix = c if len(conditions) > 1 else ""
            named = named_regimes(test)
            if named:
                absent = [(r, b) for r in named for b, ran in ((hi, ran_hi), (lo, ran_lo))
                          if r not in ran]
                if absent:
                    out.append(Part(u, prefix, NA, detail=f"{absent[0][0]} not run at budget "
                                                          f"{absent[0][1]}"))
                    continue
                slices = [("", tuple(named))]
            else:
                common = sorted(ran_hi & ran_lo)
                if not common:
                    out.append(Part(u, prefix, NA, detail=f"no regime run at both {hi} and {lo}"
                                    if len(ep_hi) and len(ep_lo) else f"no episodes of {c}"))
                    continue
                fams = families(common)
                slices = [(f if len(fams) > 1 else "", rs) for f, rs in fams]
            for fam, regimes in slices:
                at_hi = ep_hi.loc[ep_hi["regime"].isin(regimes)]
                at_lo = ep_lo.loc[ep_lo["regime"].isin(regimes)]
                data.read(at_hi["episode_id"])
                data.read(at_lo["episode_id"])
                v_hi, d_hi = _answer_value(at_hi, test, test["metric"])
                v_lo, d_lo = _answer_value(at_lo, test, test["metric"])
                diff = v_hi - v_lo
                if test.get("absolute"):
                    diff = abs(diff)
                what = " ".join(x for x in (prefix, fam) if x)
                detail = (f"{hi}: {v_hi:.3g} ({d_hi}); {lo}: {v_lo:.3g} ({d_lo}); regimes at "
                          f"both: {', '.join(regimes)}")
                iv = None if math.isnan(diff) else Interval(diff)
                out.append(_decide(u, what, iv, "estimate", test["op"], test["threshold"],
                                   detail))
    return out


def wilson(k: float, n: int) -> Interval:
    """k/n with its Wilson 95% interval (NaN when n = 0); k may be fractional (a
    question whose seeds disagree counts the share of them that answered)."""
    if n == 0:
        return Interval(math.nan)
    p = k / n
    den = 1 + Z95 ** 2 / n
    mid = (p + Z95 ** 2 / (2 * n)) / den
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / den
    return Interval(p, max(0.0, mid - half), min(1.0, mid + half), n)


def dissociation_parts(data: TestData, test: Mapping[str, Any], units: Sequence[Unit]
                       ) -> list[Part]:
    """Share of questions answered once the own useless run reached k, a question's seeds
    averaged (`analysis.measures.dissociation`; Wilson interval on the question counts)."""
    conditions = named_conditions(test)
    on = test.get("on", "estimate")
    out = []
    for u in units:
        for c in conditions:
            regime = test.get("regime", "persistent")
            dec = data.arm_decisions(u, c, _budget(test), mark=False)
            what = c if len(conditions) > 1 else ""
            if dec.empty:
                out.append(Part(u, what, NA, detail=f"no decisions of {c}"))
                continue
            data.read(dec.loc[dec["regime"] == regime, "episode_id"].unique())
            d = dissociation(dec, test.get("judgments", "side_channel"), test.get("k", 5),
                             regime)
            detail = (f"{d.answered:g}/{d.questions} questions answered after a run of {d.k} "
                      f"in {d.regime}")
            if 0 < d.questions < test.get("min_questions", 1):
                iv = wilson(d.answered, d.questions)
                out.append(Part(u, what, REPORTED, iv.estimate, iv.low, iv.high,
                                detail=detail + f"; descriptive (< {test['min_questions']})"))
                continue
            out.append(_decide(u, what, wilson(d.answered, d.questions) if d.questions else None,
                               on, test["op"], test["threshold"], detail))
    return out


def cohen_kappa(x: np.ndarray, y: np.ndarray) -> float:
    """Cohen's κ of two binary ratings (NaN when undefined)."""
    x, y = np.asarray(x, dtype=bool), np.asarray(y, dtype=bool)
    if len(x) == 0:
        return math.nan
    po = float((x == y).mean())
    pe = float(x.mean() * y.mean() + (1 - x.mean()) * (1 - y.mean()))
    return (po - pe) / (1 - pe) if pe < 1 else math.nan


def judgment_validity(data: TestData, test: Mapping[str, Any], units: Sequence[Unit]
                      ) -> list[Part]:
    """USELESS on failed (≥), on real (≤) observations; κ stated vs side channel (≥)."""
    conditions = named_conditions(test)
    out = []
    for u in units:
        for c in conditions:
            st = data.arm_steps(u, c, _budget(test), named_regimes(test) or None)
            obs = st.loc[st["obs_index"].notna() & st["judgment"].notna()]
            failed = obs["obs_failed"].fillna(0).astype(bool)
            useless = obs["judgment"] == "USELESS"
            prefix = f"{c} " if len(conditions) > 1 else ""
            rules = (("useless_on_failed", failed, ">="), ("useless_on_real", ~failed, "<="))
            for key, mask, op in rules:
                if key in test:
                    k, n = int((mask & useless).sum()), int(mask.sum())
                    out.append(_decide(u, prefix + key, wilson(k, n) if n else None, "estimate",
                                       op, test[key], f"{k}/{n} judged USELESS"))
            if "kappa" in test:
                both = obs.loc[obs["stated_judgment"].isin(["useless", "useful"])]
                kappa = cohen_kappa(both["judgment"] == "USELESS",
                                    both["stated_judgment"] == "useless")
                iv = None if math.isnan(kappa) else Interval(kappa, n=len(both))
                out.append(_decide(u, prefix + "kappa", iv, "estimate", ">=", test["kappa"],
                                   f"{len(both)} observations with both judgments"))
    return out


def leaving_parts(data: TestData, test: Mapping[str, Any], units: Sequence[Unit], n_boot: int,
                  seed: int) -> list[Part]:
    """A leaving measure (`analysis.measures.leaving`) `op` threshold, per unit and condition.

    The switching shares read the failing-primary regimes; leave_delta reads every
    decision of the arm (its interval: `on` ci_low / ci_high).
    """
    conditions = named_conditions(test)
    out = []
    for u in units:
        for c in conditions:
            what = c if len(conditions) > 1 else ""
            ep = data.arm(u, c, _budget(test))
            steps = data.arm_steps(u, c, _budget(test))
            if test["metric"] == "leave_delta":
                con = leave_delta(data.arm_decisions(u, c, _budget(test)), steps, n_boot, seed)
                iv, detail = (con.interval if con.n_a + con.n_b else None), con.detail
            else:
                sw = switching(ep, steps)
                value = sw.value(test["metric"])
                iv = None if math.isnan(value) else Interval(value)
                detail = f"{sw.episodes} episodes on a failing primary, {sw.exits} exits"
            out.append(_decide(u, what, iv, test.get("on", "estimate"), test["op"],
                               test["threshold"], detail))
    return out
