"""The console's worker dialogs: how many `lab worker` processes to start and how, and
the worker log view. Shared by the Dashboard and Jobs (`WorkerKeys`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Static

from console.widgets.confirm import Confirm
from console.widgets.tick_box import TickBox
from console.workers import GRACE_S, LOG_LINES, worker_logs
from core.bounds import MAX_CONCURRENCY
from core.errors import ConfigError

if TYPE_CHECKING:
    from console.app import LabApp

MAX_PROCESSES = 32
MODELS_OWN = "the model's"
"""What the concurrency field shows when empty: `lab worker`'s default, each model's own
`concurrency`."""


@dataclass(frozen=True)
class StartRequest:
    """What `w` asked for: worker processes, episodes in flight each, outlive the console."""

    processes: int
    concurrency: int | None
    keep: bool


def parse_start(processes: str, concurrency: str, keep: bool) -> StartRequest:
    """The form's fields as a request; an empty concurrency is `lab worker`'s default
    (each model's own concurrency).

    Raises:
        ConfigError: a field is not a whole number in its range (one line, with an example).
    """
    bound = concurrency.strip()
    return StartRequest(_whole("worker processes", processes, MAX_PROCESSES),
                        _whole("concurrency", bound, MAX_CONCURRENCY) if bound else None,
                        keep)


def _whole(name: str, text: str, top: int) -> int:
    """`text` as a whole number from 1 to `top`, or one line saying what is wrong."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"{name}: {text.strip()!r} is not a whole number, e.g. 2") from None
    if not 1 <= value <= top:
        raise ConfigError(f"{name}: {value} is out of range (1 to {top:,})")
    return value


def start_question(request: StartRequest, db_path: Path) -> Confirm:
    """The confirmation of a start: what runs, where, until when."""
    n = request.processes
    bound = (f"`lab worker --concurrency {request.concurrency}` (at most "
             f"{request.concurrency} episodes in flight, the model's own limit applies)"
             if request.concurrency is not None else
             "`lab worker` (each model's own concurrency in flight)")
    detail = (f"Each runs {bound}, "
              f"logging to {db_path.name}.logs/worker-N.log (L shows the logs).\n"
              + ("They keep running after the console quits (stop them with S, or "
                 "SIGTERM)." if request.keep else
                 f"They stop when the console quits (calls in flight get {GRACE_S:g} s, "
                 f"their jobs are released)."))
    return Confirm(f"Start {n} worker process{'es' if n > 1 else ''} on {db_path}?", detail,
                   f"start {n} worker{'s' if n > 1 else ''}")


class StartForm(ModalScreen[StartRequest | None]):
    """How many worker processes, their concurrency, and whether they outlive the console;
    enter (in a field) or ctrl+s asks to confirm, escape cancels."""

    CSS_PATH = "sets_forms.tcss"
    DEFAULT_CSS = "StartForm { align: center middle; }"
    BINDINGS = [Binding("ctrl+s", "submit", "Start"), Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        """The three fields and the keys line."""
        with Vertical(id="form-box"):
            yield Static("Start local workers (lab worker)", classes="form-title", markup=False)
            yield Horizontal(Label("worker processes", classes="form-label", markup=False),
                             Input("1", id="w-processes"), classes="form-row")
            yield Horizontal(Label("concurrency", classes="form-label", markup=False),
                             Input("", placeholder=MODELS_OWN, id="w-concurrency"),
                             classes="form-row")
            yield TickBox("keep running after the console quits", False, id="w-keep")
            yield Static("enter / ctrl+s = next (y/n asks)    escape = cancel",
                         classes="form-keys", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in a field submits."""
        event.stop()
        self.action_submit()

    def action_submit(self) -> None:
        """Close with the request, or say in one line what is wrong and stay."""
        try:
            request = parse_start(self.query_one("#w-processes", Input).value,
                                  self.query_one("#w-concurrency", Input).value,
                                  self.query_one("#w-keep", Checkbox).value)
        except ConfigError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        self.dismiss(request)

    def action_cancel(self) -> None:
        """Close without starting anything."""
        self.dismiss(None)


class WorkerLogs(ModalScreen[None]):
    """The last lines of each worker's log (the console's folder of logs), newest first;
    the text is shown as it is, never as markup or escapes."""

    DEFAULT_CSS = """
    WorkerLogs { align: center middle; }
    WorkerLogs > VerticalScroll {
        width: 95%; height: 90%; border: heavy $primary; background: $surface;
        padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape", "close", "Close"), Binding("q", "close", "Close",
                                                                 show=False),
                Binding("L", "close", "Close", show=False)]

    def __init__(self, folder: Path, pids: dict[Path, int]) -> None:
        super().__init__()
        self._folder = folder
        self._pids = pids

    def compose(self) -> ComposeResult:
        """Each log: its path (and the pid of a worker this console started), its lines."""
        text = Text()
        logs = worker_logs(self._folder)
        if not logs:
            text.append(f"no worker logs yet in {self._folder}/ (w starts a worker; "
                        f"`lab worker --log-file` writes one anywhere)\n")
        for path, lines in logs:
            pid = self._pids.get(path)
            text.append(f"{path}" + (f"  (pid {pid})" if pid else "") + "\n", style="bold")
            for line in lines or ["(empty)"]:
                text.append(f"  {line}\n")
            text.append("\n")
        text.append(f"last {LOG_LINES} lines of each · escape closes", style="dim")
        with VerticalScroll():
            yield Static(text, markup=False)

    def action_close(self) -> None:
        """Back to the screen."""
        self.dismiss(None)


class WorkerKeys:
    """`w` start, `Z` pause/resume, `S` stop and `L` logs of the console's workers, for a
    `LabScreen` (mixed in before it). Each change asks `y` first, as the Jobs actions do."""

    WORKER_BINDINGS = [Binding("w", "start_workers", "Start worker"),
                       Binding("Z", "pause_workers", "Pause/resume workers", show=False,
                               key_display="Z"),
                       Binding("S", "stop_workers", "Stop workers", show=False,
                               key_display="S"),
                       Binding("L", "worker_logs", "Worker logs", show=False,
                               key_display="L")]
    WORKER_WRITES = frozenset({"start_workers"})

    @property
    def _lab(self) -> LabApp:
        return self.app  # type: ignore[attr-defined]

    def action_start_workers(self) -> None:
        """`w`: the form, then the confirmation, then the processes."""
        app = self._lab

        def confirmed(request: StartRequest, yes: bool | None) -> None:
            if not yes:
                return
            try:
                started = app.local_workers.start(request.processes, request.concurrency,
                                                  request.keep)
            except OSError as exc:
                app.notify(f"cannot start a worker: {exc}", severity="error", timeout=10)
                return
            pids = ", ".join(str(w.pid) for w in started)
            app.notify(f"started {len(started)} worker(s): pid {pids} (L: their logs)",
                       timeout=8)

        def filled(request: StartRequest | None) -> None:
            if request is not None:
                app.push_screen(start_question(request, app.config.db_path),
                                lambda yes: confirmed(request, yes))

        app.push_screen(StartForm(), filled)

    def action_pause_workers(self) -> None:
        """`Z`: pause the console's running workers (SIGSTOP), or resume paused ones."""
        app = self._lab
        running = app.local_workers.running()
        if not running:
            app.notify("no worker started from this console runs (w starts one)",
                       severity="warning")
            return
        pause = not all(w.paused for w in running)
        pids = ", ".join(str(w.pid) for w in running)
        detail = (f"pid {pids}. A worker paused longer than the lease ({app.config.lease_s:g} "
                  f"s) shows LOST and other workers re-take its jobs (nothing is lost)."
                  if pause else f"pid {pids} go on with their jobs.")

        def answered(yes: bool | None) -> None:
            if yes:
                moved = app.local_workers.pause(pause)
                app.notify(f"{'paused' if pause else 'resumed'} {len(moved)} worker(s)")

        verb = "Pause" if pause else "Resume"
        app.push_screen(Confirm(f"{verb} {len(running)} worker(s) started here?", detail,
                                f"{verb.lower()} them"), answered)

    def action_stop_workers(self) -> None:
        """`S`: stop the console's running workers as Ctrl-C stops `lab worker`."""
        app = self._lab
        running = app.local_workers.running()
        if not running:
            app.notify("no worker started from this console runs", severity="warning")
            return
        pids = ", ".join(str(w.pid) for w in running)

        def answered(yes: bool | None) -> None:
            if yes:
                app.notify(f"stopping {len(app.local_workers.stop())} worker(s)")

        app.push_screen(Confirm(f"Stop {len(running)} worker(s) started here?",
                                f"pid {pids}: no new episode starts; calls in flight get "
                                f"{GRACE_S:g} s, then their jobs are released (queued again).",
                                "stop them"), answered)

    def action_worker_logs(self) -> None:
        """`L`: the last lines of each worker's log."""
        app = self._lab
        pids = {w.log: w.pid for w in app.local_workers.started}
        app.push_screen(WorkerLogs(app.log_dir(), pids))


def no_worker_banner(queued: int, live: int) -> Text | None:
    """`N jobs queued, no worker: press w to start one`, while that is so."""
    if queued and not live:
        return Text(f"⚠ {queued:,} job{'s' if queued != 1 else ''} queued, no worker: "
                    f"press w to start one", style="bold yellow")
    return None
