"""Matched trajectory replay's Tables 1–3, its sweeps and its calibration record, as
`lab results` tables on stored traces (matched-trajectory-replay §4–§5).

Every table reads the test split only, through one frozen map per model
(`analysis.replay.traces`): fitted on the calibration split's depth-zero records
pooled over datasets. Groups are model × dataset, plus every dataset micro-pooled
("a+b": each question one episode, as the paper's figures pool) when there are
several. Fractions, not percentages.

- trace_table1: Parametric only, Fixed RAG@1–3, Adaptive proxy, Raw-Gated,
  Calibrated-Gated: OA, CA, coverage, cost (mean retrievals) with question-bootstrap
  95% CIs, abstain and escalate rates, and Calibrated − Raw differences paired by
  question (the paper's Table 1).
- trace_table2: held-out ECE (10 equal-width bins) by depth, raw and calibrated, and
  the top bin [0.9, 1]: its share of states, mean raw confidence, accuracy and mean
  calibrated confidence (the paper's Table 2, App. B.1).
- trace_table3: adjacent transitions t → t+1 whose next slice is non-empty: helpful
  (wrong → correct), harmful (correct → wrong) and net, as shares of transitions, with
  question-bootstrap CIs, and their average over models (the paper's Table 3).
- trace_sweeps: OA, CA, coverage, cost and risk (1 − CA) of Raw-/Calibrated-Gated as
  τ_hi varies over the paper's Fig. 3 thresholds and as the budget varies 0–3 (Fig. 4),
  the baselines as points, AURC of the test states, and reliability bins by depth.
- trace_calibration: each model's split (one row per question), the records the map
  was fitted on, and the map's points.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from analysis.base.rows import Row, Table
from analysis.replay.calibration import N_BINS, ece, risk_coverage
from analysis.replay.controllers import ABSTAIN, ESCALATE, Gate
from analysis.replay.traces import (
    DEPTHS,
    MEASURES,
    FittedMap,
    Outcome,
    Traces,
    build_traces,
    commit_at,
    fit_map,
    gated,
    measures,
    split_mask,
    systems,
)
from analysis.stats.bootstrap import N_BOOT, Interval, bootstrap_intervals, safe_ratio
from core.errors import ConfigError

THRESHOLDS = (0.20, 0.33, 0.50, 0.67, 0.70, 0.80, 0.90, 0.95)
"""τ_hi of the threshold sweep: the paper's Fig. 3 thresholds and its operating point 0.7."""
GATED = ("Raw-Gated", "Calibrated-Gated")
DIFF = "Calibrated − Raw"


@dataclass(frozen=True)
class TraceSettings:
    """How the tables replay the traces.

    Attributes:
        gate: π's thresholds and budget.
        fit_depths: "0" (the seed) or "all".
        split_seed: seed of the calibration/test split.
        label: "correct" (the dataset's scorer) or "judge_correct".
    """

    gate: Gate = field(default_factory=Gate)
    fit_depths: str = "0"
    split_seed: int = 0
    label: str = "correct"

    def __post_init__(self) -> None:
        if self.fit_depths not in ("0", "all"):
            raise ConfigError(f"--fit-depths must be 0 or all, not {self.fit_depths!r}")
        if self.label not in ("correct", "judge_correct"):
            raise ConfigError(f"label must be correct or judge_correct, not {self.label!r}")

    @property
    def text(self) -> str:
        """What every row says about how it was computed."""
        depths = "depth 0" if self.fit_depths == "0" else "all depths"
        return (f"{self.gate.text}; map fitted on {depths} of the calibration split "
                f"(2/3 of the questions by a seeded hash, split seed {self.split_seed}; "
                f"not the seed's source-order split); label {self.label}")


@dataclass(frozen=True)
class ModelFit:
    """One model's traces, split and frozen map.

    Attributes:
        traces: every question's traces.
        cal: (Q,) True for the calibration split.
        fitted: the map and its records.
        runs: the runs its rows come from, comma-separated.
        sets: the question sets, joined by "+".
    """

    traces: Traces
    cal: np.ndarray
    fitted: FittedMap
    runs: str
    sets: str

    @property
    def test(self) -> Traces:
        """The test split's traces."""
        return self.traces.take(~self.cal)


@dataclass(frozen=True)
class TraceInput:
    """What a trace table's function takes (each is registered by name in
    `analysis.tables.registry`): every model's split and map, prepared once for all the
    tables asked.

    Attributes:
        fits: `prepare` of the selection's traces.
        settings: π, split, fit and label.
        questions: question id → text (the Adaptive proxy); empty leaves it out.
        n_boot: question resamples.
        seed: bootstrap seed.
    """

    fits: Sequence[ModelFit]
    settings: TraceSettings
    questions: Mapping[str, str] = field(default_factory=dict)
    n_boot: int = N_BOOT
    seed: int = 0


def prepare(frame: pd.DataFrame, settings: TraceSettings) -> list[ModelFit]:
    """Split each model's questions and fit its map on the calibration split.

    Args:
        frame: `load_traces` rows.
        settings: split, fit and label.

    Returns:
        One ModelFit per model, sorted by name.
    """
    out = []
    for model in sorted(frame["model"].unique()):
        rows = frame.loc[frame["model"] == model]
        tr = build_traces(rows, model, settings.label)
        cal = split_mask(tr, settings.split_seed)
        out.append(ModelFit(tr, cal, fit_map(tr.take(cal), settings.fit_depths),
                            ",".join(sorted(map(str, rows["run"].unique()))),
                            "+".join(sorted(map(str, rows["set_name"].unique())))))
    return out


def groups(traces: Traces) -> Iterator[tuple[str, Traces]]:
    """(dataset, its traces) per dataset, then every dataset micro-pooled when several."""
    names = sorted(set(traces.dataset))
    for name in names:
        yield name, traces.take(traces.dataset == name)
    if len(names) > 1:
        yield "+".join(names), traces


def _row(fit: ModelFit, system: str, measure: str, dataset: str, estimate: float,
         n: int = 0, unit: str = "questions", scope: str = "",
         interval: Interval | None = None, detail: str = "", budget: int | None = None
         ) -> Row:
    low, high = (interval.low, interval.high) if interval else (math.nan, math.nan)
    return Row(fit.traces.model, system, budget, measure, scope, float(estimate), low, high,
               n, unit, detail=detail, runs=fit.runs, arm=system, dataset=dataset,
               question_set=fit.sets)


def _outcome_columns(outs: Sequence[Outcome]) -> tuple[np.ndarray, ...]:
    """(correct, committed, retrievals, abstained, escalated), each (K, Q)."""
    return (np.array([o.correct for o in outs]), np.array([o.committed for o in outs]),
            np.array([o.retrievals for o in outs]),
            np.array([(o.action == ABSTAIN).astype(float) for o in outs]),
            np.array([(o.action == ESCALATE).astype(float) for o in outs]))


def outcome_intervals(outs: Sequence[Outcome], pairs: Sequence[tuple[int, int]] = (),
                      n_boot: int = N_BOOT, seed: int = 0) -> list[dict[str, Interval]]:
    """OA, CA, coverage, cost, abstain and escalate of each outcome, and the differences
    of OA … cost for each pair (i, j) (i − j), from one set of question resamples.

    Args:
        outs: outcomes on the same questions.
        pairs: index pairs to difference.
        n_boot: question resamples.
        seed: bootstrap seed.

    Returns:
        One dict per outcome, then one per pair (OA, CA, coverage, cost only).
    """
    c, m, r, a, e = _outcome_columns(outs)
    k, n_q = c.shape

    def stat(w: np.ndarray) -> np.ndarray:
        tot = w.sum(axis=1, keepdims=True)
        per = np.stack([(w @ c.T) / tot, safe_ratio(w @ c.T, w @ m.T), (w @ m.T) / tot,
                        (w @ r.T) / tot, (w @ a.T) / tot, (w @ e.T) / tot], axis=2)
        diffs = [per[:, i, :4] - per[:, j, :4] for i, j in pairs]
        return np.concatenate([per.reshape(len(w), -1), *diffs], axis=1)

    ivs = bootstrap_intervals(stat, n_q, n_boot, seed)
    names = (*MEASURES, "abstain", "escalate")
    out = [dict(zip(names, ivs[i * 6:(i + 1) * 6])) for i in range(k)]
    base = 6 * k
    out += [dict(zip(MEASURES, ivs[base + 4 * p:base + 4 * (p + 1)])) for p in range(len(pairs))]
    return out


def table1(inp: TraceInput) -> Table:
    """Seed Table 1 on the test split (see the module docstring)."""
    fits, settings, questions = inp.fits, inp.settings, inp.questions
    n_boot, seed = inp.n_boot, inp.seed
    rows: list[Row] = []
    gate = settings.gate
    missing_text = False
    for fit in fits:
        for dataset, tr in groups(fit.test):
            if not len(tr):
                continue
            outs = systems(tr, fit.fitted.iso, gate, questions)
            names = [s for s, o in outs.items() if o is not None]
            missing_text |= len(names) < len(outs)
            kept = [o for o in outs.values() if o is not None]
            pair = (names.index("Calibrated-Gated"), names.index("Raw-Gated"))
            ivs = outcome_intervals(kept, (pair,), n_boot, seed)
            for name, iv in zip([*names, DIFF], ivs):
                for measure, interval in iv.items():
                    if measure in ("abstain", "escalate") and name not in GATED:
                        continue
                    rows.append(_row(fit, name, measure, dataset, interval.estimate, len(tr),
                                     interval=interval, detail=settings.text,
                                     budget=gate.max_retrievals))
    notes = [f"Test split only; {settings.text}. OA = share of all episodes ending in a "
             "correct commit, CA = accuracy among committed episodes, coverage = share "
             "committed, cost = mean retrieval actions (so OA = CA · coverage); fractions, "
             "not the seed's percentages.",
             "Baselines always commit: Parametric only at depth 0, Fixed RAG@k at depth k, "
             "the Adaptive proxy at depth 3 (≥ 18 alphanumeric word tokens or ≥ 2 distinct "
             "markers of same, both, whose, which, who was, before, after), 2 (≥ 9 tokens "
             "or one marker) or 1. 95% CIs: 2,000 question resamples by default; "
             "Calibrated − Raw is paired by question. A dataset named a+b pools both, "
             "one episode per question (the seed's figures)."]
    if missing_text:
        notes.append("Adaptive proxy left out: some questions' text is not in lab.db.")
    return Table("trace_table1", "Second seed Table 1: baselines and confidence-gated "
                 "controllers on the test traces", tuple(rows), tuple(notes), "wide",
                 MEASURES, (("abstain", ".2f"), ("escalate", ".2f")),
                 (("coverage", "Cov."), ("cost", "Cost")))


def table2(inp: TraceInput) -> Table:
    """Seed Table 2: held-out ECE by depth, raw vs calibrated, and the top bin."""
    fits, settings = inp.fits, inp.settings
    rows: list[Row] = []
    for fit in fits:
        for dataset, tr in groups(fit.test):
            cal_conf = fit.fitted.iso.predict(tr.confidence)
            for t in range(DEPTHS):
                ok = ~np.isnan(tr.confidence[:, t]) & ~np.isnan(tr.correct[:, t])
                if not ok.any():
                    continue
                raw, cal, y = tr.confidence[ok, t], cal_conf[ok, t], tr.correct[ok, t]
                top = raw >= 0.9
                n, label = int(ok.sum()), f"depth {t}"
                e_raw, e_cal = ece(raw, y), ece(cal, y)
                for measure, value, size in (
                        ("ece_raw", e_raw, n), ("ece_cal", e_cal, n),
                        ("ece_diff", e_cal - e_raw, n), ("top_share", top.mean(), n),
                        ("top_raw", raw[top].mean() if top.any() else np.nan, int(top.sum())),
                        ("top_accuracy", y[top].mean() if top.any() else np.nan,
                         int(top.sum())),
                        ("top_cal", cal[top].mean() if top.any() else np.nan,
                         int(top.sum()))):
                    rows.append(_row(fit, label, measure, dataset, value, size,
                                     "answer states", detail=settings.text))
    notes = (f"Test states with a stated confidence and a label; ECE in {N_BINS} "
             f"equal-width bins, as a fraction (the seed prints percentage points); "
             f"calibrated = the frozen map ({settings.text}). ece_diff = calibrated − raw.",
             "top_*: the raw-confidence bin [0.9, 1]: share of the depth's states in it, "
             "their mean raw confidence, accuracy and mean calibrated confidence (seed "
             "App. B.1).")
    return Table("trace_table2", "Second seed Table 2: held-out ECE by depth, raw vs "
                 "calibrated", tuple(rows), notes, "wide", (),
                 tuple((m, ".3f") for m in ("ece_raw", "ece_cal", "ece_diff", "top_share",
                                           "top_raw", "top_accuracy", "top_cal")),
                 (("ece_raw", "ECE raw"), ("ece_cal", "ECE cal"), ("ece_diff", "cal − raw"),
                  ("top_share", "top bin share"), ("top_raw", "top raw"),
                  ("top_accuracy", "top acc."), ("top_cal", "top cal")))


def transition_counts(tr: Traces) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per question and adjacent pair t → t+1 (t = 0, 1, 2): transitions counted (both
    states labelled, the next slice non-empty), helpful and harmful ones; each (Q, 3)."""
    a, b = tr.correct[:, :-1], tr.correct[:, 1:]
    ok = ~np.isnan(a) & ~np.isnan(b) & tr.new_evidence[:, 1:]
    helpful = ok & (a == 0) & (b == 1)
    harmful = ok & (a == 1) & (b == 0)
    return ok.astype(float), helpful.astype(float), harmful.astype(float)


def table3(inp: TraceInput) -> Table:
    """Seed Table 3: helpful, harmful and net adjacent transitions on the test traces."""
    fits, settings, n_boot, seed = inp.fits, inp.settings, inp.n_boot, inp.seed
    rows: list[Row] = []
    averages: dict[str, list[tuple[float, float, float]]] = {}
    for fit in fits:
        for dataset, tr in groups(fit.test):
            ok, helpful, harmful = transition_counts(tr)
            if not ok.any():
                continue
            spans = [(f"{t}→{t + 1}", slice(t, t + 1)) for t in range(DEPTHS - 1)]
            for label, cols in [("all", slice(0, DEPTHS - 1)), *spans]:
                n_q = ok[:, cols].sum(axis=1)
                h, x = helpful[:, cols].sum(axis=1), harmful[:, cols].sum(axis=1)

                def stat(w: np.ndarray, n_q: np.ndarray = n_q, h: np.ndarray = h,
                         x: np.ndarray = x) -> np.ndarray:
                    den = w @ n_q
                    return np.column_stack([safe_ratio(w @ h, den), safe_ratio(w @ x, den),
                                            safe_ratio(w @ (h - x), den)])

                ivs = bootstrap_intervals(stat, len(tr), n_boot, seed)
                n = int(n_q.sum())
                for measure, iv in zip(("helpful", "harmful", "net"), ivs):
                    rows.append(_row(fit, label, measure, dataset, iv.estimate, n,
                                     "transitions", interval=iv, detail=settings.text))
                if label == "all":
                    averages.setdefault(dataset, []).append(
                        (ivs[0].estimate, ivs[1].estimate, ivs[2].estimate))
    if len(fits) > 1:
        for dataset, values in averages.items():
            mean = np.mean(values, axis=0)
            for measure, value in zip(("helpful", "harmful", "net"), mean):
                rows.append(Row("average", "all", None, measure, "", float(value),
                                n=len(values), unit="models", arm="all", dataset=dataset,
                                detail=f"mean over {len(values)} models",
                                runs=",".join(sorted({r for f in fits
                                                      for r in f.runs.split(",")})),
                                question_set="+".join(sorted({s for f in fits
                                                              for s in f.sets.split("+")}))))
    notes = ("Adjacent states t → t+1 of the test traces whose next evidence slice is "
             "non-empty (a depth whose slice of the stored plan is empty is not a "
             "transition; without a stored plan every step counts), regardless of any policy; "
             "helpful = wrong → correct, harmful = correct → wrong, net = helpful − "
             "harmful, as shares of the transitions (n); 95% CIs resample questions.",)
    return Table("trace_table3", "Second seed Table 3: adjacent retrieval transitions",
                 tuple(rows), notes, "wide", ("helpful", "harmful", "net"))


def _sweep_rows(fit: ModelFit, dataset: str, tr: Traces, settings: TraceSettings
                ) -> list[Row]:
    rows: list[Row] = []
    kappas = {"Raw-Gated": tr.confidence, "Calibrated-Gated": fit.fitted.iso.predict(
        tr.confidence)}

    def add(system: str, scope: str, out: Outcome, gate: Gate, detail: str) -> None:
        values = measures(out) | {"risk": 1 - measures(out)["CA"]}
        for measure, value in values.items():
            rows.append(_row(fit, system, measure, dataset, value, len(tr), scope=scope,
                             detail=detail, budget=gate.max_retrievals))

    gate = settings.gate
    for system, kappa in kappas.items():
        for tau in THRESHOLDS:
            g = replace(gate, tau_hi=tau)
            add(system, f"τ_hi={tau:g}", gated(tr, kappa, g), g, settings.text.replace(
                gate.text, g.text))
        for budget in range(DEPTHS):
            g = replace(gate, max_retrievals=budget)
            add(system, f"budget {budget}", gated(tr, kappa, g), g, settings.text.replace(
                gate.text, g.text))
        ok = ~np.isnan(kappa) & ~np.isnan(tr.correct)
        rc = risk_coverage(kappa[ok], tr.correct[ok])
        rows.append(_row(fit, system, "aurc", dataset, rc.aurc, int(ok.sum()),
                         "answer states", "test states, all depths", detail=settings.text))
        for t in range(DEPTHS):
            sel = ok[:, t]
            conf, y = kappa[sel, t], tr.correct[sel, t]
            idx = np.minimum((conf * N_BINS).astype(int), N_BINS - 1)
            for i in np.unique(idx):
                scope = f"t={t} bin [{i / N_BINS:.1f}, {(i + 1) / N_BINS:.1f})"
                rows.append(_row(fit, system, "bin_confidence", dataset,
                                 conf[idx == i].mean(), int((idx == i).sum()),
                                 "answer states", scope, detail=settings.text))
                rows.append(_row(fit, system, "bin_accuracy", dataset, y[idx == i].mean(),
                                 int((idx == i).sum()), "answer states", scope,
                                 detail=settings.text))
    baselines = {"Parametric only": commit_at(tr, 0),
                 **{f"Fixed RAG@{k}": commit_at(tr, k) for k in (1, 2, 3)}}
    for name, out in baselines.items():
        add(name, "baseline", out, gate, "always commits")
    return rows


def sweeps(inp: TraceInput) -> Table:
    """Threshold and budget sweeps, AURC and reliability bins (the paper's Figs. 3–4)."""
    fits, settings = inp.fits, inp.settings
    rows = [r for fit in fits for dataset, tr in groups(fit.test) if len(tr)
            for r in _sweep_rows(fit, dataset, tr, settings)]
    notes = (f"Test split. τ_hi sweeps {', '.join(f'{t:g}' for t in THRESHOLDS)} with "
             f"τ_lo = {settings.gate.tau_lo:g} and budget {settings.gate.max_retrievals}; "
             f"budget sweeps 0–3 at τ_hi = {settings.gate.tau_hi:g}; risk = 1 − CA (seed "
             "Fig. 3's selective risk, against coverage); cost = mean retrievals (Fig. 4). "
             "Every row's detail gives the thresholds it used.",
             "aurc: the risk–coverage curve over every labelled test state; bin_confidence "
             "and bin_accuracy: reliability diagram bins by depth (10 equal-width bins).")
    return Table("trace_sweeps", "Second seed sweeps: thresholds, budgets, risk–coverage, "
                 "reliability", tuple(rows), notes)


def calibration_record(inp: TraceInput) -> Table:
    """Each model's split (one row per question), fit records and map points."""
    fits, settings = inp.fits, inp.settings
    rows: list[Row] = []
    for fit in fits:
        tr = fit.traces
        for key, cal in zip(tr.keys, fit.cal):
            rows.append(_row(fit, "calibration" if cal else "test", "split", "", math.nan,
                             1, "questions", str(key), detail=f"split seed "
                             f"{settings.split_seed}"))
        cal_tr = tr.take(fit.cal)
        f = fit.fitted
        for q, d, conf, y in zip(f.rows, f.depths, f.confidence, f.correct):
            rows.append(_row(fit, "fit", "fit_record", str(cal_tr.dataset[q]), conf, 1,
                             "answer states", f"{cal_tr.keys[q]} t={d}",
                             detail=f"correct={int(y)}"))
        for x, y in zip(f.iso.x, f.iso.y):
            rows.append(_row(fit, "map", "map", "", float(y), 0, "", f"κ={x:.4g}",
                             detail=f"fitted on depth {f.fit_depths}"))
    notes = ("split: each question's side (scope dataset:question_id); fit_record: each "
             "record the isotonic map was fitted on (estimate = raw confidence, detail = its "
             "label); map: the frozen map's points (estimate = calibrated confidence at κ; "
             "linear between points, flat outside).",)
    return Table("trace_calibration", "Second seed calibration: split, fit records and map",
                 tuple(rows), notes)
