"""A checkbox whose box is empty when off.

Textual's Checkbox draws `▐X▌` on and off alike and tells them apart by colour only, so
with NO_COLOR, in 16 colours or to a quick glance an unticked box reads as ticked.
"""

from __future__ import annotations

from textual.content import Content
from textual.style import Style
from textual.widgets import Checkbox


class TickBox(Checkbox):
    """`▐X▌ label` when ticked, `▐ ▌ label` when not."""

    @property
    def _button(self) -> Content:
        """The box with an X only when ticked (the colours as Textual's)."""
        button_style = self.get_visual_style("toggle--button")
        side_style = Style(foreground=button_style.background,
                           background=self.background_colors[1])
        return Content.assemble((self.BUTTON_LEFT, side_style),
                                (self.BUTTON_INNER if self.value else " ", button_style),
                                (self.BUTTON_RIGHT, side_style))
