"""The openai backend: vLLM's (or any) OpenAI-compatible chat-completions server
(docs/models.md).

It speaks the wire format with one `httpx.AsyncClient` per endpoint (and event loop):
an explicit timeout, retries done here (`core.models.retry`), and for http endpoints
the keep-alive transport of `core.models.transport`. Why not the `openai` SDK's
AsyncOpenAI: measured here, its request building and response parsing cost ~0.8 ms
of CPU per call inside real episodes, which caps one process at ~800 calls/s — below
the 1,150 calls/s that 128 episodes against a 100 ms server need (docs/performance.md,
bench/concurrency.py); this path costs ~0.3 ms. The request body is the one the SDK
would send with extra_body.

Every sampling parameter in the registry is sent explicitly — vLLM would otherwise
apply the model's generation_config.json — and vLLM's extra ones (top_k, min_p,
repetition_penalty, `chat_template_kwargs.enable_thinking`) sit top-level in the JSON
body. A new episode goes to the endpoint with the fewest outstanding requests (ties:
fewest episodes so far) and stays there with all its forks, so its prefix stays in
that server's cache.

Thinking (docs/models.md): `chat_template_kwargs.enable_thinking` is always sent, true only
on acting turns of a model registered with `thinking = true` and false otherwise
(Qwen3's template thinks when it is left out); judgment forks and probes are sent with
thinking off (an 8-token reply has no room for reasoning). With thinking on, an
acting turn may generate `thinking_budget` tokens on top of its `max_tokens` (vLLM has
no separate cap on reasoning). Reasoning text (`reasoning_content` / `reasoning` from
vLLM's reasoning parser, or a `<think>…</think>` block in the content) is kept in
`Generation.reasoning` and removed from `Generation.text`, so it is never fed back;
its tokens come from `usage.completion_tokens_details.reasoning_tokens` when the
server reports them, else they are estimated. A thinking turn is sent without stop
strings (one written inside the reasoning would cut the reply before its action); its
visible text is cut at the first stop string instead. With thinking off, a reply whose
`content` is empty but whose reasoning field holds text (a server started with vLLM's
`--reasoning-parser` puts a non-thinking Qwen3 answer there) is read as the reply, with
one warning per model naming the reasoning parser.

Generation settings (`core.models.generation`): a model without a `sampling` table
sends greedy sampling, and every request carries a seed derived from its messages and
the episode's seed and replicate unless the registry fixes one (`seed = N`) or sends
none (`seed = "none"`). `finish_reason == "length"` becomes `Generation.finish =
FINISH_LENGTH`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from core.errors import ConfigError, ModelError
from core.models.base import FINISH_LENGTH, FINISH_STOP, EpisodeView, Generation, Message
from core.models.endpoint_url import parse_endpoint, scrub_client_logs
from core.models.generation import SEED_NONE, SEED_PROMPT, cut_at_stop, request_seed
from core.models.health import HEALTH, Breaker, Failover, http_alive, wait_admission
from core.models.reasoning import estimate_reasoning_tokens, split_reasoning
from core.models.request_json import MessageJSON
from core.models.retry import LOG, StatusFailure, call_with_retries, reading_reply
from core.models.specs import OpenAISpec
from core.models.tls import tls_context
from core.models.transport import Response, StreamPool
from core.redaction import any_registered, redact, remember

DOWN_S = 30.0
"""How long an endpoint that refused or dropped a connection is avoided."""
_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
API_KEY_ENV = "VLLM_API_KEY"
"""Environment variable read for servers started with `--api-key` (else "EMPTY")."""
Usage = tuple[int, int, int, int | None]
"""(prompt, completion, cached prompt, reasoning tokens or None when not reported)."""
REASONING_PARSER_WARNING = (
    "%s: thinking is off but a reply came with empty content and its text in the "
    "reasoning field; it is read as the reply. The server was likely started with a "
    "reasoning parser (vLLM's --reasoning-parser) that files non-thinking answers as "
    "reasoning: restart it without the parser, or set thinking = true in lab.toml if the "
    "model is meant to think")
"""Logged once per model (client) when a thinking-off reply is read from its reasoning field."""


@dataclass(frozen=True)
class Completion:
    """What one chat-completion body says.

    Attributes:
        text: the reply without its reasoning.
        reasoning: the reasoning text ("" without).
        usage: its `Usage`.
        finish: FINISH_LENGTH when the server stopped at max_tokens, else FINISH_STOP.
        from_reasoning_field: the text was read from `reasoning_content`/`reasoning`
            because thinking was off and the content empty.
    """

    text: str
    reasoning: str
    usage: Usage
    finish: str = FINISH_STOP
    from_reasoning_field: bool = False


def _openai_sdk() -> Any:
    """The openai package, needed only by a model whose transport is "sdk".

    Raises:
        ConfigError: it is not installed (it is an optional extra, `lab[sdk]`).
    """
    try:
        import openai
    except ImportError:
        raise ConfigError('transport = "sdk" needs the openai package: '
                          "pip install -e '.[sdk]' (or use the default transport)") from None
    return openai


class Endpoint:
    """One server of a model: its load counters and its connections.

    Plain-http endpoints use `core.models.transport.StreamPool`, https ones httpx;
    either is made per event loop (connections belong to the loop that opened them,
    so a worker running each job under its own `asyncio.run` gets fresh ones).
    Credentials in the URL go into the requests only (`core.models.endpoint_url`):
    userinfo as a basic `authorization` header, the query string on every request;
    `url` is the redacted form, the one stored, printed and logged.

    Args:
        url: the base URL, e.g. "http://127.0.0.1:8000/v1".
        key: the bearer token ("EMPTY" when the server has none).
        timeout_s: read timeout of one call (connect: at most 5 s).

    Raises:
        ConfigError: the URL has userinfo and `key` is a real token (both would be
            the `authorization` header).
    """

    def __init__(self, url: str, key: str, timeout_s: float, transport: str = "stream") -> None:
        self.address = parse_endpoint(url)
        self.url = self.address.public
        self.transport = transport
        self.key = key
        basic = self.address.basic_auth
        if basic is not None and key != "EMPTY":
            raise ConfigError(f"endpoint {self.url}: has user:password@ and {API_KEY_ENV} is "
                              f"set; both would be the authorization header, so use one")
        self.secrets = self.address.secrets
        # what the requests carry is never stored or printed, in any spelling
        remember((*self.secrets, *([key] if key != "EMPTY" else [])),
                 self.address.username, self.address.password)
        if self.secrets:
            scrub_client_logs()
        self.outstanding = 0
        self.episodes = 0
        self.down_until = 0.0
        self.timeout_s = timeout_s
        self.connect_s = min(5.0, timeout_s)
        parts = urlsplit(self.address.base)
        self.plain = parts.scheme == "http"
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.authority = parts.netloc
        self.headers = {"authorization": basic or f"Bearer {key}",
                        "content-type": "application/json", "accept": "application/json"}
        self._header_lines = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items()).encode()
        self._conns: StreamPool | httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _for_loop(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._conns is None or self._loop is not loop:
            if self.transport == "sdk":
                openai = _openai_sdk()

                # the SDK's annotations name its own httpx fork (httpx2); it accepts
                # httpx's client and timeout at run time
                self._conns = openai.AsyncOpenAI(
                    base_url=self.address.base, api_key=self.key, max_retries=0,
                    default_query=dict(self.address.query_params) or None,
                    default_headers={"authorization": self.headers["authorization"]},
                    timeout=httpx.Timeout(self.timeout_s, connect=self.connect_s),
                    http_client=httpx.AsyncClient(limits=_LIMITS, verify=tls_context()))
            elif self.plain and self.transport == "stream":
                self._conns = StreamPool(self.host, self.port, authority=self.authority)
            else:
                self._conns = httpx.AsyncClient(
                    timeout=httpx.Timeout(self.timeout_s, connect=self.connect_s),
                    headers=self.headers, limits=_LIMITS, verify=tls_context())
            self._loop = loop
        return self._conns

    async def post(self, path: str, body: bytes, bounded: bool = False) -> Response:
        """POST JSON to `path` under the base URL; returns (status, headers, body).

        Args:
            bounded: the caller already bounds the whole request by this endpoint's
                `timeout_s` (`call_with_retries`, whose bound starts first and so always
                ends first): the stream pool then sets no read timer of its own.

        Raises:
            httpx.HTTPError: the connection failed or timed out.
        """
        conns = self._for_loop()
        if isinstance(conns, StreamPool):
            return await conns.post(self.address.target(path), self._header_lines, body,
                                    self.connect_s, None if bounded else self.timeout_s)
        resp = await conns.post(self.address.request_url(path), content=body)
        return resp.status_code, resp.headers, resp.content

    async def probe(self) -> bool:
        """Whether the server answers a GET of its /models (an outage's probe,
        `core.models.health`)."""
        return await http_alive(self.address.request_url("models"), self.headers)

    async def sdk_chat(self, body: dict[str, Any]) -> tuple[int, Mapping[str, str], Any]:
        """One chat completion through the openai SDK: (status, headers, reply dict or text).

        Raises:
            httpx.HTTPError: the connection failed or timed out (mapped from the SDK's).
        """
        openai = _openai_sdk()
        known = {"model", "messages", "max_tokens", "stop", "temperature", "top_p", "seed",
                 "presence_penalty", "frequency_penalty"}
        args = {k: v for k, v in body.items() if k in known}
        extra = {k: v for k, v in body.items() if k not in known}
        try:
            reply = await self._for_loop().chat.completions.create(**args, extra_body=extra or None)
        except openai.APIStatusError as exc:
            return exc.status_code, exc.response.headers, exc.response.content
        except openai.APITimeoutError as exc:
            raise httpx.ReadTimeout(str(exc)) from exc
        except openai.APIConnectionError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        return 200, {}, reply.model_dump()

    async def close(self) -> None:
        """Close the running loop's connections."""
        if self._conns is not None and self._loop is asyncio.get_running_loop():
            if isinstance(self._conns, StreamPool):
                self._conns.close()
            elif isinstance(self._conns, httpx.AsyncClient):
                await self._conns.aclose()
            else:
                await self._conns.close()
            self._conns = None


class OpenAIClient:
    """A model served by one or more OpenAI-compatible endpoints.

    Args:
        name: registry name.
        spec: the registry entry, typed and validated (`core.models.specs.OpenAISpec`).
    """

    always_judge = False

    def __init__(self, name: str, spec: OpenAISpec) -> None:
        self.name = name
        self.model = spec.model
        self.concurrency = spec.concurrency
        self.policy = spec.retry
        self.prices = spec.prices
        self.thinking = spec.thinking
        self.thinking_budget = spec.thinking_tokens
        self.sampling: dict[str, Any] = dict(spec.request_sampling)
        self.seed = spec.seed_policy
        self.warned_reasoning_field = False
        key = os.environ.get(API_KEY_ENV) or "EMPTY"
        self.secrets: tuple[str, ...] = (key,) if key != "EMPTY" else ()
        self.endpoints = [Endpoint(url, key, self.policy.timeout_s, spec.transport)
                          for url in spec.served_at()]
        self.secrets += tuple(s for e in self.endpoints for s in e.secrets)
        # outages (core.models.health): one breaker per endpoint URL, shared process-wide
        self.breakers: dict[str, Breaker] = {e.url: HEALTH.breaker(e.url, name, e.probe)
                                             for e in self.endpoints}

    def pick(self, avoid: Endpoint | None = None) -> Endpoint:
        """The endpoint with the fewest outstanding requests (ties: fewest episodes).

        Endpoints that refused or dropped a connection in the last DOWN_S seconds (and
        `avoid`) are passed over while another one is available.
        """
        now = time.monotonic()
        up = [e for e in self.endpoints if e.down_until <= now and e is not avoid
              and not self.breakers[e.url].down]
        best = min(up or self.endpoints, key=lambda e: (e.outstanding, e.episodes))
        best.episodes += 1
        return best

    def admits(self) -> bool:
        """Whether a new episode may start now without waiting (an endpoint is up)."""
        return not self.breakers or any(not b.down for b in self.breakers.values())

    async def ready(self, give_up: Callable[[], bool] | None = None) -> None:
        """Hold a new episode while every endpoint is down (`core.models.health`)."""
        await wait_admission(list(self.breakers.values()), self.policy, give_up)

    def start(self, view: EpisodeView) -> OpenAISession:
        """Open a session pinned to the least-loaded endpoint."""
        return OpenAISession(self, self.pick(), view)

    def thinks(self, kind: str) -> bool:
        """Whether a call of this kind is a thinking turn (acting turns of a thinking model)."""
        return self.thinking and kind == "act"

    def request(self, messages: Sequence[Message], kind: str, max_tokens: int,
                stop: Sequence[str], view: EpisodeView | None = None,
                encoded: MessageJSON | None = None) -> dict[str, Any]:
        """The JSON body of one chat-completions call (vLLM's extra parameters top-level).

        A thinking turn may generate `thinking_budget` more tokens and is sent without
        stop strings (they are applied to its visible text afterwards). The seed is the
        registry's, or derived from the messages and `view`'s seed and replicate
        (`encoded`: the episode's messages' JSON kept for its later calls).
        """
        thinking = self.thinks(kind)
        body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages],
                                "max_tokens": max_tokens + (self.thinking_budget if thinking
                                                            else 0), **self.sampling}
        if stop and not thinking:
            body["stop"] = list(stop)
        if "seed" not in body and self.seed != SEED_NONE:
            body["seed"] = (request_seed(messages, view.seed if view else 0,
                                         view.replicate if view else 0, encoded)
                            if self.seed == SEED_PROMPT else self.seed)
        body["chat_template_kwargs"] = {"enable_thinking": thinking}
        return body

    async def aclose(self) -> None:
        """Close the running loop's HTTP clients (call at the end of a batch of episodes)."""
        for e in self.endpoints:
            await e.close()


class OpenAISession:
    """One episode pinned to one endpoint.

    When its endpoint fails at the connection level (refused, reset) and another one
    is up, the episode moves there for its remaining calls: a lost prefix cache costs
    time, a dead endpoint would cost the episode.

    Attributes:
        server: the endpoint URL serving this episode (the last one, if it moved).
    """

    def __init__(self, client: OpenAIClient, endpoint: Endpoint,
                 view: EpisodeView | None = None) -> None:
        self.client = client
        self.endpoint = endpoint
        self.server = endpoint.url
        self.view = view
        self.encoded = MessageJSON()  # the history's JSON, each message encoded once

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = ()) -> Generation:
        """One chat completion on this episode's endpoint, retried per the policy.

        Raises:
            core.errors.ModelError: context_overflow at once; timeout, connection,
                server_error, rate_limited or bad_response once retries are spent.
        """
        c = self.client
        thinking = c.thinks(kind)
        body = c.request(messages, kind, max_tokens, stop, self.view, self.encoded)
        payload = self.encoded.body(body).encode()  # json.dumps(body), byte for byte
        start = time.perf_counter()
        reply: Completion = await call_with_retries(
            lambda: self._once(body, payload, thinking), c.policy,
            lambda: f"{c.name} at {self.endpoint.url}",
            (httpx.HTTPError, StatusFailure), c.secrets, on_failure=self._failed,
            outage=Failover(c.endpoints, lambda e: c.breakers[e.url], lambda: self.endpoint,
                            self._move, c.policy))
        if reply.from_reasoning_field and not c.warned_reasoning_field:
            c.warned_reasoning_field = True
            LOG.warning(REASONING_PARSER_WARNING, c.name)
        text, finish, reasoning = reply.text, reply.finish, reply.reasoning
        if any_registered():  # a reply that echoes a credential stores it as ***
            text, reasoning = redact(text), redact(reasoning)
        if thinking and stop:  # the stop strings the server was not sent
            text, cut = cut_at_stop(text, stop)
            if cut:  # what is kept ended at a stop string, not at max_tokens
                finish = FINISH_STOP
        prompt, completion, cached, thought = reply.usage
        if thought is None:
            thought = estimate_reasoning_tokens(completion, reply.reasoning, text)
        return Generation(text=text, input_tokens=prompt, output_tokens=completion,
                          cache_read_tokens=cached,
                          cost_usd=c.prices.dollars(prompt, completion, cached),
                          latency_ms=(time.perf_counter() - start) * 1000,
                          reasoning=reasoning, reasoning_tokens=thought, finish=finish)

    def _move(self, endpoint: Endpoint) -> None:
        """Serve the rest of the episode from `endpoint` (its own is down)."""
        if endpoint is not self.endpoint:
            LOG.warning("%s: moving an episode from %s (down) to %s", self.client.name,
                        self.endpoint.url, endpoint.url)
            endpoint.episodes += 1
            self.endpoint, self.server = endpoint, endpoint.url

    def _failed(self, err: ModelError) -> None:
        """After a connection failure: mark the endpoint down, move to another if up."""
        if err.reason != "connection" or len(self.client.endpoints) == 1:
            return
        self.endpoint.down_until = time.monotonic() + DOWN_S
        moved = self.client.pick(avoid=self.endpoint)
        if moved is not self.endpoint:
            LOG.warning("%s: moving an episode from %s to %s", self.client.name,
                        self.endpoint.url, moved.url)
            self.endpoint, self.server = moved, moved.url

    async def _once(self, body: dict[str, Any], payload: bytes, thinking: bool) -> Completion:
        """One attempt: the reply read (`read_completion`); `payload` is `body`'s JSON."""
        e = self.endpoint
        e.outstanding += 1
        try:
            if e.transport == "sdk":
                status, headers, content = await e.sdk_chat(body)
            else:
                # call_with_retries bounds this attempt by the policy's timeout_s
                status, headers, content = await e.post("chat/completions", payload,
                                                        bounded=True)
        finally:
            e.outstanding -= 1
        if status >= 400:
            raise StatusFailure(status, headers, content.decode("utf-8", "replace"))
        with reading_reply():
            return read_completion(content if isinstance(content, dict) else json.loads(content),
                                   thinking)


def read_completion(data: Any, thinking: bool = True) -> Completion:
    """Read a chat-completion body.

    Args:
        data: the decoded JSON body.
        thinking: whether the turn was a thinking turn. With thinking off, a reply whose
            content is empty (null or blank) but whose `reasoning_content`/`reasoning`
            holds text is read from that field (`Completion.from_reasoning_field`).

    Raises:
        ValueError: not a chat completion (no choices[0].message).
    """
    try:
        choice = data["choices"][0]
        msg = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise ValueError("no choices[0].message in the response") from None
    content = msg.get("content")
    content = content if isinstance(content, str) else ""
    extra = msg.get("reasoning_content") or msg.get("reasoning")
    extra = extra if isinstance(extra, str) else ""
    moved = not thinking and not content.strip() and bool(extra.strip())
    if moved:
        content, extra = extra, ""
    text, think = split_reasoning(content)
    reasoning = "\n\n".join(p for p in (extra, think) if p)
    u = data.get("usage") or {}
    details = u.get("prompt_tokens_details") or {}
    reported = (u.get("completion_tokens_details") or {}).get("reasoning_tokens")
    usage = (int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0),
             int(details.get("cached_tokens") or 0),
             int(reported) if isinstance(reported, int) else None)
    finish = FINISH_LENGTH if choice.get("finish_reason") == "length" else FINISH_STOP
    return Completion(text, reasoning, usage, finish, moved)
