"""`lab replay judgments` does not pay twice.

Episodes of a real OpenAI-compatible backend (a loopback server that counts, on its own
side, every call that asks the side-channel question) are replayed: a `judge = true`
arm recorded its judgments in-run, so replay asks it nothing; a mixed run is asked
exactly the judgments it is missing; `--refresh` asks the in-run ones too, and a
judgment already replayed is never asked again. Nothing here depends on timing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from tests.servers import LoopbackServer, OpenAIApp, react_responder

REGISTRY = """
[models.loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}/v1"]
concurrency = 4
timeout_s = 30
max_retries = 0
sampling = {{ temperature = 0.0 }}
"""
POINTS = ("SELECT count(*) FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN cells c "
          "ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id WHERE r.name = ? AND "
          "s.obs_index IS NOT NULL AND s.refused = 0 AND s.discarded = 0 AND s.t < c.budget")
"""Decision points of a run's episodes (where `lab replay judgments` asks)."""
IN_RUN = POINTS + " AND s.judgment_source IS NOT NULL"
NOT_JUDGED = POINTS + " AND s.judgment_source IS NULL"


def lab(capsys: pytest.CaptureFixture[str], db: Path, config: Path, *args: str
        ) -> tuple[int, str, str]:
    """`lab --db DB --config CONFIG ARGS` in-process through `main`: (exit, stdout, stderr)."""
    code = main(["--db", str(db), "--config", str(config), *args])
    out, err = capsys.readouterr()
    return code, out, err


def count(db: Path, sql: str, *args: object) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(sql, args).fetchone()[0])
    finally:
        conn.close()


def plan(capsys: pytest.CaptureFixture[str], db: Path, config: Path, run: str, *extra: str
         ) -> dict:
    code, out, err = lab(capsys, db, config, "replay", "judgments", "--run", run, "--dry-run",
                         "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def replay(capsys: pytest.CaptureFixture[str], db: Path, config: Path, run: str, *extra: str
           ) -> str:
    """Queue `lab replay judgments --run RUN` and work the queue off; the plan's text."""
    code, out, err = lab(capsys, db, config, "replay", "judgments", "--run", run, *extra)
    assert code == 0, err
    code, _, err = lab(capsys, db, config, "worker", "--until-idle")
    assert code == 0, err
    return out


def dump_hash(db: Path) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


@pytest.fixture
def served(tmp_path: Path, capsys: pytest.CaptureFixture[str]
           ) -> Iterator[tuple[Path, Path, OpenAIApp]]:
    """Run "judged" (none:judge=true) and run "mixed" (none and none:judge=true), four
    questions each in persistent, answered by a loopback model that searches four
    times; the server's counters start at 0 once they are stored."""
    app = OpenAIApp(responder=react_responder(4), record=False)
    with LoopbackServer(app) as server:
        db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
        config.write_text(REGISTRY.format(url=server.url))
        for args in (("init",), ("sets", "create", "d4", "--dataset", "demo", "--n", "4",
                                 "--seed", "1"),
                     ("enqueue", "--models", "loop", "--conditions", "none:judge=true",
                      "--regimes", "persistent", "--set", "d4", "--run", "judged"),
                     ("enqueue", "--models", "loop", "--conditions", "none,none:judge=true",
                      "--regimes", "persistent", "--set", "d4", "--run", "mixed"),
                     ("worker", "--until-idle")):
            code, _, err = lab(capsys, db, config, *args)
            assert code == 0, err
        assert count(db, "SELECT count(*) FROM episodes WHERE error IS NULL") == 12
        app.calls = app.side_channel_calls = 0
        yield db, config, app


def test_a_judge_true_run_is_asked_nothing(served: tuple[Path, Path, OpenAIApp],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    db, config, app = served
    points = count(db, POINTS, "judged")
    assert points == count(db, IN_RUN, "judged") > 0  # every point judged in-run
    dry = plan(capsys, db, config, "judged")
    assert (dry["calls"], dry["already_recorded"], dry["already_stored"]) == (0, points, 0)
    code, out, _ = lab(capsys, db, config, "replay", "judgments", "--run", "judged",
                       "--dry-run")
    assert code == 0 and "nothing to queue" in out
    assert f"recorded in-run by the side channel ({points:,};" in out
    out = replay(capsys, db, config, "judged")
    assert "nothing to queue" in out
    assert (app.calls, app.side_channel_calls) == (0, 0)  # the server was asked nothing
    assert count(db, "SELECT count(*) FROM probes") == 0
    assert count(db, "SELECT count(*) FROM jobs WHERE kind = 'replay'") == 0


def test_a_mixed_run_is_asked_only_the_missing_judgments(served: tuple[Path, Path, OpenAIApp],
                                                         capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    db, config, app = served
    conn = sqlite3.connect(db)
    with conn:  # one judge=true episode judged only some observations (as a switch arm)
        conn.execute("UPDATE steps SET judgment = NULL, judgment_source = NULL WHERE t = 2 AND "
                     "episode_id = (SELECT min(s.episode_id) FROM steps s JOIN episodes e ON "
                     "e.id = s.episode_id JOIN cells c ON c.id = e.cell_id JOIN runs r ON "
                     "r.id = c.run_id WHERE r.name = 'mixed' AND s.judgment_source IS NOT NULL)")
    conn.close()
    missing, recorded = count(db, NOT_JUDGED, "mixed"), count(db, IN_RUN, "mixed")
    assert missing > 0 and recorded > 0
    dry = plan(capsys, db, config, "mixed")
    assert (dry["calls"], dry["already_recorded"], dry["already_stored"]) == (
        missing, recorded, 0)
    assert list(dry["per_model"]) == ["loop"] and dry["jobs"] == 0
    code, out, _ = lab(capsys, db, config, "replay", "judgments", "--run", "mixed",
                       "--dry-run")
    assert f"would queue {missing:,} judgments" in out
    assert f"{recorded:,} recorded in-run by the side channel: not asked again" in out
    replay(capsys, db, config, "mixed")
    assert app.side_channel_calls == app.calls == missing  # exactly the missing ones
    assert count(db, "SELECT count(*) FROM probes WHERE kind = 'judgment' AND error IS NULL"
                 ) == missing
    # each replayed judgment sits on a step that recorded none in-run
    assert count(db, "SELECT count(*) FROM probes p JOIN steps s ON s.episode_id = "
                     "p.episode_id AND s.t = p.t AND s.discarded = 0 WHERE "
                     "s.judgment_source IS NOT NULL") == 0
    # asked again: nothing is missing, nothing is sent
    assert "nothing to queue" in replay(capsys, db, config, "mixed")
    assert app.calls == missing
    # --refresh would ask the in-run ones only: the replayed ones are stored
    again = plan(capsys, db, config, "mixed", "--refresh")
    assert (again["calls"], again["already_recorded"], again["already_stored"]) == (
        recorded, 0, missing)


def test_refresh_asks_every_point_once_and_keeps_the_in_run_judgments(
        served: tuple[Path, Path, OpenAIApp], capsys: pytest.CaptureFixture[str]) -> None:
    db, config, app = served
    points = count(db, POINTS, "judged")
    steps = "SELECT episode_id, t, judgment, judgment_source FROM steps ORDER BY 1, 2, 3"
    conn = sqlite3.connect(db)
    before = (conn.execute(steps).fetchall(),
              conn.execute("SELECT * FROM decisions ORDER BY episode_id, seq").fetchall())
    conn.close()
    dry = plan(capsys, db, config, "judged", "--refresh")
    assert (dry["calls"], dry["already_recorded"], dry["refresh"]) == (points, 0, True)
    replay(capsys, db, config, "judged", "--refresh")
    assert app.side_channel_calls == app.calls == points
    assert count(db, "SELECT count(*) FROM probes WHERE kind = 'judgment'") == points
    conn = sqlite3.connect(db)
    after = (conn.execute(steps).fetchall(),
             conn.execute("SELECT * FROM decisions ORDER BY episode_id, seq").fetchall())
    conn.close()
    assert after == before  # nothing written back; analysis still reads the in-run ones
    assert "nothing to queue" in replay(capsys, db, config, "judged", "--refresh")
    assert app.calls == points  # a stored replay is never asked twice


def test_refresh_with_another_probe_is_one_error_line(served: tuple[Path, Path, OpenAIApp],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    db, config, app = served
    before = dump_hash(db)
    for what in ("beliefs", "answer-now"):
        code, out, err = lab(capsys, db, config, "replay", what, "--run", "judged",
                             "--refresh")
        assert code != 0 and out == ""
        assert err.startswith("error: --refresh applies to `lab replay judgments` only")
        assert len(err.strip().splitlines()) == 1
    assert dump_hash(db) == before and app.calls == 0
