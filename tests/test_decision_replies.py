"""The decide arm's decision-turn reply is stored on its step (steps.decision_raw): a
rebuilt history falls back to "DECISION: <decision>" only on steps stored without it,
and the trajectory view shows the reply when it says more than the decision."""

from __future__ import annotations

from pathlib import Path

from console.widgets import traj_render
from core.episode import Step
from core.probes import history_at
from core.react import UNPARSED
from core.store import probes as probe_rows
from tests.helpers.probes import FINISH, SEARCH, scripted_episode

WORDY = "The page was off topic, but one more search may find it.\nDECISION: CONTINUE"
VAGUE = "Hard to say."


def _decision_turns(messages: list[dict]) -> list[str]:
    """The assistant turns that answered a decision prompt (the turn after it)."""
    return [messages[i + 1]["content"] for i, m in enumerate(messages[:-1])
            if m["role"] == "user" and "DECISION" in m["content"]]


def test_a_step_stored_without_its_reply_rebuilds_it_from_the_decision(db_path: Path) -> None:
    db, eid, _ = scripted_episode(db_path, "decide", "persistent",
                                  [SEARCH, WORDY, SEARCH, VAGUE, FINISH],
                                  judgments=["USELESS", "USELESS"])
    assert _decision_turns(history_at(probe_rows.recorded_episode(db, eid))) == [
        WORDY, VAGUE]
    # a lab.db written before the column: the reply is gone, the parsed decision stays
    db.conn.execute("UPDATE steps SET decision_raw = NULL WHERE episode_id = ?", (eid,))
    assert _decision_turns(history_at(probe_rows.recorded_episode(db, eid))) == [
        "DECISION: CONTINUE", UNPARSED]


def test_the_trajectory_view_shows_a_reply_that_says_more_than_its_decision() -> None:
    wordy = Step(t=2, raw=SEARCH, action="search", argument="x", decision="CONTINUE",
                 decision_raw=WORDY)
    body = traj_render.step_body(wordy, None, "", 8).plain
    assert "decision: CONTINUE\n" in body
    assert "decision reply: The page was off topic, but one more search may find it." in body
    bare = Step(t=2, raw=SEARCH, action="search", argument="x", decision="CONTINUE",
                decision_raw="DECISION: CONTINUE\n")
    assert "decision reply" not in traj_render.step_body(bare, None, "", 8).plain
    vague = Step(t=2, raw=SEARCH, action="search", argument="x", decision_raw=VAGUE)
    body = traj_render.step_body(vague, None, "", 8).plain
    assert "decision: unparsed\n" in body and f"decision reply: {VAGUE}" in body
    other = Step(t=2, raw=SEARCH, action="search", argument="x")
    assert "decision" not in traj_render.step_body(other, None, "", 8).plain
