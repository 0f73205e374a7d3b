"""The results-table registry is the one list of tables: a table registered there (one
module with its compute function, one registry entry) is offered by `lab results`,
written by `lab export` and shown as a tab of the Results screen; unregistered, it is
gone from all three."""

from __future__ import annotations

import csv
import importlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis.base.rows import Table, make_row
from analysis.measures.results import TableInput, TablePart
from analysis.tables.registry import (
    EPISODES,
    FAMILIES,
    TableDef,
    View,
    register,
    table_def,
    table_names,
    views,
)
from console.app import ConsoleConfig, make_app
from console.cli.results import export_cmd, results
from console.screens.results import ResultsScreen  # loaded before any toy is registered
from tests.helpers.console import FIXED_TS, wait_workers
from tests.helpers.tables import registered

TOY = TableDef("toy", EPISODES, "episodes per selection (a test's table)",
               "tests.test_table_registry:toy_results", views=(View("toy", "Toy"),))
"""A toy episode table: one row counting the selection's episodes."""


def toy_results(inp: TableInput) -> TablePart:
    """The toy table: how many episodes the selection holds."""
    n = len(inp.episodes)
    row = make_row(("all", "none", 0), "episodes", estimate=float(n), n=n, unit="episodes")
    return TablePart((Table("toy", "Toy: episodes in the selection", (row,)),))


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "lab.db"
    shutil.copy(trajectories_db, target)
    return target


def _invoke(command: object, args: list[str], db: Path):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(command, args,  # type: ignore[arg-type]
                              obj={"db": db, "config": db.with_name("lab.toml")})


def _episodes(db: Path) -> int:
    from core import store

    return store.count(store.connect(db), "episodes")


def test_a_registered_table_is_printed_and_exported_then_gone(lab_db: Path,
                                                              tmp_path: Path) -> None:
    with registered(TOY):
        r = _invoke(results, ["toy", "--format", "json", "--resamples", "20"], lab_db)
        assert r.exit_code == 0, r.output
        (row,) = json.loads(r.output)
        assert (row["measure"], row["n"]) == ("episodes", _episodes(lab_db))
        r = _invoke(export_cmd, [str(tmp_path / "out"), "--resamples", "20"], lab_db)
        assert r.exit_code == 0, r.output
        with (tmp_path / "out" / "toy.csv").open(newline="") as f:
            (exported,) = csv.DictReader(f)
        assert int(exported["n"]) == _episodes(lab_db)
    assert "toy" not in table_names()
    r = _invoke(results, ["toy"], lab_db)
    assert r.exit_code == 2 and "'toy' is not one of" in r.output


@pytest.mark.asyncio
async def test_a_registered_table_has_its_tab_on_the_results_screen(lab_db: Path,
                                                                    monkeypatch) -> None:
    monkeypatch.chdir(lab_db.parent)
    with registered(TOY):
        app = make_app(Path(lab_db.name), ConsoleConfig(
            db_path=Path(lab_db.name), first_screen="results", export_dir=Path("exports"),
            clock=lambda: FIXED_TS, n_boot=20, hazard_boot=20))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await wait_workers(app)
            screen = app.screen
            assert isinstance(screen, ResultsScreen)
            tab = screen.query_one("#tab-toy")
            assert str(tab.label) == "Toy"
            screen.query_one("#results-tabs").active = "tab-toy"
            await pilot.pause()
            await wait_workers(app)
            await pilot.pause()
            assert screen.view == "toy"
            text = str(screen.query_one("#results-text").render())
            assert "Toy: episodes in the selection" in text


def test_every_table_is_declared_once_and_its_function_resolves() -> None:
    names = table_names()
    assert len(set(names)) == len(names) and "all" not in names
    assert [table_def(n).family for n in names] == sorted(
        (table_def(n).family for n in names), key=FAMILIES.index)  # families stay together
    ids = [v.id for v, _ in views()]
    assert len(set(ids)) == len(ids)
    for name in names:
        table = table_def(name)
        module = table.compute.partition(":")[0]
        # the registry sits in analysis.tables: what it names may not lie above it
        assert module.split(".")[:2] in (["analysis", "measures"], ["analysis", "replay"],
                                         ["analysis", "tables"]), name
        assert callable(table.function()) and importlib.import_module(module)


def test_register_refuses_a_taken_name_or_an_unknown_family() -> None:
    with pytest.raises(ValueError, match="already exists"):
        register(TableDef("delta", EPISODES, "again", "x:y"))
    with pytest.raises(ValueError, match="unknown family"):
        register(TableDef("toy2", "nonsense", "x", "x:y"))
    with registered(TOY):
        # after the other episode tables, before the probe tables
        names = table_names()
        assert names.index("toy") == len(table_names(EPISODES)) - 1
    assert "toy" not in table_names() and "toy2" not in table_names()
