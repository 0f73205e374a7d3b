"""Trajectories screen (key 6, docs/console.md): list episodes, step through one, and compare
the same question under several arms (matched arms).

Three views in one screen: the filterable list (`/` filters, Enter opens), one
episode (←/→ or h/l step through it; `m` opens matched arms), and matched arms
(the same model, regime, seed, budget, question set and question under every arm,
aligned by action; the first divergence is marked ≠ and highlighted). `escape` goes
back one view; an episode opened from the Results drill-down goes back to Results.
Matched arms are laid out again when the terminal is resized. Every read runs in a
thread worker through core.store.trajectories.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import ContentSwitcher, DataTable, Header, Input, Static
from textual.worker import get_current_worker

from console.screens.base import LabScreen
from console.widgets import traj_render as render
from console.widgets.footer import LabFooter
from core import store
from core.errors import LabError
from core.inert import inert_fields
from core.regimes import short_regime
from core.store import trajectories as traj

LIST, EPISODE, MATCHED = "traj-list", "traj-episode", "traj-matched"


class OpenTable(DataTable):
    """A row table whose Enter is listed in the footer as "Open"."""

    BINDINGS = [Binding("enter", "select_cursor", "Open")]


class TrajectoriesScreen(LabScreen):
    """Episodes: filter, open, step through, matched arms."""

    CSS_PATH = "trajectories.tcss"
    BINDINGS = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "back", "Back"),
        Binding("left,h", "step(-1)", "Prev step", key_display="←/h"),
        Binding("right,l", "step(1)", "Next step", key_display="→/l"),
        Binding("m", "matched", "Matched arms"),
        Binding("n", "more", "Older episodes"),
        Binding("j", "cursor(1)", "Down", show=False),
        Binding("k", "cursor(-1)", "Up", show=False),
    ]
    FOOTER_KEYS = ("filter", "select_cursor", "step(-1)", "step(1)", "matched", "back")
    """The footer's keys, most essential first (LabFooter keeps these and ? q)."""

    @dataclass
    class Listed(Message):
        """The episode list was read."""

        rows: list[traj.EpisodeRow]
        total: int
        append: bool

    @dataclass
    class Opened(Message):
        """One episode was read."""

        detail: traj.EpisodeDetail
        step: int | None

    @dataclass
    class Matched(Message):
        """The matched episodes of an episode were read."""

        details: list[traj.EpisodeDetail]
        divergence: int | None

    @dataclass
    class Failed(Message):
        """A read failed with a LabError."""

        error: str

    def __init__(self) -> None:
        super().__init__()
        self.filter = traj.EpisodeFilter()
        self._rows: list[traj.EpisodeRow] = []
        self._detail: traj.EpisodeDetail | None = None
        self._step = 0
        self._matched: list[traj.EpisodeDetail] = []
        self._divergence: int | None = None
        self._pending: tuple[int, int | None] | None = None
        self._back_to: str | None = None
        """The screen (mode) that opened the episode on show; escape returns there."""
        self._list_status = "loading episodes…"

    def compose(self) -> ComposeResult:
        """Filter line, the three views, footer."""
        yield Header()
        yield Static("loading episodes…", id="traj-status", markup=False)
        yield Input(placeholder="model=sim-own5 arm=none regime=persistent outcome=wrong "
                                "seed=0 run=… text-in-question", id="traj-filter")
        with ContentSwitcher(initial=LIST, id="traj-views"):
            yield OpenTable(id=LIST, cursor_type="row", zebra_stripes=True)
            with Vertical(id=EPISODE):
                yield Static(id="traj-head", markup=False)
                yield Static(id="traj-strip", markup=False)
                with VerticalScroll(id="traj-step-scroll"):
                    yield Static(id="traj-step", markup=False)
            with Vertical(id=MATCHED):
                yield Static(id="traj-m-head", markup=False)
                yield DataTable(id="traj-m-table", cursor_type="row")
                with VerticalScroll(id="traj-m-scroll"):
                    yield Static(id="traj-m-detail", markup=False)
        yield LabFooter()

    def on_mount(self) -> None:
        """Set up the list's columns, then load."""
        table = self.query_one(f"#{LIST}", DataTable)
        for label, key in (("id", "id"), ("model", "model"), ("arm", "arm"),
                           ("regime", "regime"), ("seed", "seed"), ("question", "q"),
                           ("outcome", "outcome"), ("act", "act"), ("run", "run")):
            table.add_column(label, key=key)
        table.focus()
        super().on_mount()

    # ── views and keys ──────────────────────────────────────────────────────────────

    @property
    def view(self) -> str:
        """The view on show: LIST, EPISODE or MATCHED."""
        return self.query_one("#traj-views", ContentSwitcher).current or LIST

    def _show(self, view: str) -> None:
        self.query_one("#traj-views", ContentSwitcher).current = view
        if view == LIST:
            self.query_one(f"#{LIST}", DataTable).focus()
        elif view == MATCHED:
            self.query_one("#traj-m-table", DataTable).focus()
        else:
            self.query_one("#traj-step-scroll").focus()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer only the keys that do something in the current view."""
        view = self.view
        if action in ("filter", "more", "open"):
            return view == LIST
        if action == "step":
            return view == EPISODE
        if action == "matched":
            return view in (LIST, EPISODE)
        if action == "back":
            return view != LIST or self.query_one("#traj-filter").has_class("shown")
        return True

    def action_filter(self) -> None:
        """Show the filter input."""
        box = self.query_one("#traj-filter", Input)
        box.value = self.filter.describe()
        box.add_class("shown")
        box.focus()
        self.refresh_bindings()

    @on(Input.Submitted, "#traj-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        try:
            self.filter = traj.parse_filter(event.value)
        except LabError as exc:
            self.notify(str(exc), severity="error")
            return
        event.input.remove_class("shown")
        self._show(LIST)
        self.reload()

    def drilled_in(self) -> bool:
        """An episode or its matched arms is open: q goes back to the list."""
        return self.view != LIST

    def action_back(self) -> None:
        """Close the filter input, or go back one view."""
        box = self.query_one("#traj-filter", Input)
        if box.has_class("shown"):
            box.remove_class("shown")
            self._show(self.view)
        elif self.view == MATCHED and self._detail is not None:
            self._show(EPISODE)
        elif self.view == EPISODE and self._back_to is not None:
            mode, self._back_to = self._back_to, None
            self._status(self._list_status)
            self.app.switch_mode(mode)
        elif self.view != LIST:
            self._show(LIST)

    def action_cursor(self, delta: int) -> None:
        """Move the cursor of the list or the matched table (vi keys)."""
        table = self.query_one(f"#{LIST}" if self.view == LIST else "#traj-m-table", DataTable)
        table.move_cursor(row=max(table.cursor_row + delta, 0))

    def _selected(self) -> traj.EpisodeRow | None:
        table = self.query_one(f"#{LIST}", DataTable)
        if not self._rows or not 0 <= table.cursor_row < len(self._rows):
            return None
        return self._rows[table.cursor_row]

    def action_open(self) -> None:
        """Open the selected episode."""
        row = self._selected()
        if row is not None:
            self._back_to = None
            self._status(self._list_status)
            self._open(row.id, None)

    @on(DataTable.RowSelected, f"#{LIST}")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_step(self, delta: int) -> None:
        """Show the previous or next step."""
        if self._detail is None or not self._detail.steps:
            return
        self._step = min(max(self._step + delta, 0), len(self._detail.steps) - 1)
        self._render_step()

    def action_matched(self) -> None:
        """Open matched arms of the episode on show (or the selected one in the list)."""
        row = self._detail.row if self.view == EPISODE and self._detail else self._selected()
        if row is not None:
            self._load_matched(row.id)

    def action_more(self) -> None:
        """Load the next page of older episodes."""
        if self._rows:
            self._load(replace(self.filter, before_id=self._rows[-1].id), append=True)

    def open_episode(self, episode_id: int, step: int | None = None,
                     back_to: str | None = "results") -> None:
        """Open an episode at an action (used by the Results drill-down).

        Args:
            episode_id: the episode.
            step: the action t to show first (default: the first).
            back_to: the mode escape returns to from the episode (None: this list).
        """
        self._back_to = back_to
        if not self.is_mounted:
            self._pending = (episode_id, step)
            return
        self._open(episode_id, step)

    # ── reading (thread workers) ─────────────────────────────────────────────────────

    def reload(self) -> None:
        """Reload the list (and the episode on show stays as it is: it is finished)."""
        if self._pending is not None:
            episode_id, step = self._pending
            self._pending = None
            self._open(episode_id, step)
        self._load(self.filter, append=False)

    @work(thread=True, exclusive=True, group="trajectories-list")
    def _load(self, f: traj.EpisodeFilter, append: bool) -> None:
        db = store.connect(self.lab.db_path, read_only_fallback=True)
        try:
            rows = inert_fields(traj.list_episodes(db, f))
            total = traj.count_episodes(db, f)
        except LabError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        finally:
            db.conn.close()
        if not get_current_worker().is_cancelled:
            self.post_message(self.Listed(rows, total, append))

    @work(thread=True, exclusive=True, group="trajectories-episode")
    def _open(self, episode_id: int, step: int | None) -> None:
        db = store.connect(self.lab.db_path, read_only_fallback=True)
        try:
            detail = inert_fields(traj.episode_detail(db, episode_id))
        except LabError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        finally:
            db.conn.close()
        if not get_current_worker().is_cancelled:
            self.post_message(self.Opened(detail, step))

    @work(thread=True, exclusive=True, group="trajectories-episode")
    def _load_matched(self, episode_id: int) -> None:
        db = store.connect(self.lab.db_path, read_only_fallback=True)
        try:
            rows = traj.matched_episodes(db, episode_id)
            details = [traj.episode_detail(db, r.id) for r in rows]
        except LabError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        finally:
            db.conn.close()
        divergence = traj.first_divergence([d.steps for d in details])
        if not get_current_worker().is_cancelled:
            self.post_message(self.Matched(inert_fields(details), divergence))

    def on_trajectories_screen_failed(self, message: Failed) -> None:
        """Show a read error in one line."""
        self.notify(message.error, severity="error")

    # ── showing what was read ────────────────────────────────────────────────────────

    def on_trajectories_screen_listed(self, message: Listed) -> None:
        """Fill the list, keeping the cursor on the same episode when it is still there."""
        table = self.query_one(f"#{LIST}", DataTable)
        keep = self._selected()
        rows = (self._rows + message.rows) if message.append else message.rows
        self._rows = rows
        table.clear()
        for r in rows:
            table.add_row(str(r.id), r.model, r.arm, short_regime(r.regime), str(r.seed),
                          r.question_id,
                          Text(render.OUTCOME_MARK[r.outcome], style=render.OUTCOME_STYLE[
                              r.outcome]), str(r.answer_action or r.steps), r.run,
                          key=str(r.id))
        if keep is not None and not message.append:
            index = next((i for i, r in enumerate(rows) if r.id == keep.id), 0)
            table.move_cursor(row=index)
        what = self.filter.describe() or "all episodes"
        more = "; n: older" if len(rows) < message.total else ""
        self._list_status = (f"{len(rows)} of {message.total} episodes · filter: {what} · "
                             f"/ filters{more}")
        if self._back_to is None or self.view == LIST:
            self._status(self._list_status)

    def _status(self, text: str) -> None:
        self.query_one("#traj-status", Static).update(text)

    def on_trajectories_screen_opened(self, message: Opened) -> None:
        """Show the episode at the requested action."""
        d = message.detail
        self._detail = d
        index = 0
        if message.step is not None:
            index = next((i for i, s in enumerate(d.steps) if s.t == message.step), 0)
        self._step = index
        self.query_one("#traj-head", Static).update(render.episode_head(d, self.size.width))
        self._render_step()
        if self._back_to is not None:
            self._status(f"episode {d.row.id}, opened from {self._back_to.title()} · "
                         f"escape returns to {self._back_to.title()}")
        self._show(EPISODE)

    def _render_step(self) -> None:
        d = self._detail
        if d is None:
            return
        self.query_one("#traj-strip", Static).update(render.strip(d.steps, self._step))
        if not d.steps:
            self.query_one("#traj-step", Static).update("(no steps stored)")
            return
        s = d.steps[self._step]
        self.query_one("#traj-step", Static).update(render.step_body(
            s, d.observations[self._step], d.titles[self._step], len(d.steps), legend=True,
            probes=[p for p in d.probes if p["t"] == s.t]))

    def on_trajectories_screen_matched(self, message: Matched) -> None:
        """Show matched arms side by side, aligned by action."""
        self._matched, self._divergence = message.details, message.divergence
        self._layout_matched(self.size.width, None)
        self._show(MATCHED)

    def on_resize(self, event: events.Resize) -> None:
        """Another terminal size: lay out the episode head and matched arms again."""
        if self.view == MATCHED and self._matched:
            table = self.query_one("#traj-m-table", DataTable)
            self._layout_matched(event.size.width, table.cursor_row)
        if self._detail is not None:
            self.query_one("#traj-head", Static).update(
                render.episode_head(self._detail, event.size.width))

    def _layout_matched(self, screen_width: int, cursor: int | None) -> None:
        """Fill the matched-arms head and table for `screen_width` columns.

        Args:
            screen_width: the width to share among the arms' columns.
            cursor: the row to keep the cursor on (None: the first divergence).
        """
        details, div = self._matched, self._divergence
        head = Text()
        first = details[0].row
        head.append(f"matched arms · {first.model} · {first.regime} · seed {first.seed} · "
                    f"Q {first.question_id}\n", style="bold")
        if len(details) < 2:
            head.append("no other arm ran this question with the same model, regime, seed, "
                        "budget and question set")
        elif div is None:
            head.append("identical moves under every arm")
        else:
            head.append(f"≠ first divergence at action {div}", style="bold reverse")
            head.append("  (failure draws are identical across arms: the difference is the "
                        "arm's)")
        self.query_one("#traj-m-head", Static).update(head)
        table = self.query_one("#traj-m-table", DataTable)
        table.clear(columns=True)
        width = max((screen_width - 8) // max(len(details), 1) - 2, 12)
        table.add_column("t", key="t")
        runs = {d.row.run for d in details}
        for i, d in enumerate(details):
            label = d.row.arm + (f" ({d.row.run})" if len(runs) > 1 else "")
            table.add_column(label, key=f"arm{i}", width=width)
        by_t = [{s.t: s for s in d.steps} for d in details]
        last = max((max(m, default=0) for m in by_t), default=0)
        for t in range(1, last + 1):
            marked = div is not None and t == div
            style = "bold reverse" if marked else ""
            cells: list[Text] = [Text(("≠" if marked else " ") + str(t), style=style)]
            for m in by_t:
                cells.append(Text(render.matched_cell(m.get(t), width), style=style))
            table.add_row(*cells, key=str(t))
        outcome = [Text("=")]
        for d in details:
            outcome.append(Text(render.OUTCOME_MARK[d.row.outcome],
                                style=render.OUTCOME_STYLE[d.row.outcome]))
        table.add_row(*outcome, key="outcome")
        if cursor is not None:
            table.move_cursor(row=cursor)
        elif div is not None:
            table.move_cursor(row=div - 1)
        self._render_matched_detail(table.cursor_row)

    @on(DataTable.RowHighlighted, "#traj-m-table")
    def _matched_row(self, event: DataTable.RowHighlighted) -> None:
        self._render_matched_detail(event.cursor_row)

    def _render_matched_detail(self, row: int) -> None:
        out = Text()
        t = row + 1
        for d in self._matched:
            index = next((i for i, s in enumerate(d.steps) if s.t == t), None)
            out.append(f"── {d.row.arm} (episode {d.row.id})\n", style="bold")
            if index is None:
                out.append("(ended before this action)\n")
                continue
            out.append_text(render.step_body(d.steps[index], d.observations[index],
                                             d.titles[index], len(d.steps)))
            out.append("\n")
        self.query_one("#traj-m-detail", Static).update(out)
