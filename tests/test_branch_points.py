"""Branches built from `BranchPoints` (every episode's decision points and branches
prepared once per table) equal the branches built for each group on its own, for every
group and both branch kinds of the report's study (answer-now branches on six arms,
budgets 8 and 12)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analysis.replay.branches import BranchPoints, build_branches
from tests.helpers.report_study import study_db


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    from analysis.measures.frames import load_frames
    from core import store
    from core.probes import BRANCH_KINDS
    from core.store.probes import probes_frame

    db = store.connect(study_db(tmp_path_factory), create=False)
    f = load_frames(db)
    return f.episodes, f.steps, probes_frame(db, f.selection, kinds=BRANCH_KINDS)


@pytest.mark.parametrize("kind", ["answer_now", "answer_now_confidence"])
def test_every_group_gets_the_branches_it_would_get_alone(
        frames: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame], kind: str) -> None:
    from analysis.base.arms import Grouping
    from analysis.measures.decisions import arm_groups

    episodes, steps, probes = frames
    points = BranchPoints(steps, probes)
    groups = list(arm_groups(episodes, Grouping(), families=True))
    assert len(groups) >= 6
    branched = 0
    for _, group in groups:
        alone = build_branches(group, steps, probes, kind)
        shared = build_branches(group, steps, probes, kind, points)
        for f in dataclasses.fields(alone):
            a, b = getattr(alone, f.name), getattr(shared, f.name)
            assert a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), \
                f.name
        branched += int(alone.has_branch.any())
    assert branched >= (6 if kind == "answer_now" else 0)


def test_the_budget_cut_is_the_groups_own(frames: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]
                                         ) -> None:
    """A point at t ≥ the episode's budget is not a decision point, shared or not."""
    episodes, steps, probes = frames
    points = BranchPoints(steps, probes)
    tight = episodes.assign(budget=2)
    alone = build_branches(tight, steps, probes)
    shared = build_branches(tight, steps, probes, points=points)
    assert alone.t.max() <= 1 and np.array_equal(alone.valid, shared.valid)
    assert np.array_equal(alone.t, shared.t)
