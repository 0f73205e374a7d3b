"""Enqueue screen (`3`, docs/queue.md): pick a grid, see its cost and refusals, queue it.

The form holds an amendment (or exploratory), a question set, models, conditions
(names plus knob variants), regimes (`m`: the six mean6 regimes), budgets, seeds
and a run name. Every change restarts a short timer; when it fires a thread
worker plans the grid with `jobs.grid.plan` — the pre-registration gate included,
exactly like `lab enqueue --dry-run` — and the preview shows cells, episodes,
calls, tokens and dollars, or the refusal in words. `ctrl+s` (or the Queue
button) queues it through `jobs.control.enqueue_grid`, one short transaction.
`s` opens the Sets view (console/screens/sets.py) to import data or create a
question set; back here, the set just created is picked and planned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Button, Header, Input, Label, Select, SelectionList, Static

from console.messages import Notice
from console.screens.base import LabScreen
from console.widgets.confirm import Confirm
from console.widgets.enqueue_checklist import EnqueueChecklist
from console.widgets.enqueue_preview import (
    build_request,
    confirm_text,
    nothing_text,
    preview_text,
    refusal_text,
)
from console.widgets.footer import LabFooter
from core import store
from core.conditions import ARMS
from core.errors import LabError
from core.models.registry import load_registry
from core.prereg import GateError
from core.regimes import MEAN6
from core.store import prereg as rows
from core.wording import plural
from jobs.control import enqueue_grid
from jobs.grid import GridRequest, plan
from jobs.settings import WorkerSettings

REGIMES = (*MEAN6, "recover_after_4", "recover_after_5", "plausible", "answerless")
EXPLORATORY = "exploratory"
EXPLORATORY_LABEL = "exploratory (no amendment)"


@dataclass(frozen=True)
class Choices:
    """What the form offers: models (name, backend), amendments, question sets."""

    models: tuple[tuple[str, str], ...]
    amendments: tuple[dict[str, Any], ...]
    sets: tuple[dict[str, Any], ...]


class EnqueueScreen(LabScreen):
    """Pick amendment, models, conditions, regimes, set, budget, seeds; preview; queue."""

    CSS_PATH = "enqueue.tcss"
    WRITE_ACTIONS = frozenset({"queue"})
    AUTO_FOCUS = "#enq-amendment"
    HORIZONTAL_BREAKPOINTS = [(0, "-tiny"), (70, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding("ctrl+s", "queue", "Queue it"),
        Binding("m", "mean6", "mean6 regimes"),
        Binding("s", "sets", "Sets"),
        Binding("escape", "back", "Back to top"),
    ]
    FOOTER_KEYS = ("queue", "mean6", "sets", "back")
    """The footer's keys, most essential first (LabFooter keeps these and ? q)."""

    @dataclass
    class ChoicesRead(Message):
        """The registry, amendments and question sets the form offers were read."""

        choices: Choices

    @dataclass
    class Planned(Message):
        """A plan of the form's grid (`ready` and `summary` when it can be queued)."""

        token: int
        text: Text
        ready: GridRequest | None
        summary: dict[str, Any] | None

    @dataclass
    class Queued(Message):
        """The grid was queued (the toast says what)."""

        text: str

    def __init__(self) -> None:
        super().__init__()
        self._choices: Choices | None = None
        self._token = 0
        self._timer: Timer | None = None
        self._ready: GridRequest | None = None
        self._ready_summary: dict[str, Any] | None = None
        self._filling = False
        self._applied_amendment: object = None
        self._want_set: str | None = None
        """A set created on the Sets view: picked at the next fill."""
        self._shown_token = 0
        """The form's change count the preview on show was planned for."""
        self._queue_when_planned = False
        """ctrl+s came while the preview was being planned: ask once it is shown."""

    def compose(self) -> ComposeResult:
        """Header, the form, the preview, footer."""
        yield Header()
        with Horizontal(id="enq-main"):
            with VerticalScroll(id="enq-form"):
                with Horizontal(classes="enq-row"):
                    yield Label("amendment", classes="enq-label", markup=False)
                    yield Select[str]([(EXPLORATORY_LABEL, EXPLORATORY)], allow_blank=False,
                                      value=EXPLORATORY, id="enq-amendment", compact=True)
                with Horizontal(classes="enq-row"):
                    yield Label("set", classes="enq-label", markup=False)
                    yield Select[str]([], prompt="pick a question set", id="enq-set",
                                      compact=True)
                yield Label("models", classes="enq-head", markup=False)
                yield EnqueueChecklist(id="enq-models", compact=True)
                yield Label("conditions (+ knob variants below)", classes="enq-head", markup=False)
                yield EnqueueChecklist(*((name, name) for name in ARMS), id="enq-conditions",
                                         compact=True)
                yield Input(placeholder="e.g. enforced_rule:k=7 random_rule:rate=0.6",
                            id="enq-knobs", compact=True)
                yield Label("regimes (m: the six mean6 regimes)", classes="enq-head", markup=False)
                yield EnqueueChecklist(*((r, r) for r in REGIMES), id="enq-regimes",
                                         compact=True)
                for label, value, field_id in (("budget(s)", "8", "enq-budget"),
                                               ("seeds", "0", "enq-seeds"),
                                               ("run name", "default", "enq-run")):
                    with Horizontal(classes="enq-row"):
                        yield Label(label, classes="enq-label", markup=False)
                        yield Input(value, id=field_id, compact=True)
                yield Button("Queue it (ctrl+s)", id="enq-queue", variant="primary",
                             disabled=True, compact=True)
            with VerticalScroll(id="enq-preview"):
                yield Static("loading…", id="enq-preview-text", markup=False)
        yield LabFooter()

    # ---- choices ---------------------------------------------------------------------

    def reload(self) -> None:
        """Reload what the form offers, then re-plan (stored episodes may have changed)."""
        self._load_choices()

    @work(thread=True, exclusive=True, group="enqueue-choices")
    def _load_choices(self) -> None:
        try:
            registry = load_registry(self.lab.config_path)
            with self._db() as db:
                choices = Choices(tuple((n, m.backend) for n, m in sorted(registry.items())),
                                  tuple(rows.amendments(db)), tuple(store.question_sets(db)))
        except LabError as exc:
            self.post_message(Notice(str(exc), severity="error"))
            return
        self.post_read(self.ChoicesRead(choices))

    def on_enqueue_screen_choices_read(self, message: ChoicesRead) -> None:
        """Fill the form's lists, keeping what the person picked."""
        self._fill(message.choices)

    def _fill(self, choices: Choices) -> None:
        old, self._choices = self._choices, choices
        self._filling = True
        amendment = self.query_one("#enq-amendment", Select)
        keep = amendment.value if old else EXPLORATORY
        # the prompts are Text: a str is read as markup, and a title or name like "[/]"
        # raised in the markup parser while the list drew
        amendment.set_options([(EXPLORATORY_LABEL, EXPLORATORY)] + [
            (Text(f"{a['id']} {'■ frozen' if a['state'] == 'frozen' else '✎ draft'}  "
                  f"{a['title']}"), a["id"]) for a in choices.amendments])
        amendment.value = keep if keep in self._amendment_ids() else EXPLORATORY
        # Select posts Changed after this method returns: remember what is already applied
        # so a reload (another process committed) never resets the person's form.
        self._applied_amendment = amendment.value
        sets = self.query_one("#enq-set", Select)
        keep_set = sets.value
        if self._want_set is not None and self._want_set in {s["name"] for s in choices.sets}:
            keep_set, self._want_set = self._want_set, None
        sets.set_options([(Text(f"{s['name']}  {s['n']} q, {s['dataset']}"
                                + (", HELD-OUT" if s["held_out"] else ", dev")), s["name"])
                          for s in choices.sets])
        if keep_set in {s["name"] for s in choices.sets}:
            sets.value = keep_set
        elif old is None:  # start on the first dev set: exploratory runs may use it
            dev = [s["name"] for s in choices.sets if not s["held_out"]]
            if dev:
                sets.value = dev[0]
        if old is None or old.models != choices.models:
            models = self.query_one("#enq-models", SelectionList)
            chosen = set(models.selected)
            models.clear_options()
            models.add_options([(Text(f"{name} ({backend})"), name, name in chosen)
                                for name, backend in choices.models])
        self._filling = False
        self._changed()

    def _amendment_ids(self) -> set[str]:
        return {EXPLORATORY} | {a["id"] for a in (self._choices.amendments if self._choices
                                                   else ())}

    def on_select_changed(self, event: Select.Changed) -> None:
        """Picking an amendment fills the form from its scope; any change re-plans."""
        if self._filling:
            return
        if event.select.id == "enq-amendment" and self._choices:
            if event.value != event.select.value or event.value == self._applied_amendment:
                # a stale event (set_options passes through blank) or a reload's re-select
                self._changed()
                return
            self._applied_amendment = event.value
            row = next((a for a in self._choices.amendments if a["id"] == event.value), None)
            if row and row.get("scope"):
                self._apply_scope(row["scope"])
        self._changed()

    def _apply_scope(self, scope: dict[str, Any]) -> None:
        """Select what an amendment governs (the person may then narrow it)."""
        self._filling = True
        for list_id, wanted in (("#enq-models", scope.get("models", [])),
                                ("#enq-conditions", scope.get("conditions", [])),
                                ("#enq-regimes", scope.get("regimes", []))):
            widget = self.query_one(list_id, SelectionList)
            offered = {widget.get_option_at_index(i).value for i in range(widget.option_count)}
            widget.deselect_all()
            for value in wanted:
                if value in offered:  # knob variants go to the input below
                    widget.select(value)
        knobs = [c for c in scope.get("conditions", []) if c not in ARMS]
        self.query_one("#enq-knobs", Input).value = " ".join(knobs)
        sets = scope.get("question_sets") or []
        if sets and self._choices and sets[0] in {s["name"] for s in self._choices.sets}:
            self.query_one("#enq-set", Select).value = sets[0]
        self.query_one("#enq-budget", Input).value = ",".join(
            str(b) for b in scope.get("budgets", [8]))
        self._filling = False

    # ---- preview ---------------------------------------------------------------------

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        """A model, condition or regime was ticked or unticked."""
        self._changed()

    def on_input_changed(self, event: Input.Changed) -> None:
        """A typed field changed."""
        self._changed()

    def _changed(self) -> None:
        """Mark the preview stale and re-plan after a short pause in typing."""
        if self._filling or self._choices is None:
            return
        self._token += 1
        self._ready = None
        self.query_one("#enq-queue", Button).disabled = True
        if self._timer is not None:
            self._timer.stop()
        delay = self.lab.preview_debounce_s
        self._timer = self.set_timer(delay, self._start_preview)

    def _request(self) -> GridRequest:
        amendment = self.query_one("#enq-amendment", Select).value
        question_set = self.query_one("#enq-set", Select).value
        return build_request(
            models=self.query_one("#enq-models", SelectionList).selected,
            conditions=self.query_one("#enq-conditions", SelectionList).selected,
            knobs=self.query_one("#enq-knobs", Input).value,
            regimes=self.query_one("#enq-regimes", SelectionList).selected,
            question_set=question_set if isinstance(question_set, str) else None,
            budget=self.query_one("#enq-budget", Input).value,
            seeds=self.query_one("#enq-seeds", Input).value,
            run=self.query_one("#enq-run", Input).value,
            amendment=amendment if isinstance(amendment, str) and amendment != EXPLORATORY
            else None)

    def grid_scope(self) -> dict[str, Any]:
        """The grid picked on the form as an amendment's scope: its models, conditions
        (knob variants included), regimes, question set and budgets.

        Raises:
            ConfigError: the form holds no grid yet (no set, a bad budget, nothing
                ticked), in the words of the scope's own check.
        """
        from core.registered_tests import validate_scope

        request = self._request()
        return validate_scope({"models": list(request.models),
                               "conditions": list(request.conditions),
                               "regimes": list(request.regimes),
                               "question_sets": [request.question_set],
                               "budgets": list(request.budgets)})

    def _start_preview(self) -> None:
        self._timer = None
        try:
            request = self._request()
        except LabError as exc:
            self._show_preview(self._token, refusal_text(str(exc), gate=False), None)
            return
        self.query_one("#enq-preview-text", Static).update(Text("planning…"))
        self._plan(self._token, request)

    @work(thread=True, exclusive=True, group="enqueue-preview")
    def _plan(self, token: int, request: GridRequest) -> None:
        ready: GridRequest | None = None
        shown: dict[str, Any] | None = None
        try:
            registry = load_registry(self.lab.config_path)
            with self._db() as db:
                summary = plan(db, request, registry).summary()
        except GateError as exc:
            text = refusal_text(str(exc), gate=True)
        except LabError as exc:
            text = refusal_text(str(exc), gate=False)
        else:
            if summary["new_episodes"]:
                text, ready, shown = preview_text(summary), request, summary
            else:
                text = nothing_text(summary)
        self.post_message(self.Planned(token, text, ready, shown))

    def on_enqueue_screen_planned(self, message: Planned) -> None:
        """Show the plan, if the form has not changed since."""
        self._show_preview(message.token, message.text, message.ready, message.summary)

    def _show_preview(self, token: int, text: Text, ready: GridRequest | None,
                      summary: dict[str, Any] | None = None) -> None:
        if token != self._token:
            return  # the form changed since: a newer plan is on its way
        self._shown_token = token
        self._ready, self._ready_summary = ready, summary
        self.query_one("#enq-preview-text", Static).update(text)
        self.query_one("#enq-queue", Button).disabled = ready is None
        if self._queue_when_planned:
            self._queue_when_planned = False
            self.action_queue()

    def planning(self) -> bool:
        """Whether the preview on show is older than the form (a plan is on its way)."""
        return self._shown_token != self._token

    # ---- actions ---------------------------------------------------------------------

    def action_mean6(self) -> None:
        """Tick the six mean6 regimes (or untick them when all are ticked)."""
        regimes = self.query_one("#enq-regimes", SelectionList)
        chosen = set(regimes.selected)
        for name in MEAN6:
            if set(MEAN6) <= chosen:
                regimes.deselect(name)
            else:
                regimes.select(name)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The Queue button."""
        if event.button.id == "enq-queue":
            self.action_queue()

    def action_queue(self) -> None:
        """Show what the previewed grid costs (episodes, calls, tokens, dollars); `y`
        queues it (refused ones never get here: the button is off)."""
        request, summary = self._ready, self._ready_summary
        if (request is None or summary is None) and self.planning():
            # the form changed since the preview on show: queue what it plans now
            self._queue_when_planned = True
            self.notify("planning the grid as it is now: it is shown to confirm when ready",
                        timeout=3)
            return
        if request is None or summary is None:
            self.notify("nothing to queue: the preview shows why", severity="warning")
            return
        question, detail, yes = confirm_text(summary)

        def answered(queue_it: bool | None) -> None:
            if queue_it:
                self.query_one("#enq-queue", Button).disabled = True
                self._queue(request)

        self.app.push_screen(Confirm(question, detail, yes), answered)

    @work(thread=True, group="enqueue-write")
    def _queue(self, request: GridRequest) -> None:
        settings = WorkerSettings(db_path=self.lab.db_path, config_path=self.lab.config_path)
        try:
            registry = load_registry(self.lab.config_path)
            with self._write_db("queue the grid") as db:
                grid_plan, grid_id, njobs = enqueue_grid(db, settings, request, registry)
        except LabError as exc:
            self.post_message(Notice(str(exc), severity="error"))
            return
        self.post_message(self.Queued(
            f"grid {grid_id}: queued {plural(njobs, 'job')}, "
            f"{plural(grid_plan.episodes, 'episode')} (run {request.run}, {grid_plan.mode})"
            if grid_id is not None else
            "nothing to queue: every episode is already stored or queued"))

    def on_enqueue_screen_queued(self, message: Queued) -> None:
        """Say what was queued and plan the form again (its episodes are queued now).

        The focus leaves the text fields (for the preview), so a digit typed next
        switches screens instead of renaming the next run."""
        self.notify(message.text)
        if isinstance(self.focused, Input):
            self.query_one("#enq-preview", VerticalScroll).focus()
        self._changed()

    def action_sets(self) -> None:
        """`s`: the Sets view (import a data file, create a question set); a set created
        there is picked here when it closes, and this screen re-reads on the way back."""
        from console.screens.sets import SetsScreen

        view = SetsScreen()

        def closed(_: None) -> None:
            if view.created is not None:
                self._want_set = view.created

        self.app.push_screen(view, closed)

    def action_back(self) -> None:
        """Escape: back to the top of the form."""
        self.query_one("#enq-form", VerticalScroll).scroll_home(animate=False)
        self.query_one("#enq-amendment", Select).focus()
