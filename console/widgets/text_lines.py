"""Plain text drawn a line at a time: a long table costs only the lines in view.

`Static` renders its whole text into styled lines before it can show one of them:
the Results screen's Success table on a 200,000-episode lab.db is ~1,900 lines at 80
columns, which took 0.25–0.4 s of the UI thread on its first show (a loaded 2-core
machine) and filled the cyclic GC with their strips. `TextLines` shows the same text
the same way (the widget's style, mouse selection and copy), but its size comes from
the line count and the widest line and it renders a line only when the compositor
asks for one in view (Textual's line API, `render_line`).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.geometry import Size
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget

from core.inert import inert


class TextLines(Widget):
    """Lines of plain text (no markup), sized to fit them, rendered as they come into view;
    control characters in it are shown escaped (`core.inert.inert`).

    Args:
        text: the text; lines are split on newlines.
        id: the widget's id.
        classes: its CSS classes.
    """

    DEFAULT_CSS = """
    TextLines {
        width: auto;
        height: auto;
    }
    """

    def __init__(self, text: str = "", *, id: str | None = None,  # noqa: A002 (Textual's name)
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = ""
        self._lines: list[str] = []
        self._width = 0
        self._marks: dict[int, list[tuple[int, int, str]]] = {}
        self._set(text)

    def _set(self, text: str) -> None:
        text = inert(text)  # names and labels in a table are stored text
        if "\t" in text:
            text = "\n".join(line.expandtabs(8) for line in text.split("\n"))
        self._text = text
        self._lines = text.split("\n") if text else []  # as Static: "" takes no row
        self._width = max(map(cell_len, self._lines), default=0)

    @property
    def text(self) -> str:
        """The text shown."""
        return self._text

    def mark(self, marks: dict[int, list[tuple[int, int, str]]]) -> None:
        """Highlight parts of lines (a cursor, search matches); replaces the marks shown.

        Args:
            marks: line index → (start, end, rich style) spans, in order, not
                overlapping; a later span over an earlier one is cut to what is left.
        """
        if marks == self._marks:
            return
        self._marks = marks
        self.refresh()

    @property
    def marks(self) -> dict[int, list[tuple[int, int, str]]]:
        """The marks shown (`mark`)."""
        return self._marks

    def update(self, text: str = "") -> None:
        """Show another text (what `Static.update` does for a string).

        Args:
            text: the new text.
        """
        self._set(text)
        self.refresh(layout=True)

    def render(self) -> Content:
        """The whole text as Content (for `str(widget.render())`; drawing uses
        `render_line`)."""
        return Content(self._text)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        """The widest line, in cells."""
        return self._width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """One row per line (the text is never wrapped: it is as wide as its widest line)."""
        return len(self._lines)

    def render_line(self, y: int) -> Strip:
        """Line `y` in the widget's style, with the mouse selection's part highlighted.

        Args:
            y: the line's index.

        Returns:
            The line (the styles cache pads it to the widget's width).
        """
        line = self._lines[y] if 0 <= y < len(self._lines) else ""
        style = self.visual_style
        span = None
        selection = self.text_selection
        if selection is not None and line:
            span = selection.get_span(y)
        marks = self._marks.get(y)
        if span is None and marks:
            return self._marked(line, y, marks)
        if span is None:
            # one segment, empty on a blank line: the strips Static draws, to the byte
            return Strip([Segment(line, style.rich_style_with_offset(0, y))], cell_len(line))
        start, end = span
        end = len(line) if end == -1 else min(end, len(line))
        start = min(start, end)
        selected = style + Style.from_styles(
            self.screen.get_component_styles("screen--selection"))
        segments = []
        for text, piece_style, x in ((line[:start], style, 0),
                                     (line[start:end], selected, start),
                                     (line[end:], style, end)):
            if text:
                segments.append(Segment(text, piece_style.rich_style_with_offset(x, y)))
        return Strip(segments, cell_len(line))

    def _marked(self, line: str, y: int, marks: list[tuple[int, int, str]]) -> Strip:
        """Line `y` with its marked spans in their styles."""
        style = self.visual_style
        segments, x = [], 0
        for start, end, mark in sorted(marks):
            start, end = max(start, x), min(end, len(line))
            if start >= end:
                continue
            if start > x:
                segments.append(Segment(line[x:start], style.rich_style_with_offset(x, y)))
            segments.append(Segment(line[start:end], style.rich_style_with_offset(start, y)
                                    + RichStyle.parse(mark)))
            x = end
        if x < len(line):
            segments.append(Segment(line[x:], style.rich_style_with_offset(x, y)))
        return Strip(segments, cell_len(line))

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text (mouse selection, then copy)."""
        return selection.extract(self._text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        """Draw the new selection."""
        self.refresh()
