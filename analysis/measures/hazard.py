"""Integration index I and the stopping hazard curve (docs/results.md), and the index
and hazard tables (the hazard model itself is in `analysis.stats.lpm`).

Both pool the five failure regimes of mean6 (the main family) and exclude decisions at
the budget's final action; any other regime (plausible, answerless, …) is a family of
its own and gets its own rows, never pooled with the main five. Intervals come from
question-cluster bootstraps in which a resample's statistics are matrix products of
per-question sums.
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping
from analysis.base.rows import Row, Table, interval_row
from analysis.measures.decisions import REPLAYED, judgment_sources
from analysis.measures.failure_rows import (
    FailureRows,
    cluster_counts,
    coded_samples,
    failure_rows,
    grouped_intervals,
)
from analysis.measures.failure_rows import family_failure_regimes as family_failure_regimes
from analysis.measures.hazard_sample import after_useless
from analysis.measures.results import TableInput, TablePart
from analysis.stats.bootstrap import N_BOOT, Interval, bootstrap_intervals, cluster_sums, safe_ratio
from analysis.stats.codes import codes, in_rows
from analysis.stats.lpm import HAZARD_BOOT, HazardFit
from analysis.stats.lpm_batch import start_fits
from core.regimes import FAILURE_REGIMES

MAX_J = 7
GAMMA_MIN_SHARE = 0.05
"""Below this share of decisions with an earlier useful judgment, a γ row's detail warns
that γ is barely identified (a handful of decisions carry it)."""


@dataclass(frozen=True)
class IntegrationIndex:
    """I = h({4,5}) − h({1,2}) on design labels.

    Attributes:
        index: I with its interval.
        h45: P(answer) just after 4 or 5 consecutive failed observations.
        h12: P(answer) just after 1 or 2.
        n45: decisions behind h45.
        n12: decisions behind h12.
    """

    index: Interval
    h45: Interval
    h12: Interval
    n45: int
    n12: int


def failure_decisions(dec: pd.DataFrame, regimes: Sequence[str] = FAILURE_REGIMES
                      ) -> pd.DataFrame:
    """Decisions in the failure regimes, the final action excluded.

    Args:
        dec: decision table rows.
        regimes: the failure regimes kept (default: the main family's five).

    Returns:
        The subset used by I, the hazard curve and the hazard model.
    """
    return dec.loc[in_rows(dec["regime"], list(regimes)) & ~dec["final"].to_numpy(dtype=bool)]


def integration_index(dec: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0,
                      regimes: Sequence[str] = FAILURE_REGIMES) -> IntegrationIndex:
    """I = h({4,5}) − h({1,2}) with a question-cluster bootstrap (docs/results.md).

    Args:
        dec: decision table rows of one arm.
        n_boot: resamples.
        seed: bootstrap seed.
        regimes: the failure regimes pooled (`failure_decisions`).

    Returns:
        The index and its two components (NaN where a component has no decision).
    """
    return _index_of(failure_decisions(dec, regimes), n_boot, seed)


def _index_of(d: pd.DataFrame, n_boot: int, seed: int) -> IntegrationIndex:
    """`integration_index` on the decisions `failure_decisions` kept."""
    q, _ = codes(d["question_id"])
    j, y = d["design_run"].to_numpy(), d["answer"].to_numpy()
    lo, hi = (j >= 1) & (j <= 2), (j >= 4) & (j <= 5)
    sums = cluster_sums(q, np.zeros_like(q), np.column_stack([lo, lo * y, hi, hi * y]),
                        int(q.max()) + 1 if q.size else 0, 1)[:, 0, :]

    def stat(w: np.ndarray) -> np.ndarray:
        c = w @ sums
        h12, h45 = safe_ratio(c[:, 1], c[:, 0]), safe_ratio(c[:, 3], c[:, 2])
        return np.column_stack([h45 - h12, h45, h12])

    index, h45, h12 = bootstrap_intervals(stat, sums.shape[0], n_boot, seed)
    return IntegrationIndex(index, h45, h12, int(hi.sum()), int(lo.sum()))


def _index_statistic(c: np.ndarray) -> np.ndarray:
    """I, h45 and h12 from resampled sums (…, 4) of [lo, lo·answer, hi, hi·answer]."""
    h12, h45 = safe_ratio(c[..., 1], c[..., 0]), safe_ratio(c[..., 3], c[..., 2])
    return np.stack([h45 - h12, h45, h12], axis=-1)


def _curve_statistic(c: np.ndarray) -> np.ndarray:
    """P(answer) per j from resampled sums (…, j · 2) of [decisions, answers]."""
    c = c.reshape(*c.shape[:-1], -1, 2)
    return safe_ratio(c[..., 1], c[..., 0])


def sample_key(content: bytes) -> bytes:
    """The key of a group's hazard sample among fits (`hazard_table`'s `fitted`): the
    sha256 of its content's fingerprint (`analysis.measures.failure_rows.coded_samples`),
    which determines the fit exactly (equal contents are the same arrays, fitted by the
    same steps).

    Args:
        content: the sample's fingerprint (or any bytes that tell samples apart).

    Returns:
        32 bytes.
    """
    return hashlib.sha256(content).digest()


def gamma_warning(fit: HazardFit) -> str:
    """The warning a γ row's detail carries when few of its decisions have an earlier
    useful judgment (γ then rests on those few; "" otherwise or without decisions).

    Args:
        fit: the hazard fit.

    Returns:
        e.g. "; warning: γ barely identified (1.2% < 5%)", or "".
    """
    if not fit.n_decisions or fit.share_earlier >= GAMMA_MIN_SHARE:
        return ""
    return f"; warning: γ barely identified ({fit.share_earlier:.1%} < {GAMMA_MIN_SHARE:.0%})"


def _fit_sources(decisions: pd.DataFrame, fr: FailureRows) -> list[str]:
    """Each group's ``judgments`` text for β/γ: the decisions the model is fitted on
    (after a result judged useless, `analysis.measures.hazard_sample.after_useless`) by
    where the judgment of their latest result came from."""
    kept = after_useless(decisions, fr.rows, "side_channel")
    group = fr.group[kept]
    n = np.bincount(group, minlength=len(fr.keys))
    replayed: np.ndarray = np.zeros(len(fr.keys))
    if REPLAYED in decisions:
        flags = decisions[REPLAYED].to_numpy(dtype=bool)[fr.rows[kept]]
        replayed = np.bincount(group, weights=flags, minlength=len(fr.keys))
    return [judgment_sources(int(a) - int(b), int(b)) for a, b in zip(n, replayed)]


def index_table(decisions: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0,
                grouping: Grouping | None = None) -> Table:
    """Integration index I with its components for every group and regime family.

    Args:
        decisions: the decision table.
        n_boot: resamples.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "index" (groups without a failure regime have no row).
    """
    rows: list[Row] = []
    fr = failure_rows(decisions, grouping)
    j = decisions["design_run"].to_numpy()[fr.rows]
    y = decisions["answer"].to_numpy()[fr.rows]
    lo, hi = (j >= 1) & (j <= 2), (j >= 4) & (j <= 5)
    every = np.ones(len(fr.rows), dtype=bool)
    sums, group = cluster_counts(decisions, fr, every, np.zeros(len(fr.rows), dtype=np.int64),
                                 1, np.column_stack([lo, lo * y, hi, hi * y]).astype(float))
    n45 = np.bincount(group, weights=hi, minlength=len(fr.keys))
    n12 = np.bincount(group, weights=lo, minlength=len(fr.keys))
    found = grouped_intervals(sums, _index_statistic, n_boot, seed)
    for g, (arm, regimes) in enumerate(zip(fr.keys, fr.regimes)):
        index, h45, h12 = found[g]
        ii = IntegrationIndex(index, h45, h12, int(n45[g]), int(n12[g]))
        rows += [interval_row(arm, "I", ii.index, "failure regimes", "decisions",
                              ii.n45 + ii.n12, f"h45 n={ii.n45}, h12 n={ii.n12}",
                              regimes=regimes),
                 interval_row(arm, "h45", ii.h45, "j = 4–5", "decisions", ii.n45,
                              regimes=regimes),
                 interval_row(arm, "h12", ii.h12, "j = 1–2", "decisions", ii.n12,
                              regimes=regimes)]
    notes = (("I = h({4,5}) − h({1,2}): P(answer) just after j consecutive failed observations "
             "(design labels), the five failure regimes of mean6 pooled (any other regime on its "
             "own line), final action excluded; 95% "
             "question-cluster bootstrap. Confounded with elapsed time (a clock scores I > 0)."),)
    return Table("index", "Integration index I", tuple(rows), notes, "wide",
                 ("I", "h45", "h12"), pooled=(grouping or Grouping()).pooled)


def hazard_table(decisions: pd.DataFrame, n_boot: int = N_BOOT,
                 hazard_boot: int = HAZARD_BOOT, seed: int = 0,
                 grouping: Grouping | None = None,
                 fitted: MutableMapping[bytes, tuple[HazardFit, HazardFit]] | None = None
                 ) -> Table:
    """Hazard curve (j = 0…7) and the LPM's β and γ, pooled and with question FE, for
    every group and regime family.

    Args:
        decisions: the decision table.
        n_boot: resamples for the curve.
        hazard_boot: resamples for the LPM.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.
        fitted: fits already made with this `hazard_boot` and `seed`, by `sample_key`
            of their sample: a group whose sample is among them is not fitted again,
            and the fits made here are added, those used again moved to the end, so
            the mapping's order is from least to most recently used
            (`analysis.tables.compute` keeps it in the results cache, so new episodes refit
            only the groups they change).

    Returns:
        Table "hazard" (groups without a failure regime have no row).
    """
    rows: list[Row] = []
    fr = failure_rows(decisions, grouping)
    samples = coded_samples(decisions, fr, "side_channel")
    known = {} if fitted is None else fitted
    keys = [sample_key(content) for _, content in samples]
    distinct = {k: sample for k, (sample, _) in zip(keys, samples, strict=True)}  # equal
    # samples fit once; fits used again become the newest, in the groups' order
    todo = [k for k in distinct if k not in known]
    for k in distinct:
        if k in known:
            known[k] = known.pop(k)
    # the fits run on worker threads while this thread computes the curves
    fits = start_fits([distinct[k] for k in todo], "side_channel", hazard_boot, seed)
    j = decisions["design_run"].to_numpy()[fr.rows]
    y = decisions["answer"].to_numpy()[fr.rows].astype(float)
    keep = j <= MAX_J
    sums, _ = cluster_counts(decisions, fr, keep, j[keep], MAX_J + 1,
                             np.column_stack([np.ones_like(y[keep]), y[keep]]))
    curves = grouped_intervals(sums, _curve_statistic, n_boot, seed)
    sources = _fit_sources(decisions, fr)
    known.update(zip(todo, fits(), strict=True))
    for g, (arm, regimes, key) in enumerate(zip(fr.keys, fr.regimes, keys, strict=True)):
        counts = sums[g].reshape(-1, MAX_J + 1, 2)[..., 0].sum(axis=0)
        for jj, (pt, n) in enumerate(zip(curves[g], counts)):
            rows.append(interval_row(arm, "hazard", pt, f"j={jj}", "decisions", int(n),
                                     regimes=regimes))
        for fit in known[key]:
            fe = fit.fixed_effects
            scope = "question FE" if fe else "pooled"
            detail = (f"{fit.n_decisions} decisions, {fit.share_earlier:.0%} with earlier useful"
                      if fit.n_decisions else "no decision after a result judged useless")
            rows += [replace(interval_row(arm, "beta", fit.beta, scope, "decisions",
                                          fit.n_decisions, detail, regimes=regimes),
                             judgments=sources[g]),
                     replace(interval_row(arm, "gamma", fit.gamma, scope, "decisions",
                                          fit.n_decisions, detail + gamma_warning(fit),
                                          regimes=regimes),
                             judgments=sources[g])]
    notes = (("hazard: P(answer) after j consecutive failed observations, failure regimes "
             "(the five of mean6, or another regime on its own line), final action excluded."),
             ("beta/gamma: LPM answer ~ action + regime + β·run + γ·earlier useful on decisions "
             "after a result judged useless (side channel), 1–6 results, failure regimes; "
             f"{hazard_boot} question-cluster resamples. Exploratory. judgments: those "
             "decisions by where the judgment of their latest result came from (side_channel: "
             f"in-run; replay: lab replay judgments); γ warns below {GAMMA_MIN_SHARE:.0%} "
             "with an earlier useful judgment."))
    return Table("hazard", "Stopping hazard and hazard model", tuple(rows), notes,
                 pooled=(grouping or Grouping()).pooled)


FITS_KEPT = 4096
"""Hazard-model fits the results cache keeps across selections (the most recently
used; ~0.4 KB each)."""


def index_results(inp: TableInput) -> TablePart:
    """The "index" results table (`analysis.tables.registry`)."""
    return TablePart((index_table(inp.decisions, inp.n_boot, inp.seed, inp.grouping),))


def hazard_results(inp: TableInput) -> TablePart:
    """The "hazard" results table and its curves (`analysis.tables.registry`); the fits of
    group samples seen before, in any selection, come from the results cache."""
    cache = inp.cache
    key = cache.shared_key("hazard fits", {"hazard_boot": inp.hazard_boot, "seed": inp.seed}
                           ) if cache else ""
    fitted = cache.get(key) if cache else None
    fitted = fitted if isinstance(fitted, dict) else {}
    table = hazard_table(inp.decisions, inp.n_boot, inp.hazard_boot, inp.seed, inp.grouping,
                         fitted)
    if cache:
        cache.put(key, dict(list(fitted.items())[-FITS_KEPT:]))
    return TablePart((table,), curves=_curves(table))


def _curves(table: Table) -> tuple[tuple[ArmKey, tuple[float, ...]], ...]:
    out: dict[ArmKey, list[float]] = {}
    for r in table.rows:
        if r.measure == "hazard":
            out.setdefault(r.key(), []).append(r.estimate)
    return tuple((arm, tuple(h)) for arm, h in out.items())
