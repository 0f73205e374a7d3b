"""The console's last line of defence against terminal escapes in stored text.

Screens show stored text (model answers, imported questions, names, errors) through
`core.inert` where it enters a widget, so an `ESC` is shown as `\\x1b`. A widget that
shows a string it did not pass through `inert` would still hand its control characters
to the terminal, since Rich's `Text` strips only a few of them (BEL, backspace, CR, VT,
FF) and keeps `ESC`. `InertLines`, a Textual line filter the app applies to every line
it draws, deletes whatever control or format character is left in a text segment. Those
characters take no cell, so deleting them leaves every line exactly as wide as Textual
laid it out; Textual's own cursor moves and styles are control segments, not text, and
pass untouched.
"""

from __future__ import annotations

import unicodedata

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter


class InertLines(LineFilter):
    """Deletes control and format characters from every text segment of a line."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        """The line's segments, those holding a control character rewritten without it.

        Args:
            segments: the segments of one line as drawn.
            background: the background colour (unused).
        """
        if all(s.text.isprintable() or s.control for s in segments):
            return segments
        return [s if s.control or s.text.isprintable()
                else Segment(_without_controls(s.text), s.style, s.control)
                for s in segments]


def _without_controls(text: str) -> str:
    """`text` with its control and format characters (Unicode categories Cc, Cf, Cs:
    the ones `core.inert.inert` escapes) deleted."""
    return "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf", "Cs"))
