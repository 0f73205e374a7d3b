"""Modals of the Pre-registration screen: the freeze confirmation and the new-draft title."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class FreezeConfirm(ModalScreen[bool]):
    """Confirm a freeze: lists everything it pins; `y` freezes, `n`/escape does not.

    Args:
        amendment_id: the draft to freeze.
        pinned: what gets pinned (`console.screens.prereg.render.pins_text`).
        existed: the "data existed at freeze" line.
    """

    CSS_PATH = "modals.tcss"
    BINDINGS = [Binding("y", "answer(True)", "Yes, freeze"),
                Binding("n", "answer(False)", "No"),
                Binding("escape", "answer(False)", "Cancel"),
                Binding("q", "answer(False)", "Cancel", show=False)]

    def __init__(self, amendment_id: str, pinned: Text, existed: str) -> None:
        super().__init__()
        self._id = amendment_id
        self._pinned = pinned
        self._existed = existed

    def compose(self) -> ComposeResult:
        """The question, the scrollable list of pins, the data-existed line and the keys."""
        with Vertical(id="freeze-box"):
            yield Static(f"Freeze {self._id} for good? It can never change again; "
                         f"it pins:", markup=False, id="freeze-question")
            with VerticalScroll(id="freeze-pins"):
                yield Static(self._pinned, markup=False)
            yield Static(f"Data at freeze: {self._existed}", markup=False, id="freeze-existed")
            yield Static("y = yes, freeze    n / escape = no", classes="modal-keys", markup=False)

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)


class TitlePrompt(ModalScreen[str | None]):
    """Ask for one line (a new draft's title); Enter gives it, escape gives None.

    Args:
        question: the label above the input.
        placeholder: an example of the answer.
    """

    CSS_PATH = "modals.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, placeholder: str = "") -> None:
        super().__init__()
        self._question = question
        self._placeholder = placeholder

    def compose(self) -> ComposeResult:
        """The question, the input and the keys."""
        with Vertical(id="title-box"):
            yield Static(self._question, markup=False)
            yield Input(placeholder=self._placeholder, id="title-input")
            yield Static("enter = create    escape = cancel", classes="modal-keys", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Give the typed line back."""
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        """Close without an answer."""
        self.dismiss(None)
