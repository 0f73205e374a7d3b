"""Column codes: dense, in sorted order of the values, one code per value however many
string objects spell it, missing values last (groupby(sort=True, dropna=False)'s keys)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.base.arms import _run_starts
from analysis.stats.codes import changes, codes, column_changes, in_rows, one_text, sorted_codes


def test_equal_text_in_distinct_objects_gets_one_code_and_missing_comes_last() -> None:
    b1, b2 = "".join(["b", "x"]), "".join(["b", "x"])
    assert b1 is not b2
    values = pd.Series(np.array([b1, "a", None, b2, "c"], dtype=object))
    codes, uniques = sorted_codes(values)
    assert codes.tolist() == [1, 0, 3, 1, 2]
    assert uniques[:3].tolist() == ["a", "bx", "c"] and pd.isna(uniques[3])
    keys = values.groupby(values, sort=True, dropna=False).ngroup().tolist()
    assert codes.tolist() == keys


def test_runs_start_where_a_value_changes() -> None:
    x1, x2 = "".join(["x", "y"]), "".join(["x", "y"])
    frame = pd.DataFrame({"a": np.array([x1, x2, "z", "z", x1], dtype=object),
                          "b": [1, 1, 1, 2, 2]})
    assert _run_starts(frame, ["a", "b"]).tolist() == [0, 2, 3, 4]
    assert _run_starts(frame.iloc[:0], ["a"]).tolist() == []


def test_changes_are_the_elementwise_comparison_of_neighbours() -> None:
    """`changes` is the comparison numpy makes, on equal text in distinct objects, None,
    NaN (unequal to itself) and numbers; a zero-stride column has none."""
    nan = float("nan")
    x1, x2 = "".join(["x", "y"]), "".join(["x", "y"])
    rng = np.random.default_rng(0)
    pool = [x1, x2, "z", None, 3, 3.0, float("nan")]
    values = np.array([pool[i] for i in rng.integers(0, len(pool), 500)], dtype=object)
    assert changes(values).tolist() == (values[1:] != values[:-1]).tolist()
    assert changes(np.array([nan, nan, x1, x2, "z"], dtype=object)).tolist() == [
        True, True, False, True]
    assert changes(np.array([1, 1, 2])).tolist() == [False, True]
    assert changes(np.array([nan, nan])).tolist() == [True]  # float NaNs: numpy's rule
    assert changes(np.array([], dtype=object)).tolist() == []
    strided = np.array([x1, "q", x2, "q", "z", "q"], dtype=object)[::2]
    assert changes(strided).tolist() == [False, True]


def test_a_column_in_runs_is_coded_as_the_whole_column() -> None:
    """A column whose rows come in runs (a decision frame's text) is coded by each run's
    first row: the codes and the very distinct objects of pandas' factorize of every
    row (the missing value pandas makes anew), on equal text in distinct objects, None,
    NaN and pd.NA (missing last)."""
    rng = np.random.default_rng(1)
    x1, x2 = "".join(["x", "y"]), "".join(["x", "y"])
    pool = [x1, x2, "z", "a", None, float("nan"), pd.NA]
    for trial in range(60):
        runs = [pool[i] for i in rng.integers(0, len(pool) - (trial % 2) * 3, 40)]
        values = np.repeat(np.array(runs, dtype=object), rng.integers(1, 6, len(runs)))
        codes, uniques = sorted_codes(pd.Series(values, dtype=object))
        want, want_uniques = pd.factorize(values, sort=True, use_na_sentinel=False)
        assert codes.tolist() == want.tolist()
        assert len(uniques) == len(want_uniques)
        assert all(a is b or pd.isna(a) and pd.isna(b) for a, b in zip(uniques, want_uniques))
    codes, uniques = sorted_codes(pd.Series(["b", "b", "a", "a", "b"], dtype="str"))
    assert codes.tolist() == [1, 1, 0, 0, 1] and uniques.tolist() == ["a", "b"]


def test_in_rows_is_isin_asked_once_per_run() -> None:
    """`in_rows` of a column in runs (a decision frame's regimes) is ``isin`` of every
    row: equal text in distinct objects, None, NaN and pd.NA, short runs and long ones,
    object and str columns."""
    rng = np.random.default_rng(2)
    x1, x2 = "".join(["x", "y"]), "".join(["x", "y"])
    pool = [x1, x2, "z", "a", None, float("nan"), pd.NA]
    for trial in range(60):
        runs = [pool[i] for i in rng.integers(0, len(pool) - (trial % 2) * 3, 40)]
        values = np.repeat(np.array(runs, dtype=object), rng.integers(1, 8, len(runs)))
        for dtype in (object, "str"):
            if dtype == "str" and trial % 2 == 0:
                continue  # str columns hold text and NaN only
            column = pd.Series(values, dtype=dtype)
            for wanted in (["xy"], ["z", "a"], ["q"], []):
                got = in_rows(column, wanted)
                assert got.dtype == bool
                assert got.tolist() == column.isin(wanted).tolist(), (trial, dtype, wanted)
    mixed = pd.Series(np.array(["a", "b"] * 20, dtype=object))  # no runs: isin itself
    assert in_rows(mixed, ["a"]).tolist() == [True, False] * 20


def test_one_element_on_every_row_is_never_a_change() -> None:
    """A column read through a stride-0 view (a decision frame's column holding one value
    on every episode) has no change, as the same object on every row has none; numbers
    through such a view compare as numbers (a NaN is unequal to itself there)."""
    text = np.broadcast_to(np.array(["run"], dtype=object), 6)
    assert text.strides == (0,)
    assert changes(text).tolist() == [False] * 5
    assert changes(np.broadcast_to(np.int64(3), 4)).tolist() == [False] * 3
    nan = np.broadcast_to(np.float64("nan"), 3)
    assert changes(nan).tolist() == np.asarray(nan[1:] != nan[:-1]).tolist() == [True] * 2
    assert sorted_codes(pd.Series(text, copy=False))[0].tolist() == [0] * 6


def test_one_text_means_equal_text_or_none_on_every_row() -> None:
    """Any row of a column of one text can stand for all of them: equal text in distinct
    objects is one text; numbers never are (3, 3.0 and True are equal but print apart)."""
    x1, x2 = "".join(["x", "y"]), "".join(["x", "y"])
    assert one_text(np.array([x1, x1, x1], dtype=object))
    assert one_text(np.array([x1, x1, x2], dtype=object))  # equal text, two objects
    assert one_text(np.array([None, None], dtype=object))
    assert not one_text(np.array([x1, x1, "xz"], dtype=object))
    assert not one_text(np.array([x1, "q", x1], dtype=object))  # the ends agree
    assert not one_text(np.array([None, None, x1], dtype=object))
    assert not one_text(np.array([x1, None, x1, x1], dtype=object))
    assert not one_text(np.array([3, 3], dtype=object))
    assert not one_text(np.array([3, 3.0], dtype=object))
    assert not one_text(np.array([float("nan")] * 2, dtype=object))
    assert not one_text(np.array([], dtype=object))
    assert not one_text(np.array(["a", "a"]))  # numpy text: not an object column
    assert one_text(np.array([x1, "q", x2, "q"], dtype=object)[::2])  # not contiguous
    assert not one_text(np.array([x1, x2, "q", x2], dtype=object)[::2])
    assert one_text(np.broadcast_to(np.array([x2], dtype=object), 5))


def test_categorical_columns_code_as_their_text() -> None:
    """A categorical column (a decision frame's text, `decisions_with_episodes`) gives the
    codes and distinct values of its text as an object column: over the categories its
    rows hold (some categories unused, a missing value last), from `sorted_codes` and
    `codes`; its runs cut wherever the text changes and at every missing value; `in_rows`
    is ``isin`` of its text."""
    rng = np.random.default_rng(4)
    pool = np.array(["b", "a", "d", "c", np.nan], dtype=object)
    for trial in range(40):
        values = pool[np.repeat(rng.integers(0, 5 - trial % 2, 30), rng.integers(1, 4, 30))]
        text = pd.Series(values, dtype=object)
        categories = ["a", "b", "c", "d", "e"]  # "e" never used; some others neither
        coded = pd.Series(pd.Categorical(values, categories=categories))
        got, want = sorted_codes(coded), sorted_codes(text)
        assert got[0].tolist() == want[0].tolist(), trial
        assert got[1][:-1].tolist() == want[1][:-1].tolist()
        assert (pd.isna(got[1][-1]) and pd.isna(want[1][-1])) or got[1][-1] == want[1][-1]
        got, want = codes(coded), codes(text)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        assert column_changes(coded).tolist() == changes(values).tolist()
        for wanted in (["a"], ["b", "d"], ["e"], []):
            assert in_rows(coded, wanted).tolist() == text.isin(wanted).tolist()
        unsorted = pd.Series(pd.Categorical(values, categories=["d", "b", "e", "a", "c"]))
        got = sorted_codes(unsorted)  # its codes are not in the text's order: from values
        assert got[0].tolist() == sorted_codes(text)[0].tolist()
