"""The draft editor of the Pre-registration screen: title, body, tests JSON, scope JSON.

The editor only holds text. On `ctrl+s` it posts `Save` with the fields that
changed (JSON parsed); the screen validates and writes them through core.prereg in
a worker and calls `show_error` with the library's one line when they are refused,
so nothing is half-saved and the text stays for the person to fix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static, TabbedContent, TabPane, TextArea

from core.errors import ConfigError

EXAMPLES = MappingProxyType({
    "tests": '[] or [{"id": "H1", "kind": "paired_diff", "metric": "mean6", '
             '"a": "enforced_rule", "b": "none"}]',
    "scope": '{"models": ["sim-own5"], "conditions": ["none"], "regimes": ["clean"], '
             '"question_sets": ["dev100"], "budgets": [8]}',
})


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
    """Edits one draft amendment; `Save` goes up to the screen (escape there cancels)."""

    @dataclass
    class Save(Message):
        """The person asked to save; `fields` holds only what changed."""

        amendment_id: str
        fields: dict[str, Any]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._original: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        """Title line, the three sections in tabs, the error line and the keys."""
        yield Static("", id="editor-head")
        yield Input(placeholder="title", id="editor-title")
        with TabbedContent(id="editor-tabs"):
            with TabPane("Body (markdown)", id="editor-tab-body"):
                yield TextArea(id="editor-body")
            with TabPane("Tests (JSON list)", id="editor-tab-tests"):
                yield TextArea(id="editor-tests")
            with TabPane("Scope (JSON)", id="editor-tab-scope"):
                yield TextArea(id="editor-scope")
        yield Static("", id="editor-error", classes="error-line")
        yield Static("ctrl+s save · escape cancel · tab next field", id="editor-keys")

    @property
    def amendment_id(self) -> str | None:
        """The draft being edited (None before `load`)."""
        return self._original.get("id")

    def load(self, row: Mapping[str, Any]) -> None:
        """Fill the editor from a draft row and focus the body."""
        self._original = dict(row)
        self.query_one("#editor-head", Static).update(f"Editing draft {row['id']}")
        self.query_one("#editor-title", Input).value = row["title"]
        self.query_one("#editor-body", TextArea).text = row.get("body") or ""
        self.query_one("#editor-tests", TextArea).text = json.dumps(row.get("tests") or [],
                                                                   indent=2)
        self.query_one("#editor-scope", TextArea).text = json.dumps(row.get("scope") or {},
                                                                   indent=2)
        self.show_error("")
        self.query_one("#editor-tabs", TabbedContent).active = "editor-tab-body"
        self.query_one("#editor-body", TextArea).focus()

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
