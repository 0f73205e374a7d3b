"""Text from outside is inert in the console: a model answer, an imported question's
text, a model name and a set name holding an OSC title set (ESC ] 0 ; … BEL) and a
screen clear (ESC [ 2 J) are shown escaped (`\\x1b`) on the Trajectories screen, in
Results and in the Sets view, and no raw ESC or BEL is in what the app draws. Whatever
a widget shows without `inert`, the app's last line filter deletes the control
characters left (`console.inert_filter`).

Stored text is never read as markup either: one app run visits every screen and view
with names, titles, a hypothesis id and a live label holding `[/]` (which Textual's
markup parser refuses), `[@click=app.quit]` (an action) and `[red]` (a style)."""

from __future__ import annotations

import html
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from textual.app import App, ComposeResult
from textual.filter import LineFilter
from textual.widgets import DataTable, Input, OptionList, Select, SelectionList, Static, Tree

from analysis.tables.registry import views
from console import logs
from console.app import INERT_LINES, LabApp
from console.cli import main
from console.screens.enqueue import EnqueueScreen
from console.screens.results.screen import ResultsScreen
from console.screens.sets import SetsScreen
from console.screens.trajectories import TrajectoriesScreen
from core import prereg, store
from core.data import ids_hash
from core.inert import inert_fields
from core.models.registry import load_registry
from tests.helpers.console import console_app, settle
from tests.helpers.hostile import NAME, NAME_SHOWN, SET, hostile_lab

SHOWN = "\\x1b]0;pwned\\x07"


@pytest.fixture()
def hostile_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[Path, Path]]:
    """A lab.db whose answers, question text, model and set names hold escapes."""
    with hostile_lab(tmp_path, capsys) as paths:
        yield paths


def _raw_free(drawn: str) -> None:
    assert "\x1b" not in drawn and "\x07" not in drawn


def _visible(svg: str) -> str:
    """The text of a screenshot, its pieces joined (a style change splits a line)."""
    return html.unescape("".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg)))


def _cells(table: DataTable) -> list[str]:
    """Every cell of a table as the text it draws."""
    return [str(c) for i in range(table.row_count) for c in table.get_row_at(i)]


def _first_episode(db: Path) -> int:
    conn = sqlite3.connect(db)
    (episode,) = conn.execute("SELECT min(id) FROM episodes").fetchone()
    conn.close()
    return int(episode)


@pytest.mark.asyncio
async def test_trajectories_show_the_answer_and_question_escaped(hostile_db: tuple[Path, Path]
                                                                ) -> None:
    db, config = hostile_db
    app = console_app(db, config_path=config, first_screen="trajectories")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrajectoriesScreen)
        _raw_free(app.export_screenshot())
        assert NAME_SHOWN in _cells(screen.query_one("#traj-list", DataTable))
        screen.open_episode(_first_episode(db))
        await settle(pilot)
        drawn = app.export_screenshot()
        _raw_free(drawn)
        head = str(screen.query_one("#traj-head", Static).render())
        step = str(screen.query_one("#traj-step", Static).render())
        assert "Which\\x1b]0;pwned\\x07 [/]city\\x1b[2J?" in head
        assert SHOWN in step and "\\x1b[2J" in step, step


@pytest.mark.asyncio
async def test_results_show_the_model_name_escaped(hostile_db: tuple[Path, Path]) -> None:
    db, config = hostile_db
    app = console_app(db, config_path=config, first_screen="results")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        assert INERT_LINES in app.get_line_filters()  # the console draws through it
        drawn = app.export_screenshot()
        _raw_free(drawn)
        assert NAME_SHOWN in _visible(drawn), _visible(drawn)


@pytest.mark.asyncio
async def test_sets_view_shows_the_set_name_escaped(hostile_db: tuple[Path, Path]) -> None:
    db, config = hostile_db
    app = console_app(db, config_path=config, first_screen="enqueue")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("escape", "s")  # out of any field, then the Sets view
        await settle(pilot)
        assert isinstance(app.screen, SetsScreen)
        drawn = app.export_screenshot()
        _raw_free(drawn)
        assert "s\\x" in _visible(drawn)  # as wide as the column is drawn yet
        assert "s\\x1b]0;pwned\\x07et[/]" in _cells(app.screen.query_one("#sets-sets", DataTable))


class _Bare(App[None]):
    """A widget showing a control sequence it never passed through `inert`."""

    def __init__(self, filtered: bool) -> None:
        super().__init__()
        self.filtered = filtered

    def compose(self) -> ComposeResult:
        yield Static("left\x1b[2Jright\x1b]0;pwned|end", markup=False)

    def get_line_filters(self) -> list[LineFilter]:
        return [*super().get_line_filters(), *([INERT_LINES] if self.filtered else [])]


@pytest.mark.parametrize("filtered", [False, True])
@pytest.mark.asyncio
async def test_the_last_line_filter_deletes_what_a_widget_left(filtered: bool) -> None:
    async with _Bare(filtered).run_test(size=(60, 5)) as pilot:
        await pilot.pause()
        drawn = pilot.app.export_screenshot()
    if filtered:
        _raw_free(drawn)
        assert "left[2Jright]0;pwned|end" in _visible(drawn)  # the rest of the line stays in place
    else:
        assert "\x1b" in drawn  # without it the escape is drawn: the test can see one


def test_inert_fields_reach_every_string_of_a_record() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Row:
        name: str
        steps: tuple[str, ...]
        extra: dict[str, object]
        n: int = 1

    row = inert_fields(Row(NAME, ("a\x1b", "b"), {"k\x07": ["x\x1b[2J"], "n": 3}))
    assert row == Row(NAME_SHOWN, ("a\\x1b", "b"), {"k\\x07": ["x\\x1b[2J"], "n": 3})


# ---- every screen and view with stored text that Textual would read as markup -------

TITLE = "[/]Ends [@click=app.quit]x[/] [red]red[/red]"
"""An amendment title: a closing tag with nothing open, a click action and a style."""
BODY = "Body [/] and [@click=app.quit]x[/]."
HYPOTHESIS = "[/]H1[@click=app.quit]x[/]"
SIM = "sim[/]own5 [@click=app.quit]x[/]"
"""A sim model (it searches, so the Δ grid has decisions to drill into)."""
RUN = "r2[/] [@click=app.quit]x[/]"
ERROR = "ValueError: no page '[/]' [@click=app.quit]x[/]"
"""The last error of a failed job of that run."""
LIVE_LABEL = f"{NAME} / none / clean [@click=app.quit]x[/]"


@pytest.fixture(scope="module")
def markup_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The hostile lab.db plus a frozen amendment whose title, body and hypothesis id
    hold markup, a draft titled the same, and a running live episode labelled with it.
    Built once for the module: the one app run below only reads it."""
    tmp = tmp_path_factory.mktemp("markup") / "x[" / "]"  # lab.db's path holds '[/]'
    tmp.mkdir(parents=True)

    class _Quiet:  # hostile_lab reads the CLI's output through a capsys-like object
        def readouterr(self) -> tuple[str, str]:
            return "", ""

    with hostile_lab(tmp, _Quiet()) as (db_path, config):
        with config.open("a", encoding="utf-8") as f:
            f.write(f'\n[models."{SIM}"]\nbackend = "sim"\npolicy = "own_count"\nk = 5\n')
        db = store.connect(db_path)
        ids = [q for (q,) in db.conn.execute("SELECT id FROM questions WHERE dataset = 'demo' "
                                             "ORDER BY id LIMIT 12")]
        store.save_question_set(db, "f", "demo", ids, 3, [], False, ids_hash(ids))
        db.conn.close()
        for args in (("enqueue", "--models", SIM, "--conditions", "none,enforced_rule",
                      "--regimes", "persistent", "--set", "f", "--run", RUN),
                     ("worker", "--until-idle")):
            assert main(["--db", str(db_path), "--config", str(config), *args]) == 0, args
        db = store.connect(db_path)
        scope = {"models": [NAME], "conditions": ["none"], "regimes": ["clean"],
                 "question_sets": ["d"], "budgets": [8]}
        tests = [{"id": HYPOTHESIS, "kind": "median_action", "condition": "none",
                  "op": ">=", "value": 1}]
        frozen = prereg.create(db, TITLE, BODY, tests, scope)
        prereg.freeze(db, frozen, load_registry(config))
        prereg.create(db, TITLE, BODY)
        row = db.conn.execute("SELECT e.id, e.cell_id, e.question_id FROM episodes e "
                              "ORDER BY e.id LIMIT 1").fetchone()
        live = store.live_start(db, row[1], row[2], LIVE_LABEL, worker="hostile-host:1")
        for step in store.episode_steps(db, row[0])[:2]:
            store.live_step(db, live, step)
        # its worker is up and holds the job of its question under a lease that outlives
        # the test (a stopped worker's row would be a leftover, never followed)
        db.conn.execute("INSERT OR REPLACE INTO workers (id, state, heartbeat_at, started_at) "
                        "VALUES ('hostile-host:1', 'running', 4102444800, '2025-01-01')")
        db.conn.execute("UPDATE jobs SET state = 'running', worker = 'hostile-host:1', "
                        "lease_until = 4102444800 WHERE id = (SELECT j.id FROM jobs j, "
                        "json_each(j.question_ids) q WHERE j.cell_id = ? AND q.value = ? "
                        "LIMIT 1)", (row[1], row[2]))
        db.conn.execute("UPDATE jobs SET state = 'failed', last_error = ? WHERE id = "
                        "(SELECT max(id) FROM jobs)", (ERROR,))
        db.conn.commit()
        db.conn.close()
        yield db_path, config


def _on_screen(app: App[None]) -> str:
    """Every line the app draws now, the modal's and toasts' included."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def _still_up(app: LabApp, where: str, *shown: str) -> str:
    """The app runs, caught no error, and draws each of `shown` as stored."""
    drawn = _on_screen(app)
    assert app.is_running, where
    assert not app.errors, (where, app.errors)
    for text in shown:
        assert text in drawn, (where, text, drawn)
    return drawn


@pytest.mark.asyncio
async def test_every_screen_shows_stored_markup_as_stored(markup_db: tuple[Path, Path]) -> None:
    """One app run at 120x40 through every screen and view: a stored `[/]` (which
    Textual's markup parser refuses), `[@click=app.quit]` (an action) and `[red]` (a
    style) never reach a parser: the console stays up, logs no error, and shows them."""
    db, config = markup_db
    app = console_app(db, config_path=config, preview_debounce_s=600)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        _still_up(app, "dashboard", "x[/]/lab.db", "acle[/]")  # the header's path, spend

        await pilot.press("2")
        await settle(pilot)
        listing = app.screen.query_one("#prereg-list", OptionList)
        for amendment in ("A1", "A2"):
            listing.highlighted = listing.get_option_index(amendment)
            await settle(pilot)
            _still_up(app, f"prereg {amendment}", "[@click=app.quit]x[/]", "[red]red[/red]")
        listing.highlighted = listing.get_option_index("A1")
        await settle(pilot)
        await pilot.press("o")  # the registered tests evaluated, by id
        await settle(pilot)
        _still_up(app, "prereg outcomes", HYPOTHESIS)
        await pilot.press("v")  # the hash chain and pins
        await settle(pilot)
        _still_up(app, "prereg verify")
        # its toast ("verify: ok") would still cover the right of the screens below on a
        # quiet machine, which reaches them before it times out (the Jobs detail's error)
        app.clear_notifications()
        await pilot.pause()

        await pilot.press("3")
        await settle(pilot)
        for select in app.screen.query(Select):
            select.focus()
            await pilot.press("enter")  # its list open: every option drawn
            await settle(pilot)
            _still_up(app, f"enqueue {select.id}")
            await pilot.press("escape")
            await settle(pilot)
        screen = cast(EnqueueScreen, app.screen)
        screen.query_one("#enq-models", SelectionList).select(NAME)
        screen.query_one("#enq-conditions", SelectionList).select("none")
        screen.query_one("#enq-regimes", SelectionList).select("clean")
        screen.query_one("#enq-set", Select).value = SET
        screen.query_one("#enq-run", Input).value = RUN
        await pilot.pause()
        screen._start_preview()  # at once: the debounce timer waits past the test
        await settle(pilot)
        preview = str(screen.query_one("#enq-preview-text", Static).render())
        assert "can be queued" in preview and f"run       {RUN}" in preview, repr(preview)
        assert f"models    {NAME_SHOWN}" in preview and "set       s\\x1b]0;" in preview
        _still_up(app, "enqueue preview", f"run       {RUN}")
        await pilot.press("ctrl+s")  # queueing asks first, naming the run
        await settle(pilot)
        assert app.screen.query("#ask-question"), "no question asked"
        _still_up(app, "enqueue: the queue question", f"Queue this grid in run {RUN}")
        detail = str(app.screen.query_one("#ask-detail", Static).render())
        assert "set s\\x1b]0;pwned\\x07et[/]," in detail, detail
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("escape", "s")  # the Sets view
        await settle(pilot)
        _still_up(app, "sets", "et[/]")
        await pilot.press("c")  # the new-set form lists the sets
        await settle(pilot)
        _still_up(app, "sets: new set form", "et[/]")
        await pilot.press("escape", "escape")
        await settle(pilot)

        await pilot.press("4")
        await settle(pilot)
        tree = app.screen.query_one(Tree)
        for node in list(tree.root.children):
            node.expand()
            for grid in node.children:
                grid.expand()
        await settle(pilot)
        tree.focus()
        seen = []
        for _ in range(8):  # the detail line of a run, its grids and their jobs
            seen.append(_still_up(app, "jobs", RUN))
            await pilot.press("j")
            await settle(pilot)
        assert any(ERROR in drawn for drawn in seen), seen  # the failed job's detail
        tree.move_cursor(next(n for n in tree.root.children if n.data == ("run", RUN)))
        await pilot.press("t")  # retry asks first, naming the run
        await settle(pilot)
        assert app.screen.query("#ask-question"), "no question asked"
        _still_up(app, "jobs: the run's retry question", RUN)
        await pilot.press("n")
        await settle(pilot)
        _still_up(app, "jobs", "acle[/]")

        await pilot.press("5")
        await settle(pilot)
        _still_up(app, "live", "[@click=app.quit]x[/]")
        await pilot.press("o")  # the running episodes to pick from
        await settle(pilot)
        _still_up(app, "live: pick an episode", "[@click=app.quit]x[/]")
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("6")
        await settle(pilot)
        _still_up(app, "trajectories", "acle[/]")
        await pilot.press("enter")
        await settle(pilot)
        _still_up(app, "episode", "[/]city")
        await pilot.press("m")
        await settle(pilot)
        _still_up(app, "matched arms")
        await pilot.press("escape", "escape", "slash", *"[/]", "enter")  # search the list
        await settle(pilot)
        _still_up(app, "trajectories search", "acle[/]")

        await pilot.press("7")
        await settle(pilot)
        drilled, answering = False, ""
        for tab in range(len(views())):
            _still_up(app, f"results tab {tab}")
            results = cast(ResultsScreen, app.screen)
            if results.view == "answering":  # a chart titled with the model's name
                answering = str(app.screen.query_one("#results-chart", Static).render())
            if results._body() == "results-delta":
                _still_up(app, "results Δ grid", "sim[/]own5", f"{SIM} × none")
                drilled = True
                await pilot.press("enter")  # the Δ cell's decisions
                await settle(pilot)
                _still_up(app, "results drill-down", f"{SIM} × none")
                await pilot.press("escape")
                await settle(pilot)
            await pilot.press("right_square_bracket")
            await settle(pilot)
        await pilot.press("slash", *"[/]", "enter")  # search the tables shown
        await settle(pilot)
        _still_up(app, "results search", RUN)
        assert drilled and app.is_running and not app.errors, app.errors
        assert f"{NAME_SHOWN}: share of episodes" in answering, answering
    log = logs.log_dir(db) / logs.ERROR_LOG
    assert not log.exists() or "MarkupError" not in log.read_text(encoding="utf-8")
