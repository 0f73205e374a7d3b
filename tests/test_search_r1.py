"""Search-R1's prompt format: the tag parser, the prompt files it selects, and real episodes
against a loopback OpenAI server that answers in <search>/<answer> tags under every condition."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import prompts
from core import store
from core.conditions import ARMS
from core.errors import ConfigError
from core.models.registry import ModelSpec, load_registry
from core.parser import ParsedAction, parse_reply, parse_search_r1
from core.prompt_set import PromptSet
from tests.servers import LoopbackServer, OpenAIApp
from tests.servers.drive import drive

# no call may time out on a loaded machine: retries come only from injected faults
FAST = {"timeout_s": 30.0, "max_retries": 1, "backoff_s": 0.01, "backoff_max_s": 0.05}


# --------------------------------------------------------------------------- parser


@pytest.mark.parametrize("reply, expected", [
    ("<think>I need the director.</think>\n<search> Soul Food film </search>",
     ParsedAction("search", "Soul Food film", "I need the director.")),
    ("<think>Known.</think><answer> George Tillman Jr. </answer>",
     ParsedAction("finish", "George Tillman Jr.", "Known.")),
    # generation stopped at </search>: the open tag reads to the end
    ("<think>Look it up.</think>\n<search> Soul   Food\n", ParsedAction("search", "Soul Food",
                                                                     "Look it up.")),
    # a tag inside the reasoning is not an action; the first real one wins
    ("<think>maybe <answer>x</answer></think><search>Tillman</search><answer>y</answer>",
     ParsedAction("search", "Tillman", "maybe x")),
    ("<backup_search>Soul Food</backup_search>", ParsedAction("backup_search", "Soul Food", "")),
    ("DECISION: ANSWER_NOW\n<answer>Paris</answer><information>made up</information>",
     ParsedAction("finish", "Paris", "", "ANSWER_NOW")),
    ("<answer></answer>", ParsedAction("finish", "", "")),
    ("<ANSWER>SUPPORTS</ANSWER>", ParsedAction("finish", "SUPPORTS", "")),
])
def test_parse_search_r1(reply: str, expected: ParsedAction) -> None:
    assert parse_search_r1(reply) == expected
    assert parse_reply(reply, "search_r1") == expected


@pytest.mark.parametrize("reply", [
    "", "I think the answer is Paris.", "<search>   </search>", "<think><search>x</search></think>",
    "Thought: go\nAction: search\nAction Input: Paris",  # ReAct text is not this format
])
def test_parse_search_r1_unreadable(reply: str) -> None:
    assert parse_search_r1(reply) is None


def test_parse_reply_keeps_react_for_react_models() -> None:
    text = "Thought: go\nAction: search\nAction Input: Paris"
    assert parse_reply(text) == ParsedAction("search", "Paris", "go")
    assert parse_reply("<search>Paris</search>") is None


# --------------------------------------------------------------------------- prompt selection


def test_prompt_set_names() -> None:
    r1, r1_fever = PromptSet("hotpotqa", "search_r1"), PromptSet("fever", "search_r1")
    assert r1.name("system") == "search_r1_system" and r1.name("observation") == \
        "search_r1_observation"
    assert r1_fever.name("system") == "search_r1_fever_system"
    assert r1_fever.name("question") == "fever_question"  # the task decides the rest
    assert r1.name("question") == "question" and r1.name("call_cost") == "call_cost"
    assert PromptSet().name("system") == "system"
    assert PromptSet("fever").name("budget") == "budget"  # budget and cost are unchanged
    assert "<information>" in r1.load("observation")
    with pytest.raises(ConfigError, match="prompt_format"):
        PromptSet("hotpotqa", "chatml")


def test_registry_accepts_prompt_format_and_refuses_others(tmp_path: Path) -> None:
    toml = tmp_path / "lab.toml"
    base = 'backend = "openai"\nmodel = "m"\nendpoints = ["http://127.0.0.1:1/v1"]\n'
    toml.write_text(f'[models.r1]\n{base}prompt_format = "search_r1"\n')
    assert load_registry(toml)["r1"].spec()["prompt_format"] == "search_r1"
    toml.write_text(f'[models.r1]\n{base}prompt_format = "tags"\n')
    with pytest.raises(ConfigError, match="prompt_format must be one of react, search_r1"):
        load_registry(toml)


# --------------------------------------------------------------------------- episodes

_QUESTION_RE = re.compile(r"Question:\s*(.+)")


def r1_responder(messages: Sequence[dict[str, Any]]) -> str:
    """A Search-R1-like model: two searches, then an answer from the last document."""
    last = str(messages[-1]["content"])
    if "USEFUL or USELESS" in last:
        return "USELESS"
    if prompts.load("search_r1_forced_observation") in last:
        return "<think>I must answer now.</think>\n<answer> a guess </answer>"
    searches = sum(m["role"] == "assistant" for m in messages)
    if searches < 2:
        match = _QUESTION_RE.search(str(messages[0]["content"]))
        query = match.group(1) if match else "the question"
        return f"<think>I lack this knowledge.</think>\n<search> {query} </search>"
    info = last.split("<information>", 1)[-1].split()
    return f"<think>The document answers it.</think>\n<answer> {' '.join(info[:2])} </answer>"


@pytest.fixture
def app() -> OpenAIApp:
    return OpenAIApp(responder=r1_responder)


@pytest.fixture
def server(app: OpenAIApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app, hang_s=5) as srv:
        yield srv


def r1_spec(url: str) -> ModelSpec:
    return ModelSpec("search-r1", "openai", {"model": "search-r1", "endpoints": [f"{url}/v1"],
                                             "sampling": "default", "prompt_format": "search_r1",
                                             "concurrency": 2, **FAST})


def _conditions() -> list[str]:
    return [f"{name}:rate=0.5" if name == "random_rule" else name for name in ARMS]


def test_search_r1_runs_under_every_condition(app: OpenAIApp, server: LoopbackServer, db_path: Path
                                             ) -> None:
    for condition in _conditions():
        stored, _ = drive(r1_spec(server.url), db_path, n=1, condition=condition,
                          regime="persistent", budget=4)
        assert stored == 1, condition
    db = store.connect(db_path)
    rows = [dict(r) for r in db.query(
        "SELECT e.end_reason, e.format_failures, e.answered, c.condition FROM episodes e "
        "JOIN cells c ON c.id = e.cell_id")]
    assert len(rows) == len(ARMS)
    assert all(r["format_failures"] == 0 and r["answered"] for r in rows), rows
    acts = [r for r in app.requests if r["max_tokens"] not in (8, 160)]  # no forks, decisions
    assert all(r["stop"] == ["</search>", "</backup_search>", "<information>"] for r in acts)
    first = acts[0]["messages"]
    # as it was trained: its instructions and the question in one user turn, no system
    assert [m["role"] for m in first] == ["user"]
    assert "<search> your query </search>" in first[0]["content"]
    assert "Action Input" not in first[0]["content"]  # no ReAct format in its prompt
    assert "\n\nQuestion: " in first[0]["content"]
    later = acts[2]["messages"]
    # its <think> is its thought: kept in the history it was trained on, and read as the thought
    assert later[1]["content"].startswith("<think>I lack this knowledge.</think>\n<search>")
    assert later[2]["content"].startswith("<information>") and later[2]["content"].endswith(
        "</information>")
    steps = [dict(r) for r in db.query("SELECT action, thought FROM steps WHERE t = 1")]
    assert {(s["action"], s["thought"]) for s in steps} == {("search", "I lack this knowledge.")}


def test_search_r1_forced_turn_uses_its_own_instruction(app: OpenAIApp, server: LoopbackServer,
                                                        db_path: Path) -> None:
    stored, rows = drive(r1_spec(server.url), db_path, n=1, condition="enforced_rule:k=1",
                         regime="persistent", budget=4)
    assert stored == 1 and rows[0]["answered"] and rows[0]["forced_turns"] == 1
    instruction = prompts.load("search_r1_forced_observation")
    forced = [r for r in app.requests if instruction in r["messages"][-1]["content"]
              and r["max_tokens"] != 8]
    assert forced and "inside <answer> and </answer>" in forced[0]["messages"][-1]["content"]
    assert all(m["role"] != "system" for m in forced[0]["messages"])
