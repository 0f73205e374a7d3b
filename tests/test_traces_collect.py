"""`lab traces collect` against a loopback OpenAI-compatible server.

The server answers the seed's JSON by depth (it counts the passages the prompt shows):
depth 0 a wrong answer, depths 1 and 3 the gold answer, depth 2 text that is not JSON.
Calls are counted server side. Collection stores 4 states per question through the
real queue and workers, asks nothing on a second run, stores the depth-2 replies as
missing (never coerced), labels answers with a judge model when asked, and a worker
killed with kill -9 loses and duplicates no state once another worker resumes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from core import store
from core.store import monitor, progress
from core.store.traces import TRACE_COLUMNS, load_traces
from core.traces import parse_answer, parse_judge
from tests.helpers.cli import dump_hash, lab, one_error
from tests.helpers.queue import lab_here, start_lab
from tests.servers import Fault, LoopbackServer, OpenAIApp

REGISTRY = """
[models.loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}/v1"]
concurrency = {slots}
timeout_s = 60
max_retries = {retries}
backoff_s = 0.05

[models.judge]
backend = "openai"
model = "loopback-judge"
endpoints = ["{url}/v1"]
concurrency = 4
timeout_s = 60
"""
PASSAGE = re.compile(r"^\[\d+\] ", re.MULTILINE)
DEPTH_OF = {0: 0, 4: 1, 7: 2, 10: 3}
"""Passages shown → depth, for the demo questions' 10 pages (slices of 4, 3 and 3)."""


class TraceServer:
    """A responder answering by depth, and counting answer and judge calls."""

    def __init__(self, golds: dict[str, str]) -> None:
        self.golds = golds
        self.answers = 0
        self.judged = 0
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        system, user = messages[0]["content"], messages[-1]["content"]
        if "boolean field: correct" in system:
            with self._lock:
                self.judged += 1
            return json.dumps({"correct": "Predicted answer: unknown" not in user})
        with self._lock:
            self.answers += 1
        question = user.split("Question: ", 1)[1].split("\n", 1)[0]
        depth = DEPTH_OF[len(PASSAGE.findall(user))]
        if depth == 2:
            return "I believe the answer is probably the first one."
        answer = "unknown" if depth == 0 else self.golds[question]
        return json.dumps({"answer": answer, "confidence": 20 + 20 * depth})


def _golds(db_path: Path) -> dict[str, str]:
    db = store.connect(db_path)
    try:
        return {q.question: q.answer for q in store.load_questions(db, dataset="demo")}
    finally:
        db.conn.close()


def _query(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def served(tmp_path: Path, capsys: pytest.CaptureFixture[str]
           ) -> Iterator[tuple[Path, Path, TraceServer, OpenAIApp]]:
    """(db, config, responder, app) with the demo set d6 and a loopback server."""
    db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
    assert lab(capsys, "--db", db, "init")[0] == 0
    assert lab(capsys, "--db", db, "sets", "create", "d6", "--dataset", "demo", "--n", "6",
               "--seed", "3")[0] == 0
    responder = TraceServer(_golds(db))
    app = OpenAIApp(responder=responder, record=False)
    with LoopbackServer(app) as server:
        config.write_text(REGISTRY.format(url=server.url, slots=4, retries=2))
        yield db, config, responder, app


def test_collect_stores_four_states_per_question_and_is_idempotent(
        served: tuple[Path, Path, TraceServer, OpenAIApp], capsys: pytest.CaptureFixture[str]
    ) -> None:
    db, config, responder, app = served
    before = dump_hash(db)
    code, out, err = lab(capsys, "--db", db, "--config", config, "traces", "collect", "--set",
                         "d6", "--models", "loop", "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert (plan["questions"], plan["models"], plan["depths"], plan["calls"]) == (6, 1, 4, 24)
    assert plan["per_model"]["loop"]["input_tokens"] > 0 and plan["jobs"] == 0
    assert dump_hash(db) == before and app.calls == 0  # a dry run writes and asks nothing
    code, out, err = lab(capsys, "--db", db, "--config", config, "traces", "collect", "--set",
                         "d6", "--models", "loop")
    assert code == 0 and "queued 1 job to ask 24 states" in out, err
    events = [r[0] for r in store.connect(db).conn.execute(
        "SELECT detail FROM events WHERE kind = 'traces'")]
    assert events == ["grid 1 run traces-d6: 1 trace job, 24 calls"], events  # the Dashboard's
    code, out, _ = lab(capsys, "--db", db, "--config", config, "status")
    assert "0/24 trace states" in out
    assert lab(capsys, "--db", db, "--config", config, "worker", "--until-idle")[0] == 0
    assert responder.answers == app.calls == 24 and responder.judged == 0
    code, out, _ = lab(capsys, "--db", db, "--config", config, "status")
    assert "24/24 trace states" in out and "done 1" in out
    opened = store.connect(db)
    (job,) = progress.job_rows(opened, 1)  # the console's Jobs view
    assert (job.unit, job.kind, job.expected, job.stored, job.errored) == ("states", "trace",
                                                                         24, 24, 0)
    assert monitor.job_errors(opened, 1) == {}  # no episodes to count for a trace job

    frame = load_traces(store.connect(db), runs=["traces-d6"])
    assert list(frame.columns) == list(TRACE_COLUMNS) and len(frame) == 24
    flagged = load_traces(store.connect(db), sets=["d6"], models=["loop"], new_evidence=True)
    assert list(flagged.columns) == [*TRACE_COLUMNS, "new_evidence"]
    assert flagged.groupby("depth")["new_evidence"].all().to_dict() == {
        0: False, 1: True, 2: True, 3: True}
    assert load_traces(store.connect(db), runs=["other"]).empty
    assert (frame.groupby("question_id")["depth"].apply(sorted) == [[0, 1, 2, 3]] * 6).all()
    assert set(frame["set_name"]) == {"d6"} and set(frame["model"]) == {"loop"}
    assert frame["error"].isna().all() and (frame["prompt_tokens"] > 0).all()
    by_depth = frame.groupby("depth")
    assert by_depth["parsed"].sum().to_dict() == {0: 6, 1: 6, 2: 0, 3: 6}
    missing = frame[frame["depth"] == 2]
    assert missing["answer"].isna().all() and missing["confidence"].isna().all()
    assert missing["correct"].isna().all()  # never coerced, never scored
    assert by_depth["correct"].sum().to_dict() == {0: 0, 1: 6, 2: 0, 3: 6}
    assert frame.loc[frame["depth"] == 3, "confidence"].eq(80.0).all()
    # one plan per question, the one every state records
    plans = dict(_query(db, "SELECT question_id, plan_sha256 FROM evidence_plans"))
    assert len(plans) == 6 and all(plans[r.question_id] == r.plan_sha256
                                   for r in frame.itertuples())
    raw = _query(db, "SELECT raw FROM traces WHERE depth = 2 LIMIT 1")[0][0]
    assert raw.startswith("I believe")  # the reply itself is kept for audit

    # idempotent: nothing queued, no call made
    code, out, _ = lab(capsys, "--db", db, "--config", config, "traces", "collect", "--set",
                       "d6", "--models", "loop")
    assert code == 0 and "nothing to queue" in out
    assert lab(capsys, "--db", db, "--config", config, "worker", "--until-idle")[0] == 0
    assert app.calls == 24
    assert _query(db, "SELECT count(*), count(DISTINCT question_id || depth) FROM traces") == [
        (24, 24)]


def test_judge_labels_are_stored_beside_the_scorer(
        served: tuple[Path, Path, TraceServer, OpenAIApp], capsys: pytest.CaptureFixture[str]
    ) -> None:
    db, config, responder, app = served
    code, _, err = lab(capsys, "--db", db, "--config", config, "traces", "collect", "--set",
                       "d6", "--models", "loop", "--judge", "judge", "--run", "judged")
    assert code == 0, err
    assert lab(capsys, "--db", db, "--config", config, "worker", "--until-idle")[0] == 0
    assert responder.answers == 24 and responder.judged == 18  # one per parsed answer
    rows = _query(db, "SELECT depth, correct, judge_correct, judge_model FROM traces "
                      "WHERE run = 'judged'")
    assert {(d, c, j, m) for d, c, j, m in rows} == {
        (0, 0, 0, "judge"), (1, 1, 1, "judge"), (2, None, None, None), (3, 1, 1, "judge")}


def test_a_failed_call_is_stored_errored_and_asked_again(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
    assert lab(capsys, "--db", db, "init")[0] == 0
    assert lab(capsys, "--db", db, "sets", "create", "d2", "--dataset", "demo", "--n", "2",
               "--seed", "5")[0] == 0
    responder = TraceServer(_golds(db))
    app = OpenAIApp(responder=responder, record=False)
    app.script.push(Fault("status", status=503), times=1)
    with LoopbackServer(app) as server:
        config.write_text(REGISTRY.format(url=server.url, slots=1, retries=0))
        for _ in range(2):
            assert lab(capsys, "--db", db, "--config", config, "traces", "collect", "--set",
                       "d2", "--models", "loop")[0] == 0
            assert lab(capsys, "--db", db, "--config", config, "worker", "--until-idle")[0] == 0
            if _query(db, "SELECT count(*) FROM traces WHERE error IS NOT NULL")[0][0]:
                assert app.calls == 8 and responder.answers == 7
        assert app.calls == 9  # the second collect asked the errored state only
    assert _query(db, "SELECT count(*), count(error) FROM traces") == [(8, 0)]


def test_retry_errored_asks_the_errored_states_again(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
    assert lab(capsys, "--db", db, "init")[0] == 0
    assert lab(capsys, "--db", db, "sets", "create", "d3", "--dataset", "demo", "--n", "3",
               "--seed", "5")[0] == 0
    responder = TraceServer(_golds(db))
    app = OpenAIApp(responder=responder, record=False)
    app.script.push(Fault("status", status=503), times=2)
    with LoopbackServer(app) as server:
        config.write_text(REGISTRY.format(url=server.url, slots=1, retries=0))
        assert lab(capsys, "--db", db, "--config", config, "traces", "collect", "--set", "d3",
                   "--models", "loop")[0] == 0
        assert lab(capsys, "--db", db, "--config", config, "worker", "--until-idle")[0] == 0
        assert app.calls == 12 and _query(db, "SELECT count(*) FROM traces WHERE error IS NOT "
                                              "NULL") == [(2,)]
        code, out, _ = lab(capsys, "--db", db, "--config", config, "status")
        assert "retry errored: lab retry --grid 1 --errored" in out
        code, out, err = lab(capsys, "--db", db, "--config", config, "retry", "--run",
                             "traces-d3", "--errored")
        assert code == 0 and "2 errored trace state(s) in 1 new trace job(s)" in out, err
        # asked again: the questions are held by the new job, nothing more is queued
        code, out, _ = lab(capsys, "--db", db, "--config", config, "retry", "--run",
                           "traces-d3", "--errored")
        assert code == 0 and "0 errored trace state(s) in 0 new trace job(s)" in out
        assert lab(capsys, "--db", db, "--config", config, "worker", "--until-idle")[0] == 0
        assert app.calls == 14  # the two errored states only
    assert _query(db, "SELECT count(*), count(error), count(DISTINCT question_id || depth) "
                      "FROM traces") == [(12, 0, 12)]
    assert _query(db, "SELECT kind, state, count(*) FROM jobs GROUP BY 1, 2") == [
        ("traces", "done", 2)]
    code, out, _ = lab(capsys, "--db", db, "--config", config, "retry", "--run", "traces-d3",
                       "--errored")
    assert code == 0 and "0 errored trace state(s)" in out


def test_refusals_are_one_line_and_write_nothing(served: tuple[Path, Path, TraceServer, OpenAIApp],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db, config, _, app = served
    before = dump_hash(db)
    for args, words in (
            (("--models", "nope"), ("unknown model 'nope'",)),
            (("--models", "loop", "--judge", "nope"), ("unknown model 'nope'",)),
            (("--models", "loop", "--threshold", "0"), ("--threshold",)),
            (("--models", "loop", "--run", " "), ("run name",)),
            (("--models", "loop", "--set", "missing"), ("missing",))):
        full = ["--set", "d6", *args] if "--set" not in args else list(args)
        for dry in ((), ("--dry-run",)):
            code, _, err = lab(capsys, "--db", db, "--config", config, "traces", "collect",
                               *full, *dry)
            one_error(code, err, *words)
    assert dump_hash(db) == before and app.calls == 0


def test_an_episode_run_is_not_reused_for_traces(served: tuple[Path, Path, TraceServer, OpenAIApp],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db, config, _, _ = served
    assert lab(capsys, "--db", db, "enqueue", "--models", "sim-own5", "--conditions", "none",
               "--regimes", "clean", "--set", "d6", "--run", "pilot")[0] == 0
    code, _, err = lab(capsys, "--db", db, "--config", config, "traces", "collect", "--set",
                       "d6", "--models", "loop", "--run", "pilot")
    one_error(code, err, "run 'pilot'", "another run name")


def test_parsing_is_strict() -> None:
    parsed = parse_answer('{"answer": "Paris", "confidence": 85}')
    assert parsed is not None and parsed.confidence == 85.0
    parsed = parse_answer('```json\n{"answer": "Paris", "confidence": 0}\n```')
    assert parsed is not None and parsed.answer == "Paris"
    for bad in ('{"answer": "Paris", "confidence": "85"}', '{"answer": "", "confidence": 5}',
                '{"answer": "Paris", "confidence": 101}', '{"answer": "P", "confidence": true}',
                '{"answer": "P", "confidence": 5, "why": "x"}', '{"answer": "P"}',
                'Paris (85%)', '', '{"answer": "P", "confidence": NaN}'):
        assert parse_answer(bad) is None, bad
    assert parse_judge('{"correct": true}') is True
    assert parse_judge('{"correct": "true"}') is None and parse_judge("yes") is None


def test_kill_minus_9_mid_collection_loses_and_duplicates_no_state(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
    assert lab(capsys, "--db", db, "init")[0] == 0
    assert lab(capsys, "--db", db, "sets", "create", "d10", "--dataset", "demo", "--n", "10",
               "--seed", "7")[0] == 0
    responder = TraceServer(_golds(db))
    app = OpenAIApp(responder=responder, record=False, delay_s=0.1)
    with LoopbackServer(app) as server:
        config.write_text(REGISTRY.format(url=server.url, slots=2, retries=2))
        out = lab_here(db, config, "traces", "collect", "--set", "d10", "--models", "loop")
        assert out.returncode == 0, out.stderr
        worker = start_lab(db, config, "worker", "--concurrency", "2", log=tmp_path / "w.log")
        deadline = time.monotonic() + 120
        while (_query(db, "SELECT count(*) FROM traces")[0][0] == 0
               and time.monotonic() < deadline):
            time.sleep(0.05)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        mid = _query(db, "SELECT count(*) FROM traces")[0][0]
        assert 0 < mid < 40
        conn = sqlite3.connect(db)
        with conn:  # the dead worker's lease: expire it now instead of waiting
            conn.execute("UPDATE jobs SET lease_until = 0 WHERE state = 'running'")
        conn.close()
        done = lab_here(db, config, "worker", "--until-idle", "--concurrency", "4")  # no kill
        assert done.returncode == 0, done.stderr
    assert _query(db, "SELECT count(*), count(DISTINCT question_id || '|' || depth), "
                      "count(error) FROM traces") == [(40, 40, 0)]
    assert _query(db, "SELECT min(n), max(n) FROM (SELECT count(*) AS n FROM traces "
                      "GROUP BY question_id)") == [(4, 4)]
    assert _query(db, "SELECT state, count(*) FROM jobs GROUP BY state") == [("done", 1)]
    assert app.calls >= 40  # the calls in flight at the kill were asked again


def test_new_evidence_is_false_where_a_short_plan_has_no_next_slice(db_path: Path) -> None:
    from core.data import Paragraph, Question
    from core.plans import build_plan
    from core.store import plans as plan_rows
    from core.store.traces import TraceRecord, write_traces

    q = Question("s1", "t", "q", "a", "", "", (Paragraph("A", ("x",)), Paragraph("B", ("y",))),
                 (("A", 0),))
    db = store.connect(db_path)
    plan = plan_rows.ensure_plans(db, [q], "tfidf", build_plan)[0]["s1"]
    write_traces(db, [TraceRecord("r", "m", "t", "s", "s1", d, plan.sha256) for d in range(4)])
    frame = load_traces(db, new_evidence=True)
    assert frame["new_evidence"].tolist() == [False, True, True, False]


def test_context_overflows_count_one_models_overflowed_states(db_path: Path) -> None:
    """`lab retry`'s re-spec note counts the model's states that overflowed its context,
    not its other errors nor another model's overflows."""
    from core.store.traces import TraceRecord, context_overflows, write_traces

    db = store.connect(db_path)
    write_traces(db, [
        TraceRecord("r", "m", "t", "s", "q1", 0, "p", error="context_overflow: 9000 > 8192"),
        TraceRecord("r", "m", "t", "s", "q1", 1, "p", error="timeout"),
        TraceRecord("r", "m", "t", "s", "q2", 0, "p", error="context_overflow: 9100 > 8192"),
        TraceRecord("r", "other", "t", "s", "q1", 0, "p", error="context_overflow: 1 > 0")])
    assert context_overflows(db, "r", "m") == 2
    assert context_overflows(db, "r", "other") == 1 and context_overflows(db, "x", "m") == 0
