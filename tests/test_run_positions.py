"""`core.store.packs.run_positions`: one search per run of equal values gives the very
positions `np.searchsorted` gives row by row (the decision frame and the decision packs
find each decision's episode with it)."""

from __future__ import annotations

import numpy as np
import pytest

from core.store.packs import run_positions


def _cases() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    ids = np.unique(rng.integers(0, 4_000, 1_500))
    runs = np.sort(rng.choice(ids, 6_000))  # decisions: each episode's rows together
    misses = np.sort(rng.integers(-5, 4_010, 6_000))  # ids absent, below and past the end
    return [(ids, runs), (ids, misses), (ids, runs[::-1].copy()), (ids, runs[:1]),
            (ids, runs[:0]), (ids[:0], runs), (ids, np.repeat(ids[3], 50))]


@pytest.mark.parametrize("case", range(7))
def test_the_positions_searchsorted_gives(case: int) -> None:
    ids, wanted = _cases()[case]
    got = run_positions(ids, wanted)
    assert got.shape == wanted.shape
    assert np.array_equal(got, np.searchsorted(ids, wanted))
