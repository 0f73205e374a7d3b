"""Every row of a results table tells itself apart in every block the table is split
into at a narrow width: the key columns that vary (run, seed …) repeat in each block, or
a row number shown in every block keys the first block's legend; the Δ grid's labels are
elided in the middle, so they keep the seed.

The study: one model under one arm and `none`, two runs × two seeds whose numbers are
the same run for run (same seeds, same sims), so a block without the run column shows
rows that cannot be told apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from analysis.measures.frames import load_frames
from analysis.tables.compute import compute
from analysis.tables.fit import elide_middle, fit_parts
from analysis.tables.text import render_table
from console.app import ConsoleConfig, make_app
from console.screens.results.screen import ResultsScreen
from core import store
from tests.helpers.console import FIXED_TS, copy_db, settle
from tests.helpers.two_runs import RUNS, SEEDS, build_two_runs_db


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-runs study, built once for this module."""
    return build_two_runs_db(tmp_path_factory.mktemp("two_runs") / "lab.db")


def table_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(header line, row lines) of every block of every table in `text`: a header is the
    line above a rule of ─; its rows run to the next blank or indented line."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines[1:], 1):
        if line and set(line) <= {"─", " "}:
            rows = []
            for row in lines[i + 1:]:
                if not row.strip() or row.startswith("  "):
                    break
                rows.append(row)
            out.append((lines[i - 1], rows))
    return out


def table_text(text: str, title: str) -> str:
    """The table titled `title` in a view's text: from its title to the next table's."""
    start = text.index(title)
    underline = text.index("\n=", start)
    following = text.find("\n=", underline + 2)
    end = text.rfind("\n\n", underline, following) if following > 0 else len(text)
    return text[underline + 1:end]


def assert_rows_identified(text: str, title: str) -> int:
    """Every block of the table titled `title` in `text` names run and seed (or numbers
    its rows) and no two of its rows read alike; returns how many blocks it has."""
    blocks = table_blocks(table_text(text, title))
    assert blocks, title
    for header, rows in blocks:
        names = header.split()
        assert names[0] == "#" or {"run", "seed"} <= set(names), (title, header)
        assert len(rows) == len(set(rows)) >= 2, (title, header, rows)
    return len(blocks)


def test_blocks_repeat_what_varies_or_number_the_rows(two_runs: Path) -> None:
    frames = load_frames(store.connect(two_runs))
    results = compute(frames, ("success", "cost"), n_boot=50)
    whole = render_table(results.tables[0])
    assert len(table_blocks(whole)) == 1
    for width in (200, 100, 76, 60, 50):
        for table in results.tables:
            text = render_table(table, width)
            blocks = table_blocks(text)
            for header, rows in blocks:
                names = header.split()
                assert names[0] == "#" or {"run", "seed"} <= set(names), (width, header)
                assert len(rows) == len(set(rows)), (width, table.title, header)
            numbered = [h for h, _ in blocks if h.split()[0] == "#"]
            if numbered:  # the first block is the legend: every key column
                assert blocks[0][0].split()[:5] == ["#", "model", "arm", "run", "seed"]
                assert len(numbered) == len(blocks)
    success = results.table("success")
    assert success is not None
    # at 76 columns (the console at 80) the Success table repeats every key column
    text = render_table(success, 76)
    assert all(h.split()[:4] == ["model", "arm", "run", "seed"] for h, _ in table_blocks(text))
    assert len(table_blocks(text)) >= 2
    # at 50 no block fits beside even the varying key columns: rows are numbered
    text = render_table(success, 50)
    assert all(h.split()[0] == "#" for h, _ in table_blocks(text))


def test_middle_elision_keeps_both_ends() -> None:
    assert elide_middle("sim-hazard-own", 8) == "sim-…own"
    assert elide_middle("short", 8) == "short"
    label = fit_parts(["sim-hazard-own", "pilot-a", "seed 1"], 26)
    assert len(label) <= 26 and label.startswith("sim") and label.endswith("seed 1")
    assert fit_parts(["sim-hazard-own", "pilot-a", "seed 0"], 26) != label


@pytest.mark.asyncio
async def test_console_at_80x24_every_block_tells_its_rows_apart(two_runs: Path,
                                                                  tmp_path: Path) -> None:
    """The console at 80×24: Success, Paired differences, Cost and Answering,
    every block; and the Δ grid's labels stay distinct and keep the seed."""
    db = tmp_path / "lab.db"
    copy_db(two_runs, db)
    app = make_app(db, ConsoleConfig(db_path=db, first_screen="results", clock=lambda: FIXED_TS,
                                     export_dir=tmp_path / "exports", n_boot=100,
                                     hazard_boot=100, warm_up=False))
    seen = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        for view, titles in (("success", ("Success per regime", "Paired success")),
                             ("delta", ()), ("cost", ("Stopping and cost",)),
                             ("answering", ("Answering:",))):
            while screen.view != view:
                await pilot.press("right_square_bracket")
                await settle(pilot)
            if view == "delta":
                grid = screen.query_one("#results-grid", DataTable)
                labels = [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]
                assert len(labels) == len(RUNS) * len(SEEDS) == len(set(labels)), labels
                # every arm's column in view beside the labels: nothing to scroll to
                assert grid.virtual_size.width <= grid.size.width, labels
                assert sorted(label[-1] for label in labels) == sorted(
                    str(s) for s in SEEDS for _ in RUNS)
                continue
            text = str(screen.query_one("#results-text").render())
            assert max(len(line) for line in text.splitlines()) <= 76
            for title in titles:
                seen[title] = assert_rows_identified(text, title)
    assert all(n >= 2 for n in seen.values()), seen  # each was split into blocks


@pytest.mark.asyncio
async def test_the_delta_grids_labels_take_the_width_the_arms_leave(two_runs: Path,
                                                                      tmp_path: Path) -> None:
    """On a wide terminal the Δ grid's row labels are shown whole; narrowed to 56 columns
    they are elided again (to the 26 columns they keep at least, still told apart), and
    widened back they are whole."""
    db = tmp_path / "lab.db"
    copy_db(two_runs, db)
    app = make_app(db, ConsoleConfig(db_path=db, first_screen="results", clock=lambda: FIXED_TS,
                                     export_dir=tmp_path / "exports", n_boot=100,
                                     hazard_boot=100, warm_up=False))

    def labels() -> list[str]:
        grid = app.screen.query_one("#results-grid", DataTable)
        return [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]

    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        while screen.view != "delta":
            await pilot.press("right_square_bracket")
            await settle(pilot)
        wide = labels()
        assert wide and not any("…" in label for label in wide), wide
        assert {label.split(" · ")[-1] for label in wide} == {str(s) for s in SEEDS}, wide
        await pilot.resize_terminal(56, 24)
        await settle(pilot)
        narrow = labels()
        assert all("…" in label and len(label) <= 26 for label in narrow), narrow
        assert len(set(narrow)) == len(narrow), narrow
        await pilot.resize_terminal(160, 30)
        await settle(pilot)
        assert labels() == wide


def test_a_grid_line_of_no_question_set_says_so(two_runs: Path) -> None:
    """Imported released episodes belong to no question set: their grid line and its cover
    read "–" there, not an empty part."""
    from dataclasses import replace

    from console.screens.results.views import delta_grid, variants

    (table,) = compute(load_frames(store.connect(two_runs)), ("delta",), n_boot=50).tables
    runs = sorted({r.runs for r in table.rows})
    rows = tuple(replace(r, question_set="") if r.runs == runs[0] else r for r in table.rows)
    grid = delta_grid(replace(table, rows=rows), *variants(table)[0], screen_width=160)
    covers = [c for c in grid.covers if f"run {runs[0]}" in c]
    assert covers and all("question_set – ·" in c for c in covers), grid.covers
    assert all(" – " in line for line, c in zip(grid.lines, grid.covers) if c in covers)
    assert not any("·  ·" in line for line in grid.lines), grid.lines
