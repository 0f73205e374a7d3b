"""Pre-registration screen (`2`, docs/prereg.md): amendments, edit, freeze, deviations, outcomes.

The list shows every amendment with its state and short hash; the right side has
the selected one's document (Markdown), the outcomes of its registered tests, its
deviations, and its pins with what changed since the freeze (unified diffs of
prompt files) plus the last `verify` report. Everything is read and written in
thread workers through core.prereg, core.store.prereg and analysis.prereg.outcomes, the
same functions as `lab prereg …`; a write is one short transaction, never held
while the person reads a confirmation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import (
    ContentSwitcher,
    Header,
    Input,
    Markdown,
    OptionList,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option

from console.messages import Notice
from console.screens.base import LabScreen
from console.screens.prereg.editor import PreregEditor
from console.screens.prereg.modals import FreezeConfirm, TitlePrompt
from console.screens.prereg.render import (
    amendment_markdown,
    diff_text,
    existed_line,
    outcome_text,
    pins_text,
    short_hash,
    state_text,
)
from console.widgets.confirm import Choose, Confirm
from console.widgets.footer import LabFooter
from console.widgets.hanging import HangingStatic
from core import prereg
from core.errors import LabError
from core.inert import inert
from core.models.registry import load_registry
from core.store import prereg as rows
from core.wording import plural

TABS = ("tab-doc", "tab-outcomes", "tab-devs", "tab-pins")
OUTCOMES_INDENT = 7
"""Where a registered test's lines start their text (after the test id's column)."""


class PreregScreen(LabScreen):
    """Amendments with state and hash; view, edit, freeze, deviations, outcomes, verify."""

    CSS_PATH = "prereg.tcss"
    WRITE_ACTIONS = frozenset({"new", "edit", "freeze", "deviation", "save",
                               "scope_from_grid"})
    AUTO_FOCUS = "#prereg-list"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding("n", "new", "New"),
        Binding("e", "edit", "Edit"),
        Binding("f", "freeze", "Freeze"),
        Binding("d", "deviation", "Deviation"),
        Binding("o", "outcomes", "Outcomes"),
        Binding("v", "verify", "Verify"),
        Binding("t", "next_tab", "Next tab"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("j", "cursor(1)", "Down", show=False),
        Binding("k", "cursor(-1)", "Up", show=False),
        Binding("escape", "back", "Back"),
        Binding("ctrl+s", "save", "Save draft", show=False),
        Binding("ctrl+g", "scope_from_grid", "Scope from the Enqueue grid", show=False),
        # only while the editor is open (check_action): q leaves it, asking if unsaved,
        # and never reaches the app's quit; outside the editor q quits as everywhere
        Binding("q", "leave_editor", "Leave editor", show=False),
    ]
    FOOTER_KEYS = ("new", "edit", "freeze", "verify", "deviation", "outcomes", "save")
    """The footer's keys, most essential first (LabFooter keeps these and ? q)."""

    @dataclass
    class Loaded(Message):
        """The amendments and their deviations were read."""

        entries: list[dict[str, Any]]
        devs: dict[str, list[dict[str, Any]]]
        kept: dict[str, dict[str, str]]
        """Each draft's unsaved editor text kept from before (`draft_texts`)."""
        names: tuple[list[str], list[str]]
        """The registry's models and lab.db's question sets (the Scope notes list them)."""

    @dataclass
    class PinsRead(Message):
        """An amendment's pins and what changed since its freeze."""

        amendment_id: str
        text: Text

    @dataclass
    class OutcomesRead(Message):
        """An amendment's registered tests were evaluated."""

        amendment_id: str
        text: Text

    @dataclass
    class Verified(Message):
        """`verify` ran over the whole document."""

        text: Text
        problems: int

    @dataclass
    class Created(Message):
        """A new draft was appended."""

        amendment_id: str

    @dataclass
    class Saved(Message):
        """The editor's changed fields were written."""

        amendment_id: str
        fields: list[str]

    @dataclass
    class KeptText(Message):
        """The editor's unsaved text was kept in lab.db (or forgotten: `texts` None)."""

        amendment_id: str
        texts: dict[str, str] | None

    @dataclass
    class Refused(Message):
        """The library refused the editor's save."""

        error: str

    @dataclass
    class FreezeReady(Message):
        """What freezing a draft would pin, to confirm."""

        amendment_id: str
        pinned: Text
        existed: str

    @dataclass
    class Frozen(Message):
        """A draft was frozen (the toast says its time and hash)."""

        text: str

    @dataclass
    class DeviationAdded(Message):
        """A deviation was logged."""

        amendment_id: str
        dev: int

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[dict[str, Any]] = []
        self._devs: dict[str, list[dict[str, Any]]] = {}
        self._selected: str | None = None
        self._filter = ""
        self._edit_after_load: str | None = None
        self._after_save: Callable[[], object] | None = None
        self._leave_question: Choose | None = None
        """The save / discard / stay question while it is shown (asked once, however
        many times escape, q or ctrl+c ask to leave)."""
        self._leave_then: Callable[[], object] | None = None
        """What that question's save or discard runs next (quit, after ctrl+c)."""
        self._outcomes_for: str | None = None
        self._outcomes_text = Text()
        self._verify: Text = Text("verify: not run yet (v recomputes the hash chain and pins)")
        self._kept: dict[str, dict[str, str]] = {}

    def compose(self) -> ComposeResult:
        """Header, the amendment list, the tabs or the editor, footer."""
        yield Header()
        with Horizontal(id="prereg-main"):
            with Vertical(id="prereg-side"):
                yield Input(placeholder="filter: id, state or title", id="prereg-filter")
                yield OptionList(id="prereg-list")
                yield Static("", id="prereg-count", markup=False)
            with ContentSwitcher(initial="prereg-view", id="prereg-right"):
                with TabbedContent(id="prereg-view"):
                    with TabPane("Document", id="tab-doc"):
                        with VerticalScroll():
                            yield Markdown(id="prereg-doc", open_links=False)
                    with TabPane("Outcomes", id="tab-outcomes"):
                        with VerticalScroll():
                            yield HangingStatic(OUTCOMES_INDENT, id="prereg-outcomes")
                    with TabPane("Deviations", id="tab-devs"):
                        with VerticalScroll():
                            yield Static("", id="prereg-devs", markup=False)
                        yield Input(placeholder="deviation: what changed and why (enter logs it)",
                                    id="prereg-dev-input")
                    with TabPane("Pins & verify", id="tab-pins"):
                        with VerticalScroll():
                            yield Static("", id="prereg-pins", markup=False)
                yield PreregEditor(id="prereg-editor")
        yield LabFooter()

    def _error(self, message: str) -> None:
        """Show a library error line (from a worker thread)."""
        self.post_message(Notice(message, severity="error"))

    # ---- loading ---------------------------------------------------------------------

    def reload(self) -> None:
        """Reload the amendments; outcomes shown are marked stale (o recomputes)."""
        if self._outcomes_for is not None:
            self._show_outcomes(
                Text("lab.db changed since these were computed: o recomputes\n\n", style="bold")
                + self._outcomes_text)
        self._load()

    @work(thread=True, exclusive=True, group="prereg")
    def _load(self) -> None:
        from core import store

        try:
            models = sorted(load_registry(self.lab.config_path))
        except LabError:  # a broken lab.toml: the Scope notes list no models
            models = []
        with self._db() as db:
            entries = rows.amendments(db)
            devs: dict[str, list[dict[str, Any]]] = {}
            for d in rows.deviations(db):
                devs.setdefault(d["amendment_id"], []).append(d)
            kept = {r["id"]: text for r in entries if r["state"] == "draft"
                    and (text := rows.kept_draft_text(db, r["id"])) is not None}
            sets = [s["name"] for s in store.question_sets(db)]
        self.post_read(self.Loaded(entries, devs, kept, (models, sets)))

    def on_prereg_screen_loaded(self, message: Loaded) -> None:
        """Show the amendments (and open the editor on a draft just created)."""
        entries = message.entries
        self._rows, self._devs, self._kept = entries, message.devs, message.kept
        self.query_one(PreregEditor).names = message.names
        self._fill_table()
        frozen = sum(r["state"] == "frozen" for r in entries)
        self.query_one("#prereg-count", Static).update(
            f"{plural(len(entries), 'amendment')}, {frozen} frozen" if entries else
            "no amendments yet: n starts a draft")
        if self._edit_after_load and self._row(self._edit_after_load):
            amendment_id, self._edit_after_load = self._edit_after_load, None
            self._open_editor(amendment_id)

    def _visible(self) -> list[dict[str, Any]]:
        needle = self._filter.lower()
        return [r for r in self._rows
                if not needle or needle in f"{r['id']} {r['state']} {r['title']}".lower()]

    def _fill_table(self) -> None:
        listing = self.query_one("#prereg-list", OptionList)
        listing.clear_options()
        visible = self._visible()
        listing.add_options(Option(self._entry(r), id=r["id"]) for r in visible)
        ids = [r["id"] for r in visible]
        if self._selected not in ids:
            self._selected = ids[-1] if ids else None
        if self._selected is not None:
            listing.highlighted = ids.index(self._selected)
        self._show_selected()

    def _entry(self, row: dict[str, Any]) -> Text:
        """Two lines: id, state (sign and word), short hash, deviations; then the title."""
        ndev = len(self._devs.get(row["id"], []))
        head = Text(f"{row['id']:<4}", style="bold")
        head.append(f"{state_text(row['state']):<9}",
                    style="bold" if row["state"] == "draft" else "")
        head.append(short_hash(row["content_sha256"], 8) if row["content_sha256"] else "no hash")
        if ndev:
            head.append(f"  {ndev} dev", style="bold")
        return head + Text(f"\n    {inert(row['title'])}")

    def _row(self, amendment_id: str | None) -> dict[str, Any] | None:
        return next((r for r in self._rows if r["id"] == amendment_id), None)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """Show the amendment under the cursor."""
        if event.option.id != self._selected:
            self._selected = event.option.id
            self._show_selected()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter opens the amendment: focus its document."""
        self.query_one("#prereg-view", TabbedContent).active = "tab-doc"
        self.query_one("#tab-doc VerticalScroll").focus()

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        """A link in an amendment is shown, never opened: over SSH a browser would start on
        the lab's machine (a console browser there takes over the terminal), and an
        amendment's text is not lab's to follow."""
        event.stop()
        self.notify(f"link (not opened): {event.href}")

    def _show_selected(self) -> None:
        row = self._row(self._selected)
        doc = self.query_one("#prereg-doc", Markdown)
        devs_view = self.query_one("#prereg-devs", Static)
        if row is None:
            doc.update("No amendment selected. `n` starts a draft.")
            devs_view.update("")
            self.query_one("#prereg-pins", Static).update(self._verify)
            return
        devs = self._devs.get(row["id"], [])
        doc.update(inert(amendment_markdown(row, devs)))
        devs_view.update(Text(inert("\n".join(
            f"deviation {d['id']} ({str(d['created_at'])[:19]}): {d['text']}" for d in devs)
            or (f"no deviations on {row['id']}" + (": d logs one" if row["state"] == "frozen"
                                                   else " (a draft is edited instead)")))))
        self._load_pins(row["id"])
        if self.query_one("#prereg-view", TabbedContent).active == "tab-outcomes":
            self.action_outcomes()

    @work(thread=True, exclusive=True, group="prereg-pins")
    def _load_pins(self, amendment_id: str) -> None:
        try:
            with self._db() as db:
                row = rows.amendment(db, amendment_id)
                if row["state"] != "frozen":
                    text = Text(f"{amendment_id} is a draft: nothing is pinned yet; f shows "
                                f"what freezing would pin.\n")
                else:
                    models = load_registry(self.lab.config_path)
                    changes = prereg.pin_changes(db, row, models)
                    text = self._pins_report(row, changes, prereg.prompt_diffs(row, db),
                                             bool(rows.deviations(db, amendment_id)))
        except LabError as exc:
            text = Text(f"✗ {exc}\n")
        self.post_read(self.PinsRead(amendment_id, text))

    @staticmethod
    def _pins_report(row: dict[str, Any], changes: list[str], diffs: dict[str, str],
                     deviated: bool) -> Text:
        out = Text()
        if changes:
            out.append(f"✗ CHANGED since {row['id']} was frozen ({len(changes)}):\n",
                       style="bold red")
            out.append("".join(f"  {c}\n" for c in changes))
            out.append(("  a deviation is logged: its runs may proceed\n" if deviated else
                        "  enqueue is refused until a deviation is logged (d)\n"), style="bold")
            out.append("\n")
            out.append_text(diff_text(diffs))
        else:
            out.append(f"✓ every pin matches what {row['id']} pinned\n\n", style="bold")
        out.append(f"Pinned at freeze ({row['frozen_at']}):\n", style="bold")
        out.append_text(pins_text(row.get("pins") or {}))
        out.append(f"data at freeze: {existed_line(row.get('data_existed'))}\n")
        return out

    def on_prereg_screen_pins_read(self, message: PinsRead) -> None:
        """Show the pins (if that amendment is still the one selected)."""
        if message.amendment_id == self._selected:
            self.query_one("#prereg-pins", Static).update(self._verify + Text("\n\n")
                                                          + message.text)

    # ---- outcomes and verify ---------------------------------------------------------

    def action_outcomes(self) -> None:
        """Evaluate the selected amendment's registered tests (in a worker)."""
        self.query_one("#prereg-view", TabbedContent).active = "tab-outcomes"
        if self._selected is None:
            return
        self._outcomes_for = None
        self._show_outcomes(Text(f"evaluating the registered tests of {self._selected}…"))
        self._compute_outcomes(self._selected, self.lab.outcome_resamples)

    @work(thread=True, exclusive=True, group="prereg-outcomes")
    def _compute_outcomes(self, amendment_id: str, n_boot: int) -> None:
        from analysis.measures.frames import load_frames
        from analysis.prereg.outcomes import evaluate

        try:
            with self._db() as db:
                row = rows.amendment(db, amendment_id)
                results = evaluate(row, load_frames(db), n_boot=n_boot)
        except LabError as exc:
            self._error(str(exc))
            return
        head = Text(f"{amendment_id}: {len(results)} registered tests"
                    + ("" if row["state"] == "frozen" else
                       " (DRAFT: not frozen, these verdicts govern nothing)")
                    + f" · {n_boot} resamples\n\n", style="bold")
        self.post_read(self.OutcomesRead(amendment_id, head + outcome_text(results)))

    def on_prereg_screen_outcomes_read(self, message: OutcomesRead) -> None:
        """Show the outcomes (if that amendment is still the one selected)."""
        if message.amendment_id == self._selected:
            self._outcomes_for, self._outcomes_text = message.amendment_id, message.text
            self._show_outcomes(message.text)

    def _show_outcomes(self, text: Text) -> None:
        """Show `text` on the Outcomes tab, each wrapped line continuing under the
        verdict's text (column 7), not at the left edge."""
        self.query_one("#prereg-outcomes", HangingStatic).show(text)

    def action_verify(self) -> None:
        """Recompute the whole document's hash chain and pins (in a worker)."""
        self.query_one("#prereg-view", TabbedContent).active = "tab-pins"
        self._run_verify()

    @work(thread=True, exclusive=True, group="prereg-verify")
    def _run_verify(self) -> None:
        try:
            with self._db() as db:
                problems = prereg.verify(db, load_registry(self.lab.config_path))
                frozen = sum(r["state"] == "frozen" for r in rows.amendments(db))
        except LabError as exc:
            self._error(str(exc))
            return
        if problems:
            text = Text(f"✗ verify: {plural(len(problems), 'problem')}\n", style="bold red")
            text.append("".join(f"  {p.amendment}: {p.what}\n" for p in problems))
        else:
            text = Text(f"✓ verify: ok: {plural(frozen, 'frozen amendment')}, chain and pins "
                        "intact\n",
                        style="bold")
        self.post_message(self.Verified(text, len(problems)))

    def on_prereg_screen_verified(self, message: Verified) -> None:
        """Keep the verify report above the pins and say how it went."""
        self._verify, problems = message.text, message.problems
        self.notify(f"verify: {problems} problems" if problems else "verify: ok",
                    severity="error" if problems else "information")
        self._show_selected()

    # ---- writing: new, edit, freeze, deviation ----------------------------------------

    def action_new(self) -> None:
        """Ask for a title and append a new draft."""
        def created(title: str | None) -> None:
            if title is not None:
                self._create(title)
        self.app.push_screen(TitlePrompt("Title of the new draft amendment:",
                                         "e.g. Enforced rule beats none on test300"), created)

    @work(thread=True, group="prereg-write")
    def _create(self, title: str) -> None:
        try:
            with self._write_db("create a draft") as db:
                amendment_id = prereg.create(db, title)
        except LabError as exc:
            self._error(str(exc))
            return
        self.post_message(self.Created(amendment_id))

    def on_prereg_screen_created(self, message: Created) -> None:
        """Select the new draft and open the editor on it once the list is read."""
        amendment_id = message.amendment_id
        self.notify(f"draft {amendment_id} created: write its body, tests and scope")
        self._selected = self._edit_after_load = amendment_id
        self._filter = ""
        self._load()

    def action_edit(self) -> None:
        """Edit the selected draft."""
        row = self._row(self._selected)
        if row is None:
            return
        if row["state"] != "draft":
            self.notify(f"{row['id']} is frozen and can never change; log a deviation (d) "
                        f"or write a new amendment (n)", severity="error")
            return
        self._open_editor(row["id"])

    def _open_editor(self, amendment_id: str) -> None:
        row = self._row(amendment_id)
        if row is None:
            return
        self.query_one("#prereg-right", ContentSwitcher).current = "prereg-editor"
        kept = self._kept.get(amendment_id)
        self.query_one(PreregEditor).load(row, kept)
        if kept is not None:
            self.notify(f"{amendment_id}: unsaved text from {kept['kept_at'][:19]} UTC is "
                        f"back (ctrl+s saves it; escape then d discards it)", timeout=8)

    def _editing(self) -> bool:
        return self.query_one("#prereg-right", ContentSwitcher).current == "prereg-editor"

    def _close_editor(self) -> None:
        self.query_one("#prereg-right", ContentSwitcher).current = "prereg-view"
        self.query_one("#prereg-list", OptionList).focus()
        self._after_leaving()

    def _after_leaving(self) -> None:
        """Run what was waiting for the editor to close (quit after "save")."""
        then, self._after_save = self._after_save, None
        if then is not None:
            then()

    def unsaved(self) -> list[str]:
        """The draft fields typed in the open editor and not saved (empty: none)."""
        return self.query_one(PreregEditor).unsaved() if self._editing_safe() else []

    def _leave_editor(self, then: Callable[[], object] | None = None) -> None:
        """Close the editor; with unsaved text ask first: save, discard or stay.

        Args:
            then: run once the editor is closed (saved or discarded); not on "stay"
                or when the save is refused (the text stays, with the error line).
        """
        editor = self.query_one(PreregEditor)
        unsaved = editor.unsaved()
        if not unsaved:
            self._after_save = then
            self._close_editor()
            return

        if self._leave_question is not None:  # already asking: that answer decides
            self._leave_then = then or self._leave_then
            return

        def answered(choice: str | None) -> None:
            then, self._leave_then, self._leave_question = self._leave_then, None, None
            if choice == "save":
                self._after_save = then
                editor.request_save()
            elif choice == "discard":
                self.notify(f"{editor.amendment_id}: unsaved {', '.join(unsaved)} discarded")
                self._forget_text(editor)
                self._after_save = then
                self._close_editor()

        self._leave_then = then
        self._leave_question = Choose(
            f"Draft {editor.amendment_id} has unsaved changes: {', '.join(unsaved)}.",
            "Leave the editor? s saves them to the draft (it stays a draft) and leaves; "
            "d throws them away for good and leaves.",
            [("s", "save", "save"), ("d", "discard", "discard"),
             ("n", "stay", "keep editing")], default="stay")
        self.app.push_screen(self._leave_question, answered)

    def guard_quit(self) -> bool:
        """Before the app quits: True when unsaved editor text holds the quit.

        The screen is then shown and asks save / discard / stay; save (once stored)
        or discard quits, stay keeps editing. False: nothing to lose, quit.
        """
        if not self.unsaved():
            return False
        if self.app.screen is not self:
            self.app.switch_mode("prereg")
        self._leave_editor(then=self.app.exit)
        return True

    def action_leave_editor(self) -> None:
        """q inside the editor: leave it like escape (asking if unsaved), never quit."""
        if self._editing():
            self._leave_editor()

    def action_save(self) -> None:
        """Save the draft being edited (ctrl+s)."""
        if self._editing():
            self.query_one(PreregEditor).request_save()

    def on_prereg_editor_save(self, message: PreregEditor.Save) -> None:
        """Validate and write the changed fields."""
        if not message.fields:
            self.notify(f"{message.amendment_id}: nothing changed")
            self._forget_text(self.query_one(PreregEditor))
            self._close_editor()
            return
        self._save(message.amendment_id, message.fields)

    def on_prereg_screen_refused(self, message: Refused) -> None:
        """The library refused the save: the text stays, nothing waits on the editor."""
        self._after_save = None
        self.query_one(PreregEditor).show_error(message.error)

    @work(thread=True, group="prereg-write")
    def _save(self, amendment_id: str, fields: dict[str, Any]) -> None:
        try:
            with self._write_db(f"save {amendment_id}") as db:
                prereg.edit(db, amendment_id, **fields)
        except LabError as exc:
            self.post_message(self.Refused(str(exc)))
            return
        self.post_message(self.Saved(amendment_id, sorted(fields)))

    def on_prereg_screen_saved(self, message: Saved) -> None:
        """Close the editor and re-read."""
        self.notify(f"{message.amendment_id} saved ({', '.join(message.fields)})")
        self._forget_text(self.query_one(PreregEditor))
        self._close_editor()
        self._load()

    # ---- unsaved text kept in lab.db, scope from the Enqueue grid --------------------

    def _forget_text(self, editor: PreregEditor) -> None:
        """The editor's text was saved or discarded: drop what was kept of it."""
        amendment_id = editor.amendment_id
        editor.forget_kept()
        if amendment_id is not None and self.lab_app.read_only is None:
            self._kept.pop(amendment_id, None)
            self._keep_text(amendment_id, None)

    def on_prereg_editor_keep(self, message: PreregEditor.Keep) -> None:
        """Keep (or forget) the editor's unsaved text, in a worker."""
        if self.lab_app.read_only is None:
            self._keep_text(message.amendment_id, message.texts)

    @work(thread=True, group="prereg-keep")
    def _keep_text(self, amendment_id: str, texts: dict[str, str] | None) -> None:
        try:
            with self._write_db(f"keep the unsaved text of {amendment_id}") as db:
                if texts is None:
                    rows.drop_draft_text(db, amendment_id)
                else:
                    rows.keep_draft_text(db, amendment_id, texts)
                kept = rows.kept_draft_text(db, amendment_id)
        except LabError as exc:
            self._error(str(exc))
            return
        self.post_message(self.KeptText(amendment_id, kept))

    def on_prereg_screen_kept_text(self, message: KeptText) -> None:
        """Remember what lab.db keeps, for the next time the editor opens on it."""
        if message.texts is None:
            self._kept.pop(message.amendment_id, None)
        else:
            self._kept[message.amendment_id] = message.texts

    def action_scope_from_grid(self) -> None:
        """ctrl+g in the editor: the Scope becomes the grid picked on the Enqueue screen
        (its models, conditions with knobs, regimes, question set and budgets)."""
        if not self._editing():
            return
        enqueue = self.lab_app.mode_screen("enqueue")
        grid_scope = getattr(enqueue, "grid_scope", None)
        if grid_scope is None:
            self.notify("no grid to copy yet: pick one on Enqueue (3), then ctrl+g here",
                        severity="warning")
            return
        try:
            scope = grid_scope()
        except LabError as exc:
            self.notify(f"the Enqueue grid cannot be a scope: {exc}", severity="warning")
            return
        self.query_one(PreregEditor).fill_scope(scope)
        self.notify("Scope filled from the Enqueue grid (ctrl+s saves it)")

    def action_freeze(self) -> None:
        """Show what freezing the selected draft pins; `y` freezes it."""
        row = self._row(self._selected)
        if row is None:
            return
        if row["state"] != "draft":
            self.notify(f"{row['id']} is already frozen (at {row['frozen_at']})",
                        severity="error")
            return
        if not row["scope"]:
            self.notify(f"{row['id']} has no scope: say which runs it governs (e, Scope tab) "
                        f"before freezing", severity="error")
            return
        self._prepare_freeze(row["id"])

    @work(thread=True, exclusive=True, group="prereg-freeze")
    def _prepare_freeze(self, amendment_id: str) -> None:
        try:
            with self._db() as db:
                row = rows.amendment(db, amendment_id)
                pins = prereg.pins_for(db, row["scope"], load_registry(self.lab.config_path))
                existed = existed_line(prereg.existing_data(db, row["scope"]))
        except LabError as exc:
            self._error(str(exc))
            return
        self.post_message(self.FreezeReady(amendment_id, pins_text(pins), existed))

    def on_prereg_screen_freeze_ready(self, message: FreezeReady) -> None:
        """Show what freezing pins; `y` freezes."""
        amendment_id = message.amendment_id

        def answered(yes: bool | None) -> None:
            if yes:
                self._freeze(amendment_id)
        self.app.push_screen(FreezeConfirm(amendment_id, message.pinned, message.existed),
                             answered)

    @work(thread=True, group="prereg-write")
    def _freeze(self, amendment_id: str) -> None:
        try:
            with self._write_db(f"freeze {amendment_id}") as db:
                frozen = prereg.freeze(db, amendment_id, load_registry(self.lab.config_path))
        except LabError as exc:
            self._error(str(exc))
            return
        existed = frozen["data_existed"]
        self.post_message(self.Frozen(
            f"{amendment_id} frozen at {frozen['frozen_at'][:19]} UTC, sha256 "
            f"{frozen['content_sha256'][:16]}…" + (
                f"; data existed at freeze: {sum(d['episodes'] for d in existed):,} episodes"
                if existed else "")))

    def on_prereg_screen_frozen(self, message: Frozen) -> None:
        """Say so and re-read."""
        self.notify(message.text)
        self._load()

    def action_deviation(self) -> None:
        """Open the one-line input to log a deviation on the selected frozen amendment."""
        row = self._row(self._selected)
        if row is None:
            return
        if row["state"] != "frozen":
            self.notify(f"{row['id']} is a draft: edit it instead of logging a deviation",
                        severity="error")
            return
        self.query_one("#prereg-view", TabbedContent).active = "tab-devs"
        box = self.query_one("#prereg-dev-input", Input)
        box.value = ""
        box.add_class("-open")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the deviation input logs it; in the filter it goes to the list."""
        if event.input.id == "prereg-dev-input":
            event.stop()
            if not event.value.strip():
                self.notify("a deviation needs a non-empty text", severity="error")
                return
            if self._selected is not None:
                self._confirm_deviation(self._selected, event.value.strip())
        elif event.input.id == "prereg-filter":
            event.stop()
            self.query_one("#prereg-list", OptionList).focus()

    def _confirm_deviation(self, amendment_id: str, text: str) -> None:
        """A deviation is appended for good: show it and ask before logging it."""
        def answered(yes: bool | None) -> None:
            if yes:
                self._add_deviation(amendment_id, text)
            else:
                self.query_one("#prereg-dev-input", Input).focus()  # the text stays

        self.app.push_screen(Confirm(
            f"Log this deviation on frozen amendment {amendment_id} for good?",
            f"«{text}»\nA deviation is appended to {amendment_id}'s record and can never be "
            f"edited or removed.", yes="log it"), answered)

    @work(thread=True, group="prereg-write")
    def _add_deviation(self, amendment_id: str, text: str) -> None:
        try:
            with self._write_db(f"log a deviation on {amendment_id}") as db:
                dev = rows.add_deviation(db, amendment_id, text)
        except LabError as exc:
            self._error(str(exc))
            return
        self.post_message(self.DeviationAdded(amendment_id, dev))

    def on_prereg_screen_deviation_added(self, message: DeviationAdded) -> None:
        """Say so, close the input and re-read."""
        self.notify(f"deviation {message.dev} logged on {message.amendment_id}")
        self._hide_input("#prereg-dev-input")
        self._load()

    # ---- navigation ------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter the list as the person types."""
        if event.input.id == "prereg-filter":
            self._filter = event.value
            self._fill_table()

    def action_filter(self) -> None:
        """Open the list filter."""
        box = self.query_one("#prereg-filter", Input)
        box.add_class("-open")
        box.focus()

    def _hide_input(self, selector: str) -> None:
        box = self.query_one(selector, Input)
        box.remove_class("-open")
        self.query_one("#prereg-list", OptionList).focus()

    def action_cursor(self, step: int) -> None:
        """Move the list cursor (j/k)."""
        listing = self.query_one("#prereg-list", OptionList)
        if step > 0:
            listing.action_cursor_down()
        else:
            listing.action_cursor_up()

    def action_next_tab(self) -> None:
        """Show the next tab."""
        tabs = self.query_one("#prereg-view", TabbedContent)
        tabs.active = TABS[(TABS.index(tabs.active) + 1) % len(TABS)]

    def action_back(self) -> None:
        """Escape: leave the editor, close an input, or go back to the document."""
        if self._editing():
            self._leave_editor()
            return
        for selector in ("#prereg-dev-input", "#prereg-filter"):
            if self.query_one(selector, Input).has_class("-open"):
                if selector == "#prereg-filter":
                    self.query_one(selector, Input).value = ""
                self._hide_input(selector)
                return
        self.query_one("#prereg-view", TabbedContent).active = "tab-doc"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Outside the editor the list keys work; inside it only save, back and q (leave)."""
        if self._editing_safe():
            return action in ("save", "back", "reload", "leave_editor", "scope_from_grid")
        if action in ("save", "leave_editor", "scope_from_grid"):
            return False  # q falls through to the app: quit
        return super().check_action(action, parameters)  # write keys dimmed when read-only

    def _editing_safe(self) -> bool:
        try:
            return self._editing()
        except NoMatches:  # asked before compose: no editor yet
            return False
