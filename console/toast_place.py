"""Where the console's toasts stand: on the half of the screen away from the text field
being typed in.

Textual stacks toasts at the bottom right. On the Enqueue form (run name, seeds,
budgets sit low on the left), the Sets forms (a box across the middle) and the
amendment editor (its title at the top) a toast at a fixed place covers some field
while the user types in it. So while an input or text area has focus, its screen's
toast rack takes the class `toasts-top` when the field lies in the lower half, and is
docked at the top (app.tcss); otherwise toasts stay at the bottom.

The class goes on the rack, not on the screen: a class changed on a node restyles it
and everything under it, and the screen's restyle was the whole form at each change of
focus between a field in the upper half and one in the lower (61 ms a change under a
profiler in the console tests).
"""

from __future__ import annotations

from textual.css.query import NoMatches
from textual.dom import NoScreen
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, TextArea

TOP = "toasts-top"
"""The class that moves a screen's toast rack to the top right."""
RACK = "textual-toastrack"
"""The id Textual gives the toast rack it mounts on every screen (none when the app
shows no notifications)."""


def toasts_on_top(field: Widget, screen: Screen[object]) -> bool:
    """Whether toasts must go to the top for `field` to stay uncovered: it is a text
    field whose middle lies in the lower half of `screen`."""
    if not isinstance(field, (Input, TextArea)):
        return False
    region = field.region
    if not region.height:
        return False
    middle = region.y + region.height / 2
    return middle >= screen.size.height / 2


def place_toasts(focused: Widget) -> None:
    """Dock the toasts of `focused`'s screen away from it when it is a text field (see
    the module's note); nothing when it has left its screen since it took focus, or its
    screen has no toast rack."""
    if not focused.is_attached:
        return
    try:
        screen = focused.screen
        rack = screen.get_child_by_id(RACK)
    except (NoScreen, NoMatches):
        return
    rack.set_class(toasts_on_top(focused, screen), TOP)
