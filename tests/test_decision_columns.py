"""The decision frame's episode columns: each decision carries its episode's values; a
column holding one value on every episode is its first row's value read through a
stride-0 view, never a copy per decision, with the values and dtype a copy would have;
a text column holding more than one value (and no missing one) is a categorical: each
decision's code, the episode column's sorted distinct values as categories."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.measures.decisions import decisions_with_episodes
from core.decisions import COLUMNS


def decision_ints(episode_ids: list[int]) -> pd.DataFrame:
    """Integer decision rows (every COLUMNS field 0 but n_obs) of these episodes."""
    ints = {c: np.zeros(len(episode_ids), dtype=np.int64) for c in COLUMNS}
    ints["n_obs"] = np.arange(len(episode_ids), dtype=np.int64)
    return pd.DataFrame({"episode_id": np.asarray(episode_ids, dtype=np.int64), **ints})


def episodes() -> pd.DataFrame:
    run = "".join(["ma", "in"])  # one object on every row
    return pd.DataFrame({
        "episode_id": np.array([1, 2, 3, 5], dtype=np.int64),
        "run": pd.Series([run] * 4, dtype="str"),
        "regime": pd.Series(["clean", "persistent", "clean", "clean"], dtype="str"),
        "seed": np.array([7, 7, 7, 7], dtype=np.int64),
        "budget": np.array([8, 8, 4, 8], dtype=np.int64),
        "amendment": pd.Series([None] * 4, dtype=object),
        "arm": pd.Series(["".join(["no", "ne"]) for _ in range(4)], dtype=object),
    })


def test_columns_of_one_value_are_views_with_the_copied_values() -> None:
    ep = episodes()
    columns = ("run", "regime", "seed", "budget", "amendment", "arm")
    got = decisions_with_episodes(decision_ints([1, 1, 2, 3, 3, 3, 4, 5]), ep, columns)
    kept = [1, 1, 2, 3, 3, 3, 5]  # episode 4 is not among the episodes
    rows = np.searchsorted(ep["episode_id"].to_numpy(), kept)
    for c in columns:
        want = ep[c].to_numpy()[rows]
        if c == "regime":  # text of two values: codes
            assert isinstance(got[c].dtype, pd.CategoricalDtype), c
            assert got[c].cat.categories.tolist() == ["clean", "persistent"]
        else:
            assert got[c].dtype == ep[c].dtype, c
        assert got[c].tolist() == want.tolist(), c
        assert [type(v) for v in got[c].to_numpy()] == [type(v) for v in want], c
    viewed = {c for c in columns if got[c].to_numpy().strides == (0,)}
    # arm holds equal text in distinct objects: one text, so viewed too
    assert viewed == {"run", "seed", "amendment", "arm"}


def test_text_with_a_missing_value_is_copied_not_coded() -> None:
    """A text column with None or NaN among several values keeps its dtype and its very
    missing values (a categorical would turn None into NaN)."""
    ep = episodes().assign(
        amendment=pd.Series(["a1", None, "a2", "a1"], dtype=object),
        regime=pd.Series(["clean", np.nan, "clean", "persistent"], dtype="str"))
    got = decisions_with_episodes(decision_ints([1, 2, 2, 3, 5]), ep, ("amendment", "regime"))
    assert got["amendment"].dtype == object and got["regime"].dtype == "str"
    assert got["amendment"].tolist() == ["a1", None, None, "a2", "a1"]
    assert got["regime"].isna().tolist() == [False, True, True, False, False]


def test_no_decision_gives_empty_columns() -> None:
    got = decisions_with_episodes(decision_ints([9]), episodes(), ("run", "seed"))
    assert len(got) == 0
    assert got["run"].dtype == "str" and got["seed"].dtype == np.int64
