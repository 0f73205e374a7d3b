"""`lab results`, `lab validate-measures` and `lab export` against a real temporary lab.db."""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Sequence
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from analysis.base.rows import ENDED_FIELDS, ROW_FIELDS
from analysis.tables.csv_files import TABLE_COLUMNS
from analysis.tables.export import EPISODE_COLUMNS, STEP_COLUMNS
from console.cli.results import export_cmd, results, validate_measures_cmd
from core import store
from core.conditions import parse_condition
from core.data import ids_hash
from core.demo_data import demo_questions
from core.errors import LabError
from core.models.registry import builtin_models, make_client
from core.regimes import MEAN6, ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions


async def _grid(path: Path) -> None:
    db = store.connect(path)
    questions = demo_questions()[:20]
    store.insert_questions(db, demo_questions())
    pool, specs = ForeignPool(questions), builtin_models()
    run_id = store.ensure_run(db, "main")
    for model in ("sim-own5", "sim-clock6"):
        for cond in ("none", "enforced_rule"):
            for regime in MEAN6:
                cell = CellSpec(specs[model], parse_condition(cond), parse_regime(regime), None,
                                8, 0)
                cell_id = store.ensure_cell(db, run_id, cell.columns())
                await run_questions(db, cell_id, cell, questions, pool, make_client(cell.model))


@pytest.fixture(scope="module")
def grid_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with 2 sims × 2 conditions × mean6 × 20 demo questions (480 episodes)."""
    path = tmp_path_factory.mktemp("grid") / "lab.db"
    asyncio.run(_grid(path))
    return path


def invoke(command: click.Command, args: Sequence[str], db: Path) -> Result:
    return CliRunner().invoke(command, [*args], obj={"db": db, "config": db.with_name("lab.toml")})


def test_results_all_prints_tables_and_charts(grid_db: Path) -> None:
    r = invoke(results, ["all", "--resamples", "100"], grid_db)
    assert r.exit_code == 0, r.output
    for title in ("Success per regime and mean6", "Time-matched contrast Δ",
                  "Integration index I", "Stopping hazard", "Stopping and cost",
                  "Judgment rates", "share of episodes answering at each action"):
        assert title in r.stdout
    assert "[+" in r.stdout  # paper-style intervals


def test_results_json_rows_carry_the_contract_fields(grid_db: Path) -> None:
    r = invoke(results, ["delta", "--format", "json", "--resamples", "100",
                         "--models", "sim-own5"], grid_db)
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert rows and {"model", "condition", "measure", "estimate", "ci_low", "ci_high",
                     "n"} <= set(rows[0])
    assert {row["model"] for row in rows} == {"sim-own5"}
    own = [x for x in rows if x["measure"] == "delta" and x["scope"] == "own judgments, by t"]
    assert all(x["ci_low"] > 0 for x in own)  # own5 stops on its own judgments


def test_results_csv_has_a_header_row(grid_db: Path) -> None:
    r = invoke(results, ["success", "--format", "csv", "--resamples", "50", "--run", "main"],
               grid_db)
    assert r.exit_code == 0, r.output
    header = r.stdout.splitlines()[0].split(",")
    assert header == ["table", *ROW_FIELDS, *ENDED_FIELDS, "version", "provenance"]


def test_results_repaired_falls_back_to_raw_and_says_so(grid_db: Path) -> None:
    r = invoke(results, ["cost", "--repaired", "--resamples", "20", "--format", "json"], grid_db)
    assert r.exit_code == 0
    assert "no repaired answers stored yet" in r.stderr
    json.loads(r.stdout)  # stdout stays valid JSON


def test_regimes_mean6_stands_for_its_six_regimes_as_in_lab_enqueue(grid_db: Path) -> None:
    """`--regimes mean6` selects the six regimes of the paper's mean in `lab results` (and
    every command taking its filters), as `lab enqueue --regimes mean6` runs them: the
    same rows as naming the six; `mean6,persistent` names persistent once."""
    from core.store.selection import selection_from

    def rows(regimes: str) -> list[dict]:
        r = invoke(results, ["success", "--regimes", regimes, "--resamples", "20", "--format",
                             "json"], grid_db)
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    assert rows("mean6") == rows(",".join(MEAN6))
    assert selection_from((), (), None, None, None, "mean6,persistent", None).regimes == MEAN6
    persistent = [r for r in rows("persistent") if r["table"] == "success"]
    assert persistent and {r["regimes"] for r in persistent} == {"persistent"}


@pytest.mark.parametrize("args, message", [
    (["--run", "nope"], "no run named 'nope'"),
    (["--models", "sim-x"], "no episodes of model 'sim-x'"),
    (["bogus"], None),
])
def test_results_bad_selection_exits_non_zero(grid_db: Path, args: list[str], message: str | None
                                             ) -> None:
    r = invoke(results, args, grid_db)
    assert r.exit_code != 0
    if message:
        assert isinstance(r.exception, LabError) and message in str(r.exception)


def test_results_on_an_empty_db_explains(tmp_path: Path) -> None:
    from core import store

    missing = invoke(results, [], tmp_path / "lab.db")
    assert missing.exit_code == 1 and "no lab database" in str(missing.exception)
    assert not (tmp_path / "lab.db").exists()
    store.connect(tmp_path / "lab.db").conn.close()
    r = invoke(results, [], tmp_path / "lab.db")
    assert r.exit_code == 1 and "no finished episodes" in str(r.exception)


def test_export_writes_documented_columns(grid_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    r = invoke(export_cmd, [str(out), "--resamples", "20"], grid_db)
    assert r.exit_code == 0, r.output
    with open(out / "episodes.csv", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == EPISODE_COLUMNS and len(rows) == 1 + 480
    with open(out / "steps.csv", encoding="utf-8") as f:
        steps = list(csv.DictReader(f))
    assert tuple(steps[0]) == STEP_COLUMNS
    assert steps[0]["t"] == "1" and steps[0]["model"] in ("sim-own5", "sim-clock6")
    assert {s["obs_failed"] for s in steps} <= {"0", "1", ""}
    for name in ("success", "paired", "delta", "index", "hazard", "cost", "judgments"):
        with open(out / f"{name}.csv", encoding="utf-8") as f:
            assert next(csv.reader(f)) == list(TABLE_COLUMNS)
    assert not list(out.glob(".*.tmp"))


def test_export_into_a_file_path_fails_cleanly(grid_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "file.csv"
    target.write_text("x")
    r = invoke(export_cmd, [str(target)], grid_db)
    assert r.exit_code == 1 and "not a directory" in str(r.exception)


def test_validate_measures_command_on_a_small_set(tmp_path: Path) -> None:
    db_path = tmp_path / "lab.db"
    db = store.connect(db_path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    ids = [q.id for q in questions[:40]]  # enough for I of the time hazard to be > 0
    store.save_question_set(db, "small", "demo", ids, 1, (), False, ids_hash(ids))
    r = invoke(validate_measures_cmd, ["--set", "small", "--seeds", "2", "--resamples", "200",
                                       "--format", "json"], db_path)
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    passed = {x["model"]: x["detail"] for x in rows if x["measure"] == "passed"}
    # 11 + 2 two-source sims + the trace sim's depth-zero calibration check
    assert len(passed) == 14 and set(passed.values()) == {"yes"}
    assert passed["sim-trace"] == "yes"
    assert store.count(store.connect(db_path), "episodes") == 13 * 5 * 40 * 2


def test_each_probe_and_trace_table_is_its_own_replay_function() -> None:
    from analysis.tables.registry import PROBES, TRACES, table_def, table_names

    assert table_names(PROBES) == ("policies", "controllers", "beliefs")
    assert table_names(TRACES) == ("trace_table1", "trace_table2", "trace_table3",
                                   "trace_sweeps", "trace_calibration")
    functions = [table_def(n).function() for n in table_names(PROBES, TRACES)]
    assert len(set(functions)) == len(functions)
    assert all(f.__module__.startswith("analysis.replay.") for f in functions)


@pytest.mark.parametrize("table", ["delta", "index", "hazard", "success", "cost"])
def test_an_episode_table_loads_no_replay_or_probe_code(grid_db: Path, table: str) -> None:
    """`lab results TABLE` of an episode table imports what that table computes and no
    more (docs/performance.md: each cold table pays its imports): not the controllers
    (their `Gate` comes from `analysis.replay.gate`), not the probe and trajectory reads
    (the replayed observations come from `core.store.replayed`), not another table's
    module. Run in a fresh interpreter, so this test's own imports do not count."""
    import subprocess
    import sys

    heavy = ("analysis.replay.controllers", "analysis.replay.branches", "core.probes",
             "core.store.probes", "core.store.trajectories", "core.react",
             "analysis.measures.leaving", *(() if table in ("success", "cost")
                                            else ("analysis.measures.success",)))
    code = ("import sys; from console.cli import main; "
            f"code = main(['--db', {str(grid_db)!r}, 'results', {table!r}, '--resamples', '20', "
            "'--format', 'json']); "
            f"print(code, [m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stdout[-2000:] + out.stderr
