"""The openai backend against loopback OpenAI-compatible servers: wire format, faults,
endpoint choice, secrets. Every fault test drives real episodes into a temporary lab.db
and checks that each one was stored, retried to success or errored with its reason."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import cast

import httpx
import pytest

from core.demo_data import demo_questions
from core.errors import ModelError
from core.models.base import EpisodeView
from core.models.openai_compat import OpenAIClient, OpenAISession, split_reasoning
from core.models.registry import ModelSpec, make_client
from core.models.specs import OpenAISpec
from tests.helpers.backends import FAST, HANG_TIMEOUT_S, openai_spec
from tests.servers import Fault, LoopbackServer, OpenAIApp
from tests.servers.drive import drive


@pytest.fixture
def app() -> OpenAIApp:
    return OpenAIApp()


@pytest.fixture
def server(app: OpenAIApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app, hang_s=120) as srv:  # a hang lasts until the test ends
        yield srv


def test_request_sends_every_sampling_parameter_and_stop(app: OpenAIApp, server: LoopbackServer,
                                                         db_path: Path) -> None:
    stored, rows = drive(openai_spec(server.url), db_path, n=1)
    assert stored == 1 and rows[0]["end_reason"] == "finish"
    act, judge = app.requests[0], app.requests[1]
    assert act["temperature"] == 0.7 and act["top_p"] == 0.8
    assert act["top_k"] == 20 and act["min_p"] == 0.0  # extra_body lands top-level
    assert act["stop"] and all("bservation" in s for s in act["stop"])
    assert act["chat_template_kwargs"] == {"enable_thinking": False}
    # a model of no known family acts with the harness's 400 tokens
    assert act["max_tokens"] == 400 and act["model"] == "loopback-model"
    assert isinstance(act["seed"], int)
    assert judge["max_tokens"] == 8 and "USEFUL or USELESS" in judge["messages"][-1]["content"]
    assert judge["chat_template_kwargs"] == {"enable_thinking": False}
    # the fork shares the acting conversation's exact prefix
    assert judge["messages"][:-1] == app.requests[2]["messages"][:len(judge["messages"]) - 1]


def test_default_sampling_sends_none(app: OpenAIApp, server: LoopbackServer, db_path: Path) -> None:
    spec = ModelSpec("v", "openai", {"model": "m", "endpoints": [f"{server.url}/v1"],
                                     "sampling": "default", **FAST})
    drive(spec, db_path, n=1)
    assert not {"temperature", "top_p", "top_k"} & set(app.requests[0])
    # thinking is always explicit: a Qwen3 template left alone would think
    assert app.requests[0]["chat_template_kwargs"] == {"enable_thinking": False}


def test_usage_cost_and_reasoning_kept_apart(server: LoopbackServer, app: OpenAIApp) -> None:
    app.reasoning = "Let me think about Vellmore."
    client = make_client(openai_spec(server.url, price_per_mtok={"input": 1.0, "output": 2.0}))
    session = client.start(EpisodeView(demo_questions()[0], 0, 4))
    msgs = [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "Question: x"}]
    gen = asyncio.run(session.generate(msgs, kind="act", max_tokens=64))
    assert gen.reasoning == "Let me think about Vellmore." and "Vellmore" not in gen.text
    assert gen.input_tokens > 0 and gen.output_tokens > 0
    assert gen.cache_read_tokens == gen.input_tokens // 2
    expected = ((gen.input_tokens - gen.cache_read_tokens) * 1.0 + gen.cache_read_tokens * 0.1
                + gen.output_tokens * 2.0) / 1e6
    assert gen.cost_usd == pytest.approx(expected)
    assert cast(OpenAISession, session).server == f"{server.url}/v1"


@pytest.mark.parametrize("text, clean, reasoning", [
    ("<think>plan it</think>\nThought: go", "Thought: go", "plan it"),
    ("plan it</think>Thought: go", "Thought: go", "plan it"),
    ("Thought: go", "Thought: go", ""),
    ("<THINK>a</THINK>b<think>c</think>", "b", "a\n\nc"),
])
def test_split_reasoning(text: str, clean: str, reasoning: str) -> None:
    assert split_reasoning(text) == (clean, reasoning)


FAULTS = [
    # (fault, times queued (None = always), expected reason or None = all finish)
    (Fault("status", status=500), 2, None),
    (Fault("status", status=503), 2, None),
    (Fault("status", status=503), None, "server_error"),
    (Fault("hang"), 1, None),
    (Fault("hang"), None, "timeout"),
    (Fault("reset"), 2, None),
    (Fault("reset"), None, "connection"),
    (Fault("malformed"), 2, None),
    (Fault("malformed"), None, "bad_response"),
    (Fault("status", status=429, retry_after=0.2), 1, None),
    (Fault("status", status=429, retry_after=0.01), None, "rate_limited"),
    (Fault("context"), None, "context_overflow"),
    (Fault("slow", delay_s=0.2), None, None),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault, times, reason", FAULTS,
                         ids=[f"{f.kind}{f.status if f.kind == 'status' else ''}-"
                              f"{'always' if t is None else t}" for f, t, _ in FAULTS])
def test_episodes_through_fault(app: OpenAIApp, server: LoopbackServer, fault: Fault,
                                times: int | None, reason: str | None, db_path: Path) -> None:
    if times is None:
        app.script.always = fault
    else:
        app.script.push(fault, times)
    n = 6
    start = time.perf_counter()
    hang = ({"timeout_s": HANG_TIMEOUT_S["always" if times is None else "once"],
             "concurrency": n} if fault.kind == "hang" else {})
    stored, rows = drive(openai_spec(server.url, **hang), db_path, n=n)
    assert stored == n and len(rows) == n  # nothing dropped, nothing crashed
    if reason is None:
        assert all(r["end_reason"] == "finish" and r["error"] is None for r in rows)
    else:
        assert all(r["end_reason"] == "error" for r in rows)
        assert all(r["error"].startswith(f"{reason}: ") for r in rows), rows[0]["error"]
    if reason == "context_overflow":
        assert app.calls == n  # never retried
    elif reason == "timeout":
        # every attempt timed out; one may do so before its request reached the server
        assert all("gave up after 3 attempts" in r["error"] for r in rows)
        assert n <= app.calls <= n * 3
    elif reason is not None:
        assert app.calls == n * 3 and "gave up after 3 attempts" in rows[0]["error"]
    if fault.retry_after == 0.2:
        assert time.perf_counter() - start >= 0.2  # the retry waited as asked


@pytest.mark.timeout(60)
def test_connection_refused_is_retried_then_recorded(db_path: Path) -> None:
    # refused on every attempt: the endpoint is marked down, the calls wait for it
    # `outage_wait_s` (tests/test_endpoint_outages.py), then the episodes are errored
    with LoopbackServer(OpenAIApp()) as srv:
        url = srv.url
    stored, rows = drive(openai_spec(url, outage_wait_s=0.5, probe_s=0.05), db_path, n=3)
    assert stored == 3
    assert all(r["error"].startswith("endpoint_down: ") for r in rows)
    assert all("connection failed" in r["error"] for r in rows)  # the last failure named


@pytest.mark.timeout(60)
def test_retries_are_logged(app: OpenAIApp, server: LoopbackServer,
                            caplog: pytest.LogCaptureFixture, db_path: Path) -> None:
    app.script.push(Fault("status", status=503), 1)
    with caplog.at_level(logging.WARNING, logger="lab.models"):
        drive(openai_spec(server.url), db_path, n=1)
    assert any("retry 1/2" in r.getMessage() and "HTTP 503" in r.getMessage()
               for r in caplog.records)


@pytest.mark.timeout(60)
def test_api_key_never_in_errors(app: OpenAIApp, server: LoopbackServer,
                                 monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    secret = "vllm-secret-key-123456"
    monkeypatch.setenv("VLLM_API_KEY", secret)
    app.script.always = Fault("status", status=500, message="denied for key {api_key}")
    _, rows = drive(openai_spec(server.url), db_path, n=1)
    assert secret not in rows[0]["error"] and "***" in rows[0]["error"]


@pytest.mark.timeout(60)
def test_episode_and_its_forks_stay_on_one_endpoint_and_load_spreads(db_path: Path) -> None:
    apps = [OpenAIApp(delay_s=0.02), OpenAIApp(delay_s=0.02)]
    with LoopbackServer(apps[0]) as a, LoopbackServer(apps[1]) as b:
        stored, rows = drive(openai_spec(a.url, b.url, concurrency=8), db_path, n=8)
    assert stored == 8 and all(r["end_reason"] == "finish" for r in rows)
    seen = [{r["messages"][1]["content"] for r in app.requests} for app in apps]
    assert not seen[0] & seen[1]  # no question's calls on both servers
    assert len(seen[0]) >= 2 and len(seen[1]) >= 2  # both endpoints served episodes
    assert all(any(r["max_tokens"] == 8 for r in app.requests) for app in apps)  # forks too
    servers = {r["server"] for r in rows}  # every episode records the endpoint that served it
    assert servers == {f"{a.url}/v1", f"{b.url}/v1"}
    text = {q.id: q.question for q in demo_questions()}
    for row in rows:
        served_by = 0 if row["server"] == f"{a.url}/v1" else 1
        assert any(text[row["question_id"]] in q for q in seen[served_by])


def test_pick_prefers_fewest_outstanding_then_fewest_episodes() -> None:
    client = OpenAIClient("m", OpenAISpec(model="m", endpoints=(
        "http://a/v1", "http://b/v1", "http://c/v1"), concurrency=4))
    a, b, c = client.endpoints
    a.outstanding, b.outstanding, c.outstanding = 3, 1, 1
    b.episodes = 5
    assert client.pick() is c
    c.outstanding = 2
    assert client.pick() is b


@pytest.mark.timeout(60)
def test_context_overflow_raises_without_retry(app: OpenAIApp, server: LoopbackServer) -> None:
    app.script.always = Fault("context")
    session = make_client(openai_spec(server.url)).start(EpisodeView(demo_questions()[0], 0, 4))
    with pytest.raises(ModelError) as info:
        asyncio.run(session.generate([{"role": "user", "content": "x"}], kind="act",
                                     max_tokens=8))
    assert info.value.reason == "context_overflow" and not info.value.retryable
    assert "maximum context length" in str(info.value) and app.calls == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault, reason", [
    (None, None), (Fault("status", status=503), "server_error"), (Fault("hang"), "timeout"),
    (Fault("reset"), "connection"), (Fault("malformed"), "bad_response"),
    (Fault("context"), "context_overflow")])
def test_https_path_through_httpx_behaves_the_same(app: OpenAIApp, server: LoopbackServer,
                                                   fault: Fault | None, reason: str | None) -> None:
    """https endpoints go through httpx instead of the stream pool: same results."""
    app.script.always = fault
    hang = {"timeout_s": HANG_TIMEOUT_S["always"]} if reason == "timeout" else {}
    client = make_client(openai_spec(server.url, **hang))
    # take the httpx branch against the loopback server
    cast(OpenAIClient, client).endpoints[0].plain = False
    session = client.start(EpisodeView(demo_questions()[0], 0, 4))
    call = session.generate([{"role": "user", "content": "Question: x"}], kind="act",
                            max_tokens=16)
    if reason is None:
        assert asyncio.run(call).text.startswith("Thought:")
    else:
        with pytest.raises(ModelError) as info:
            asyncio.run(call)
        assert info.value.reason == reason


async def _raw_server(handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter],
                                        Awaitable[None]]) -> tuple[asyncio.AbstractServer, int]:
    srv = await asyncio.start_server(handler, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1]


@pytest.mark.timeout(60)
def test_stream_pool_reads_chunked_bodies_and_replaces_stale_connections() -> None:
    from core.models.transport import StreamPool

    closed = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                      ) -> None:  # answers once per connection, chunked, then closes
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                     b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()
        await writer.wait_closed()
        closed.set()

    async def main() -> tuple[tuple[int, Mapping[str, str], bytes],
                              tuple[int, Mapping[str, str], bytes]]:
        srv, port = await _raw_server(handler)
        pool = StreamPool("127.0.0.1", port)
        first = await pool.post("/x", b"", b"", 30.0, 30.0)
        await closed.wait()  # the server has closed the kept-alive connection
        second = await pool.post("/x", b"", b"", 30.0, 30.0)
        srv.close()
        return first, second

    first, second = asyncio.run(main())
    assert first[0] == second[0] == 200 and first[2] == second[2] == b"hello world"


@pytest.mark.timeout(60)
def test_a_bounded_post_sets_no_read_timer_of_its_own() -> None:
    # a call inside call_with_retries is bounded by the policy's timeout_s already (the
    # same seconds, started first), so the stream pool's own read timer is left out;
    # an unbounded post still gets it. A server that never answers: the pool's timer
    # (0.2 s) fires before the caller's (30 s) only when the pool sets one.
    from core.models.openai_compat import Endpoint

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                      ) -> None:  # reads the request, never answers
        await reader.read(1)
        await asyncio.sleep(3600)

    async def post(bounded: bool) -> str:
        srv, port = await _raw_server(handler)
        endpoint = Endpoint(f"http://127.0.0.1:{port}/v1", "EMPTY", 0.2)
        try:
            async with asyncio.timeout(30 if not bounded else 0.5):
                await endpoint.post("chat/completions", b"{}", bounded=bounded)
        except httpx.ReadTimeout:
            return "the pool's read timer"
        except TimeoutError:
            return "the caller's bound"
        finally:
            await endpoint.close()
            srv.close()
        return "answered"

    assert asyncio.run(post(bounded=False)) == "the pool's read timer"
    assert asyncio.run(post(bounded=True)) == "the caller's bound"


@pytest.mark.parametrize("table, message", [
    ({"backoff_s": -1}, r"backoff_s must be in \[0, 86400\] seconds"),
    ({"timeout_s": 0}, r"timeout_s must be in \(0, 86400\] seconds"),
    ({"tensor_parallel_size": 0}, r"tensor_parallel_size must be in \[1, 1024\]"),
    ({"max_retries": -1}, r"max_retries must be in \[0, 100\]"),
    ({"price_per_mtok": {"input": 1, "output": 2, "cache_reads": 1}}, "price_per_mtok.cache_reads"),
])
def test_registry_validates_backend_fields(tmp_path: Path, table: dict[str, int | dict[str, int]],
                                           message: str) -> None:
    from core.errors import ConfigError
    from core.models.registry import load_registry
    lines = [f"{k} = {v!r}".replace("'", '"') if not isinstance(v, dict) else
             f"{k} = {{ " + ", ".join(f"{a} = {b}" for a, b in v.items()) + " }"
             for k, v in table.items()]
    path = tmp_path / "lab.toml"
    path.write_text('[models.m]\nbackend = "openai"\nmodel = "x"\n'
                    'endpoints = ["http://127.0.0.1:8000/v1"]\n' + "\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_registry(path)


@pytest.mark.timeout(60)
def test_dead_endpoint_is_avoided_and_its_episodes_move(db_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    with LoopbackServer(OpenAIApp()) as srv:
        dead = srv.url
    app = OpenAIApp()
    with LoopbackServer(app) as live, caplog.at_level(logging.WARNING, logger="lab.models"):
        stored, rows = drive(openai_spec(dead, live.url, concurrency=4), db_path, n=8)
    assert stored == 8 and all(r["end_reason"] == "finish" for r in rows), rows[0]["error"]
    assert any("moving an episode" in r.getMessage() for r in caplog.records)
    assert len({r["messages"][1]["content"] for r in app.requests}) == 8  # all served live
