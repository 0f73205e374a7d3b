"""Pre-registration screen (2): freeze, edit a draft, deviations, outcomes, verify, diffs.

The editor never loses text: q, escape and shift+tab-then-q with unsaved text keep it
and ask (save / discard / stay); a deviation is logged only after its confirmation.

Pilot tests on a lab.db filled through the real pipeline: a frozen amendment A1
whose grid ran through the queue with an in-process worker, a draft A2. The
database is built once per session (conftest's `prereg_built`) and copied into each
test's directory.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.widgets import (
    ContentSwitcher,
    Input,
    Markdown,
    OptionList,
    Static,
    TabbedContent,
    TextArea,
)

import prompts
from console.screens.prereg import PreregScreen
from console.screens.prereg.modals import FreezeConfirm, TitlePrompt
from console.widgets.confirm import Choose, Confirm
from console.widgets.hanging import HangingStatic
from core import store
from core.store import prereg as rows
from tests.helpers.console import (
    DRAFT_SCOPE,
    amendment,
    copy_db,
    open_editor,
)
from tests.helpers.console import prereg_app as app_on
from tests.helpers.console import select_amendment as select
from tests.helpers.console import settle_prereg as settle
from tests.helpers.notices import said
from tests.helpers.snapshots import SnapCompare

FIXED = "2025-01-02T03:04:05+00:00"


@pytest.fixture
def lab_db(prereg_built: Path, tmp_path: Path) -> Path:
    """A private copy of the built lab.db in the test's directory (the cwd)."""
    return copy_db(prereg_built, tmp_path / "lab.db")


@pytest.fixture
def own_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of prompts/ so a test can change a pinned file."""
    copy = tmp_path / "prompts"
    shutil.copytree(prompts.PROMPT_DIR, copy,
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(prompts, "PROMPT_DIR", copy)
    return copy


def text_of(screen: DOMNode, selector: str) -> str:
    """The plain text a Static shows (a HangingStatic's: its lines unwrapped)."""
    widget = screen.query_one(selector, Static)
    return widget.text.plain if isinstance(widget, HangingStatic) else str(widget.render())


@pytest.mark.asyncio
async def test_lists_amendments_with_state_and_hash(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, PreregScreen)
        listing = screen.query_one("#prereg-list", OptionList)
        assert listing.option_count == 2
        first = str(listing.get_option_at_index(0).prompt)
        assert "A1" in first and "frozen" in first
        assert amendment(lab_db, "A1")["content_sha256"][:8] in first
        assert "1 dev" in first
        assert "draft" in str(listing.get_option_at_index(1).prompt)
        await select(pilot, "A1")
        doc = screen.query_one("#prereg-doc", Markdown).source
        assert "Enforced rule beats none" in doc and "**H1**" in doc
        assert "H2" in doc and "test20" in doc and "reworded after a typo" in doc


@pytest.mark.asyncio
async def test_a_link_in_an_amendment_is_shown_not_opened(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over SSH, following a link would start a browser on the lab's machine: the link's
    address is said instead, as inert text."""
    opened: list[str] = []
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        monkeypatch.setattr(pilot.app, "open_url", lambda url, **kw: opened.append(url))
        await settle(pilot)
        await select(pilot, "A1")
        doc = pilot.app.screen.query_one("#prereg-doc", Markdown)
        doc.post_message(Markdown.LinkClicked(doc, "file:///etc/passwd\x1b]0;x\x07"))
        await settle(pilot)
        assert opened == []
        notices = [n.message for n in said(pilot.app) if "link (not opened)" in n.message]
        assert notices and "file:///etc/passwd" in notices[0] and "\x1b" not in notices[0]


@pytest.mark.asyncio
async def test_freeze_asks_with_what_gets_pinned_and_y_freezes(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, "A2")
        await pilot.press("f")
        await settle(pilot)
        modal = pilot.app.screen
        assert isinstance(modal, FreezeConfirm)
        pinned = str(modal.query_one("#freeze-pins Static", Static).render())
        assert "prompts/system.txt" in pinned and "sha256" in pinned
        assert "dev10" in pinned and "enforced_rule:k=7" in pinned and "sim-own5" in pinned
        assert "no episodes" in text_of(modal, "#freeze-existed")
        await pilot.press("n")
        await settle(pilot)
        assert amendment(lab_db, "A2")["state"] == "draft"
        await pilot.press("f")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        row = amendment(lab_db, "A2")
        assert row["state"] == "frozen" and row["pins"]["question_sets"]["dev10"]
        assert "frozen" in str(pilot.app.screen.query_one("#prereg-list", OptionList)
                               .get_option_at_index(1).prompt)


@pytest.mark.asyncio
async def test_freeze_refused_for_a_frozen_amendment(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, "A1")
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(pilot.app.screen, PreregScreen)
        assert any("already frozen" in n.message for n in said(pilot.app))


@pytest.mark.asyncio
@pytest.mark.parametrize("tests_text, message", [
    ('[{"id": "X1", ', "tests: invalid JSON"),
    ('[{"id": "X1", "kind": "vibes"}]', "unknown kind 'vibes'"),
])
async def test_bad_tests_json_shows_the_error_and_saves_nothing(lab_db: Path, tests_text: str,
                                                                message: str) -> None:
    before = amendment(lab_db, "A2")
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        screen.query_one("#editor-body", TextArea).text = "a new body"
        screen.query_one("#editor-tests", TextArea).text = tests_text
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert message in text_of(screen, "#editor-error")
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-editor"
    after = amendment(lab_db, "A2")
    assert (after["body"], after["tests"]) == (before["body"], before["tests"])


@pytest.mark.asyncio
async def test_good_edit_is_saved(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        screen.query_one("#editor-title", Input).value = "Knob variant: k=7 beats k=5"
        screen.query_one("#editor-body", TextArea).text = "Edited in the console."
        screen.query_one("#editor-tests", TextArea).text = (
            '[{"id": "K1", "kind": "median_action", "condition": "enforced_rule:k=7", '
            '"op": ">=", "value": 3}]')
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-view"
        assert "Edited in the console." in screen.query_one("#prereg-doc", Markdown).source
    row = amendment(lab_db, "A2")
    assert row["title"] == "Knob variant: k=7 beats k=5"
    assert row["body"] == "Edited in the console."
    assert [t["id"] for t in row["tests"]] == ["K1"]
    assert row["scope"]["conditions"] == DRAFT_SCOPE["conditions"]


async def type_into_body(pilot: Pilot[None], text: str) -> None:
    """Type (key by key, as a person would) at the end of the focused body."""
    body = pilot.app.screen.query_one("#editor-body", TextArea)
    assert pilot.app.screen.focused is body
    body.move_cursor(body.document.end)
    await pilot.press(*text)
    await pilot.pause()


BODY = "A draft: **not** frozen yet."


@pytest.mark.asyncio
async def test_unsaved_editor_q_escape_and_shift_tab_q_keep_the_text_and_ask(
        lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        await type_into_body(pilot, "Typedbyhand")
        body = screen.query_one("#editor-body", TextArea)
        assert body.text == BODY + "Typedbyhand"
        # q in a text field is a letter, never quit
        await pilot.press("q")
        await pilot.pause()
        assert pilot.app.return_code is None and body.text.endswith("Typedbyhandq")
        # shift+tab stays in the editor (Title), where q is a letter too
        await pilot.press("shift+tab")
        await pilot.pause()
        assert screen.focused is screen.query_one("#editor-title", Input)
        await pilot.press("q")
        await settle(pilot)
        assert pilot.app.return_code is None and pilot.app.screen is screen
        assert screen.query_one("#editor-title", Input).value == "Knob variant: k=7q"
        # q with the focus outside the fields (a click on the list) asks, never quits
        screen.query_one("#prereg-list", OptionList).focus()
        await pilot.press("q")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, Choose) and pilot.app.return_code is None
        assert dialog.text == (
            "Draft A2 has unsaved changes: title, body.\n"
            "Leave the editor? s saves them to the draft (it stays a draft) and leaves; "
            "d throws them away for good and leaves.\n"
            "s = save    d = discard    n / escape = keep editing")
        await pilot.press("n")  # stay
        await settle(pilot)
        assert pilot.app.screen is screen \
            and screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-editor"
        assert body.text == BODY + "Typedbyhandq"
        # escape asks too; escape on the dialog stays
        body.focus()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(pilot.app.screen, Choose)
        await pilot.press("escape")
        await settle(pilot)
        assert pilot.app.screen is screen and body.text == BODY + "Typedbyhandq"
        # d discards, and says so
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-view"
        assert any("unsaved title, body discarded" in n.message
                   for n in said(pilot.app))
        # outside the editor q quits, as everywhere
        await pilot.press("q")
        await pilot.pause()
        assert pilot.app.return_code == 0
    assert amendment(lab_db, "A2")["body"] == BODY


@pytest.mark.asyncio
async def test_escape_then_s_saves_and_leaves(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        await type_into_body(pilot, "Kept")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(pilot.app.screen, Choose)
        await pilot.press("s")
        await settle(pilot)
        assert pilot.app.screen is screen
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-view"
    assert amendment(lab_db, "A2")["body"] == BODY + "Kept"


@pytest.mark.asyncio
async def test_clean_editor_leaves_without_asking(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        await pilot.press("escape")
        await settle(pilot)
        assert pilot.app.screen is screen
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-view"
        await open_editor(pilot, "A2")
        screen.query_one("#prereg-list", OptionList).focus()
        await pilot.press("q")  # q in the editor leaves it, never quits
        await settle(pilot)
        assert pilot.app.return_code is None
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-view"


@pytest.mark.asyncio
async def test_tab_cycles_title_body_tests_scope_and_marks_modified_tabs(
        lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        tabs = screen.query_one("#editor-tabs", TabbedContent)

        def where() -> tuple[str | None, str]:
            return screen.focused.id if screen.focused else None, tabs.active

        assert where() == ("editor-body", "editor-tab-body")
        seen = []
        for _ in range(4):
            await pilot.press("tab")
            await settle(pilot)
            seen.append(where()[0])
        assert seen == ["editor-tests", "editor-scope", "editor-title", "editor-body"]
        await pilot.press("shift+tab", "shift+tab")
        await settle(pilot)
        assert where() == ("editor-scope", "editor-tab-scope")
        labels = [str(tabs.get_tab(f"editor-tab-{n}").label) for n in ("body", "tests", "scope")]
        assert labels == ["Body", "Tests (JSON)", "Scope (JSON)"]
        await pilot.press("tab")  # title
        await pilot.press("tab")  # body
        await settle(pilot)
        await type_into_body(pilot, "x")
        await settle(pilot)
        assert str(tabs.get_tab("editor-tab-body").label) == "Body *"
        assert str(tabs.get_tab("editor-tab-tests").label) == "Tests (JSON)"
        assert "* unsaved: body (ctrl+s saves)" in text_of(screen, "#editor-head")
        await pilot.press("backspace")
        await settle(pilot)
        assert str(tabs.get_tab("editor-tab-body").label) == "Body"
        assert text_of(screen, "#editor-head") == "Editing draft A2"


@pytest.mark.asyncio
async def test_quit_from_another_screen_asks_first_then_saves_and_quits(lab_db: Path) -> None:
    """q on another screen: unsaved text brings the editor back and asks before quitting."""
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_editor(pilot, "A2")
        assert screen.guard_quit() is False  # nothing typed: nothing holds the quit
        await type_into_body(pilot, "Late")
        screen.query_one("#prereg-list", OptionList).focus()  # digits type in the fields
        await pilot.press("1")
        await settle(pilot)
        assert pilot.app.screen is not screen
        await pilot.press("q")  # the app's quit asks the editor first
        await settle(pilot)
        assert pilot.app.return_code is None
        assert isinstance(pilot.app.screen, Choose)
        assert pilot.app.screen_stack[-2] is screen
        await pilot.press("s")
        await settle(pilot)
        assert pilot.app.return_code == 0
    assert amendment(lab_db, "A2")["body"] == BODY + "Late"


@pytest.mark.asyncio
async def test_new_draft_opens_the_editor(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(pilot.app.screen, TitlePrompt)
        pilot.app.screen.query_one("#title-input", Input).value = "Budget arm"
        await pilot.press("enter")
        await settle(pilot)
        screen = pilot.app.screen
        assert screen.query_one("#prereg-right", ContentSwitcher).current == "prereg-editor"
        assert "A3" in text_of(screen, "#editor-head")
    row = amendment(lab_db, "A3")
    assert (row["title"], row["state"]) == ("Budget arm", "draft")


@pytest.mark.asyncio
async def test_add_deviation(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, "A1")
        await pilot.press("d")
        await settle(pilot)
        screen = pilot.app.screen
        screen.query_one("#prereg-dev-input", Input).value = "judge prompt fixed"
        await pilot.press("enter")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, Confirm)
        assert dialog.text == (
            "Log this deviation on frozen amendment A1 for good?\n"
            "«judge prompt fixed»\n"
            "A deviation is appended to A1's record and can never be edited or removed.\n"
            "y = log it    n / escape = no, do nothing")
        await pilot.press("n")  # not logged; the text stays in the input
        await settle(pilot)
        assert pilot.app.screen is screen
        assert "judge prompt fixed" not in text_of(screen, "#prereg-devs")
        assert screen.query_one("#prereg-dev-input", Input).value == "judge prompt fixed"
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert "judge prompt fixed" in text_of(pilot.app.screen, "#prereg-devs")
        await select(pilot, "A2")
        await pilot.press("d")
        await settle(pilot)
        assert any("is a draft" in n.message for n in said(pilot.app))
    conn = store.connect(lab_db)
    assert [d["text"] for d in rows.deviations(conn, "A1")][-1] == "judge prompt fixed"
    assert rows.deviations(conn, "A2") == []


@pytest.mark.asyncio
async def test_outcomes_are_shown_with_verdict_words(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, "A1")
        await pilot.press("o")
        await settle(pilot)
        text = text_of(pilot.app.screen, "#prereg-outcomes")
        assert "H1" in text and "H2" in text
        verdicts = [w for w in ("pass", "fail", "partial", "n.a.") if w in text]
        assert verdicts, text
        assert "confirm" in text  # the run the episodes came from


@pytest.mark.asyncio
async def test_verify_ok_then_a_changed_prompt_shows_its_diff(lab_db: Path,
                                                              own_prompts: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, "A1")
        await pilot.press("v")
        await settle(pilot)
        pins = text_of(pilot.app.screen, "#prereg-pins")
        assert "verify: ok: 1 frozen amendment, chain and pins intact" in pins
        assert "every pin matches" in pins
        system = own_prompts / "system.txt"
        old_first = system.read_text(encoding="utf-8").splitlines()[0]
        system.write_text("A changed first line.\n" + system.read_text(encoding="utf-8"),
                          encoding="utf-8")
        await pilot.press("v")
        await settle(pilot)
        pins = text_of(pilot.app.screen, "#prereg-pins")
        assert "verify: 1 problem\n" in pins and "prompts/system.txt changed" in pins
        assert "CHANGED since A1 was frozen" in pins
        assert "+A changed first line." in pins and f" {old_first}" in pins
        assert "a deviation is logged" in pins


def freeze_clock(db: Path) -> None:
    """Fixed times and hashes: what a snapshot shows must not depend on when it ran."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE amendments SET created_at = ?", (FIXED,))
        conn.execute("UPDATE amendments SET frozen_at = ?, version = '0.1.0', "
                     "content_sha256 = substr('5f2c1d9e8a7b6c5d4e3f2a1b0c9d8e7f' || id, 1, 64), "
                     "prev_sha256 = ? WHERE state = 'frozen'", (FIXED, "0" * 64))
        conn.execute("UPDATE deviations SET created_at = ?", (FIXED,))
    conn.close()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot(lab_db: Path, snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    freeze_clock(lab_db)

    async def show_a1(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await select(pilot, "A1")

    assert snap_compare(app_on(Path("lab.db")), terminal_size=size, run_before=show_a1)


@pytest.mark.asyncio
async def test_each_part_of_a_multi_part_test_has_its_own_line(lab_db: Path) -> None:
    """H2 covers both models: a line per model with its own sign and number, then the
    tally; H1 (one model) keeps its one numbers line."""
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await select(pilot, "A1")
        await pilot.press("o")
        await settle(pilot)
        text = text_of(pilot.app.screen, "#prereg-outcomes")
        shown = str(pilot.app.screen.query_one("#prereg-outcomes", Static).render()).splitlines()
    lines = text.splitlines()
    h2 = lines[next(i for i, line in enumerate(lines) if line.startswith("H2")):]
    parts = [line.strip() for line in h2[1:3]]
    assert [p.split()[1] for p in parts] == ["sim-never", "sim-own5"], text
    assert all(p[0] in "✓✗–" and p.count("[") == 1 for p in parts), text  # sign, number, CI
    assert h2[3].strip().endswith("parts pass") and h2[3].strip()[0].isdigit(), text
    h1 = lines[next(i for i, line in enumerate(lines) if line.startswith("H1")):]
    assert "sim-never" in h1[1] and "episodes from" in h1[2], text
    # on screen at 80 columns the long lines wrap under their text, not at the left edge
    assert len(shown) > len(lines), shown
    assert all(not line or line[:2] in ("H1", "H2", "A1") or line.startswith(" " * 7)
               for line in shown), shown


def test_parts_text_names_dataset_and_set_when_a_test_covers_several() -> None:
    from types import SimpleNamespace as NS

    from console.screens.prereg.render import parts_text

    class Unit(NS):
        def text(self, several: bool) -> str:
            return f"{self.model} ({self.dataset}/{self.question_set})" if several else \
                self.model

    nan = float("nan")

    def part(model: str, qset: str, verdict: str, estimate: float, detail: str = ""
            ) -> SimpleNamespace:
        return NS(unit=Unit(model=model, dataset="hotpotqa", question_set=qset),
                  what="persistent", verdict=verdict, estimate=estimate, ci_low=estimate - .1,
                  ci_high=estimate + .1, p=nan, p_adjusted=nan, holm_m=0, detail=detail)

    text = parts_text([part("m1", "test300", "pass", 0.25), part("m1", "fresh300", "fail", -0.05),
                       part("m2", "test300", "n.a.", nan, "no episodes")]).plain
    assert text.splitlines() == [
        "       ✓ m1 (hotpotqa/test300) persistent +0.250 [+0.150, +0.350]",
        "       ✗ m1 (hotpotqa/fresh300) persistent -0.050 [-0.150, +0.050]",
        "       – m2 (hotpotqa/test300) persistent: n.a. (no episodes)",
        "       1 of 3 parts pass"]


def test_pins_name_the_hash_once_per_section() -> None:
    """A pin line is its name and the sha256's first 12 hex digits; the section's title
    says sha256 once, so a line fits beside the amendment list at 100 columns."""
    from console.screens.prereg.render import pins_text

    text = pins_text({"prompts": {"prompts/fever_forced_observation.txt": "ab" * 32,
                                  "prompts/decide.txt": "cd" * 32},
                      "models": {}}).plain
    assert text.splitlines()[:3] == ["prompt files (2), sha256",
                                     "  prompts/fever_forced_observation.txt  abababababab",
                                     "  prompts/decide.txt                    cdcdcdcdcdcd"]
    assert "model specs (0)\n  none" in text and text.count("sha256") == 1
