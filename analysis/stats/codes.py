"""Integer codes of a column: the dense, sorted codes every grouped computation counts by.

An object column is hashed by object identity first and by value only once per
distinct object: a decision frame's string columns hold the same few objects on every
row (taken from its episodes), so a million rows hash as integers.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pandas as pd


def object_addresses(values: np.ndarray) -> np.ndarray:
    """The addresses of the objects an object array holds, as integers (a copy)."""
    values = np.ascontiguousarray(values)
    raw = (ctypes.c_size_t * len(values)).from_address(values.ctypes.data)
    return np.ctypeslib.as_array(raw).copy()


def first_rows(codes: np.ndarray, n: int) -> np.ndarray:
    """The first row holding each of the codes 0…n-1 (each occurs)."""
    first = np.empty(n, dtype=np.int64)
    rows = np.arange(len(codes) - 1, -1, -1)
    first[codes[::-1]] = rows  # of repeated indices the last assignment stays: the first row
    return first


def sorted_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes and sorted distinct values of a column, missing values last (the order
    ``groupby(sort=True, dropna=False)`` gives its keys).

    An object column is hashed by object identity first and by value only once per
    distinct object (see the module's docstring).
    """
    array = values.to_numpy()
    if array.dtype != object:
        codes, uniques = pd.factorize(array, sort=True, use_na_sentinel=False)
        return codes.astype(np.int64), np.asarray(uniques, dtype=object)
    by_object, addresses = pd.factorize(object_addresses(array))
    first = first_rows(by_object, len(addresses))
    codes, uniques = pd.factorize(array[first], sort=True, use_na_sentinel=False)
    return codes.astype(np.int64)[by_object], np.asarray(uniques, dtype=object)


def codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and sorted unique values of a column.

    Args:
        values: the column.

    Returns:
        (codes, uniques).
    """
    if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
        # the frames' text columns repeat a few objects: hash them by identity first
        # (`sorted_codes`), ten times faster than by value on a million rows
        c, u = sorted_codes(values)
        if not (len(u) and pd.isna(u[-1])):  # with a missing value: pandas' -1 codes
            return c, u
    c, u = pd.factorize(values, sort=True)
    return c.astype(np.int64), np.asarray(u)
