"""The hazard table warns in a γ row's detail when fewer than 5% of its
decisions have an earlier useful judgment (γ then rests on a handful of decisions),
and only then."""

from __future__ import annotations

import math

import pytest

from analysis.base.rows import Row
from analysis.measures.frames import load_frames
from analysis.measures.hazard import GAMMA_MIN_SHARE, gamma_warning
from analysis.stats.bootstrap import UNDEFINED
from analysis.stats.lpm import HazardFit
from analysis.tables.compute import compute
from core import store
from tests.helpers.builders import store_sim_grid

WARNING = "warning: γ barely identified"


def _fit(n: int, share: float) -> HazardFit:
    return HazardFit(UNDEFINED, UNDEFINED, False, "side_channel", n, share)


def test_the_warning_starts_below_five_percent() -> None:
    assert GAMMA_MIN_SHARE == 0.05
    assert gamma_warning(_fit(412, 0.049)) == (
        "; warning: γ barely identified (4.9% < 5%)")
    assert WARNING in gamma_warning(_fit(30, 0.0))
    assert gamma_warning(_fit(412, 0.05)) == ""
    assert gamma_warning(_fit(412, 0.6)) == ""
    assert gamma_warning(_fit(0, math.nan)) == ""  # no decision: the detail says so already


@pytest.fixture(scope="module")
def hazard_rows(tmp_path_factory: pytest.TempPathFactory) -> list[Row]:
    """Run "p": persistent only (every judgment useless: no earlier useful one); run "l":
    late_onset_from_3 (two useful results before the failures)."""
    db = store.connect(tmp_path_factory.mktemp("gamma") / "lab.db")
    store_sim_grid(db, "p", (("sim-own5", "none"),), ("persistent",), 6)
    store_sim_grid(db, "l", (("sim-own5", "none"),), ("late_onset_from_3",), 6)
    table = compute(load_frames(db), ("hazard",), n_boot=20, hazard_boot=20).tables[0]
    return [r for r in table.rows if r.measure in ("beta", "gamma")]


def test_gamma_rows_warn_only_where_few_decisions_have_an_earlier_useful_one(hazard_rows: list[Row]
                                                                            ) -> None:
    by_run = {run: [r for r in hazard_rows if r.runs == run] for run in ("p", "l")}
    assert all(len(rows) == 4 for rows in by_run.values())  # β, γ × pooled, question FE
    for r in by_run["p"]:
        assert r.n > 0 and "0% with earlier useful" in r.detail
        assert (WARNING in r.detail) == (r.measure == "gamma"), (r.measure, r.detail)
    for r in by_run["l"]:
        share = int(r.detail.split("decisions, ")[1].split("%")[0])
        assert r.n > 0 and share >= 5, r.detail
        assert WARNING not in r.detail
