"""The Sets view's two forms: a new question set, and a data file to import.

Each is a modal that gathers its fields, checks what can be checked without lab.db
(a name, whole numbers, a path typed at all) with the CLI's words, and dismisses
with a frozen request — or None on escape. The Sets screen then draws the set or
reads the file in a worker, and asks before it writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Select, Static
from textual.widgets._select import NoSelection

from console.widgets.tick_box import TickBox
from core.data_import import KINDS
from core.errors import ConfigError
from core.limits import INT64_MAX
from core.question_sets import check_set_name, split_names

AUTO, DEV, HELD_OUT = "auto", "dev", "held-out"
FORMATS = {"hotpotqa": "a JSON or JSONL file",
           "fever": "a folder with claims.jsonl, pages.json",
           "musique": "an answerable JSONL file"}
"""What each `lab data import` kind reads, for the form's format list (core.data_import.KINDS)."""
KIND_CHOICES = ((f"{AUTO}: held-out when named test…/fresh…", AUTO), (DEV, DEV),
                (HELD_OUT, HELD_OUT))


@dataclass(frozen=True)
class SetRequest:
    """What the new-set form asks for (the arguments of `lab sets create`)."""

    name: str
    dataset: str
    n: int
    seed: int
    exclude: tuple[str, ...] = ()
    held_out: bool | None = None


@dataclass(frozen=True)
class ImportRequest:
    """What the import form asks for (the arguments of `lab data import`)."""

    kind: str
    path: str
    dataset: str | None = None
    include_nei: bool = False


def whole_number(text: str, what: str, lo: int, example: str) -> int:
    """A whole number typed in a field, within `lo` … 2^63 − 1.

    Raises:
        ConfigError: anything else, naming the field, with an example.
    """
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        raise ConfigError(f"{what} must be a whole number, e.g. {example}, "
                          f"got '{text.strip()}'") from None
    if not lo <= value <= INT64_MAX:
        raise ConfigError(f"{what} must be from {lo:,} to {INT64_MAX:,}, got {value:,}")
    return value


def set_request(*, name: str, dataset: object, n: str, seed: str, exclude: str,
                kind: object) -> SetRequest:
    """The request of the new-set form's fields.

    Raises:
        ConfigError: no dataset, a bad name, or n / seed not whole numbers.
    """
    check_set_name(name.strip())
    if not isinstance(dataset, str):
        raise ConfigError("pick a dataset to draw from (import one with i first)")
    return SetRequest(name=name.strip(), dataset=dataset, n=whole_number(n, "n", 1, "100"),
                      seed=whole_number(seed, "seed", -INT64_MAX - 1, "1"),
                      exclude=split_names([exclude]),
                      held_out=None if kind == AUTO else kind == HELD_OUT)


def import_request(*, kind: object, path: str, dataset: str, include_nei: bool
                   ) -> ImportRequest:
    """The request of the import form's fields.

    Raises:
        ConfigError: no path, a dataset name with spaces, or NEI for HotpotQA.
    """
    if kind not in KINDS:
        raise ConfigError(f"pick what the file holds: {', '.join(KINDS)}")
    if not path.strip():
        raise ConfigError("type the path of the file (HotpotQA) or folder (FEVER) to import")
    name = dataset.strip()
    if name and any(c.isspace() or c in "/\\," for c in name):
        raise ConfigError(f"dataset name {name!r}: use a name without spaces, '/', '\\' or ','"
                          f", e.g. hotpotqa")
    if include_nei and kind != "fever":
        raise ConfigError("NOT ENOUGH INFO claims exist in FEVER folders only")
    return ImportRequest(kind=str(kind), path=path.strip(), dataset=name or None,
                         include_nei=include_nei)


class _Form(ModalScreen[object]):
    """A panel of labelled fields; enter (in a field) or ctrl+s submits, escape cancels."""

    CSS_PATH = "sets_forms.tcss"
    BINDINGS = [Binding("ctrl+s", "submit", "Submit"), Binding("escape", "cancel", "Cancel")]

    @staticmethod
    def row(label: str, widget: Input | Select[str] | Checkbox) -> Horizontal:
        """A label and its field on one line."""
        return Horizontal(Label(label, classes="form-label", markup=False), widget,
                          classes="form-row")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in any field submits the form."""
        event.stop()
        self.action_submit()

    def action_submit(self) -> None:
        """Check the fields and close with the request (override)."""

    def action_cancel(self) -> None:
        """Close without a request."""
        self.dismiss(None)


class SetForm(_Form):
    """Ask for a new question set: name, dataset, n, seed, excluded sets, dev or held-out.

    Args:
        datasets: (name, label) of the datasets to draw from.
        sets: existing set names (shown as what `exclude` may name).
        initial: the fields' values (the form shown again after an error).
    """

    def __init__(self, datasets: Sequence[tuple[str, str]], sets: Sequence[str],
                 initial: SetRequest | None = None) -> None:
        super().__init__()
        self._datasets = list(datasets)
        self._sets = list(sets)
        self._initial = initial

    def compose(self) -> ComposeResult:
        """Title, the fields, the keys."""
        r = self._initial
        known = {name for name, _ in self._datasets}
        dataset: str | NoSelection = r.dataset if r and r.dataset in known else (
            self._datasets[0][0] if self._datasets else Select.NULL)
        kind = AUTO if r is None or r.held_out is None else HELD_OUT if r.held_out else DEV
        with Vertical(id="form-box"):
            yield Static("New question set — sampled without replacement, frozen once made",
                         classes="form-title", markup=False)
            yield self.row("name", Input(r.name if r else "", placeholder="e.g. dev100",
                                         id="set-name", compact=True))
            datasets = [(Text(label), name) for name, label in self._datasets]  # no markup
            yield self.row("dataset", Select(datasets, value=dataset,
                                             prompt="no dataset: import one",
                                             id="set-dataset", compact=True))
            yield self.row("n", Input(str(r.n) if r else "", placeholder="questions, e.g. 100",
                                      id="set-n", compact=True))
            yield self.row("seed", Input(str(r.seed) if r else "", placeholder="e.g. 1",
                                         id="set-seed", compact=True))
            yield self.row("exclude", Input(",".join(r.exclude) if r else "",
                                            placeholder="sets to stay disjoint from, e.g. dev100",
                                            id="set-exclude", compact=True))
            yield Static("sets: " + (", ".join(self._sets) or "none yet"), classes="form-hint",
                         markup=False)
            yield self.row("kind", Select(KIND_CHOICES, value=kind, allow_blank=False,
                                          id="set-kind", compact=True))
            yield Static("enter / ctrl+s = draw it and ask    escape = cancel",
                         classes="form-keys", markup=False)

    def on_mount(self) -> None:
        """Start in the name field."""
        self.query_one("#set-name", Input).focus()

    def action_submit(self) -> None:
        """Close with the request, or say in one toast what is wrong (the form stays)."""
        try:
            request = set_request(
                name=self.query_one("#set-name", Input).value,
                dataset=self.query_one("#set-dataset", Select).value,
                n=self.query_one("#set-n", Input).value,
                seed=self.query_one("#set-seed", Input).value,
                exclude=self.query_one("#set-exclude", Input).value,
                kind=self.query_one("#set-kind", Select).value)
        except ConfigError as exc:
            self.notify(str(exc), severity="error")
            return
        self.dismiss(request)


class ImportForm(_Form):
    """Ask for a data file to import: what it holds, its path, the dataset name, NEI.

    Args:
        initial: the fields' values (the form shown again after an error).
    """

    def __init__(self, initial: ImportRequest | None = None) -> None:
        super().__init__()
        self._initial = initial

    def compose(self) -> ComposeResult:
        """Title, the fields, the keys."""
        r = self._initial
        with Vertical(id="form-box"):
            yield Static("Import a data file — validated whole, stored in one transaction",
                         classes="form-title", markup=False)
            yield self.row("format", Select(
                [(f"{kind}: {FORMATS.get(kind, 'a data file')}", kind) for kind in KINDS],
                value=r.kind if r else KINDS[0], allow_blank=False, id="imp-kind",
                compact=True))
            yield self.row("path", Input(r.path if r else "",
                                         placeholder="e.g. ~/data/hotpot_dev_distractor_v1.json",
                                         id="imp-path", compact=True))
            yield self.row("dataset", Input(r.dataset or "" if r else "",
                                            placeholder="default: the format's name",
                                            id="imp-dataset", compact=True))
            yield self.row("NEI", TickBox("keep NOT ENOUGH INFO claims (fever)",
                                           r.include_nei if r else False, id="imp-nei",
                                           compact=True,
                                           disabled=(r.kind if r else "hotpotqa") != "fever"))
            yield Static("enter / ctrl+s = read and check it, then ask    escape = cancel",
                         classes="form-keys", markup=False)

    def on_mount(self) -> None:
        """Start in the path field."""
        self.query_one("#imp-path", Input).focus()

    @on(Select.Changed, "#imp-kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        self.query_one("#imp-nei", Checkbox).disabled = event.value != "fever"

    def action_submit(self) -> None:
        """Close with the request, or say in one toast what is wrong (the form stays)."""
        try:
            request = import_request(
                kind=self.query_one("#imp-kind", Select).value,
                path=self.query_one("#imp-path", Input).value,
                dataset=self.query_one("#imp-dataset", Input).value,
                include_nei=self.query_one("#imp-nei", Checkbox).value)
        except ConfigError as exc:
            self.notify(str(exc), severity="error")
            return
        self.dismiss(request)
