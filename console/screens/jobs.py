"""Jobs (key 4): runs → grids → jobs with progress, rate and ETA; pause, resume,
cancel and retry on the selected node, each behind a one-key confirmation.

Grid progress comes from `jobs.control.status`; a grid's jobs are read (through
`core.store.progress.job_rows`) only once the grid is expanded, so a ledger of
thousands of jobs costs nothing until someone looks at it. Actions call
`jobs.control.control`, the same function as `lab pause|resume|cancel|retry`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Header, Input, Static, Tree
from textual.widgets.tree import TreeNode

from console.messages import Notice
from console.screens.base import LabScreen
from console.widgets.confirm import Confirm
from console.widgets.footer import LabFooter
from console.widgets.jobs_confirm import act_prompt, nothing_text
from console.widgets.jobs_table import (
    JOB_HEADER,
    JOB_SORTS,
    SORT_WORDS,
    job_cells,
    next_job_sort,
    sort_jobs,
)
from console.widgets.table_ops import tsv
from console.widgets.workers import WorkerKeys, no_worker_banner
from core import store
from core.end_reasons import apart_text
from core.errors import LabError
from core.regimes import short_regime
from core.store import monitor, progress
from core.store.endpoints import EndpointDown, endpoints_down
from jobs.control import GridStatus, control, rate_text, run_when, status
from jobs.retry import retry
from jobs.settings import WorkerSettings

BAR = 16
TICK_S = 1.0
"""How often rates and ETAs are recomputed from the last read (no read of lab.db)."""


def bar(done: int, total: int, width: int = BAR) -> str:
    """A text progress bar (readable without colour)."""
    filled = int(width * done / total) if total else width
    return "█" * filled + "░" * (width - filled)


@dataclass(frozen=True)
class JobsData:
    """One read: every grid's status, and the jobs of the expanded grids."""

    grids: list[GridStatus]
    jobs: dict[int, list[progress.JobRow]] = field(default_factory=dict)
    job_errors: dict[int, monitor.JobErrors] = field(default_factory=dict)
    """Episode jobs of the expanded grids: complete and errored questions, newest error."""
    grid_errors: dict[int, str] = field(default_factory=dict)
    """Grid id → its newest error line that still stands."""
    down: list[EndpointDown] = field(default_factory=list)
    """Endpoints a live worker sees down (their models' episodes wait)."""
    workers: list[monitor.WorkerRow] = field(default_factory=list)
    """Every worker as read (`WorkerRow.at` tells which are live now)."""


def read_jobs(db_path: Path, expanded: set[int] | None, now: float,
              lease_s: float = 60.0) -> JobsData:
    """Grid statuses and the jobs of `expanded` grids (None: of every grid, which the
    filter searches; call from a worker)."""
    db = store.connect(db_path, read_only_fallback=True)
    try:
        grids = status(db, now=now)
        if expanded is None:
            expanded = {g.grid for g in grids}
        jobs = {g: progress.job_rows(db, g) for g in expanded}
        errors = {j: e for g in expanded for j, e in monitor.job_errors(
            db, g, {r.id: r.stored - r.errored for r in jobs[g] if r.unit == "episodes"}
        ).items()}
        return JobsData(grids, jobs, errors,
                        monitor.grid_last_errors(db), endpoints_down(db, now=now),
                        monitor.workers(db, lease_s, now=now))
    finally:
        db.conn.close()


def _append_apart(text: Text, truncated: int, refused: int, before: str, after: str) -> None:
    """Append the complete episodes that ended truncated or refused (`core.end_reasons`),
    apart from the errored ones and only when there are some: "⌁ 2 truncated · 1 refused"."""
    counts = apart_text({"truncated": truncated, "refused": refused})
    if counts:
        text.append(f"{before}⌁ {counts}{after}", style="yellow")


def grid_label(g: GridStatus, last_error: str | None = None) -> Text:
    """One grid: bar, stored/expected (a replay grid: its probes), errored, errored ones
    queued to run again, running, rate (`rate_text`: none once nothing runs and nothing
    was stored in the last minute), ETA (none while nothing is queued or running but
    some jobs are paused; `done with errors` when it finished with errored units or
    failed jobs), job states and its newest error line."""
    jobs = " ".join(f"{k} {v:,}" for k, v in g.jobs.items() if v) or "no jobs"
    probes = g.unit == "probes"
    what = f" {g.kind} probes" if probes and g.kind else (" probes" if probes else "")
    text = Text(f"grid {g.grid}  {bar(g.stored, g.expected)} {g.stored:,}/{g.expected:,}{what}  ")
    if g.errored:
        text.append(f"✗ {g.errored:,} errored  ", style="bold red")
    if g.rerun:
        text.append(f"↻ {g.rerun:,} to run again  ", style="yellow")
    _append_apart(text, g.truncated, g.refused, "", "  ")
    rate = rate_text(g.rate, g.active)
    text.append(("" if probes else f"{g.running:,} running  ")
                + (f"{rate}  " if rate else "") + f"{g.when}  [{jobs}]")
    if last_error and g.errored:
        text.append(f"  last error: {last_error}", style="red")  # Tree shows one line
    return text


def run_label(name: str, grids: list[GridStatus]) -> Text:
    """One run: the sums over its grids and when they will be done (`run_when`: its ETA
    only while one of them is queued or running; a finished run with errors says so,
    its ETA never grows)."""
    stored = sum(g.stored for g in grids)
    expected = sum(g.expected for g in grids)
    errored = sum(g.errored for g in grids)
    rate = sum(g.rate for g in grids)
    text = Text(f"run {name}  ", style="bold")
    text.append(f"{bar(stored, expected)} {stored:,}/{expected:,}  ")
    if errored:
        text.append(f"✗ {errored:,} errored  ", style="bold red")
    _append_apart(text, sum(g.truncated for g in grids), sum(g.refused for g in grids),
                  "", "  ")
    shown = rate_text(rate, any(g.active for g in grids))
    text.append(f"{len(grids):,} grid(s)  " + (f"{shown}  " if shown else "") + run_when(grids))
    return text


STATE_MARK = MappingProxyType({"queued": "·", "running": "▶", "paused": "‖", "done": "✓",
                               "failed": "✗", "cancelled": "–"})
STATE_STYLE = MappingProxyType({"failed": "bold red", "running": "bold", "paused": "italic",
                                "cancelled": "dim", "done": ""})


def job_label(j: progress.JobRow, errors: monitor.JobErrors | None = None) -> Text:
    """One job, what tells it apart first: id, state, complete/expected (errored questions
    apart, so a re-queued job shows 0/n until it runs; a replay job: its probes), errored,
    seed, then the cell (regime short: `job_detail` spells it out), attempts and the last
    error (for a wide terminal; at 80 columns the detail line shows it)."""
    done, errored, last = _progress(j, errors)
    text = Text(f"job {j.id:<4} ")
    text.append(f"{STATE_MARK.get(j.state, '')} {j.state:<9}", style=STATE_STYLE.get(j.state, ""))
    what = f" {j.kind} probes" if j.unit == "probes" else ""
    text.append(f" {done:>2}/{j.expected:<2}{what}")
    if errored:
        text.append(f" ✗{errored} errored", style="bold red")
    _append_apart(text, j.truncated, j.refused, " ", "")
    text.append(f"  seed {j.seed}  {j.model} · {j.arm} · "
                f"{short_regime(j.regime)}")
    if j.attempts > 1:
        text.append(f"  attempt {j.attempts}")
    if last:
        text.append(f"  last error: {last}", style="red")
    return text


def _progress(j: progress.JobRow, errors: monitor.JobErrors | None
              ) -> tuple[int, int, str | None]:
    """(complete, errored, last error line to show) of a job."""
    done, errored, last = j.stored - j.errored, j.errored, None
    if errors is not None:
        done, errored, last = errors.complete, errors.errored, errors.last_error
    if j.last_error and j.state in ("failed", "queued"):
        last = j.last_error
    return done, errored, last


def job_detail(j: progress.JobRow, errors: monitor.JobErrors | None = None) -> Text:
    """The highlighted job in full under the tree: its whole cell, progress, attempts and
    last error, wrapped (the row itself is cut at 80 columns)."""
    done, errored, last = _progress(j, errors)
    unit = f"{j.kind} probes" if j.unit == "probes" else j.unit
    text = Text(f"job {j.id} · {j.state} · {j.model} · {j.arm} · "
                f"{j.regime} · seed {j.seed} · budget {j.budget} · {done}/{j.expected} "
                f"{unit} complete", style="bold")
    if errored:
        text.append(f" · ✗ {errored} errored", style="bold red")
    _append_apart(text, j.truncated, j.refused, " · ", "")
    if j.attempts > 1:
        text.append(f" · attempt {j.attempts}")
    if last:
        text.append(f"\nlast error: {last}", style="red")
    return text


def grid_detail(g: GridStatus, last_error: str | None = None) -> Text:
    """The highlighted grid in full under the tree: progress, job states, last error."""
    jobs = ", ".join(f"{v:,} {k}" for k, v in g.jobs.items() if v) or "no jobs"
    unit = f"{g.kind} probes" if g.unit == "probes" and g.kind else g.unit
    text = Text(f"grid {g.grid} of run {g.run} · {g.cells} cell(s) · {g.stored:,}/{g.expected:,} "
                f"{unit} stored · jobs: {jobs}", style="bold")
    if g.errored:
        text.append(f" · ✗ {g.errored:,} errored", style="bold red")
        if g.retry:
            text.append(f" ({g.retry})")
    if g.rerun:
        text.append(f" · ↻ {g.rerun:,} errored, queued to run again", style="yellow")
    _append_apart(text, g.truncated, g.refused, " · ", "")
    if last_error and g.errored:
        text.append(f"\nlast error: {last_error}", style="red")
    return text


class JobsScreen(WorkerKeys, LabScreen):
    """Runs → grids → jobs with pause, resume, cancel and retry."""

    CSS_PATH = "jobs.tcss"
    WRITE_ACTIONS = frozenset({"act"}) | WorkerKeys.WORKER_WRITES
    _filter_text = ""
    """The `/` filter (empty: none); while set, every grid's jobs are read and searched."""
    PACED = True  # every pair of every grid is counted on each read
    BINDINGS = [
        Binding("r", "reload", "Reload"),
        Binding("P", "act('pause')", "Pause", key_display="P"),
        Binding("u", "act('resume')", "Resume"),
        Binding("x", "act('cancel')", "Cancel"),
        Binding("t", "act('retry')", "Retry"),
        Binding("E", "act('retry_errored')", "Retry errored", key_display="E"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("s", "sort_jobs", "Sort jobs", show=False),
        Binding("C", "copy('row')", "Copy row", show=False, key_display="C"),
        Binding("T", "copy('table')", "Copy jobs", show=False, key_display="T"),
        Binding("j", "cursor('down')", "Down", show=False),
        Binding("k", "cursor('up')", "Up", show=False),
        Binding("l", "expand(True)", "Expand", show=False),
        Binding("h", "expand(False)", "Collapse", show=False),
        *WorkerKeys.WORKER_BINDINGS,
    ]
    FOOTER_KEYS = ("act('pause')", "act('resume')", "act('cancel')", "act('retry')",
                   "act('retry_errored')", "filter")
    """The footer's keys, most essential first (LabFooter keeps these and ? q)."""

    @dataclass
    class Loaded(Message):
        """Grid statuses (and the expanded grids' jobs) were read."""

        data: JobsData

    @dataclass
    class Controlled(Message):
        """An action moved jobs (the toast says how many)."""

        text: str

    def compose(self) -> ComposeResult:
        """Header, a filter line (hidden), the tree, a help line, footer."""
        yield Header()
        yield Input(placeholder="filter: run name, model, arm, regime or state (enter)",
                    id="jobs-filter", classes="hidden")
        tree: Tree[tuple[str, int | str]] = Tree("runs", id="jobs-tree")
        tree.show_root = False
        yield Static("", id="jobs-down", classes="hidden", markup=False)
        yield tree
        yield Static("", id="jobs-hint", classes="provenance", markup=False)
        yield LabFooter()

    def on_mount(self) -> None:
        """Remember what is expanded and the nodes by key (LabScreen.on_mount loads)."""
        self._open_grids: set[int] = set()
        self._tree_keys: dict[tuple[str, int | str], TreeNode] = {}
        self._filter_text = ""
        self._job_sort = JOB_SORTS[0]
        """The order of every opened grid's jobs (`s` steps through JOB_SORTS)."""
        self._jobs_data = JobsData([])
        self.query_one(Tree).focus()
        self.set_interval(TICK_S, self._tick)

    def _show_warnings(self, data: JobsData) -> None:
        """Outages, and jobs queued with no live worker: shown only while so."""
        lines = [Text(f"⚠ {d.line()}", style="bold red") for d in data.down]
        now = self.lab.clock()
        banner = no_worker_banner(sum(g.jobs.get("queued", 0) for g in data.grids),
                                  sum(w.at(now, self.lab.lease_s).live for w in data.workers))
        if banner is not None:
            lines.append(banner)
        down = self.query_one("#jobs-down", Static)
        down.update(Text("\n").join(lines))
        down.set_class(not lines, "hidden")

    def _tick(self) -> None:
        """Every second: the runs' and grids' rates and ETAs at the clock's now, from the
        last read (`GridStatus.at`), so they fall when nothing is stored without a read.
        While a re-read after a change is put off (`console.pacing`), episodes are being
        stored and not yet read: they stand as of the last read (the header's time)."""
        data = self._jobs_data
        self._show_warnings(data)
        if not any(g.active for g in data.grids):
            return
        now = self.lab.clock()
        if self._paced is not None and self.read_at is not None:
            now = min(now, self.read_at)
        runs: dict[str, list[GridStatus]] = {}
        for g in (g.at(now) for g in data.grids):
            runs.setdefault(g.run, []).append(g)
            node = self._tree_keys.get(("grid", g.grid))
            if node is not None:
                node.set_label(grid_label(g, data.grid_errors.get(g.grid)))
        for name, grids in runs.items():
            node = self._tree_keys.get(("run", name))
            if node is not None:
                node.set_label(run_label(name, grids))

    def reload(self) -> None:
        """Re-read grid statuses and the expanded grids' jobs (every grid's while a
        filter is on: it searches grids not opened yet too)."""
        self._load(None if self._filter_text else set(self._open_grids))

    @work(thread=True, exclusive=True, group="jobs")
    def _load(self, expanded: set[int] | None) -> None:
        now = self.lab.clock()
        self.post_read(self.Loaded(self.timed_read(
            lambda: read_jobs(self.lab.db_path, expanded, now, self.lab.lease_s))))

    def on_jobs_screen_loaded(self, message: Loaded) -> None:
        """Show what was read."""
        self._show(message.data)

    def _matches(self, text: str) -> bool:
        return not self._filter_text or self._filter_text.lower() in text.lower()

    def _show(self, data: JobsData) -> None:
        self._jobs_data = data
        self._show_warnings(data)
        tree = self.query_one(Tree)
        runs: dict[str, list[GridStatus]] = {}
        for g in data.grids:
            runs.setdefault(g.run, []).append(g)
        wanted: set[tuple[str, int | str]] = set()
        for name, grids in runs.items():
            jobs_of = {g.grid: data.jobs.get(g.grid, []) for g in grids}
            job_hits = {g: [j for j in js
                            if self._matches(job_label(j, data.job_errors.get(j.id)).plain)]
                        for g, js in jobs_of.items()}
            if not (self._matches(name) or any(job_hits.values())):
                continue
            run_node = self._node(tree.root, ("run", name), run_label(name, grids), True)
            wanted.add(("run", name))
            for g in grids:
                if self._filter_text and not self._matches(name) and not job_hits[g.grid]:
                    continue
                grid_node = self._node(run_node, ("grid", g.grid),
                                       grid_label(g, data.grid_errors.get(g.grid)), True,
                                       opened=bool(self._filter_text and job_hits[g.grid]))
                wanted.add(("grid", g.grid))
                shown = sort_jobs(jobs_of[g.grid] if self._matches(name) else job_hits[g.grid],
                                  self._job_sort, self._progress_of)
                for j in shown:
                    self._node(grid_node, ("job", j.id),
                               job_label(j, data.job_errors.get(j.id)), False)
                    wanted.add(("job", j.id))
        for key in [k for k in self._tree_keys if k not in wanted]:
            if key in self._tree_keys:
                self._drop(self._tree_keys[key])
        if tree.cursor_line < 0 and tree.root.children:
            tree.cursor_line = 0  # actions apply at once to the first run
        self._show_detail()

    def _show_detail(self) -> None:
        """The line under the tree: the highlighted node in full (its whole cell and
        last error, wrapped), so nothing cut off a row at 80 columns is out of reach."""
        hint = self.query_one("#jobs-hint", Static)
        data = self._jobs_data
        if not data.grids:
            hint.update("nothing queued yet: enqueue a grid (key 3 or lab enqueue …)")
            return
        if self._filter_text and not self.query_one(Tree).root.children:
            hint.update(Text(f"no job matches '{self._filter_text}' in any grid "
                             "(run, model, arm, regime, state or seed; escape clears)",
                             style="bold yellow"))
            return
        target = self._target()
        kind, value = target if target is not None else ("", 0)
        grids, job = self._scope(kind, value) if target is not None else ([], None)
        if job is not None:
            hint.update(job_detail(job, data.job_errors.get(job.id)))
        elif kind == "grid" and grids:
            text = grid_detail(grids[0], data.grid_errors.get(grids[0].grid))
            text.append("\nenter/l opens its jobs · P u x t E act on it (y/n)", style="dim")
            hint.update(text)
        else:
            hint.update(Text(f"run {value}: enter/l opens a grid · P pause · u resume · "
                             "x cancel · t retry · E errored (y/n)" if kind == "run" else
                             "enter/l opens a grid · P pause · u resume · x cancel · "
                             "t retry · E errored (y/n)"))

    def _progress_of(self, job: progress.JobRow) -> tuple[int, int, str | None]:
        """A job's (complete, errored, last error) as its row shows them."""
        return _progress(job, self._jobs_data.job_errors.get(job.id))

    def action_sort_jobs(self) -> None:
        """s: order every opened grid's jobs by the next field (job id, state, share
        complete, errored, seed, cell); the runs and grids keep their order."""
        self._job_sort = next_job_sort(self._job_sort)
        target = self._target()
        tree = self.query_one(Tree)
        for key in [k for k in self._tree_keys if k[0] == "job"]:
            if key in self._tree_keys:
                self._drop(self._tree_keys[key])
        self._show(self._jobs_data)
        node = self._tree_keys.get(target) if target is not None else None
        if node is not None:  # once the tree has laid out its lines again
            tree.call_after_refresh(tree.move_cursor, node)
        self.notify(f"jobs sorted by {SORT_WORDS[self._job_sort]}", timeout=3, markup=False)

    def action_copy(self, what: str) -> None:
        """C: the highlighted job as a tab-separated row (a run or grid: its line as
        shown); T: the jobs shown under the highlighted run or grid, header first, in the
        tree's order. To the clipboard (OSC 52), with a notice."""
        target = self._target()
        if target is None:
            self.notify("select a run, grid or job first", severity="warning")
            return
        kind, value = target
        grids, job = self._scope(kind, value)
        if what == "row":
            node = self._tree_keys.get(target)
            if job is not None:
                text, said = tsv([job_cells(job, self._progress_of)]), f"job {job.id}"
            elif node is not None:
                text, said = str(node.label.plain if isinstance(node.label, Text)
                                 else node.label), f"{kind} {value}'s line"
            else:
                return
        else:
            rows = [job_cells(j, self._progress_of) for g in grids
                    for j in sort_jobs(self._shown_jobs(g.grid), self._job_sort,
                                       self._progress_of)]
            if not rows:
                self.notify("no jobs shown here: enter opens a grid's jobs", severity="warning")
                return
            text = tsv([list(JOB_HEADER), *rows])
            said = f"{len(rows):,} jobs of {kind} {value} (+ header)"
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {said} to the clipboard", title="copy", timeout=4, markup=False)

    def _shown_jobs(self, grid: int) -> list[progress.JobRow]:
        """A grid's jobs that are in the tree (read and, with a filter on, matching)."""
        return [j for j in self._jobs_data.jobs.get(grid, []) if ("job", j.id) in self._tree_keys]

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        """Show the highlighted node in full under the tree."""
        self._show_detail()

    def _drop(self, node: TreeNode) -> None:
        """Remove a node and forget it and its descendants."""
        stack = [node]
        while stack:
            n = stack.pop()
            if n.data is not None:
                self._tree_keys.pop(n.data, None)
            stack.extend(n.children)
        node.remove()

    def _node(self, parent: TreeNode, key: tuple[str, int | str], label: Text,
              expandable: bool, opened: bool = False) -> TreeNode:
        node = self._tree_keys.get(key)
        if node is None:
            node = (parent.add(label, data=key, allow_expand=True) if expandable
                    else parent.add_leaf(label, data=key))
            if key[0] == "run" or opened or (key[0] == "grid" and key[1] in self._open_grids):
                node.expand()
            self._tree_keys[key] = node
        else:
            node.set_label(label)
        return node

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        """Load a grid's jobs the first time it opens."""
        key = event.node.data
        if key and key[0] == "grid" and key[1] not in self._open_grids:
            self._open_grids.add(int(key[1]))
            self.refresh_data()  # reads every grid again too: the header's time moves

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed) -> None:
        """Stop reading a closed grid's jobs."""
        key = event.node.data
        if key and key[0] == "grid":
            self._open_grids.discard(int(key[1]))
            for child in list(event.node.children):
                self._drop(child)

    def _target(self) -> tuple[str, int | str] | None:
        node = self.query_one(Tree).cursor_node
        return None if node is None or node.data is None else node.data

    def _scope(self, kind: str, value: int | str
               ) -> tuple[list[GridStatus], progress.JobRow | None]:
        """The target's grids (a job's: its grid) and the job, from the last read."""
        grids = self._jobs_data.grids
        if kind == "run":
            return [g for g in grids if g.run == value], None
        if kind == "grid":
            return [g for g in grids if g.grid == value], None
        for grid_id, jobs in self._jobs_data.jobs.items():
            job = next((j for j in jobs if j.id == value), None)
            if job is not None:
                return [g for g in grids if g.grid == grid_id], job
        return [], None

    def action_act(self, action: str) -> None:
        """Say what pause/resume/cancel/retry would change on the selected run, grid or
        job (how many jobs and episodes); `y` does it, `n`/escape does nothing."""
        target = self._target()
        if target is None:
            self.notify("select a run, grid or job first", severity="warning")
            return
        kind, value = target
        prompt = act_prompt(action, kind, value, *self._scope(kind, value))
        if prompt.empty:
            self.notify(nothing_text(action, prompt), severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._control(action, kind, value)

        self.app.push_screen(Confirm(prompt.question, prompt.detail, prompt.yes), answered)

    @work(thread=True, group="jobs-control")
    def _control(self, action: str, kind: str, value: int | str) -> None:
        try:
            with self._write_db(f"{action.replace('_', ' ')} {kind} {value}") as db:
                settings = WorkerSettings(db_path=self.lab.db_path,
                                          config_path=self.lab.config_path)
                if action == "retry_errored":
                    moved = retry(db, settings, kind, value, errored_only=True).jobs
                else:
                    moved = control(db, settings, action, kind, value)
        except LabError as exc:
            self.post_message(Notice(str(exc), severity="error"))
            return
        self.post_message(self.Controlled(f"{action.replace('_', ' ')}: {len(moved)} "
                                          f"job(s) of {kind} {value}"))

    def on_jobs_screen_controlled(self, message: Controlled) -> None:
        """Say what moved and re-read."""
        self.notify(message.text)
        self.refresh_data()

    def action_cursor(self, direction: str) -> None:
        """vi keys: j / k move the cursor."""
        tree = self.query_one(Tree)
        tree.action_cursor_down() if direction == "down" else tree.action_cursor_up()

    def action_expand(self, open_: bool) -> None:
        """vi keys: l expands, h collapses the node under the cursor."""
        node = self.query_one(Tree).cursor_node
        if node is not None:
            node.expand() if open_ else node.collapse()

    def action_filter(self) -> None:
        """Show the filter line."""
        box = self.query_one("#jobs-filter", Input)
        box.remove_class("hidden")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Apply the filter and go back to the tree."""
        self._filter_text = event.value.strip()
        if not self._filter_text:
            event.input.add_class("hidden")
        self._rebuild()
        self.refresh_data()  # a filter reads every grid's jobs, opened or not

    def _rebuild(self) -> None:
        self.query_one(Tree).focus()
        for node in list(self.query_one(Tree).root.children):
            self._drop(node)
        self._show(self._jobs_data)

    def action_clear_filter(self) -> None:
        """escape: clear the filter."""
        box = self.query_one("#jobs-filter", Input)
        box.value = ""
        box.add_class("hidden")
        self._filter_text = ""
        self._rebuild()
        self.refresh_data()
