"""Thinking mode against the loopback OpenAI and Anthropic servers: the
request asks for it explicitly, the reasoning is stored per step with its tokens,
episodes total them, steps.csv exports them, `lab try` shows them, and no request
ever carries reasoning back (acting turns, side-channel forks)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console.cli import main
from console.render import step_lines
from core import store
from core.episode import Step
from core.errors import ConfigError
from core.models.reasoning import estimate_reasoning_tokens, split_reasoning
from core.models.registry import ModelSpec, load_registry
from tests.servers import AnthropicApp, LoopbackServer, OpenAIApp, tool_responder
from tests.servers.drive import drive

THOUGHTS = "Secret plan: Vellmore is probably a decoy, search twice then answer."
# no call may time out on a loaded machine: retries come only from injected faults
FAST = {"timeout_s": 30.0, "max_retries": 1, "backoff_s": 0.01, "backoff_max_s": 0.05}
KEY = "sk-ant-loopback-thinking"


def openai_spec(url: str, **extra: Any) -> ModelSpec:
    params = {"model": "loopback-model", "endpoints": [f"{url}/v1"],
              "sampling": {"temperature": 0.6, "top_p": 0.95}, "thinking": True,
              "concurrency": 2, **FAST, **extra}
    return ModelSpec("qwen-thinking", "openai", params)


def claude_spec(url: str, **extra: Any) -> ModelSpec:
    params = {"model": "claude-loopback", "base_url": url, "sampling": "default",
              "thinking": True, "thinking_budget": 2048, "tools": "native", "concurrency": 2,
              **FAST, **extra}
    return ModelSpec("claude-thinking", "anthropic", params)


def _requests_text(requests: list[dict[str, Any]]) -> str:
    """Every message and system block of every request, as one string."""
    return json.dumps([[r.get("system"), r.get("messages")] for r in requests])


def _steps(db_path: Path) -> list[dict[str, Any]]:
    return [dict(r) for r in store.connect(db_path).query(
        "SELECT episode_id, t, raw, reasoning, reasoning_tokens, output_tokens FROM steps "
        "ORDER BY episode_id, t")]


@pytest.fixture
def openai_app() -> OpenAIApp:
    return OpenAIApp(reasoning=THOUGHTS)


@pytest.fixture
def openai_server(openai_app: OpenAIApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(openai_app, hang_s=5) as srv:
        yield srv


@pytest.mark.parametrize("mode", ["field", "tags"])
def test_openai_reasoning_stored_counted_and_never_fed_back(openai_app: OpenAIApp,
                                                            openai_server: LoopbackServer,
                                                            db_path: Path, mode: str) -> None:
    openai_app.reasoning_mode = mode
    stored, rows = drive(openai_spec(openai_server.url), db_path, n=2, budget=4)
    assert stored == 2 and all(r["end_reason"] == "finish" for r in rows)
    steps = _steps(db_path)
    assert steps and all(s["reasoning"] == THOUGHTS for s in steps)
    assert all("<think>" not in s["raw"] and "Secret plan" not in s["raw"] for s in steps)
    assert all(0 < s["reasoning_tokens"] <= s["output_tokens"] for s in steps)
    for r in rows:
        mine = [s for s in steps if s["episode_id"] == r["id"]]
        assert r["reasoning_tokens"] == sum(s["reasoning_tokens"] for s in mine)
    # two acting turns and one side-channel fork per episode; none carries the reasoning
    acts = [b for b in openai_app.requests if b["max_tokens"] != 8]
    forks = [b for b in openai_app.requests if b["max_tokens"] == 8]
    assert len(acts) == 4 and len(forks) == 2
    assert "Secret plan" not in _requests_text(openai_app.requests)
    assert all(b["chat_template_kwargs"] == {"enable_thinking": True} for b in acts)
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in forks)
    # the second acting turn carries the first reply exactly as stored (no reasoning)
    second = [b for b in acts if len(b["messages"]) > 2][0]
    assert second["messages"][2] == {"role": "assistant", "content": steps[0]["raw"]}


def test_openai_reported_reasoning_tokens_are_used_and_budget_added(openai_app: OpenAIApp,
                                                                    openai_server: LoopbackServer,
                                                                    db_path: Path) -> None:
    openai_app.report_reasoning_tokens = True
    drive(openai_spec(openai_server.url, thinking_budget=1000), db_path, n=1, budget=4)
    steps = _steps(db_path)
    assert all(s["reasoning_tokens"] == len(THOUGHTS) // 4 + 1 for s in steps)
    acts = [b for b in openai_app.requests if b["chat_template_kwargs"]["enable_thinking"]]
    forks = [b for b in openai_app.requests if not b["chat_template_kwargs"]["enable_thinking"]]
    assert {b["max_tokens"] for b in acts} == {400 + 1000}  # no known family: 400
    assert all("stop" not in b for b in acts) and all(b["stop"] for b in forks if "stop" in b)
    assert {b["max_tokens"] for b in forks} == {8}


def test_openai_thinking_off_is_sent_explicitly(openai_app: OpenAIApp,
                                                openai_server: LoopbackServer, db_path: Path
                                               ) -> None:
    openai_app.reasoning = None
    spec = ModelSpec("qwen", "openai", {"model": "m", "endpoints": [f"{openai_server.url}/v1"],
                                        "sampling": "default", **FAST})
    drive(spec, db_path, n=1, budget=4)
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False}
               for b in openai_app.requests)
    assert all(s["reasoning"] is None and s["reasoning_tokens"] == 0 for s in _steps(db_path))


@pytest.fixture
def claude_app() -> AnthropicApp:
    return AnthropicApp(responder=tool_responder(searches=2), thinking=THOUGHTS)


@pytest.fixture
def claude_server(claude_app: AnthropicApp, monkeypatch: pytest.MonkeyPatch
                 ) -> Iterator[LoopbackServer]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with LoopbackServer(claude_app, hang_s=5) as srv:
        yield srv


def test_claude_extended_thinking_stored_and_never_sent_back(claude_app: AnthropicApp,
                                                             claude_server: LoopbackServer,
                                                             db_path: Path) -> None:
    stored, rows = drive(claude_spec(claude_server.url), db_path, n=1, budget=5)
    # the loopback server refuses, as the API does, a tool-use turn sent back without
    # its signed thinking block: finishing proves the history went back as text
    assert stored == 1 and rows[0]["end_reason"] == "finish", rows[0]["error"]
    steps = _steps(db_path)
    assert len(steps) == 3 and all(s["reasoning"] == THOUGHTS for s in steps)
    assert all(0 < s["reasoning_tokens"] <= s["output_tokens"] for s in steps)
    assert rows[0]["reasoning_tokens"] == sum(s["reasoning_tokens"] for s in steps)
    acts = [b for b in claude_app.requests if b["tool_choice"]["type"] == "auto"]
    forks = [b for b in claude_app.requests if b["tool_choice"]["type"] == "none"]
    assert len(acts) == 3 and len(forks) == 2
    assert all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} for b in acts)
    assert all(b["max_tokens"] == 1024 + 2048 for b in acts)  # Claude acts with 1,024
    assert all(b["thinking"] == {"type": "disabled"} for b in forks)
    sent = _requests_text(claude_app.requests)
    assert "Secret plan" not in sent and '"thinking"' not in sent.replace(
        '"type": "thinking"', "")  # no thinking block in any message
    assert "tool_use" not in sent and "tool_result" not in sent
    last = acts[-1]["messages"]
    assert last[1]["role"] == "assistant" and "Action: search" in last[1]["content"][0]["text"]


def test_claude_redacted_thinking_is_marked(claude_app: AnthropicApp, claude_server: LoopbackServer,
                                            db_path: Path) -> None:
    claude_app.thinking = ""
    stored, rows = drive(claude_spec(claude_server.url), db_path, n=1, budget=5)
    assert stored == 1 and rows[0]["end_reason"] == "finish", rows[0]["error"]
    assert {s["reasoning"] for s in _steps(db_path)} == {"[redacted thinking]"}
    assert "opaque-loopback" not in _requests_text(claude_app.requests)


def test_claude_without_thinking_keeps_native_tool_history(claude_app: AnthropicApp,
                                                           claude_server: LoopbackServer,
                                                           db_path: Path) -> None:
    spec = ModelSpec("claude", "anthropic", {"model": "c", "base_url": claude_server.url,
                                             "sampling": "default", "tools": "native", **FAST})
    stored, rows = drive(spec, db_path, n=1, budget=5)
    assert rows[0]["end_reason"] == "finish"
    assert all("thinking" not in b for b in claude_app.requests)
    assert "tool_result" in _requests_text(claude_app.requests)
    assert all(s["reasoning"] is None for s in _steps(db_path))


def test_steps_csv_exports_reasoning(openai_app: OpenAIApp, openai_server: LoopbackServer,
                                     db_path: Path, tmp_path: Path) -> None:
    drive(openai_spec(openai_server.url), db_path, n=1, budget=4)
    assert main(["--db", str(db_path), "export", str(tmp_path / "out"), "--resamples", "10"]) == 0
    with open(tmp_path / "out" / "steps.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["reasoning"] == THOUGHTS for r in rows)
    assert all(int(r["reasoning_tokens"]) > 0 for r in rows)


def test_lab_try_shows_a_truncated_reasoning_line(openai_app: OpenAIApp,
                                                  openai_server: LoopbackServer, db_path: Path,
                                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    openai_app.reasoning = "Long thought. " * 40
    config = tmp_path / "lab.toml"
    config.write_text(f'[models.qwen-think]\nbackend = "openai"\nmodel = "m"\n'
                      f'endpoints = ["{openai_server.url}/v1"]\nthinking = true\n'
                      f'thinking_budget = 256\ntimeout_s = 30\n', encoding="utf-8")
    code = main(["--db", str(db_path), "--config", str(config), "try", "--model", "qwen-think",
                 "--condition", "none", "--regime", "clean", "--question", "demo-001",
                 "--budget", "3"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = [ln for ln in out.splitlines() if ln.startswith("  reasoning (")]
    assert len(lines) == 2 and all(ln.endswith("…") and len(ln) < 200 for ln in lines)
    assert "\x1b" not in out  # dim styling is dropped off a terminal
    assert "reasoning)" in out  # summary: tokens of which reasoning


def test_step_lines_without_reasoning_have_no_reasoning_line() -> None:
    step = Step(t=1, raw="Action: finish[x]", action="finish", argument="x")
    assert not any("reasoning" in ln for ln in step_lines(step))
    step.reasoning, step.reasoning_tokens = "short", 2
    # plain text: every printer shows its lines inert, so a style's escape would print as
    # the text "\x1b[2m" (the console's screens dim the same line themselves)
    assert step_lines(step)[1] == "  reasoning (2 tokens): short"


@pytest.mark.parametrize("text, clean, reasoning", [
    ("<think>cut off before the end", "", "cut off before the end"),
    ("Thought: a\n<think>late", "Thought: a", "late"),
    ("<think>x</think>Thought: y", "Thought: y", "x"),
])
def test_split_reasoning_never_leaves_reasoning_in_the_text(text: str, clean: str, reasoning: str
                                                           ) -> None:
    assert split_reasoning(text) == (clean, reasoning)


def test_estimate_splits_output_tokens_by_characters() -> None:
    assert estimate_reasoning_tokens(100, "a" * 300, "b" * 100) == 75
    assert estimate_reasoning_tokens(100, "", "b") == 0
    assert estimate_reasoning_tokens(3, "a" * 10_000, "") == 3


@pytest.mark.parametrize("body, error", [
    ('backend = "openai"\nmodel = "m"\nendpoints = ["http://a"]\nthinking_budget = 100',
     "thinking_budget is set but thinking is not true"),
    ('backend = "openai"\nmodel = "m"\nendpoints = ["http://a"]\nthinking = true\n'
     'thinking_budget = "lots"', "thinking_budget must be an integer"),
    ('backend = "anthropic"\nmodel = "c"\nthinking = true',
     "thinking = true needs thinking_budget"),
    ('backend = "anthropic"\nmodel = "c"\nthinking = true\nthinking_budget = 512',
     r"thinking_budget must be in \[1024, 10000000\] tokens"),
    ('backend = "anthropic"\nmodel = "c"\nthinking = true\nthinking_budget = 2048\n'
     'sampling = { temperature = 0.5 }', "extended thinking accepts no temperature"),
])
def test_registry_validates_thinking(tmp_path: Path, body: str, error: str) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(f"[models.x]\n{body}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=error):
        load_registry(path)


def test_registry_accepts_thinking_budget_and_hashes_it(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    path.write_text('[models.c]\nbackend = "anthropic"\nmodel = "c"\nthinking = true\n'
                    'thinking_budget = 4096\n', encoding="utf-8")
    spec = load_registry(path)["c"]
    assert spec.spec()["thinking_budget"] == 4096 and spec.spec()["thinking"] is True


def test_lab_tail_of_a_finished_episode_shows_reasoning(openai_app: OpenAIApp,
                                                        openai_server: LoopbackServer,
                                                        db_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, rows = drive(openai_spec(openai_server.url), db_path, n=1, budget=4)
    capsys.readouterr()
    assert main(["--db", str(db_path), "tail", str(rows[0]["id"])]) == 0
    out = capsys.readouterr().out
    assert out.count("  reasoning (") == 2 and "Secret plan" in out
    assert f"({rows[0]['reasoning_tokens']} reasoning)" in out
