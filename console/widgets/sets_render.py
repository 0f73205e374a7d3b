"""Text of the Sets view: its confirmations and messages. Pure functions, no lab.db.

Every confirmation names the action, its target and its counts, so the person
decides on the dialog's text; the messages after a write are the CLI's lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.data_import import DataFile
from core.limits import DEFAULT_WARN_KB
from core.question_sets import SetDraft
from core.wording import plural


def set_confirm(draft: SetDraft) -> tuple[str, str, str]:
    """(question, detail, what `y` does) before a drawn set is stored."""
    ruled = (f", {plural(draft.excluded, 'question')} ruled out by "
             f"{', '.join(draft.exclude)}" if draft.exclude else "")
    lines = [f"Questions: {len(draft.ids):,} of {draft.available:,} (seed {draft.seed}){ruled}"]
    if draft.labels:
        lines.append(f"Balance:   {draft.balance().strip(' ()')}")
    lines.append(f"Kind:      {draft.kind}" + (" (pre-registered runs only)"
                                                if draft.held_out else ""))
    lines.append(f"sha256:    {draft.sha256[:16]}…  (frozen: never changes once made)")
    return (f"Create {draft.kind} question set {draft.name} from dataset {draft.dataset}?",
            "\n".join(lines), f"create {draft.name} ({plural(len(draft.ids), 'question')})")


def created_text(draft: SetDraft) -> str:
    """The message after a set was stored (`lab sets create`'s line)."""
    return (f"created {draft.kind} set '{draft.name}': {len(draft.ids):,} questions from "
            f"{draft.dataset}{draft.balance()}, sha256 {draft.sha256[:12]}")


def import_confirm(data: DataFile, already: int, big: Sequence[tuple[str, int]]
                   ) -> tuple[str, str, str]:
    """(question, detail, what `y` does) before a validated data file is stored.

    Args:
        data: the validated file.
        already: how many of its questions the dataset holds already.
        big: (id, characters) of questions above the context-size warning.
    """
    n, noun = len(data.questions), data.noun
    new = n - already
    lines = [f"Validated: {plural(n, noun)} ({new:,} new, {already:,} already stored and kept)"]
    if data.kind == "fever":
        lines.append(f"Skipped:   {plural(data.skipped_nei, 'NOT ENOUGH INFO claim')}"
                     + ("" if data.include_nei else " (tick NEI to keep them)")
                     + (f", {plural(data.skipped_no_text, 'claim')} without evidence text"
                        if data.skipped_no_text else ""))
    unanswerable = int(getattr(data, "skipped_unanswerable", 0))  # MuSiQue
    if unanswerable:
        lines.append(f"Skipped:   {plural(unanswerable, 'unanswerable record')}")
    if big:
        shown = ", ".join(f"{qid} ({chars / 1024:,.0f} KB)" for qid, chars in big[:3])
        lines.append(f"Warning:   {plural(len(big), 'question')} above {DEFAULT_WARN_KB:g} KB "
                     f"of context text: {shown}{' …' if len(big) > 3 else ''}")
    lines.append("All or nothing: one transaction.")
    return (f"Import {plural(n, noun)} from {data.path} into dataset '{data.dataset}'?",
            "\n".join(lines), f"store {plural(new, f'new {noun}')}")


def imported_text(data: DataFile, new: int, same: int, shown: object = None) -> str:
    """The message after an import: the Sets screen's toast, and `lab data import`'s
    line before what it skipped.

    Args:
        data: the file stored.
        new: its questions newly stored.
        same: its questions the dataset held already.
        shown: the file as the message names it (default: the path read; the command
            names it as typed).
    """
    return (f"imported {plural(new, data.noun)} from {data.path if shown is None else shown} "
            f"into dataset '{data.dataset}'" + (f" ({same:,} already present)" if same else ""))
