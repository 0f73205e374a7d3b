"""Where the console's toasts stand: on the half of the screen away from the text field
being typed in.

Textual stacks toasts at the bottom right. On the Enqueue form (run name, seeds,
budgets sit low on the left), the Sets forms (a box across the middle) and the
amendment editor (its title at the top) a toast at a fixed place covers some field
while the user types in it. So while an input or text area has focus, its screen
takes the class `toasts-top` when the field lies in the lower half, and the rack is
docked at the top (app.tcss); otherwise toasts stay at the bottom.
"""

from __future__ import annotations

from textual.dom import NoScreen
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, TextArea

TOP = "toasts-top"
"""The screen class that moves its toast rack to the top right."""


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
    the module's note); nothing when it has left its screen since it took focus."""
    if not focused.is_attached:
        return
    try:
        screen = focused.screen
    except NoScreen:
        return
    screen.set_class(toasts_on_top(focused, screen), TOP)
