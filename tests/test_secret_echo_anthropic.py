"""A Claude reply that echoes the API key is stored with the key as ***, as an OpenAI
reply is (tests/test_secret_echo.py runs the whole path for the openai backend)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.demo_data import demo_questions
from core.models.base import EpisodeView
from core.models.registry import make_client
from tests.helpers.backends import ANTHROPIC_KEY, anthropic_spec
from tests.servers.anthropic_server import AnthropicApp
from tests.servers.http import LoopbackServer


def test_a_claude_reply_echoing_the_api_key_keeps_it_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)

    def echo(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "text", "text": f"Thought: your key is {ANTHROPIC_KEY}\n"
                                         f"Action: finish[{ANTHROPIC_KEY}]"}]

    app = AnthropicApp(responder=echo)
    with LoopbackServer(app) as server:
        client = make_client(anthropic_spec(server.url))

        async def once() -> str:
            session = client.start(EpisodeView(demo_questions()[0], 0, 4))
            gen = await session.generate([{"role": "user", "content": "Question: ?"}],
                                         kind="act", max_tokens=64)
            return gen.text

        text = asyncio.run(once())
    assert "Action: finish[" in text  # the reply itself came back
    assert ANTHROPIC_KEY not in text and "***" in text
