"""The Results screen's stale line says what changed since its numbers were computed:
new episodes of the selection are counted, any other change is named as a change."""

from __future__ import annotations

from console.screens.results.stale import stale_note
from core.store.selection import Fingerprint

SEEN = Fingerprint(episodes=40, max_id=120, changes=3)


def test_new_episodes_are_counted() -> None:
    assert stale_note(SEEN, Fingerprint(52, 160, 3)) == "12 new episodes since computed"
    assert stale_note(SEEN, Fingerprint(41, 121, 3)) == "1 new episode since computed"


def test_a_change_that_adds_no_episode_is_not_called_new_episodes() -> None:
    # a stored probe, a repaired answer, an updated row: the change counter moved
    assert stale_note(SEEN, Fingerprint(40, 120, 4)) == "lab.db changed since computed"
    # an episode deleted (the counter moves too) or gone with its cell
    assert stale_note(SEEN, Fingerprint(39, 120, 4)) == "lab.db changed since computed"
    assert stale_note(SEEN, Fingerprint(39, 119, 4)) == "lab.db changed since computed"


def test_new_episodes_beside_other_changes_say_both() -> None:
    assert stale_note(SEEN, Fingerprint(45, 130, 5)) == (
        "5 new episodes and other changes in lab.db since computed")
