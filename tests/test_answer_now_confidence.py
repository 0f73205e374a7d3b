"""The answer-now branch's confidence request is a named option (`lab replay answer-now
--confidence`): it changes only the branch's last turn, and its probes are stored apart
from the paper's branch at the same decision point (never one taken for the other)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlite_utils import Database

import prompts
from console.cli import cli
from core.models.base import ModelClient
from core.models.registry import make_client
from core.probes import ANSWER_NOW, ANSWER_NOW_CONFIDENCE, decision_points, messages_for
from core.store import probes as probe_rows
from jobs.kinds.replay import custom_id, replay_questions, request_from
from tests.helpers.backends import ANTHROPIC_KEY, anthropic_spec, openai_spec
from tests.helpers.cli import lab as cli_lab
from tests.helpers.cli import one_error
from tests.helpers.probes import FINISH, SEARCH, scripted_episode
from tests.servers import AnthropicApp, LoopbackServer, OpenAIApp

ASKED_REPLY = "Thought: I answer.\nAction: finish\nAction Input: Lake Orrin\nConfidence: 80"
PLAIN_REPLY = "Thought: I answer.\nAction: finish\nAction Input: Lake Orrin"


def _answers_as_asked(messages: Sequence[dict[str, Any]]) -> str:
    """States a confidence only when the request asks for one."""
    asked = prompts.load("answer_now_confidence") in str(messages[-1].get("content"))
    return ASKED_REPLY if asked else PLAIN_REPLY


@pytest.fixture
def app() -> OpenAIApp:
    return OpenAIApp(responder=_answers_as_asked)


@pytest.fixture
def server(app: OpenAIApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app, hang_s=5) as srv:
        yield srv


def _job(db: Database, confidence: bool, batch: bool = False) -> dict[str, Any]:
    cell_id, qid = db.conn.execute("SELECT cell_id, question_id FROM episodes").fetchone()
    request = request_from("answer-now", "r", "every", batch=batch, confidence=confidence)
    return {"id": 1, "cell_id": cell_id, "question_ids": [qid], "params": request.params()}


def _replay(db: Database, client: ModelClient, confidence: bool, batch: bool = False) -> int:
    return asyncio.run(replay_questions(db, _job(db, confidence, batch), client, 1,
                                        batch_poll_s=0.01))


def _last(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def test_the_option_appends_only_the_confidence_line_and_is_stored_apart(app: OpenAIApp,
                                                                         server: LoopbackServer,
                                                                         db_path: Path) -> None:
    db, eid, _ = scripted_episode(db_path, "none", "persistent", [SEARCH] * 3 + [FINISH])
    ep = probe_rows.recorded_episode(db, eid)
    points = decision_points(ep)
    assert len(points) == 3
    client = make_client(openai_spec(server.url))
    line = prompts.load("answer_now_confidence")
    # the default: the paper's branch, exactly the forced-finish fork, no confidence line
    assert _replay(db, client, confidence=False) == 3
    plain = app.requests[:]
    assert [b["messages"] for b in plain] == [messages_for(ep, t, ANSWER_NOW) for t in points]
    assert all(line not in _last(b) for b in plain)
    # the option: the same request with one more line on the last turn, nothing else
    assert _replay(db, make_client(openai_spec(server.url)), confidence=True) == 3
    asked = app.requests[3:]
    assert len(asked) == 3
    for p, a in zip(plain, asked):
        assert a["messages"][:-1] == p["messages"][:-1]
        assert _last(a) == _last(p) + "\n" + line
        same = ("messages", "seed")  # a derived seed follows the messages
        assert {k: v for k, v in a.items() if k not in same} == \
            {k: v for k, v in p.items() if k not in same}
    # both variants stored for every decision point, each with its own reply
    rows = db.conn.execute("SELECT t, kind, confidence, answer FROM probes WHERE episode_id = ? "
                           "ORDER BY t, kind", (eid,)).fetchall()
    assert rows == [(t, kind, conf, "Lake Orrin") for t in points
                    for kind, conf in ((ANSWER_NOW, None), (ANSWER_NOW_CONFIDENCE, 0.8))]
    # neither is asked again, and neither counts as the other's
    assert _replay(db, make_client(openai_spec(server.url)), confidence=True) == 0
    assert _replay(db, make_client(openai_spec(server.url)), confidence=False) == 0
    assert app.calls == 6


def test_the_batch_path_sends_the_confidence_request(monkeypatch: pytest.MonkeyPatch, db_path: Path
                                                    ) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    batch_app = AnthropicApp(responder=lambda body: [{"type": "text", "text": ASKED_REPLY}])
    db, eid, _ = scripted_episode(db_path, "none", "persistent", [SEARCH] * 2 + [FINISH])
    ep = probe_rows.recorded_episode(db, eid)
    points = decision_points(ep)
    with LoopbackServer(batch_app, hang_s=5) as srv:
        assert _replay(db, make_client(anthropic_spec(srv.url)), True, batch=True) == 2
    sent = {r["custom_id"]: r["params"] for b in batch_app.batches.values()
            for r in b["requests"]}
    assert set(sent) == {custom_id(eid, t, ANSWER_NOW_CONFIDENCE) for t in points}
    for t in points:
        body = sent[custom_id(eid, t, ANSWER_NOW_CONFIDENCE)]
        assert _last(body) == messages_for(ep, t, ANSWER_NOW)[-1]["content"] + "\n" + \
            prompts.load("answer_now_confidence")
    assert db.conn.execute("SELECT count(*) FROM probes WHERE kind = ? AND confidence = 0.8",
                           (ANSWER_NOW_CONFIDENCE,)).fetchone()[0] == 2


def lab(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def test_lab_replay_confidence_on_the_sims_and_the_controllers_read_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lab.db"
    for args in (("init",),
                 ("sets", "create", "d8", "--dataset", "demo", "--n", "8", "--seed", "1"),
                 ("enqueue", "--models", "sim-never", "--conditions", "none", "--regimes",
                  "persistent", "--set", "d8", "--run", "pilot"),
                 ("worker", "--until-idle")):
        r = lab(db, *args)
        assert r.exit_code == 0, r.output
    for what in ("judgments", "beliefs"):  # one error line, nothing queued
        code, out, err = cli_lab(capsys, "--db", db, "replay", what, "--run", "pilot",
                                 "--confidence")
        assert out == ""
        one_error(code, err, "--confidence applies to `lab replay answer-now` only")
    conn = sqlite3.connect(db)
    r = lab(db, "replay", "answer-now", "--run", "pilot", "--confidence", "--dry-run",
            "--json")
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["kind"] == ANSWER_NOW_CONFIDENCE and plan["calls"] > 0
    for confidence in ((), ("--confidence",)):
        r = lab(db, "replay", "answer-now", "--run", "pilot", *confidence)
        assert r.exit_code == 0 and "queued" in r.stdout, r.output
        assert lab(db, "worker", "--until-idle").exit_code == 0
    assert conn.execute("SELECT count(*) FROM jobs WHERE kind = 'replay'").fetchone()[0] == 2
    counts = dict(conn.execute("SELECT kind, count(*) FROM probes GROUP BY kind").fetchall())
    assert counts == {ANSWER_NOW: plan["calls"], ANSWER_NOW_CONFIDENCE: plan["calls"]}
    params = {json.loads(p)["kind"] for (p,) in conn.execute(
        "SELECT params FROM jobs WHERE kind = 'replay'")}
    assert params == {ANSWER_NOW, ANSWER_NOW_CONFIDENCE}
    result = lab(db, "results", "controllers", "--format", "json")
    assert result.exit_code == 0, result.output
    assert "branches asked for a confidence" in result.stdout
    assert "asked without a confidence request" not in result.stdout
