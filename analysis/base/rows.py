"""Result rows and tables: the common shape every measure is reported in.

A `Row` is one estimate for one group of episodes (`analysis.base.arms.ArmKey`: model ×
arm by its full spec × budget × dataset × question set × run × seed × replicate,
unless pooled) with its interval; a `Table` is a named, titled tuple of rows plus
notes. Tables, CSV and JSON are all built from these, so every output carries the
arm label, condition hash, what the row covers, measure, estimate, ci_low, ci_high,
n and the errored episodes left out of it (and, apart, those that ended truncated or
refused).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from analysis.base.arms import ArmKey
from analysis.stats.bootstrap import Interval, bootstrap_p
from core.end_reasons import APART, APART_FIELDS
from core.regimes import regime_family

ROW_FIELDS = ("model", "arm", "condition", "condition_hash", "budget", "dataset",
              "question_set", "runs", "amendment", "seeds", "replicates", "regimes", "measure",
              "scope", "estimate", "ci_low", "ci_high", "n", "unit", "p", "p_holm", "holm_m",
              "judgments", "detail", "errored")
"""The fields every results row has, in the order of every results CSV and JSON row."""
ENDED_FIELDS = tuple(APART_FIELDS[reason] for reason in APART)
"""Counts of the row's complete episodes that ended with a truncated generation or a
refusal (`core.end_reasons.APART`, in its order): in the estimate as not answering,
shown apart from format failures and errors. Every results CSV has these columns after
ROW_FIELDS; a JSON row has them only where one is not 0 (a study without such episodes
prints the same JSON as before they existed)."""


@dataclass(frozen=True)
class Row:
    """One estimate of one measure for one group of episodes.

    Attributes:
        model: model name.
        condition: bare condition name (the arm label is `arm`).
        budget: action budget of the arm.
        measure: what is estimated, e.g. "success", "delta", "beta".
        scope: where it is estimated, e.g. a regime, "mean6", "vs none".
        estimate: point estimate (NaN when undefined).
        ci_low: lower 95% bound (NaN when not computed or undefined).
        ci_high: upper 95% bound.
        n: size behind the estimate, in `unit`.
        unit: "questions", "decisions", "episodes", "judgments" or "".
        p: bootstrap p of the row's test (`analysis.stats.bootstrap.bootstrap_p`), when relevant.
        p_holm: Holm-adjusted p within the row's family (docs/registered-tests.md, "p and
            multiplicity"); set whenever `p` is.
        holm_m: size of that family (the p values adjusted together); 0 without p.
        judgments: where the row's judgments came from, with counts ("side_channel
            1,204", "replay 96", "both: side_channel 1,108, replay 96"); "" for
            measures that read no judgments.
        detail: short free text (group sizes, components, flags).
        runs: the run, or the runs pooled into the row, comma-separated.
        arm: arm label with every non-default knob (`enforced_rule:k=7`).
        condition_hash: sha256 of the condition spec.
        dataset: dataset of the questions.
        question_set: question set, or the sets pooled joined by "+".
        seeds: seed, or the seeds pooled, comma-separated.
        replicates: replicate, or the replicates pooled.
        regimes: the regimes the estimate covers, comma-separated.
        errored: errored episodes (no complete retry) of the row's group and regimes,
            left out of the estimate.
        amendment: the runs' governing amendment(s), or "exploratory".
        truncated: complete episodes of the row's group and regimes that ended with a
            generation cut at max_tokens (counted as not answering, not as errors).
        refused: those that ended with the model's refusal.
    """

    model: str
    condition: str
    budget: int | None
    measure: str
    scope: str = ""
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = 0
    unit: str = ""
    p: float = math.nan
    p_holm: float = math.nan
    holm_m: int = 0
    judgments: str = ""
    detail: str = ""
    runs: str = ""
    arm: str = ""
    condition_hash: str = ""
    dataset: str = ""
    question_set: str = ""
    seeds: str = ""
    replicates: str = ""
    regimes: str = ""
    errored: int = 0
    amendment: str = ""
    truncated: int = 0
    refused: int = 0

    @property
    def label(self) -> str:
        """The arm label (the bare condition name for rows built without one)."""
        return self.arm or self.condition

    @property
    def family(self) -> str:
        """Regime family of the regimes the row covers ("" when none are recorded)."""
        first = self.regimes.split(",")[0]
        return regime_family(first) if first else ""

    def key(self) -> ArmKey:
        """The group the row belongs to, with its regime family (one line of a table)."""
        return ArmKey(self.model, self.label, int(self.budget or 0), self.dataset,
                      self.question_set, self.runs, self.seeds, self.replicates, self.family,
                      self.condition_hash, self.condition, self.amendment)

    def line_key(self, family: bool = True) -> tuple[Any, ...]:
        """The fields of `key()` as a plain tuple (its regime family blank unless
        `family`): the same identity, without building a dataclass per row (a wide
        table's text at paper scale built two per row, a third of the Results screen's
        first visit)."""
        return (self.model, self.label, int(self.budget or 0), self.dataset,
                self.question_set, self.runs, self.seeds, self.replicates,
                self.family if family else "", self.condition_hash, self.condition,
                self.amendment)

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict in ROW_FIELDS order (then ENDED_FIELDS, only when one
        of them is not 0); NaN (undefined) becomes None and
        an infinity the string "inf" / "-inf" (a defined, unbounded value such as the
        TPC of a turn that gained nothing), so JSON and CSV never confuse the two.

        Every field holds a scalar, so reading the attributes gives what
        ``dataclasses.asdict`` gives, without its deep copies (a tenth of the time of
        a JSON table at paper scale)."""
        out = {key: getattr(self, key) for key in ROW_FIELDS}
        for key, value in out.items():
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = None if math.isnan(value) else ("inf" if value > 0 else "-inf")
        if self.truncated or self.refused:
            out.update((key, getattr(self, key)) for key in ENDED_FIELDS)
        return out


def make_row(arm: ArmKey | tuple[str, str, int], measure: str, scope: str = "",
             estimate: float = math.nan, n: int = 0, unit: str = "", detail: str = "",
             runs: str = "", regimes: Sequence[str] | None = None, ci_low: float = math.nan,
             ci_high: float = math.nan, p: float = math.nan) -> Row:
    """A Row of one group.

    Args:
        arm: the group (`ArmKey`), or a bare (model, condition, budget) for rows that
            are not formed from stored episodes (e.g. the sim validation).
        measure: measure name.
        scope: scope label.
        estimate: point estimate.
        n: size.
        unit: unit of `n`.
        detail: free text.
        runs: runs (default: the group's).
        regimes: regimes the estimate covers (default: every regime of the group); the
            row's `errored` counts the group's errored episodes in them, `truncated` and
            `refused` its complete episodes that ended so.
        ci_low: lower bound.
        ci_high: upper bound.
        p: one-sided p.

    Returns:
        The Row.
    """
    if not isinstance(arm, ArmKey):
        return Row(arm[0], arm[1], arm[2], measure, scope, estimate, ci_low, ci_high, n, unit,
                   p, math.nan, 0, "", detail, runs)
    covered = arm.regimes if regimes is None else tuple(regimes)
    return Row(arm.model, arm.condition, arm.budget, measure, scope, estimate, ci_low, ci_high,
               n, unit, p, math.nan, 0, "", detail, runs or arm.runs, arm.arm, arm.condition_hash,
               arm.dataset, arm.question_set, arm.seeds, arm.replicates, ",".join(covered),
               arm.errored_in(covered), arm.amendment,
               *(arm.apart_in(reason, covered) for reason in APART))


def interval_row(arm: ArmKey | tuple[str, str, int], measure: str, interval: Interval,
                 scope: str = "", unit: str = "questions", n: int | None = None,
                 detail: str = "", runs: str = "", with_p: bool = False,
                 regimes: Sequence[str] | None = None) -> Row:
    """A Row from an Interval.

    Args:
        arm: the group (`ArmKey`) or a bare (model, condition, budget).
        measure: measure name.
        interval: the estimate and its interval.
        scope: scope label.
        unit: unit of `n`.
        n: size (default: the interval's cluster count).
        detail: free text.
        runs: runs (default: the group's).
        with_p: give the row the p of "difference > 0" (`bootstrap_p`, "greater").
        regimes: regimes the estimate covers (default: every regime of the group).

    Returns:
        The Row.
    """
    return make_row(arm, measure, scope, interval.estimate, interval.n if n is None else n,
                    unit, detail, runs, regimes, interval.low, interval.high,
                    bootstrap_p(interval, "greater") if with_p else math.nan)


def holm_family(row: Row) -> tuple[object, ...]:
    """The hypothesis a row's p tests, the same for every model: measure, arm (label
    and condition hash), budget, dataset, question set, scope, the regimes it covers,
    seed(s), replicate(s) and the amendment governing the row's runs. Rows that share
    it form one Holm family, across models (the paper: "across models within each
    hypothesis"), within one amendment's runs as a registered test reads them, so the
    table and the test give the same p_holm; exploratory runs form their own family.
    Runs are not otherwise in the key: a grid's models may have been enqueued as runs
    of their own, and two runs of one model in a family only make it stricter."""
    return (row.measure, row.label, row.condition_hash, row.budget, row.dataset,
            row.question_set, row.scope, row.regimes, row.seeds, row.replicates,
            row.amendment)


def with_holm(rows: Sequence[Row]) -> tuple[Row, ...]:
    """The rows with `p_holm` and `holm_m` set wherever `p` is: Holm within each
    `holm_family` (docs/registered-tests.md, "p and multiplicity"); a family of one keeps its p.

    Args:
        rows: a table's rows.

    Returns:
        The rows in the same order.
    """
    from analysis.stats.bootstrap import holm

    families: dict[tuple[object, ...], list[int]] = {}
    for i, row in enumerate(rows):
        if not math.isnan(row.p):
            families.setdefault(holm_family(row), []).append(i)
    out = list(rows)
    for idx in families.values():
        for i, q in zip(idx, holm([rows[i].p for i in idx])):
            out[i] = replace(rows[i], p_holm=q, holm_m=len(idx))
    return tuple(out)


@dataclass(frozen=True)
class Table:
    """A named table of rows.

    Attributes:
        name: short name, also the CSV file stem (e.g. "success").
        title: one-line title printed above the table.
        rows: the rows.
        notes: lines printed under the table (definitions, exclusions).
        layout: "wide" (one line per arm, one column per measure/scope) or "long".
        ci_columns: in a wide layout, the columns printed with their interval.
        formats: (measure, format spec) pairs for estimates printed without an
            interval (default ".2f").
        headers: (measure, column header) pairs where the header is shorter.
        pooled: what rows pool, e.g. "seeds, runs" ("" when every run, seed,
            replicate and question set has its own row).
    """

    name: str
    title: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()
    layout: str = "long"
    ci_columns: tuple[str, ...] = field(default=())
    formats: tuple[tuple[str, str], ...] = field(default=())
    headers: tuple[tuple[str, str], ...] = field(default=())
    pooled: str = ""

    def dicts(self) -> list[dict[str, Any]]:
        """Every row as a dict (for JSON and CSV), with the table name added."""
        return [{"table": self.name, **r.as_dict()} for r in self.rows]
