"""Trajectories screen (key 6, docs/console.md): list episodes, step through one, and compare
the same question under several arms (matched arms).

Three views in one screen: the list (`:` filters lab.db, `]` loads older episodes,
Enter opens), one episode (←/→ or h/l step through it; `m` opens matched arms), and
matched arms (the same model, regime, seed, budget, question set and question under
every arm, aligned by action; the first divergence is marked ≠ and highlighted).
`escape` goes back one view; an episode opened from the Results drill-down goes back
to Results. Matched arms are laid out again when the terminal is resized. Every read
runs in a thread worker through core.store.trajectories.

The keys of a table are the Results screen's: a cell cursor, `s` sorts the list by the
cursor's column (the episodes loaded), `/` searches the view shown (the list's or the
matched arms' cells, or an episode's steps) with every match highlighted and `n`/`N`
going from one to the next, `c`/`C`/`T` copy a cell, a row or the table (an episode:
the step shown, or the whole trajectory) to the clipboard, `g`/`G` and Home/End go to
the first and last row (or step).
"""

from __future__ import annotations

import re
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
from console.widgets.hanging import hang
from console.widgets.key_table import Column, KeyTable
from console.widgets.table_ops import MATCH
from core import store
from core.errors import LabError
from core.inert import inert_fields
from core.regimes import short_regime
from core.store import trajectories as traj

LIST, EPISODE, MATCHED = "traj-list", "traj-episode", "traj-matched"


ACT_COLUMN = "the action it answered at, else its last"
"""What the episode list's `act` column holds (its `?` help says so)."""

LIST_COLUMNS = (Column("id", "id", numeric=True), Column("model", "model"),
                Column("arm", "arm"), Column("regime", "regime"),
                Column("seed", "seed", numeric=True), Column("question", "q"),
                Column("outcome", "outcome"), Column("act", "act", numeric=True),
                Column("run", "run"))
"""The episode list's columns (`act`: ACT_COLUMN)."""


class OpenTable(KeyTable):
    """The episode list, whose Enter is listed in the footer as "Open"."""

    BINDINGS = [Binding("enter", "select_cursor", "Open")]


class StepScroll(VerticalScroll):
    """An episode's step: Home / End go to its first / last step (as `g` / `G`), the
    other keys scroll the step's text."""

    BINDINGS = [Binding("home", "screen.ends(-1)", "First step", show=False),
                Binding("end", "screen.ends(1)", "Last step", show=False)]


class TrajectoriesScreen(LabScreen):
    """Episodes: filter, open, step through, matched arms."""

    CSS_PATH = "trajectories.tcss"
    BINDINGS = [
        Binding("slash", "search", "Search", key_display="/"),
        Binding("n", "next_match(1)", "Next match", show=False),
        Binding("N", "next_match(-1)", "Prev match", show=False, key_display="N"),
        Binding("colon", "filter", "Filter", key_display=":"),
        Binding("s", "sort", "Sort"),
        Binding("c", "copy('cell')", "Copy"),
        Binding("C", "copy('row')", "Copy row", show=False, key_display="C"),
        Binding("T", "copy('table')", "Copy all", show=False, key_display="T"),
        Binding("g", "ends(-1)", "Top", show=False),
        Binding("G", "ends(1)", "Bottom", show=False, key_display="G"),
        Binding("escape", "back", "Back"),
        Binding("left,h", "step(-1)", "Prev step", key_display="←/h"),
        Binding("right,l", "step(1)", "Next step", key_display="→/l"),
        Binding("h", "column(-1)", "Left", show=False),
        Binding("l", "column(1)", "Right", show=False),
        Binding("m", "matched", "Matched arms"),
        Binding("right_square_bracket", "more", "Older episodes", key_display="]"),
        Binding("j", "cursor(1)", "Down", show=False),
        Binding("k", "cursor(-1)", "Up", show=False),
    ]
    FOOTER_KEYS = ("search", "select_cursor", "step(-1)", "step(1)", "filter", "sort",
                   "copy('cell')", "matched", "more", "back")
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
        self._listed_filter: traj.EpisodeFilter | None = None
        """The filter the list was last read with (`]` pages keep to it)."""
        self._rows: list[traj.EpisodeRow] = []
        self._detail: traj.EpisodeDetail | None = None
        self._step = 0
        self._matched: list[traj.EpisodeDetail] = []
        self._divergence: int | None = None
        self._pending: tuple[int, int | None] | None = None
        self._back_to: str | None = None
        """The screen (mode) that opened the episode on show; escape returns there."""
        self._list_status = "loading episodes…"
        self._by_id: dict[str, traj.EpisodeRow] = {}
        self._total = 0
        self._step_query = ""
        """The search in the episode on show ("" for none)."""
        self._step_hits: list[int] = []
        """Indexes of the steps whose text matches it."""

    def compose(self) -> ComposeResult:
        """Filter line, the three views, footer."""
        yield Header()
        yield Static("loading episodes…", id="traj-status", markup=False)
        yield Input(placeholder="model=sim-own5 arm=none regime=persistent outcome=wrong "
                                "seed=0 run=… text-in-question", id="traj-filter")
        yield Input(placeholder="search what is shown (enter: go; n/N: next/previous; "
                                "escape: clear)", id="traj-search")
        with ContentSwitcher(initial=LIST, id="traj-views"):
            yield OpenTable(id=LIST, zebra_stripes=True)
            with Vertical(id=EPISODE):
                yield Static(id="traj-head", markup=False)
                yield Static(id="traj-strip", markup=False)
                with StepScroll(id="traj-step-scroll"):
                    yield Static(id="traj-step", markup=False)
            with Vertical(id=MATCHED):
                yield Static(id="traj-m-head", markup=False)
                yield KeyTable(id="traj-m-table")
                with VerticalScroll(id="traj-m-scroll"):
                    yield Static(id="traj-m-detail", markup=False)
        yield LabFooter()

    def on_mount(self) -> None:
        """Set up the list's columns, then load."""
        table = self.query_one(f"#{LIST}", OpenTable)
        table.set_columns(LIST_COLUMNS)
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

    def _table(self) -> KeyTable | None:
        """The table of the view on show (None: an episode)."""
        view = self.view
        if view == EPISODE:
            return None
        return self.query_one(f"#{LIST}" if view == LIST else "#traj-m-table", KeyTable)

    def _searching(self) -> bool:
        """Whether the view on show has a search on."""
        table = self._table()
        return bool(table.query_text) if table is not None else bool(self._step_query)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer only the keys that do something in the current view (any key while
        the screen has no views: the footer asks before compose, and after the console
        began to close when the key that opened the screen was the last one)."""
        if self.query_one_optional("#traj-views") is None:
            return True  # a query's truth value would match every node of the screen
        view = self.view
        if action in ("filter", "more", "open", "sort"):
            return view == LIST
        if action == "step":
            return view == EPISODE
        if action == "column":
            return view != EPISODE
        if action == "matched":
            return view in (LIST, EPISODE)
        if action == "next_match":
            table = self._table()
            return bool(table.found) if table is not None else bool(self._step_hits)
        if action == "back":
            return (view != LIST or self._searching()
                    or self.query_one("#traj-filter").has_class("shown")
                    or self.query_one("#traj-search").has_class("shown"))
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
        self.refresh_data()  # a read of what is shown now: the header's time moves

    def drilled_in(self) -> bool:
        """An episode or its matched arms is open: q goes back to the list."""
        return self.view != LIST

    def action_back(self) -> None:
        """Close the filter or search line, clear the view's search, or go back one view."""
        box = self.query_one("#traj-filter", Input)
        search = self.query_one("#traj-search", Input)
        table = self._table()
        if box.has_class("shown") or search.has_class("shown"):
            box.remove_class("shown")
            search.remove_class("shown")
            self._show(self.view)
        elif self._searching():
            if table is not None:
                table.clear_search()
            else:
                self._step_query, self._step_hits = "", []
                self._render_step()
            self.refresh_bindings()
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

    def action_column(self, delta: int) -> None:
        """h / l on a table: the cursor one column left or right."""
        table = self._table()
        if table is not None:
            table.move_cursor(column=max(table.cursor_column + delta, 0))

    def _selected(self) -> traj.EpisodeRow | None:
        key = self.query_one(f"#{LIST}", OpenTable).cursor_key
        return None if key is None else self._by_id.get(key)

    def action_open(self) -> None:
        """Open the selected episode."""
        row = self._selected()
        if row is not None:
            self._back_to = None
            self._status(self._list_status)
            self._open(row.id, None)

    @on(DataTable.CellSelected, f"#{LIST}")
    def _row_selected(self, event: DataTable.CellSelected) -> None:
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

    # ── table keys: sort, search, copy, ends ──────────────────────────────────────────

    def action_sort(self) -> None:
        """Sort the loaded episodes by the cursor's column: ascending, descending, then
        newest first again."""
        said = self.query_one(f"#{LIST}", OpenTable).cycle_sort()
        self._set_list_status()
        self.notify(said, timeout=3, markup=False)

    def action_search(self) -> None:
        """Open the search line (the list's or matched arms' cells, an episode's steps)."""
        box = self.query_one("#traj-search", Input)
        table = self._table()
        box.value = table.query_text if table is not None else self._step_query
        box.add_class("shown")
        box.focus()
        self.refresh_bindings()

    @on(Input.Submitted, "#traj-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("shown")
        query = event.value.strip()
        table = self._table()
        self._show(self.view)
        if table is not None:
            found, where = table.search(query), "in this table"
        else:
            found, where = self._search_steps(query), "in this episode's steps"
        self.refresh_bindings()
        if query and not found:
            self.notify(f"no match for '{query}' {where}", severity="warning", markup=False)
        elif found:
            self.notify(f"{found} match(es) for '{query}' {where} · n/N: next/previous · "
                        "escape clears", timeout=4, markup=False)

    def _step_text(self, index: int) -> Text:
        """Step `index` of the episode on show, as its body shows it (without the legend
        of the signs under it: a search or a copy takes the step alone)."""
        d = self._detail
        assert d is not None
        s = d.steps[index]
        return render.step_body(s, d.observations[index], d.titles[index], len(d.steps),
                                probes=[p for p in d.probes if p["t"] == s.t])

    def _search_steps(self, query: str) -> int:
        """Find `query` in the episode's steps and show the first step with it at or
        after the one shown; returns how many steps match."""
        d = self._detail
        self._step_query = query
        q = query.casefold()
        self._step_hits = ([i for i in range(len(d.steps))
                            if q in self._step_text(i).plain.casefold()]
                           if d is not None and q else [])
        if self._step_hits:
            self._step = next((i for i in self._step_hits if i >= self._step),
                              self._step_hits[0])
        self._render_step()
        return len(self._step_hits)

    def action_next_match(self, step: int) -> None:
        """n / N: the next or previous match (wrapping): a cell, or a step."""
        table = self._table()
        if table is not None:
            table.step_match(step)
            return
        hits = self._step_hits
        if hits:
            after = [i for i in hits if (i - self._step) * step > 0]
            self._step = (min(after, key=lambda i: abs(i - self._step)) if after
                          else hits[0] if step > 0 else hits[-1])
            self._render_step()

    def action_ends(self, direction: int) -> None:
        """g / G, Home / End: the first or last row, or the first or last step."""
        table = self._table()
        if table is not None:
            table.ends(direction)
        elif self._detail is not None and self._detail.steps:
            self._step = 0 if direction < 0 else len(self._detail.steps) - 1
            self._render_step()

    def action_copy(self, what: str) -> None:
        """Copy to the clipboard (OSC 52) and say what was copied: on the list the cell,
        the row or the whole list as TSV; on an episode the step shown (c, C) or the whole
        trajectory (T); on matched arms the cursor's step in full (c), every arm's step at
        that action (C) or the table as TSV (T)."""
        copied = self._copied(what)
        if copied is None:
            self.notify("nothing to copy here", severity="warning")
            return
        text, said = copied
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {said} to the clipboard", title="copy", timeout=4, markup=False)

    def _copied(self, what: str) -> tuple[str, str] | None:
        """(text, what it is) of a copy in the view on show."""
        view, d = self.view, self._detail
        if view == LIST:
            return self.query_one(f"#{LIST}", OpenTable).copy(what)
        if view == MATCHED:
            table = self.query_one("#traj-m-table", KeyTable)
            t = table.cursor_row + 1
            if what == "table" or t > max((len(m.steps) for m in self._matched), default=0):
                return table.copy(what)
            arms = range(len(self._matched))
            if what == "cell" and table.cursor_column > 0:
                arms = range(table.cursor_column - 1, table.cursor_column)
            names = (self._matched[arms[0]].row.arm if len(arms) == 1
                     else f"{len(arms)} arms")
            return self._matched_text(t, arms), f"action {t} under {names}, in full"
        if d is None or not d.steps:
            return None
        if what == "table":
            head = render.episode_head(d, 10**4).plain
            steps = "\n\n".join(self._step_text(i).plain for i in range(len(d.steps)))
            return f"{head}\n\n{steps}", f"episode {d.row.id} ({len(d.steps):,} steps)"
        return (f"episode {d.row.id}\n{self._step_text(self._step).plain}",
                f"step {self._step + 1} of {len(d.steps)} of episode {d.row.id}")

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
        f = self.filter
        if self._rows and f == self._listed_filter and len(self._rows) > f.limit:
            f = replace(f, limit=len(self._rows))  # a re-read keeps the older pages loaded
        self._listed_filter = self.filter
        self._load(f, append=False)

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
        table = self.query_one(f"#{LIST}", OpenTable)
        rows = (self._rows + message.rows) if message.append else message.rows
        self._rows, self._total = rows, message.total
        self._by_id = {str(r.id): r for r in rows}
        table.fill([(str(r.id), [
            str(r.id), r.model, r.arm, short_regime(r.regime), str(r.seed), r.question_id,
            Text(render.OUTCOME_MARK[r.outcome], style=render.OUTCOME_STYLE[r.outcome]),
            str(r.answer_action or r.steps), r.run]) for r in rows])
        self._set_list_status()

    def _set_list_status(self) -> None:
        """The list's status line: how many of how many, the filter, the sort, the keys."""
        rows = self._rows
        what = self.filter.describe() or "all episodes"
        more = "; ] older" if len(rows) < self._total else ""
        sort = self.query_one(f"#{LIST}", OpenTable).sort_by
        by = (f" · by {LIST_COLUMNS[sort.column].label} {sort.mark()} (those loaded)"
              if sort is not None else "")
        self._list_status = (f"{len(rows):,} of {self._total:,} episodes · filter: {what}{by} · "
                             f": filters{more}")
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
        self._step_query, self._step_hits = "", []
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
        body = self._step_text(self._step)
        if self._step_query:
            body.highlight_regex(re.compile(re.escape(self._step_query), re.IGNORECASE),
                                 MATCH)
            hits = self._step_hits
            where = (f"step {hits.index(self._step) + 1} of {len(hits)} matching"
                     if self._step in hits else f"{len(hits)} step(s) match")
            body = Text.assemble(Text(f"search '{self._step_query}': {where} · n/N · "
                                      "escape clears\n", style="dim"), body)
        body.append("\n" + render.LEGEND, style="dim")
        self.query_one("#traj-step", Static).update(hang(body, self._text_width()))

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
            self._render_step()

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
        if len(details) > 1:
            head.append("\n" + render.MATCHED_KEY, style="dim")
        self.query_one("#traj-m-head", Static).update(head)
        table = self.query_one("#traj-m-table", KeyTable)
        width = max((screen_width - 8) // max(len(details), 1) - 2, 12)
        runs = {d.row.run for d in details}
        table.set_columns([Column("t", "t"), *(
            Column(d.row.arm + (f" ({d.row.run})" if len(runs) > 1 else ""), f"arm{i}",
                   width=width) for i, d in enumerate(details))])
        by_t = [{s.t: s for s in d.steps} for d in details]
        last = max((max(m, default=0) for m in by_t), default=0)
        rows: list[tuple[str, list[str | Text]]] = []
        for t in range(1, last + 1):
            marked = div is not None and t == div
            style = "bold reverse" if marked else ""
            cells: list[str | Text] = [Text(("≠" if marked else " ") + str(t), style=style)]
            for m in by_t:
                cells.append(Text(render.matched_cell(m.get(t), width), style=style))
            rows.append((str(t), cells))
        outcome: list[str | Text] = [Text("=")]
        for d in details:
            outcome.append(Text(render.OUTCOME_MARK[d.row.outcome],
                                style=render.OUTCOME_STYLE[d.row.outcome]))
        rows.append(("outcome", outcome))
        table.fill(rows)
        if cursor is not None:
            table.move_cursor(row=cursor)
        elif div is not None:
            table.move_cursor(row=div - 1)
        self._render_matched_detail(table.cursor_row)

    @on(DataTable.CellHighlighted, "#traj-m-table")
    def _matched_row(self, event: DataTable.CellHighlighted) -> None:
        self._render_matched_detail(event.coordinate.row)

    def _matched_text(self, t: int, arms: range | None = None) -> str:
        """Action `t` of the matched arms (`arms`: their indexes; None: all) in full."""
        return self._matched_detail(t, arms).plain

    def _matched_detail(self, t: int, arms: range | None = None) -> Text:
        out = Text()
        for a in arms if arms is not None else range(len(self._matched)):
            d = self._matched[a]
            index = next((i for i, s in enumerate(d.steps) if s.t == t), None)
            out.append(f"── {d.row.arm} (episode {d.row.id})\n", style="bold")
            if index is None:
                out.append("(ended before this action)\n")
                continue
            out.append_text(render.step_body(d.steps[index], d.observations[index],
                                             d.titles[index], len(d.steps)))
            out.append("\n")
        return out

    def _render_matched_detail(self, row: int) -> None:
        self.query_one("#traj-m-detail", Static).update(
            hang(self._matched_detail(row + 1), self._text_width()))

    def _text_width(self) -> int:
        """The columns a step's text has: the screen less the padding and a scroll bar."""
        return self.size.width - 4

    def help_codes(self) -> str:
        """What the list's, an episode's and matched arms' short codes mean."""
        return render.codes_text(ACT_COLUMN)
