"""Signs that a tab strip holds more tabs than it shows: `‹` at its left edge while tabs
are scrolled off to the left, `›` at its right edge while some lie beyond it.

Textual scrolls the active tab of a `Tabs` (and of a `TabbedContent`) into view, but a
strip wider than its room (Results' tables at 60 or 80 columns, an amendment's four views
beside the list at 60) simply ends at the edge, so the tabs beyond it look absent.
`mark_more_tabs` docks a one-column sign on each side of a strip (styled in app.tcss),
shown only while its tabs do not fit, and keeps them true as it scrolls; `LabScreen`
marks its strips and updates them when the screen is resized.
"""

from __future__ import annotations

from textual.containers import Container
from textual.widget import Widget
from textual.widgets import Static, Tab, Tabs

LESS, MORE = "‹", "›"


def marks(scroll_x: float, max_scroll_x: float) -> tuple[str, str]:
    """The left and right signs of a strip scrolled to `scroll_x` of `max_scroll_x`."""
    return (LESS if scroll_x > 0 else " ", MORE if scroll_x < max_scroll_x else " ")


class TabMark(Static):
    """One sign, docked at one edge of its strip."""

    def __init__(self, side: str) -> None:
        super().__init__(" ", id=f"tabs-{side}", classes="tabs-mark", markup=False)
        self.side = side


def overflows(tabs: Tabs) -> bool:
    """Whether the strip's tabs are wider together than the strip, the last one's
    padding after its label left out (signs left out too, so showing them does not
    change the answer)."""
    shown = [tab for tab in tabs.query(Tab) if tab.display]
    if not shown:
        return False
    width = sum(tab.outer_size.width for tab in shown) - shown[-1].styles.padding.right
    return width > tabs.size.width


def show_marks(tabs: Tabs) -> None:
    """Show the strip's signs while its tabs do not fit, each saying whether tabs lie
    beyond its edge; again after the next layout when they appeared or went."""
    signs = list(tabs.query(TabMark))
    if not signs or not tabs.size.width:
        return
    need = overflows(tabs)
    changed = any(sign.display != need for sign in signs)
    scroll = tabs.query_one("#tabs-scroll", Container)
    left, right = marks(scroll.scroll_x, scroll.max_scroll_x)
    for sign in signs:
        sign.display = need
        sign.update(left if sign.side == "less" else right)
    if changed:
        tabs.call_after_refresh(show_marks, tabs)


def mark_more_tabs(tabs: Tabs) -> None:
    """Dock the two signs on `tabs` (once) and keep them true as it scrolls."""
    if tabs.query(TabMark):
        return
    signs = (TabMark("less"), TabMark("more"))
    for sign in signs:
        sign.display = False
    tabs.mount(*signs)
    scroll = tabs.query_one("#tabs-scroll", Container)

    def update(_: object = None) -> None:
        show_marks(tabs)

    tabs.watch(scroll, "scroll_x", update, init=False)
    tabs.watch(scroll, "virtual_size", update, init=False)
    tabs.call_after_refresh(update)


def mark_tabs_in(node: Widget) -> None:
    """Mark every tab strip under `node`, and bring marks already there up to date (after
    a resize the room changes while the scroll may not)."""
    for tabs in node.query(Tabs):
        mark_more_tabs(tabs)
        show_marks(tabs)
