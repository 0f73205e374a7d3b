"""Groups whose data are equal (arms a simulated model answers the same way) are
resampled once and share their intervals; groups that only look alike (the same totals,
other questions) keep their own. Every interval equals the one computed alone, to the
last digit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import analysis.measures.delta as delta
import analysis.measures.success as success
from analysis.base.arms import ArmKey, Grouping
from analysis.measures.delta import Counts, contrasts
from analysis.measures.success import QuestionMatrix, paired_matrices, restrict
from analysis.stats.bootstrap import Interval


def _counts(rng: np.random.Generator, n_q: int, n_s: int, nested: bool) -> Counts:
    n = 30 * n_q
    q, s = rng.integers(0, n_q, n), rng.integers(0, n_s, n)
    a = rng.random(n) < 0.4
    b = ~a & (rng.random(n) < 0.6)
    y = (rng.random(n) < np.where(a, 0.7, 0.3)).astype(float)
    return Counts.of(q, n_q, s, n_s, a, b, y, nested, "test")


def _shuffled(item: Counts, rng: np.random.Generator) -> Counts:
    """The same decisions on other questions: the same totals, other resamples."""
    return replace(item, counts=item.counts[rng.permutation(item.counts.shape[0])])


def _interval(c: delta.Contrast) -> tuple[float, ...]:
    iv = c.interval
    return iv.estimate, iv.low, iv.high, iv.n, iv.n_boot


@pytest.mark.parametrize("nested", [False, True])
def test_equal_contrasts_are_resampled_once(monkeypatch: pytest.MonkeyPatch,
                                            nested: bool) -> None:
    rng = np.random.default_rng(4)
    base = [_counts(rng, 30, n_s, nested) for n_s in (1, 3, 9)]
    lookalike = _shuffled(base[1], rng)
    assert not np.array_equal(lookalike.counts, base[1].counts)
    # copies (equal arrays in other objects), a lookalike, and a copy labelled otherwise
    items = [base[0], base[1], replace(base[0], counts=base[0].counts.copy()), lookalike,
             base[2], replace(base[1], strata="other"), base[1]]
    alone = [_interval(contrasts([it], n_boot=200, seed=1)[0]) for it in items]
    resampled: list[int] = []
    inner = delta._same_questions

    def counted(group: list[Counts], n_q: int, n_boot: int, seed: int) -> list[Interval]:
        resampled.append(len(group))
        return inner(group, n_q, n_boot, seed)

    monkeypatch.setattr(delta, "_same_questions", counted)
    got = contrasts(items, n_boot=200, seed=1)
    assert sum(resampled) == 4  # base's three and the lookalike
    for item, c, want in zip(items, got, alone):
        np.testing.assert_array_equal(np.array(_interval(c)), np.array(want))
        assert (c.n_a, c.n_b, c.strata) == (item.n_a, item.n_b, item.strata)
    assert _interval(got[3]) != _interval(got[1])  # the lookalike's own interval


def _matrix(rng: np.random.Generator, n_q: int = 25) -> QuestionMatrix:
    regimes = ("clean", "persistent", "recover_after_1", "recover_after_2",
               "recover_after_3", "late_onset_from_3")
    value = rng.integers(0, 3, (n_q, len(regimes))) / 2
    return QuestionMatrix(tuple(f"q{i:03d}" for i in range(n_q)), regimes, value,
                          np.ones(value.shape, dtype=bool))


def _moved(m: QuestionMatrix) -> QuestionMatrix:
    """The same matrix with one question's value in one regime changed."""
    value = m.value.copy()
    value[3, 2] = 1.0 - value[3, 2] + 0.25
    return replace(m, value=value)


def test_equal_success_matrices_are_resampled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    m = _matrix(rng)
    mats = [m, replace(m, value=m.value.copy()), _moved(m), _matrix(rng), m]
    keys = [ArmKey(f"sim-{i}", "none", 8, "hotpotqa", "dev", "main", "0", "0", "", "", "none",
                   regimes=m.regimes) for i in range(len(mats))]
    alone = [success._regime_intervals(x, 200, 2) for x in mats]
    resampled: list[QuestionMatrix] = []
    inner = success._regime_intervals

    def counted(x: QuestionMatrix, n_boot: int, seed: int
                ) -> tuple[tuple[str, Interval], ...]:
        resampled.append(x)
        return inner(x, n_boot, seed)

    monkeypatch.setattr(success, "_regime_intervals", counted)
    table = success._success_table((keys, mats), 200, 2, Grouping())
    assert len(resampled) == 3
    got = [tuple((r.scope, r.estimate, r.ci_low, r.ci_high) for r in table.rows
                 if r.model == k.model) for k in keys]
    want = [tuple((scope, iv.estimate, iv.low, iv.high) for scope, iv in one) for one in alone]
    assert got == want
    assert got[2] != got[0]


def test_equal_paired_arms_are_resampled_once() -> None:
    rng = np.random.default_rng(6)
    ref, m = _matrix(rng), _matrix(rng)
    arms = [m, replace(m, value=m.value.copy()), _moved(m), m]
    together = paired_matrices([(a, ref, 0) for a in arms], 200, 3)
    alone = [paired_matrices([(a, ref, 0)], 200, 3)[0] for a in arms]
    assert together == alone
    assert together[2] != together[0]


def test_restrict_reorders_as_many_other_questions() -> None:
    m = _matrix(np.random.default_rng(7), 6)
    questions = (*m.questions[:0:-1], "q999")  # five of them reversed and one it lacks
    regimes = m.regimes[::-1]
    got = restrict(m, questions, regimes)
    assert got.value[0].tolist() == m.value[5, ::-1].tolist()
    assert not got.present[-1].any() and got.present[:-1].all()
    same = restrict(m, m.questions, m.regimes)
    assert np.array_equal(same.value, m.value) and same.questions == m.questions
