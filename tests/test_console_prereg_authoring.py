"""Writing an amendment in the console without the docs: the Tests and Scope editors open
on templates that list every field, check what is typed (the error and its line), take
the scope from the Enqueue screen's grid (ctrl+g), and keep unsaved text in lab.db so a
console that closes or dies loses none of it.

Pilot tests on the Pre-registration screen's lab.db (a frozen A1, a draft A2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.widgets import (
    ContentSwitcher,
    Input,
    OptionList,
    Select,
    SelectionList,
    Static,
    TabbedContent,
    TextArea,
)

from console.screens.prereg.editor import PreregEditor
from console.widgets.confirm import Choose
from core import store
from core.registered_tests import KINDS
from core.store import prereg as rows
from tests.helpers.console import amendment, copy_db, open_editor
from tests.helpers.console import prereg_app as app_on
from tests.helpers.console import settle_prereg as settle
from tests.helpers.notices import said


@pytest.fixture
def lab_db(prereg_built: Path, tmp_path: Path) -> Path:
    """A private copy of the Pre-registration tests' lab.db in the test's directory."""
    return copy_db(prereg_built, tmp_path / "lab.db")


def check_line(screen: DOMNode) -> str:
    return str(screen.query_one("#editor-check", Static).render())


@pytest.mark.asyncio
async def test_the_editors_open_on_templates_and_check_as_you_type(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        tests = screen.query_one("#editor-tests", TextArea)
        scope = screen.query_one("#editor-scope", TextArea)
        assert tests.text.startswith("// Registered tests: a JSON list")
        assert all(f"//   {kind}: " in tests.text for kind in KINDS)
        assert '"enforced_rule:k=7"' in scope.text and "//   question_sets:" in scope.text
        assert "dev10" in scope.text and "sim-own5" in scope.text  # what lab.db holds
        assert check_line(screen).startswith("✓ Tests: 0 valid · Scope: 1 model, 2 conditions")
        # a typo, typed key by key: the check names it and its line
        lines = tests.text.splitlines()
        at = lines.index("[]")
        await pilot.press("tab")  # Body → Tests
        await settle(pilot)
        assert screen.focused is tests
        assert tests.cursor_location == (at, 1)  # past the head notes, inside the []
        # the test's head put in at once, the rest (the typo) typed key by key
        tests.insert('{"id": "K1", "kind": "median_action", "condition": "none", ')
        await pilot.press(*'"op": ">=", "valeu": 3}')
        await pilot.pause()
        line = check_line(screen)
        assert line.startswith(f"✗ Tests line {at + 1}: tests[0] (K1): unknown field 'valeu'"), \
            line
        assert screen.query_one("#editor-check").has_class("-invalid")
        # a test naming an arm outside the scope: caught against the scope as typed
        tests.text = tests.text.replace('"valeu"', '"value"').replace('"none"', '"permit"')
        await pilot.pause()
        assert "not among the amendment's scoped conditions" in check_line(screen)
        tests.text = tests.text.replace('"permit"', '"none"')
        await pilot.pause()
        assert check_line(screen).startswith("✓ Tests: 1 valid")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-view"
    assert amendment(lab_db, "A2")["tests"] == [
        {"id": "K1", "kind": "median_action", "condition": "none", "op": ">=", "value": 3}]


@pytest.mark.asyncio
async def test_ctrl_g_takes_the_scope_from_the_enqueue_grid(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        await pilot.press("ctrl+g")  # Enqueue never shown: nothing to copy, it says so
        await settle(pilot)
        assert any("pick one on Enqueue (3)" in n.message for n in said(pilot.app))
        screen.query_one("#prereg-list", OptionList).focus()
        await pilot.press("3")
        await settle(pilot)
        enqueue = pilot.app.screen
        enqueue.query_one("#enq-set", Select).value = "test20"
        enqueue.query_one("#enq-models", SelectionList).select("sim-never")
        enqueue.query_one("#enq-conditions", SelectionList).select("none")
        enqueue.query_one("#enq-knobs", Input).value = "enforced_rule:k=5"
        for regime in ("clean", "persistent"):
            enqueue.query_one("#enq-regimes", SelectionList).select(regime)
        enqueue.query_one("#enq-budget", Input).value = "8,16"
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert pilot.app.screen is screen
        screen.query_one("#editor-body", TextArea).focus()
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert screen.query_one("#editor-tabs", TabbedContent).active == "editor-tab-scope"
        assert check_line(screen).startswith(
            "✓ Tests: 0 valid · Scope: 1 model, 2 conditions, 2 regimes, 1 question set")
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert amendment(lab_db, "A2")["scope"] == {
        "models": ["sim-never"], "conditions": ["none", "enforced_rule:k=5"],
        "regimes": ["clean", "persistent"], "question_sets": ["test20"], "budgets": [8, 16]}


def kept(db: Path) -> dict | None:
    conn = store.connect(db)
    try:
        return rows.kept_draft_text(conn, "A2")
    finally:
        conn.conn.close()


async def wait_kept(pilot: Pilot[None], db: Path, present: bool) -> dict | None:
    """Let the editor's keep timer fire and its write land (on content, generously)."""
    for _ in range(400):
        await pilot.pause(0.05)
        await settle(pilot)
        found = kept(db)
        if (found is not None) == present:
            return found
    raise AssertionError("the editor's text was never kept" if present else
                         "the kept text was never dropped")


@pytest.mark.asyncio
async def test_unsaved_text_survives_a_restart_until_saved_or_discarded(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PreregEditor, "KEEP_AFTER_S", 0.05)
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        body = screen.query_one("#editor-body", TextArea)
        body.move_cursor(body.document.end)
        await pilot.press(*" Typed.")
        screen.query_one("#editor-scope", TextArea).text = '{"models": [broken'
        texts = await wait_kept(pilot, lab_db, True)
        assert texts is not None and texts["body"].endswith("Typed.")
        assert texts["scope"] == '{"models": [broken'
    # the console ended without a save (as a killed one would): a new one brings it back
    assert amendment(lab_db, "A2")["body"] == "A draft: **not** frozen yet."
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        assert screen.query_one("#editor-body", TextArea).text.endswith(
            "Typed.")
        assert "unsaved: body, scope" in str(screen.query_one("#editor-head").render())
        assert check_line(screen).startswith("✗ Scope line 1: scope: invalid JSON")
        assert any("unsaved text from" in n.message for n in said(pilot.app))
        screen.query_one("#prereg-list", OptionList).focus()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(pilot.app.screen, Choose)
        await pilot.press("d")
        await wait_kept(pilot, lab_db, False)
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        assert screen.query_one("#editor-body", TextArea).text == "A draft: **not** frozen yet."
        assert str(screen.query_one("#editor-head").render()) == "Editing draft A2"


@pytest.mark.asyncio
async def test_saving_forgets_the_kept_text(lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PreregEditor, "KEEP_AFTER_S", 0.05)
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        screen.query_one("#editor-title", Input).value = "Knob variant, renamed"
        await wait_kept(pilot, lab_db, True)
        await pilot.press("ctrl+s")
        await wait_kept(pilot, lab_db, False)
    assert amendment(lab_db, "A2")["title"] == "Knob variant, renamed"
