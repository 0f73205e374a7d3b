"""A SelectionList whose unticked boxes are empty, so ticks read without colour.

Textual draws every box as `▐X▌` and tells ticked from unticked by colour only;
with NO_COLOR or in 16 colours a researcher could not see what is picked. Here an
unticked box is drawn `▐ ▌`.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import SelectionList
from textual.widgets._toggle_button import ToggleButton
from textual.widgets.option_list import OptionDoesNotExist


class EnqueueChecklist(SelectionList[str]):
    """SelectionList with `▐X▌` for ticked and `▐ ▌` for unticked items."""

    def render_line(self, y: int) -> Strip:
        """The usual line, with the box emptied when its item is not ticked."""
        strip = super().render_line(y)
        try:
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return strip
        if selection.value in self.selected:
            return strip
        segments = list(strip)
        if len(segments) >= 3 and segments[1].text == ToggleButton.BUTTON_INNER:
            segments[1] = Segment(" " * len(ToggleButton.BUTTON_INNER), segments[1].style)
            return Strip(segments, strip.cell_length)
        return strip
