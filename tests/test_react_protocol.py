"""The episode loop follows the main paper's protocol (App. B.1; the authors' harness
where the paper is silent), and each remaining difference is a named condition option.

Every request is recorded with its messages, max_tokens and stop strings, so each test
reads exactly what a served model would have been sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import prompts
from core.conditions import Condition, parse_condition
from core.episode import EpisodeResult, Step
from core.models.base import (
    END_REFUSAL,
    END_TRUNCATED,
    FINISH_LENGTH,
    FINISH_REFUSAL,
    FINISH_STOP,
    EpisodeView,
    Generation,
    Message,
)
from core.prompt_set import PromptSet
from core.react import DECIDE_MAX_TOKENS, JUDGE_MAX_TOKENS, EpisodeSetup, run_episode
from core.regimes import ForeignPool, parse_regime
from tests.helpers.builders import make_pool

SEARCH = "Thought: look it up\nAction: search\nAction Input: Vellmore Quartet"
FINISH = "Thought: I know it\nAction: finish\nAction Input: Lake 1"
USELESS_THOUGHT = ("Thought: This page is not relevant to the question.\nAction: search\n"
                   "Action Input: Vellmore Quartet")

Reply = str | tuple[str, str]
"""A scripted reply: its text, or (text, finish)."""


@dataclass
class Call:
    """One recorded request."""

    kind: str
    messages: list[Message]
    max_tokens: int
    stop: tuple[str, ...]


@dataclass
class Recorder:
    """A scripted model that records every request; replies per kind of call."""

    acts: list[Reply] = field(default_factory=list)
    judgments: list[Reply] = field(default_factory=list)
    decides: list[Reply] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = ()) -> Generation:
        self.calls.append(Call(kind, [dict(m) for m in messages], max_tokens, tuple(stop)))
        queue, default = {"judge": (self.judgments, "USELESS"),
                          "decide": (self.decides, "DECISION: CONTINUE")}.get(
            kind, (self.acts, FINISH))
        reply = queue.pop(0) if queue else default
        text, finish = reply if isinstance(reply, tuple) else (reply, FINISH_STOP)
        return Generation(text=text, input_tokens=10, output_tokens=5, finish=finish)

    def of(self, kind: str) -> list[Call]:
        return [c for c in self.calls if c.kind == kind]


def run(model: Recorder, condition: str | Condition = "none", regime: str = "clean",
        budget: int = 8, task_format: str = "react",
        on_step: Callable[[Step], None] | None = None) -> EpisodeResult:
    pool = make_pool()
    cond = parse_condition(condition) if isinstance(condition, str) else condition
    setup = EpisodeSetup(question=pool[0], condition=cond, regime=parse_regime(regime),
                         budget=budget, seed=0, pool=ForeignPool(pool),
                         prompt_format=task_format)
    view = EpisodeView(question=pool[0], seed=0, budget=budget)
    return asyncio.run(run_episode(setup, model, on_step=on_step, view=view))


def count(text: str, piece: str) -> int:
    return text.count(prompts.load(piece))


# --------------------------------------------------------------------------- forced turns


def test_forced_lines_enter_the_history_once_and_stay() -> None:
    model = Recorder(acts=[*[SEARCH] * 4, FINISH], judgments=["USELESS"] * 8)
    result = run(model, "enforced_rule:k=2", "persistent")
    acts = model.of("act")
    forced_line, instruction = prompts.load("forced_system"), prompts.load("forced_observation")
    assert [s.forced for s in result.steps] == [False, False, True, True, True]
    assert all(forced_line not in a.messages[0]["content"] for a in acts[:2])
    # the system message is replaced once, at the first forced turn, and stays
    assert all(a.messages[0]["content"].count(forced_line) == 1 for a in acts[2:])
    first_forced = acts[2].messages
    assert first_forced[-1]["content"].endswith("\n\n" + instruction)
    # later requests still show the instruction on that observation, exactly once
    for a in acts[3:]:
        assert a.messages[5] == first_forced[-1]
        assert all(count(m["content"], "forced_observation") <= 1 for m in a.messages)
    # and each new observation of a forced turn carries its own copy
    assert acts[3].messages[-1]["content"].endswith("\n\n" + instruction)
    assert acts[3].messages[-1] != acts[2].messages[-1]
    # the side-channel forks see the same history (prefix of the next request)
    for judge in model.of("judge")[2:]:
        assert forced_line in judge.messages[0]["content"]


def test_forced_search_is_executed_judged_and_forced_again() -> None:
    model = Recorder(acts=[SEARCH, SEARCH, SEARCH, FINISH], judgments=["USELESS"] * 3)
    result = run(model, "enforced_rule:k=2", "persistent")
    forced_step = result.steps[2]
    assert forced_step.forced and not forced_step.refused
    assert forced_step.obs_index == 3 and forced_step.obs_failed
    assert forced_step.judgment == "USELESS" and forced_step.streak == 3
    assert result.tool_calls == 3 and result.refused_calls == 0
    assert result.steps[3].forced and result.answered and result.forced_turns == 2
    # the observation of the forced search went back to the agent
    last = model.of("act")[3].messages
    assert last[-1]["content"].startswith("Observation: ")
    assert forced_step.shown is not None and forced_step.shown in last[-1]["content"]


def test_a_forced_search_judged_useful_resets_the_streak_but_keeps_the_system_line() -> None:
    model = Recorder(acts=[SEARCH, SEARCH, SEARCH, FINISH], judgments=["USELESS", "USELESS",
                                                                       "USEFUL"])
    result = run(model, "enforced_rule:k=2", "persistent")
    assert [s.forced for s in result.steps] == [False, False, True, False]
    last = model.of("act")[3].messages
    assert count(last[0]["content"], "forced_system") == 1
    assert count(last[-1]["content"], "forced_observation") == 0


def test_refuse_option_refuses_with_the_instruction_once_per_message() -> None:
    cond = "enforced_rule:k=2,forced_tool_call=refuse"
    model = Recorder(acts=[*[SEARCH] * 5, FINISH], judgments=["USELESS"] * 8)
    result = run(model, cond, "persistent")
    assert [s.refused for s in result.steps] == [False, False, True, True, True, False]
    assert result.tool_calls == 2 and result.refused_calls == 3 and result.answered
    for call in model.of("act"):
        assert all(count(m["content"], "forced_observation") <= 1 for m in call.messages)
    after_refusal = model.of("act")[3].messages
    assert after_refusal[-1]["content"] == prompts.load("forced_observation")
    # on a budget arm the refusal carries the counter, still one instruction
    model = Recorder(acts=[*[SEARCH] * 5, FINISH], judgments=["USELESS"] * 8)
    run(model, "combo:k=2,forced_tool_call=refuse", "persistent")
    last = model.of("act")[4].messages[-1]["content"]
    assert count(last, "forced_observation") == 1 and "[Actions remaining:" in last


def test_forced_instruction_follows_the_counter_on_budget_arms() -> None:
    model = Recorder(acts=[SEARCH, SEARCH, FINISH], judgments=["USELESS"] * 2)
    run(model, "combo:k=2", "persistent")
    last = model.of("act")[2].messages[-1]["content"]
    assert last.index("[Actions remaining: 6]") < last.index(prompts.load("forced_observation"))


def test_stated_rule_executes_a_forced_search_and_reasks_each_later_tool_call() -> None:
    model = Recorder(acts=[SEARCH, USELESS_THOUGHT, SEARCH, USELESS_THOUGHT, FINISH])
    result = run(model, "stated_judgment_rule:k=1", "persistent")
    # t=2 proposes a search after a stated useless: discarded, re-asked forced, and the
    # forced re-ask's search is executed; t=3 proposes a search again: discarded, re-ask
    kept = [s for s in result.steps if not s.discarded]
    assert [(s.t, s.discarded, s.forced) for s in result.steps] == [
        (1, False, False), (2, True, False), (2, False, True), (3, True, False),
        (3, False, True)]
    assert kept[1].obs_index == 2 and not kept[1].refused
    assert result.answered and result.answer_action == 3
    acts = model.of("act")
    # the first turn after firing is asked with the system line but no instruction
    assert count(acts[3].messages[0]["content"], "forced_system") == 1
    assert count(acts[3].messages[-1]["content"], "forced_observation") == 0
    assert count(acts[4].messages[-1]["content"], "forced_observation") == 1


# --------------------------------------------------------------------------- format failures


def test_format_failure_ends_the_episode_by_default() -> None:
    model = Recorder(acts=[SEARCH, "I am not sure what to do."])
    result = run(model)
    assert result.end_reason == "format_failure" and result.format_failures == 1
    assert len(model.of("act")) == 2 and not result.answered
    assert result.steps[-1].format_failure and result.steps[-1].raw.startswith("I am")


def test_format_retries_1_reminds_once_then_ends() -> None:
    model = Recorder(acts=["I think", SEARCH, "still no action", "nope", FINISH])
    result = run(model, "none:format_retries=1")
    assert result.end_reason == "format_failure" and result.format_failures == 3
    acts = model.of("act")
    assert len(acts) == 4
    assert acts[1].messages[-1]["content"] == prompts.load("format_reminder")
    assert acts[3].messages[-1]["content"] == prompts.load("format_reminder")
    assert sum(m["content"] == prompts.load("format_reminder")
               for m in acts[3].messages) == 2  # one per failed turn, never two in a row


def test_protocol_options_enter_spec_and_label_only_when_set() -> None:
    base = Condition("enforced_rule")
    assert base.to_json() == '{"judge":false,"k":5,"name":"enforced_rule"}'
    refuse = parse_condition("enforced_rule:forced_tool_call=refuse")
    retries = parse_condition("none:format_retries=1")
    assert refuse.spec_hash() != base.spec_hash() and refuse.label().endswith(
        "forced_tool_call=refuse")
    assert retries.spec_hash() != Condition("none").spec_hash()
    assert retries.label() == "none:format_retries=1"


# --------------------------------------------------------------------------- decide


def test_decide_runs_judgment_decision_and_act_turns() -> None:
    decision = "Keeping on looks unlikely to help.\nDECISION: ANSWER_NOW"
    model = Recorder(acts=[SEARCH, FINISH], judgments=["The last one was USELESS."],
                     decides=[decision])
    result = run(model, "decide", "persistent")
    kinds = [c.kind for c in model.calls]
    assert kinds == ["act", "judge", "decide", "act"]
    judge, decide, act = model.calls[1], model.calls[2], model.calls[3]
    assert judge.max_tokens == JUDGE_MAX_TOKENS
    assert decide.max_tokens == DECIDE_MAX_TOKENS == 160 and decide.stop == ()
    # the judgment Q/A is in the history, then the decision prompt
    assert decide.messages[:-1] == [*judge.messages, {"role": "assistant",
                                                      "content": "USELESS"}]
    prompt = decide.messages[-1]["content"]
    assert "judgment of the last observation: USELESS" in prompt and "so far: 1" in prompt
    assert "take an action" not in prompt  # the decision turn asks for no action
    # its reply in the history, then the act-consistent instruction, then the acting turn
    assert act.messages[:-2] == decide.messages
    assert act.messages[-2] == {"role": "assistant", "content": decision}
    assert act.messages[-1]["content"] == prompts.load("decide_act")
    assert act.max_tokens != DECIDE_MAX_TOKENS and act.stop
    assert result.steps[1].decision == "ANSWER_NOW"
    assert result.steps[1].decision_raw == decision
    assert result.extra_calls == 2  # one judgment, one decision


def test_decide_parses_the_last_decision_line_and_writes_unparsed_judgments() -> None:
    model = Recorder(acts=[SEARCH, SEARCH, FINISH], judgments=["hmm", "USEFUL"],
                     decides=["DECISION: ANSWER_NOW\nOn reflection:\nDECISION: CONTINUE",
                              "I would rather go on."])
    result = run(model, "decide", "persistent")
    assert [s.decision for s in result.steps] == [None, "CONTINUE", None]
    first_decide = model.of("decide")[0].messages
    assert first_decide[-2] == {"role": "assistant", "content": "UNPARSED"}
    assert "judgment of the last observation: UNPARSED" in first_decide[-1]["content"]
    assert "so far: 0" in first_decide[-1]["content"]
    # an act turn's own DECISION line does not count on the decide arm
    model = Recorder(acts=[SEARCH, "DECISION: ANSWER_NOW\n" + FINISH], decides=["no line"])
    assert run(model, "decide", "persistent").steps[1].decision is None


def test_fever_decide_pieces() -> None:
    pieces = PromptSet("fever")
    assert pieces.name("decide") == "fever_decide" and pieces.name("decide_act") == \
        "fever_decide_act"
    assert PromptSet("hotpotqa", "search_r1").name("decide_act") == "search_r1_decide_act"
    for name in ("decide", "fever_decide"):
        assert "DECISION: ANSWER_NOW" in prompts.load(name)


# --------------------------------------------------------------------------- cut turns


def test_truncated_answer_ends_without_an_answer() -> None:
    model = Recorder(acts=[SEARCH, ("Thought: known\nAction: finish\nAction Input: Lake",
                                    FINISH_LENGTH)])
    result = run(model)
    assert result.end_reason == END_TRUNCATED == "generation_truncated"
    assert not result.answered and result.answer is None and not result.correct
    last = result.steps[-1]
    assert last.raw.endswith("Action Input: Lake") and last.action is None
    assert not last.format_failure and result.format_failures == 0


def test_truncated_thought_is_not_a_format_failure() -> None:
    model = Recorder(acts=[("Thought: first I should consider the band's hist", FINISH_LENGTH)])
    result = run(model, "none:format_retries=1")
    assert result.end_reason == END_TRUNCATED and result.format_failures == 0
    assert len(model.of("act")) == 1  # no reminder either
    seen: list[int] = []
    run(Recorder(acts=[("Thought: cut", FINISH_LENGTH)]), on_step=lambda s: seen.append(s.t))
    assert seen == [1]  # the cut turn is recorded as a step


def test_refusal_ends_the_episode() -> None:
    model = Recorder(acts=[SEARCH, ("", FINISH_REFUSAL)])
    result = run(model)
    assert result.end_reason == END_REFUSAL == "refusal" and not result.answered
    assert result.steps[-1].cut == "refusal"


def test_judge_cut_at_its_limit_is_normal() -> None:
    model = Recorder(acts=[SEARCH, SEARCH, FINISH],
                     judgments=[("USELESS because the", FINISH_LENGTH)] * 2)
    result = run(model, "enforced_rule:k=5", "persistent")
    assert result.end_reason == "finish" and result.steps[0].judgment == "USELESS"


def test_a_refused_decision_turn_ends_the_episode() -> None:
    model = Recorder(acts=[SEARCH, FINISH], decides=[("", FINISH_REFUSAL)])
    result = run(model, "decide", "persistent")
    assert result.end_reason == END_REFUSAL and len(model.of("act")) == 1


# --------------------------------------------------------------------------- Search-R1


def test_search_r1_template_and_question_share_the_first_user_turn() -> None:
    r1_search = "<think>Look.</think>\n<search> Vellmore Quartet </search>"
    model = Recorder(acts=[r1_search, "<answer> Lake 1 </answer>"])
    result = run(model, "permit", task_format="search_r1")
    first = model.of("act")[0].messages
    assert [m["role"] for m in first] == ["user"]
    content = first[0]["content"]
    assert content.startswith(prompts.load("search_r1_system"))
    assert prompts.load("search_r1_permit") in content
    assert content.endswith("Question: " + make_pool()[0].question)
    assert result.answered


def test_search_r1_forced_turn_has_no_system_line_and_one_instruction() -> None:
    r1_search = "<think>Look.</think>\n<search> Vellmore Quartet </search>"
    model = Recorder(acts=[*[r1_search] * 3, "<answer> x </answer>"],
                     judgments=["USELESS"] * 3)
    run(model, "enforced_rule:k=2", "persistent", task_format="search_r1")
    forced = model.of("act")[2].messages
    assert all(m["role"] != "system" for m in forced)
    assert forced[-1]["content"].endswith("\n\n" + prompts.load("search_r1_forced_observation"))
    assert sum(count(m["content"], "search_r1_forced_observation") for m in forced) == 1
