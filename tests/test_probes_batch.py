"""Claude `--batch` replays through the Message Batches API, on a loopback stand-in."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from core.models.anthropic import BATCH_DISCOUNT
from core.models.registry import make_client
from core.probes import decision_points, messages_for
from core.store import probes as probe_rows
from jobs.kinds.replay import ReplayRequest, custom_id, replay_batched, replay_questions
from tests.helpers import reads
from tests.helpers.backends import ANTHROPIC_KEY as KEY
from tests.helpers.backends import ANTHROPIC_PRICES as PRICES
from tests.helpers.backends import anthropic_spec
from tests.helpers.probes import FINISH, SEARCH, scripted_episode
from tests.servers import AnthropicApp, LoopbackServer


def _says(text: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def respond(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "text", "text": text}]
    return respond


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.fixture
def app() -> AnthropicApp:
    return AnthropicApp(responder=_says("Action: finish\nAction Input: Lake Orrin\n"
                                        "Confidence: 70"))


@pytest.fixture
def server(app: AnthropicApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app, hang_s=5) as srv:
        yield srv


def _job(db: Database, kind: str, batch: bool = True) -> dict[str, Any]:
    cell_id, qid = db.conn.execute("SELECT cell_id, question_id FROM episodes").fetchone()
    return {"id": 7, "cell_id": cell_id, "question_ids": [qid],
            "params": ReplayRequest("r", kind, batch=batch).params()}


def _count(db: Database, where: str = "1") -> int:
    return db.conn.execute(f"SELECT count(*) FROM probes WHERE {where}").fetchone()[0]


def test_batch_partial_results_stored_and_the_rest_asked_again(app: AnthropicApp,
                                                               server: LoopbackServer, db_path: Path
                                                              ) -> None:
    db, eid, _ = scripted_episode(db_path, "none", "persistent", [SEARCH] * 4 + [FINISH])
    ep = probe_rows.recorded_episode(db, eid)
    points = decision_points(ep)
    assert len(points) == 4
    app.batch_polls = 2
    app.batch_outcomes = {custom_id(eid, points[0], "answer_now"): "errored",
                          custom_id(eid, points[1], "answer_now"): "expired"}
    client = make_client(anthropic_spec(server.url))
    todo = [(ep, t) for t in points]
    # one round: two of four stored, the other two stored with their error
    n = asyncio.run(replay_batched(db, _job(db, "answer_now"), client, todo, "answer_now",
                                   poll_s=0.01, rounds=1, max_requests=3))
    assert n == 4 and len(app.batches) == 2  # 3 + 1 requests
    assert _count(db, "error IS NULL") == 2
    assert {r[0] for r in db.conn.execute("SELECT error FROM probes WHERE error IS NOT NULL")
            } == {"expired", "errored: api_error: Internal server error"}
    assert all(b["polls"] >= 2 for b in app.batches.values())
    # the batch requests are the forks a direct probe would send, no tools declared
    sent = {r["custom_id"]: r["params"] for b in app.batches.values() for r in b["requests"]}
    for t in points:
        body = sent[custom_id(eid, t, "answer_now")]
        assert "tools" not in body  # text-only ReAct: no tool can be called
        texts = [b["text"] for turn in body["messages"] for b in turn["content"]]
        assert texts[-1] == messages_for(ep, t, "answer_now")[-1]["content"]
    # half price: the stored cost is half of what the reported usage costs directly
    from core.models.cost import Prices
    prices = Prices.from_params({"price_per_mtok": PRICES})
    usage = {r["custom_id"]: r["result"]["message"]["usage"] for b in app.batches.values()
             for r in b["results"] if r["result"]["type"] == "succeeded"}
    for cid, u in usage.items():
        m = re.match(r"e(\d+)-t(\d+)-", cid)
        assert m is not None
        (cost,) = db.conn.execute("SELECT cost_usd FROM probes WHERE episode_id = ? AND t = ?",
                                  (int(m.group(1)), int(m.group(2)))).fetchone()
        read, write = u["cache_read_input_tokens"], u["cache_creation_input_tokens"]
        direct = prices.dollars(u["input_tokens"] + read + write, u["output_tokens"], read, write)
        assert cost == pytest.approx(BATCH_DISCOUNT * direct) and cost > 0
    # the job through replay_questions: only the two missing probes are sent, in one batch
    app.batch_outcomes = {}
    assert asyncio.run(replay_questions(db, _job(db, "answer_now"), client, 4,
                                       batch_poll_s=0.01)) == 2
    assert _count(db, "error IS NULL") == 4 and _count(db) == 4
    assert len(app.batches) == 3 and len(app.batches["msgbatch_0003"]["requests"]) == 2
    rows = reads.episode_probes(db, eid)
    assert {r["answer"] for r in rows} == {"Lake Orrin"} and {r["confidence"] for r in rows} == {
        0.7}


def test_a_resumed_job_polls_the_batch_it_submitted_instead_of_paying_again(
        app: AnthropicApp, server: LoopbackServer, db_path: Path) -> None:
    db, eid, _ = scripted_episode(db_path, "none", "persistent", [SEARCH] * 3 + [FINISH])
    ep = probe_rows.recorded_episode(db, eid)
    todo = [(ep, t) for t in decision_points(ep)]
    app.batch_polls = 10**6  # never ends while the first worker polls
    client = make_client(anthropic_spec(server.url))
    polls = []

    def stop_after_two() -> bool:
        polls.append(1)
        return len(polls) >= 2

    n = asyncio.run(replay_batched(db, _job(db, "judgment"), client, todo, "judgment",
                                   stop_after_two, poll_s=0.01))
    assert n == 0 and _count(db) == 0 and len(app.batches) == 1
    assert probe_rows.open_batches(db, 7) == ["msgbatch_0001"]
    app.batches["msgbatch_0001"]["ends_after"] = 0  # it has ended meanwhile
    app.responder = _says("USELESS")
    job = _job(db, "judgment")
    assert asyncio.run(replay_questions(db, job, client, 4)) == 3
    assert len(app.batches) == 1 and app.results_fetched == 1  # polled, not submitted again
    assert probe_rows.open_batches(db, 7) == []
    assert [r["judgment"] for r in reads.episode_probes(db, eid)] == ["USELESS"] * 3
    assert asyncio.run(replay_questions(db, job, client, 4)) == 0 and len(app.batches) == 1


def test_batch_flag_is_ignored_by_other_backends_and_halves_only_claude_in_the_plan(db_path: Path
                                                                                   ) -> None:
    from core.models.registry import ModelSpec, builtin_models
    from jobs.kinds.replay import _discount

    request = ReplayRequest("r", "answer_now", batch=True)
    assert _discount(request, ModelSpec("c", "anthropic", {"price_per_mtok": PRICES})) == 0.5
    assert _discount(request, builtin_models()["sim-own5"]) == 1.0
    assert _discount(ReplayRequest("r", "answer_now"),
                     ModelSpec("c", "anthropic", {"price_per_mtok": PRICES})) == 1.0
    db, eid, _ = scripted_episode(db_path, "none", "persistent", [SEARCH] * 2 + [FINISH])
    from core.models.sim import SimClient  # noqa: F401  (a sim takes the direct path)
    client = make_client(builtin_models()["sim-own5"])
    assert asyncio.run(replay_questions(db, _job(db, "judgment"), client, 4)) == 2
