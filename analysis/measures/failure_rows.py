"""The failure decisions of every group at once, for I, the hazard curve and the hazard
model (docs/results.md): one pass over the decision table instead of one pandas split
per group, and one matrix product per resample batch for all groups with the same
number of questions.

Per-question sums here are integer counts, so a resample's sums are exact whatever
the order of additions: the intervals equal those of `analysis.measures.hazard.integration_index`
and `tests.oracles.measures.hazard_curve` computed group by group, to the last digit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.base.arms import GROUP_KEYS, ArmKey, Grouping
from analysis.measures.decisions import judgment_columns
from analysis.measures.hazard_sample import after_useless
from analysis.stats.bootstrap import Interval, resample_weights, summarize_columns
from analysis.stats.codes import codes, column_changes
from analysis.stats.lpm_batch import CodedSample
from analysis.stats.lpm_boot import distinct_columns
from core.regimes import FAILURE_REGIMES, MAIN_FAMILY


def family_failure_regimes(family: str) -> tuple[str, ...]:
    """The failure regimes I and the hazard measures pool within a regime family.

    Args:
        family: `core.regimes.regime_family` of the rows' regimes.

    Returns:
        The main family's five failure regimes, or the family's own regime.
    """
    return FAILURE_REGIMES if family == MAIN_FAMILY else (family,)


@dataclass(frozen=True)
class FailureRows:
    """The groups (by regime family) that have a failure regime, and their failure
    decisions (final action excluded).

    Attributes:
        keys: the groups, in `Grouping.groups` order.
        regimes: each group's failure regimes present.
        rows: positions of the failure decisions in the decision table, in its order.
        group: each such decision's group (index into `keys`).
    """

    keys: tuple[ArmKey, ...]
    regimes: tuple[tuple[str, ...], ...]
    rows: np.ndarray
    group: np.ndarray


def failure_rows(decisions: pd.DataFrame, grouping: Grouping | None) -> FailureRows:
    """Split the decision table into groups and regime families, and keep each group's
    decisions in its failure regimes (`analysis.measures.hazard.failure_decisions`).

    Args:
        decisions: the decision table.
        grouping: what rows pool.

    Returns:
        The FailureRows (groups without a failure regime are left out).
    """
    keys, group_codes = _group_codes(decisions, grouping or Grouping())
    present = [tuple(r for r in k.regimes if r in family_failure_regimes(k.family))
               for k in keys]
    kept = np.array([bool(p) for p in present], dtype=bool)
    regime_codes, regime_values = codes(decisions["regime"])
    pooled = np.array([[str(r) in p for r in regime_values] for p in present],
                      dtype=bool).reshape(len(keys), len(regime_values))
    mask = ~decisions["final"].to_numpy(dtype=bool) & (regime_codes >= 0)
    mask[mask] = pooled[group_codes[mask], regime_codes[mask]]
    rows = np.flatnonzero(mask)
    position = np.cumsum(kept) - 1
    return FailureRows(tuple(k for k, ok in zip(keys, kept) if ok),
                       tuple(p for p in present if p), rows, position[group_codes[rows]])


def _group_codes(decisions: pd.DataFrame, grouping: Grouping
                 ) -> tuple[list[ArmKey], np.ndarray]:
    """``grouping.codes(decisions, families=True)`` from the first row of each run of
    consecutive rows with the same grouping values.

    A decision repeats its episode's grouping columns, so a run is typically one
    episode: grouping a fifth of the rows gives the same groups and keys (a key reads
    only the distinct values within its group), spread back over the runs. A boundary
    is wherever a column's value changes (`analysis.stats.codes.changes`; a NaN starts a
    run of its own, which only splits a run and changes nothing).
    """
    n = len(decisions)
    start = np.zeros(n, dtype=bool)
    start[:1] = True
    for column in (*GROUP_KEYS, "regime", "condition", "amendment"):
        if column in decisions:
            start[1:] |= column_changes(decisions[column])
    first = np.flatnonzero(start)
    if len(first) == n:
        return grouping.codes(decisions, families=True)
    keys, codes = grouping.codes(decisions.iloc[first], families=True)
    return keys, codes[np.cumsum(start) - 1]


def _question_codes(questions: pd.Series, group: np.ndarray, n_groups: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's question code within its group (the group's ids sorted, as
    `analysis.stats.codes.codes`), the questions per group, and each group's first
    question in a concatenation of all groups' questions."""
    q, uniq = codes(questions)
    width = max(len(uniq), 1)
    key = group * width + q
    present = np.bincount(key, minlength=n_groups * width) > 0  # np.unique, without a sort
    inverse = (np.cumsum(present) - 1)[key]
    n_q = present.reshape(n_groups, width).sum(axis=1)
    first = np.concatenate([[0], np.cumsum(n_q)[:-1]]).astype(np.int64)
    return inverse - first[group], n_q, first


def _group_sums(cell: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
    """Sums of `values` (rows × v) per cell, (n_cells, v)."""
    return np.stack([np.bincount(cell, weights=values[:, j], minlength=n_cells)
                     for j in range(values.shape[1])], axis=-1)


def grouped_intervals(sums: list[np.ndarray],
                      statistic: Callable[[np.ndarray], np.ndarray], n_boot: int,
                      seed: int) -> list[tuple[Interval, ...]]:
    """`analysis.stats.bootstrap.bootstrap_intervals` for many groups at once.

    Group i's statistic of a (b, questions) weight matrix w is ``statistic(c)[:, i]``
    with ``c = w @ sums[i]`` stacked as (b, groups, k); groups with the same number of
    questions share their resample weights and one matrix product per batch. Exact
    when the sums are integer counts (any order of additions gives the same sums).

    Args:
        sums: per group, per-question sums (questions, k).
        statistic: maps (b, groups, k) sums to (b, groups, m) values, elementwise
            across groups.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        Per group, one Interval per statistic column.
    """
    out: list[tuple[Interval, ...]] = [()] * len(sums)
    by_size: dict[int, list[int]] = {}
    for i, s in enumerate(sums):
        by_size.setdefault(s.shape[0], []).append(i)
    for n_q, members in by_size.items():
        # integer counts: equal columns (groups alike, strata never reached) give equal
        # products, so each distinct column is multiplied once
        flat, spread = distinct_columns(np.stack([sums[i] for i in members], axis=1
                                                 ).reshape(n_q, -1))

        def stat(w: np.ndarray, flat: np.ndarray = flat, spread: np.ndarray = spread,
                 g: int = len(members)) -> np.ndarray:
            return statistic((w @ flat)[:, spread].reshape(len(w), g, -1))

        with np.errstate(divide="ignore", invalid="ignore"):
            est = stat(np.ones((1, n_q)))[0]
            if n_q == 0:
                est = est * np.nan
                boot = np.full((n_boot, *est.shape), np.nan)
            else:  # each batch written in place (no list of batches, then a copy)
                boot = np.empty((n_boot, *est.shape))
                done = 0
                for w in resample_weights(n_q, n_boot, seed):
                    boot[done:done + len(w)] = stat(w)
                    done += len(w)
        k = est.shape[1]
        found = summarize_columns(est.reshape(-1), boot.reshape(len(boot), -1), n_q)
        for g, i in enumerate(members):
            out[i] = found[g * k:(g + 1) * k]
    return out


def cluster_counts(decisions: pd.DataFrame, fr: FailureRows, keep: np.ndarray,
                   stratum: np.ndarray, n_strata: int, values: np.ndarray
                   ) -> tuple[list[np.ndarray], np.ndarray]:
    """Per group, per-question (× stratum) sums of `values` over the failure decisions
    `keep` selects (the questions are those of the kept rows, as group by group).

    Args:
        decisions: the decision table.
        fr: its failure rows.
        keep: which failure rows count (one per `fr.rows`).
        stratum: their stratum (0 … n_strata−1), one per kept row.
        n_strata: strata.
        values: (kept rows, v) quantities.

    Returns:
        (per group an array (questions, n_strata · v), the kept rows' groups).
    """
    group = fr.group[keep]
    q = decisions["question_id"].iloc[fr.rows[keep]]  # a categorical keeps its codes
    local, n_q, first = _question_codes(q, group, len(fr.keys))
    cell = (first[group] + local) * n_strata + stratum
    total = _group_sums(cell, values, int(n_q.sum()) * n_strata)
    total = total.reshape(-1, n_strata * values.shape[1])
    return [total[first[g]:first[g] + n_q[g]] for g in range(len(fr.keys))], group


def coded_samples(decisions: pd.DataFrame, fr: FailureRows, judgments: str
                  ) -> list[tuple[CodedSample, bytes]]:
    """Every group's hazard sample as integer-coded arrays
    (`analysis.stats.lpm_batch.CodedSample`), each with a fingerprint of its content
    (32 bytes, equal exactly when the samples are).

    Args:
        decisions: the decision table.
        fr: its failure rows.
        judgments: "side_channel" or "stated".

    Returns:
        One (sample, content) per group of `fr.keys`.
    """
    rows, bounds = _sample_rows(decisions, fr, judgments)
    run_col, _, earlier = judgment_columns(judgments)

    def column(name: str) -> np.ndarray:
        return decisions[name].to_numpy()[rows]

    def text_rank(name: str) -> np.ndarray:
        found, values = codes(decisions[name].iloc[rows])  # a categorical by its codes
        labels = [str(v) for v in values]
        rank = np.empty(len(labels), dtype=np.int64)
        rank[sorted(range(len(labels)), key=labels.__getitem__)] = np.arange(len(labels))
        return rank[found]

    parts = (column("answer").astype(float), text_rank("action"), text_rank("regime"),
             column(run_col).astype(float), column(earlier).astype(float),
             text_rank("question_id"))
    out = []
    for g in range(len(fr.keys)):
        sample = CodedSample(*(c[bounds[g]:bounds[g + 1]] for c in parts))
        out.append((sample, _fingerprint(sample)))
    return out


def _fingerprint(sample: CodedSample) -> bytes:
    """The sha256 of a sample's columns one after the other (each of one dtype, all of
    one length), read in place: equal exactly when the samples are (barring a sha256
    collision), without copying the decisions into one matrix first."""
    digest = hashlib.sha256()
    for column in (sample.answer, sample.action, sample.regime, sample.run, sample.earlier,
                   sample.question):
        digest.update(np.ascontiguousarray(column).data)
    return digest.digest()


def _sample_rows(decisions: pd.DataFrame, fr: FailureRows, judgments: str
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The rows of every group's `tests.oracles.measures.hazard_sample`, group
    after group (each in the table's order), and where each group's rows start (one more bound than
    groups)."""
    kept = after_useless(decisions, fr.rows, judgments)  # fr.rows: the regimes, not final
    rows, group = fr.rows[kept], fr.group[kept]
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(fr.keys) + 1))
    return rows[order], bounds
