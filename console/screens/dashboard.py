"""Dashboard (key 1): queue, workers, throughput, endpoints, spend, recent events.

Everything is read in thread workers through `core.store.monitor`; the endpoint
check (HTTP, up to a couple of seconds) runs in its own worker, on mount and on `h`,
so the screen never waits for a server. At 80 columns the panels stack; from
`WIDE` columns the events take a column of their own, as tall as the screen, their
details wrapped rather than cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Header, Static

from console.messages import Notice
from console.screens.base import LabScreen
from console.widgets.footer import LabFooter
from console.widgets.measured_table import MeasuredTable
from console.widgets.workers import WorkerKeys, no_worker_banner
from core import store
from core.end_reasons import apart_text
from core.errors import LabError
from core.inert import inert
from core.store import jobs as ledger
from core.store import monitor
from core.store.endpoints import EndpointDown, endpoints_down
from core.store.tally import QueueTally, SpendTally
from core.wording import plural

CHECK_TIMEOUT_S = 2.0
TICK_S = 1.0
"""How often ages, worker states and the rate are recomputed from the last read."""
WIDE = 160
EVENTS = 40
"""Events read: a tall wide terminal shows them all, a narrow one scrolls."""
MODEL_WIDTH = 24
"""A longer model name is cut with "…" in the spend table, so `$` always shows."""


@dataclass(frozen=True)
class DashboardData:
    """One read of everything the dashboard shows."""

    queue: monitor.QueueCounts
    workers: list[monitor.WorkerRow]
    servers: list[dict]
    events: list[monitor.Event]
    reasons: tuple[monitor.ErrorReason, ...] = ()
    """Errored episodes and probes by reason (`monitor.errored_by_reason`)."""
    stopped_old: int = 0
    """Stopped workers silent for over an hour, shown as one line (`collapse_stopped`)."""
    down: tuple[EndpointDown, ...] = ()
    """Endpoints a live worker sees down (its model's episodes wait for them)."""
    retryable: int = 0
    """Errored pairs a retry would queue again (`core.store.jobs.retryable_pairs`): not
    those completed since, nor those a queued or running job holds."""


@dataclass(frozen=True)
class Endpoint:
    """One model endpoint of the registry and what its check said."""

    model: str
    backend: str
    endpoint: str
    health: str


def read_dashboard(db_path: Path, lease_s: float, now: float,
                   tally: QueueTally | None = None) -> DashboardData:
    """Read the dashboard's data but spend on a connection of its own (call from a
    worker); `tally` keeps the episodes' counts between reads (`core.store.tally`)."""
    db = store.connect(db_path, read_only_fallback=True)
    try:
        queue = monitor.queue_counts(db, now=now, tally=tally)
        workers, stopped_old = monitor.collapse_stopped(monitor.workers(db, lease_s, now=now))
        return DashboardData(queue, workers, monitor.servers(db),
                             monitor.recent_events(db, limit=EVENTS),
                             tuple(monitor.errored_by_reason(db)), stopped_old,
                             tuple(endpoints_down(db, now=now, stale_s=lease_s)),
                             ledger.retryable_pairs(db) if queue.errored else 0)
    finally:
        db.conn.close()


def read_spend(db_path: Path, tally: SpendTally | None = None) -> monitor.SpendCounted:
    """Spend per model, errored episodes only where they made calls: a count of every
    episode, so read apart (call from a worker); `tally` keeps it between reads, each
    read counting only the episodes stored since (`core.store.tally`)."""
    db = store.connect(db_path, read_only_fallback=True)
    try:
        return monitor.spend_counted(db, tally)
    finally:
        db.conn.close()


def spend_title(spent: monitor.SpendCounted) -> str:
    """What the spend table counts, errored episodes included only where calls were made."""
    title = "Spend so far (complete episodes"
    if spent.errored_with_calls:
        title += f" + {spent.errored_with_calls:,} errored that made calls"
    title += ")"
    if spent.errored_without_calls:
        title += f"; {spent.errored_without_calls:,} errored without a call are not spend"
    if spent.made_elsewhere:
        title += (f"; {spent.made_elsewhere:,} imported (no tokens: run elsewhere) are not "
                  "spend")
    return title


def clip(text: str, width: int) -> str:
    """`text` cut to `width` characters, "…" marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def check_endpoints(config_path: Path, check: bool) -> list[Endpoint]:
    """The registry's endpoints, each checked over HTTP when `check` (call from a worker)."""
    from core.models.endpoint_url import redact_endpoint
    from core.models.registry import load_registry

    out = []
    for name, spec in sorted(load_registry(config_path).items()):
        config = spec.config
        for url in config.served_at():
            health = ("not checked here (lab models --check-api)" if config.check_needs_key
                      else config.check_server(url, CHECK_TIMEOUT_S) if check
                      else "not checked (h checks)")
            out.append(Endpoint(name, spec.backend, redact_endpoint(url), health))
    return out


def registry_stamp(config_path: Path) -> tuple[int, int] | None:
    """When lab.toml last changed (mtime, size), None when there is none: the Dashboard
    lists the endpoints again when it moves."""
    try:
        st = Path(config_path).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.0f}h ago"


def _short_time(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso).strftime("%m-%d %H:%M:%S")
    except ValueError:
        return iso


STATE_MARK = MappingProxyType({"running": "● running", "stopping": "◐ stopping",
                               "stopped": "○ stopped", "lost": "✗ LOST"})


class DashboardScreen(WorkerKeys, LabScreen):
    """Queue counts, workers, throughput, endpoints, spend and recent events; the
    console's own workers (`w` start, `Z` pause, `S` stop, `L` logs)."""

    CSS_PATH = "dashboard.tcss"
    _events: tuple[monitor.Event, ...] = ()
    _detail_width = 0
    _data: DashboardData | None = None
    PACED = True  # the probes are counted anew on each read
    BINDINGS = [Binding("r", "reload", "Reload"),
                Binding("h", "check_endpoints", "Check endpoints"),
                Binding("W", "report", "Write report", show=False),
                *WorkerKeys.WORKER_BINDINGS]
    WRITE_ACTIONS = WorkerKeys.WORKER_WRITES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the counts over every episode, kept between the reads of each second
        self._queue_tally = QueueTally()
        self._spend_tally = SpendTally()

    @dataclass
    class Read(Message):
        """Queue, workers, servers and events were read."""

        data: DashboardData

    @dataclass
    class SpendRead(Message):
        """Spend per model was counted."""

        spend: monitor.SpendCounted

    @dataclass
    class Checked(Message):
        """The registry's endpoints (checked over HTTP, or not)."""

        endpoints: list[Endpoint]

    def compose(self) -> ComposeResult:
        """Header, the six panels, footer."""
        yield Header()
        with VerticalScroll(id="dash"):
            with Vertical(id="dash-left"):
                with Vertical(id="dash-queue", classes="panel"):
                    yield Static("Queue", classes="panel-title", markup=False)
                    yield Static("reading lab.db …", id="queue-text", markup=False)
                with Vertical(classes="panel"):
                    yield Static("Workers", classes="panel-title", markup=False)
                    yield MeasuredTable(id="workers", cursor_type="row", show_cursor=False)
                with Vertical(classes="panel"):
                    yield Static("Spend so far (complete episodes)", id="spend-title",
                                 classes="panel-title", markup=False)
                    yield MeasuredTable(id="spend", cursor_type="row", show_cursor=False)
                with Vertical(classes="panel"):
                    yield Static("Endpoints", classes="panel-title", markup=False)
                    yield MeasuredTable(id="endpoints", cursor_type="row", show_cursor=False)
            with Vertical(id="dash-right", classes="panel"):
                yield Static("Recent events", classes="panel-title", markup=False)
                yield MeasuredTable(id="events", cursor_type="row", show_cursor=False)
        yield LabFooter()

    def on_mount(self) -> None:
        """Set the tables' columns and check endpoints (LabScreen.on_mount then loads)."""
        self.query_one("#workers", DataTable).add_columns("worker", "state", "heartbeat",
                                                           "jobs held")
        self.query_one("#spend", DataTable).add_columns(  # $ second: never cut off
            "model", "$", "episodes", "in tok", "out tok", "cache rd", "cache wr")
        self.query_one("#endpoints", DataTable).add_columns("model", "kind", "endpoint",
                                                             "health / server")
        self._endpoints: list[Endpoint] = []
        self._servers: list[dict] = []
        self._registry_stamp = registry_stamp(self.lab.config_path)
        self._check(self.lab.check_endpoints)
        self.set_interval(TICK_S, self._tick)

    def on_resize(self, event: events.Resize) -> None:
        """On a wide terminal the events get a column of their own; their details wrap
        at the width they have."""
        wide = event.size.width >= WIDE
        self.query_one("#dash").set_class(wide, "wide")
        self._detail_width = max(24, (event.size.width // 2 if wide else event.size.width)
                                 - 14 - 9 - 12)  # time and kind columns, paddings, scrollbar
        self._render_events()

    def reload(self) -> None:
        """Re-read the queue, workers, servers and events, and (apart, slower) spend."""
        self._load()
        self._load_spend()

    def action_check_endpoints(self) -> None:
        """Check every registry endpoint now (in a worker)."""
        self.notify("checking endpoints …", timeout=2)
        self._check(True)

    @dataclass
    class ReportWritten(Message):
        """The study's report was written (`W`)."""

        path: Path
        size: int

    def action_report(self) -> None:
        """Write the study's report (`lab report`) into the console's export folder."""
        self.notify("writing the report …", timeout=3)
        self._report()

    @work(thread=True, exclusive=True, group="dashboard-report")
    def _report(self) -> None:
        from analysis.report import write_study_report

        stamp = datetime.fromtimestamp(self.lab.clock()).strftime("%Y%m%d-%H%M%S")
        path = Path(self.lab.export_dir) / f"report-{stamp}.html"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._db() as db:
                _, size = write_study_report(db, path, resamples=self.lab.n_boot,
                                             seed=self.lab.seed,
                                             db_name=Path(self.lab.db_path).name)
        except (LabError, OSError) as exc:
            self.post_message(Notice(f"report failed: {exc}", severity="error"))
            return
        self.post_message(self.ReportWritten(path, size))

    def on_dashboard_screen_report_written(self, message: ReportWritten) -> None:
        """Tell where the report went."""
        self.notify(f"{message.path.name}\nwritten in {message.path.parent}/ "
                    f"({message.size / 1e6:.1f} MB)", title="report", timeout=15,
                    markup=False)

    @work(thread=True, exclusive=True, group="dashboard")
    def _load(self) -> None:
        now = self.lab.clock()
        self.post_read(self.Read(self.timed_read(lambda: read_dashboard(
            self.lab.db_path, self.lab.lease_s, now, self._queue_tally))))

    @work(thread=True, exclusive=True, group="dashboard-spend")
    def _load_spend(self) -> None:
        self.post_read(self.SpendRead(self.timed_read(
            lambda: read_spend(self.lab.db_path, self._spend_tally))))

    @work(thread=True, exclusive=True, group="dashboard-health")
    def _check(self, check: bool) -> None:
        try:
            endpoints = check_endpoints(self.lab.config_path, check)
        except LabError as exc:  # lab.toml mid-edit or broken: say so, keep the list shown
            self.post_message(Notice(f"endpoints not listed again: {exc}", severity="warning"))
            return
        self.post_read(self.Checked(endpoints))

    def on_dashboard_screen_read(self, message: Read) -> None:
        """Show the queue, workers, servers and events."""
        data = message.data
        self._data = data
        self._render_live(data)

        self._servers = data.servers
        self._render_endpoints()

        self._events = tuple(data.events)
        self._render_events()

    def _tick(self) -> None:
        """Every second: ages, states and the rate at the clock's now from the last read
        (no read of lab.db), so a worker that went silent turns LOST within the lease and
        the rate falls without a key."""
        if self._data is not None:
            self._render_live(self._data)
        stamp = registry_stamp(self.lab.config_path)
        if stamp != self._registry_stamp:  # lab.toml was edited: its endpoints changed
            self._registry_stamp = stamp
            self._check(self.lab.check_endpoints)

    def _render_live(self, data: DashboardData) -> None:
        """The queue panel and the workers as they read at the clock's now."""
        now = self.lab.clock()
        q = data.queue
        jobs = "  ".join(f"{state} {q.jobs[state]:,}" for state in monitor.JOB_STATES)
        text = Text()
        text.append("jobs      ", style="bold")
        text.append(jobs + "\n")
        text.append("episodes  ", style="bold")
        text.append(f"{q.episodes:,} stored · ")
        text.append(f"{q.errored:,} errored", style="bold red" if q.errored else "")
        text.append(f" (excluded from analysis; E on Jobs (4) retries {data.retryable:,})"
                    if data.retryable else " (excluded from analysis)")
        apart = apart_text({"truncated": q.truncated, "refused": q.refused})
        if apart:  # complete episodes without an answer, neither errors nor format failures
            text.append(f" · {apart}", style="yellow")
            text.append(" (complete, counted as not answering)")
        text.append("\n")
        text.append("rate      ", style="bold")
        rate, covered = q.rate_at(now)
        text.append(f"{rate:,.1f} episodes/s over the last {covered:.0f} s")
        if q.probes or q.probes_errored:
            text.append("\nprobes    ", style="bold")
            text.append(f"{q.probes:,} stored, ")
            text.append(f"{q.probes_errored:,} errored", style="bold red" if q.probes_errored
                        else "")
            text.append(f", {q.probe_rate:,.1f}/s")
        aged = [w.at(now, self.lab.lease_s) for w in data.workers]
        banner = no_worker_banner(q.jobs.get("queued", 0), sum(w.live for w in aged))
        if banner is not None:
            text.append("\n")
            text.append_text(banner)
        for d in data.down:  # an outage: episodes wait for the endpoint (plain text, no markup)
            text.append(f"\n⚠ {inert(d.line())}", style="bold red")
        for r in data.reasons[:5]:
            text.append(f"\n✗ {r.count:,} {r.unit} {r.reason}: ", style="bold red")
            text.append(inert(r.example.removeprefix(r.reason + ": ")), style="red")
        self.query_one("#queue-text", Static).update(text)

        workers = self.query_one("#workers", DataTable)
        workers.clear()
        for w in aged:
            state = Text(STATE_MARK.get(w.state, w.state),
                         style="bold red" if w.state == "lost" else "")
            workers.add_row(w.id, state, _ago(w.age_s), str(w.jobs))
        if data.stopped_old:  # "3 more" below the rows, "3 workers" when they are all
            workers.add_row(f"{data.stopped_old} more" if data.workers
                            else plural(data.stopped_old, "worker"),
                            STATE_MARK["stopped"], "over 1h ago", "0")
        if not data.workers and not data.stopped_old:
            workers.add_row("no worker has run yet", "-", "-", "-")

    def _render_events(self) -> None:
        """The events, each detail wrapped in its column (a row as tall as it needs)."""
        table = self.query_one("#events", DataTable)
        table.clear(columns=True)
        width = self._detail_width or 40
        table.add_column("at (UTC)", key="at")
        table.add_column("event", key="event")
        table.add_column("detail", key="detail", width=width)
        for e in self._events:
            style = "bold red" if e.kind == "failed" else ""
            table.add_row(_short_time(e.at), Text(e.kind, style=style), Text(inert(e.detail)),
                          height=None)
        if not self._events:
            table.add_row("-", "-", "no events yet (enqueue, freeze, pause, retry …)",
                          height=None)

    def on_dashboard_screen_spend_read(self, message: SpendRead) -> None:
        """Show the spend table."""
        spent = message.spend
        self.query_one("#spend-title", Static).update(spend_title(spent))
        spend = self.query_one("#spend", DataTable)
        spend.clear()
        for s in spent.rows:
            spend.add_row(clip(inert(s.model), MODEL_WIDTH), f"{s.dollars:,.2f}", f"{s.episodes:,}",
                          f"{s.input_tokens:,}", f"{s.output_tokens:,}",
                          f"{s.cache_read_tokens:,}", f"{s.cache_write_tokens:,}")
        if not spent.rows:
            spend.add_row("no episodes yet", "0.00", "0", "0", "0", "0", "0")

    def on_dashboard_screen_checked(self, message: Checked) -> None:
        """Show the endpoints and what their check said."""
        self._endpoints = message.endpoints
        self._render_endpoints()

    def _render_endpoints(self) -> None:
        table = self.query_one("#endpoints", DataTable)
        table.clear()
        served = {s["endpoint"]: s for s in self._servers}
        for e in self._endpoints:
            health = e.health
            s = served.pop(e.endpoint, None)
            if s is not None:
                up = "stopped" if s["stopped_at"] else "started"
                health += f"; lab serve: {s['served_model']} {s['version'] or ''} {up}"
            bad = health.startswith("unreachable")
            table.add_row(inert(e.model), e.backend, inert(e.endpoint),
                          Text(("✗ " if bad else "") + inert(health),
                               style="bold red" if bad else ""))
        for endpoint, s in served.items():
            up = "stopped" if s["stopped_at"] else "started " + _short_time(s["started_at"])
            table.add_row(s["model"], "vLLM", endpoint, f"not in the registry; {up}")
        if table.row_count == 0:
            table.add_row("built-in sims only", "-", "-", "no endpoints to check")
