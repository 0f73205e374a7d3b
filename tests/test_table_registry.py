"""The results-table registry is the one list of tables: a table registered there (one
module with its compute function, one registry entry) is offered by `lab results`,
written by `lab export` and shown as a tab of the Results screen; unregistered, it is
gone from all three. A probe table and a trace table register the same way."""

from __future__ import annotations

import csv
import importlib
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from textual.widgets import Tab, Tabs

from analysis.base.rows import Table, make_row
from analysis.measures.results import TableInput, TablePart
from analysis.replay.probe_tables import ProbeInput
from analysis.replay.trace_sim import sim_traces
from analysis.replay.trace_tables import TraceInput
from analysis.tables.registry import (
    EPISODES,
    FAMILIES,
    PROBES,
    TRACES,
    TableDef,
    View,
    register,
    table_def,
    table_names,
    views,
)
from analysis.tables.results import trace_tables
from console.app import ConsoleConfig, make_app
from console.cli.results import export_cmd, results
from console.screens.results import ResultsScreen  # loaded before any toy is registered
from core.errors import ConfigError
from tests.helpers.console import FIXED_TS, copy_db, wait_workers
from tests.helpers.tables import registered

TOY = TableDef("toy", EPISODES, "episodes per selection (a test's table)",
               "tests.test_table_registry:toy_results", views=(View("toy", "Toy"),))
"""A toy episode table: one row counting the selection's episodes."""


def toy_results(inp: TableInput) -> TablePart:
    """The toy table: how many episodes the selection holds."""
    n = len(inp.episodes)
    row = make_row(("all", "none", 0), "episodes", estimate=float(n), n=n, unit="episodes")
    return TablePart((Table("toy", "Toy: episodes in the selection", (row,)),))


TOY_PROBES = TableDef("toy_probes", PROBES, "episodes a probe table reads (a test's table)",
                     "tests.test_table_registry:toy_probe_results")
"""A toy probe table: one row counting the episodes its input holds."""
TOY_TRACES = TableDef("toy_traces", TRACES, "questions per model (a test's table)",
                      "tests.test_table_registry:toy_trace_results")
"""A toy trace table: one row per model counting its test-split questions."""


def toy_probe_results(inp: ProbeInput) -> Table:
    """The toy probe table: the episodes of the selection and the groups they form."""
    n = len(inp.frames.episodes)
    row = make_row(("all", "none", 0), "episodes", estimate=float(n), n=n, unit="episodes")
    return Table("toy_probes", "Toy: episodes a probe table reads", (row,))


def toy_trace_results(inp: TraceInput) -> Table:
    """The toy trace table: each model's test-split questions."""
    rows = tuple(make_row((str(fit.traces.model), "traces", 0), "test questions",
                          estimate=float(len(fit.test)), n=len(fit.test), unit="questions")
                 for fit in inp.fits)
    return Table("toy_traces", "Toy: test questions per model", rows)


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


def _invoke(command: click.Command, args: list[str], db: Path) -> Result:
    return CliRunner().invoke(command, args,
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
                                                                    monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
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
            tab = screen.query_one("#tab-toy", Tab)
            assert str(tab.label) == "Toy"
            screen.query_one("#results-tabs", Tabs).active = "tab-toy"
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


def test_a_registered_probe_table_is_computed_through_its_own_function(lab_db: Path) -> None:
    with registered(TOY_PROBES):
        r = _invoke(results, ["toy_probes", "--format", "json", "--resamples", "20"], lab_db)
        assert r.exit_code == 0, r.output
        (row,) = json.loads(r.output)
        assert (row["measure"], row["n"]) == ("episodes", _episodes(lab_db))
        assert table_names(PROBES)[-1] == "toy_probes"
    assert "toy_probes" not in table_names()


def test_a_registered_trace_table_is_computed_from_the_prepared_fits() -> None:
    frame = sim_traces(9)
    with registered(TOY_TRACES):
        toy, calibration = trace_tables(frame, ("toy_traces", "trace_calibration"), None,
                                        None, 20)
    split = [r for r in calibration.rows if r.measure == "split"]
    assert {r.model: r.n for r in toy.rows} == {
        m: sum(r.arm == "test" for r in split if r.model == m) for m in {r.model for r in split}}
    with pytest.raises(ConfigError, match="unknown trace table 'toy_traces'"):
        trace_tables(frame, ("toy_traces",))
