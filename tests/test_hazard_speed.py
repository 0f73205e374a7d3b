"""The fast hazard-model bootstrap and the all-groups-at-once I and hazard
curve give the numbers of the group-by-group, resample-by-resample definitions, to
the last digit.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pandas as pd
import pytest

from analysis.base.arms import Grouping
from analysis.measures.failure_rows import (
    _fingerprint,
    coded_samples,
    failure_rows,
    grouped_intervals,
)
from analysis.measures.hazard import hazard_table, index_table, integration_index
from analysis.stats.bootstrap import bootstrap_intervals, resample_weights, safe_ratio, summarize
from analysis.stats.lpm_batch import CodedSample, fit_samples, start_fits
from analysis.stats.lpm_boot import _certainly_full_rank, coefficient_intervals, lstsq_weighted
from tests.helpers.gates import held_until
from tests.helpers.synthetic import synthetic_hazard
from tests.oracles.measures import group_samples, hazard_curve, hazard_sample
from tests.oracles.stats import fit_both, question_crossproducts


def _reference(g: np.ndarray, h: np.ndarray, cols: tuple[int, ...],
               estimates: tuple[float, float], n_boot: int) -> tuple:
    """Every resample solved by `lstsq_weighted`, then `summarize` (the definition)."""
    boot = np.vstack([lstsq_weighted(g, h, w, cols)
                      for w in resample_weights(g.shape[0], n_boot, 0)])
    return tuple(summarize(e, boot[:, k], g.shape[0]) for k, e in enumerate(estimates))


@pytest.mark.parametrize("fe", [False, True])
@pytest.mark.parametrize("n_boot", [1, 37, 300])
def test_coefficient_intervals_equal_solving_every_resample(fe: bool, n_boot: int) -> None:
    dec = synthetic_hazard(beta=0.05, gamma=0.1, n_q=40, per_q=12, seed=3)
    g, h, cols = question_crossproducts(hazard_sample(dec), fe)
    got = coefficient_intervals(g, h, cols, (0.05, 0.1), n_boot, 0)
    assert got == _reference(g, h, cols, (0.05, 0.1), n_boot)
    assert got[0].n_boot == n_boot


def test_rank_deficient_resamples_take_the_exact_path() -> None:
    """Few questions with an earlier useful judgment: some resamples lose them all, so
    γ is not identified there (NaN) and their X'X is singular."""
    dec = synthetic_hazard(beta=0.05, gamma=0.1, n_q=12, per_q=8, seed=5)
    dec["own_earlier"] = dec["question_id"].isin(["q0", "q1"]) & dec["own_earlier"]
    g, h, cols = question_crossproducts(hazard_sample(dec), False)
    got = coefficient_intervals(g, h, cols, (0.05, 0.1), 400, 0)
    want = _reference(g, h, cols, (0.05, 0.1), 400)
    assert got == want
    assert want[1].n_boot < 400  # the case this test is about did occur


def test_full_rank_certificate_refuses_singular_and_ill_conditioned_matrices() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 4))
    good = x.T @ x
    singular = good.copy()
    singular[:, 3] = singular[:, 2]
    singular[3, :] = singular[2, :]
    scaled = np.diag([1.0, 1.0, 1.0, 1e-4]) @ good @ np.diag([1.0, 1.0, 1.0, 1e-4])
    assert _certainly_full_rank(np.stack([good, good * 1e6]))
    for bad in (singular, scaled, np.zeros((4, 4))):
        assert not _certainly_full_rank(np.stack([good, bad]))
    assert _certainly_full_rank(np.empty((0, 4, 4)))


def _decisions() -> pd.DataFrame:
    """Two models, one of them twice as a different arm spec with equal decisions."""
    parts = []
    for model, seed in (("m1", 1), ("m2", 2)):
        d = synthetic_hazard(beta=0.05, gamma=0.1, n_q=25, per_q=10, seed=seed)
        d["model"] = model
        parts.append(d)
    dec = pd.concat(parts, ignore_index=True)
    rng = np.random.default_rng(7)
    dec["regime"] = rng.choice(["persistent", "recover_after_2", "plausible", "clean"],
                               size=len(dec))
    dec["design_run"] = rng.integers(0, 10, size=len(dec))
    dec["final"] = rng.random(len(dec)) < 0.1
    for col, value in (("arm", "none"), ("condition_hash", "h"), ("dataset", "hotpotqa"),
                       ("question_set", ""), ("run", "r"), ("seed", 0), ("replicate", 0),
                       ("amendment", None), ("episode_id", 0)):
        dec[col] = value
    return dec


def test_tables_equal_the_group_by_group_definitions() -> None:
    dec = _decisions()
    grouping = Grouping()
    index_rows = index_table(dec, 60, 0).rows
    hazard_rows = hazard_table(dec, 60, 40, 0).rows
    fr = failure_rows(dec, grouping)
    assert {k.family for k in fr.keys} == {"main", "plausible"}
    samples = dict(zip(fr.keys, group_samples(dec, fr, "side_channel"), strict=True))
    checked = 0
    for arm, sub in grouping.groups(dec, True):
        regimes = fr.regimes[fr.keys.index(arm)]
        ii = integration_index(sub, 60, 0, regimes)
        got = {r.measure: (r.estimate, r.ci_low, r.ci_high) for r in index_rows
               if r.key() == arm}
        want = {m: (i.estimate, i.low, i.high) for m, i in
                (("I", ii.index), ("h45", ii.h45), ("h12", ii.h12))}
        assert repr(got) == repr(want)  # every digit (and NaN where undefined)
        curve = hazard_curve(sub, n_boot=60, seed=0, regimes=regimes)
        got_curve = [(r.estimate, r.ci_low, r.ci_high, r.n) for r in hazard_rows
                     if r.key() == arm and r.measure == "hazard"]
        assert repr(got_curve) == repr([(p.estimate, p.low, p.high, n)
                                        for p, n in zip(curve.points, curve.counts)])
        assert samples[arm][0].equals(hazard_sample(sub, "side_channel", regimes))
        checked += 1
    assert checked == len(fr.keys) == 4


def test_coded_samples_fit_as_the_frames_do() -> None:
    """The hazard table's integer-coded samples and batched fits give `fit_both`'s
    numbers on each group's frame, to the last digit: actions whose text order is not
    their numeric order (10 < 9 as text), a group where γ is not identified, and a
    group with a failure regime but no decision after a useless result."""
    dec = _decisions()
    dec["action"] = np.where(dec["action"] >= 5, dec["action"] + 5, dec["action"])
    extra = []
    for model, change in (("m3", {"own_earlier": False}), ("m4", {"own_latest": False})):
        d = dec.loc[dec["model"] == "m1"].copy()
        d["model"] = model
        for col, value in change.items():
            d[col] = value
        extra.append(d)
    dec = pd.concat([dec, *extra], ignore_index=True)
    fr = failure_rows(dec, Grouping())
    frames = group_samples(dec, fr, "side_channel")
    coded = coded_samples(dec, fr, "side_channel")
    assert [c for _, c in frames] != [c for _, c in coded]  # the codes differ, the classes not
    same = [[a == b for _, b in frames] for _, a in frames]
    assert same == [[a == b for _, b in coded] for _, a in coded]
    want = [fit_both(sample, "side_channel", 120, 0) for sample, _ in frames]
    got = fit_samples([sample for sample, _ in coded], "side_channel", 120, 0)
    assert repr(got) == repr(want)  # every digit, NaN where not identified
    assert any(math.isnan(f.gamma.estimate) for f, _ in got if f.n_decisions)
    assert any(f.n_decisions == 0 for f, _ in got)


def test_samples_fitted_on_threads_equal_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fit_samples` on several threads gives the numbers, in the order, of fitting
    the samples on one thread."""
    import analysis.stats.lpm_batch as lpm_batch

    dec = _decisions()
    coded = [s for s, _ in coded_samples(dec, failure_rows(dec, Grouping()), "side_channel")]
    coded = coded + coded[::-1]
    monkeypatch.setattr(lpm_batch, "worker_threads", lambda: 3)
    threaded = fit_samples(coded, "side_channel", 150, 2)
    monkeypatch.setattr(lpm_batch, "worker_threads", lambda: 1)
    assert repr(threaded) == repr(fit_samples(coded, "side_channel", 150, 2))
    assert repr(threaded[0]) == repr(threaded[-1]) != repr(threaded[1])


@pytest.mark.parametrize("pool", [(), ("seeds", "runs")])
def test_failure_rows_group_as_grouping_codes(pool: tuple[str, ...]) -> None:
    """Grouping one row per run of equal keys gives `Grouping.codes`' groups and keys,
    also when equal text sits in distinct objects and groups interleave."""
    dec = _decisions()
    at = np.arange(len(dec))
    regimes = np.array(["persistent", "recover_after_2", "plausible", "clean"], dtype=object)
    dec["regime"] = pd.Series(regimes[at // 6 % 4], dtype=object)  # runs of six rows
    dec["seed"] = np.where(at % 7 < 3, 0, 1)  # changes within those runs
    dec["run"] = pd.Series(np.array(["r", "s"], dtype=object)[at // 5 % 2], dtype=object)
    same_text = np.array(["".join(["m", "1"]), "".join(["m", "1"]), "m2"], dtype=object)
    dec["model"] = pd.Series(same_text[np.where(dec["model"] == "m1", at // 3 % 2, 2)],
                             dtype=object)
    grouping = Grouping(pool)
    keys, group = grouping.codes(dec, families=True)
    fr = failure_rows(dec, grouping)
    assert set(fr.keys) <= set(keys) and len(fr.keys) > 2
    where = [keys.index(k) for k in fr.keys]
    assert (np.asarray(where)[fr.group] == group[fr.rows]).all()


def test_hazard_table_reuses_given_fits_and_orders_them_by_last_use() -> None:
    from dataclasses import replace

    from analysis.stats.bootstrap import Interval

    dec = _decisions()
    fitted: dict = {}
    first = hazard_table(dec, 60, 40, 0, fitted=fitted)
    keys = list(fitted)
    assert len(keys) > 1
    marked = tuple(replace(f, beta=Interval(123.0)) for f in fitted[keys[0]])
    fitted = {b"other": None, keys[0]: marked, **{k: fitted[k] for k in reversed(keys[1:])}}
    again = hazard_table(dec, 60, 40, 0, fitted=fitted)
    betas = [r.estimate for r in again.rows if r.measure == "beta"]
    assert betas.count(123.0) == 2 and len(betas) == 2 * len(keys)  # given, not refitted
    assert repr([r for r in again.rows if r.measure != "beta"]) == repr(
        [r for r in first.rows if r.measure != "beta"])
    assert list(fitted)[0] == b"other" and set(list(fitted)[1:]) == set(keys)
    assert repr(hazard_table(dec, 60, 40, 0).rows) == repr(first.rows)


@pytest.mark.parametrize("pool", [(), ("seeds", "runs"), ("sets",)])
def test_grouping_codes_by_runs_equal_row_by_row(pool: tuple[str, ...]) -> None:
    """`Grouping.codes` groups the first row of each run of equal keys and spreads it
    over the run: the keys and codes of grouping every row, also with equal text in
    distinct objects, missing amendments and seeds, and runs that interleave."""
    from analysis.base.arms import _run_starts, with_keys

    dec = _decisions().sort_values(["model", "regime"], kind="stable").reset_index(drop=True)
    for column in ("model", "regime", "arm", "condition", "condition_hash", "dataset"):
        one: dict = {}  # one object per text, as frames read from lab.db hold them
        dec[column] = pd.Series([one.setdefault(v, v) for v in dec[column]], dtype=object)
    at = np.arange(len(dec))
    dec.loc[at % 97 == 5, "model"] = "".join(["m", "1"])  # equal text, another object
    dec["seed"] = at // 40 % 3
    dec["amendment"] = pd.Series(np.array(["a1", None], dtype=object)[at // 25 % 2],
                                 dtype=object)
    dec["run"] = pd.Series(np.array(["r0", "r1"], dtype=object)[at // 30 % 2], dtype=object)
    dec["question_set"] = pd.Series(np.array(["s1", "s2"], dtype=object)[at // 90 % 2],
                                    dtype=object)
    grouping = Grouping(pool)
    assert len(_run_starts(dec, grouping._factor_columns())) * 4 <= len(dec)  # the run path
    with_nan = dec.assign(replicate=np.where(at % 50 == 7, np.nan, 0.0))  # runs cut
    for frame in (dec, with_nan):
        for families in (False, True):
            keys, codes = grouping.codes(frame, families)
            want_keys, want_codes = grouping._codes_of(with_keys(frame), families)
            assert repr(keys) == repr(want_keys) and codes.tolist() == want_codes.tolist()
            assert len(keys) > 2


def test_sample_fingerprints_tell_every_column_apart() -> None:
    """Equal samples share a fingerprint (in other arrays); a change in any one column, or
    one decision fewer, gives another."""
    dec = _decisions()
    coded = coded_samples(dec, failure_rows(dec, Grouping()), "side_channel")
    sample, content = next((s, c) for s, c in coded if len(s.answer) > 2)
    columns = ("answer", "action", "regime", "run", "earlier", "question")
    copy = CodedSample(*(getattr(sample, c).copy() for c in columns))
    assert _fingerprint(copy) == content and len(content) == 32
    seen = {content}
    for name in columns:
        changed = {c: getattr(sample, c).copy() for c in columns}
        changed[name][1] += 1
        seen.add(_fingerprint(CodedSample(**changed)))
    seen.add(_fingerprint(CodedSample(*(getattr(sample, c)[:-1] for c in columns))))
    assert len(seen) == len(columns) + 2


def test_fits_started_run_while_their_caller_works_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """`start_fits` returns before its fits are made (the hazard table computes its curves
    meanwhile), and then gives `fit_samples`' numbers in the samples' order."""
    import analysis.stats.lpm_batch as lpm_batch

    dec = _decisions()
    coded = [s for s, _ in coded_samples(dec, failure_rows(dec, Grouping()), "side_channel")]
    monkeypatch.setattr(lpm_batch, "worker_threads", lambda: 1)
    want = fit_samples(coded, "side_channel", 80, 1)
    go = threading.Event()
    monkeypatch.setattr(lpm_batch, "_fit_both",
                        held_until(go, lpm_batch._fit_both, "start_fits"))
    monkeypatch.setattr(lpm_batch, "worker_threads", lambda: 2)
    fits = start_fits(coded, "side_channel", 80, 1)
    go.set()  # reached only once start_fits has returned
    assert repr(fits()) == repr(want)


def test_grouped_intervals_over_several_batches_equal_each_group_alone() -> None:
    """More resamples than one batch of weights, groups of two sizes: each group's
    intervals are those of its own bootstrap."""
    rng = np.random.default_rng(9)
    sums = [rng.integers(0, 4, (n_q, 6)).astype(float) for n_q in (20, 20, 31, 20)]
    sums[1] = sums[0].copy()  # an equal group: its columns multiplied once

    def ratio(c: np.ndarray) -> np.ndarray:
        c = c.reshape(*c.shape[:-1], -1, 2)
        return safe_ratio(c[..., 1], c[..., 0])

    got = grouped_intervals(sums, ratio, 600, 4)
    for s, intervals in zip(sums, got):
        def alone(w: np.ndarray, s: np.ndarray = s) -> np.ndarray:
            return ratio(w @ s)

        want = bootstrap_intervals(alone, s.shape[0], 600, 4)
        assert repr(intervals) == repr(want)
