"""What every console screen shares: the settings, fresh data, the header, read-only.

Fresh data (a screen never shows old data as current): the app counts changes to lab.db
(`LabApp.changes`: commits the
poll saw through `PRAGMA data_version`, plus every write the console made). A screen
remembers the count at its last read; when it is shown again and the count moved, it
re-reads (it gets a `DbChanged`, so a screen that only marks its numbers stale, like
Results, does that instead). The header says when the screen last read: "read
03:04:05 UTC".

Read-only: every write a screen makes goes through `_write_db`, which refuses at once
when the app knows lab.db is read-only and turns any SQLite error into a `StoreError`
(a toast, never a crash); a read-only error also switches the whole console to
read-only. A screen's `WRITE_ACTIONS` are shown dimmed then, and their keys say why.

Threads: a worker reads and writes lab.db, then posts what it found as a message
(`console.messages`, or one nested on its screen); only the handlers, on the app's
thread, set the screen's attributes and update its widgets.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from sqlite_utils import Database
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import get_current_worker

from console.messages import DbChanged, Notice, ReadOnly, Wrote
from console.pacing import Pacer
from console.selection import copy_selected
from console.stylesheet import StyledUnder
from console.widgets.footer import LabFooter
from console.widgets.tab_marks import mark_tabs_in
from core import store
from core.errors import LabError, StoreError
from core.store.base import access_error

if TYPE_CHECKING:
    from console.app import ConsoleConfig, LabApp


T = TypeVar("T")

HEADER_ICON = 8
"""Columns Textual's header gives its icon, left of the title."""


def path_tail(path: object, width: int) -> str:
    """`path` in at most `width` characters: its end (the file and the folders nearest
    it) after "…" when it is longer."""
    text = str(path)
    return text if len(text) <= width else "…" + text[len(text) - width + 1:]


def read_stamp(ts: float) -> str:
    """`read 03:04:05 UTC` for a read at `ts` (UTC, like the dashboard's events)."""
    return "read " + time.strftime("%H:%M:%S", time.gmtime(ts)) + " UTC"


def is_read_only_error(exc: BaseException) -> bool:
    """Whether an error says lab.db cannot be written (file, directory or mount)."""
    text = str(exc)
    return "readonly" in text or "read-only" in text


class LabScreen(Screen[None]):
    """A screen that re-reads lab.db when it changed and refuses writes when read-only.

    Subclasses implement `reload()`, which must start a thread worker
    (`@work(thread=True, exclusive=True)`) that reads through core/jobs/analysis and
    posts its result as a message with `post_read` (dropped when a newer read replaced
    it), handled on the app's thread. `reload()` runs (via
    `refresh_data`) on mount, on `DbChanged` while the screen is shown, when the screen
    is shown again after lab.db changed, and on `r`. Writes go through `_write_db`.
    """

    BINDINGS = [("r", "reload", "Reload")]
    WRITE_ACTIONS: ClassVar[frozenset[str]] = frozenset()
    """Actions that write lab.db: dimmed, and refused with the reason, when read-only."""

    _read_changes: int | None = None
    premounted = False
    """Mounted by the warm-up before it was shown (`LabApp._premount`): it reads lab.db
    when first shown, not when mounted."""
    _styled_under: StyledUnder | None = None
    """The state this screen's styles were last applied under by a restyle on showing."""
    read_at: float | None = None
    """When this screen last started reading lab.db (the injected clock's seconds)."""
    PACED: ClassVar[bool] = False
    """Whether this screen's reads grow with lab.db: then it has a `pacer`
    (`console.pacing`), and after a change it reads again no sooner than the pacer
    allows; `r` and its own keys read at once."""
    _paced: Timer | None = None
    """The read put off by the pacer, pending."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pacer: Pacer | None = Pacer() if self.PACED else None

    @property
    def lab(self) -> ConsoleConfig:
        """The console's settings."""
        return self.lab_app.config

    @property
    def lab_app(self) -> LabApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def post_read(self, message: Message) -> bool:
        """Post what a read worker (`@work(thread=True, exclusive=True)`) read, unless a
        newer run of the same worker replaced it: cancelling a thread worker does not stop
        its thread, and its older read, ending last, would be shown over the newer one's.

        Not for a read that consumes a change counter (Live's poll): dropping its result
        would lose the change for good.

        Returns:
            Whether the message was posted.
        """
        if get_current_worker().is_cancelled:
            return False
        return self.post_message(message)

    @contextlib.contextmanager
    def _db(self) -> Iterator[Database]:
        """lab.db on a connection of its own (for a worker thread), closed afterwards."""
        db = store.connect(self.lab.db_path, read_only_fallback=True)
        try:
            yield db
        finally:
            db.conn.close()

    @contextlib.contextmanager
    def _write_db(self, what: str) -> Iterator[Database]:
        """lab.db for one write (from a worker thread); every failure is a `LabError`.

        A commit posts `Wrote` to this screen; a read-only error posts `ReadOnly`
        (handled before any message the worker posts afterwards).

        Args:
            what: the write in a few words ("pause grid 3"), for the error line.

        Raises:
            StoreError: lab.db is read-only (refused before opening it), or SQLite
                refused the write (read-only file or mount, locked, corrupt …).
        """
        reason = self.lab_app.read_only
        if reason is not None:
            raise StoreError(f"{what}: refused, the console is read-only: {reason}")
        try:
            with self._db() as db:
                yield db
        except sqlite3.OperationalError as exc:
            error = access_error(self.lab.db_path, exc)
            if is_read_only_error(exc):
                self.post_message(ReadOnly(str(error)))
            raise StoreError(f"{what} failed: {error}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{what} failed: {self.lab.db_path}: {exc}") from None
        except LabError as exc:
            if is_read_only_error(exc):
                self.post_message(ReadOnly(str(exc)))
            raise
        self.post_message(Wrote())

    def on_wrote(self, message: Wrote) -> None:
        """The console committed: every screen re-reads when next shown; this one is
        re-read by the write's own handler, so it counts as read now."""
        self.lab_app.note_write()
        self._stamp()

    def on_read_only(self, message: ReadOnly) -> None:
        """A write found lab.db read-only: the whole console turns read-only."""
        self.lab_app.set_read_only(message.reason)

    def on_notice(self, message: Notice) -> None:
        """A worker's toast."""
        self.notify(message.text, severity=message.severity, timeout=message.timeout)

    # ---- fresh data ----------------------------------------------------------------

    def _stamp(self) -> None:
        self._read_changes = self.lab_app.changes
        self.read_at = self.lab.clock()
        self.show_header()

    def refresh_data(self) -> None:
        """Re-read now and remember that this screen has seen every change so far."""
        if self._paced is not None:
            self._paced.stop()
            self._paced = None
        self._stamp()
        self.reload()

    def timed_read(self, read: Callable[[], T]) -> T:
        """Run one piece of this screen's read (in its worker), timed by its pacer if it
        has one (`console.pacing`)."""
        return self.pacer.timed(read) if self.pacer is not None else read()

    def _paced_refresh(self) -> None:
        """The read the pacer put off, once it allows (a screen no longer shown reads
        when shown again)."""
        self._paced = None
        if self.is_current:
            self._read_when_paced()

    def _read_when_paced(self) -> None:
        """Re-read now if this screen's pacer allows (or it has none), else once it does."""
        wait = self.pacer.wait_s() if self.pacer is not None else 0.0
        if wait <= 0:
            self.refresh_data()
        elif self._paced is None:
            self._paced = self.set_timer(wait, self._paced_refresh)

    def screen_name(self) -> str:
        """`4 Jobs`: this screen's digit key and title (its module is its mode)."""
        from console.screens import SCREENS, screen_mode

        mode = screen_mode(type(self))
        for i, info in enumerate(SCREENS, start=1):
            if info.mode == mode:
                return f"{i} {info.title}"
        return type(self).__name__.removesuffix("Screen")

    def show_header(self) -> None:
        """The header: `lab · 4 Jobs` (READ-ONLY when so), then lab.db, when this screen
        read it, paused or not, so a glance or a capture says where and how fresh."""
        title = f"lab · {self.screen_name()}"
        if self.lab_app.read_only is not None:
            title += " · READ-ONLY"
        self.title = title
        tail = ""
        if self.read_at is not None:
            tail += " · " + read_stamp(self.read_at)
        if self.lab_app.paused:
            tail += "  ‖ PAUSED (p resumes)"
        # the path gives way (cut in its middle) so the stamp is never cut: the header has
        # the width less its icon (HEADER_ICON) and " — " between title and this line
        room = self.app.size.width - HEADER_ICON - len(title) - 3 - len(tail)
        self.sub_title = path_tail(self.lab.db_path, max(room, 12)) + tail

    def on_resize(self, event: events.Resize) -> None:
        """The header's path is cut to the width: cut it again for the new one; a tab
        strip's signs of tabs beyond its edges follow its room."""
        self.show_header()
        self.call_after_refresh(mark_tabs_in, self)

    def on_mount(self) -> None:
        """Load once when first shown, after the first layout, so what the read fills is
        laid out at the screen's size (the tables' widths themselves are right whenever
        they are filled: console/widgets/measured_table.py). A screen mounted unseen
        (`premounted`) loads when first shown instead (`first_show`)."""
        if not self.premounted:
            self.first_show()

    async def prepare_unseen(self, size: Size) -> None:
        """(premounted, before it is first shown) Do now what a first show does before
        it reads: build the footer's keys, then lay the screen out at the terminal's
        `size` (its first show then finds it laid out at that size)."""
        for footer in self.query(LabFooter):
            footer._bindings_ready = True
            await footer.recompose()
        self._refresh_layout(size)

    def first_show(self) -> None:
        """Load, after the first layout (`on_mount`; a premounted screen's first show)."""
        self.call_after_refresh(self.refresh_data)
        self.call_after_refresh(mark_tabs_in, self)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown again: re-read when lab.db changed since this screen's last read; shown
        for the first time after being mounted unseen: load (`first_show`)."""
        self.show_header()
        self.refresh_bindings()  # read-only may have begun while another screen was shown
        if self.premounted and self._read_changes is None:
            self.premounted = False
            if self._css_update_count == self.app._css_update_count:
                # styled by the current stylesheet when mounted unseen, focus included
                # (Screen's handler, after this one, would restyle every widget again)
                event.refresh_styles = False
            self.first_show()
            return
        if event.refresh_styles:
            # Screen's handler, after this one, restyles every widget: not needed when
            # nothing the styles depend on outside this screen changed since they were
            # last applied here (console/stylesheet.py, `StyledUnder`)
            now = StyledUnder(self.app)
            if now.same(self._styled_under):
                event.refresh_styles = False
            else:
                self._styled_under = now
        if self._read_changes is not None and self._read_changes != self.lab_app.changes:
            self.post_message(DbChanged(shown_again=True))

    def on_db_changed(self, message: DbChanged) -> None:
        """Reload when lab.db changed (another process, or this console elsewhere); a
        paced screen, when its pacer allows (`console.pacing`), else once it does,
        unless it is being shown again: then at once, as for a key."""
        message.stop()
        if message.shown_again:
            self.refresh_data()
        else:
            self._read_when_paced()

    def action_reload(self) -> None:
        """Reload now."""
        self.refresh_data()

    def reload(self) -> None:
        """Start loading this screen's data (override)."""

    # ---- drill-downs: q goes back one level, never quits from inside one --------------

    def help_codes(self) -> str:
        """What the screen's short codes mean, shown under its workflow in `?` ("" when
        it has none to explain)."""
        return ""

    def drilled_in(self) -> bool:
        """Whether this screen shows a level below its top (an episode, a cell's
        decisions, a view pushed over a screen): then `q` goes back, as escape does."""
        return self.app.screen_stack.index(self) > 0 if self in self.app.screen_stack \
            else False

    def go_back(self) -> None:
        """Back one level (`drilled_in`); a view pushed over a screen closes."""
        back = getattr(self, "action_back", None)
        if back is not None:
            back()
        else:
            self.dismiss()

    # ---- select-to-copy --------------------------------------------------------------

    def action_copy_text(self) -> None:
        """ctrl+c with text selected by the mouse copies it (OSC 52) and says so, as in
        lazygit or harlequin; with nothing selected the key goes on to the app (quit,
        asking first when text is unsaved): `console.selection`. The app's ctrl+c takes
        the key first; this is the screen's other copy key (super+c)."""
        if not copy_selected(self.app, self):
            raise SkipAction()

    # ---- read-only -------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Write actions are shown dimmed (and do nothing) while lab.db is read-only."""
        if action in self.WRITE_ACTIONS and self.lab_app.read_only is not None:
            return None
        return True

    def on_key(self, event: events.Key) -> None:
        """A write key on a read-only console says why it does nothing."""
        reason = self.lab_app.read_only
        if reason is None:
            return
        for entry in self.BINDINGS:
            binding = entry if isinstance(entry, Binding) else Binding(*entry)
            action = binding.action.split("(", 1)[0]
            if event.key in binding.key.split(",") and action in self.WRITE_ACTIONS:
                event.stop()
                event.prevent_default()
                self.notify(f"{binding.description}: not possible, the console is "
                            f"read-only: {reason}", severity="warning", timeout=8)
                return
