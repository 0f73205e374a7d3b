"""Sets: the question sets and datasets Enqueue draws on, made without the CLI
(docs/data.md).

A view on Enqueue: `s` there opens it, Escape goes back with a newly created set
picked in Enqueue's set list (its preview then plans on it). Two tables: the
datasets (task, questions, sets drawn, questions in no set yet) and the question
sets (dataset, n, seed, dev or held-out, excluded sets, hash). `c` asks for a new
set (name, dataset, n, seed, exclude, dev/held-out), draws it in a worker and shows
what it drew before `y` stores it; `i` asks for a HotpotQA file or FEVER folder,
validates it whole in a worker and says how many questions it holds before `y`
stores them in one transaction. The library calls are `lab sets create`'s and
`lab data import`'s (core.question_sets, core.data_import).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Header, Label, Static

from console.messages import Notice
from console.screens.base import LabScreen
from console.widgets.confirm import Confirm
from console.widgets.footer import LabFooter
from console.widgets.measured_table import MeasuredTable
from console.widgets.sets_forms import ImportForm, ImportRequest, SetForm, SetRequest
from console.widgets.sets_render import created_text, import_confirm, imported_text, set_confirm
from core.data_import import DataFile, already_stored, check_task, read_data_file, store_data_file
from core.errors import LabError
from core.inert import inert
from core.limits import DEFAULT_WARN_KB, oversized
from core.question_sets import DatasetInfo, SetDraft, draw_set, overview, save_set
from core.wording import plural


class SetsScreen(LabScreen):
    """Datasets and question sets: list them, create a set, import a data file."""

    CSS_PATH = "sets.tcss"
    WRITE_ACTIONS = frozenset({"create", "import_file"})
    BINDINGS = [
        Binding("c", "create", "New set"),
        Binding("i", "import_file", "Import file"),
        Binding("escape", "back", "Back to Enqueue"),
    ]
    FOOTER_KEYS = ("create", "import_file", "back")
    """The footer's keys, most essential first (LabFooter keeps these and ? q)."""

    @dataclass
    class Read(Message):
        """The datasets and question sets were read."""

        datasets: list[DatasetInfo]
        sets: list[dict[str, Any]]

    @dataclass
    class Refused(Message):
        """The library refused a form's request: its error, and the form again."""

        error: str
        request: SetRequest | ImportRequest

    @dataclass
    class Drawn(Message):
        """A new set was drawn (not stored yet): confirm it."""

        draft: SetDraft

    @dataclass
    class Saved(Message):
        """A drawn set was stored."""

        draft: SetDraft

    @dataclass
    class FileRead(Message):
        """A data file was read and checked whole (not stored yet): confirm it."""

        data: DataFile
        already: int
        big: list[tuple[str, int]]

    @dataclass
    class Imported(Message):
        """A data file's questions were stored (the toast says how many)."""

        text: str

    def __init__(self) -> None:
        super().__init__()
        self._datasets: list[DatasetInfo] = []
        self._sets: list[dict[str, Any]] = []
        self.created: str | None = None
        """The last set created here (Enqueue picks it when this view closes)."""

    def screen_name(self) -> str:
        """A view on Enqueue: `3 Enqueue › Sets`."""
        from console.screens import SCREENS

        key = next(i for i, info in enumerate(SCREENS, start=1) if info.mode == "enqueue")
        return f"{key} Enqueue › Sets"

    def compose(self) -> ComposeResult:
        """Header, the two tables, footer."""
        yield Header()
        yield Static("reading…", id="sets-status", markup=False)
        yield Label("Datasets", classes="sets-head", markup=False)
        yield MeasuredTable(id="sets-datasets", cursor_type="row", zebra_stripes=True)
        yield Label("Question sets", classes="sets-head", markup=False)
        yield MeasuredTable(id="sets-sets", cursor_type="row", zebra_stripes=True)
        yield LabFooter()

    def on_mount(self) -> None:
        """The tables' columns, then the first read."""
        self.query_one("#sets-datasets", DataTable).add_columns(
            "dataset", "task", "questions", "sets", "in no set")
        self.query_one("#sets-sets", DataTable).add_columns(
            "set", "dataset", "n", "seed", "kind", "exclude", "sha256")
        self.query_one("#sets-datasets", DataTable).focus()
        super().on_mount()

    # ---- reading ---------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read the datasets and sets."""
        self._load()

    @work(thread=True, exclusive=True, group="sets-read")
    def _load(self) -> None:
        try:
            with self._db() as db:
                datasets, sets = overview(db)
        except LabError as exc:
            self.post_message(Notice(str(exc), severity="error"))
            return
        self.post_read(self.Read(datasets, sets))

    def on_sets_screen_read(self, message: Read) -> None:
        """Fill both tables, keeping each cursor on its row."""
        datasets, sets = message.datasets, message.sets
        self._datasets, self._sets = datasets, sets
        table = self.query_one("#sets-datasets", DataTable)
        keep = self._cursor_key(table)
        table.clear()
        for d in datasets:
            table.add_row(inert(d.name), inert(d.task), f"{d.questions:,}", str(d.sets),
                          f"{d.unused:,}", key=d.name)
        self._restore(table, keep)
        table = self.query_one("#sets-sets", DataTable)
        keep = self.created or self._cursor_key(table)
        table.clear()
        for s in sets:
            table.add_row(inert(s["name"]), inert(s["dataset"]), f"{s['n']:,}", str(s["seed"]),
                          "HELD-OUT" if s["held_out"] else "dev",
                          inert(", ".join(_names(s["exclude"])) or "-"), s["sha256"][:8],
                          key=s["name"])
        self._restore(table, keep)
        self.query_one("#sets-status", Static).update(
            f"{plural(len(datasets), 'dataset')} · {plural(len(sets), 'question set')} · "
            f"enter on a dataset: a set from it" if datasets else
            "no questions in lab.db yet: i imports a HotpotQA file or a FEVER folder")

    @staticmethod
    def _cursor_key(table: DataTable) -> str | None:
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    @staticmethod
    def _restore(table: DataTable, key: str | None) -> None:
        if key is None:
            return
        try:
            table.move_cursor(row=table.get_row_index(key))
        except LookupError:
            pass  # that row is gone: the cursor stays on the first

    # ---- a new set -------------------------------------------------------------------

    def _dataset_choice(self) -> str | None:
        """The dataset the new set starts from: the highlighted one, else the first."""
        table = self.query_one("#sets-datasets", DataTable)
        return self._cursor_key(table) if table.has_focus else None

    def action_create(self, initial: SetRequest | None = None) -> None:
        """`c`: ask for the new set's name, dataset, n, seed, exclude and kind."""
        if not self._datasets:
            self.notify("no dataset to draw from: i imports a data file first",
                        severity="warning")
            return
        first = self._dataset_choice()
        datasets = [(d.name, f"{d.name}  {d.questions:,} {d.task}, {d.unused:,} in no set")
                    for d in sorted(self._datasets, key=lambda d: d.name != first)]

        def answered(request: object) -> None:
            if isinstance(request, SetRequest):
                self._draw(request)

        self.app.push_screen(SetForm(datasets, [s["name"] for s in self._sets], initial),
                             answered)

    @work(thread=True, exclusive=True, group="sets-draw")
    def _draw(self, request: SetRequest) -> None:
        try:
            with self._db() as db:
                draft = draw_set(db, request.name, request.dataset, request.n, request.seed,
                                 request.exclude, request.held_out)
        except LabError as exc:
            self.post_message(self.Refused(str(exc), request))
            return
        self.post_read(self.Drawn(draft))

    def on_sets_screen_refused(self, message: Refused) -> None:
        """One toast for the error, and the form again with what was typed."""
        self.notify(message.error, severity="error", timeout=10)
        if isinstance(message.request, SetRequest):
            self.action_create(message.request)
        else:
            self.action_import_file(message.request)

    def on_sets_screen_drawn(self, message: Drawn) -> None:
        """Show what was drawn; `y` stores it."""
        draft = message.draft
        question, detail, yes = set_confirm(draft)

        def answered(create: bool | None) -> None:
            if create:
                self._save(draft)

        self.app.push_screen(Confirm(question, detail, yes), answered)

    @work(thread=True, group="sets-write")
    def _save(self, draft: SetDraft) -> None:
        try:
            with self._write_db(f"create set {draft.name}") as db:
                save_set(db, draft)
        except LabError as exc:
            self.post_message(Notice(str(exc), severity="error", timeout=10))
            return
        self.post_message(self.Saved(draft))

    def on_sets_screen_saved(self, message: Saved) -> None:
        """Remember the set for Enqueue, say so, re-read."""
        draft = message.draft
        self.created = draft.name
        self.notify(created_text(draft) + " · escape: Enqueue with it picked", timeout=8)
        self.reload()

    # ---- importing a file ------------------------------------------------------------

    def action_import_file(self, initial: ImportRequest | None = None) -> None:
        """`i`: ask for a data file (HotpotQA) or folder (FEVER) to import."""

        def answered(request: object) -> None:
            if isinstance(request, ImportRequest):
                self._read(request)

        self.app.push_screen(ImportForm(initial), answered)

    @work(thread=True, exclusive=True, group="sets-draw")
    def _read(self, request: ImportRequest) -> None:
        try:
            data = read_data_file(request.kind, request.path, request.dataset,
                                  request.include_nei)
            with self._db() as db:
                check_task(db, data.dataset, data.questions)
                already = already_stored(db, data)
        except (LabError, OSError, ValueError) as exc:  # OSError/ValueError: an odd path
            self.post_message(self.Refused(str(exc), request))
            return
        self.post_message(self.FileRead(data, already, oversized(data.questions,
                                                                 DEFAULT_WARN_KB)))

    def on_sets_screen_file_read(self, message: FileRead) -> None:
        """Say how many questions the file holds; `y` stores them."""
        data = message.data
        question, detail, yes = import_confirm(data, message.already, message.big)

        def answered(store_it: bool | None) -> None:
            if store_it:
                self._store(data)

        self.app.push_screen(Confirm(question, detail, yes), answered)

    @work(thread=True, group="sets-write")
    def _store(self, data: DataFile) -> None:
        try:
            with self._write_db(f"import {data.path}") as db:
                new, same = store_data_file(db, data)
        except LabError as exc:
            self.post_message(Notice(str(exc), severity="error", timeout=10))
            return
        self.post_message(self.Imported(imported_text(data, new, same)))

    def on_sets_screen_imported(self, message: Imported) -> None:
        """Say what was stored and re-read."""
        self.notify(message.text, timeout=8)
        self.reload()

    # ---- leaving ---------------------------------------------------------------------

    @on(DataTable.RowSelected, "#sets-datasets")
    def _dataset_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a dataset: a new set drawn from it."""
        event.stop()
        reason = self.lab_app.read_only
        if reason is not None:  # as the dimmed `c` says
            self.notify(f"New set: not possible, the console is read-only: {reason}",
                        severity="warning", timeout=8)
            return
        self.action_create()

    def action_back(self) -> None:
        """Escape: back to Enqueue (which picks `created`, the set made here)."""
        self.dismiss()


def _names(value: object) -> list[str]:
    """A set's `exclude` as stored (a JSON list, or already decoded)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [str(value)]
    return [str(v) for v in value] if isinstance(value, list) else []
