"""What ctrl+c copies before it quits, the same on every screen, dialog and form.

ctrl+c copies the text selected in the focused text field (typed over with shift+arrows,
or the whole field a form selects when it takes focus), or else the text selected with
the mouse on the screen shown, to the clipboard (OSC 52), says how much, and clears the
selection so that the next ctrl+c quits; with nothing selected it quits (asking first
when editor text is unsaved), as in lazygit or harlequin. The app binds ctrl+c with
priority (`LabApp.action_ctrl_c`) because Textual stops ordinary bindings at the
topmost modal screen, where ctrl+c used to do nothing.
"""

from __future__ import annotations

from textual.app import App
from textual.screen import Screen
from textual.widgets import Input, TextArea
from textual.widgets._input import Selection as InputSelection
from textual.widgets.text_area import Selection as AreaSelection

from core.wording import plural


def _field_text(app: App) -> str:
    """Take the focused text field's selected text, leaving its cursor at the
    selection's end ("" when no field has focus or nothing is selected)."""
    field = app.focused
    if isinstance(field, Input):
        text = field.selected_text
        if text:
            field.selection = InputSelection.cursor(field.selection.end)
        return text
    if isinstance(field, TextArea):
        text = field.selected_text
        if text:
            field.selection = AreaSelection.cursor(field.selection.end)
        return text
    return ""


def _screen_text(screen: Screen) -> str:
    """Take the text selected with the mouse on `screen`, clearing it ("" when none)."""
    text = screen.get_selected_text() or ""
    if text:
        screen.clear_selection()
    return text


def copy_selected(app: App, screen: Screen | None = None) -> bool:
    """Copy the focused field's selection, else `screen`'s (default: the one shown),
    and say so; False when nothing is selected (then ctrl+c quits)."""
    text = _field_text(app) or _screen_text(screen if screen is not None else app.screen)
    if not text:
        return False
    app.copy_to_clipboard(text)
    app.notify(f"copied {plural(len(text), 'character')} to the clipboard", title="copy",
               timeout=4, markup=False)
    return True
