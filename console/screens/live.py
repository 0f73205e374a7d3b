"""Live (key 5): the steps of a running episode as they are committed.

Follows the newest running episode (`f` toggles): it stays on one episode until
that episode is stored, shows its outcome, then moves to the newest running one.
`o` lists the running episodes to pick one (Enter opens it, follow goes off); a
dead or stopped worker's leftover rows are marked lost there, and never followed.
While shown, the screen checks `PRAGMA data_version` every 0.2 s on its own
read-only connection and reads only the steps after the last one it showed, so a
committed step appears well within half a second.

A poll's worker gets what it reads from (the episode shown, the last step, follow,
a pick) as arguments taken on the app's thread, and posts what it found as
`LiveScreen.Polled`; only the handler changes the screen. An update read for an
episode no longer shown (a slower poll that finished late) is dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.text import Text
from sqlite_utils import Database
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Header, Input, RichLog, Static

from console.render import reasoning_line
from console.screens.base import LabScreen
from console.watch import DataVersion
from console.widgets.footer import LabFooter
from console.widgets.hanging import Hanging
from console.widgets.measured_table import MeasuredTable
from core import store
from core.data import task_for_type
from core.end_reasons import end_text
from core.episode import Step
from core.errors import LabError
from core.inert import inert, inert_fields
from core.scoring import score_note
from core.store import jobs as ledger
from core.store import monitor

POLL_S = 0.2


@dataclass(frozen=True)
class Episode:
    """Which episode is shown: a live row, and (once stored) its episode id."""

    live_id: int
    cell_id: int | None
    question_id: str
    label: str
    question: str
    worker: str | None


@dataclass(frozen=True)
class Update:
    """What a poll found: maybe a new episode, new steps (with page titles), an outcome."""

    episode: Episode | None = None
    switched: bool = False
    steps: list[tuple[Step, str]] = field(default_factory=list)
    outcome: dict | None = None
    idle: bool = False
    lost: str | None = None
    """Why the shown episode is lost (its worker died or gave up its job), if it is."""


def _question(db: Database, qid: str) -> str:
    try:
        (q,) = store.load_questions(db, ids=[qid])
    except LabError:
        return ""
    return q.question


def _title(db: Database, step: Step) -> str:
    if not step.obs_ref:
        return ""
    from core.store.questions import title_resolver

    try:
        return title_resolver(db)(step.obs_ref)
    except (LabError, IndexError, ValueError):
        return step.obs_ref


def read_update(db: Database, current: Episode | None, seen_t: int, finished: bool, follow: bool,
                pick: int | None = None) -> Update:
    """One poll of the live tables (call from a worker; `db` is its own connection).

    Args:
        current: the episode shown, if any.
        seen_t: the last step shown.
        finished: the shown episode's outcome is already on screen.
        follow: move to the newest running episode once the shown one is done.
        pick: a live episode id the user chose (overrides follow).
    """
    target = pick
    if target is None and follow and (current is None or finished):
        # live ids are reused once rows are deleted: after the shown episode is stored,
        # any live row is a new episode
        target = monitor.newest_running(db)  # never a dead worker's leftover row
    if target is not None:
        info = ledger.live_info(db, target)
        if info is None:
            return Update(idle=current is None)
        ep = Episode(target, info["cell_id"], info["question_id"], info["label"],
                     _question(db, info["question_id"]), info["worker"])
        return _steps_of(db, ep, 0, switched=True)
    if current is None:
        return Update(idle=True)
    if finished:
        return Update()
    return _steps_of(db, current, seen_t)


def _same(info: dict | None, ep: Episode) -> bool:
    """The live row is still this episode (live ids are reused once rows are deleted)."""
    return (info is not None and info["cell_id"] == ep.cell_id
            and info["question_id"] == ep.question_id)


def _steps_of(db: Database, ep: Episode, seen_t: int, switched: bool = False) -> Update:
    present = _same(ledger.live_info(db, ep.live_id), ep)
    rows = monitor.live_rows(db, live_id=ep.live_id) if present else []
    lost = rows[0].why if rows and rows[0].state == "lost" else None
    steps = store.live_steps(db, ep.live_id, after_t=seen_t) if rows else []
    if rows and lost is None:  # running
        return Update(ep if switched else None, switched, [(s, _title(db, s)) for s in steps])
    if lost is not None:  # a dead or stopped worker's leftover: it will never be stored
        return Update(ep if switched else None, switched, [(s, _title(db, s)) for s in steps],
                      outcome={"end_reason": f"LOST: {lost}; not stored (its job runs the "
                                             f"question again)"}, lost=lost)
    # stored (or dropped): the finished episode's rows are the record now
    episode_id = (ledger.finished_episode(db, ep.cell_id, ep.question_id)
                  if ep.cell_id is not None else None)
    if episode_id is None:
        return Update(ep if switched else None, switched, [(s, _title(db, s)) for s in steps],
                      outcome={"end_reason": "ended without being stored"})
    last = max([seen_t] + [s.t for s in steps])
    stored = [s for s in store.episode_steps(db, episode_id) if s.t > last]
    return Update(ep if switched else None, switched,
                  [(s, _title(db, s)) for s in steps + stored],
                  outcome=ledger.episode_row(db, episode_id))


Part = tuple[int, Text]
"""One line of a step as (indent, text): wrapped, its continuation lines keep the indent."""


def step_parts(step: Step, title: str) -> list[Part]:
    """One step as indented lines: action, thought, observation, judgment, streak, flags,
    tokens (nothing is clipped but the step's raw text and the page shown)."""
    head = Text()
    head.append(f"step {step.t} ", style="bold")
    if step.format_failure:
        head.append("✗ FORMAT FAILURE ", style="bold red")
        head.append(" ".join((step.raw or "").split())[:160])
    else:
        head.append(f"▸ {step.action}[{step.argument or ''}]", style="bold")
        if step.tool_source:
            head.append(f" ({step.tool_source})")
    for flag, word in ((step.forced, "FORCED"), (step.refused, "REFUSED (not executed)"),
                       (step.discarded, "DISCARDED (re-asked)")):
        if flag:
            head.append(f"  [{word}]", style="bold yellow")
    head.append(f"   tokens {step.input_tokens:,} in / {step.output_tokens:,} out", style="dim")
    parts: list[Part] = [(0, head)]
    if step.decision:
        parts.append((2, Text(f"decision: {step.decision}")))
    if step.reasoning:
        parts.append((2, Text(reasoning_line(step).strip(), style="dim")))
    if step.thought:
        parts.append((2, Text(f"thought: {' '.join(step.thought.split())}")))
    if step.obs_index is not None:
        obs = Text(f"obs {step.obs_index} ")
        if step.obs_failed:
            obs.append(f"✗ FAILED → {step.obs_source}: {title or '?'}", style="bold red")
        else:
            obs.append(f"✓ real ({step.obs_source})")
        parts.append((2, obs))
        if step.shown:
            parts.append((4, Text(" ".join(step.shown.split())[:300], style="dim")))
    verdict = step.judgment or (f"unparsed {step.judgment_raw!r}" if step.judgment_raw else None)
    words = []
    if verdict:
        words.append(f"judgment {verdict}" + (f" ({step.judgment_source})"
                                              if step.judgment_source else ""))
    if step.stated_judgment:
        words.append(f"stated {step.stated_judgment}")
    if step.rule_signal:
        words.append(f"rule signal {step.rule_signal}")
    words.append(f"useless streak {step.streak}")
    parts.append((2, Text(" · ".join(words))))
    return parts


def joined(parts: list[Part]) -> Text:
    """The lines as one Text, each indented (for tests and plain output)."""
    out = Text()
    for i, (indent, text) in enumerate(parts):
        out.append(("\n" if i else "") + " " * indent)
        out.append_text(text)
    return out


def indented(parts: list[Part]) -> Hanging:
    """The lines as a renderable that wraps each under its text column (a hanging
    indent, `console.widgets.hanging` as on Trajectories), so a wrapped thought continues
    under its first word after `thought: ` and a page under its first letter, never at
    column 1."""
    return Hanging(joined(parts))


def outcome_parts(row: dict) -> list[Part]:
    """The stored outcome of the episode shown, as indented lines."""
    if row.get("error"):
        return [(0, Text(f"══ ERRORED: {row['error']}", style="bold red"))]
    if "answered" not in row:
        return [(0, Text(f"══ {row['end_reason']}", style="bold"))]
    if row["answered"]:
        verdict = "✓ correct" if row["correct"] else "✗ incorrect"
        score = score_note(row["f1"], task_for_type(row.get("question_type") or ""))
        head = (f"══ answered {row['answer']!r} at action {row['answer_action']} · gold "
                f"{row.get('gold')!r} · {score + ' · ' if score else ''}{verdict}")
    else:
        head = (f"══ unanswered ({end_text(row['end_reason'])}) · gold {row.get('gold')!r} · "
                "✗ incorrect")
    return [(0, Text(head, style="bold")),
            (3, Text(f"forced turns {row['forced_turns']}, refused {row['refused_calls']}, "
                     f"tokens {row['input_tokens']:,} in / {row['output_tokens']:,} out",
                     style="bold"))]


def outcome_text(row: dict) -> Text:
    """The stored outcome of the episode shown."""
    return joined(outcome_parts(row))


class LiveScreen(LabScreen):
    """Steps of a running episode as they are committed; follow or pick."""

    CSS_PATH = "live.tcss"
    BINDINGS = [
        Binding("f", "toggle_follow", "Follow on/off"),
        Binding("o", "pick", "Pick episode"),
        Binding("escape", "back", "Back", show=False),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("r", "reload", "Reload"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
    ]
    FOOTER_KEYS = ("toggle_follow", "pick", "filter")
    """The footer's keys, most essential first (LabFooter keeps these and ? q)."""
    _asked = 0
    """Polls asked for so far (each poll's number)."""
    _applied = 0
    """The number of the newest poll applied: a newer poll read a later snapshot, so an
    older one whose thread ends after it (an exclusive worker's cancelled thread still
    runs to its end) is dropped. Not `post_read`: a poll consumes the change counter, so a
    cancelled one whose newer poll found nothing changed must still be shown."""

    @dataclass
    class Polled(Message):
        """What one poll found, and the episode shown when it was asked for."""

        update: Update
        shown: Episode | None
        picked: bool
        asked: int = 0
        """The poll's number: one older than a poll already applied is stale."""

    @dataclass
    class Listed(Message):
        """The running episodes, for the pick list."""

        rows: list[monitor.LiveRow]

    def compose(self) -> ComposeResult:
        """Header, the episode line, the steps, the pick list (hidden), footer."""
        yield Header()
        yield Static("", id="live-head", markup=False)
        # min_width 0: RichLog renders at least 78 columns by default, wider than its
        # content at 80 (padding and scrollbar), which cut letters at every wrap
        yield RichLog(id="live-log", wrap=True, markup=False, auto_scroll=True, min_width=0)
        yield Input(placeholder="filter running episodes: model, arm, regime, question",
                    id="live-filter", classes="hidden")
        yield MeasuredTable(id="live-pick", cursor_type="row", classes="hidden")
        yield LabFooter()

    def on_mount(self) -> None:
        """Start following; poll while shown (LabScreen.on_mount does the first read)."""
        self.follow = True
        self.episode: Episode | None = None
        self.seen_t = 0
        self.finished = False
        self.lost: str | None = None
        self.shown_at: dict[tuple[int | None, str, int], float] = {}
        """(cell, question, t) → time.monotonic() when the step was put on screen (bench)."""
        self._pick_filter = ""
        self._version = DataVersion(self.lab.db_path)
        self.query_one("#live-pick", DataTable).add_columns("live", "model / arm / regime",
                                                            "question", "steps", "worker",
                                                            "state")
        self._head()
        self.set_interval(POLL_S, self._tick)

    def on_unmount(self) -> None:
        """Close the change detector's connection."""
        self._version.close()

    def _tick(self) -> None:
        if not self.app.paused and self.is_current:  # type: ignore[attr-defined]
            self._poll(check=True)

    def reload(self) -> None:
        """Read new steps now."""
        self._poll(check=False)

    def _poll(self, check: bool, pick: int | None = None) -> None:
        """Read what changed, in a worker given the screen's state as it is now.

        Args:
            check: only when lab.db changed since the last check.
            pick: a live episode the user chose (follow is off then).
        """
        self._asked += 1
        self._read(check, self.episode, self.seen_t, self.finished, self.follow, pick,
                   self._asked)

    @work(thread=True, exclusive=True, group="live")
    def _read(self, check: bool, episode: Episode | None, seen_t: int, finished: bool,
              follow: bool, pick: int | None, asked: int) -> None:
        if check and not self._version.changed():  # DataVersion: a lock, its own connection
            return
        db = store.connect(self.lab.db_path, read_only_fallback=True)
        try:
            db.conn.execute("BEGIN")  # one snapshot: live rows and stored episodes agree
            update = read_update(db, episode, seen_t, finished, follow, pick)
            db.conn.execute("COMMIT")
        finally:
            db.conn.close()
        self.post_message(self.Polled(update, episode, pick is not None, asked))

    def on_live_screen_polled(self, message: Polled) -> None:
        """Show a poll's new steps and outcome, unless the screen moved on since it was
        asked: steps of an episode no longer shown, or a follow's switch after a pick."""
        update = message.update
        if message.asked < self._applied:
            return  # an older poll's thread ended after a newer poll was shown
        if update.switched and not message.picked and not self.follow:
            return  # followed to the newest while the user picked one
        if not update.switched and message.shown != self.episode:
            return  # read for the episode shown before
        self._applied = message.asked
        self._apply(update)

    def _apply(self, update: Update) -> None:
        log = self.query_one("#live-log", RichLog)
        if update.switched and update.episode is not None:
            self.episode, self.seen_t, self.finished = update.episode, 0, False
            self.lost = None
            log.clear()
        for step, title in update.steps:
            if step.t <= self.seen_t:
                continue
            log.write(indented(step_parts(inert_fields(step), inert(title))), expand=True)
            self.seen_t = step.t
            if self.episode is not None:
                key = (self.episode.cell_id, self.episode.question_id, step.t)
                self.shown_at[key] = time.monotonic()
        if update.outcome is not None and not self.finished:
            self.lost = update.lost
            log.write(indented(outcome_parts(inert_fields(update.outcome))), expand=True)
            self.finished = True
            if self.follow:
                self._poll(check=False)  # move on to the newest running episode
        self._head()

    def _head(self) -> None:
        mode = "FOLLOWING newest (f: stay here)" if self.follow else "PINNED (f: follow newest)"
        text = Text()
        if self.episode is None:
            text.append("no episode running now · ", style="bold")
            text.append("episodes appear here as workers run them (w on the Dashboard "
                        "starts one) · " + mode)
        else:
            e = inert_fields(self.episode)
            state = ("✗ lost" if self.lost else "✓ stored") if self.finished else "● running"
            text.append(f"live {e.live_id} · {e.label} · question {e.question_id} · {state}",
                        style="bold")
            worker = f" · worker {e.worker}" if e.worker else ""
            text.append(f"\n{e.question}\n{mode}{worker}")
        self.query_one("#live-head", Static).update(text)

    def action_toggle_follow(self) -> None:
        """f: follow the newest running episode, or stay on this one."""
        self.follow = not self.follow
        self._head()
        if self.follow:
            self._poll(check=False)

    def action_scroll(self, lines: int) -> None:
        """vi keys: j / k scroll the steps."""
        log = self.query_one("#live-log", RichLog)
        log.scroll_relative(y=lines, animate=False)

    def action_pick(self) -> None:
        """o: list the running episodes to pick one."""
        table = self.query_one("#live-pick", DataTable)
        table.remove_class("hidden")
        table.focus()
        self._list()

    @work(thread=True, exclusive=True, group="live-list")
    def _list(self) -> None:
        db = store.connect(self.lab.db_path, read_only_fallback=True)
        try:
            rows = monitor.running_episodes(db)
        finally:
            db.conn.close()
        self.post_message(self.Listed(rows))

    def on_live_screen_listed(self, message: Listed) -> None:
        """Fill the pick list (filtered)."""
        rows = message.rows
        table = self.query_one("#live-pick", DataTable)
        table.clear()
        needle = self._pick_filter.lower()
        for r in rows:
            state = "● running" if r.state == "running" else "✗ lost"
            cells = inert_fields((str(r.id), r.label, r.question_id, str(r.steps),
                                  r.worker or "-", state))
            if not needle or needle in " ".join(cells).lower():
                table.add_row(*cells, key=str(r.id))
        if table.row_count == 0:
            self.notify("no running episode" + (f" matches '{self._pick_filter}'"
                                                if needle else " right now"), timeout=3)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a running episode: show it (follow goes off)."""
        if event.data_table.id != "live-pick" or event.row_key.value is None:
            return
        self.follow = False
        self._close_pick()
        self._poll(check=False, pick=int(event.row_key.value))

    def _close_pick(self) -> None:
        self.query_one("#live-pick", DataTable).add_class("hidden")
        self.query_one("#live-filter", Input).add_class("hidden")
        self.query_one("#live-log", RichLog).focus()

    def drilled_in(self) -> bool:
        """The pick list is open: q closes it."""
        return not self.query_one("#live-pick", DataTable).has_class("hidden")

    def action_back(self) -> None:
        """escape: close the pick list / filter."""
        self._close_pick()

    def action_filter(self) -> None:
        """/: filter the list of running episodes."""
        self.action_pick()
        box = self.query_one("#live-filter", Input)
        box.remove_class("hidden")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Apply the filter to the pick list."""
        self._pick_filter = event.value.strip()
        self.query_one("#live-pick", DataTable).focus()
        self._list()
