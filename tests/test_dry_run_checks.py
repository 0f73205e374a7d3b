"""`lab enqueue --dry-run` runs every check the real enqueue runs: for each
refused enqueue the dry run is refused with the same one `error:` line, and neither
writes anything."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from console.cli import main
from tests.helpers.cli import dump_hash, lab, one_error

BASE = ("enqueue", "--models", "sim-own5", "--conditions", "none", "--regimes", "clean",
        "--set", "d")
SCOPE = {"models": ["sim-own5"], "conditions": ["none"], "regimes": ["clean"],
         "question_sets": ["d"]}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with set `d`, a frozen amendment A1 and a run `governed` under it."""
    tmp = tmp_path_factory.mktemp("dry")
    path = tmp / "lab.db"
    (tmp / "scope.json").write_text(json.dumps(SCOPE), encoding="utf-8")
    for args in (("init",), ("sets", "create", "d", "--dataset", "demo", "--n", "3",
                             "--seed", "1"),
                 ("sets", "create", "test3", "--dataset", "demo", "--n", "3", "--seed", "2"),
                 ("prereg", "new", "--title", "t", "--scope", str(tmp / "scope.json")),
                 ("prereg", "freeze", "A1", "--yes"),
                 (*BASE, "--run", "governed", "--amendment", "A1")):
        assert main(["--db", str(path), *args]) == 0, args
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the copies need no -wal file
    conn.close()
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    shutil.copy(template, path)
    return path


BIG = str(2**63)
REFUSED = {
    "empty run name": ("--run", ""),
    "control character in run name": ("--run", "pi\x1blot"),
    "budget above 64": ("--budgets", "8,65"),
    "budget 0": ("--budget", "0"),
    "seed 2**63": ("--seeds", f"0,{BIG}"),
    "replicate 2**63": ("--replicate", BIG),
    "priority 2**63": ("--priority", BIG),
    "exploratory into a governed run": ("--run", "governed"),
    "governed into an exploratory run": ("--run", "default", "--amendment", "A1"),
    "unknown model": ("--models", "nope"),
    "unknown set": ("--set", "nope"),
    "held-out set without amendment": ("--set", "test3"),
    "out of the amendment's scope": ("--amendment", "A1", "--run", "g2", "--regimes",
                                     "persistent"),
    "bad knob": ("--conditions", "enforced_rule:k"),
}


@pytest.mark.parametrize("extra", list(REFUSED.values()), ids=list(REFUSED))
def test_the_dry_run_refuses_what_the_real_enqueue_refuses(db: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           extra: tuple[str, ...]) -> None:
    if extra == ("--run", "default", "--amendment", "A1"):  # an exploratory run 'default'
        assert main(["--db", str(db), *BASE, "--run", "default"]) == 0
        capsys.readouterr()
    before = dump_hash(db)
    code, _, real = lab(capsys, "--db", db, *BASE, *extra)
    one_error(code, real)
    dry_code, out, dry = lab(capsys, "--db", db, *BASE, *extra, "--dry-run")
    one_error(dry_code, dry)
    assert (dry_code, dry) == (code, real) and "would queue" not in out
    assert dump_hash(db) == before


def test_the_dry_run_says_what_the_real_enqueue_does(db: Path, capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    code, dry, err = lab(capsys, "--db", db, *BASE, "--run", "p", "--budgets", "8,64",
                         "--dry-run")
    assert code == 0, err
    assert dry.startswith("would queue 2 cells, 6 episodes in 2 jobs")
    code, real, err = lab(capsys, "--db", db, *BASE, "--run", "p", "--budgets", "8,64")
    assert code == 0, err
    assert real.startswith("grid 2: queued 2 cells, 6 episodes in 2 jobs")


def test_the_dry_run_counts_calls_and_stored_episodes_in_thousands(
        db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'≤ 100800 model calls; 6720 already stored or queued' read ungrouped beside the
    line's grouped episodes."""
    assert lab(capsys, "--db", db, "sets", "create", "big", "--dataset", "demo", "--n", "40",
               "--seed", "1")[0] == 0
    grid = ("enqueue", "--models", "sim-own5,sim-own3", "--conditions", "none,permit",
            "--regimes", "mean6", "--set", "big", "--seeds", "1,2,3,4,5,6,7", "--run", "big")
    code, dry, err = lab(capsys, "--db", db, *grid, "--dry-run")
    assert code == 0, err
    assert "6,720 episodes in 168 jobs (≤ 100,800 model calls" in dry, dry
    assert lab(capsys, "--db", db, *grid)[0] == 0
    code, again, err = lab(capsys, "--db", db, *grid[:4], "none,permit,budget", *grid[5:],
                           "--dry-run")
    assert code == 0, err
    assert again.rstrip().endswith("; 6,720 already stored or queued"), again
