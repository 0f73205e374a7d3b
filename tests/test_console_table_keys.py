"""The Results screen's tables as a table: a cursor on a cell (arrows, hjkl, g/G,
Home/End), `s` sorts by the cursor's column (▲, ▼, then the table's own order), `/`
searches with every match highlighted and n/N going from one to the next, and `c`/`C`/`T`
copy the cell, the row or the whole table as TSV to the clipboard (an OSC 52 sequence to
the terminal) with a notice.

On the two-runs study (tests/helpers/two_runs.py) at 80×24.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.app import ConsoleConfig, LabApp, make_app
from console.screens.results.screen import ResultsScreen
from console.screens.results.table_cursor import sorted_order
from console.widgets.table_ops import CURSOR_CELL, MATCH_CURRENT, Sort, sort_value
from console.widgets.text_lines import TextLines
from tests.helpers.console import FIXED_TS, copy_db, settle
from tests.helpers.notices import said
from tests.helpers.two_runs import build_two_runs_db


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-runs study, built once for this module."""
    return build_two_runs_db(tmp_path_factory.mktemp("two_runs_keys") / "lab.db")


def _app(two_runs: Path, tmp_path: Path) -> LabApp:
    db = tmp_path / "lab.db"
    copy_db(two_runs, db)
    return make_app(db, ConsoleConfig(db_path=db, first_screen="results", clock=lambda: FIXED_TS,
                                      export_dir=tmp_path / "exports", n_boot=100,
                                      hazard_boot=100, warm_up=False))


def test_sort_values_and_order() -> None:
    assert sort_value("+0.33 [+0.25, +0.41]") == 0.33
    assert sort_value("−0.10") == -0.10 and sort_value("1,234") == 1234
    assert sort_value("∞") == float("inf") and sort_value("−∞") == float("-inf")
    assert sort_value("–") != sort_value("–")  # NaN: no number
    from analysis.tables.text import Cells

    cells = Cells(["arm", "x"], [["b", "0.5"], ["a", "–"], ["c", "0.1"]], (1,), 1)
    assert sorted_order(cells, Sort(1)) == [2, 0, 1]  # no number last, either way
    assert sorted_order(cells, Sort(1, True)) == [0, 2, 1]
    assert sorted_order(cells, Sort(0)) == [1, 0, 2]
    assert sorted_order(cells, None) == [0, 1, 2]


def _rows(text: str, first: str) -> list[str]:
    """The body lines of the first block whose header starts with `first`."""
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(first))
    out = []
    for line in lines[i + 2:]:
        if not line.strip() or line.startswith("  "):
            break
        out.append(line)
    return out


@pytest.mark.asyncio
async def test_sort_search_copy_and_ends(two_runs: Path, tmp_path: Path) -> None:
    app = _app(two_runs, tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        lines = screen.query_one("#results-text", TextLines)
        # the cursor starts on the first row's first cell
        y, spans = next((y, s) for y, s in lines.marks.items()
                        if any(m == CURSOR_CELL for _, _, m in s))
        assert lines.text.splitlines()[y].startswith("sim-hazard-own  none")
        # copy a cell, a row, the table
        await pilot.press("c")
        assert app.clipboard == "sim-hazard-own"
        await pilot.press("l", "l", "l")  # model → arm → run → seed
        await pilot.press("j")  # second row: none, pilot-a, seed 1
        await pilot.press("c")
        assert app.clipboard == "1"
        await pilot.press("C")
        row = app.clipboard.split("\t")
        assert row[:4] == ["sim-hazard-own", "none", "pilot-a", "1"] and len(row) > 8
        await pilot.press("T")
        table = app.clipboard.splitlines()
        assert table[0].split("\t")[:4] == ["model", "arm", "run", "seed"]
        assert len(table) == 1 + 8 and "mean6" in table[0].split("\t")
        assert any(n.message.startswith("copied table (8 rows") for n in said(app))
        # sort by seed: ascending, descending, then the table's order again
        before = _rows(lines.text, "model")
        await pilot.press("s")
        await pilot.pause()
        assert "seed ▲" in lines.text
        seeds = [r.split()[3] for r in _rows(lines.text, "model")]
        assert seeds == sorted(seeds) and seeds != [r.split()[3] for r in before]
        await pilot.press("s")
        await pilot.pause()
        assert "seed ▼" in lines.text
        assert [r.split()[3] for r in _rows(lines.text, "model")] == sorted(seeds, reverse=True)
        # every block shows the rows in the sorted order (run and seed repeat in each)
        blocks = [r for r in lines.text.splitlines() if r.startswith("model ")]
        assert len(blocks) >= 2
        await pilot.press("T")
        assert [r.split("\t")[3] for r in app.clipboard.splitlines()[1:]] == sorted(
            seeds, reverse=True)  # the copy follows the sort, without the arrow
        assert app.clipboard.splitlines()[0].split("\t")[3] == "seed"
        await pilot.press("s")
        await pilot.pause()
        assert "▲" not in lines.text and "▼" not in lines.text
        assert _rows(lines.text, "model") == before
        # search: every match marked, n/N move the current one and the cursor
        await pilot.press("slash", *"pilot-b", "enter")
        await pilot.pause()
        found = [(y, s) for y, spans in lines.marks.items() for s in spans
                 if s[2] in ("black on yellow", MATCH_CURRENT)]
        assert len(found) == lines.text.count("pilot-b") >= 8
        current = [y for y, s in found if s[2] == MATCH_CURRENT]
        assert len(current) == 1
        await pilot.press("n")
        await pilot.pause()
        nxt = [y for y, spans in lines.marks.items() for s in spans if s[2] == MATCH_CURRENT]
        assert nxt != current and nxt[0] > current[0]
        await pilot.press("c")
        assert app.clipboard == "pilot-b"  # the cursor went to the match's cell
        await pilot.press("N")
        await pilot.pause()
        assert [y for y, spans in lines.marks.items() for s in spans
                if s[2] == MATCH_CURRENT] == current
        await pilot.press("escape")
        await pilot.pause()
        assert not any(s[2] == MATCH_CURRENT for spans in lines.marks.values() for s in spans)
        # G: the last row of the last table (Paired differences), g: back to the first
        await pilot.press("G")
        await pilot.press("C")
        assert app.clipboard.split("\t")[1] != "none"  # paired rows are arm − none
        assert app.clipboard.split("\t")[2:4] == ["pilot-b", "1"]
        await pilot.press("g")
        await pilot.press("C")
        assert app.clipboard.split("\t")[:4] == ["sim-hazard-own", "none", "pilot-a", "0"]


@pytest.mark.asyncio
async def test_home_end_and_each_copy_goes_out_as_osc_52_with_a_notice(
        two_runs: Path, tmp_path: Path) -> None:
    """End and Home move the cursor as G and g do; a copied cell, row or table reaches the
    terminal as an OSC 52 sequence (the clipboard of a terminal over ssh or tmux) and a
    notice says what went."""
    import base64

    app = _app(two_runs, tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        sent: list[str] = []
        driver = app._driver
        assert driver is not None
        write = driver.write

        def tee(data: str) -> None:
            sent.append(data)
            write(data)

        driver.__setattr__("write", tee)  # `driver.write = tee`, which mypy refuses for a method
        await pilot.press("end", "C")
        last = app.clipboard
        assert last.split("\t")[2:4] == ["pilot-b", "1"]
        await pilot.press("home", "C")
        first = app.clipboard
        assert first.split("\t")[:4] == ["sim-hazard-own", "none", "pilot-a", "0"]
        await pilot.press("G", "C")
        assert app.clipboard == last
        await pilot.press("g", "c")
        assert app.clipboard == "sim-hazard-own"
        osc = [base64.b64decode(s[len("\x1b]52;c;"):-1]).decode() for s in sent
               if s.startswith("\x1b]52;c;")]
        assert osc == [last, first, last, "sim-hazard-own"]
        notes = [n.message for n in said(app)]
        assert any(m.startswith("copied row ") for m in notes), notes
        assert any(m.startswith("copied cell model") for m in notes), notes
