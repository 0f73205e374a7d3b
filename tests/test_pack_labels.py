"""Results rows of an arm run with and without a prompt pack say which is which: the
pack's short hash is in the arm label, and a paired difference compares each arm with
the reference that ran under the same wording."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from core import store
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry
from core.pack_labels import label_with_pack, split_pack
from core.store import jobs as ledger
from core.store import prompt_packs as pack_rows
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.tasks import execute_job
from tests.helpers.queue import lab_here, write_registry

REWORDED = "Answer in as few words as you can. The question: {question}\n"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(lab.db, config, pack sha256): one run whose two arms ran on the demo set once with
    the built-in wording and once with a pack that rewords the question piece."""
    tmp = tmp_path_factory.mktemp("packs")
    db_path = tmp / "lab.db"
    db = store.connect(db_path)
    ensure_demo_set(db)
    config = write_registry(tmp, latency=0)
    settings = WorkerSettings(db_path=db_path, config_path=config, lease_s=30,
                              heartbeat_s=0.2, reconcile_s=0.5, worker_id="w1")
    grid = GridRequest(models=("sim-own5",), conditions=("none", "enforced_rule:k=2"),
                       regimes=("persistent",), question_set="demo", run="study")
    enqueue_grid(db, settings, grid, load_registry(config))
    folder = tmp / "pack"
    folder.mkdir()
    (folder / "question.txt").write_text(REWORDED, encoding="utf-8")
    out = lab_here(db_path, config, "prompts", "import", str(folder))
    assert out.returncode == 0, out.stderr
    enqueue_grid(db, settings, grid, load_registry(config))  # the same grid, with the pack
    for job in ledger.select_jobs(db, "run", "study"):
        assert execute_job(settings, job) == "done"
    sha = pack_rows.active_sha(db)
    assert sha is not None
    # the sim answers alike under either wording: mark the pack's unaided episodes wrong,
    # so that the two references differ and a pairing across wordings shows
    with db.conn:
        db.conn.execute("UPDATE episodes SET correct = 0 WHERE cell_id IN (SELECT id FROM "
                        "cells WHERE condition = 'none' AND prompt_pack IS NOT NULL)")
    db.conn.close()
    return db_path, config, sha


def _rows(study: tuple[Path, Path, str], table: str) -> list[dict]:
    db_path, config, _ = study
    out = lab_here(db_path, config, "results", table, "--format", "json", "--resamples", "20")
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


def test_label_with_pack_and_back() -> None:
    sha = "1a2b3c4d" + "0" * 56
    assert label_with_pack("enforced_rule:k=2", None) == "enforced_rule:k=2"
    assert label_with_pack("enforced_rule:k=2", sha) == "enforced_rule:k=2 · pack 1a2b3c4d"
    assert split_pack("enforced_rule:k=2 · pack 1a2b3c4d") == ("enforced_rule:k=2", "1a2b3c4d")
    assert split_pack("none:judge=true") == ("none:judge=true", "")


def test_success_rows_name_the_pack_they_cover(study: tuple[Path, Path, str]) -> None:
    _, _, sha = study
    rows = [r for r in _rows(study, "success") if r["scope"] == "persistent"]
    mark = f" · pack {sha[:8]}"
    by_arm = {(r["arm"], r["measure"]): r for r in rows}
    arms = sorted({r["arm"] for r in rows})
    assert arms == sorted(["none", "enforced_rule:k=2", "none" + mark,
                           "enforced_rule:k=2" + mark])
    # the two rows of one arm are two hashes, each counting its own episodes
    plain, packed = (by_arm[(a, "success")] for a in ("enforced_rule:k=2",
                                                       "enforced_rule:k=2" + mark))
    assert plain["condition_hash"] != packed["condition_hash"]
    assert plain["n"] == packed["n"] > 0


def test_paired_differences_pair_each_arm_with_the_reference_of_its_wording(
        study: tuple[Path, Path, str]) -> None:
    _, _, sha = study
    mark = f" · pack {sha[:8]}"
    rows = [r for r in _rows(study, "success") if r["table"] == "paired"
            and r["scope"] == "persistent"]
    assert {r["measure"] for r in rows} == {"success − none"}
    assert sorted(r["arm"] for r in rows) == ["enforced_rule:k=2", "enforced_rule:k=2" + mark]
    # each on the questions both ran under its own wording: the demo set, once each
    success = {r["arm"]: r for r in _rows(study, "success")
               if r["table"] == "success" and r["scope"] == "persistent"}
    for r in rows:
        ref = "none" + (mark if mark in r["arm"] else "")
        want = success[r["arm"]]["estimate"] - success[ref]["estimate"]
        assert r["estimate"] == pytest.approx(want) and r["n"] == success[ref]["n"]
    assert success["none" + mark]["estimate"] == 0 < success["none"]["estimate"]


def test_exported_rows_carry_the_same_labels(study: tuple[Path, Path, str], tmp_path: Path) -> None:
    db_path, config, sha = study
    out = lab_here(db_path, config, "export", str(tmp_path / "out"), "--resamples", "20")
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "out" / "episodes.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    arms = {(r["arm"], r["condition_hash"]) for r in rows}
    mark = f" · pack {sha[:8]}"
    assert sorted(a for a, _ in arms) == sorted(["none", "enforced_rule:k=2", "none" + mark,
                                                 "enforced_rule:k=2" + mark])
