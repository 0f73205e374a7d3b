"""The anthropic backend: Claude through the official async SDK (docs/models.md).

- Sampling: `sampling = "default"` (or none) sends no sampling parameter; a table is
  sent as given (through extra_body, so every SDK version accepts it).
- ReAct in text by default (`tools = "text"`), as the main paper ran Claude: no tools
  are declared, the reply's text is the action, and acting turns stop at the stop
  strings the episode loop gives (also on thinking turns, as the authors' harness
  sends them: Claude's reasoning comes in its own blocks).
- Native tools (`tools = "native"`): search, lookup and finish (and backup_search when
  the system prompt offers it) are declared natively. The first tool_use block of a
  reply is the action: it is returned as the equivalent ReAct text ("Thought:
  …\\nAction: name\\nAction Input: …") so the shared parser reads it; when that text
  comes back in the history it is sent as the original tool_use block and the next
  user message as its tool_result.
- Why a reply stopped: `stop_reason` "max_tokens" becomes `Generation.finish =
  FINISH_LENGTH`, "refusal" FINISH_REFUSAL, anything else FINISH_STOP; the same for
  Message Batches results.
- Turns: consecutive messages of one role (an observation followed by a side-channel
  question) are merged into one turn with one content block each, so the prefix of a
  fork is block-for-block the prefix of the acting conversation.
- Caching: one `cache_control` breakpoint on the newest stable block — the last block of
  an acting call, the block before the appended question of a fork. Caching starts
  once the prefix passes the model's minimum cacheable length.
- Forks (kind other than "act") of a native-tools model are sent with tool_choice
  "none" so that the one-word judgment is text, never a tool call.
- Thinking (`thinking = true`, `thinking_budget = N`): acting calls ask for extended
  thinking with `budget_tokens = N` (their max_tokens grows by N); forks are sent with
  thinking disabled. The `thinking` blocks of a reply become `Generation.reasoning`
  (a redacted block reads "[redacted thinking]"), never part of its text. The API
  requires a tool-use turn to go back with its signed thinking block, which would
  feed the reasoning back; so with thinking on, earlier turns go back as their ReAct
  text and observations as plain user text (no tool_use/tool_result blocks), and
  only the newest reply may call a tool natively. The API reports no separate
  thinking token count: reasoning tokens are estimated
  (`core.models.reasoning.estimate_reasoning_tokens`).
- Usage and cost: input tokens include cache reads and writes (see `core.models.cost`);
  dollars come from the registry's price_per_mtok.
- The API key is read from ANTHROPIC_API_KEY only and scrubbed from every error.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError
from core.models.base import (
    FINISH_LENGTH,
    FINISH_REFUSAL,
    FINISH_STOP,
    EpisodeView,
    Generation,
    Message,
)
from core.models.endpoint_url import parse_endpoint, scrub_client_logs
from core.models.generation import TOOLS_NATIVE
from core.models.reasoning import estimate_reasoning_tokens
from core.models.retry import MalformedResponse, call_with_retries, reading_reply
from core.models.server_checks import ANTHROPIC_KEY_ENV
from core.models.specs import BATCH_DISCOUNT, DEFAULT_ANTHROPIC_URL, AnthropicSpec
from core.redaction import any_registered, redact, remember

if TYPE_CHECKING:
    import anthropic

API_KEY_ENV = ANTHROPIC_KEY_ENV
DEFAULT_BASE_URL = DEFAULT_ANTHROPIC_URL


def _tool(name: str, description: str, key: str, what: str) -> dict[str, Any]:
    return {"name": name, "description": description,
            "input_schema": {"type": "object", "properties": {key: {
                "type": "string", "description": what}}, "required": [key]}}


TOOLS: tuple[dict[str, Any], ...] = (
    _tool("search", "Find an article by its title or by words it contains; the article's text "
          "is returned.", "query", "a title or words to search for"),
    _tool("lookup", "Return the next sentence of the current article that contains the keyword.",
          "keyword", "the keyword to look up"),
    _tool("finish", "Give your final answer and end the task. Keep the answer short, a few "
          "words at most.", "answer", "the short final answer"),
)
BACKUP_TOOL = _tool("backup_search", "A slower, costlier search to use when search fails.",
                    "query", "a title or words to search for")
TOOL_KEYS = MappingProxyType({"search": "query", "lookup": "keyword", "finish": "answer",
                              "backup_search": "query"})

REDACTED = "[redacted thinking]"
"""What a `redacted_thinking` block reads as in the stored reasoning."""
STOP_REASONS = MappingProxyType({"max_tokens": FINISH_LENGTH, "refusal": FINISH_REFUSAL})
"""Anthropic stop_reason → Generation.finish (anything else is FINISH_STOP)."""
_THOUGHT_KEY = re.compile(r"^\s*\**thought\**\s*:\s*", re.IGNORECASE)
_ACTION_LINE = re.compile(r"^[ \t*]*action\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class ToolUse:
    """A native tool call the model made, kept to send it back verbatim."""

    id: str
    name: str
    input: Mapping[str, Any]
    thought: str


def react_text(thought: str, name: str, tool_input: Mapping[str, Any]) -> str:
    """The ReAct text equivalent of a tool call (what the shared parser reads)."""
    value = tool_input.get(TOOL_KEYS.get(name, ""))
    if not isinstance(value, str):
        strings = [v for v in tool_input.values() if isinstance(v, str)]
        value = strings[0] if len(strings) == 1 else json.dumps(dict(tool_input))
    head = f"Thought: {thought}\n" if thought else ""
    return f"{head}Action: {name}\nAction Input: {' '.join(value.split())}"


def _thought(text: str) -> str:
    """Prose before a tool call, without a leading `Thought:` or a text-form action."""
    m = _ACTION_LINE.search(text)
    if m:
        text = text[:m.start()]
    return _THOUGHT_KEY.sub("", text.strip()).strip()


def build_request(messages: Sequence[Message], tool_uses: Mapping[tuple[int, str], ToolUse],
                  kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, turns) for messages.create, with one cache breakpoint.

    Args:
        messages: system message first, then user/assistant messages.
        tool_uses: the tool calls behind this session's replies, keyed by (number of
            assistant messages before the reply, reply text).
        kind: "act" puts the breakpoint on the last message; any other kind (a fork
            of the acting conversation plus one question) on the one before.
    """
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    mark = len(messages) - 1 if kind == "act" else len(messages) - 2
    pending: str | None = None  # id of a tool_use whose result the next user message is
    replies = 0
    for i, m in enumerate(messages):
        text = m["content"] or "(empty)"
        blocks: list[dict[str, Any]]
        if m["role"] == "system":
            blocks = [{"type": "text", "text": text}]
            system.extend(blocks)
        elif m["role"] == "assistant" and (replies, m["content"]) in tool_uses:
            use = tool_uses[(replies, m["content"])]
            blocks = [{"type": "text", "text": use.thought}] if use.thought else []
            blocks.append({"type": "tool_use", "id": use.id, "name": use.name,
                           "input": dict(use.input)})
            pending = use.id
        elif m["role"] == "user" and pending is not None:
            blocks = [{"type": "tool_result", "tool_use_id": pending, "content": text}]
            pending = None
        else:
            blocks = [{"type": "text", "text": text}]
        replies += m["role"] == "assistant"
        if i == mark:
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
        if m["role"] == "system":
            continue
        if turns and turns[-1]["role"] == m["role"]:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": m["role"], "content": blocks})
    return system, turns


def http_limits(concurrency: int) -> Any:
    """Pool limits of the SDK's HTTP client: a kept-alive connection per concurrent episode."""
    import anthropic  # the SDK takes a second to import: only when a Claude model runs

    base = next(c for c in anthropic.DefaultAsyncHttpxClient.__mro__
                if c.__name__ == "AsyncClient")  # httpx2 in SDK 2.x, httpx before
    return sys.modules[base.__module__.split(".")[0]].Limits(
        max_connections=max(100, concurrency * 2), max_keepalive_connections=max(20, concurrency))


class AnthropicClient:
    """A Claude model.

    Args:
        name: registry name.
        spec: the registry entry, typed and validated (`core.models.specs.AnthropicSpec`).

    Raises:
        ConfigError: ANTHROPIC_API_KEY is not set.
    """

    always_judge = False

    def __init__(self, name: str, spec: AnthropicSpec) -> None:
        key = os.environ.get(API_KEY_ENV, "")
        if not key:
            raise ConfigError(f"model '{name}': {API_KEY_ENV} is not set; export it in the "
                              f"environment (it is never read from lab.toml)")
        self.name = name
        self.model = spec.model
        self.concurrency = spec.concurrency
        self.policy = spec.retry
        self.prices = spec.prices
        self.sampling = dict(spec.request_sampling)
        self.thinking = spec.thinking
        self.thinking_budget = spec.thinking_tokens
        self.native_tools = spec.tools == TOOLS_NATIVE
        # credentials in base_url go into the requests only; base_url is the redacted form
        self.address = parse_endpoint(spec.base_url)
        self.base_url = self.address.public
        self.secrets = (key, *self.address.secrets)
        # what the requests carry is never stored or printed, in any spelling
        remember(self.secrets, self.address.username, self.address.password)
        if self.address.secrets or self.address.basic_auth:
            scrub_client_logs()
        self._api: anthropic.AsyncAnthropic | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def api(self) -> anthropic.AsyncAnthropic:
        """The SDK client for the running event loop (SDK retries off, explicit timeout)."""
        import anthropic

        loop = asyncio.get_running_loop()
        if self._api is None or self._loop is not loop:
            # An explicit http_client: the SDK's own one closes itself on garbage
            # collection through the running loop, which fails noisily when that loop
            # is a later one than the client's.
            basic = self.address.basic_auth
            self._api = anthropic.AsyncAnthropic(
                api_key=self.secrets[0], base_url=self.address.base, max_retries=0,
                timeout=self.policy.timeout_s,
                default_query=dict(self.address.query_params) or None,
                # userinfo (a proxy's basic auth) takes the authorization header, where
                # this SDK puts the key; the key then goes as x-api-key, which the API reads
                default_headers={"authorization": basic, "x-api-key": self.secrets[0]}
                if basic else None,
                http_client=anthropic.DefaultAsyncHttpxClient(
                    limits=http_limits(self.concurrency),
                    timeout=self.policy.timeout_s))
            self._loop = loop
        return self._api

    def start(self, view: EpisodeView) -> AnthropicSession:
        """Open a session for one episode."""
        return AnthropicSession(self)

    def batches(self) -> MessageBatches:
        """The Message Batches API of this model (the `batches` capability)."""
        return MessageBatches(self)

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        if self._api is not None and self._loop is asyncio.get_running_loop():
            await self._api.close()


class AnthropicSession:
    """One episode's conversation with Claude.

    Attributes:
        server: the API base URL (recorded per episode).
    """

    def __init__(self, client: AnthropicClient) -> None:
        self.client = client
        self.server = client.base_url
        self.tool_uses: dict[tuple[int, str], ToolUse] = {}

    def request(self, messages: Sequence[Message], kind: str, max_tokens: int,
                stop: Sequence[str]) -> dict[str, Any]:
        """The keyword arguments of one messages.create call."""
        c = self.client
        # with thinking on, history goes back as text (see the module docstring)
        system, turns = build_request(messages, {} if c.thinking else self.tool_uses, kind)
        body: dict[str, Any] = {"model": c.model, "max_tokens": max_tokens, "messages": turns}
        if c.native_tools:
            tools = list(TOOLS)
            if any("backup_search" in b["text"] for b in system):
                tools.append(BACKUP_TOOL)
            # A fork (judgment, probe) must answer in words: tool_choice "none" there.
            # (That choice is part of the cache key, so a fork reads the cached tools and
            # system but not the cached turns; the acting calls keep their cache.)
            body["tools"] = tools
            body["tool_choice"] = ({"type": "auto", "disable_parallel_tool_use": True}
                                   if kind == "act" else {"type": "none"})
        if system:
            body["system"] = system
        if stop:
            body["stop_sequences"] = list(stop)
        if c.sampling:
            body["extra_body"] = dict(c.sampling)
        if c.thinking and kind == "act":
            body["thinking"] = {"type": "enabled", "budget_tokens": c.thinking_budget}
            body["max_tokens"] = max_tokens + c.thinking_budget
        elif c.thinking:
            body["thinking"] = {"type": "disabled"}
        return body

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = ()) -> Generation:
        """One messages.create call, retried per the policy.

        Raises:
            core.errors.ModelError: context_overflow at once; timeout, connection,
                server_error, rate_limited, overloaded or bad_response once retries
                are spent.
        """
        import anthropic

        c = self.client
        body = self.request(messages, kind, max_tokens, stop)
        start = time.perf_counter()
        reply: Reply = await call_with_retries(
            lambda: self._once(body), c.policy, f"{c.name} ({c.model})",
            (anthropic.AnthropicError,), c.secrets)
        text, use, reasoning = reply.text, reply.use, reply.reasoning
        if any_registered():  # a reply that echoes a credential stores it as ***
            text, reasoning = redact(text), redact(reasoning)
        if use is not None and kind == "act" and not c.thinking and c.native_tools:
            replies = sum(m["role"] == "assistant" for m in messages)
            self.tool_uses[(replies, text)] = use
        plain, output, read, write = reply.usage
        total = plain + read + write
        return Generation(text=text, input_tokens=total, output_tokens=output,
                          cache_read_tokens=read, cache_write_tokens=write,
                          cost_usd=c.prices.dollars(total, output, read, write),
                          latency_ms=(time.perf_counter() - start) * 1000,
                          reasoning=reasoning, finish=reply.finish,
                          reasoning_tokens=estimate_reasoning_tokens(output, reasoning, text))

    async def _once(self, body: dict[str, Any]) -> Reply:
        """One attempt: the reply read (`_read_message`)."""
        try:
            resp = await self.client.api().messages.create(**body)
        except json.JSONDecodeError as exc:  # the SDK decoding a reply that is not JSON
            raise MalformedResponse(f"reply is not JSON ({exc})") from exc
        with reading_reply():
            return _read_message(resp)


@dataclass(frozen=True)
class Reply:
    """A messages.create reply, read.

    Attributes:
        text: the ReAct text (a tool call's equivalent text, else the text blocks).
        use: the tool call it came from, if any.
        usage: (uncached input, output, cache read, cache write) tokens.
        reasoning: the thinking blocks' text.
        finish: FINISH_STOP, FINISH_LENGTH or FINISH_REFUSAL (from `stop_reason`).
    """

    text: str
    use: ToolUse | None
    usage: tuple[int, int, int, int]
    reasoning: str
    finish: str = FINISH_STOP


def _read_message(resp: Any) -> Reply:
    """The ReAct text, tool call, usage, thinking text and finish of a messages.create
    reply."""
    if isinstance(resp, str) or resp.content is None:
        raise ValueError("no content in the response")
    prose: list[str] = []
    thinking: list[str] = []
    use: ToolUse | None = None
    for block in resp.content:
        if block.type == "thinking":
            thinking.append(block.thinking.strip())
        elif block.type == "redacted_thinking":
            thinking.append(REDACTED)
        elif block.type == "text":
            prose.append(block.text)
        elif block.type == "tool_use":
            thought = _thought("\n".join(prose))
            use = ToolUse(block.id, block.name, dict(block.input or {}), thought)
            break
    text = (react_text(use.thought, use.name, use.input) if use is not None
            else "\n".join(prose).strip())
    u = resp.usage
    usage = (int(u.input_tokens or 0), int(u.output_tokens or 0),
             int(getattr(u, "cache_read_input_tokens", 0) or 0),
             int(getattr(u, "cache_creation_input_tokens", 0) or 0))
    finish = STOP_REASONS.get(str(getattr(resp, "stop_reason", None)), FINISH_STOP)
    return Reply(text, use, usage, "\n\n".join(t for t in thinking if t), finish)


@dataclass(frozen=True)
class BatchState:
    """A Message Batch as the API last reported it.

    Attributes:
        id: the batch id.
        status: "in_progress", "canceling" or "ended".
        counts: requests per outcome (processing, succeeded, errored, canceled, expired).
    """

    id: str
    status: str
    counts: Mapping[str, int]

    @property
    def ended(self) -> bool:
        """Whether every request has an outcome (results can be fetched)."""
        return self.status == "ended"


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome in an ended batch.

    Attributes:
        custom_id: the id the request was sent with.
        generation: the reply (batch price), or None when the request did not succeed.
        error: None, or "errored: <type>: <message>", "expired" or "canceled".
    """

    custom_id: str
    generation: Generation | None
    error: str | None = None


class MessageBatches:
    """The Message Batches API of one Claude model: create, poll, fetch results.

    Requests are the bodies an `AnthropicSession` would send (a fresh session: the
    history goes back as text), so a batched probe asks exactly what a direct one
    would. Create and poll calls are retried per the model's policy.

    Args:
        client: the model.
    """

    def __init__(self, client: AnthropicClient) -> None:
        self.client = client

    def params(self, messages: Sequence[Message], kind: str, max_tokens: int,
               stop: Sequence[str] = ()) -> dict[str, Any]:
        """One request's params (sampling merged in: batches take no extra_body)."""
        body = AnthropicSession(self.client).request(messages, kind, max_tokens, stop)
        return {**body.pop("extra_body", {}), **body}

    async def _call(self, what: str, make: Any) -> Any:
        import anthropic

        c = self.client
        return await call_with_retries(make, c.policy, f"{c.name} ({c.model}) batches {what}",
                                       (anthropic.AnthropicError,), c.secrets)

    async def create(self, requests: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        """Submit (custom_id, params) requests as one batch; returns its id.

        Raises:
            core.errors.ModelError: the API refused the batch or was unreachable.
        """
        items = [{"custom_id": cid, "params": dict(params)} for cid, params in requests]
        batch = await self._call("create", lambda: self.client.api().messages.batches.create(
            requests=items))  # type: ignore[arg-type]  # plain dicts of the Request TypedDict
        return str(batch.id)

    async def retrieve(self, batch_id: str) -> BatchState:
        """The batch's processing status and request counts."""
        batch = await self._call("retrieve", lambda: self.client.api().messages.batches.retrieve(
            batch_id))
        counts = batch.request_counts
        return BatchState(str(batch.id), str(batch.processing_status),
                          {k: int(getattr(counts, k, 0) or 0) for k in (
                              "processing", "succeeded", "errored", "canceled", "expired")})

    async def results(self, batch_id: str) -> list[BatchResult]:
        """Every request's outcome of an ended batch, in the order the API streams them."""
        c = self.client

        async def fetch() -> list[Any]:
            return [item async for item in await c.api().messages.batches.results(batch_id)]

        out = []
        for item in await self._call("results", fetch):
            result = item.result
            if result.type != "succeeded":
                error = getattr(getattr(result, "error", None), "error", None)
                detail = (f"errored: {getattr(error, 'type', 'error')}: "
                          f"{getattr(error, 'message', '')}" if result.type == "errored"
                          else str(result.type))
                out.append(BatchResult(str(item.custom_id), None, detail))
                continue
            try:
                with reading_reply():
                    reply = _read_message(result.message)
            except MalformedResponse as exc:
                out.append(BatchResult(str(item.custom_id), None, f"bad_response: {exc}"))
                continue
            plain, output, read, write = reply.usage
            total = plain + read + write
            text, reasoning = reply.text, reply.reasoning
            if any_registered():  # as for a live reply: an echoed credential is ***
                text, reasoning = redact(text), redact(reasoning)
            out.append(BatchResult(str(item.custom_id), Generation(
                text=text, input_tokens=total, output_tokens=output,
                cache_read_tokens=read, cache_write_tokens=write,
                cost_usd=c.prices.dollars(total, output, read, write) * BATCH_DISCOUNT,
                latency_ms=0.0, reasoning=reasoning, finish=reply.finish,
                reasoning_tokens=estimate_reasoning_tokens(output, reasoning, text))))
        return out
