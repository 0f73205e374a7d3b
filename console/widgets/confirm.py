"""A one-key confirmation for destructive actions: `y` does it, anything else does not."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class Confirm(ModalScreen[bool]):
    """Ask one question; dismisses with True on `y`, False on `n`, escape or `q`.

    Args:
        question: what will happen, in one or two lines.
        detail: optional lines shown under it (what gets changed).
    """

    DEFAULT_CSS = """
    Confirm {
        align: center middle;
    }
    Confirm > Vertical {
        width: auto;
        max-width: 90%;
        height: auto;
        border: heavy $warning;
        padding: 0 1;
        background: $surface;
    }
    Confirm .confirm-keys {
        text-style: bold;
    }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes, do it"),
                Binding("n", "answer(False)", "No"),
                Binding("escape", "answer(False)", "Cancel"),
                Binding("q", "answer(False)", "Cancel", show=False)]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self._question = question
        self._detail = detail

    def compose(self) -> ComposeResult:
        """The question, its detail and the keys."""
        with Vertical():
            yield Static(self._question, markup=False)
            if self._detail:
                yield Static(self._detail, markup=False)
            yield Static("y = yes, do it    n / escape = no", classes="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)
