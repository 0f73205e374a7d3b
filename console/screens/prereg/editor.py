"""The draft editor of the Pre-registration screen: title, body, tests JSON, scope JSON.

The editor only holds text. On `ctrl+s` it posts `Save` with the fields that
changed (JSON parsed); the screen validates and writes them through core.prereg in
a worker and calls `show_error` with the library's one line when they are refused,
so nothing is half-saved and the text stays for the person to fix.

It knows what is unsaved (`unsaved()`, compared with the text it loaded): each
changed section's tab and the head line carry a `*` marker, and the screen asks
before leaving with unsaved text. Tab / shift+tab cycle Title → Body → Tests →
Scope inside the editor (switching the section tab), never out of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static, TabbedContent, TabPane, Tabs, TextArea

from core.errors import ConfigError

EXAMPLES = MappingProxyType({
    "tests": '[] or [{"id": "H1", "kind": "paired_diff", "metric": "mean6", '
             '"a": "enforced_rule", "b": "none"}]',
    "scope": '{"models": ["sim-own5"], "conditions": ["none"], "regimes": ["clean"], '
             '"question_sets": ["dev100"], "budgets": [8]}',
})
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
            value = json.loads(text) if text.strip() else None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{key}: invalid JSON for a {kind} ({exc}); "
                              f"nothing was changed") from None
        if value is None:
            raise ConfigError(f"{key}: empty; write a {kind} ({EXAMPLES[key]}); "
                              f"nothing was changed")
        if value != original.get(key):
            out[key] = value
    return out


class PreregEditor(Vertical):
    """Edits one draft amendment; `Save` goes up to the screen (escape there asks/leaves)."""

    BINDINGS = [Binding("tab", "cycle(1)", "Next field", show=False),
                Binding("shift+tab", "cycle(-1)", "Previous field", show=False)]

    @dataclass
    class Save(Message):
        """The person asked to save; `fields` holds only what changed."""

        amendment_id: str
        fields: dict[str, Any]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._original: dict[str, Any] = {}
        self._loaded: dict[str, str] = {}
        self._marked: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        """Title line, the three sections in tabs, the error line and the keys."""
        yield Static("", id="editor-head")
        # select_on_focus off: Tab into the title, then a key, must not replace it
        yield Input(placeholder="title", id="editor-title", select_on_focus=False)
        with TabbedContent(id="editor-tabs"):
            for name, label in TAB_LABELS.items():
                with TabPane(label, id=f"editor-tab-{name}"):
                    yield TextArea(id=f"editor-{name}")
        yield Static("", id="editor-error", classes="error-line")
        yield Static("ctrl+s save · escape/q leave (asks if unsaved) · tab next field",
                     id="editor-keys")

    def on_mount(self) -> None:
        """The section tabs are reached with Tab from a field, so the tab bar takes no focus
        (a focused tab bar would pass `q` to the app)."""
        self.query_one("#editor-tabs Tabs", Tabs).can_focus = False

    @property
    def amendment_id(self) -> str | None:
        """The draft being edited (None before `load`)."""
        return self._original.get("id")

    def load(self, row: Mapping[str, Any]) -> None:
        """Fill the editor from a draft row and focus the body."""
        self._original = dict(row)
        self._loaded = {"title": row["title"], "body": row.get("body") or "",
                        "tests": json.dumps(row.get("tests") or [], indent=2),
                        "scope": json.dumps(row.get("scope") or {}, indent=2)}
        self.query_one("#editor-title", Input).value = self._loaded["title"]
        for name in TAB_LABELS:
            self.query_one(f"#editor-{name}", TextArea).text = self._loaded[name]
        self.show_error("")
        self._show_marks()
        self.query_one("#editor-tabs", TabbedContent).active = "editor-tab-body"
        self.query_one("#editor-body", TextArea).focus()

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
        """A section was typed in: update the markers."""
        self._show_marks()

    def on_input_changed(self, event: Input.Changed) -> None:
        """The title was typed in: update the markers."""
        if event.input.id == "editor-title":
            self._show_marks()

    def action_cycle(self, step: int) -> None:
        """Tab / shift+tab: the next / previous field, showing its section tab."""
        fields = [self.query_one(f"#editor-{name}") for name in FIELDS]
        focused = self.screen.focused
        at = next((i for i, w in enumerate(fields) if focused is w), -1 if step > 0 else 0)
        target: Widget = fields[(at + step) % len(fields)]
        name = FIELDS[(at + step) % len(fields)]
        if name in TAB_LABELS:
            self.query_one("#editor-tabs", TabbedContent).active = f"editor-tab-{name}"
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
