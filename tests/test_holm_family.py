"""One Holm family in tables and registered tests: across models within
arm × budget × dataset × question set × scope, `p_holm` and `holm_m` wherever `p` is."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.base.rows import holm_family, with_holm
from analysis.measures.success import paired_table
from tests.helpers.synthetic import random_episodes


def test_paired_table_adjusts_across_models_within_each_family(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    import gc

    # imported here, not by the module: statsmodels pulls in scipy.stats (about 0.8 s), and
    # every xdist worker imports every test module when it collects the suite
    from statsmodels.stats.multitest import multipletests

    # statsmodels' holm branch ends with gc.collect(): no number changes, but each call
    # costs up to 0.7 s in a test process's large heap
    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)
    table = paired_table(random_episodes(seed=3), n_boot=200)
    families: dict[tuple, list] = {}
    for r in table.rows:
        assert math.isnan(r.p) == math.isnan(r.p_holm) and (r.holm_m > 0) != math.isnan(r.p)
        if not math.isnan(r.p):
            families.setdefault(holm_family(r), []).append(r)
    assert max(len(f) for f in families.values()) == 3  # three models, one family
    for rows in families.values():
        assert {r.holm_m for r in rows} == {len(rows)}
        assert len({r.model for r in rows}) == len(rows)
        want = multipletests([r.p for r in rows], method="holm")[1]
        assert [r.p_holm for r in rows] == pytest.approx(list(want))


def test_a_family_of_one_keeps_its_p_and_says_so() -> None:
    table = paired_table(random_episodes(seed=3).query("model == 'm1'"), n_boot=200)
    assert table.rows and all(r.p_holm == r.p and r.holm_m == 1 for r in table.rows
                              if not math.isnan(r.p))


def test_identical_arms_give_p_one_in_the_table() -> None:
    ep = random_episodes(seed=5).query("condition == 'none'")
    twin = ep.assign(condition="enforced_rule:k=3", episode_id=ep["episode_id"] + 10_000)
    rows = paired_table(pd.concat([ep, twin], ignore_index=True), n_boot=200).rows
    assert rows and all(r.estimate == 0 and r.p == 1 and r.p_holm == 1 for r in rows
                        if not math.isnan(r.estimate))


def test_with_holm_leaves_rows_without_p_alone() -> None:
    from analysis.base.rows import Row

    rows = (Row("m1", "none", 8, "x", "s", 0.1), Row("m2", "none", 8, "x", "s", 0.2, p=0.01),
            Row("m3", "none", 8, "x", "s", 0.3, p=0.04), Row("m1", "none", 8, "x", "t", p=0.5))
    got = with_holm(rows)
    assert math.isnan(got[0].p_holm) and got[0].holm_m == 0
    assert (got[1].p_holm, got[1].holm_m) == (0.02, 2)
    assert (got[2].p_holm, got[2].holm_m) == (0.04, 2)
    assert (got[3].p_holm, got[3].holm_m) == (0.5, 1)
    assert with_holm(()) == ()


def test_a_family_stays_within_one_amendments_runs_as_the_registered_test_reads_it() -> None:
    """Four models under amendment A1 and four exploratory ones with the same arms: the
    table's family for A1's rows is A1's four models, and its p_holm is the test's."""
    from analysis.prereg.outcomes import evaluate_test
    from tests.test_registered import SCOPE, Builder, amendment, success_pair

    models = ["m1", "m2", "m3", "m4"]
    b = Builder()
    for i, m in enumerate(models):
        success_pair(b, m, 6 + i % 2, 3, n=8)
        success_pair(b, f"x{m}", 6, 3 + i % 2, n=8, run="explore", amendment=None)
    frames = b.frames()
    test = {"id": "H", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "a": "enforced_rule", "b": "none", "models": models}
    scope = {**SCOPE, "models": models}
    got = evaluate_test(amendment(test, scope=scope), test, frames, n_boot=200)
    rows = [r for r in paired_table(frames.episodes, n_boot=200).rows
            if r.scope == "persistent"]
    assert len(rows) == 8
    governed = {r.model: r for r in rows if r.amendment == "A1"}
    assert sorted(governed) == models and {r.holm_m for r in rows} == {4}
    for part in got.parts:
        row = governed[part.unit.model]
        assert (row.p, row.p_holm, row.holm_m) == (part.p, part.p_adjusted, part.holm_m)
