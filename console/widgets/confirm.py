"""One-key questions before anything is done for good: `Confirm` (y/n) and `Choose`.

Every confirmation of the console names its action and its target and what it
will change (how many jobs, episodes, calls, dollars…), so the person decides on
the dialog's text, not on the toast that follows. The panel is opaque and sized
to its text (at most 90% of the screen, wrapped), never an empty box.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

ASK_CSS = """
{cls} {{
    align: center middle;
}}
{cls} > Vertical {{
    width: auto;
    max-width: 90%;
    height: auto;
    max-height: 90%;
    border: heavy $warning;
    padding: 0 1;
    background: $surface;
}}
{cls} Static {{
    width: auto;
    max-width: 100%;
}}
{cls} #ask-question, {cls} #ask-keys {{
    text-style: bold;
}}
{cls} #ask-detail-scroll {{
    width: auto;
    max-width: 100%;
    height: auto;
    max-height: 15;
    margin-top: 1;
}}
{cls} #ask-keys {{
    margin-top: 1;
}}
"""


T = TypeVar("T")


class _Ask(ModalScreen[T], Generic[T]):
    """The shared panel: a bold question, optional detail lines, the keys line."""

    def __init__(self, question: str, detail: str, keys: str) -> None:
        super().__init__()
        self._question = question
        self._detail = detail
        self._keys = keys

    @property
    def text(self) -> str:
        """Everything the dialog says, as plain text (what the tests read)."""
        return "\n".join(t for t in (self._question, self._detail, self._keys) if t)

    def compose(self) -> ComposeResult:
        """The question, its detail and the keys."""
        with Vertical(id="ask-box"):
            yield Static(self._question, markup=False, id="ask-question")
            if self._detail:  # scrolls when long, so the keys line stays in view
                with VerticalScroll(id="ask-detail-scroll"):
                    yield Static(self._detail, markup=False, id="ask-detail")
            yield Static(self._keys, markup=False, id="ask-keys")


class Confirm(_Ask[bool]):
    """Ask one question; dismisses with True on `y`, False on `n`, escape or `q`.

    Args:
        question: the action and its target, e.g. "Pause grid 3 of run pilot?".
        detail: what it will change (counts), one or more lines.
        yes: what `y` does, e.g. "pause 16 jobs".
    """

    DEFAULT_CSS = ASK_CSS.format(cls="Confirm")
    BINDINGS = [Binding("y", "answer(True)", "Yes, do it"),
                Binding("n", "answer(False)", "No"),
                Binding("escape", "answer(False)", "Cancel"),
                Binding("q", "answer(False)", "Cancel", show=False)]

    def __init__(self, question: str, detail: str = "", yes: str = "yes, do it") -> None:
        super().__init__(question, detail, f"y = {yes}    n / escape = no, do nothing")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)


class Choose(_Ask[str]):
    """Ask with several one-key answers; dismisses with the chosen answer's value.

    Args:
        question: what is being decided.
        detail: lines under it.
        answers: (key, value, what it does); escape and `q` give `default`.
        default: the answer of escape / `q` (the one that changes nothing).
    """

    DEFAULT_CSS = ASK_CSS.format(cls="Choose")

    def __init__(self, question: str, detail: str, answers: Sequence[tuple[str, str, str]],
                 default: str) -> None:
        keys = "    ".join(f"{key}{' / escape' if value == default else ''} = {label}"
                           for key, value, label in answers)
        super().__init__(question, detail, keys)
        self._answers = {key: value for key, value, _ in answers}
        self._default = default

    def on_key(self, event: events.Key) -> None:
        """One of the answers' keys closes the dialog with its value; other keys do nothing."""
        value = self._answers.get(event.key)
        if value is None and event.key in ("escape", "q"):
            value = self._default
        if value is not None:
            event.stop()
            event.prevent_default()
            self.dismiss(value)
