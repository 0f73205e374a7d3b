"""Sets: question sets and data import without the CLI, a view on Enqueue.

Pilot tests on a real lab.db (the demo questions and set, a dev set): `s` on Enqueue
opens the view, `c` draws a set and `y` stores it — back on Enqueue the new set is
picked and planned at once; `i` validates a HotpotQA file or a FEVER folder the test
writes in the real format and `y` stores it; a bad path or a malformed file is one
toast and the form again, nothing stored; a read-only lab.db refuses `c` and `i` with
the reason. The stored sets are the CLI's: same ids, same hash.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Checkbox, DataTable, Input, Select, SelectionList, Static

from console.app import LabApp
from console.screens.enqueue import EnqueueScreen
from console.screens.help import HelpScreen
from console.screens.sets import SetsScreen
from console.widgets.confirm import Confirm
from console.widgets.sets_forms import ImportForm, SetForm
from core import store
from core.data import ids_hash
from core.demo_set import ensure_demo_set
from core.question_sets import draw_set
from tests.helpers.console import console_app, settle
from tests.helpers.notices import said
from tests.helpers.snapshots import SnapCompare

CREATE_CONFIRM = """\
Create held-out question set test8 from dataset demo?
Questions: 8 of 60 (seed 5), 10 questions ruled out by dev10
Kind:      held-out (pre-registered runs only)
sha256:    {sha}…  (frozen: never changes once made)
y = create test8 (8 questions)    n / escape = no, do nothing"""


@pytest.fixture
def lab_db(tmp_path: Path) -> Path:
    """The demo questions and set, and a 10-question dev set."""
    path = tmp_path / "lab.db"
    db = store.connect(path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"]
    store.save_question_set(db, "dev10", "demo", ids[:10], 1, [], False, ids_hash(ids[:10]))
    db.conn.close()
    return path


def hotpot_file(path: Path, n: int = 3) -> Path:
    """`n` questions in the official HotpotQA format (a JSON list)."""
    records = [{"_id": f"hq{i}", "question": f"Which city hosts museum {i}?",
                "answer": f"City {i}", "type": "bridge", "level": "easy",
                "supporting_facts": [[f"Museum {i}", 0], [f"City {i}", 0]],
                "context": [[f"Museum {i}", [f"Museum {i} is in City {i}."]],
                            [f"City {i}", [f"City {i} is a city by a river."]],
                            [f"Other {i}", ["Nothing to see here."]]]}
               for i in range(n)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def fever_folder(folder: Path) -> Path:
    """4 SUPPORTS/REFUTES claims and 1 NOT ENOUGH INFO claim: claims.jsonl + pages.json."""
    folder.mkdir()
    claims, pages = [], {}
    for i in range(4):
        page = f"Page_{i}"
        pages[page] = {"lines": {"0": f"Page {i} says something true ."}, "unplaced": []}
        claims.append({"id": 100 + i, "claim": f"Claim {i} about page {i}.",
                       "label": "SUPPORTS" if i % 2 else "REFUTES",
                       "evidence": [[[100 + i, 100 + i, page, 0]]], "evidence_pages": [page]})
    claims.append({"id": 200, "claim": "A claim nobody can check.", "label": "NOT ENOUGH INFO",
                   "evidence": [[[200, None, None, None]]]})
    (folder / "claims.jsonl").write_text("\n".join(json.dumps(c) for c in claims) + "\n")
    (folder / "pages.json").write_text(json.dumps(pages))
    return folder


def toasts(app: App[None]) -> list[str]:
    return [str(n.message) for n in said(app)]


def datasets(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT dataset, count(*) FROM questions GROUP BY dataset"))
    finally:
        conn.close()


def set_names(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM question_sets ORDER BY name")]
    finally:
        conn.close()


async def open_sets(pilot: Pilot[None]) -> SetsScreen:
    """From Enqueue, `s` (out of any field first)."""
    await settle(pilot)
    await pilot.press("escape")
    await pilot.press("s")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, SetsScreen)
    return screen


def rows(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def app_on(db: Path, **config: object) -> LabApp:
    return console_app(db, first_screen="enqueue",
                       preview_debounce_s=0.01, **config)


@pytest.mark.asyncio
async def test_lists_datasets_and_sets_with_counts_seed_and_kind(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        screen = await open_sets(pilot)
        assert screen.title == "lab · 3 Enqueue › Sets"
        assert rows(screen.query_one("#sets-datasets", DataTable)) == [
            ["demo", "hotpotqa", "60", "2", "0"], ["demo-fever", "fever", "24", "0", "24"]]
        sets = rows(screen.query_one("#sets-sets", DataTable))
        assert [r[:6] for r in sets] == [["demo", "demo", "60", "0", "dev", "-"],
                                         ["dev10", "demo", "10", "1", "dev", "-"]]
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        line = str(pilot.app.screen.query_one("#help-workflow", Static).render())
        assert line.startswith("Import data with i")
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert isinstance(pilot.app.screen, EnqueueScreen)


@pytest.mark.asyncio
async def test_create_asks_then_enqueue_picks_and_plans_the_new_set(lab_db: Path) -> None:
    app = app_on(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sets(pilot)
        await pilot.press("c")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, SetForm)
        await pilot.press(*"test8", "tab", "tab", "8", "tab", "5", "tab", *"dev10", "enter")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, Confirm)
        db = store.connect(lab_db)
        expected = draw_set(db, "test8", "demo", 8, 5, ["dev10"])
        db.conn.close()
        assert dialog.text == CREATE_CONFIRM.format(sha=expected.sha256[:16])
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen
        assert any(t.startswith("created held-out set 'test8': 8 questions from demo, "
                                f"sha256 {expected.sha256[:12]}") for t in toasts(app))
        assert "test8" in [r[0] for r in rows(screen.query_one("#sets-sets", DataTable))]
        stored = store.question_set(store.connect(lab_db), "test8")
        assert stored["ids"] == list(expected.ids) and stored["held_out"]
        assert not set(stored["ids"]) & set(store.question_set(store.connect(lab_db),
                                                                "dev10")["ids"])
        await pilot.press("escape")  # back to Enqueue: the new set is picked and planned
        await settle(pilot)
        enqueue = app.screen
        assert isinstance(enqueue, EnqueueScreen)
        assert enqueue.query_one("#enq-set", Select).value == "test8"
        enqueue.query_one("#enq-models", SelectionList).select("sim-never")
        enqueue.query_one("#enq-conditions", SelectionList).select("none")
        enqueue.query_one("#enq-regimes", SelectionList).select("clean")
        for _ in range(3):
            await pilot.pause(0.05)
            await settle(pilot)
        text = str(enqueue.query_one("#enq-preview-text", Static).render())
        assert "question set test8 is held-out" in text  # planned on it, not "no such set"


@pytest.mark.asyncio
async def test_create_refusal_is_one_toast_and_the_form_again(lab_db: Path) -> None:
    app = app_on(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_sets(pilot)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press(*"dev10", "tab", "tab", "5", "tab", "1", "enter")  # name taken
        await settle(pilot)
        assert isinstance(app.screen, SetForm)
        assert app.screen.query_one("#set-name", Input).value == "dev10"  # kept
        assert [t for t in toasts(app) if "already exists" in t] == [
            "question set 'dev10' already exists; sets are frozen once made"]
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SetsScreen)
    assert set_names(lab_db) == ["demo", "dev10"]


@pytest.mark.asyncio
async def test_import_a_hotpotqa_file_asks_with_counts_then_stores(lab_db: Path,
                                                                   tmp_path: Path) -> None:
    data = hotpot_file(tmp_path / "hotpot small.json")
    app = app_on(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sets(pilot)
        await pilot.press("i")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, ImportForm)
        assert form.query_one("#imp-nei", Checkbox).disabled  # hotpotqa has no NEI
        form.query_one("#imp-path", Input).value = str(data)
        form.query_one("#imp-dataset", Input).value = "hq"
        await pilot.press("enter")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, Confirm)
        assert dialog.text == (
            f"Import 3 questions from {data} into dataset 'hq'?\n"
            "Validated: 3 questions (3 new, 0 already stored and kept)\n"
            "All or nothing: one transaction.\n"
            "y = store 3 new questions    n / escape = no, do nothing")
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen
        assert f"imported 3 questions from {data} into dataset 'hq'" in toasts(app)
        assert ["hq", "hotpotqa", "3", "0", "3"] in rows(screen.query_one("#sets-datasets",
                                                                          DataTable))
    assert datasets(lab_db)["hq"] == 3


@pytest.mark.asyncio
async def test_import_a_fever_folder_then_a_balanced_set_from_it(lab_db: Path,
                                                                 tmp_path: Path) -> None:
    folder = fever_folder(tmp_path / "fever")
    app = app_on(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sets(pilot)
        await pilot.press("i")
        await pilot.pause()
        form = app.screen
        form.query_one("#imp-kind", Select).value = "fever"
        form.query_one("#imp-path", Input).value = str(folder)
        await pilot.pause()
        assert not form.query_one("#imp-nei", Checkbox).disabled
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        assert app.screen.text.splitlines()[:3] == [
            f"Import 4 claims from {folder} into dataset 'fever'?",
            "Validated: 4 claims (4 new, 0 already stored and kept)",
            "Skipped:   1 NOT ENOUGH INFO claim (tick NEI to keep them)"]
        await pilot.press("y")
        await settle(pilot)
        table = screen.query_one("#sets-datasets", DataTable)
        table.move_cursor(row=table.get_row_index("fever"))
        table.focus()
        await pilot.press("enter")  # a set from the highlighted dataset
        await pilot.pause()
        set_form = app.screen
        assert isinstance(set_form, SetForm)
        assert set_form.query_one("#set-dataset", Select).value == "fever"
        await pilot.press(*"fev4", "tab", "tab", "4", "tab", "2", "enter")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        assert "Balance:   2 REFUTES, 2 SUPPORTS" in app.screen.text
        await pilot.press("y")
        await settle(pilot)
    assert datasets(lab_db)["fever"] == 4 and "fev4" in set_names(lab_db)


@pytest.mark.asyncio
@pytest.mark.parametrize("name, content, error", [
    ("missing.json", None, "missing.json: no such file or directory"),
    ("bad.json", '[{"_id": "x1", "question": "Q?"}]', "bad.json: record 0: missing field"),
])
async def test_a_bad_path_or_file_is_one_toast_and_nothing_stored(
        lab_db: Path, tmp_path: Path, name: str, content: str | None, error: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    before = datasets(lab_db)
    app = app_on(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_sets(pilot)
        await pilot.press("i")
        await pilot.pause()
        app.screen.query_one("#imp-path", Input).value = str(path)
        await pilot.press("enter")
        await settle(pilot)
        assert [t for t in toasts(app) if error in t] and len(toasts(app)) == 1
        form = app.screen
        assert isinstance(form, ImportForm)  # again, with the path to fix
        assert form.query_one("#imp-path", Input).value == str(path)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SetsScreen) and app.is_running
    assert datasets(lab_db) == before


@pytest.fixture
def query_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection the console opens refuses writes, as on a read-only file."""
    connect = store.connect

    def read_only_connect(path: Path | str, create: bool = True, **options: bool) -> Database:
        db = connect(path, create, **options)
        db.conn.execute("PRAGMA query_only = ON")
        return db

    monkeypatch.setattr(store, "connect", read_only_connect)


@pytest.mark.asyncio
async def test_read_only_refuses_create_and_import_with_the_reason(lab_db: Path,
                                                                   query_only: None) -> None:
    app = app_on(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sets(pilot)
        assert "READ-ONLY" in str(screen.title)
        for action in ("create", "import_file"):
            assert screen.check_action(action, ()) is None, action  # dimmed in the footer
        for key in ("c", "i", "enter"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is screen, key  # no form, no confirmation
        refused = [t for t in toasts(app) if "not possible, the console is read-only" in t]
        assert [t.split(":")[0] for t in refused] == ["New set", "Import file", "New set"]
        assert app.is_running
    assert set_names(lab_db) == ["demo", "dev10"]


@pytest.mark.asyncio
async def test_a_write_that_fails_read_only_is_a_toast(lab_db: Path, query_only: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """lab.db turned read-only after the start check: `y` ends in one toast."""
    import console.app

    monkeypatch.setattr(console.app, "check_writable", lambda db, path: None)
    app = app_on(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sets(pilot)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press(*"dev5", "tab", "tab", "5", "tab", "1", "enter")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen and app.is_running
        assert [t for t in toasts(app) if t.startswith("create set dev5 failed")]
        assert app.read_only is not None and screen.title is not None
        assert "READ-ONLY" in screen.title
    assert set_names(lab_db) == ["demo", "dev10"]


def test_snapshot(lab_db: Path, snap_compare: SnapCompare) -> None:
    async def open_view(pilot: Pilot[None]) -> None:
        await open_sets(pilot)

    assert snap_compare(app_on(Path("lab.db")), terminal_size=(80, 24), run_before=open_view)
