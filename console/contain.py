"""A failing message handler is a caught error of the console, not the end of its widget.

Textual ends a widget's message loop when one of its handlers raises (the widget, or
the whole screen, stops answering) and then ends the app. The console instead hands
the error to `LabApp._handle_exception` (a notice and a line in the error log) and
keeps the loop going, for every node of a lab console: its screens, the dialogs and
widgets of every screen, Textual's own widgets, timers and `call_later` callbacks (all
are messages). Nodes of any other Textual app keep Textual's behaviour.

It wraps `MessagePump._dispatch_message`, a private method: textual is pinned to a minor
release for this (tests/test_dependencies.py), and tests/test_console_crashes.py fails
if a release changes it.
"""

from __future__ import annotations

from asyncio import CancelledError
from collections.abc import Awaitable, Callable
from typing import Any

from textual._context import NoActiveAppError
from textual.message import Message
from textual.message_pump import MessagePump

Dispatch = Callable[[MessagePump, Message], Awaitable[Any]]


def install(contains: Callable[[object], bool]) -> None:
    """Wrap the dispatch of every message once per process (idempotent).

    Args:
        contains: whether an app keeps going after an error (`LabApp` instances); its
            `_handle_exception(error)` is then called with the error instead of the
            node's loop ending.
    """
    if getattr(MessagePump._dispatch_message, "lab_contained", False):
        return
    original: Dispatch = MessagePump._dispatch_message

    async def dispatch(self: MessagePump, message: Message) -> Any:
        try:
            return await original(self, message)
        except CancelledError:
            raise
        except Exception as error:
            app = _app_of(self)
            if app is None or not contains(app):
                raise
            app._handle_exception(error)
            return None

    dispatch.lab_contained = True  # type: ignore[attr-defined]
    MessagePump._dispatch_message = dispatch  # type: ignore[method-assign]


def _app_of(node: MessagePump) -> Any:
    """The app a node belongs to, or None when it has none (being built or torn down)."""
    try:
        return node.app
    except NoActiveAppError:
        return None
