"""The draft editor of the Pre-registration screen: title, body, tests JSON, scope JSON.

The editor only holds text. On `ctrl+s` it posts `Save` with the fields that
changed (JSON parsed); the screen validates and writes them through core.prereg in
a worker and calls `show_error` with the library's one line when they are refused,
so nothing is half-saved and the text stays for the person to fix.

Tests and Scope open as the commented templates of `core.amendment_template` (every
kind, field and allowed value, `//` notes dropped on save) and are checked as they
are typed: the check line says what is valid, or the first error and its line. While
text is unsaved the editor asks the screen (`Keep`, after a pause in typing) to keep
it in lab.db, so a console that closes or dies loses nothing; opening the draft again
brings it back.

It knows what is unsaved (`unsaved()`, compared with the text it loaded): each
changed section's tab and the head line carry a `*` marker, and the screen asks
before leaving with unsaved text. Tab / shift+tab cycle Title → Body → Tests →
Scope inside the editor (switching the section tab), never out of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Static, TabbedContent, TabPane, Tabs, TextArea

from core.amendment_template import (
    TextError,
    parse_notes_json,
    read_scope,
    read_tests,
    scope_template,
    tests_template,
)
from core.errors import ConfigError
from core.wording import plural

FIELDS = ("title", "body", "tests", "scope")
"""The editor's fields in Tab order; each is the widget `#editor-<name>`."""
TAB_LABELS = MappingProxyType({"body": "Body", "tests": "Tests (JSON)",
                               "scope": "Scope (JSON)"})
"""Short enough that the three tabs and their markers fit beside the list at 80 columns."""
MODIFIED = " *"


def changed_fields(original: Mapping[str, Any], title: str, body: str, tests: str,
                   scope: str) -> dict[str, Any]:
    """The fields whose text differs from `original`, JSON sections parsed.

    Raises:
        ConfigError: an empty title or invalid JSON, naming the section; nothing
            should be written then.
    """
    if not title.strip():
        raise ConfigError("an amendment needs a non-empty title; nothing was changed")
    out: dict[str, Any] = {}
    if title.strip() != original["title"]:
        out["title"] = title.strip()
    if body.rstrip("\n") != (original.get("body") or "").rstrip("\n"):
        out["body"] = body.rstrip("\n")
    for key, text, kind in (("tests", tests, "JSON list"), ("scope", scope, "JSON object")):
        try:
            value = parse_notes_json(text, key, kind)
        except TextError as exc:
            raise ConfigError(f"{exc}; nothing was changed") from None
        if value != original.get(key):
            out[key] = value
    return out


def to_value(area: TextArea) -> None:
    """A cursor still at the top of Tests or Scope goes to the JSON value, past the
    template's head notes (inside an empty `[]` or `{}`), where typing starts."""
    if area.cursor_location != (0, 0):
        return
    for row, line in enumerate(area.text.splitlines()):
        if line.strip() and not line.lstrip().startswith("//"):
            area.move_cursor((row, 1 if line.strip() in ("[]", "{}") else 0))
            return


class PreregEditor(Vertical):
    """Edits one draft amendment; `Save` goes up to the screen (escape there asks/leaves)."""

    BINDINGS = [Binding("tab", "cycle(1)", "Next field", show=False),
                Binding("shift+tab", "cycle(-1)", "Previous field", show=False)]

    @dataclass
    class Save(Message):
        """The person asked to save; `fields` holds only what changed."""

        amendment_id: str
        fields: dict[str, Any]

    @dataclass
    class Keep(Message):
        """Unsaved text to keep in lab.db (`texts` None: nothing unsaved, forget it)."""

        amendment_id: str
        texts: dict[str, str] | None

    KEEP_AFTER_S = 1.0
    """Seconds without typing before unsaved text is kept (the screen may change it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._original: dict[str, Any] = {}
        self._loaded: dict[str, str] = {}
        self._marked: tuple[str, ...] = ()
        self._keep_timer: Timer | None = None
        self._kept: dict[str, str] | None = None
        self.names: tuple[Sequence[str], Sequence[str]] = ((), ())
        """The registry's models and lab.db's question sets, listed in the Scope notes."""

    def compose(self) -> ComposeResult:
        """Title line, the three sections in tabs, the error line and the keys."""
        yield Static("", id="editor-head", markup=False)
        # select_on_focus off: Tab into the title, then a key, must not replace it
        yield Input(placeholder="title", id="editor-title", select_on_focus=False)
        with TabbedContent(id="editor-tabs"):
            for name, label in TAB_LABELS.items():
                with TabPane(label, id=f"editor-tab-{name}"):
                    yield TextArea(id=f"editor-{name}")
        yield Static("", id="editor-check", markup=False)
        yield Static("", id="editor-error", classes="error-line", markup=False)
        yield Static("ctrl+s save · ctrl+g scope from the Enqueue grid · escape/q leave "
                     "(asks if unsaved) · tab next field", id="editor-keys", markup=False)

    def on_mount(self) -> None:
        """The section tabs are reached with Tab from a field, so the tab bar takes no focus
        (a focused tab bar would pass `q` to the app)."""
        self.query_one("#editor-tabs Tabs", Tabs).can_focus = False

    @property
    def amendment_id(self) -> str | None:
        """The draft being edited (None before `load`)."""
        return self._original.get("id")

    def load(self, row: Mapping[str, Any], kept: Mapping[str, str] | None = None) -> None:
        """Fill the editor from a draft row and focus the body.

        Args:
            row: the draft as stored.
            kept: unsaved text kept from an earlier session (`Keep`): shown instead of
                the stored fields, and unsaved until ctrl+s.
        """
        if self._keep_timer is not None:
            self._keep_timer.stop()
        self._original = dict(row)
        models, sets = self.names
        self._loaded = {"title": row["title"], "body": row.get("body") or "",
                        "tests": tests_template(row.get("tests") or []),
                        "scope": scope_template(row.get("scope") or {}, models, sets)}
        shown = {name: (kept or self._loaded)[name] for name in FIELDS}
        self._kept = dict(kept) if kept else None
        self.query_one("#editor-title", Input).value = shown["title"]
        for name in TAB_LABELS:
            self.query_one(f"#editor-{name}", TextArea).text = shown[name]
        self.show_error("")
        self._show_marks()
        self.check()
        self.query_one("#editor-tabs", TabbedContent).active = "editor-tab-body"
        self.query_one("#editor-body", TextArea).focus()

    def fill_scope(self, scope: Mapping[str, Any]) -> None:
        """Replace the Scope text with `scope` (and its notes) and show that tab."""
        models, sets = self.names
        area = self.query_one("#editor-scope", TextArea)
        area.text = scope_template(scope, models, sets)
        self.query_one("#editor-tabs", TabbedContent).active = "editor-tab-scope"
        self.call_after_refresh(area.focus)

    def check(self) -> None:
        """Check Tests and Scope as typed: the first error with its line, or what is valid.

        Tests are checked against the scope when the scope is valid (a test may only
        name what the scope governs)."""
        line = self.query_one("#editor-check", Static)
        scope: dict[str, Any] = {}
        problems: list[str] = []
        try:
            scope = read_scope(self._text("scope"))
        except TextError as exc:
            problems.append(f"✗ Scope {exc}")
        try:
            tests = read_tests(self._text("tests"), scope)
        except TextError as exc:
            problems.insert(0 if self._active() == "tests" else 1, f"✗ Tests {exc}")
        if problems:
            line.update(problems[0] + (" (and Scope has an error)" if len(problems) > 1
                                       and "Scope" not in problems[0] else ""))
            line.set_class(True, "-invalid")
            return
        line.set_class(False, "-invalid")
        line.update(f"✓ Tests: {len(tests)} valid · Scope: " + (
            ", ".join(plural(len(scope[k]), noun) for k, noun in
                      (("models", "model"), ("conditions", "condition"),
                       ("regimes", "regime"), ("question_sets", "question set"))) if scope else
            "not written yet (ctrl+g: from the Enqueue grid)"))

    def _active(self) -> str:
        return self.query_one("#editor-tabs", TabbedContent).active.removeprefix("editor-tab-")

    def _text(self, name: str) -> str:
        if name == "title":
            return self.query_one("#editor-title", Input).value
        return self.query_one(f"#editor-{name}", TextArea).text

    def unsaved(self) -> list[str]:
        """The fields whose text differs from what was loaded (empty: nothing to lose)."""
        if self.amendment_id is None:
            return []
        return [name for name in FIELDS if self._text(name) != self._loaded[name]]

    def _show_marks(self) -> None:
        """Mark each changed section's tab and say in the head line what is unsaved."""
        unsaved = tuple(self.unsaved())
        head = f"Editing draft {self.amendment_id}"
        if unsaved:
            head += f"{MODIFIED} unsaved: {', '.join(unsaved)} (ctrl+s saves)"
        self.query_one("#editor-head", Static).update(head)
        if unsaved == self._marked:
            return
        self._marked = unsaved
        tabs = self.query_one("#editor-tabs", TabbedContent)
        for name, label in TAB_LABELS.items():
            tabs.get_tab(f"editor-tab-{name}").label = label + (MODIFIED if name in unsaved
                                                                else "")

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """A section was typed in: update the markers, check it, keep it soon."""
        self._show_marks()
        if event.text_area.id in ("editor-tests", "editor-scope"):
            self.check()
        self._keep_soon()

    def on_input_changed(self, event: Input.Changed) -> None:
        """The title was typed in: update the markers, keep it soon."""
        if event.input.id == "editor-title":
            self._show_marks()
            self._keep_soon()

    def _keep_soon(self) -> None:
        """Keep the text after a pause in typing (restarted by every change)."""
        if self.amendment_id is None:
            return
        if self._keep_timer is not None:
            self._keep_timer.stop()
        self._keep_timer = self.set_timer(self.KEEP_AFTER_S, self.keep_now)

    def keep_now(self) -> None:
        """Ask the screen to keep the unsaved text (or forget it: nothing is unsaved)."""
        self._keep_timer = None
        if self.amendment_id is None:
            return
        texts = {name: self._text(name) for name in FIELDS} if self.unsaved() else None
        if texts != self._kept:
            self._kept = texts
            self.post_message(self.Keep(self.amendment_id, texts))

    def forget_kept(self) -> None:
        """The text was saved or discarded: stop keeping it (the screen drops it)."""
        if self._keep_timer is not None:
            self._keep_timer.stop()
            self._keep_timer = None
        self._kept = None

    def action_cycle(self, step: int) -> None:
        """Tab / shift+tab: the next / previous field, showing its section tab."""
        fields = [self.query_one(f"#editor-{name}") for name in FIELDS]
        focused = self.screen.focused
        at = next((i for i, w in enumerate(fields) if focused is w), -1 if step > 0 else 0)
        target: Widget = fields[(at + step) % len(fields)]
        name = FIELDS[(at + step) % len(fields)]
        if name in TAB_LABELS:
            self.query_one("#editor-tabs", TabbedContent).active = f"editor-tab-{name}"
            if isinstance(target, TextArea):
                to_value(target)
            self.call_after_refresh(target.focus)
        else:
            target.focus()

    def show_error(self, message: str) -> None:
        """Show the line that refused the save (empty: clear it)."""
        self.query_one("#editor-error", Static).update(f"✗ {message}" if message else "")

    def request_save(self) -> None:
        """Post `Save` with the changed fields, or show why they cannot be saved."""
        if self.amendment_id is None:
            return
        try:
            fields = changed_fields(
                self._original, self.query_one("#editor-title", Input).value,
                self.query_one("#editor-body", TextArea).text,
                self.query_one("#editor-tests", TextArea).text,
                self.query_one("#editor-scope", TextArea).text)
        except ConfigError as exc:
            self.show_error(str(exc))
            return
        self.post_message(self.Save(self.amendment_id, fields))
