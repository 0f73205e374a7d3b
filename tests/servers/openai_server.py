"""A loopback server speaking vLLM's OpenAI-compatible API.

Routes: POST /v1/chat/completions, GET /v1/models, GET /health, GET /version, GET /stats
(calls so far, calls being answered now and their peak; /stats/reset also restarts the peak).
`side_channel_calls` counts the calls that ask the side-channel question (in-run or
replayed judgments), as the server saw them.
Chat replies come from a responder (default: plain ReAct text that searches then
finishes; "USELESS" to side-channel questions) after `delay_s`, at most
`max_concurrent` calls being served at once (the rest queue, like a GPU batch), and
a Script of faults decides what happens to each call first.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from tests.servers.faults import Fault, Script
from tests.servers.http import Reply, Request

Responder = Callable[[Sequence[dict[str, Any]]], str]
SIDE_CHANNEL_MARK = "USEFUL or USELESS"
_QUESTION_RE = re.compile(r"Question:\s*(.+)")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return ""


def react_responder(searches: int = 1) -> Responder:
    """Search the question `searches` times, then finish with words of the last observation."""

    def respond(messages: Sequence[dict[str, Any]]) -> str:
        if SIDE_CHANNEL_MARK in _text(messages[-1].get("content")):
            return "USELESS"
        done = sum(m.get("role") == "assistant" for m in messages)
        user = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
        m = _QUESTION_RE.search(user[0]) if user else None
        question = m.group(1).strip() if m else "the question"
        if done < searches:
            return (f"Thought: I need an article about the question.\nAction: search\n"
                    f"Action Input: {question}")
        obs = user[-1].split("Observation:", 1)[-1].split()
        answer = " ".join(obs[:2]) or "unknown"
        return f"Thought: I have enough.\nAction: finish\nAction Input: {answer}"

    return respond


def context_error(limit: int = 4096) -> dict[str, Any]:
    """vLLM's 400 body for a prompt that does not fit."""
    return {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
            "message": f"This model's maximum context length is {limit} tokens. However, you "
                       f"requested {limit + 1200} tokens (4800 in the messages, 512 in the "
                       f"completion). Please reduce the length of the messages or completion."}


class OpenAIApp:
    """The request handler (pass it to LoopbackServer).

    Args:
        model: the served model name (/v1/models).
        delay_s: time each answer takes.
        max_concurrent: calls served at once (None = unbounded).
        responder: turns the request's messages into the reply text.
        reasoning: reasoning to attach to every acting reply (whatever enable_thinking
            says: a model whose reasoning parser always thinks).
        reasoning_mode: where it goes: "field" (`reasoning_content`, vLLM with a
            reasoning parser) or "tags" (`<think>…</think>` before the content).
        report_reasoning_tokens: also report `completion_tokens_details.reasoning_tokens`.
        record: keep every request body in `requests`.
        choice: when set, makes the whole `choices[0]` (message and finish_reason) of
            every reply from the request body, sent as it is (realistic raw replies:
            content null, text in `reasoning_content`, finish_reason "length").
    """

    def __init__(self, model: str = "loopback-model", delay_s: float = 0.0,
                 max_concurrent: int | None = None, responder: Responder | None = None,
                 reasoning: str | None = None, record: bool = True,
                 reasoning_mode: str = "field", report_reasoning_tokens: bool = False,
                 choice: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.model = model
        self.delay_s = delay_s
        self.max_concurrent = max_concurrent
        self.responder = responder or react_responder()
        self.reasoning = reasoning
        self.reasoning_mode = reasoning_mode
        self.report_reasoning_tokens = report_reasoning_tokens
        self.choice = choice
        self.record = record
        self.script = Script()
        self.requests: list[dict[str, Any]] = []
        self.calls = 0
        self.side_channel_calls = 0
        self.active = 0
        self.peak = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._slots: asyncio.Semaphore | None = None

    async def __call__(self, req: Request) -> Reply:
        if req.method == "GET" and req.path in ("/health", "/v1/health"):
            return Reply(200)
        if req.method == "GET" and req.path in ("/stats", "/stats/reset"):  # for the benches
            out = {"calls": self.calls, "active": self.active, "peak": self.peak}
            if req.path == "/stats/reset":
                self.peak = self.active
            return Reply(200, out)
        if req.method == "GET" and req.path == "/version":
            return Reply(200, {"version": "0.0.0-loopback"})
        if req.method == "GET" and req.path == "/v1/models":
            return Reply(200, {"object": "list", "data": [
                {"id": self.model, "object": "model", "created": 0, "owned_by": "loopback",
                 "max_model_len": 4096}]})
        if req.method == "POST" and req.path == "/v1/chat/completions":
            return await self._chat(req)
        return Reply(404, {"object": "error", "message": f"no route {req.path}", "code": 404})

    async def _chat(self, req: Request) -> Reply:
        body = req.json()
        with self._lock:
            self.calls += 1
            messages = body.get("messages") or [{}]
            self.side_channel_calls += SIDE_CHANNEL_MARK in _text(messages[-1].get("content"))
            if self.record:
                self.requests.append(body)
        fault = self.script.next()
        if fault is not None and fault.kind != "answer":
            reply = self._fault(fault, req)
            if reply is not None:
                return reply
        if self.max_concurrent and self._slots is None:
            self._slots = asyncio.Semaphore(self.max_concurrent)
        if self._slots is not None:
            async with self._slots:
                return await self._answer(body, fault)
        return await self._answer(body, fault)

    def _fault(self, fault: Fault, req: Request) -> Reply | None:
        if fault.kind == "status":
            headers = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
            key = req.headers.get("authorization", "").removeprefix("Bearer ")
            return Reply(fault.status, {"object": "error", "type": "ServerError",
                                        "message": fault.message.replace("{api_key}", key),
                                        "code": fault.status}, headers)
        if fault.kind == "context":
            return Reply(400, context_error())
        if fault.kind in ("hang", "reset"):
            return Reply(action=fault.kind)
        if fault.kind == "malformed":
            return Reply(200, b'{"id": "cmpl-1", "object": "chat.completion", "choices": [{"ind')
        return None

    async def _answer(self, body: dict[str, Any], fault: Fault | None) -> Reply:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            delay = self.delay_s + (fault.delay_s if fault is not None else 0.0)
            if delay:
                await asyncio.sleep(delay)
            messages = body.get("messages") or []
            text = self.responder(messages)
            for s in body.get("stop") or ():
                if s in text:
                    text = text[:text.index(s)]
            prompt = sum(len(_text(m.get("content"))) for m in messages) // 4
            message: dict[str, Any] = {"role": "assistant", "content": text}
            thought = 0
            if self.reasoning and SIDE_CHANNEL_MARK not in _text(messages[-1].get("content")):
                thought = len(self.reasoning) // 4 + 1
                if self.reasoning_mode == "tags":
                    message["content"] = f"<think>\n{self.reasoning}\n</think>\n\n{text}"
                else:
                    message["reasoning_content"] = self.reasoning
            completion = len(text) // 4 + 1 + thought
            usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion,
                                     "prompt_tokens_details": {"cached_tokens": prompt // 2}}
            if self.report_reasoning_tokens:
                usage["completion_tokens_details"] = {"reasoning_tokens": thought}
            choice = ({"index": 0, "message": message, "finish_reason": "stop"}
                      if self.choice is None else self.choice(body))
            return Reply(200, {
                "id": f"cmpl-{next(self._ids)}", "object": "chat.completion", "created": 0,
                "model": body.get("model", self.model), "choices": [choice], "usage": usage})
        finally:
            self.active -= 1
