"""`?`: the cheat sheet of the screen underneath: its workflow first, then its keys."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from console.widgets.measured_table import MeasuredTable

EVERYWHERE = (("1 … 7", "switch screen (not while typing)"),
              ("?", "this help"), ("p", "Pause refresh"),
              ("q", "back from a drill-down, else quit"), ("ctrl+c", "copy a selection, else quit"),
              ("ctrl+z", "suspend (fg resumes)"),
              ("ctrl+p", "command palette"),
              ("escape", "back / close / leave a field"))
"""The keys that work on every screen (the app's), last in every cheat sheet."""

WORKFLOW = {
    "dashboard": "Watch the queue, workers, throughput, endpoints and spend; h checks the "
                 "endpoints, r re-reads now. Queue work on 3, steer it on 4.",
    "prereg": "n drafts an amendment, e edits it (ctrl+s saves), f freezes it before any "
              "held-out run; d logs a deviation, o shows outcomes, v verifies the chain.",
    "enqueue": "Pick an amendment and a set, tick models, conditions and regimes (space), "
               "set budgets, seeds and run name; the preview shows cost and refusals; "
               "ctrl+s queues after a y. s opens Sets to import data or create a set.",
    "sets": "Import data with i (a HotpotQA file or a FEVER folder: validated, then y "
            "stores it), create a question set with c (name, dataset, n, seed, sets to "
            "exclude, dev or held-out: drawn, then y stores it); escape goes back to "
            "Enqueue with the new set picked.",
    "jobs": "Runs → grids → jobs (enter/l opens, h closes): P pauses, u resumes, x cancels, "
            "t retries, E re-queues errored probes; / filters, escape clears; s orders "
            "the jobs by state, progress, errors, seed or cell, C copies a job's row, T "
            "the jobs shown (TSV).",
    "live": "Follows the newest running episode's steps as they are committed (f toggles); "
            "o picks another episode, / filters the running ones.",
    "trajectories": ": filters episodes (model= arm= regime= outcome=), ] loads older ones, "
                    "enter opens one, ←/→ step through it, m shows its matched arms; "
                    "arrows/hjkl move the cursor, s sorts the loaded list by its column, "
                    "/ searches what is shown (n/N), c C T copy the cell, row or list as TSV "
                    "(an episode: the step, or T the whole trajectory), g/G first/last.",
    "results": "[ and ] switch tables; arrows/hjkl move the cursor, s sorts by its column, "
               "/ searches (n/N), c C T copy the cell, row or table as TSV, g/G top/bottom; "
               ": selects runs, models and conditions, v changes the Δ variant, R repaired, "
               "e exports CSVs; r re-reads when it says stale.",
}
"""Each screen's workflow in a sentence or two (by mode), the first line of its help."""


def workflow(mode: str) -> str:
    """The workflow line of the screen registered as `mode` ("" when none)."""
    return WORKFLOW.get(mode, "")


class HelpScreen(ModalScreen[None]):
    """An opaque panel over the screen: title, workflow, then the key table."""

    BINDINGS = [Binding("escape", "dismiss", "Back"), Binding("q", "dismiss", "Back"),
                Binding("question_mark", "dismiss", "Back", key_display="?")]

    def __init__(self, title: str, workflow: str,
                 keys: Sequence[tuple[str, str, str]]) -> None:
        super().__init__()
        self._title = title
        self._workflow = workflow
        self._keys = keys

    def compose(self) -> ComposeResult:
        """The panel: a title, the workflow line, the key table."""
        with Vertical(id="help-panel"):
            yield Static(f"Help — {self._title}   (escape closes)", id="help-title",
                         markup=False)
            yield Static(self._workflow, id="help-workflow", markup=False)
            yield MeasuredTable(id="help-keys", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        """Fill the table."""
        table = self.query_one(DataTable)
        table.add_columns("key", "action", "where")
        for row in self._keys:
            table.add_row(*row)
