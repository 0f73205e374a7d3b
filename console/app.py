"""The Textual lab console (docs/console.md): one app, seven screens on the digit keys.

`make_app(db_path, config)` is the only way the CLI and the tests build it. The app
owns nothing but its settings, a poller and two facts about lab.db:

- `changes`, a counter of what changed lab.db: every second (unless paused with `p`)
  a thread worker reads `PRAGMA data_version` on its own read connection and, when a
  commit happened, bumps it and posts `DbChanged` to the screen on show; every write
  the console makes bumps it too. A screen shown again re-reads when it moved
  (`LabScreen.on_screen_resume`), so no screen shows old numbers as current.
- `read_only`, why lab.db cannot be written (None while it can): checked at start
  with a write that is rolled back, and set by any write that fails that way. The
  header then says READ-ONLY and the screens' write keys say why they do nothing.

Screens read lab.db only in thread workers, through core/jobs/analysis functions.

Never a traceback: an exception in a screen, a worker or a message handler is one line
in a notice and in the error log (`console.logs`), and the console stays up
(`LabApp._handle_exception`); only one it cannot go on after (no screen left to show
it on) ends it, with `fatal` set to that line, which `lab console` prints as its one
error line, exiting non-zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from textual import events, work
from textual.app import App, ScreenStackError, SystemCommand
from textual.binding import Binding
from textual.filter import LineFilter
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.widgets import Input, SelectionList, TextArea
from textual.worker import WorkerFailed, WorkerState

from console import contain, logs, style_colors, stylesheet, warmup
from console.inert_filter import InertLines
from console.messages import DbChanged, Notice, ReadOnly
from console.screens import SCREENS, LazyScreen, ScreenInfo, screen_mode
from console.screens.base import LabScreen, is_read_only_error
from console.screens.help import EVERYWHERE, HelpScreen, workflow
from console.selection import copy_selected
from console.toast_place import place_toasts
from console.watch import DataVersion
from console.workers import LocalWorkers
from core import store
from core.errors import LabError
from core.inert import inert
from core.store.base import check_writable, corruption_error


@dataclass(frozen=True)
class ConsoleConfig:
    """Everything the console is configured with (passed in, never a module global).

    Attributes:
        db_path: the lab.db the console reads (and writes only on an action).
        config_path: the model registry (lab.toml).
        export_dir: where `e` writes CSVs.
        poll_s: how often the console checks whether lab.db changed.
        first_screen: the mode shown at start.
        lease_s: a worker silent for longer than this is shown as lost.
        clock: seconds since the epoch (tests and snapshots freeze it).
        check_endpoints: check the registry's endpoints when the dashboard opens.
        n_boot: question-level resamples of Results' intervals (`lab results
            --resamples`'s default, so the screen shows the same numbers).
        hazard_boot: cluster resamples of Results' hazard model (`lab results` uses
            `analysis.base.cache.hazard_resamples` of its resamples).
        seed: the bootstrap seed of Results (`lab results --seed`).
        outcome_resamples: resamples of the registered tests' outcomes on
            Pre-registration (`lab prereg outcomes --resamples`).
        preview_debounce_s: how long Enqueue waits after a change before it previews.
        freeze_gc: freeze start-up's objects out of the cyclic GC once warm
            (`console.warmup`); None: when the console runs in a terminal (then it owns
            its process), not headless (tests run many apps in one process). The bench
            sets True to measure what `lab` does.
        warm_up: warm the other screens up once the first shows its numbers
            (`console.warmup`); tests that do not test it turn it off (its thread keeps
            Textual's Pilot waiting for an idle process).
    """

    db_path: Path
    config_path: Path = Path("lab.toml")
    export_dir: Path = Path("lab-exports")
    poll_s: float = 1.0
    first_screen: str = "dashboard"
    lease_s: float = 60.0
    clock: Callable[[], float] = time.time
    check_endpoints: bool = True
    n_boot: int = 2000
    hazard_boot: int = 1000
    seed: int = 0
    outcome_resamples: int = 2000
    preview_debounce_s: float = 0.3
    freeze_gc: bool | None = None
    warm_up: bool = True


INERT_LINES = InertLines()
"""The app's last line filter (it holds no state)."""


class LabApp(App[None]):
    """The lab console."""

    TITLE = "lab"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        *(Binding(str(i), f"show('{s.mode}')", s.title, show=False)
          for i, s in enumerate(SCREENS, start=1)),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("p", "toggle_pause", "Pause refresh", show=False),
        Binding("q", "quit", "Quit"),
        # ctrl+q and ctrl+c quit from anywhere (drill-downs, dialogs, forms, the help and
        # the palette too), asking as q does when text is unsaved; ctrl+c copies a
        # selection first (`console.selection`). Priority: Textual stops ordinary
        # bindings at the topmost modal screen
        Binding("ctrl+q", "quit_app", "Quit", show=False, priority=True),
        Binding("ctrl+c", "ctrl_c", "Quit", show=False, priority=True),
        Binding("ctrl+z", "suspend", "Suspend", show=False),
    ]

    paused: reactive[bool] = reactive(False)

    class Committed(Message, bubble=False):
        """Another connection committed to lab.db (the data-version poll saw it)."""

    class WarmedUp(Message):
        """The warm-up thread imported the screens' modules (`console.warmup`)."""

        def __init__(self, classes: list[type[Screen]], failed: list[str]) -> None:
            super().__init__()
            self.classes = classes
            self.failed = failed

    def __init__(self, config: ConsoleConfig) -> None:
        super().__init__()
        stylesheet.install(self)  # a screen's first show no longer parses all CSS again
        self.config = config
        self._version = DataVersion(config.db_path)
        self.changes = 0
        """How many changes to lab.db the console has seen (commits and its own writes)."""
        self.read_only: str | None = None
        """Why lab.db cannot be written, or None while it can."""
        self.warm = False
        """Whether the warm-up is done (every screen's module and stylesheet loaded)."""
        self._pacer = warmup.Pacer()
        self.errors: list[str] = []
        """The one line of every exception the console caught (and logged)."""
        self.fatal: str | None = None
        """The error that ended the console, or None (`lab console` prints it)."""
        self._log_dir: Path | None = None
        self._started = False
        self.local_workers = LocalWorkers(config.db_path, config.config_path, self.log_dir)
        """The `lab worker` processes started from the console (`console.workers`)."""
        contain.install(lambda app: isinstance(app, LabApp))
        style_colors.install()  # no widget's style cache outlives it
        for info in SCREENS:
            self.add_mode(info.mode, self._mode_factory(info.factory))

    def _mode_factory(self, factory: Callable[[], Screen]) -> Callable[[], Screen]:
        """`factory`, and once warm a screen marked as styled: Textual restyles every
        mounted screen twice when a mode's screen is first shown, for a stylesheet
        that (after `warmup.preload_css`) has not changed."""
        def build() -> Screen:
            screen = factory()
            if self.warm:
                self._mark_styled(screen)
            return screen
        return build

    def _mark_styled(self, screen: Screen) -> None:
        """Tell Textual that `screen` is styled by the current stylesheet when every
        stylesheet of its class is in it (`warmup.preload_css`): then its first show
        skips the restyle of every mounted screen."""
        if all(self.stylesheet.has_source(str(path))
               for path in warmup.css_paths(type(screen))):
            # Textual's count of stylesheet reloads: equal = styled by the current one
            screen._css_update_count = self._css_update_count

    async def _premount(self, classes: Iterable[type[Screen]]) -> None:
        """Mount the screens of `warmup.PREMOUNT` that were never shown (and whose module
        imported: `classes`) unseen and prepare them (`LabScreen.prepare_unseen`), so
        that a first visit only shows what it reads (`LabScreen.premounted`)."""
        imported = {screen_mode(cls) for cls in classes}
        for mode in warmup.PREMOUNT:
            if mode in self._screen_stacks or mode not in imported or not self.is_running:
                continue
            screen = self._modes[mode]()  # type: ignore[operator]
            if not isinstance(screen, LabScreen):
                continue
            self._mark_styled(screen)
            screen.premounted = True
            # what Textual's switch_mode does for a new mode, less showing it
            self._screen_stacks[mode] = [screen]
            await AwaitMount(screen, self._register(self, screen))
            await screen.prepare_unseen(self.size)

    def on_mount(self) -> None:
        """Show the first screen, check that lab.db is writable, poll it for changes,
        and warm the other screens up once the first shows its numbers."""
        self.sub_title = str(self.config.db_path)
        self._version.prime()  # before the first screen reads: a poll then means a commit
        self.switch_mode(self.config.first_screen)
        self._check_writable()
        self.set_interval(self.config.poll_s, self._poll)
        if self.config.warm_up:
            self._warm_timer = self.set_interval(0.05, self._tick_warm_up)
        self._started = True

    # ---- warm-up (target: each screen's first visit ≤ 0.5 s) ------------------------

    def _tick_warm_up(self) -> None:
        """(every 50 ms until warm) Start the warm-up once the first screen has drawn what
        it read, and let it import only while the screen shown has (`warmup.Pacer`)."""
        if self.warm:
            self._warm_timer.stop()
            return
        try:
            screen = self.screen
        except ScreenStackError:  # closing: its screens are gone
            return
        busy = any(w.node is screen and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                   for w in self.workers)
        if self._pacer.tick(isinstance(screen, LabScreen) and screen.read_at is not None
                            and not busy):
            self._warm_up()

    @work(thread=True, exclusive=True, group="warm-up")
    def _warm_up(self) -> None:
        classes, failed = warmup.import_screens(
            (s.factory for s in SCREENS if isinstance(s.factory, LazyScreen)),
            self._pacer.wait)
        self.post_message(self.WarmedUp(classes, failed))

    async def on_lab_app_warmed_up(self, message: WarmedUp) -> None:
        """Read every screen's stylesheet now, mount the screens of `warmup.PREMOUNT`;
        freeze start-up's objects when the console owns its process."""
        for line in message.failed:
            self.notify(f"cannot import {line}", severity="error", timeout=15)
        warmup.preload_css(self, message.classes)
        await self._premount(message.classes)
        freeze = self.config.freeze_gc
        if freeze or (freeze is None and not self.is_headless):
            warmup.freeze_startup_objects()
        self.warm = True

    def watch_paused(self, paused: bool) -> None:
        """Say in the header that the refresh is paused (a word, not only a colour)."""
        self.sub_title = f"{self.config.db_path}" + ("  ‖ PAUSED (p resumes)" if paused else "")
        if isinstance(self.screen, LabScreen):
            self.screen.show_header()

    @work(thread=True, exclusive=True, group="writable")
    def _check_writable(self) -> None:
        """A write that is rolled back: refused on a read-only file, directory or mount."""
        try:
            db = store.connect(self.config.db_path, read_only_fallback=True)
            try:
                check_writable(db, self.config.db_path)
            finally:
                db.conn.close()
        except LabError as exc:
            if is_read_only_error(exc):
                self.post_message(ReadOnly(str(exc)))
            else:  # locked for a minute, unreadable …: say it, stay writable
                self.post_message(Notice(str(exc), severity="warning"))

    def on_read_only(self, message: ReadOnly) -> None:
        """The start-up check found lab.db read-only."""
        if self.screen_stack:  # none once the app is closing
            self.set_read_only(message.reason)

    def on_notice(self, message: Notice) -> None:
        """A worker's toast."""
        if self.screen_stack:
            self.notify(message.text, severity=message.severity, timeout=message.timeout)

    def set_read_only(self, reason: str) -> None:
        """From now on lab.db is read-only: say so in the header, dim the write keys.

        Args:
            reason: why (the store's one line: which file, what to do).
        """
        if self.read_only is not None:
            return
        self.read_only = reason
        self.title = "lab · READ-ONLY"
        if isinstance(self.screen, LabScreen):
            self.screen.show_header()
        self.notify(f"read-only console: {reason}", title="READ-ONLY", severity="warning",
                    timeout=15)
        self.screen.refresh_bindings()

    def note_write(self) -> None:
        """The console committed to lab.db: every other screen re-reads when shown."""
        self.changes += 1

    def _poll(self) -> None:
        if not self.paused:
            self._check_version()

    @work(thread=True, exclusive=True, group="data-version")
    def _check_version(self) -> None:
        if self._version.changed():
            self.post_message(self.Committed())

    def on_lab_app_committed(self, message: Committed) -> None:
        """Count the commit and tell the screen on show."""
        self.changes += 1
        if self.screen_stack:  # none once the app is closing (a poll that ended late)
            self.screen.post_message(DbChanged())

    # ---- errors: a notice and a log line, never a traceback ------------------------

    def log_dir(self) -> Path:
        """The folder of the console's error log and its workers' logs (`console.logs`)."""
        if self._log_dir is None:
            self._log_dir = logs.log_dir(self.config.db_path)
        return self._log_dir

    def _handle_exception(self, error: Exception) -> None:
        """(Textual calls this for any uncaught exception: a handler, a worker, a timer,
        a compose.) One line in a notice and the error log; the console stays up. One
        raised before the console started (its own `on_mount`) or while it closes ends
        it, with `fatal` set, non-zero.

        The first error is also kept where Textual's test harness re-raises it when the
        test's app exits, so a Pilot test never passes over a caught error unseen (its
        event is left alone: it tells Pilot to stop waiting for an app that is ending).
        """
        cause = error.error if isinstance(error, WorkerFailed) else error
        corrupt = corruption_error(self.config.db_path, cause)  # how to recover, if it is
        line = str(corrupt) if corrupt is not None else logs.one_line(cause)
        self.errors.append(line)
        try:
            path: Path | None = self.log_dir()
        except OSError:
            path = None
        if path is not None:
            path = logs.record_error(path, line, cause)
        if self._exception is None:
            self._exception = error
        if not self._started or self._closing:
            self.fatal = line
            self.exit(return_code=1)
            return
        where = f" (details in {path})" if path is not None else ""
        self.notify(f"{line}{where}", title="error: the console goes on", severity="error",
                    timeout=15, markup=False)

    def on_unmount(self) -> None:
        """Close the poller's connection; let a waiting warm-up finish; stop the workers
        started here that were not asked to outlive the console (bounded: their grace)."""
        self._pacer.quiet.set()
        self._version.close()
        self.local_workers.stop_on_quit()

    async def action_quit(self) -> None:
        """q: back one level in a drill-down (an episode, a Δ cell's decisions, the Sets
        view), else quit as `action_quit_app` does."""
        screen = self.screen
        if isinstance(screen, LabScreen) and screen.drilled_in():
            screen.go_back()
            return
        await self.action_quit_app()

    async def action_ctrl_c(self) -> None:
        """ctrl+c, on every screen and dialog: copy the selected text (the focused
        field's, else the mouse's) and say so, else quit as ctrl+q does."""
        if not copy_selected(self):
            await self.action_quit_app()

    def action_help_quit(self) -> None:
        """(Textual's ctrl+c when no lab binding took it) quit, as ctrl+c does elsewhere."""
        self.run_worker(self.action_quit_app(), exclusive=True, group="quit")

    def action_suspend(self) -> None:
        """ctrl+z: suspend the console like any terminal program (`fg` brings it back), or
        say why it cannot be."""
        driver = self._driver
        if driver is None or not driver.can_suspend:
            self.notify("ctrl+z: this terminal cannot suspend lab (q quits)", timeout=5)
            return
        self.action_suspend_process()

    async def action_quit_app(self) -> None:
        """ctrl+q, ctrl+c, q at the top level, the palette's Quit: quit, unless a screen
        holds unsaved text (that screen is shown and asks save / discard / stay;
        `guard_quit`)."""
        stacks = getattr(self, "_screen_stacks", None) or {"": self.screen_stack}
        for stack in list(stacks.values()):  # every mode's screens, shown or not
            for screen in list(stack):
                guard = getattr(screen, "guard_quit", None)
                if guard is not None and guard():
                    return
        self.exit()

    def mode_screen(self, mode: str) -> Screen | None:
        """The screen of `mode` (its base screen), or None when it was never shown."""
        stacks = getattr(self, "_screen_stacks", None) or {}
        stack = stacks.get(mode) or []
        return stack[0] if stack else None

    def typing(self) -> bool:
        """Whether a text field has focus: then 1–7, p and ? are text, not keys."""
        return isinstance(self.focused, (Input, TextArea))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The digit keys switch screens only while no text field has focus (escape
        leaves the field first), so `4` typed in a run name stays in the name."""
        if action == "show" and self.typing():
            return False
        return True

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """A checklist shows its cursor as soon as it has focus (not at the first arrow);
        toasts move off a text field that takes focus (`console.toast_place`)."""
        widget = event.widget
        self.call_after_refresh(place_toasts, widget)
        if isinstance(widget, SelectionList) and widget.highlighted is None \
                and widget.option_count:
            widget.highlighted = 0

    def action_show(self, mode: str) -> None:
        """Switch to the screen registered as `mode`."""
        self._pacer.switched()
        self.switch_mode(mode)

    def action_help(self) -> None:
        """`?`: this screen's cheat sheet: its workflow, its keys, then the few keys that
        work everywhere (not every binding Textual has)."""
        screen = self.screen
        if not isinstance(screen, LabScreen):
            return
        keys: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for active in self.active_bindings.values():
            binding, node = active.binding, active.node
            if not binding.description or binding.action in seen:
                continue
            if not _lab_binding(node, binding):
                continue  # Textual's own (copy, focus …), not lab's
            if node is screen:
                where = "this screen"
            elif node is not self:
                where = "focused list/table"
            else:
                continue  # the app's keys are listed below (EVERYWHERE)
            if binding.action == "leave_editor":
                continue
            seen.add(binding.action)
            keys.append((binding.key_display or self.get_key_display(binding),
                         binding.description, where))
        keys.extend((key, what, "everywhere") for key, what in EVERYWHERE)
        mode = screen_mode(type(screen))
        codes = screen.help_codes()
        self.push_screen(HelpScreen(screen.screen_name(),
                                    workflow(mode) + ("\n" + codes if codes else ""), keys))

    def action_toggle_pause(self) -> None:
        """Pause or resume the automatic refresh."""
        self.paused = not self.paused
        self.notify("refresh paused (p resumes)" if self.paused else "refresh resumed",
                    timeout=2)

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then `InertLines`: no control character left in stored
        text reaches the terminal, whichever widget shows it."""
        return [*super().get_line_filters(), INERT_LINES]

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """A notice, its message and title shown inert and as plain text, whatever
        `markup` says (a screen's `notify` passes True): errors quote stored text, and a
        name like `[/]` raised in the markup parser while the notice drew, while
        `[@click=app.quit]` made a clickable action of it."""
        del markup  # never markup: no notice of the console's uses it
        super().notify(inert(message, keep="\n"), title=inert(title, keep=""),
                       severity=severity, timeout=timeout, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The command palette: every screen and every action of the current screen."""
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "This screen's workflow and keys (?)", self.action_help)
        yield SystemCommand("Resume refresh" if self.paused else "Pause refresh",
                            "Stop or restart re-reading lab.db every second (p)",
                            self.action_toggle_pause)
        for i, info in enumerate(SCREENS, start=1):
            yield SystemCommand(f"{i} {info.title}", info.help,
                                lambda m=info.mode: self.action_show(m))
        for binding in getattr(screen, "BINDINGS", ()):
            if isinstance(binding, Binding) and binding.description:
                yield SystemCommand(f"{screen.__class__.__name__.removesuffix('Screen')}: "
                                    f"{binding.description}", f"key {binding.key}",
                                    lambda a=binding.action: self.run_action(a, screen))


def _lab_binding(node: object, binding: Binding) -> bool:
    """Whether `binding` is declared by one of lab's classes (not inherited from Textual)."""
    for cls in type(node).__mro__:
        if not cls.__module__.startswith("console."):
            continue
        for entry in vars(cls).get("BINDINGS", ()):
            if (entry.action if isinstance(entry, Binding) else entry[1]) == binding.action:
                return True
    return False


def make_app(db_path: Path | str, config: ConsoleConfig | None = None) -> LabApp:
    """Build the console on `db_path` (the one factory used by the CLI and the tests).

    Args:
        db_path: lab.db to open (must exist: the CLI asks before creating one).
        config: settings; `db_path` wins over `config.db_path`.

    Returns:
        The app, ready for `run()` or `run_test()`.
    """
    from dataclasses import replace

    base = config or ConsoleConfig(db_path=Path(db_path))
    return LabApp(replace(base, db_path=Path(db_path)))


__all__ = ["ConsoleConfig", "LabApp", "ScreenInfo", "make_app"]
