"""The second seed's stored traces as arrays, its split and depth-zero map, and what each
of its systems does on them (matched-trajectory-replay §3–§4, App. A).

A trace is one question's answer states at depths 0–3 on its fixed evidence plan (the
frame of `core.store.traces.load_traces`: one row per run × model × question × depth,
stated confidence 0–100). Pure: a frame in, arrays and outcomes out.

- **Split** (§4.1): whole questions go to the calibration or the test split by a
  seeded hash of (dataset, question id), two thirds to calibration; the same question
  lands on the same side for every model. This is not the seed's own split, which
  takes each dataset's first two thirds in source order (App. A.4,
  `tests.oracles.replay.source_order_counts`): the shares agree, the questions on each side do not.
- **Map** (§4.1): per model, an isotonic map fitted on the depth-zero records of the
  calibration split, pooled over datasets (`--fit-depths all`: every depth), frozen,
  and applied to test states only.
- **Systems** (§4.2): Parametric only (commit at depth 0), Fixed RAG@k (commit at
  depth k), the Adaptive proxy (a depth from the question's text: 3 when it has ≥ 18
  alphanumeric word tokens or ≥ 2 distinct marker strings, 2 when ≥ 9 tokens or one
  marker, else 1; markers same, both, whose, which, who was, before, after), and
  Raw-/Calibrated-Gated (π, `analysis.replay.controllers.replay`, on raw or mapped
  confidence).
- **Measures** (Table 1): OA = share of all episodes ending in a correct commit; CA =
  accuracy among committed episodes; coverage = share committed; cost = mean
  retrieval actions (commit, abstain and escalate cost nothing). So OA = CA ·
  coverage. A state whose answer did not parse, or has no correctness label, counts
  as wrong if committed; a state without a stated confidence never commits (π).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.replay.calibration import Isotonic, calibration_split, fit_isotonic
from analysis.replay.controllers import COMMIT, Gate, replay

DEPTHS = 4
"""States per trace: depth 0 (no evidence) and after 1, 2, 3 evidence slices."""
CAL_SHARE = 2 / 3
"""Share of questions in the calibration split (two thirds, as the seed's calibration–test
sizes; lab draws the questions by a seeded hash, the seed by source order)."""
PROXY_MARKERS = ("same", "both", "whose", "which", "who was", "before", "after")
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_MARKERS = tuple(re.compile(rf"\b{re.escape(m)}\b") for m in PROXY_MARKERS)
LABELS = ("correct", "judge_correct")
"""Correctness columns a table can read: the dataset's scorer or the LLM judge."""


@dataclass(frozen=True)
class Traces:
    """One model's traces, questions × depths.

    Attributes:
        model: the model.
        dataset: (Q,) each question's dataset.
        question_id: (Q,) its id.
        confidence: (Q, 4) stated confidence / 100, clipped to [0, 1] (NaN: none).
        correct: (Q, 4) 0/1 (NaN: no label, or the state is missing).
        new_evidence: (Q, 4) the depth revealed a non-empty slice (False at depth 0;
            from the frame's optional ``new_evidence`` column, else True at 1–3).
    """

    model: str
    dataset: np.ndarray
    question_id: np.ndarray
    confidence: np.ndarray
    correct: np.ndarray
    new_evidence: np.ndarray

    def take(self, rows: np.ndarray) -> Traces:
        """The same model's traces for a subset of questions (mask or indices)."""
        return Traces(self.model, self.dataset[rows], self.question_id[rows],
                      self.confidence[rows], self.correct[rows], self.new_evidence[rows])

    @property
    def keys(self) -> np.ndarray:
        """(Q,) "dataset:question_id", the split's and the bootstrap's unit."""
        return np.array([f"{d}:{q}" for d, q in zip(self.dataset, self.question_id)],
                        dtype=object)

    def __len__(self) -> int:
        return len(self.question_id)


def build_traces(frame: pd.DataFrame, model: str, label: str = "correct") -> Traces:
    """One model's rows of a traces frame as arrays (questions sorted by dataset, id).

    Args:
        frame: `load_traces` rows (several runs of one question: the latest row wins).
        model: the model to take.
        label: "correct" (the dataset's scorer) or "judge_correct".

    Returns:
        The Traces.
    """
    rows = frame.loc[frame["model"] == model]
    if "error" in rows:  # a call that failed after its retries: no state
        rows = rows.loc[rows["error"].isna()]
    rows = rows.sort_values(["created_at", "id"] if "created_at" in rows else ["id"],
                            kind="stable")
    rows = rows.drop_duplicates(["dataset", "question_id", "depth"], keep="last")
    qs = rows[["dataset", "question_id"]].drop_duplicates().sort_values(
        ["dataset", "question_id"], kind="stable")
    index = pd.MultiIndex.from_frame(qs)
    q = index.get_indexer(pd.MultiIndex.from_frame(rows[["dataset", "question_id"]]))
    d = rows["depth"].to_numpy(dtype=np.int64)
    n = len(qs)

    def grid(values: np.ndarray) -> np.ndarray:
        out = np.full((n, DEPTHS), np.nan)
        out[q, d] = values
        return out

    conf = _floats(rows["confidence"])
    conf = np.where(np.nan_to_num(_floats(rows["parsed"])) > 0, conf, np.nan)
    right = _floats(rows[label])
    new = np.zeros((n, DEPTHS), dtype=bool)
    new[:, 1:] = True
    if "new_evidence" in rows:
        given = grid(_floats(rows["new_evidence"]))
        new = np.where(np.isnan(given), new, given > 0)
        new[:, 0] = False
    return Traces(model, qs["dataset"].to_numpy(dtype=object),
                  qs["question_id"].to_numpy(dtype=object),
                  np.clip(grid(conf) / 100.0, 0.0, 1.0), grid(right), new)


def _floats(column: pd.Series) -> np.ndarray:
    """A column as floats, NaN for None, pandas NA (nullable "Int64") or text."""
    return pd.to_numeric(column.astype(object), errors="coerce").to_numpy(dtype=float,
                                                                          na_value=np.nan)


def split_mask(traces: Traces, seed: int = 0, share: float = CAL_SHARE) -> np.ndarray:
    """True for questions in the calibration split (seeded hash of dataset:question id).

    Args:
        traces: one model's traces.
        seed: split seed (`--split-seed`).
        share: target share of calibration questions.

    Returns:
        (Q,) boolean mask.
    """
    return calibration_split(traces.keys, share, seed) if len(traces) else np.zeros(0, bool)


@dataclass(frozen=True)
class FittedMap:
    """A frozen calibration map and what it was fitted on.

    Attributes:
        iso: the isotonic map.
        fit_depths: "0" or "all".
        rows: (R,) question index (into the calibration traces) of each fit record.
        depths: (R,) its depth.
        confidence: (R,) its raw confidence.
        correct: (R,) its label.
    """

    iso: Isotonic
    fit_depths: str
    rows: np.ndarray
    depths: np.ndarray
    confidence: np.ndarray
    correct: np.ndarray


def fit_map(cal: Traces, fit_depths: str = "0") -> FittedMap:
    """Fit the isotonic map on the calibration traces' labelled states with a confidence.

    Args:
        cal: the calibration split's traces (every dataset pooled).
        fit_depths: "0" (depth-zero records, the seed's §4.1) or "all".

    Returns:
        The FittedMap.
    """
    ok = ~np.isnan(cal.confidence) & ~np.isnan(cal.correct)
    if fit_depths == "0":
        ok[:, 1:] = False
    rows, depths = np.nonzero(ok)
    conf, right = cal.confidence[rows, depths], cal.correct[rows, depths]
    return FittedMap(fit_isotonic(conf, right), fit_depths, rows, depths, conf, right)


@dataclass(frozen=True)
class Outcome:
    """What one system did on each trace.

    Attributes:
        action: (Q,) "commit", "abstain" or "escalate".
        correct: (Q,) 1 where it committed a correct answer.
        retrievals: (Q,) retrieval actions taken (its cost).
    """

    action: np.ndarray
    correct: np.ndarray
    retrievals: np.ndarray

    @property
    def committed(self) -> np.ndarray:
        """(Q,) 1 where it committed."""
        return (self.action == COMMIT).astype(float)


def commit_at(traces: Traces, depth: np.ndarray | int) -> Outcome:
    """Commit each trace's answer at a given depth (the always-commit baselines)."""
    d = np.broadcast_to(np.asarray(depth, dtype=np.int64), (len(traces),))
    right = np.nan_to_num(traces.correct[np.arange(len(traces)), d])
    return Outcome(np.full(len(traces), COMMIT), right, d.astype(float))


def gated(traces: Traces, kappa: np.ndarray, gate: Gate) -> Outcome:
    """π on each trace (states at depths 0–3, at most `gate.max_retrievals`).

    Args:
        traces: the traces.
        kappa: (Q, 4) the confidence π reads (raw, or mapped).
        gate: thresholds and budget.

    Returns:
        The Outcome.
    """
    r = replay(kappa, np.full(len(traces), DEPTHS), gate)
    right = np.nan_to_num(traces.correct[np.arange(len(traces)), r.stop])
    return Outcome(r.action, np.where(r.action == COMMIT, right, 0.0), r.stop.astype(float))


def proxy_depth(question: str) -> int:
    """The Adaptive proxy's depth for one question (the seed's §4.2 rule).

    Args:
        question: the question's text.

    Returns:
        3, 2 or 1.
    """
    tokens = len(_TOKEN.findall(question))
    lowered = question.lower()
    markers = sum(1 for m in _MARKERS if m.search(lowered))
    if tokens >= 18 or markers >= 2:
        return 3
    if tokens >= 9 or markers >= 1:
        return 2
    return 1


def proxy_depths(traces: Traces, questions: Mapping[str, str]) -> np.ndarray | None:
    """The proxy's depth per trace, or None when a question's text is unknown."""
    texts = [questions.get(str(q)) for q in traces.question_id]
    if any(t is None for t in texts):
        return None
    return np.array([proxy_depth(str(t)) for t in texts], dtype=np.int64)


def systems(traces: Traces, iso: Isotonic, gate: Gate, questions: Mapping[str, str]
            ) -> dict[str, Outcome | None]:
    """Every Table 1 system on the (test) traces, in the seed's order.

    Args:
        traces: test traces.
        iso: the frozen map.
        gate: π's thresholds and budget.
        questions: question id → text (the Adaptive proxy reads it).

    Returns:
        System name → Outcome (None: the proxy without the questions' text).
    """
    depths = proxy_depths(traces, questions)
    return {"Parametric only": commit_at(traces, 0),
            **{f"Fixed RAG@{k}": commit_at(traces, k) for k in (1, 2, 3)},
            "Adaptive proxy": None if depths is None else commit_at(traces, depths),
            "Raw-Gated": gated(traces, traces.confidence, gate),
            "Calibrated-Gated": gated(traces, iso.predict(traces.confidence), gate)}


MEASURES = ("OA", "CA", "coverage", "cost")


def measures(out: Outcome) -> dict[str, float]:
    """OA, CA, coverage and cost of one outcome (NaN where undefined)."""
    n = len(out.action)
    committed = out.committed.sum()
    return {"OA": out.correct.sum() / n if n else np.nan,
            "CA": out.correct.sum() / committed if committed else np.nan,
            "coverage": committed / n if n else np.nan,
            "cost": out.retrievals.mean() if n else np.nan}
