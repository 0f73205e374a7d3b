"""The episode loop: forks, rules, counters, refusals, format failures."""

from __future__ import annotations

import asyncio

import prompts
from core.conditions import Condition, parse_condition
from core.data import Question
from core.episode import EpisodeResult
from core.models.base import EpisodeView
from core.react import EpisodeSetup, run_episode
from core.regimes import ForeignPool, parse_regime
from tests.helpers.builders import make_pool
from tests.helpers.scripted import ScriptedClient

SEARCH = "Thought: look it up\nAction: search\nAction Input: Vellmore Quartet"
FINISH = "Thought: I know it\nAction: finish\nAction Input: Lake 1"


def run(client: ScriptedClient, condition: str = "none", regime: str = "clean",
        budget: int = 8, seed: int = 0, pool: list[Question] | None = None) -> EpisodeResult:
    pool = pool or make_pool()
    setup = EpisodeSetup(question=pool[0], condition=parse_condition(condition),
                         regime=parse_regime(regime), budget=budget, seed=seed,
                         pool=ForeignPool(pool))
    view = EpisodeView(question=pool[0], seed=seed, budget=budget)
    return asyncio.run(run_episode(setup, client.start(view), view=view))


def test_side_channel_fork_shares_the_acting_prefix_exactly() -> None:
    client = ScriptedClient(acts=[SEARCH, SEARCH, FINISH], judgments=["USEFUL", "USELESS"])
    result = run(client, "enforced_rule")
    kinds = [k for k, _ in client.calls]
    assert kinds == ["act", "judge", "act", "judge", "act"]
    for i, (kind, msgs) in enumerate(client.calls):
        if kind == "judge":
            acting = client.calls[i + 1][1]
            assert msgs[:-1] == acting
            assert msgs[-1] == {"role": "user", "content": prompts.load("side_channel")}
    assert [s.judgment for s in result.steps[:2]] == ["USEFUL", "USELESS"]
    assert result.extra_calls == 2


def test_judgments_are_never_fed_back() -> None:
    client = ScriptedClient(acts=[SEARCH, SEARCH, FINISH], judgments=["USELESS", "USELESS"])
    run(client, "none:judge=true")
    last_act = [m for k, m in client.calls if k == "act"][-1]
    assert all(prompts.load("side_channel") not in m["content"] for m in last_act)
    assert all(m["content"] != "USELESS" for m in last_act)


def test_enforced_rule_forces_at_streak_k_and_records_refusals() -> None:
    """With forced_tool_call=refuse (the option; the default executes the call)."""
    client = ScriptedClient(acts=[SEARCH] * 8, judgments=["USELESS"] * 8)
    result = run(client, "enforced_rule:k=3,forced_tool_call=refuse", "persistent")
    steps = result.steps
    assert [s.streak for s in steps[:3]] == [1, 2, 3]
    assert [s.forced for s in steps] == [False, False, False, True, True, True, True, True]
    assert all(s.refused for s in steps[3:])
    assert result.tool_calls == 3 and result.refused_calls == 5 and not result.answered
    forced_call = [m for k, m in client.calls if k == "act"][3]
    assert prompts.load("forced_system") in forced_call[0]["content"]
    assert forced_call[-1]["content"].endswith(prompts.load("forced_observation"))
    # the forced system prompt stays in the history from the first forced turn on
    assert prompts.load("forced_system") not in client.calls[0][1][0]["content"]
    later = [m for k, m in client.calls if k == "act"][5]
    assert prompts.load("forced_system") in later[0]["content"]


def test_forced_turn_that_finishes_answers() -> None:
    client = ScriptedClient(acts=[SEARCH] * 5 + [FINISH], judgments=["USELESS"] * 8)
    result = run(client, "enforced_rule", "persistent")
    assert result.answered and result.answer_action == 6
    assert result.steps[-1].forced and not result.steps[-1].refused


def test_non_useless_reply_resets_streak() -> None:
    replies = ["USELESS", "USELESS", "maybe useful?", "USELESS", "USELESS", "USELESS", "USELESS"]
    client = ScriptedClient(acts=[SEARCH] * 8, judgments=replies)
    result = run(client, "enforced_rule:k=4", "persistent")
    assert [s.streak for s in result.steps[:7]] == [1, 2, 0, 1, 2, 3, 4]
    assert [s.judgment for s in result.steps[:3]] == ["USELESS", "USELESS", "USEFUL"]
    assert [s.forced for s in result.steps] == [False] * 7 + [True]


def test_budget_counter_text() -> None:
    client = ScriptedClient(acts=[SEARCH, SEARCH, FINISH])
    run(client, "budget", budget=8)
    acts = [m for k, m in client.calls if k == "act"]
    assert acts[0][1]["content"].endswith("[Actions remaining: 8]")
    assert acts[1][-1]["content"].endswith("[Actions remaining: 7]")
    assert acts[2][-1]["content"].endswith("[Actions remaining: 6]")
    assert "at most 8 actions" in acts[0][0]["content"]
    client = ScriptedClient(acts=[SEARCH, FINISH])
    run(client, "none")
    acts = [m for k, m in client.calls if k == "act"]
    assert "Actions remaining" not in acts[1][-1]["content"]


def test_format_reminder_once_then_format_failure() -> None:
    """format_retries=1 (the option; by default the first failed turn ends the episode)."""
    client = ScriptedClient(acts=["I think", SEARCH, "still no action", "nope"])
    result = run(client, "none:format_retries=1")
    assert result.end_reason == "format_failure" and not result.answered
    assert result.format_failures == 3
    acts = [m for k, m in client.calls if k == "act"]
    assert acts[1][-1]["content"] == prompts.load("format_reminder")


def test_budget_end_is_unanswered() -> None:
    client = ScriptedClient(acts=[SEARCH] * 3)
    result = run(client, budget=3)
    assert result.end_reason == "budget" and not result.answered and result.tool_calls == 3
    assert not result.correct


def test_failed_observations_are_labelled_and_drawn_identically_across_conditions() -> None:
    pool = make_pool(6)
    a = run(ScriptedClient(acts=[SEARCH] * 8), "none", "recover_after_2", seed=3, pool=pool)
    b = run(ScriptedClient(acts=[SEARCH] * 8, judgments=["USEFUL"] * 8), "enforced_rule",
            "recover_after_2", seed=3, pool=pool)
    assert [s.obs_failed for s in a.steps] == [True, True] + [False] * 6
    assert [s.obs_source for s in a.steps[:3]] == ["foreign", "foreign", "gold"]
    assert [s.obs_ref for s in a.steps] == [s.obs_ref for s in b.steps]
    assert a.steps[0].obs_ref is not None and not a.steps[0].obs_ref.startswith("q1#")
    c = run(ScriptedClient(acts=[SEARCH] * 8), "none", "recover_after_2", seed=4, pool=pool)
    # another seed draws other foreign pages (the draw is seeded, so this is fixed)
    assert [s.obs_ref for s in c.steps[:2]] != [s.obs_ref for s in a.steps[:2]]


def test_plausible_draws_own_distractors() -> None:
    result = run(ScriptedClient(acts=[SEARCH] * 4), "none", "plausible", budget=4)
    assert all(s.obs_failed and s.obs_source == "distractor" for s in result.steps)
    assert all(s.obs_ref is not None and s.obs_ref.startswith("q1#") for s in result.steps)


def test_answerless_removes_supporting_sentences() -> None:
    result = run(ScriptedClient(acts=[SEARCH, FINISH]), "none", "answerless")
    assert result.steps[0].shown is not None
    assert "Ada Brun" not in result.steps[0].shown  # the founder sentence is gone
    assert result.steps[0].obs_failed is False


def test_decide_writes_judgment_and_count_into_history() -> None:
    """The decision comes from its own turn (the scripted client answers it from `acts`)."""
    act = "Thought: go on\nAction: search\nAction Input: Ada Brun"
    client = ScriptedClient(acts=[act, "DECISION: CONTINUE", act, "DECISION: CONTINUE", FINISH],
                            judgments=["USELESS", "USELESS"])
    result = run(client, "decide", "persistent")
    decides = [m for k, m in client.calls if k == "decide"]
    assert "judgment of the last observation: USELESS" in decides[1][-1]["content"]
    assert "so far: 2" in decides[1][-1]["content"]
    assert [s.decision for s in result.steps] == [None, "CONTINUE", "CONTINUE"]


def test_lexical_and_random_rules_use_their_own_signal() -> None:
    result = run(ScriptedClient(acts=[SEARCH] * 8), "lexical_rule:k=2", "persistent")
    observed = [s for s in result.steps if s.obs_index is not None and s.t < 8]
    assert observed and all(s.rule_signal in ("USEFUL", "USELESS") for s in observed)
    # persistent: foreign pages share no content words with the question → USELESS at
    # every observation (the forced turns' searches are judged too)
    assert [s.rule_signal for s in observed] == ["USELESS"] * 7
    # forced turns from the third on; their searches run (forced_tool_call=execute)
    assert all(s.forced and not s.refused for s in result.steps[2:])
    assert result.extra_calls == 0  # no judgment calls unless judge=true
    r1 = run(ScriptedClient(acts=[SEARCH] * 8), "random_rule:rate=0.5", "clean", seed=7)
    r2 = run(ScriptedClient(acts=[SEARCH] * 8), "random_rule:rate=0.5", "clean", seed=7)
    assert [s.rule_signal for s in r1.steps] == [s.rule_signal for s in r2.steps]
    always = run(ScriptedClient(acts=[SEARCH] * 8), "random_rule:rate=1.0,k=2", "clean")
    assert always.steps[2].forced


def test_stated_judgment_read_from_next_thought() -> None:
    nxt = "Thought: This page is not relevant to the question.\nAction: search\nAction Input: X"
    result = run(ScriptedClient(acts=[SEARCH, nxt, FINISH]))
    assert result.steps[0].stated_judgment == "useless"


def test_condition_spec_hash_changes_with_knobs() -> None:
    a, b = Condition("enforced_rule"), Condition("enforced_rule", k=4)
    assert a.spec_hash() != b.spec_hash()
    assert Condition("none").spec_hash() == Condition("none", k=4).spec_hash()  # k not a knob
    assert a.to_json() == '{"judge":false,"k":5,"name":"enforced_rule"}'


def test_on_step_sees_a_stated_arms_streak_once_the_next_thought_states_it() -> None:
    """On stated_judgment_rule the streak of an observation's step is set when the next
    thought is read; `on_step` (live tail, `lab try`) must see it set, in step order."""
    nxt = "Thought: This page is not relevant to the question.\nAction: search\nAction Input: X"
    pool = make_pool()
    setup = EpisodeSetup(question=pool[0], condition=parse_condition("stated_judgment_rule:k=5"),
                         regime=parse_regime("persistent"), budget=8, seed=0,
                         pool=ForeignPool(pool))
    view = EpisodeView(question=pool[0], seed=0, budget=8)
    seen: list[tuple[int, int]] = []
    client = ScriptedClient(acts=[SEARCH, nxt, nxt, FINISH])
    result = asyncio.run(run_episode(setup, client.start(view), view=view,
                                     on_step=lambda s: seen.append((s.t, s.streak))))
    assert seen == [(s.t, s.streak) for s in result.steps]  # all passed on, in order
    assert [streak for _, streak in seen[:2]] == [1, 2]
