"""Conformance: realistic raw replies of real servers, and the reading each must get.

Each case is one raw reply as a server sends it (vLLM's chat completion for Qwen3 and
Llama-3.1, Anthropic's Message for Claude), served on loopback as the answer to an
episode's first acting turn (budget 1, so that turn decides the episode). The table
says what lab must record: the end reason, the action read, the reasoning kept apart.
The rule under test: a reply is the model's format failure only when the model wrote no
readable action; a reply cut by max_tokens (in the answer, the thought or the
reasoning) is `generation_truncated`, a refusal is `refusal`, and text a misconfigured
server puts in the reasoning field is still read as the reply.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.episode import EpisodeResult
from core.models.base import EpisodeView
from core.models.registry import ModelSpec, make_client
from core.react import run_episode
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, setup_for
from tests.helpers.backends import ANTHROPIC_KEY, FAST
from tests.servers.http import LoopbackServer, Reply, Request

ANSWER = "Thought: I know this one.\nAction: finish\nAction Input: Ceithby"
SEARCH = "Thought: I should look it up.\nAction: search\nAction Input: Drilell Ensemble"


@dataclass(frozen=True)
class Case:
    """One raw reply and the reading it must get."""

    name: str
    body: dict[str, Any]
    """The message (vLLM: choices[0].message plus finish_reason; Anthropic: content and
    stop_reason)."""
    end: str
    action: str | None = None
    argument: str | None = None
    reasoning: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    """Model spec parameters (thinking, tools)."""


def vllm(content: str | None, finish: str = "stop", **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": content, **extra},
            "finish_reason": finish}


THINK = {"thinking": True, "thinking_budget": 1024}
OPENAI_CASES = [
    Case("qwen3 <think> in content",
         vllm(f"<think>\nThe founder was born in a town.\n</think>\n\n{SEARCH}"),
         "budget", "search", "Drilell Ensemble", "The founder was born in a town.", THINK),
    Case("qwen3 reasoning_content", vllm(ANSWER, reasoning_content="Ceithby, I recall."),
         "finish", "finish", "Ceithby", "Ceithby, I recall.", THINK),
    Case("qwen3 reasoning (newer vLLM)", vllm(ANSWER, reasoning="Ceithby, I recall."),
         "finish", "finish", "Ceithby", "Ceithby, I recall.", THINK),
    Case("qwen3 cut at length in the answer",
         vllm("Thought: I know this one.\nAction: finish\nAction Input: The town of Cei", "length"),
         "generation_truncated"),
    Case("qwen3 cut at length in the thought",
         vllm("Thought: The founder of the ensemble is a fiddler who was", "length"),
         "generation_truncated"),
    Case("qwen3 cut at length in the reasoning",
         vllm("<think>\nLet me weigh the options: the ensemble was founded", "length"),
         "generation_truncated", reasoning="Let me weigh the options: the ensemble was founded",
         params=THINK),
    Case("qwen3 content null, answer in reasoning_content (thinking off)",
         vllm(None, reasoning_content=ANSWER), "finish", "finish", "Ceithby"),
    Case("qwen3 content null, answer in reasoning (thinking off)",
         vllm(None, reasoning=SEARCH), "budget", "search", "Drilell Ensemble"),
    Case("llama-3.1 bracket action",
         vllm("Thought: I should search.\nAction: search[Drilell Ensemble]"),
         "budget", "search", "Drilell Ensemble"),
    Case("llama-3.1 capitalised action",
         vllm("Thought: Easy.\nAction: Finish\nAction Input: Ceithby"),
         "finish", "finish", "Ceithby"),
    Case("llama-3.1 markdown labels",
         vllm("**Thought:** Easy.\n**Action:** finish\n**Action Input:** Ceithby"),
         "finish", "finish", "Ceithby"),
    Case("llama-3.1 writes its own observation",
         vllm(f"{SEARCH}\nObservation: Drilell Ensemble is a quartet."),
         "budget", "search", "Drilell Ensemble"),
    Case("a real format failure: prose, no action", vllm("The answer is probably Ceithby."),
         "format_failure"),
]


def anthropic_message(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {"content": content, "stop_reason": stop}


CLAUDE_CASES = [
    Case("claude text ReAct", anthropic_message([{"type": "text", "text": ANSWER}]),
         "finish", "finish", "Ceithby"),
    Case("claude thinking + text", anthropic_message(
        [{"type": "thinking", "thinking": "Ceithby, I recall.", "signature": "sig"},
         {"type": "text", "text": ANSWER}]),
         "finish", "finish", "Ceithby", "Ceithby, I recall.", THINK),
    Case("claude tool_use (native tools)", anthropic_message(
        [{"type": "text", "text": "I know this one."},
         {"type": "tool_use", "id": "toolu_1", "name": "finish", "input": {"answer": "Ceithby"}}],
        "tool_use"), "finish", "finish", "Ceithby", params={"tools": "native"}),
    Case("claude refusal", anthropic_message([], "refusal"), "refusal"),
    Case("claude refusal with text", anthropic_message(
        [{"type": "text", "text": "I can't help with that."}], "refusal"), "refusal"),
    Case("claude cut at max_tokens", anthropic_message(
        [{"type": "text", "text": "Thought: The ensemble's founder"}], "max_tokens"),
         "generation_truncated"),
    Case("claude cut at max_tokens in the answer", anthropic_message(
        [{"type": "text", "text": "Thought: Easy.\nAction: finish\nAction Input: Cei"}],
        "max_tokens"),
         "generation_truncated"),
]


class RawOpenAI:
    """Answers every chat completion with one raw reply (vLLM's wire format)."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply

    async def __call__(self, req: Request) -> Reply:
        if req.method == "GET":
            return Reply(200, {"object": "list", "data": [{"id": "loopback-model",
                                                           "object": "model"}]})
        return Reply(200, {"id": "cmpl-1", "object": "chat.completion", "created": 0,
                           "model": "loopback-model",
                           "choices": [{"index": 0, **self.reply}],
                           "usage": {"prompt_tokens": 50, "completion_tokens": 20,
                                     "total_tokens": 70}})


class RawAnthropic:
    """Answers every Messages call with one raw reply (Anthropic's wire format)."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply

    async def __call__(self, req: Request) -> Reply:
        body = req.json()
        return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant",
                           "model": body.get("model"), "stop_sequence": None,
                           "usage": {"input_tokens": 50, "output_tokens": 20},
                           **self.reply})


def first_turn(spec: ModelSpec) -> EpisodeResult:
    """One episode of `none` (no judgments) with budget 1 on the first demo question."""
    questions = demo_questions()
    cell = CellSpec(spec, parse_condition("none"), parse_regime("clean"), None, 1, 0)
    client = make_client(spec)
    setup = setup_for(cell, questions[0], ForeignPool(questions), client)
    view = EpisodeView(question=questions[0], seed=setup.seed, budget=setup.budget)

    async def go() -> EpisodeResult:
        try:
            return await run_episode(setup, client.start(view), view=view)
        finally:
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()

    return asyncio.run(go())


def check(result: EpisodeResult, case: Case) -> None:
    assert result.error is None, result.error
    assert result.end_reason == case.end, (case.name, result.end_reason)
    step = result.steps[0]
    assert step.action == case.action and step.argument == case.argument, case.name
    assert (step.reasoning or None) == case.reasoning, case.name
    assert result.format_failures == (1 if case.end == "format_failure" else 0), case.name
    answered = case.end == "finish"
    assert result.answered is answered and (result.answer == case.argument if answered else True)


@pytest.mark.parametrize("case", OPENAI_CASES, ids=lambda c: c.name)
def test_a_vllm_reply_is_read_as_listed(case: Case) -> None:
    with LoopbackServer(RawOpenAI(case.body)) as server:
        spec = ModelSpec("conformance", "openai", {
            "model": "Qwen/Qwen3-8B", "endpoints": [f"{server.url}/v1"], "concurrency": 1,
            **FAST, **case.params})
        check(first_turn(spec), case)


@pytest.mark.parametrize("case", CLAUDE_CASES, ids=lambda c: c.name)
def test_a_claude_reply_is_read_as_listed(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with LoopbackServer(RawAnthropic(case.body)) as server:
        spec = ModelSpec("conformance-claude", "anthropic", {
            "model": "claude-loopback", "base_url": server.url, "sampling": "default",
            "price_per_mtok": {"input": 1.0, "output": 5.0}, "concurrency": 1, **FAST,
            **case.params})
        check(first_turn(spec), case)


def test_an_answer_in_the_reasoning_field_warns_once_per_model(
        caplog: pytest.LogCaptureFixture) -> None:
    """Two episodes of one model whose server puts the answer in reasoning_content:
    both are read, and one warning names the server's reasoning parser."""
    case = OPENAI_CASES[6]
    with LoopbackServer(RawOpenAI(case.body)) as server, caplog.at_level(logging.WARNING):
        spec = ModelSpec("conformance-warn", "openai", {
            "model": "Qwen/Qwen3-8B", "endpoints": [f"{server.url}/v1"], "concurrency": 1,
            **FAST})
        questions = demo_questions()
        cell = CellSpec(spec, parse_condition("none"), parse_regime("clean"), None, 1, 0)
        client = make_client(spec)

        async def go() -> list[EpisodeResult]:
            out = []
            for q in questions[:2]:
                setup = setup_for(cell, q, ForeignPool(questions), client)
                view = EpisodeView(question=q, seed=setup.seed, budget=setup.budget)
                out.append(await run_episode(setup, client.start(view), view=view))
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()
            return out

        results = asyncio.run(go())
    assert [r.end_reason for r in results] == ["finish", "finish"]
    warnings = [r.getMessage() for r in caplog.records if "reasoning" in r.getMessage().lower()]
    assert len(warnings) == 1, warnings
    assert "parser" in warnings[0].lower()
