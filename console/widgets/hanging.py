"""Text wrapped with a hanging indent: a long line's continuations start under its text
column (after a `label: `), not at the left edge, so a wrapped thought, observation or
question still reads as one item at 80 columns.

The wrap is done here rather than by the widget because Textual wraps a continuation
at the left edge; the text a search or a copy takes stays unwrapped.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text
from textual.widgets import Static

LABEL = re.compile(r" *[A-Za-z][A-Za-z ]{0,24}: ")
"""A line's label (`thought: `, `judgment: `, `Q demo-006: ` is handled by the caller)."""

MIN_TEXT = 16
"""The fewest columns a continuation keeps for its text (a very long label indents less)."""


def text_column(line: str) -> int:
    """Where a line's text starts: after its `label: `, else after its leading spaces
    (2 when it has none, so a continuation still stands out)."""
    match = LABEL.match(line)
    if match:
        return match.end()
    spaces = len(line) - len(line.lstrip(" "))
    return spaces or 2


def breaks(line: str, width: int, indent: int) -> list[tuple[int, int]]:
    """(start, end) of each piece of `line` wrapped at `width`, continuations having
    `indent` columns less; on spaces, a word longer than a line is cut."""
    pieces: list[tuple[int, int]] = []
    start, room = 0, width
    while cell_len(line[start:]) > room:
        cut = line.rfind(" ", start, start + room + 1)
        if cut <= start:
            cut = start + room
            nxt = cut
        else:
            nxt = cut + 1
            while nxt < len(line) and line[nxt] == " ":
                nxt += 1
            while cut > start and line[cut - 1] == " ":
                cut -= 1
        pieces.append((start, cut))
        start, room = nxt, width - indent
    pieces.append((start, len(line)))
    return pieces


def hang(text: Text, width: int, indent: int | None = None) -> Text:
    """`text` wrapped at `width` columns, each line's continuations indented to its text
    column (`text_column`, or `indent` for every line when given); styles are kept.

    Args:
        text: the text, lines separated by newlines.
        width: the columns available.
        indent: the continuation indent of every line (None: each line's own).

    Returns:
        The wrapped text.
    """
    width = max(width, MIN_TEXT + 2)
    out = Text(style=text.style, end=text.end)
    for n, line in enumerate(text.split("\n", allow_blank=True)):
        if n:
            out.append("\n")
        plain = line.plain
        column = text_column(plain) if indent is None else indent
        column = min(column, width - MIN_TEXT)
        for i, (start, end) in enumerate(breaks(plain, width, column)):
            if i:
                out.append("\n" + " " * column)
            out.append_text(line[start:end])
    return out


class Hanging:
    """`text` as a renderable that hangs its wrapped lines (`hang`) at whatever width it
    is drawn, for a widget that lays its content out itself (Live's RichLog)."""

    def __init__(self, text: Text, indent: int | None = None) -> None:
        self.text = text
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The text wrapped at the width given."""
        yield hang(self.text, options.max_width, self.indent)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the widest line, at most the width given."""
        widest = max((cell_len(line) for line in self.text.plain.split("\n")), default=0)
        return Measurement(min(MIN_TEXT + 2, widest), min(widest, options.max_width))


class HangingStatic(Static):
    """A Static whose text hangs its wrapped lines (`hang`) at the widget's width, and is
    wrapped again when that width changes (a resize, its tab shown the first time)."""

    UNWRAPPED = 10_000
    """The width text is wrapped at before the widget has one (not laid out yet)."""

    def __init__(self, indent: int | None = None, **kwargs: object) -> None:
        super().__init__("", markup=False, **kwargs)  # type: ignore[arg-type]
        self.indent = indent
        self.text = Text()
        """The text shown, its lines unwrapped."""
        self._wrapped_at = -1

    def show(self, text: Text) -> None:
        """Show `text`, wrapped at the widget's width now."""
        self.text = text
        self._wrap()

    def _wrap(self) -> None:
        width = self.content_size.width
        self._wrapped_at = width
        self.update(hang(self.text, width or self.UNWRAPPED, self.indent))

    def on_resize(self) -> None:
        """Wrap the text again when the widget's width changed."""
        if self.content_size.width != self._wrapped_at and self.text.plain:
            self._wrap()
