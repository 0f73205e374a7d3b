"""The Pre-registration screen (key 2): `screen` holds the screen, `editor` the
amendment editor, `modals` the freeze and title prompts, `render` the text it shows."""

from console.screens.prereg.screen import PreregScreen

__all__ = ["PreregScreen"]
