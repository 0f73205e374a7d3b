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
