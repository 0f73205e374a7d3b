"""The policies and controllers tables read only what they need: no steps when no
answer-now branch is stored (every group is left out whatever its steps), and the
episodes' keys with their outcome and calls instead of the full episode frame; the
tables are the same as computed from the full frames."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analysis.base.arms import Grouping
from analysis.measures.frames import Frames, load_frames
from analysis.replay.controllers import controller_table
from analysis.replay.policies import policy_table
from analysis.replay.probe_tables import (
    ProbeInput,
    branch_inputs,
    controllers_results,
    policies_results,
)
from console.cli import cli
from core import store
from core.probes import ANSWER_NOW, BRANCH_KINDS
from core.store.probes import probes_frame
from core.store.selection import Selection

N_BOOT = 50


def lab(db: Path, *args: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db), *args])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("probe-inputs") / "lab.db"
    lab(db, "init")
    lab(db, "sets", "create", "d6", "--dataset", "demo", "--n", "6", "--seed", "1")
    lab(db, "enqueue", "--models", "sim-own5,sim-clock4", "--conditions", "none,enforced_rule",
        "--regimes", "persistent,clean", "--set", "d6", "--run", "pilot")
    lab(db, "worker", "--until-idle")
    return db


def _reference(db_path: Path, name: str) -> list[dict]:
    """The table computed from the full episode and step frames."""
    db = store.connect(db_path)
    try:
        frames = load_frames(db, Selection())
        grouping = Grouping(frames.selection.pool, frames.errored_episodes,
                            frames.apart_episodes)
        if name == "policies":
            probes = probes_frame(db, frames.selection, kinds=(ANSWER_NOW,))
            table = policy_table(frames.episodes, frames.steps, probes, N_BOOT, 0, grouping)
        else:
            probes = probes_frame(db, frames.selection, kinds=BRANCH_KINDS)
            table = controller_table(frames.episodes, frames.steps, probes, N_BOOT, 0,
                                     grouping)
    finally:
        db.conn.close()
    return [*table.dicts(), {"notes": list(table.notes)}]


def _computed(db_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict],
                                                                                list[str]]:
    """The table as `lab results` computes it, and which frames it read."""
    reads: list[str] = []
    original_steps, original_episodes = Frames._read_steps, Frames._read_episodes

    def steps(self: Frames, *args: Any) -> Any:
        reads.append("steps")
        return original_steps(self, *args)

    def episodes(self: Frames) -> Any:
        reads.append("episodes")
        return original_episodes(self)

    db = store.connect(db_path)
    try:
        frames = load_frames(db, Selection())
        grouping = Grouping(frames.selection.pool, frames.errored_episodes,
                            frames.apart_episodes)
        with monkeypatch.context() as patch:
            patch.setattr(Frames, "_read_steps", steps)
            patch.setattr(Frames, "_read_episodes", episodes)
            function = policies_results if name == "policies" else controllers_results
            table = function(ProbeInput(db, frames, grouping, N_BOOT, 0))
    finally:
        db.conn.close()
    return [*table.dicts(), {"notes": list(table.notes)}], reads


@pytest.mark.parametrize("name", ["policies", "controllers"])
def test_no_branches_no_steps_read_and_the_same_table(study: Path, name: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    got, reads = _computed(study, name, monkeypatch)
    assert reads == []  # neither the steps nor the full episode frame
    assert got == _reference(study, name)
    assert any("no answer-now branches" in str(n) for n in got[-1]["notes"])


@pytest.mark.parametrize("name", ["policies", "controllers"])
def test_with_branches_the_same_table_from_the_episodes_keys(
        tmp_path: Path, study: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "lab.db"
    source, copy = sqlite3.connect(study), sqlite3.connect(db)
    source.backup(copy)
    source.close()
    copy.close()
    lab(db, "replay", "answer-now", "--run", "pilot")
    lab(db, "replay", "answer-now", "--run", "pilot", "--confidence")
    lab(db, "worker", "--until-idle")
    got, reads = _computed(db, name, monkeypatch)
    assert reads == ["steps"]
    assert got == _reference(db, name)
    assert any(row.get("measure") in ("best_utility", "ece") for row in got)


def test_branch_inputs_in_memory_frames_keep_their_steps(study: Path) -> None:
    db = store.connect(study)
    try:
        frames = load_frames(db, Selection())
        memory = Frames(frames.episodes, frames.steps, selection=frames.selection)
        episodes, steps = branch_inputs(db, memory, probes_frame(db, Selection()))
        assert steps is memory.steps and episodes is memory.episodes
    finally:
        db.conn.close()
