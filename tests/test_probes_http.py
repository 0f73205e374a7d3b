"""Replay over HTTP: probes against the loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from core.models.registry import make_client
from core.probes import decision_points, messages_for
from core.store import probes as probe_rows
from jobs.kinds.replay import ReplayRequest, replay_questions
from tests.helpers import reads
from tests.helpers.backends import openai_spec
from tests.helpers.probes import FINISH, SEARCH, scripted_episode
from tests.servers import Fault, LoopbackServer, OpenAIApp


@pytest.fixture
def app() -> OpenAIApp:
    return OpenAIApp()


@pytest.fixture
def server(app: OpenAIApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app, hang_s=5) as srv:
        yield srv


def _job(db: Database, kind: str, refresh: bool = False) -> dict[str, Any]:
    cell_id, qid = db.conn.execute("SELECT cell_id, question_id FROM episodes").fetchone()
    return {"id": 1, "cell_id": cell_id, "question_ids": [qid],
            "params": ReplayRequest("r", kind, refresh=refresh).params()}


def _replay(db: Database, server: LoopbackServer, kind: str, concurrency: int = 4,
            refresh: bool = False) -> int:
    client = make_client(openai_spec(server.url))
    return asyncio.run(replay_questions(db, _job(db, kind, refresh), client, concurrency))


def test_judgment_forks_sent_are_the_recorded_history_and_replay_is_idempotent(
        app: OpenAIApp, server: LoopbackServer, db_path: Path) -> None:
    db, eid, scripted = scripted_episode(db_path, "none:judge=true", "persistent",
                                [SEARCH] * 4 + [FINISH], judgments=["USEFUL"] * 4)
    ep = probe_rows.recorded_episode(db, eid)
    points = decision_points(ep)
    assert _replay(db, server, "judgment") == 0 and app.calls == 0  # judged in-run already
    assert _replay(db, server, "judgment", refresh=True) == len(points) == 4
    assert app.calls == 4
    sent = sorted(([(m["role"], m["content"]) for m in body["messages"]] for body in
                   app.requests), key=len)
    in_run = [m for kind, m in scripted.calls if kind == "judge"]  # what the agent's judge saw
    assert sent == [[(m["role"], m["content"]) for m in fork] for fork in in_run]
    assert sent == [[(m["role"], m["content"]) for m in messages_for(ep, t, "judgment")]
                    for t in points]
    rows = reads.episode_probes(db, eid)
    assert [r["judgment"] for r in rows] == ["USELESS"] * 4  # the server's, not the run's
    assert db.conn.execute("SELECT count(*) FROM probes WHERE source = 'replay' AND error "
                           "IS NULL").fetchone()[0] == 4
    assert _replay(db, server, "judgment", refresh=True) == 0 and app.calls == 4  # not twice


def test_a_5xx_and_refused_burst_is_retried_then_recorded(app: OpenAIApp, server: LoopbackServer,
                                                          db_path: Path) -> None:
    db, eid, _ = scripted_episode(db_path, "none", "persistent", [SEARCH] * 3 + [FINISH])
    app.script.push(Fault("status", status=503)).push(Fault("reset"))
    assert _replay(db, server, "answer_now", concurrency=1) == 3
    assert app.calls == 3 + 2  # the first probe's two failed attempts were retried
    rows = reads.episode_probes(db, eid)
    assert all(r["error"] is None and r["parse_ok"] for r in rows)
    assert all(r["answer"] and r["confidence"] is None for r in rows)  # none stated: missing
    # a burst longer than the retries: the probe is recorded with its error, then replaced
    db.conn.execute("DELETE FROM probes WHERE t = 2")
    db.conn.commit()
    app.script.push(Fault("status", status=500), times=3)
    assert _replay(db, server, "answer_now", concurrency=1) == 1
    (error,) = db.conn.execute("SELECT error FROM probes WHERE t = 2").fetchone()
    assert error and error.startswith("server_error")
    assert _replay(db, server, "answer_now", concurrency=1) == 1
    assert db.conn.execute("SELECT count(*) FROM probes WHERE error IS NULL").fetchone()[0] == 3
