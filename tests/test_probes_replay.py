"""`lab replay` / `lab repair` through the real ledger and workers."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlite_utils import Database

from console.cli import cli


def lab(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args])


@pytest.fixture
def sim_run(tmp_path: Path) -> Path:
    db = tmp_path / "lab.db"
    for args in (("init",),
                 ("sets", "create", "d6", "--dataset", "demo", "--n", "6", "--seed", "1"),
                 ("enqueue", "--models", "sim-own5,sim-clock4", "--conditions", "none",
                  "--regimes", "persistent,clean", "--set", "d6", "--run", "pilot"),
                 ("worker", "--until-idle")):
        r = lab(db, *args)
        assert r.exit_code == 0, r.output
    return db


def _count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


POINTS = ("SELECT count(*) FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN cells c ON "
          "c.id = e.cell_id WHERE s.obs_index IS NOT NULL AND s.refused = 0 AND s.t < c.budget")


def test_answer_now_plans_runs_on_the_queue_and_is_idempotent(sim_run: Path) -> None:
    points = _count(sim_run, POINTS)
    dry = lab(sim_run, "replay", "answer-now", "--run", "pilot", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout)
    assert plan["calls"] == points > 0 and plan["jobs"] == 0
    assert set(plan["per_model"]) == {"sim-own5", "sim-clock4"}
    assert _count(sim_run, "SELECT count(*) FROM probes") == 0
    assert _count(sim_run, "SELECT count(*) FROM jobs WHERE kind = 'replay'") == 0
    queued = lab(sim_run, "replay", "answer-now", "--run", "pilot")
    assert queued.exit_code == 0 and "queued" in queued.stdout
    again = lab(sim_run, "replay", "answer-now", "--run", "pilot")  # jobs pending: nothing new
    assert "nothing to queue" in again.stdout
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    assert _count(sim_run, "SELECT count(*) FROM probes WHERE kind = 'answer_now'") == points
    assert _count(sim_run, "SELECT count(*) FROM jobs WHERE kind = 'replay' AND state != 'done'"
                  ) == 0
    # a finished replay job run again (a lost lease) stores nothing twice
    conn = sqlite3.connect(sim_run)
    with conn:
        conn.execute("UPDATE jobs SET state = 'queued' WHERE kind = 'replay'")
    conn.close()
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    assert _count(sim_run, "SELECT count(*) FROM probes") == points
    assert "nothing to queue" in lab(sim_run, "replay", "answer-now", "--run", "pilot").stdout
    # sims state a confidence; nothing was written back into the trajectories
    assert _count(sim_run, "SELECT count(*) FROM probes WHERE confidence IS NULL") == 0
    assert _count(sim_run, "SELECT count(*) FROM steps WHERE judgment_source = 'replay'") == 0


def test_replayed_judgments_equal_the_in_run_ones_for_sims(sim_run: Path) -> None:
    # sims record their judgments in-run: replay asks them again only on --refresh
    r = lab(sim_run, "replay", "judgments", "--run", "pilot", "--models", "sim-own5")
    assert r.exit_code == 0 and "nothing to queue" in r.output, r.output
    r = lab(sim_run, "replay", "judgments", "--run", "pilot", "--models", "sim-own5",
            "--refresh")
    assert r.exit_code == 0, r.output
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    n = _count(sim_run, "SELECT count(*) FROM probes WHERE kind = 'judgment'")
    same = _count(sim_run, "SELECT count(*) FROM probes p JOIN steps s ON s.episode_id = "
                           "p.episode_id AND s.t = p.t WHERE p.judgment = s.judgment")
    assert n == same > 0
    assert _count(sim_run, "SELECT count(DISTINCT model) FROM probes") == 1


def test_first_useless_5_and_t_list_select_points(sim_run: Path) -> None:
    r = lab(sim_run, "replay", "beliefs", "--run", "pilot", "--at", "t=2,3", "--json", "--dry-run")
    assert json.loads(r.stdout)["calls"] == _count(sim_run, POINTS + " AND s.t IN (2, 3)")
    r = lab(sim_run, "replay", "beliefs", "--run", "pilot", "--at", "first-useless-5")
    assert r.exit_code == 0, r.output
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    per_episode = _count(sim_run, "SELECT max(n) FROM (SELECT count(*) AS n FROM probes "
                                  "GROUP BY episode_id)")
    assert per_episode == 1
    bad_run = lab(sim_run, "replay", "beliefs", "--run", "nope")
    assert bad_run.exit_code != 0 and "no run 'nope'" in str(bad_run.exception)
    bad_at = lab(sim_run, "replay", "beliefs", "--run", "pilot", "--at", "often")
    assert bad_at.exit_code != 0 and "--at 'often'" in str(bad_at.exception)


def test_results_policies_and_controllers_after_answer_now(sim_run: Path) -> None:
    before = lab(sim_run, "results", "policies", "--format", "json", "--resamples", "20")
    assert before.exit_code == 0 and json.loads(before.stdout) == []
    assert lab(sim_run, "replay", "answer-now", "--run", "pilot").exit_code == 0
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    for table, measures in (("policies", {"best_utility", "regret", "utility", "success"}),
                            ("controllers", {"ece", "aurc", "coverage", "tpc"})):
        r = lab(sim_run, "results", table, "--format", "json", "--resamples", "20")
        assert r.exit_code == 0, r.output
        rows = json.loads(r.stdout)
        assert measures <= {row["measure"] for row in rows}
        assert {row["model"] for row in rows} == {"sim-own5", "sim-clock4"}
        assert all(row["table"] == table and row["arm"] == "none" for row in rows)
        # `lab export` writes the same table beside probes.csv
        out = sim_run.parent / "export"
        if not out.exists():
            assert lab(sim_run, "export", str(out), "--resamples", "20").exit_code == 0
        with (out / f"{table}.csv").open(newline="") as f:
            exported = list(csv.DictReader(f))
        assert len(exported) == len(rows)
        assert {row["model"] for row in exported} == {"sim-own5", "sim-clock4"}
    assert len((out / "probes.csv").read_text().splitlines()) > 1


def test_repair_changes_only_the_placeholder_answers(sim_run: Path) -> None:
    conn = sqlite3.connect(sim_run)
    with conn:  # two answered episodes copied the template
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM episodes WHERE answered = 1 ORDER BY id LIMIT 2")]
        conn.executemany("UPDATE episodes SET answer = 'your best guess', placeholder = 1, "
                         "correct = 0, em = 0, f1 = 0 WHERE id = ?", [(i,) for i in ids])
    conn.close()
    plan = json.loads(lab(sim_run, "repair", "--run", "pilot", "--json").stdout)
    assert plan["calls"] == 2
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    assert _count(sim_run, "SELECT count(*) FROM probes WHERE kind = 'repair'") == 2
    assert _count(sim_run, "SELECT count(*) FROM episodes WHERE answer = 'your best guess'") == 2

    from analysis.measures.frames import load_frames
    from analysis.measures.repairs import repaired_frames
    from core import store
    db = store.connect(sim_run)
    raw = load_frames(db)
    fixed, n = repaired_frames(db, raw)
    assert n == 2
    cols = ["answer", "correct", "f1", "em", "placeholder"]
    changed = (raw.episodes[cols].astype(object).fillna(-1)
               .ne(fixed.episodes[cols].astype(object).fillna(-1)).any(axis=1))
    assert set(raw.episodes.loc[changed, "episode_id"]) <= set(ids)
    assert not fixed.episodes.set_index("episode_id").loc[ids, "placeholder"].any()
    r = lab(sim_run, "results", "success", "--repaired", "--format", "json", "--resamples", "10")
    assert r.exit_code == 0 and "replace the raw ones of 2 episodes" in r.stderr


def test_an_arm_without_judgments_gets_delta_after_judgment_replay(db_path: Path) -> None:
    import asyncio

    from analysis.measures.frames import load_frames
    from analysis.tables.compute import compute
    from core.store.frames import steps_frame
    from jobs.kinds.replay import ReplayRequest, replay_questions
    from tests.helpers.probes import FINISH, SEARCH, scripted_episode
    from tests.helpers.scripted import ScriptedClient

    db, eid, _ = scripted_episode(db_path, "none", "persistent", [SEARCH] * 6 + [FINISH])
    assert steps_frame(db)["judgment"].isna().all()
    before = load_frames(db).decisions
    assert (before["own_run"] == 0).all()
    n_before = sum(r.n for r in compute(load_frames(db), ("delta",), 10).tables[0].rows)
    (cell_id, qid) = db.conn.execute("SELECT cell_id, question_id FROM episodes").fetchone()
    job = {"cell_id": cell_id, "question_ids": [qid],
           "params": ReplayRequest("r", "judgment").params()}
    judge = ScriptedClient(judgments=["USELESS"] * 6)
    assert asyncio.run(replay_questions(db, job, judge, 4)) == 6
    assert asyncio.run(replay_questions(db, job, judge, 4)) == 0  # nothing twice
    st = steps_frame(db)
    assert set(st.loc[st["t"] <= 6, "judgment_source"]) == {"replay"}
    assert db.conn.execute("SELECT count(*) FROM steps WHERE judgment IS NOT NULL"
                           ).fetchone()[0] == 0  # nothing written back
    after = load_frames(db).decisions
    assert after["own_run"].tolist() == after["n_obs"].tolist() == [1, 2, 3, 4, 5, 6]
    assert sum(r.n for r in compute(load_frames(db), ("delta",), 10).tables[0].rows) > n_before


def test_the_answer_now_pass_of_a_validation_reads_each_question_once(
        sim_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """validate-measures' answer-now pass rebuilds what each episode saw from its stored
    question; its episodes share one lookup, so a question is read once, not once per
    episode (here each question has four episodes: two models, two regimes)."""
    import asyncio
    from collections import Counter

    from core import store
    from core.store import questions
    from jobs.validate import _answer_now

    reads: Counter[str] = Counter()
    load = questions.load_questions

    def counted(db: Database, dataset: str | None = None, ids: Any = None) -> Any:
        reads.update(ids or ())
        return load(db, dataset, ids)

    monkeypatch.setattr(questions, "load_questions", counted)
    db = store.connect(sim_run)
    episodes = [eid for (eid,) in db.conn.execute("SELECT id FROM episodes")]
    assert len(episodes) == 24
    asyncio.run(_answer_now(db, episodes))
    assert db.conn.execute("SELECT count(*) FROM probes").fetchone()[0] > 0
    assert len(reads) == 6 and max(reads.values()) == 1, reads.most_common(3)


def test_probe_tables_are_kept_until_a_probe_or_a_parameter_changes(
        sim_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe table computed once is read back from the results cache for the same
    data and parameters (the same rows); another seed, another gate, a stored probe or
    a deleted one computes it again."""
    import analysis.replay.probe_tables as tables

    assert lab(sim_run, "replay", "answer-now", "--run", "pilot").exit_code == 0
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    computed: list[str] = []
    for name in ("policies_results", "controllers_results"):
        real = getattr(tables, name)

        def counted(inp: Any, real: Any = real, name: str = name) -> Any:
            computed.append(name.split("_")[0])
            return real(inp)

        monkeypatch.setattr(tables, name, counted)

    def rows(table: str, *args: str) -> list[dict[str, Any]]:
        r = lab(sim_run, "results", table, "--format", "json", "--resamples", "20", *args)
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    first = {t: rows(t) for t in ("policies", "controllers")}
    assert computed == ["policies", "controllers"] and all(first.values())
    assert {t: rows(t) for t in ("policies", "controllers")} == first
    assert computed == ["policies", "controllers"]  # both read back
    rows("policies", "--seed", "1")
    rows("controllers", "--tau-hi", "0.8")
    assert computed[2:] == ["policies", "controllers"]
    r = lab(sim_run, "replay", "beliefs", "--run", "pilot", "--at", "t=2")
    assert r.exit_code == 0, r.output
    assert lab(sim_run, "worker", "--until-idle").exit_code == 0
    assert rows("policies") == first["policies"] and computed[4:] == ["policies"]
    conn = sqlite3.connect(sim_run)
    with conn:
        conn.execute("DELETE FROM probes WHERE kind = 'belief'")
    conn.close()
    rows("policies")
    assert computed[5:] == ["policies"]
