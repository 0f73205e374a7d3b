"""The anthropic backend against a loopback Messages API server: native tool use read
as actions and sent back as tool_use/tool_result, merged turns, the cache breakpoint,
usage and dollars, faults, and the API key kept out of errors and lab.db."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import Any, cast

import pytest

from core.demo_data import demo_questions
from core.errors import ConfigError
from core.models.anthropic import AnthropicSession, ToolUse, build_request, react_text
from core.models.base import EpisodeView
from core.models.registry import ModelSpec, make_client
from core.parser import parse_action
from tests.helpers.backends import ANTHROPIC_KEY as KEY
from tests.helpers.backends import HANG_TIMEOUT_S, anthropic_spec
from tests.servers import AnthropicApp, Fault, LoopbackServer, tool_responder
from tests.servers.drive import drive


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.fixture
def app() -> AnthropicApp:
    return AnthropicApp(responder=tool_responder(searches=3))


@pytest.fixture
def server(app: AnthropicApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app, hang_s=120) as srv:  # a hang lasts until the test ends
        yield srv


def test_episode_round_trips_tool_use_and_caches(app: AnthropicApp, server: LoopbackServer,
                                                 db_path: Path) -> None:
    stored, rows = drive(anthropic_spec(server.url, tools="native"), db_path, n=2, budget=6)
    assert stored == 2
    r = rows[0]
    assert r["end_reason"] == "finish" and r["error"] is None, r["error"]
    assert r["tool_calls"] == 3 and r["extra_calls"] == 3  # judgments asked on forks
    # every request passed the server's checks: tool_use answered by tool_result, roles alternate
    assert app.calls == 2 * 7
    assert r["cache_read_tokens"] > 0 and r["cache_write_tokens"] > 0
    assert r["cost_usd"] > 0
    body = app.requests[-1]
    assert {t["name"] for t in body["tools"]} == {"search", "lookup", "finish"}
    assert not {"temperature", "top_p", "top_k"} & set(body)  # sampling = "default"
    assert body["system"][0]["type"] == "text"
    assert body["stop_sequences"] and all("bservation" in s for s in body["stop_sequences"])


def test_breakpoint_on_newest_stable_block_and_fork_prefix_matches(app: AnthropicApp,
                                                                   server: LoopbackServer,
                                                                   db_path: Path) -> None:
    drive(anthropic_spec(server.url, tools="native"), db_path, n=1, budget=6)
    act1, judge1, act2 = app.requests[:3]
    marked = [[(i, j) for i, t in enumerate(b["messages"]) for j, blk in enumerate(t["content"])
               if "cache_control" in blk] for b in (act1, judge1, act2)]
    assert all(len(m) == 1 for m in marked)
    assert marked[0] == [(0, 0)]  # acting call: the question, its newest turn
    last = judge1["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]  # merged turn
    assert "cache_control" in last[0] and "cache_control" not in last[1]
    assert judge1["max_tokens"] == 8 and judge1["tool_choice"] == {"type": "none"}
    assert act1["tool_choice"]["type"] == "auto"
    # the fork is block-for-block the acting prefix plus one block

    def strip(b: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in blk.items() if k != "cache_control"}
                for t in b["messages"] for blk in t["content"]]

    assert strip(judge1)[:-1] == strip(act2)[:len(strip(judge1)) - 1]


def test_sampling_table_is_sent(app: AnthropicApp, server: LoopbackServer, db_path: Path) -> None:
    drive(anthropic_spec(server.url, sampling={"temperature": 0.3, "top_p": 0.9}), db_path, n=1)
    assert app.requests[0]["temperature"] == 0.3 and app.requests[0]["top_p"] == 0.9


def test_cost_from_prices_including_cache_tokens(app: AnthropicApp, server: LoopbackServer) -> None:
    session = make_client(anthropic_spec(server.url)).start(EpisodeView(demo_questions()[0], 0, 4))
    msgs = [{"role": "system", "content": "s" * 800}, {"role": "user", "content": "Question: x"}]
    first = asyncio.run(session.generate(msgs, kind="act", max_tokens=64))
    second = asyncio.run(session.generate(msgs, kind="act", max_tokens=64))
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_tokens
    g = second
    plain = g.input_tokens - g.cache_read_tokens - g.cache_write_tokens
    assert g.cost_usd == pytest.approx((plain * 1.0 + g.cache_read_tokens * 0.10
                                        + g.cache_write_tokens * 1.25
                                        + g.output_tokens * 5.0) / 1e6)
    assert cast(AnthropicSession, session).server == server.url


def test_tool_use_becomes_react_text_the_parser_reads() -> None:
    text = react_text("The page is unrelated.", "search", {"query": "Ada\nBrun"})
    parsed = parse_action(text)
    assert parsed is not None and (parsed.name, parsed.argument) == ("search", "Ada Brun")
    assert parsed.thought == "The page is unrelated."
    parsed = parse_action(react_text("", "finish", {"answer": "Lake Orrin"}))
    assert parsed is not None and parsed.argument == "Lake Orrin"


def test_build_request_merges_roles_and_keeps_duplicate_calls_apart() -> None:
    same = "Action: search\nAction Input: X"
    uses = {(0, same): ToolUse("t0", "search", {"query": "X"}, ""),
            (1, same): ToolUse("t1", "search", {"query": "X"}, "")}
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Q"},
            {"role": "assistant", "content": same}, {"role": "user", "content": "obs1"},
            {"role": "assistant", "content": same}, {"role": "user", "content": "obs2"},
            {"role": "user", "content": "side question"}]
    system, turns = build_request(msgs, uses, kind="judge")
    assert system == [{"type": "text", "text": "sys"}]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[1]["content"][0]["id"] == "t0" and turns[3]["content"][0]["id"] == "t1"
    assert turns[4]["content"][0] == {"type": "tool_result", "tool_use_id": "t1",
                                      "content": "obs2", "cache_control": {"type": "ephemeral"}}
    assert turns[4]["content"][1] == {"type": "text", "text": "side question"}


def test_text_reply_without_tool_use_passes_through(server: LoopbackServer, app: AnthropicApp,
                                                    db_path: Path) -> None:
    app.responder = lambda body: [{"type": "text", "text": (
        "Thought: I know it.\nAction: finish\nAction Input: Lake Orrin")}]
    _, rows = drive(anthropic_spec(server.url), db_path, n=1)
    assert rows[0]["answer"] == "Lake Orrin" and rows[0]["end_reason"] == "finish"


FAULTS = [
    (Fault("status", status=500), 2, None),
    (Fault("status", status=529, retry_after=0.2), 1, None),
    (Fault("status", status=529), None, "overloaded"),
    (Fault("status", status=429, retry_after=0.01), None, "rate_limited"),
    (Fault("hang"), 1, None),
    (Fault("hang"), None, "timeout"),
    (Fault("reset"), None, "connection"),
    (Fault("malformed"), 2, None),
    (Fault("malformed"), None, "bad_response"),
    (Fault("context"), None, "context_overflow"),
    (Fault("slow", delay_s=0.1), None, None),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault, times, reason", FAULTS,
                         ids=[f"{f.kind}{f.status if f.kind == 'status' else ''}-"
                              f"{'always' if t is None else t}" for f, t, _ in FAULTS])
def test_episodes_through_fault(app: AnthropicApp, server: LoopbackServer, db_path: Path,
                                fault: Fault, times: int | None, reason: str | None) -> None:
    app.responder = tool_responder(searches=1)
    if times is None:
        app.script.always = fault
    else:
        app.script.push(fault, times)
    start = time.perf_counter()
    hang = ({"timeout_s": HANG_TIMEOUT_S["always" if times is None else "once"],
             "concurrency": 5} if fault.kind == "hang" else {})
    stored, rows = drive(anthropic_spec(server.url, **hang), db_path, n=5)
    assert stored == 5 and len(rows) == 5
    if reason is None:
        assert all(r["end_reason"] == "finish" for r in rows), rows[0]["error"]
    else:
        assert all(r["error"].startswith(f"{reason}: ") for r in rows), rows[0]["error"]
    if reason == "context_overflow":
        assert app.calls == 5  # never retried
    elif reason == "timeout":
        # every attempt timed out; one may do so before its request reached the server
        assert all("gave up after 3 attempts" in r["error"] for r in rows)
        assert 5 <= app.calls <= 15
    elif reason is not None:
        assert app.calls == 15 and all("gave up after 3 attempts" in r["error"] for r in rows)
    if fault.retry_after == 0.2:
        assert time.perf_counter() - start >= 0.2


@pytest.mark.timeout(60)
def test_api_key_sent_but_never_in_errors_or_db(app: AnthropicApp, server: LoopbackServer,
                                                db_path: Path) -> None:
    app.script.always = Fault("status", status=401, message="invalid x-api-key {api_key}")
    _, rows = drive(anthropic_spec(server.url), db_path, n=2)
    assert KEY in (app.headers[0].get("x-api-key"), app.headers[0].get("authorization", "")[7:])
    assert rows[0]["error"].startswith("auth: ") and app.calls == 2  # not retried
    assert KEY not in rows[0]["error"] and "***" in rows[0]["error"]
    for f in db_path.parent.glob(db_path.name + "*"):
        assert KEY.encode() not in f.read_bytes()


def test_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        make_client(anthropic_spec("http://127.0.0.1:9"))


def test_registry_accepts_base_url_and_refuses_a_bad_one(tmp_path: Path) -> None:
    from core.models.registry import load_registry
    path = tmp_path / "lab.toml"
    path.write_text('[models.c]\nbackend = "anthropic"\nmodel = "claude-x"\n'
                    'base_url = "http://127.0.0.1:9"\nbackoff_s = 0.5\n')
    assert load_registry(path)["c"].params["base_url"] == "http://127.0.0.1:9"
    path.write_text('[models.c]\nbackend = "anthropic"\nmodel = "claude-x"\nbase_url = "api"\n')
    with pytest.raises(ConfigError, match="base_url must be an http"):
        load_registry(path)


def test_estimate_cost_for_claude_cells() -> None:
    from core.models.cost import Assumptions, estimate_cost
    spec = anthropic_spec("http://127.0.0.1:9")
    one = estimate_cost(spec, 1, 8)
    assert one["calls"] == 8 and one["output_tokens"] == 8 * 60
    assert one["cache_read_tokens"] == 0  # an 8-turn episode stays under 4,096 tokens
    assert one["dollars"] == pytest.approx((one["input_tokens"] * 1.0
                                            + one["output_tokens"] * 5.0) / 1e6, abs=1e-4)
    judged = estimate_cost(spec, 100, 8, judge=True)
    assert judged["calls"] == 100 * (8 + 7)
    cached = estimate_cost(spec, 1, 8, assume=Assumptions(min_cache_tokens=0))
    assert cached["cache_read_tokens"] > 0 and cached["dollars"] < one["dollars"]
    free = estimate_cost(ModelSpec("q", "openai", {"model": "m", "endpoints": ["http://h/v1"]}),
                         10, 8)
    assert free["dollars"] == 0 and free["calls"] == 80


def test_retry_after_and_classification_helpers() -> None:
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    from core.models.retry import (
        RetryableFailure,
        StatusFailure,
        classify,
        redact,
        retry_after_seconds,
    )
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    wait = retry_after_seconds({"retry-after": later})
    assert wait is not None and 25 <= wait <= 31
    assert retry_after_seconds({}) is None
    assert redact("key sk-ant-abcdef123 leaked", ["sk-ant-abcdef123"]) == "key *** leaked"
    err = classify(StatusFailure(413, {}, '{"error": {"message": "prompt is too long"}}'), "m")
    assert err.reason == "context_overflow" and not err.retryable
    err = classify(StatusFailure(429, {"retry-after": "3"}, "slow down"), "m")
    assert err.reason == "rate_limited" and err.retryable
    assert isinstance(err, RetryableFailure) and err.retry_after_s == 3.0
    assert classify(StatusFailure(404, {}, "nope"), "m").reason == "bad_request"
