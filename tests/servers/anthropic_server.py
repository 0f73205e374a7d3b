"""A loopback server speaking Anthropic's Messages API (POST /v1/messages).

It checks requests the way the real API does where the adapter can get it wrong
(alternating roles, every tool_use answered by a tool_result at the start of the next
user turn, no empty text, at most 4 cache breakpoints) and answers 400 otherwise. It
simulates prompt caching: the prefix up to a `cache_control` breakpoint is stored,
and a later request sharing a stored prefix reads it (`cache_read_input_tokens`) and
writes the rest up to its own breakpoint (`cache_creation_input_tokens`).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

from tests.servers.faults import Fault, Script
from tests.servers.http import Reply, Request
from tests.servers.openai_server import _QUESTION_RE, SIDE_CHANNEL_MARK

Responder = Callable[[dict[str, Any]], list[dict[str, Any]]]


def _texts(turn: dict[str, Any]) -> list[str]:
    content = turn.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for b in content or []:
        if b.get("type") == "text":
            out.append(b.get("text", ""))
        elif b.get("type") == "tool_result":
            c = b.get("content")
            out.append(c if isinstance(c, str) else json.dumps(c))
    return out


def tool_responder(searches: int = 1) -> Responder:
    """Search the question with the search tool `searches` times, then call finish."""

    def respond(body: dict[str, Any]) -> list[dict[str, Any]]:
        turns = body["messages"]
        if SIDE_CHANNEL_MARK in "\n".join(_texts(turns[-1])):
            return [{"type": "text", "text": "USELESS"}]
        done = sum(t["role"] == "assistant" for t in turns)
        first = "\n".join(_texts(turns[0]))
        m = _QUESTION_RE.search(first)
        question = m.group(1).strip() if m else "the question"
        if done < searches:
            return [{"type": "text", "text": "I should look this up."},
                    {"type": "tool_use", "id": f"toolu_{done}", "name": "search",
                     "input": {"query": question}}]
        obs = "\n".join(_texts(turns[-1])).split("Observation:", 1)[-1].split()
        return [{"type": "text", "text": "I have what I need."},
                {"type": "tool_use", "id": f"toolu_{done}", "name": "finish",
                 "input": {"answer": " ".join(obs[:2]) or "unknown"}}]

    return respond


def api_key(req: Request) -> str:
    """The key a request carried (x-api-key, or a Bearer token as newer SDKs send it)."""
    return req.headers.get("x-api-key") or req.headers.get("authorization", "").removeprefix(
        "Bearer ")


def _error(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _check_thinking(body: dict[str, Any]) -> str | None:
    """The API's extended-thinking rules: a budget of 1024 or more below max_tokens, no
    temperature/top_k, tool_choice auto or none, and the newest tool-use turn sent
    back with its signed thinking block first."""
    thinking = body.get("thinking") or {"type": "disabled"}
    if thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens", 0)
    if budget < 1024 or budget >= body.get("max_tokens", 0):
        return "thinking.budget_tokens: must be >= 1024 and less than max_tokens"
    if {"temperature", "top_k"} & set(body):
        return "temperature and top_k may not be set when thinking is enabled"
    if (body.get("tool_choice") or {}).get("type", "auto") not in ("auto", "none"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    turns = body.get("messages") or []
    for t in reversed(turns):
        blocks = t["content"] if isinstance(t["content"], list) else []
        if t["role"] == "assistant" and any(b.get("type") == "tool_use" for b in blocks):
            first = blocks[0] if blocks else {}
            if first.get("type") not in ("thinking", "redacted_thinking") or (
                    first.get("type") == "thinking" and not first.get("signature")):
                return ("Expected `thinking` or `redacted_thinking`, but found "
                        f"`{first.get('type')}`. When `thinking` is enabled, a final "
                        "`assistant` message must start with a thinking block")
            break
    return None


def validate(body: dict[str, Any]) -> str | None:
    """Why the real API would refuse this request, or None."""
    problem = _check_thinking(body)
    if problem:
        return problem
    turns = body.get("messages") or []
    if not turns or turns[0].get("role") != "user" or turns[-1].get("role") != "user":
        return "messages: first and last turn must be user turns"
    marks = sum(isinstance(b, dict) and "cache_control" in b
                for b in [*(body.get("system") or []), *itertools.chain.from_iterable(
                    t["content"] for t in turns if isinstance(t["content"], list))])
    if marks > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
    expected: list[str] = []
    for i, t in enumerate(turns):
        if i and t["role"] == turns[i - 1]["role"]:
            return f"messages.{i}: roles must alternate between user and assistant"
        blocks = t["content"] if isinstance(t["content"], list) else [
            {"type": "text", "text": t["content"]}]
        if any(b.get("type") == "text" and not b.get("text", "").strip() for b in blocks):
            return f"messages.{i}: text content blocks must be non-empty"
        if t["role"] == "user":
            results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
            lead = [b.get("type") for b in blocks[:len(expected)]]
            if sorted(results) != sorted(expected) or any(k != "tool_result" for k in lead):
                return (f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                        f"immediately after: {expected}")
            expected = []
        else:
            expected = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    return None


class AnthropicApp:
    """The request handler (pass it to LoopbackServer).

    Args:
        delay_s: time each answer takes.
        responder: turns the request body into the reply's content blocks.
        record: keep every request body in `requests` and headers in `headers`.
        thinking: the text of a signed `thinking` block put first in every reply to a
            request with thinking enabled ("" for a `redacted_thinking` block).
        stop_reason: when set, every reply's stop_reason ("max_tokens", "refusal"), in
            live calls and Batches results alike.
    """

    def __init__(self, delay_s: float = 0.0, responder: Responder | None = None,
                 record: bool = True, thinking: str | None = None,
                 stop_reason: str | None = None) -> None:
        self.delay_s = delay_s
        self.thinking = thinking
        self.stop_reason = stop_reason
        self.responder = responder or tool_responder()
        self.record = record
        self.script = Script()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.calls = 0
        self.cache: set[str] = set()
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self.batches: dict[str, dict[str, Any]] = {}
        """Message Batches by id (requests, polls so far, results once ended)."""
        self.batch_polls = 1
        """Retrieves a new batch takes to end."""
        self.batch_outcomes: dict[str, str] = {}
        """custom_id -> "errored", "expired" or "canceled" (default: succeeded)."""
        self.results_fetched = 0

    async def __call__(self, req: Request) -> Reply:
        if req.method == "GET" and req.path == "/v1/models":
            if not api_key(req):
                return Reply(401, _error(401, "authentication_error", "x-api-key required"))
            return Reply(200, {"data": [{"type": "model", "id": "claude-loopback"}],
                               "has_more": False})
        if req.path.startswith("/v1/messages/batches"):
            return self._batches(req)
        if req.method != "POST" or req.path != "/v1/messages":
            return Reply(404, _error(404, "not_found_error", f"no route {req.path}"))
        body = req.json()
        with self._lock:
            self.calls += 1
            if self.record:
                self.requests.append(body)
                self.headers.append(dict(req.headers))
        fault = self.script.next()
        if fault is not None and fault.kind not in ("answer", "slow"):
            return self._fault(fault, req)
        problem = validate(body)
        if problem:
            return Reply(400, _error(400, "invalid_request_error", problem))
        delay = self.delay_s + (fault.delay_s if fault is not None else 0.0)
        if delay:
            await asyncio.sleep(delay)
        return Reply(200, self._message(body))

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Message object answering a valid request body."""
        content = self.responder(body)
        for s in body.get("stop_sequences") or ():
            for b in content:
                if b["type"] == "text" and s in b["text"]:
                    b["text"] = b["text"][:b["text"].index(s)]
        output = 5
        if self.thinking is not None and (body.get("thinking") or {}).get("type") == "enabled":
            output += len(self.thinking) // 4 + 1
            content.insert(0, {"type": "thinking", "thinking": self.thinking,
                               "signature": "sig-loopback"} if self.thinking else
                           {"type": "redacted_thinking", "data": "opaque-loopback"})
        plain, read, write = self._usage(body)
        stop = self.stop_reason or (
            "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn")
        return {
            "id": f"msg_{next(self._ids)}", "type": "message", "role": "assistant",
            "model": body.get("model"), "content": content, "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": plain, "output_tokens": output,
                      "cache_read_input_tokens": read, "cache_creation_input_tokens": write}}

    def _batches(self, req: Request) -> Reply:
        """The Message Batches endpoints: create, retrieve and results.

        A batch ends on its `batch_polls`-th retrieve (`batch_polls` as it was when the
        batch was created); its requests are then answered like /v1/messages, except
        those whose custom_id `batch_outcomes` maps to "errored", "expired" or "canceled".
        """
        parts = req.path.strip("/").split("/")  # v1 messages batches [id [results]]
        with self._lock:
            if req.method == "POST" and len(parts) == 3:
                body = req.json()
                batch_id = f"msgbatch_{len(self.batches) + 1:04d}"
                self.batches[batch_id] = {"requests": body["requests"], "polls": 0,
                                          "ends_after": self.batch_polls, "results": None}
                return Reply(200, self._batch_object(batch_id, req))
            batch = self.batches.get(parts[3]) if len(parts) > 3 else None
            if batch is None or req.method != "GET":
                return Reply(404, _error(404, "not_found_error", f"no route {req.path}"))
            if len(parts) == 4:
                batch["polls"] += 1
                return Reply(200, self._batch_object(parts[3], req))
            if batch["results"] is None:
                return Reply(404, _error(404, "not_found_error", "batch has not ended"))
            self.results_fetched += 1
            return Reply(200, b"".join(json.dumps(r).encode() + b"\n" for r in batch["results"]),
                         {"content-type": "application/binary"})

    def _batch_object(self, batch_id: str, req: Request) -> dict[str, Any]:
        batch = self.batches[batch_id]
        n = len(batch["requests"])
        if batch["results"] is None and batch["polls"] >= batch["ends_after"]:
            batch["results"] = [self._batch_result(r) for r in batch["requests"]]
        ended = batch["results"] is not None
        counts = {"processing": 0 if ended else n, "succeeded": 0, "errored": 0,
                  "canceled": 0, "expired": 0}
        for r in batch["results"] or ():
            counts[r["result"]["type"]] += 1
        return {"id": batch_id, "type": "message_batch",
                "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": "2026-01-01T00:00:00Z",
                "expires_at": "2026-01-02T00:00:00Z",
                "ended_at": "2026-01-01T01:00:00Z" if ended else None,
                "cancel_initiated_at": None, "archived_at": None,
                "results_url": (f"http://{req.headers.get('host', '127.0.0.1')}/v1/messages/"
                                f"batches/{batch_id}/results") if ended else None}

    def _batch_result(self, request: dict[str, Any]) -> dict[str, Any]:
        cid, body = request["custom_id"], request["params"]
        self.calls += 1
        if self.record:
            self.requests.append(body)
        outcome = self.batch_outcomes.get(cid, "succeeded")
        problem = validate(body)
        if outcome == "succeeded" and problem is None:
            return {"custom_id": cid, "result": {"type": "succeeded",
                                                 "message": self._message(body)}}
        if outcome in ("succeeded", "errored"):
            error = _error(400 if problem else 500, "invalid_request_error" if problem
                           else "api_error", problem or "Internal server error")
            return {"custom_id": cid, "result": {"type": "errored", "error": error}}
        return {"custom_id": cid, "result": {"type": outcome}}

    def _fault(self, fault: Fault, req: Request) -> Reply:
        if fault.kind == "status":
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(fault.status, "api_error")
            headers = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
            message = fault.message.replace("{api_key}", api_key(req))
            return Reply(fault.status, _error(fault.status, kind, message), headers)
        if fault.kind == "context":
            return Reply(400, _error(400, "invalid_request_error",
                                     "prompt is too long: 201234 tokens > 200000 maximum"))
        if fault.kind in ("hang", "reset"):
            return Reply(action=fault.kind)
        return Reply(200, b'{"id": "msg_1", "type": "message", "content": [{"type": "te')

    def _usage(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(uncached, cache read, cache write) tokens, from the simulated cache."""
        blocks: list[dict[str, Any]] = [{"tools": body.get("tools")}, *(body.get("system") or [])]
        for t in body["messages"]:
            blocks.extend(t["content"] if isinstance(t["content"], list) else [
                {"type": "text", "text": t["content"]}])
        sizes, digests = [], []
        h = hashlib.sha256()
        for b in blocks:
            clean = {k: v for k, v in b.items() if k != "cache_control"}
            data = json.dumps(clean, sort_keys=True)
            h.update(data.encode())
            digests.append(h.copy().hexdigest())
            sizes.append(max(1, len(data) // 4))
        marks = [i for i, b in enumerate(blocks) if "cache_control" in b]
        total = sum(sizes)
        if not marks:
            return total, 0, 0
        end = marks[-1]
        with self._lock:
            hit = max((i for i in range(end + 1) if digests[i] in self.cache), default=-1)
            self.cache.add(digests[end])
        read = sum(sizes[:hit + 1])
        write = sum(sizes[hit + 1:end + 1])
        return total - read - write, read, write
