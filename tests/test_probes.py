"""Probes: the rebuilt history is what the agent saw; replies parse strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

import prompts
from core.errors import ConfigError
from core.probes import (
    At,
    decision_points,
    history_at,
    messages_for,
    parse_at,
    parse_belief,
    parse_confidence,
    probe_points,
    read_reply,
)
from core.react import forced_messages
from core.store import probes as probe_rows
from tests.helpers.probes import FINISH, GARBLED, LOOKUP, SEARCH, scripted_episode

DECISIONS = ("The page named the founder, so I keep going.\nDECISION: CONTINUE",
             "DECISION: CONTINUE", "I am not sure yet.", "Still nothing; continue  ",
             "  Decision: continue searching")
"""Decision-turn replies of the scripted decide episode, as a model might word them."""
SAID_USELESS = ("Thought: This page is not relevant to the question.\nAction: search\n"
                "Action Input: Vellmore Quartet")


@pytest.mark.parametrize("condition,regime", [
    ("none:judge=true,format_retries=1", "persistent"),
    ("decide:format_retries=1", "recover_after_2"),
    ("budget:judge=true,format_retries=1", "clean"),
    ("enforced_rule:k=2,format_retries=1", "persistent"),
    ("enforced_rule:k=2,forced_tool_call=refuse,format_retries=1", "persistent"),
    ("stated_judgment_rule:k=1", "persistent"),
])
def test_rebuilt_history_equals_what_the_agent_and_its_judge_fork_saw(db_path: Path, condition: str,
                                                                      regime: str) -> None:
    acts = [SEARCH, GARBLED, LOOKUP, SEARCH, SEARCH, SEARCH, SEARCH, FINISH]
    if condition.startswith("decide"):
        # the scripted client answers the decision turns from `acts` too: one after each
        # observation before the last action. The replies are free text (one with no
        # decision in it): the stored episode must give them back verbatim, not
        # "DECISION: <decision>" rebuilt from the parsed decision
        acts = [SEARCH, DECISIONS[0], GARBLED, LOOKUP,
                *[x for d in DECISIONS[1:] for x in (d, SEARCH)], DECISIONS[0], FINISH]
    if condition.startswith("stated"):
        acts = [SEARCH, SAID_USELESS, SEARCH, FINISH]
    db, eid, client = scripted_episode(db_path, condition, regime, acts,
                              judgments=["USELESS", "USEFUL", "USELESS", "USELESS"] * 3)
    ep = probe_rows.recorded_episode(db, eid)
    if condition.startswith("decide"):  # the replies went through lab.db's steps table
        stored = [r[0] for r in db.conn.execute(
            "SELECT decision_raw FROM steps WHERE episode_id = ? AND decision_raw IS NOT "
            "NULL ORDER BY t", (eid,))]
        assert stored == [*DECISIONS, DECISIONS[0]]
    forks = [m for kind, m in client.calls if kind == "judge"]
    acting = [m for kind, m in client.calls if kind == "act"]
    points = decision_points(ep)
    assert len(points) >= 2
    assert len(forks) == (0 if condition.startswith("stated") else len(points))
    for t, fork in zip(points, forks):
        assert messages_for(ep, t, "judgment") == fork
    # the turn after each decision point was asked on the rebuilt history (forced turns
    # after the forced lines, which stay in it)
    steps = [s for s in ep.steps]
    assert len(acting) == len(steps)
    for t in points:
        for i in (i for i, s in enumerate(steps) if s.t == t + 1):  # a discarded turn first
            rebuilt = history_at(ep, t)
            if steps[i].forced:
                rebuilt = forced_messages(ep.setup(), rebuilt)
            assert rebuilt == acting[i], (t, steps[i].discarded)
    full = history_at(ep)
    assert full[-1]["content"] == steps[-1].raw


def test_answer_now_fork_is_the_forced_turn_and_nothing_more(db_path: Path) -> None:
    # the paper's branch: the same history replayed with the rule's finish instruction
    # (no confidence request, which changed the answers the branch records); the second
    # seed's confidence line is an option
    db, eid, client = scripted_episode(db_path, "enforced_rule:k=2", "persistent",
                              [SEARCH, SEARCH, FINISH], judgments=["USELESS", "USELESS"])
    ep = probe_rows.recorded_episode(db, eid)
    forced_call = [m for kind, m in client.calls if kind == "act"][2]
    fork = messages_for(ep, 2, "answer_now")
    assert fork == forced_call  # exactly the request the rule's forced turn sent
    assert "Confidence" not in fork[-1]["content"]
    asked = messages_for(ep, 2, "answer_now", confidence=True)
    assert asked[:-1] == forced_call[:-1]
    assert asked[-1]["content"] == (forced_call[-1]["content"] + "\n"
                                    + prompts.load("answer_now_confidence"))


def test_parse_at_and_probe_points(db_path: Path) -> None:
    assert parse_at("every") == At("every")
    assert parse_at("t=5,3") == At("t", (3, 5))
    assert parse_at("first-useless-5").mode == "first-useless-5"
    for bad in ("t=", "t=0", "t=a", "sometimes"):
        with pytest.raises(ConfigError, match="--at"):
            parse_at(bad)
    db, eid, _ = scripted_episode(db_path, "none:judge=true", "persistent", [SEARCH] * 8,
                         judgments=["USELESS"] * 8)
    ep = probe_rows.recorded_episode(db, eid)
    assert decision_points(ep) == [1, 2, 3, 4, 5, 6, 7]
    assert probe_points(ep, parse_at("t=3,5,9")) == [3, 5]
    judged: dict[int, str | None] = {t: "USELESS" for t in range(1, 8)}
    judged[2] = "USEFUL"
    assert probe_points(ep, parse_at("first-useless-5"), judged) == [7]
    assert probe_points(ep, parse_at("first-useless-5"), {}) == []


def test_confidence_and_belief_parse_strictly_never_coerced() -> None:
    assert parse_confidence("Action Input: x\nConfidence: 85") == 0.85
    assert parse_confidence("confidence = 100%") == 1.0
    assert parse_confidence("Confidence: 150") is None
    assert parse_confidence("I am fairly sure") is None
    ok = parse_belief('Sure: {"p_continue": 0.2, "p_answer_now": 0.6, "prefer": "answer_now", '
                      '"reason": "nothing new"}')
    assert ok == {"p_continue": 0.2, "p_answer_now": 0.6, "prefer": "answer_now",
                  "reason": "nothing new"}
    for bad in ('{"p_continue": "0.2", "p_answer_now": 0.6, "prefer": "unsure"}',
                '{"p_continue": 1.2, "p_answer_now": 0.6, "prefer": "unsure"}',
                '{"p_continue": 0.2, "p_answer_now": 0.6, "prefer": "maybe"}',
                '{"p_continue": 0.2, "prefer": "unsure"}', "p_continue=0.2", ""):
        assert parse_belief(bad) is None


def test_read_reply_scores_answer_now_and_keeps_missing_missing(db_path: Path) -> None:
    db, eid, _ = scripted_episode(db_path, "none:judge=true", "clean", [SEARCH, FINISH])
    ep = probe_rows.recorded_episode(db, eid)
    right = read_reply(ep, 1, "answer_now", "Thought: ok\nAction: finish\nAction Input: Lake 1\n"
                       "Confidence: 70", "m")
    assert right.correct and right.confidence == 0.7 and right.parse_ok
    silent = read_reply(ep, 1, "answer_now", "Thought: ok\nAction: finish\nAction Input: Paris",
                        "m")
    assert silent.correct is False and silent.confidence is None and silent.parse_ok
    disobeys = read_reply(ep, 1, "answer_now", SEARCH, "m")
    assert disobeys.answer is None and not disobeys.parse_ok and disobeys.correct is False
    belief = read_reply(ep, 1, "belief", "no idea", "m")
    assert not belief.parse_ok and belief.p_continue is None


def test_write_probes_is_idempotent_and_replaces_only_errors(db_path: Path) -> None:
    db, eid, _ = scripted_episode(db_path, "none:judge=true", "clean", [SEARCH, FINISH])
    ep = probe_rows.recorded_episode(db, eid)
    first = read_reply(ep, 1, "judgment", "USELESS", "m")
    failed = read_reply(ep, 1, "belief", "", "m")
    failed.error = "timeout: gave up"
    assert probe_rows.write_probes(db, [first, failed]) == 2
    again = read_reply(ep, 1, "judgment", "USEFUL", "m")
    belief = read_reply(ep, 1, "belief", '{"p_continue": 0.1, "p_answer_now": 0.5, '
                        '"prefer": "unsure"}', "m")
    assert probe_rows.write_probes(db, [again, belief]) == 1
    rows = dict(db.conn.execute("SELECT kind, coalesce(judgment, prefer) FROM probes"))
    assert rows == {"judgment": "USELESS", "belief": "unsure"}
    assert db.conn.execute("SELECT count(*) FROM steps WHERE judgment_source = 'replay'"
                           ).fetchone()[0] == 0
