"""Counted nouns (`core.wording.plural`): the events and messages that use it read as
the console's counts do."""

from __future__ import annotations

from core.wording import plural


def test_counts_are_singular_at_one_and_grouped_in_thousands() -> None:
    assert plural(1, "trace job") == "1 trace job"
    assert plural(0, "call") == "0 calls"
    assert plural(999, "episode") == "999 episodes"
    # the Dashboard's event "grid 2 run fc: 36 answer_now jobs, 3549 calls" beside its
    # "3,549 stored" probes
    assert plural(3549, "call") == "3,549 calls"
    assert plural(1_083_809, "step") == "1,083,809 steps"


def test_the_repaired_note_counts_its_episodes() -> None:
    """The Results screen's line over repaired answers read 'the raw ones of 1 episodes'."""
    from console.screens.results.screen import _repaired_note

    assert "replace the raw ones of 1 episode;" in _repaired_note(1)
    assert "replace the raw ones of 1,234 episodes;" in _repaired_note(1234)
    assert _repaired_note(None) == ""


def test_an_import_names_the_file_and_counts_what_was_already_there() -> None:
    """The Sets screen's toast and `lab data import`'s line are one message: the screen
    names the path it read, the command the file as typed."""
    from pathlib import Path

    from console.widgets.sets_render import imported_text
    from core.data_import import DataFile

    data = DataFile("fever", Path("/data/fever"), "fever", ())
    assert imported_text(data, 0, 1234) == \
        "imported 0 claims from /data/fever into dataset 'fever' (1,234 already present)"
    assert imported_text(data, 1, 0, "fever/") == \
        "imported 1 claim from fever/ into dataset 'fever'"
