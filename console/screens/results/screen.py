"""Results screen (key 7, docs/console.md): the results tables of `lab results`, the Δ grid
with its drill-down into decision points, the hazard chart, and CSV export.

A tab per view (`[`/`]` or the arrows on the tabs): Success (with paired
differences), Δ grid, I, Hazard (β/γ and the curve), Answering, Cost, Policies,
Controllers, and the second seed's tables on stored trace states (Trace T1–T3, the
sweeps with their charts, the calibration record: `lab results trace_*`): one tab per
view of `analysis.tables.registry`, in its order. Every number
comes from `analysis.tables.results.results_for` in a thread worker with the console's
`n_boot`/`hazard_boot`/`seed` (by default the CLI's: 2,000 question-level resamples,
hazard model 1,000, seed 0), so the screen shows what `lab results` prints for the
same selection. Tables fit the screen's width: a wide one is split into blocks that
each repeat the key columns that tell its rows apart (model, arm, run, seed …; a row
number keying the first block when they leave no room), so none scrolls out of sight;
the Δ grid keeps its row labels pinned, as wide as the arms' columns leave (at least 26
columns; a longer label is elided in the middle, so the seed at its end stays; the full
cover is in the line under it). On the Δ grid,
Enter lists the cell's decisions in groups (a) and (b); Enter on one opens that
trajectory at that action on the Trajectories screen. When new episodes arrive the
numbers stay as they are, marked stale, until `r` recomputes them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Region, Size
from textual.message import Message
from textual.widgets import ContentSwitcher, DataTable, Header, Input, Static, Tab, Tabs

from analysis.tables.registry import EPISODES, TRACES, TableDef, views
from console.messages import DbChanged
from console.screens.base import LabScreen
from console.screens.results.errored import ErroredLeftOut
from console.screens.results.selection import parse_selection
from console.screens.results.stale import stale_note
from console.screens.results.table_cursor import Layout
from console.screens.results.widgets import DrillTable, GridTable, TableScroll
from console.widgets.footer import LabFooter
from console.widgets.table_ops import Sort, copy_text, datatable_cells, next_sort
from console.widgets.text_lines import TextLines
from core import store
from core.errors import ConfigError, LabError
from core.inert import inert
from core.store import trajectories as traj
from core.store.selection import Fingerprint, Selection
from core.wording import plural

if TYPE_CHECKING:
    import pandas as pd
    from sqlite_utils import Database

    from analysis.measures.drilldown import CellDecisions
    from analysis.measures.frames import Frames
    from analysis.measures.results import Results
    from console.screens.results.views import Grid

N_BOOT, HAZARD_BOOT, SEED = 2000, 1000, 0
"""The CLI's defaults (`lab results`), also `ConsoleConfig`'s: the same numbers."""


@dataclass(frozen=True)
class Computed:
    """What one view shows, computed in a worker."""

    view: str
    tables: tuple[Any, ...]
    text: str
    charts: tuple[str, ...]
    results: Results
    seconds: float
    note: str = ""
    """A line shown above the tables (repaired answers)."""
    width: int = 0
    """The width `text` was fitted to (shown at another, it is fitted again)."""
    layout: Layout | None = None
    """Where the tables' rows and cells sit in `text` (the cursor, sort, search, copy)."""
    more_charts: bool = False
    """Only the first model's chart is in `charts`; the others are being drawn."""


def text_width(screen_width: int) -> int:
    """Columns a table may take on the text view (its padding and scrollbar apart)."""
    return max(screen_width - 4, 40)


PER_MODEL_CHARTS = ("hazard", "answering")
"""Views with a chart per model above their tables."""


def view_table(view: str) -> TableDef:
    """The registry's table a view shows."""
    return next(t for v, t in views() if v.id == view)


def shows_grid(view: str, tables: tuple[Any, ...]) -> bool:
    """Whether the view is drawn as the Δ grid (then its text is never shown, so it is not
    laid out: 0.1–0.2 s of the Δ tab at 200,000 episodes); a Δ table with no rows is
    shown as text."""
    from console.screens.results.views import variants

    return view == "delta" and bool(tables) and bool(variants(tables[0]))


def _repaired_note(repaired: int | None) -> str:
    """The line above the tables when repaired answers were asked for ("" otherwise)."""
    if repaired is None:
        return ""
    return (f"repaired answers (lab repair) replace the raw ones of "
            f"{plural(repaired, 'episode')}; "
            f"raw results are primary (R: back to raw)" if repaired else
            "no repaired answers stored (lab repair --run R); raw answers shown")


class ResultsScreen(LabScreen):
    """Results tables, the Δ grid and its drill-down, charts, export."""

    CSS_PATH = "results.tcss"
    BINDINGS = [
        Binding("right_square_bracket", "tab(1)", "Next table", key_display="]"),
        Binding("left_square_bracket", "tab(-1)", "Prev table", key_display="["),
        Binding("v", "variant", "Δ variant"),
        Binding("e", "export", "Export"),
        Binding("F", "figures", "Figure", show=False),
        Binding("R", "repaired", "Repaired"),
        Binding("colon", "select", "Selection", key_display=":"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("n", "next_match(1)", "Next match", show=False),
        Binding("N", "next_match(-1)", "Prev match", show=False, key_display="N"),
        Binding("s", "sort", "Sort"),
        Binding("c", "copy('cell')", "Copy cell"),
        Binding("C", "copy('row')", "Copy row", show=False, key_display="C"),
        Binding("T", "copy('table')", "Copy table", show=False, key_display="T"),
        Binding("g", "ends(-1)", "Top", show=False),
        Binding("G", "ends(1)", "Bottom", show=False, key_display="G"),
        Binding("escape", "back", "Back"),
        Binding("j", "cursor(1, 0)", "Down", show=False),
        Binding("k", "cursor(-1, 0)", "Up", show=False),
        Binding("h", "cursor(0, -1)", "Left", show=False),
        Binding("l", "cursor(0, 1)", "Right", show=False),
    ]
    FOOTER_KEYS = ("search", "tab(1)", "sort", "copy('cell')", "variant", "select",
                   "export", "select_cursor", "tab(-1)")
    """The footer's keys, most essential first (LabFooter keeps these and ? q)."""

    @dataclass
    class Provenance(Message):
        """The provenance line was read."""

        text: str

    @dataclass
    class Ready(Message):
        """A view was computed."""

        computed: Computed
        fingerprint: Fingerprint
        generation: int

    @dataclass
    class ChartsDrawn(Message):
        """Every model's chart of a view, drawn after its first frame."""

        view: str
        charts: tuple[str, ...]
        generation: int

    @dataclass
    class FramesLoaded(Message):
        """The selection's episode frames were read (kept for the next views)."""

        frames: Frames
        generation: int
        errored: ErroredLeftOut
        """Its errored episodes by the jobs that hold them, read with it."""

    @dataclass
    class Drilled(Message):
        """The decisions of one Δ cell were listed."""

        title: str
        decisions: CellDecisions

    @dataclass
    class Stale(Message):
        """lab.db changed since the numbers on show were computed (`stale_note`)."""

        note: str

    @dataclass
    class ErroredRead(Message):
        """The jobs holding the errored episodes' questions were read again."""

        errored: ErroredLeftOut
        generation: int

    @dataclass
    class Exported(Message):
        """A CSV was written."""

        path: Path

    @dataclass
    class Failed(Message):
        """A read or computation failed with a LabError."""

        error: str

    def __init__(self) -> None:
        super().__init__()
        self.selection = Selection()
        self.selection_text = ""
        self.view = "success"
        self._frames: Frames | None = None
        self._errored = ErroredLeftOut(0)
        """What will become of the frames' errored episodes (`errored.errored_left_out`)."""
        self._fingerprint: Fingerprint | None = None
        """The state of lab.db the numbers on show were computed from (the selection's
        episodes and lab.db's change counter): another state marks them stale."""
        self._computed: dict[str, Computed] = {}
        self._grid: Grid | None = None
        self._variant = 0
        self._drill: CellDecisions | None = None
        self._provenance = ""
        self._stale = ""
        """What changed in lab.db since the numbers on show were computed ("": nothing
        seen)."""
        self._generation = 0
        self.repaired = False
        """Whether stored answer repairs (`lab repair`) replace the raw answers."""
        self._sorts: dict[str, dict[int, Sort]] = {}
        """Per view, per table index: the column its rows are sorted by."""
        self._cursor = (0, 0, 0)
        """The table cursor on the text view: (table, row as shown, column)."""
        self._query = ""
        self._found: list[tuple[int, int, int]] = []
        self._found_at = -1
        self._asked: tuple[str, int] | None = None
        """(view, generation) of the computation started last (not asked again while it
        runs; None after a failure, so showing the view again retries)."""
        self._early_error: str | None = None
        """A failure of the computation asked for at compose, before the screen's first
        read: that read shows it (once) instead of asking again."""

    def compose(self) -> ComposeResult:
        """Provenance, tabs, status, the body views, footer; the first view's computation
        starts now, while the screen is mounted and drawn (`_ask`), unless the screen is
        mounted unseen (`premounted`: then when first shown, `first_show`)."""
        if not self.premounted:
            self._ask()
        yield Header()
        yield Static("reading runs…", id="results-prov", classes="provenance", markup=False)
        yield Tabs(*(Tab(v.label, id=f"tab-{v.id}") for v, _ in views()), id="results-tabs")
        yield Input(placeholder="run=main models=sim-own5 conditions=none,enforced_rule:k=7 "
                                "seeds=0,1 pool=seeds  (empty: everything)",
                    id="results-select")
        yield Input(placeholder="search the tables shown (enter: go; n/N: next/previous; "
                                "escape: clear)", id="results-search")
        yield Static("computing…", id="results-status", markup=False)
        with ContentSwitcher(initial="results-text-view", id="results-body"):
            with TableScroll(id="results-text-view"):
                yield Static(id="results-chart", markup=False)
                yield TextLines(id="results-text")
            with Vertical(id="results-delta"):
                yield GridTable(id="results-grid", cursor_type="cell", fixed_columns=1)
                yield Static(id="results-cell", markup=False)
            with Vertical(id="results-drill"):
                yield Static(id="results-drill-head", markup=False)
                yield DrillTable(id="results-drill-table", cursor_type="row")
        yield LabFooter()

    # ── keys ────────────────────────────────────────────────────────────────────────

    def _body(self) -> str:
        return self.query_one("#results-body", ContentSwitcher).current or ""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer only the keys that do something here."""
        if action == "variant":
            return self.view == "delta" and self._body() == "results-delta"
        if action == "back":
            return (self._body() == "results-drill" or bool(self._query)
                    or self.query_one("#results-select").has_class("shown")
                    or self.query_one("#results-search").has_class("shown"))
        if action in ("export", "figures"):
            return True if self.view in self._computed else self._computing()
        if action in ("sort", "search", "ends"):
            return True if self._body() == "results-text-view" and self._layout() is not None \
                else self._computing()
        if action == "next_match":
            return bool(self._found)
        if action == "copy":
            return True if (self._body() == "results-text-view" and self._layout() is not None
                            ) or self._body() in ("results-delta", "results-drill") \
                else self._computing()
        return True

    def _computing(self) -> bool | None:
        """A table key's state while no table is shown: dimmed (None) while the view is
        being computed (or, on a screen mounted unseen, is about to be: its first show
        computes it), so the footer keeps its keys and only lights them when the table
        arrives (`LabFooter` restyles them in place); else hidden (False)."""
        return None if self.view not in self._computed and (
            self._asked == (self.view, self._generation) or self.premounted) else False

    def action_tab(self, delta: int) -> None:
        """Show the next or previous table."""
        ids = [v.id for v, _ in views()]
        self.view = ids[(ids.index(self.view) + delta) % len(ids)]
        self._cursor, self._found, self._found_at = (0, 0, 0), [], -1
        self.query_one("#results-tabs", Tabs).active = f"tab-{self.view}"
        self._show_view()

    @on(Tabs.TabActivated, "#results-tabs")
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        view = (event.tab.id or "tab-success").removeprefix("tab-")
        if view != self.view:
            self.view = view
            self._cursor, self._found, self._found_at = (0, 0, 0), [], -1
            self._show_view()

    def action_variant(self) -> None:
        """Cycle the Δ variant shown on the grid (judgments, strata, design contrast)."""
        self._variant += 1
        self._show_view()

    def action_repaired(self) -> None:
        """Toggle repaired answers (as `lab results --repaired`) and recompute."""
        self.repaired = not self.repaired
        self._computed.clear()
        self._generation += 1
        self.notify("repaired answers (lab repair) replace the raw ones where stored"
                    if self.repaired else "raw answers (primary)")
        self._show_view()

    def action_select(self) -> None:
        """Open the selection input (the options of `lab results`)."""
        box = self.query_one("#results-select", Input)
        box.value = self.selection_text
        box.add_class("shown")
        box.focus()
        self.refresh_bindings()

    @on(Input.Submitted, "#results-select")
    def _select_submitted(self, event: Input.Submitted) -> None:
        try:
            self.selection_text, self.selection = parse_selection(event.value)
        except LabError as exc:
            self.notify(str(exc), severity="error")
            return
        event.input.remove_class("shown")
        self._forget()
        self.refresh_data()

    def drilled_in(self) -> bool:
        """A Δ cell's decisions are open: q goes back to the grid."""
        return self._body() == "results-drill"

    def action_back(self) -> None:
        """Close the selection input, or go back from the decision list to the grid."""
        box = self.query_one("#results-select", Input)
        search = self.query_one("#results-search", Input)
        if box.has_class("shown"):
            box.remove_class("shown")
            self._switch(self._body() or "results-text-view")
        elif search.has_class("shown") or self._query:
            search.remove_class("shown")
            self._query, self._found, self._found_at = "", [], -1
            self._switch(self._body() or "results-text-view")
            self._mark()
        elif self._body() == "results-drill":
            self._switch("results-delta")
        self.refresh_bindings()

    def action_cursor(self, rows: int, cols: int) -> None:
        """vi keys on the grid and the decision list."""
        body = self._body()
        if body == "results-delta":
            grid = self.query_one("#results-grid", DataTable)
            grid.move_cursor(row=max(grid.cursor_row + rows, 0),
                             column=max(grid.cursor_column + cols, 0))
        elif body == "results-drill" and rows:
            table = self.query_one("#results-drill-table", DataTable)
            table.move_cursor(row=max(table.cursor_row + rows, 0))
        elif body == "results-text-view":
            self.table_move(rows, cols)

    def action_reload(self) -> None:
        """Recompute from lab.db now."""
        self._forget()
        self.refresh_data()

    def _forget(self) -> None:
        """Drop what was computed; results of computations still running are ignored."""
        self._frames, self._computed = None, {}
        self._generation += 1

    def action_export(self) -> None:
        """Write the table shown to CSV in the console's export folder."""
        computed = self._computed.get(self.view)
        if computed is not None:
            self._export(computed)

    def action_figures(self) -> None:
        """Write the figure of the table shown (`lab figures`), with its sidecar .json,
        in a folder of the console's export folder."""
        if self.view in self._computed:
            self._figures(self.view, self.selection)

    # ── reading and computing (thread workers) ─────────────────────────────────────────

    async def prepare_unseen(self, size: Size) -> None:
        """(premounted) Focus the text view, as the first view's "computing…" does, and
        the base's preparation; the footer lists the table keys dimmed, as while the
        first view is computed."""
        self.set_focus(self.query_one("#results-text-view"), scroll_visible=False)
        await super().prepare_unseen(size)

    def first_show(self) -> None:
        """Shown for the first time: the first view's computation starts at once, before
        the screen is laid out (`_ask`: the app's size serves), then the usual load."""
        self._ask()
        super().first_show()

    def reload(self) -> None:
        """Read the provenance line at once, then compute the view on show."""
        self._read_provenance()
        self._show_view()

    def on_db_changed(self, message: DbChanged) -> None:
        """New data: keep the numbers on show, mark them stale when episodes were added.

        The base screen's handler (a reload) is not run: it showed the table again,
        which threw a reader out of a Δ cell's decision list whenever a worker
        committed. The same holds when the screen is shown again after a change: the
        header keeps the time the numbers were read, and the line says they are stale."""
        message.stop()
        message.prevent_default()
        frames = self._frames
        self._check_stale(self._fingerprint, frames.errored_episodes
                          if frames is not None and frames.errored else None, self._generation)

    def _connect(self) -> Database:
        return store.connect(self.lab.db_path, read_only_fallback=True)

    @work(thread=True, exclusive=True, group="results-provenance")
    def _read_provenance(self) -> None:
        from core.store import prereg as prereg_rows

        db = self._connect()
        try:
            runs = self.selection.runs or traj.facets(db).runs
            lines = []
            for p in prereg_rows.run_provenance(db, list(runs)):
                state = p["amendment"] or "EXPLORATORY"
                devs = f" ({plural(len(p['deviations']), 'deviation')})" if p["deviations"] else ""
                lines.append(f"{p['run']}: {state}{devs}")
        except LabError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        finally:
            db.conn.close()
        text = "runs " + ("; ".join(lines) if lines else "– (no runs in lab.db yet)")
        self.post_read(self.Provenance(text))

    @work(thread=True, exclusive=True, group="results-stale")
    def _check_stale(self, seen: Fingerprint | None, errored: pd.DataFrame | None,
                     generation: int) -> None:
        """Whether the selection's episodes changed since `seen`, and (a job may have been
        queued, cancelled or taken since) what will become of the `errored` episodes the
        numbers on show leave out."""
        from console.screens.results.errored import errored_left_out
        from core.store.selection import fingerprint

        db = self._connect()
        try:
            now = fingerprint(db, self.selection)
            held = errored_left_out(db, errored) if errored is not None else None
        finally:
            db.conn.close()
        if held is not None:
            self.post_message(self.ErroredRead(held, generation))
        if seen is not None and now != seen:
            self.post_message(self.Stale(stale_note(seen, now)))

    @work(thread=True, exclusive=True, group="results-compute")
    def _compute(self, view: str, width: int, height: int, generation: int,
                 frames: Frames | None, seen: Fingerprint | None,
                 computed_views: tuple[Computed, ...], sorts: dict[int, Sort]) -> None:
        """Compute one view (`frames`, `seen` and `computed_views`: what the screen held
        when it asked, read on the app's thread: the frames, their fingerprint and the
        views already computed, whose results a view of the same table reuses)."""
        from analysis.measures.frames import load_frames
        from analysis.tables.results import ResultsSpec, results_for
        from console.screens.results.errored import errored_left_out
        from console.screens.results.table_cursor import layout
        from console.screens.results.views import display_tables, view_tables
        from core.store.selection import check_selection, fingerprint

        started = time.monotonic()
        table = view_table(view)
        spec = ResultsSpec(self.lab.n_boot, self.lab.hazard_boot, self.lab.seed,
                           repaired=self.repaired and table.family != TRACES)
        db = self._connect()
        try:
            # the first view reads the selection's state with its frames (one count of
            # its episodes, not two); a later one, to know whether the frames kept are
            # current
            state = None if frames is None and table.family != TRACES else \
                fingerprint(db, self.selection)
            if table.family != TRACES and (frames is None or state != seen):
                check_selection(db, self.selection)
                frames = load_frames(db, self.selection)
                state = frames.source.fingerprint if frames.source is not None else \
                    fingerprint(db, self.selection)
            assert state is not None
            if generation != self._generation:
                return
            if frames is not None and table.family != TRACES:
                self.post_message(self.FramesLoaded(
                    frames, generation, errored_left_out(db, frames.errored_episodes)))
            shared = next((c for c in computed_views if c.results.table(table.name)), None) \
                if table.family == EPISODES and not self.repaired else None
            results = shared.results if shared else results_for(
                db, self.selection, table.name, spec, frames)
            charts = self._charts(view, results, width, height, first=True) or (
                self._controller_charts(db, frames, width, height)
                if view == "controllers" and frames is not None else ())
        except LabError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        finally:
            db.conn.close()
        if generation != self._generation:
            return
        note = _repaired_note(results.repaired)
        tables = view_tables(view, [t for t in results.tables])
        lay = None if shows_grid(view, tables) else \
            layout(display_tables(view, tables), note, text_width(width), sorts)
        more = view in PER_MODEL_CHARTS and len(charts) < len(self._chart_models(view, results))
        computed = Computed(view, tables, lay.text if lay else "", charts, results,
                            time.monotonic() - started, note, text_width(width), lay, more)
        self.post_message(self.Ready(computed, state, generation))

    def _controller_charts(self, db: Any, frames: Frames, width: int, height: int
                           ) -> tuple[str, ...]:
        from analysis.base.arms import Grouping
        from analysis.measures.repairs import repaired_frames
        from analysis.replay.controllers import chart_curves
        from analysis.replay.probe_tables import branch_inputs
        from analysis.tables.plots import line_chart
        from console.screens.results.views import controller_series
        from core.probes import BRANCH_KINDS
        from core.store.probes import probes_frame

        if self.repaired:
            frames, _ = repaired_frames(db, frames)
        probes = probes_frame(db, frames.selection, kinds=BRANCH_KINDS)
        if not len(probes):  # no group has a branch to chart
            return ()
        episodes, steps = branch_inputs(db, frames, probes)
        curves = chart_curves(episodes, steps, probes,
                              Grouping(frames.selection.pool, frames.errored_episodes))
        if not curves:
            return ()
        risk, reliability = controller_series(curves)
        w, h = max(width - 4, 40), max(min(height - 4, 20), 10)
        return (line_chart(risk, "Risk–coverage (raw stated confidence, most confident "
                           "first)", "coverage", "risk", width=w, height=h, colorless=False,
                           legend="below"),
                line_chart(reliability, "Reliability: accuracy by stated confidence "
                           "(10 equal-width bins)", "confidence", "accuracy", width=w,
                           height=h, colorless=False, legend="below"))

    @staticmethod
    def _chart_models(view: str, results: Results) -> dict[str, Any]:
        """The series of each model's chart on Hazard and Answering ({} elsewhere)."""
        from console.screens.results.views import answer_series, hazard_series

        if view == "hazard":
            return hazard_series(results.hazard_curves)
        if view == "answering":
            return answer_series(results.answer_actions, results.episodes_per_arm)
        return {}

    @classmethod
    def _charts(cls, view: str, results: Results, width: int, height: int,
                first: bool = False) -> tuple[str, ...]:
        """The view's charts; `first`: only the first model's on Hazard and Answering (a
        chart fills an 80×24 screen; the others are drawn after the first frame by
        `_draw_charts`: at 198,000 episodes 11 charts, 0.1–0.2 s)."""
        from analysis.tables.plots import line_chart
        from analysis.tables.trace_charts import sweep_charts

        w, h = max(width - 4, 40), max(min(height - 4, 20), 10)
        if view == "trace_sweeps":
            return tuple(sweep_charts(results.tables[0], colorless=False))
        what = {"hazard": ("P(answer) after j consecutive failed observations", "j"),
                "answering": ("share of episodes answering at each action", "action")}
        if view not in what:
            return ()
        title, x = what[view]
        models = list(cls._chart_models(view, results).items())
        return tuple(line_chart(series, f"{model}: {title}", x, width=w, height=h,
                                colorless=False, legend="below")
                     for model, series in (models[:1] if first else models))

    @work(thread=True, exclusive=True, group="results-charts")
    def _draw_charts(self, view: str, results: Results, width: int, height: int,
                     generation: int) -> None:
        """Every model's chart of a view whose first frame showed the first one."""
        self.post_message(self.ChartsDrawn(view, self._charts(view, results, width, height),
                                           generation))

    @work(thread=True, exclusive=True, group="results-drill")
    def _drill_cell(self, keys: dict[str, Any], measure: str, scope: str, title: str) -> None:
        from analysis.measures.drilldown import cell_decisions, select, source_of

        frames = self._frames
        if frames is None:
            return
        decisions = cell_decisions(select(frames.decisions, keys), source_of(measure, scope))
        self.post_message(self.Drilled(title, decisions))

    @work(thread=True, exclusive=True, group="results-export")
    def _export(self, computed: Computed) -> None:
        from analysis.tables.csv_files import results_csv
        from analysis.tables.provenance import row_provenance
        from core.atomic_write import write_text_atomic
        from core.store import prereg as prereg_rows

        directory = Path(self.lab.export_dir)
        frames = self._frames
        try:
            if directory.exists() and not directory.is_dir():
                raise ConfigError(f"{directory}: exists and is not a folder; start the console "
                                  "with another --export-dir")
            db = self._connect()
            try:
                provenance = prereg_rows.run_provenance(db, frames.runs if frames else ())
            finally:
                db.conn.close()
            text = results_csv(d | row_provenance(d, provenance) for t in computed.tables
                               for d in t.dicts())
            directory.mkdir(parents=True, exist_ok=True)
            # short enough to sit whole on one line of the toast at 80 columns
            path = directory / f"{computed.view}-{time.strftime('%Y%m%d-%H%M%S')}.csv"
            write_text_atomic(path, text + "\n")
        except (LabError, OSError) as exc:
            self.post_message(self.Failed(f"export failed: {exc}"))
            return
        self.post_message(self.Exported(path))

    @work(thread=True, exclusive=True, group="results-figures")
    def _figures(self, view: str, selection: Selection) -> None:
        from analysis.figures.view import write_view_figures

        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.lab.clock()))
        directory = Path(self.lab.export_dir) / f"figures-{view}-{stamp}"
        try:
            with self._db() as db:
                written = write_view_figures(db, selection, view, directory, self.lab.n_boot,
                                             self.lab.seed)
        except (LabError, OSError) as exc:
            self.post_message(self.Failed(f"figure failed: {exc}"))
            return
        if not written.paths:
            why = "; ".join(r for _, r in written.skipped) or "no figure draws this table"
            self.post_message(self.Failed(f"no figure for {view}: {why}"))
            return
        self.post_message(self.Exported(written.paths[0]))

    # ── showing ─────────────────────────────────────────────────────────────────────

    def _switch(self, body: str) -> None:
        self.query_one("#results-body", ContentSwitcher).current = body
        focus = {"results-delta": "#results-grid", "results-drill": "#results-drill-table",
                 "results-text-view": "#results-text-view"}[body]
        if not (self.query_one("#results-select").has_class("shown")
                or self.query_one("#results-search").has_class("shown")):
            self.query_one(focus).focus()  # never take the keys away from an input
        self.refresh_bindings()

    def _ask(self) -> None:
        """Start computing the view shown, unless that computation is already running.

        The screen is as large as the terminal, so the app's size serves before the
        screen has taken its own: the first view is asked for while the screen is
        composed, so lab.db is read while Textual mounts, styles and draws it (at
        200,000 episodes that was a quarter of the first visit, spent before any read).
        """
        asked = (self.view, self._generation)
        if self._asked == asked:
            return
        self._asked = asked
        size = self.size if self.size.width else self.app.size
        self._compute(self.view, size.width, size.height, self._generation,
                      self._frames, self._fingerprint, tuple(self._computed.values()),
                      dict(self._sorts.get(self.view, {})))

    def _show_view(self) -> None:
        computed = self._computed.get(self.view)
        if computed is None:
            self.query_one("#results-status", Static).update(
                f"computing {self.view}… ({self.lab.n_boot} question-level resamples"
                f"{', as lab results' if self.lab.n_boot == N_BOOT else ''})")
            self._switch("results-text-view")
            self.query_one("#results-text", TextLines).update("")
            self.query_one("#results-chart", Static).display = False
            if self._early_error is not None:
                error, self._early_error = self._early_error, None
                self.on_results_screen_failed(self.Failed(error))
                return
            self._ask()
            return
        computed = self._fitted(computed)
        self._status(computed)
        if self.view == "delta":
            self._show_grid(computed)
            return
        self._switch("results-text-view")
        self.query_one("#results-text", TextLines).update(computed.text)
        self._search(self._query, move=False)
        self._show_charts(computed.charts)

    def _show_charts(self, charts: tuple[str, ...]) -> None:
        chart = Text()
        for c in charts:
            chart.append_text(Text.from_ansi(c))
            chart.append("\n")
        widget = self.query_one("#results-chart", Static)
        widget.update(chart)
        widget.display = bool(charts)

    def _fitted(self, computed: Computed) -> Computed:
        """The view's text fitted to the screen's width now (fitted again after a resize;
        only formatting, no computing)."""
        from console.screens.results.table_cursor import layout
        from console.screens.results.views import display_tables

        width = text_width(self.size.width)
        if computed.width == width or not self.size.width or \
                shows_grid(computed.view, computed.tables):
            return computed
        lay = layout(display_tables(computed.view, computed.tables), computed.note, width,
                     self._sorts.get(computed.view))
        computed = replace(computed, text=lay.text, width=width, layout=lay)
        self._computed[computed.view] = computed
        return computed

    def on_resize(self, event: events.Resize) -> None:
        """Fit the table shown to the new width (the Δ grid: its row labels)."""
        if self.view in self._computed and self._body() == "results-text-view":
            self._show_view()
        elif self.view in self._computed and self._body() == "results-delta":
            self._show_grid(self._computed[self.view])

    def _status(self, computed: Computed) -> None:
        errored = self._errored.note() if self._frames else ""
        sel = self.selection_text or "everything, nothing pooled"
        same = (self.lab.n_boot, self.lab.seed) == (N_BOOT, SEED)
        line = Text(f"{sel} · {self.lab.n_boot} resamples, seed {self.lab.seed}"
                    f"{' (as lab results)' if same else ''} · e exports")
        if self.repaired:
            line.append("  · repaired answers (R: raw)", style="bold cyan")
        if errored:
            line.append(f"  {errored}", style="bold yellow")
        self.query_one("#results-status", Static).update(line)

    def _show_grid(self, computed: Computed) -> None:
        from console.screens.results.views import delta_grid, grid_cell, variants

        table = computed.tables[0]
        options = variants(table)
        if not options:
            self._grid = None
            self._switch("results-text-view")
            self.query_one("#results-text", TextLines).update(computed.text)
            return
        measure, scope = options[self._variant % len(options)]
        grid = delta_grid(table, measure, scope, self.size.width)
        self._grid = grid
        widget = self.query_one("#results-grid", DataTable)
        row, col = widget.cursor_row, widget.cursor_column
        widget.clear(columns=True)
        what = "Δ" if measure == "delta" else "design"
        widget.add_column(f"{what}: {scope}", key="line")
        for arm in grid.arms:
            widget.add_column(inert(arm), key=f"arm:{arm}")
        for i, line in enumerate(grid.lines):
            cells = (grid_cell(grid.cell(i, j)) for j in range(len(grid.arms)))
            widget.add_row(inert(line), *cells, key=str(i))
        widget.move_cursor(row=min(row, len(grid.lines) - 1), column=max(col, 1))
        self._switch("results-delta")
        self._show_cell()

    def _show_cell(self) -> None:
        from console.screens.results.views import cell_summary

        grid = self._grid
        if grid is None:
            return
        widget = self.query_one("#results-grid", DataTable)
        text = cell_summary(grid, widget.cursor_row, max(widget.cursor_column - 1, 0))
        row = grid.cell(widget.cursor_row, max(widget.cursor_column - 1, 0))
        if row is not None and row.judgments:
            text += f"\njudgments of these decisions' latest results: {row.judgments}"
        legend = ("\n+ answers more when every result so far was judged useless; − less; "
                  "* 95% CI excludes 0; – undefined; · not run; v: next variant")
        self.query_one("#results-cell", Static).update(text + legend)

    @on(DataTable.CellHighlighted, "#results-grid")
    def _cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        if event.coordinate.column == 0 and len(self._grid.arms if self._grid else ()) > 0:
            event.data_table.move_cursor(column=1)
            return
        self._show_cell()

    @on(DataTable.CellSelected, "#results-grid")
    def _cell_selected(self, event: DataTable.CellSelected) -> None:
        grid = self._grid
        if grid is None:
            return
        line, arm = event.coordinate.row, event.coordinate.column - 1
        row = grid.cell(line, arm) if arm >= 0 else None
        if row is None:
            return
        title = (f"{(grid.covers or grid.lines)[line]} × {grid.arms[arm]} · {grid.measure}: "
                 f"{grid.scope}")
        self._drill_cell(row.as_dict(), grid.measure, grid.scope, title)

    @on(DataTable.RowSelected, "#results-drill-table")
    def _decision_selected(self, event: DataTable.RowSelected) -> None:
        if self._drill is None:
            return
        points = [*self._drill.a, *self._drill.b]
        if not 0 <= event.cursor_row < len(points):
            return
        p = points[event.cursor_row]
        self._open_trajectory(p.episode_id, p.action)

    async def _open_trajectory_async(self, episode_id: int, action: int) -> None:
        from console.screens.trajectories import TrajectoriesScreen

        await self.app.switch_mode("trajectories")
        screen = self.app.screen
        if isinstance(screen, TrajectoriesScreen):
            screen.open_episode(episode_id, action)

    def _open_trajectory(self, episode_id: int, action: int) -> None:
        self.app.call_later(self._open_trajectory_async, episode_id, action)

    def on_results_screen_provenance(self, message: Provenance) -> None:
        """Show which runs the numbers come from and what governs them."""
        self._provenance = message.text
        self._show_provenance()

    def _show_provenance(self) -> None:
        line = Text(inert(self._provenance))
        if self._stale:
            line.append(f"  ⟳ {self._stale}: r recomputes", style="bold")
        self.query_one("#results-prov", Static).update(line)

    def on_results_screen_frames_loaded(self, message: FramesLoaded) -> None:
        """Keep the frames for the next view, drill-downs and export."""
        if message.generation == self._generation:
            self._frames, self._errored = message.frames, message.errored

    def on_results_screen_ready(self, message: Ready) -> None:
        """Show a computed view (if it is still the one asked for)."""
        if message.generation != self._generation:
            return
        if message.fingerprint != self._fingerprint and self._stale:
            self._stale = ""
            self._show_provenance()
        self._fingerprint = message.fingerprint
        self._computed[message.computed.view] = message.computed
        if message.computed.more_charts:
            size = self.size if self.size.width else self.app.size
            self._draw_charts(message.computed.view, message.computed.results, size.width,
                              size.height, message.generation)
        if message.computed.view == self.view and self.read_at is not None:
            self._show_view()  # before the screen's first read it is shown by that read
        self.refresh_bindings()

    def on_results_screen_charts_drawn(self, message: ChartsDrawn) -> None:
        """Show every model's chart where the first one was: the top of the view, what a
        first frame shows, stays as it was; the tables below the charts move down."""
        computed = self._computed.get(message.view)
        if message.generation != self._generation or computed is None:
            return
        self._computed[message.view] = replace(computed, charts=message.charts,
                                               more_charts=False)
        if message.view == self.view and self._body() == "results-text-view":
            self._show_charts(message.charts)

    def on_results_screen_errored_read(self, message: ErroredRead) -> None:
        """Say again what will become of the errored episodes left out, if that changed."""
        if message.generation != self._generation or message.errored == self._errored:
            return
        self._errored = message.errored
        if self.view in self._computed:
            self._status(self._computed[self.view])

    def on_results_screen_stale(self, message: Stale) -> None:
        """Say what changed in lab.db since these numbers were computed."""
        self._stale = message.note
        self._show_provenance()

    def on_results_screen_drilled(self, message: Drilled) -> None:
        """List a Δ cell's decisions, group (a) first."""
        d = message.decisions
        self._drill = d
        head = Text(inert(message.title) + "\n", style="bold")
        if d.source == "design":
            head.append(f"(a) persistent: {len(d.a)} decisions   (b) late_onset_from_3: "
                        f"{len(d.b)} decisions")
        else:
            head.append(f"(a) s = t, every result so far judged useless: {len(d.a)}   "
                        f"(b) 1 ≤ s ≤ t−2: {len(d.b)}")
        head.append(f"   answers/decisions {d.detail} · Enter opens the trajectory at "
                    "that action", style="dim")
        self.query_one("#results-drill-head", Static).update(head)
        table = self.query_one("#results-drill-table", DataTable)
        table.clear(columns=True)
        for label in ("grp", "episode", "question", "regime", "seed", "t", "s", "action",
                      "answered", "run"):
            table.add_column(label, key=label)
        for i, p in enumerate([*d.a, *d.b]):
            table.add_row(f"({p.group})", str(p.episode_id), inert(p.question_id), p.regime,
                          str(p.seed), str(p.t), str(p.s), str(p.action),
                          Text("⏎ yes", style="bold") if p.answered else "no", inert(p.run),
                          key=str(i))
        self._switch("results-drill")

    def on_results_screen_exported(self, message: Exported) -> None:
        """Tell where the CSV went."""
        path = message.path
        self.notify(f"{path.name}\nwritten in {path.parent}/", title="export", timeout=15,
                    markup=False)

    def on_results_screen_failed(self, message: Failed) -> None:
        """Show an error in one line."""
        self._asked = None
        if self.read_at is None:  # before the screen's first read, which shows it
            self._early_error = message.error
            return
        self.query_one("#results-status", Static).update(message.error)
        self.notify(message.error, severity="error")

    # ── the table cursor: move, sort, search, copy ────────────────────────────────────

    def _layout(self) -> Layout | None:
        """The layout of the text view's tables, when it shows some."""
        computed = self._computed.get(self.view)
        if computed is None or computed.layout is None or not computed.layout.tables:
            return None
        return computed.layout

    def _clamped(self, layout: Layout, t: int, r: int, c: int) -> tuple[int, int, int]:
        from console.screens.results.table_cursor import columns_of

        t = min(max(t, 0), len(layout.tables) - 1)
        placed = layout.tables[t]
        r = min(max(r, 0), len(placed.cells.body) - 1)
        return t, r, min(max(c, 0), len(columns_of(placed)) - 1)

    def table_move(self, rows: int, cols: int) -> bool:
        """Move the cursor `rows` rows (across tables) and `cols` columns; False when the
        view shows no table (the caller scrolls instead).

        Args:
            rows: rows down (negative: up; a huge value: to the first or last row).
            cols: columns right (negative: left).

        Returns:
            Whether there was a table to move in.
        """
        layout = self._layout()
        if layout is None or self._body() != "results-text-view":
            return False
        t, r, c = self._clamped(layout, *self._cursor)
        r += rows
        while r >= len(layout.tables[t].cells.body) and t < len(layout.tables) - 1:
            r -= len(layout.tables[t].cells.body)
            t += 1
        while r < 0 and t > 0:
            t -= 1
            r += len(layout.tables[t].cells.body)
        self._cursor = self._clamped(layout, t, r, c + cols)
        self._mark(scroll=True)
        return True

    def action_ends(self, direction: int) -> None:
        """g: the first row, the top of the view; G: the last row, the bottom."""
        self.table_move(direction * 10**9, 0)
        scroll = self.query_one("#results-text-view", TableScroll)
        scroll.scroll_end(animate=False) if direction > 0 else scroll.scroll_home(animate=False)

    def _cursor_cell(self) -> tuple[Any, int, int] | None:
        """(placed table, row as shown, column index) under the cursor."""
        from console.screens.results.table_cursor import columns_of

        layout = self._layout()
        if layout is None:
            return None
        t, r, c = self._clamped(layout, *self._cursor)
        placed = layout.tables[t]
        return placed, r, columns_of(placed)[c]

    def _mark(self, scroll: bool = False) -> None:
        """Draw the cursor's row and cell and the search matches; scroll to the cursor."""
        from console.widgets.table_ops import CURSOR_CELL, CURSOR_ROW, MATCH, MATCH_CURRENT

        lines = self.query_one("#results-text", TextLines)
        marks: dict[int, list[tuple[int, int, str]]] = {}
        for i, (y, x0, x1) in enumerate(self._found):
            marks.setdefault(y, []).append((x0, x1, MATCH_CURRENT if i == self._found_at
                                            else MATCH))
        here = self._cursor_cell()
        target = None
        if here is not None:
            placed, r, c = here
            place = placed.cell_place(r, c)
            for y in placed.row_lines(r):
                if place is not None and y == place[0]:
                    marks.setdefault(y, []).extend([(0, place[1], CURSOR_ROW),
                                                    (place[1], place[2], CURSOR_CELL),
                                                    (place[2], 10**6, CURSOR_ROW)])
                else:
                    marks.setdefault(y, []).append((0, 10**6, CURSOR_ROW))
            target = place
        lines.mark({y: sorted(spans) for y, spans in marks.items()})
        if scroll and target is not None:
            scroller = self.query_one("#results-text-view", TableScroll)
            top = lines.virtual_region.y - scroller.virtual_region.y
            scroller.scroll_to_region(Region(target[1], top + target[0], target[2] - target[1],
                                             1), animate=False, immediate=True)

    def action_sort(self) -> None:
        """Sort the table under the cursor by the cursor's column: ascending, then
        descending, then back to the table's own order."""
        here = self._cursor_cell()
        computed = self._computed.get(self.view)
        if here is None or computed is None or computed.layout is None:
            return
        placed, _, column = here
        t = computed.layout.tables.index(placed)
        sorts = self._sorts.setdefault(self.view, {})
        sort = next_sort(sorts.pop(t, None), column)
        if sort is not None:
            sorts[t] = sort
        self._relayout(width=computed.width)
        self.notify(sort.describe(placed.cells.header[column]) if sort is not None
                    else "back in the table's own order", timeout=3, markup=False)

    def _relayout(self, width: int) -> None:
        """Lay the view's tables out again (a new sort or width), keeping the cursor."""
        from console.screens.results.table_cursor import layout
        from console.screens.results.views import display_tables

        computed = self._computed[self.view]
        lay = layout(display_tables(computed.view, computed.tables), computed.note, width,
                     self._sorts.get(computed.view))
        self._computed[computed.view] = replace(computed, text=lay.text, width=width,
                                                layout=lay)
        if self._body() == "results-text-view":
            self.query_one("#results-text", TextLines).update(lay.text)
            self._search(self._query, move=False)
            self._mark()

    def action_search(self) -> None:
        """Open the search line."""
        box = self.query_one("#results-search", Input)
        box.value = self._query
        box.add_class("shown")
        box.focus()
        self.refresh_bindings()

    @on(Input.Submitted, "#results-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("shown")
        self._switch(self._body() or "results-text-view")
        self._search(event.value.strip(), move=True)
        if self._query and not self._found:
            self.notify(f"no match for '{self._query}' in this view", severity="warning",
                        markup=False)
        elif self._found:
            self.notify(f"{len(self._found)} match(es) for '{self._query}' · n/N: next/"
                        "previous · escape clears", timeout=4, markup=False)

    def _search(self, query: str, move: bool) -> None:
        """Find `query` in the view's text; `move`: go to the first match at or after the
        cursor's line."""
        from console.widgets.table_ops import matches

        self._query = query
        computed = self._computed.get(self.view)
        text = computed.layout.lines if computed and computed.layout else \
            self.query_one("#results-text", TextLines).text.split("\n")
        self._found = matches(text, query)
        self._found_at = -1
        self.refresh_bindings()
        if move and self._found:
            here = self._cursor_cell()
            line = min(here[0].row_lines(here[1])) if here else 0
            self._found_at = next((i for i, f in enumerate(self._found) if f[0] >= line), 0)
            self._go_match()
        else:
            self._mark()

    def action_next_match(self, step: int) -> None:
        """n / N: the next or previous search match (wrapping)."""
        if self._found:
            self._found_at = (self._found_at + step) % len(self._found)
            self._go_match()

    def _go_match(self) -> None:
        """Put the cursor on the current match's row (when it is one) and scroll to it."""
        from console.screens.results.table_cursor import columns_of, row_at

        y, x0, x1 = self._found[self._found_at]
        layout = self._layout()
        hit = row_at(layout.tables, y) if layout else None
        if layout is not None and hit is not None:
            t, r = hit
            placed = layout.tables[t]
            cols = columns_of(placed)
            block = next(b for b in placed.fitted.blocks
                         if 0 <= y - placed.offset - b.line - 2 < len(placed.cells.body))
            col = next((b for b, (s, w) in zip(block.columns, zip(block.starts, block.widths))
                        if s <= x0 < s + w and b in cols), None)
            self._cursor = (t, r, cols.index(col) if col is not None else self._cursor[2])
        self._mark()
        scroller = self.query_one("#results-text-view", TableScroll)
        lines = self.query_one("#results-text", TextLines)
        top = lines.virtual_region.y - scroller.virtual_region.y
        scroller.scroll_to_region(Region(x0, top + y, x1 - x0, 1), animate=False,
                                  immediate=True)

    def action_copy(self, what: str) -> None:
        """Copy the cursor's cell, its row or the whole table as TSV to the clipboard
        (OSC 52: the terminal's clipboard, also over SSH), and say what was copied."""
        body = self._body()
        if body in ("results-delta", "results-drill"):
            table = self.query_one("#results-grid" if body == "results-delta"
                                   else "#results-drill-table", DataTable)
            rows, header = datatable_cells(table)
            r, c = table.cursor_row, table.cursor_column if what == "cell" else 0
        else:
            here = self._cursor_cell()
            if here is None:
                return
            placed, r, c = here
            rows, header = placed.cells.body, placed.cells.header
        copied = copy_text(what, header, rows, r, c)
        if copied is None:
            return
        text, said = copied
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {said} to the clipboard", title="copy", timeout=4, markup=False)
