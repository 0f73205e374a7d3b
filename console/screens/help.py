"""`?`: every binding of the screen underneath and of the app."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

EVERYWHERE = (("1 … 7", "switch screen"), ("ctrl+p", "command palette"),
              ("escape", "back / close"))


class HelpScreen(ModalScreen[None]):
    """A modal table of keys (key, action, where), given by the app when `?` is pressed."""

    BINDINGS = [Binding("escape", "dismiss", "Back"), Binding("q", "dismiss", "Back"),
                Binding("question_mark", "dismiss", "Back", key_display="?")]

    def __init__(self, title: str, keys: Sequence[tuple[str, str, str]]) -> None:
        super().__init__()
        self._title = title
        self._keys = keys

    def compose(self) -> ComposeResult:
        """A title and the key table."""
        yield Static(f"Keys — {self._title}   (escape closes)", id="help-title")
        yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        """Fill the table."""
        table = self.query_one(DataTable)
        table.add_columns("key", "action", "where")
        for row in self._keys:
            table.add_row(*row)
        for key, desc in EVERYWHERE:
            table.add_row(key, desc, "everywhere")
