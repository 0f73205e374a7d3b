"""The side-channel reading as a condition knob: the harness's "contains" reading by
default, the stricter first-word rule as the named option `judge_parse = "first_word"`.

An enforced-rule episode against a loopback server whose model wraps its verdict in a
sentence ("The LAST observation was USELESS.") shows the difference end to end: read as
the paper's harness reads it, the rule fires at the fifth result; read by first word,
every reply is unparsed, the streak resets each time and the rule never fires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from core.conditions import Condition, parse_condition
from core.demo_data import demo_questions
from core.errors import ConfigError
from core.models.base import EpisodeView
from core.models.registry import ModelSpec, make_client
from core.react import run_episode
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, setup_for
from tests.helpers.backends import FAST
from tests.servers.http import LoopbackServer
from tests.servers.openai_server import SIDE_CHANNEL_MARK, OpenAIApp


def test_knob_parses_labels_and_changes_the_hash_only_when_not_default() -> None:
    default = parse_condition("enforced_rule")
    assert default.judge_parse == "contains"
    assert "judge_parse" not in default.spec()  # stored specs at the default keep their hash
    strict = parse_condition("enforced_rule:judge_parse=first_word")
    assert strict.spec()["judge_parse"] == "first_word"
    assert strict.label() == "enforced_rule:judge_parse=first_word"
    assert strict.spec_hash() != default.spec_hash()
    assert parse_condition("enforced_rule:judge_parse=contains").spec_hash() == default.spec_hash()
    assert parse_condition("none:judge=true,judge_parse=first_word").label() == \
        "none:judge=true,judge_parse=first_word"
    with pytest.raises(ConfigError, match="judge_parse must be contains or first_word"):
        parse_condition("enforced_rule:judge_parse=anywhere")
    with pytest.raises(ConfigError, match="judge_parse must be one of"):
        Condition("none", judge_parse="anywhere")


def _text(content: Any) -> str:
    return content if isinstance(content, str) else ""


def wrapped_verdicts(messages: Sequence[dict[str, Any]]) -> str:
    """A model that judges every result useless in a sentence and otherwise searches."""
    if SIDE_CHANNEL_MARK in _text(messages[-1].get("content")):
        return "The LAST observation was USELESS."
    return "Thought: Nothing yet, search again.\nAction: search\nAction Input: capital of France"


def run_enforced(condition: str) -> list[Any]:
    """One persistent-regime enforced-rule episode (budget 8); its steps."""
    questions = demo_questions()
    app = OpenAIApp(responder=wrapped_verdicts)
    with LoopbackServer(app) as server:
        spec = ModelSpec("wrapped", "openai", {"model": "loopback-model", "concurrency": 1,
                                               "endpoints": [f"{server.url}/v1"], **FAST})
        cell = CellSpec(spec, parse_condition(condition), parse_regime("persistent"), None, 8, 0)
        client = make_client(spec)
        setup = setup_for(cell, questions[0], ForeignPool(questions), client)
        view = EpisodeView(question=questions[0], seed=setup.seed, budget=setup.budget)

        async def go() -> Any:
            try:
                return await run_episode(setup, client.start(view), view=view)
            finally:
                close = getattr(client, "aclose", None)
                if close is not None:
                    await close()

        result = asyncio.run(go())
    assert result.error is None
    return [s for s in result.steps if s.judgment_raw is not None]


def test_a_verdict_wrapped_in_a_sentence_fires_the_rule_as_the_harness_reads_it() -> None:
    judged = run_enforced("enforced_rule")
    assert [s.judgment for s in judged][:5] == ["USELESS"] * 5
    assert [s.streak for s in judged][:5] == [1, 2, 3, 4, 5]
    strict = run_enforced("enforced_rule:judge_parse=first_word")
    assert strict and all(s.judgment is None for s in strict)
    assert all(s.streak == 0 for s in strict)
