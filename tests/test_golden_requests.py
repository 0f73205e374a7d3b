"""Golden request bodies: what a real model is sent, recorded on a loopback server.

Each case runs one real episode through the openai backend (or the anthropic backend)
against a loopback server whose scripted agent keeps searching, judges every result
USELESS, and finishes at its seventh action, so every arm's rule fires and a forced turn
and the turn after it are both recorded. The recorded bodies are compared with
tests/data/golden_requests/NAME.json: a change to what a model sees is a visible diff in
review. After an intended change, regenerate them with

    LAB_UPDATE_GOLDEN=1 pytest tests/test_golden_requests.py

and read the diff. Beside the byte comparison, the protocol's properties are asserted
directly, so a regenerated golden cannot hide a broken protocol.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core.conditions import ARMS, parse_condition
from core.data import Question
from core.demo_data import demo_questions
from core.demo_fever import demo_fever_questions
from core.models.base import EpisodeView
from core.models.registry import ModelSpec, make_client
from core.react import run_episode
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, setup_for
from tests.helpers.backends import ANTHROPIC_KEY, FAST, anthropic_spec
from tests.servers.anthropic_server import AnthropicApp
from tests.servers.http import LoopbackServer
from tests.servers.openai_server import SIDE_CHANNEL_MARK, OpenAIApp

GOLDEN = Path(__file__).parent / "data" / "golden_requests"
UPDATE = os.environ.get("LAB_UPDATE_GOLDEN") == "1"
BUDGET = 8
FINISH_AT = 7
"""The scripted agent's acting turn that finishes (the rule, k = 5, forces turn 6)."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else "" for b in content)
    return ""


def acting_turns(messages: Sequence[dict[str, Any]]) -> int:
    """How many ReAct replies the conversation already holds (decisions and judgments not
    counted: those are answered to their own questions)."""
    return sum(1 for m in messages if m.get("role") == "assistant"
               and "Action" in _text(m.get("content")))


def scripted_reply(messages: Sequence[dict[str, Any]]) -> str:
    """The scripted agent: USELESS to judgments, CONTINUE to decisions, a search until
    its seventh action, then finish. Its thoughts state the result was useless, so the
    stated-judgment arms' reader counts them."""
    last = _text(messages[-1].get("content"))
    if SIDE_CHANNEL_MARK in last:
        return "USELESS"
    if "DECISION: ANSWER_NOW" in last and "DECISION: CONTINUE" in last:
        return "The source has failed every time, but one more try may find it.\nDECISION: CONTINUE"
    if acting_turns(messages) + 1 >= FINISH_AT:
        return "Thought: I will answer from what I know.\nAction: finish\nAction Input: Paris"
    return ("Thought: The last result was useless for this question, so I search again.\n"
            "Action: search\nAction Input: the capital of France")


def run_case(spec: ModelSpec, condition: str, question: Question,
             questions: list[Question]) -> None:
    """One episode of `condition` on `question` (persistent regime, budget 8)."""
    cell = CellSpec(spec, parse_condition(condition), parse_regime("persistent"), None,
                    BUDGET, 0)
    client = make_client(spec)
    setup = setup_for(cell, question, ForeignPool(questions), client)
    view = EpisodeView(question=question, seed=setup.seed, budget=setup.budget)

    async def go() -> None:
        try:
            result = await run_episode(setup, client.start(view), view=view)
            assert result.error is None, result.error
        finally:
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()

    asyncio.run(go())


def openai_model(url: str, **extra: Any) -> ModelSpec:
    """A served model with no `sampling` table (the paper's greedy default applies)."""
    params = {"model": "loopback-model", "endpoints": [f"{url}/v1"], "concurrency": 1,
              **FAST, **extra}
    return ModelSpec("golden", "openai", params)


def record_openai(condition: str, question: Question, questions: list[Question],
                  **extra: Any) -> list[dict[str, Any]]:
    app = OpenAIApp(responder=scripted_reply, **extra.pop("app", {}))
    with LoopbackServer(app) as server:
        run_case(openai_model(server.url, **extra), condition, question, questions)
    return app.requests


def compare(name: str, bodies: list[dict[str, Any]]) -> None:
    """Compare with (or, with LAB_UPDATE_GOLDEN=1, write) the golden file."""
    path = GOLDEN / f"{name}.json"
    text = json.dumps(bodies, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden for {name}: run with LAB_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), (
        f"the requests of {name} changed; if intended, regenerate with LAB_UPDATE_GOLDEN=1 "
        f"and review the diff of {path}")


def acting(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The acting requests (not the side-channel forks nor decision turns)."""
    return [b for b in bodies if SIDE_CHANNEL_MARK not in _text(b["messages"][-1]["content"])
            and "DECISION: CONTINUE" not in _text(b["messages"][-1]["content"])]


@pytest.fixture(scope="module")
def hotpot() -> list[Question]:
    return demo_questions()


@pytest.mark.parametrize("condition", sorted(ARMS))
def test_each_condition_sends_its_golden_requests(condition: str,
                                                  hotpot: list[Question]) -> None:
    name = "random_rule:rate=1.0" if condition == "random_rule" else condition
    bodies = record_openai(name, hotpot[0], hotpot)
    compare(condition, bodies)
    for body in bodies:  # greedy and seeded without a sampling table
        assert body["temperature"] == 0.0 and body["top_p"] == 1.0
        assert isinstance(body.get("seed"), int)


def test_fever_sends_its_golden_requests() -> None:
    fever = demo_fever_questions()
    compare("fever_enforced_rule", record_openai("enforced_rule", fever[0], fever))


RULE_ARMS = [name for name, arm in ARMS.items() if arm.rule in ("side_channel", "random")]


@pytest.mark.parametrize("condition", RULE_ARMS)
def test_the_forced_instruction_stays_in_the_history(condition: str,
                                                     hotpot: list[Question]) -> None:
    name = "random_rule:rate=1.0" if condition == "random_rule" else condition
    turns = acting(record_openai(name, hotpot[0], hotpot))
    assert len(turns) == FINISH_AT, [len(t["messages"]) for t in turns]
    forced, after = turns[5], turns[6]  # actions 6 (first forced) and 7
    system = forced["messages"][0]["content"]
    assert after["messages"][0]["content"] == system, "the forced system line vanished"
    assert system != turns[4]["messages"][0]["content"], "turn 6 was not forced"
    instruction = forced["messages"][-1]["content"]
    # the forced turn's observation message, with its instruction, is kept verbatim
    assert instruction in [m["content"] for m in after["messages"]]
    # the forced search was executed: turn 7 sees an observation of it
    assert after["messages"][-1]["content"].startswith("Observation:")
    for body in turns:  # never the same instruction twice in one message
        for m in body["messages"]:
            lines = [ln for ln in _text(m["content"]).splitlines() if len(ln) > 30]
            assert len(lines) == len(set(lines)), m["content"]


def test_decide_asks_in_three_turns(hotpot: list[Question]) -> None:
    bodies = record_openai("decide", hotpot[0], hotpot)
    decisions = [b for b in bodies if "DECISION: CONTINUE" in _text(b["messages"][-1]["content"])]
    assert decisions, "no decision turn"
    first = decisions[0]
    assert first["max_tokens"] == 160 and not first.get("stop")
    roles = [m["role"] for m in first["messages"]]
    # ... observation, the judgment's question and its reply kept, then the decision ask
    assert roles[-4:] == ["user", "user", "assistant", "user"] or \
        roles[-3:] == ["user", "assistant", "user"], roles
    assert any(m["role"] == "assistant" and m["content"] == "USELESS"
               for m in first["messages"]), "the judgment is not in the history"
    following = bodies[bodies.index(first) + 1]
    assert following["messages"][-2]["content"].endswith("DECISION: CONTINUE")
    assert following["messages"][-1]["role"] == "user"


def test_a_thinking_turn_sends_no_stop_strings(hotpot: list[Question]) -> None:
    bodies = record_openai("enforced_rule", hotpot[0], hotpot,
                           thinking=True, thinking_budget=1024,
                           app={"reasoning": "Let me think. Observation: none yet."})
    compare("thinking_enforced_rule", bodies)
    turns = acting(bodies)
    assert turns and all(not b.get("stop") for b in turns)
    assert all(b["chat_template_kwargs"]["enable_thinking"] for b in turns)


def test_claude_is_sent_text_only_react(hotpot: list[Question],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    app = AnthropicApp(responder=lambda body: [
        {"type": "text", "text": scripted_reply(
            [{"role": m["role"], "content": _text(m["content"])} for m in body["messages"]])}])
    with LoopbackServer(app) as server:
        run_case(anthropic_spec(server.url), "enforced_rule", hotpot[0], hotpot)
    bodies = app.requests
    compare("claude_enforced_rule", bodies)
    assert bodies and all("tools" not in b for b in bodies)
    act = [b for b in bodies if re.search("Observation", json.dumps(b.get("stop_sequences")))]
    assert act, "acting turns send no stop strings"
