"""The second seed's protocol end to end on the demo data, without a model:
`lab traces collect --models sim-trace` stores the trace sim's known states (its model:
`core.models.sim_trace`), `lab results trace_table1..3` read them, `lab export` writes
them with or without episodes, a depth whose evidence slice is empty copies the state
before it (the seed's App. B) unless asked again, and trace cells never reach the episode
tables."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.replay.trace_tables import TraceSettings
from analysis.replay.traces import build_traces, split_mask
from analysis.tables.export import TRACES_COLUMNS
from analysis.tables.registry import TRACES, table_names
from analysis.tables.results import trace_tables
from console.cli import main
from core import store
from core.models.sim_trace import trace_state
from core.store.selection import arm_labels
from core.store.traces import load_traces
from core.store.trajectories import facets
from tests.helpers.cli import lab, one_error

SET, RUN, N = "all", "traces-all", 60


def _ok(*args: object) -> None:
    assert main([str(a) for a in args]) == 0, args


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> None:
    code, _, err = lab(capsys, *args)
    assert code == 0, (args, err)


def _query(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lab.db holding the trace sim's states of all 60 demo questions (no episodes): copy it
    before changing it."""
    db = tmp_path_factory.mktemp("traces") / "lab.db"
    _ok("--db", db, "init")
    _ok("--db", db, "sets", "create", SET, "--dataset", "demo", "--n", N, "--seed", "1")
    _ok("--db", db, "traces", "collect", "--set", SET, "--models", "sim-trace")
    _ok("--db", db, "worker", "--until-idle")
    return db


def _copy(src: Path, tmp_path: Path) -> Path:
    """A consistent copy through SQLite's backup API: lab.db is in WAL mode, so a file
    copy can miss what is still in lab.db-wal (a set or states just written)."""
    db = tmp_path / "lab.db"
    source, target = sqlite3.connect(src), sqlite3.connect(db)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return db


def _known(db: Path) -> pd.DataFrame:
    """The frame the sim's model gives for the stored questions, built without the
    collector: `load_traces`' columns, every state parsed."""
    opened = store.connect(db)
    questions = store.load_questions(opened, ids=list(store.question_set(opened, SET)["ids"]))
    rows: list[dict[str, Any]] = []
    for q in questions:
        for depth in range(4):
            answer, confidence, right = trace_state("sim-trace", q, depth)
            rows.append({"id": len(rows) + 1, "run": RUN, "model": "sim-trace",
                         "dataset": q.dataset, "set_name": SET, "question_id": q.id,
                         "depth": depth, "answer": answer, "confidence": confidence,
                         "parsed": 1, "correct": int(right), "judge_correct": None,
                         "prompt_tokens": 1, "completion_tokens": 1, "plan_sha256": "p",
                         "error": None, "created_at": "2026-01-01"})
    frame = pd.DataFrame(rows)
    frame["correct"] = frame["correct"].astype("Int64")
    return frame


def _json(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> list[dict]:
    code, out, err = lab(capsys, "--db", db, "results", *args, "--format", "json",
                         "--resamples", "50")
    assert code == 0, err
    return json.loads(out)


def test_the_sim_states_are_its_known_model_and_the_tables_read_them(
        collected: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stored = load_traces(store.connect(collected))
    known = _known(collected)
    assert len(stored) == 4 * N and stored["parsed"].all() and stored["error"].isna().all()
    both = stored.merge(known, on=["question_id", "depth"], suffixes=("", "_known"))
    assert len(both) == 4 * N
    # the dataset's scorer agrees with the sim's draw: right answers score, wrong ones don't
    assert (both["correct"] == both["correct_known"]).all()
    assert (both["confidence"] == both["confidence_known"]).all()
    assert (both["answer"] == both["answer_known"]).all()
    # evidence helps, and the sim over-states its confidence (by 0.25 before the cap)
    by_depth = stored.groupby("depth")["correct"].mean()
    assert by_depth[0] < by_depth[3]
    assert stored["confidence"].mean() / 100 > stored["correct"].mean() + 0.15

    for name in ("trace_table1", "trace_table2", "trace_table3"):
        rows = _json(capsys, collected, name)
        (table,) = trace_tables(known, (name,), {q.id: q.question for q in store.load_questions(
            store.connect(collected), dataset="demo")}, TraceSettings(), 50)
        want = {(r.arm, r.measure, r.scope): r.estimate for r in table.rows}
        got = {(r["arm"], r["measure"], r["scope"]): r["estimate"] for r in rows}
        assert set(got) == set(want) and rows, name
        for key, value in want.items():
            assert got[key] == pytest.approx(value, nan_ok=True), (name, key)

    # by hand on the test split: the always-commit baselines are the depth's accuracy
    tr = build_traces(known, "sim-trace")
    test = tr.take(~split_mask(tr, 0))
    t1 = {(r["arm"], r["measure"]): r["estimate"] for r in _json(capsys, collected,
                                                                  "trace_table1")}
    for k, name in enumerate(("Parametric only", "Fixed RAG@1", "Fixed RAG@2", "Fixed RAG@3")):
        assert t1[(name, "OA")] == pytest.approx(np.mean(test.correct[:, k]))
        assert t1[(name, "coverage")] == 1 and t1[(name, "cost")] == k
    t2 = {(r["arm"], r["measure"]): r["estimate"] for r in _json(capsys, collected,
                                                                  "trace_table2")}
    assert t2[("depth 0", "ece_cal")] < t2[("depth 0", "ece_raw")]
    t3 = {(r["arm"], r["measure"]): r["n"] for r in _json(capsys, collected, "trace_table3")}
    assert t3[("all", "helpful")] == 3 * len(test)  # demo plans fill every slice


def test_trace_tables_print_levels_unsigned_and_differences_signed(
        collected: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = lab(capsys, "--db", collected, "results", "trace_table1", "--resamples",
                         "50")
    assert code == 0, err
    lines = {line.split("  ")[1].strip(): line for line in out.splitlines()
             if line.startswith("sim-trace")}
    assert "+" not in lines["Fixed RAG@1"] and "+" not in lines["Raw-Gated"]
    assert re.findall(r"(\S+) \[", lines["Fixed RAG@1"])[2:] == ["1.00", "1.00"]  # Cov., Cost
    diffs = re.findall(r"(\S+) \[(\S+), (\S+)\]", lines["Calibrated − Raw"])
    assert len(diffs) == 4 and all(v[0] in "+-" for d in diffs for v in d)
    assert "regimes" not in out and "seed × replicate" not in out
    code, out, _ = lab(capsys, "--db", collected, "results", "trace_table3", "--resamples", "50")
    net = next(line for line in out.splitlines() if line.startswith("sim-trace  all"))
    assert net.split()[2][0] != "+" and net.split()[-3][0] in "+-"  # helpful level, net signed


def test_the_sim_judges_with_the_dataset_scorer(collected: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = _copy(collected, tmp_path)
    _run(capsys, "--db", db, "traces", "collect", "--set", SET, "--models", "sim-trace",
         "--run", "judged", "--judge", "sim-trace")
    _run(capsys, "--db", db, "worker", "--until-idle")
    rows = _query(db, "SELECT correct, judge_correct, judge_model FROM traces "
                      "WHERE run = 'judged'")
    assert len(rows) == 4 * N and all(c == j and m == "sim-trace" for c, j, m in rows)


def test_export_without_episodes_writes_traces_csv_and_the_trace_tables(
        collected: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _copy(collected, tmp_path)
    code, out, err = lab(capsys, "--db", db, "export", tmp_path / "out", "--resamples", "20")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        ["traces.csv", *(f"{t}.csv" for t in table_names(TRACES))])
    with (tmp_path / "out" / "traces.csv").open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == TRACES_COLUMNS
        rows = list(reader)
    stored = _query(db, "SELECT id, question_id, depth, answer, confidence, parsed, correct, "
                        "raw, copied_from, error FROM traces ORDER BY question_id, depth")
    assert [(int(r["id"]), r["question_id"], int(r["depth"]), r["answer"],
             float(r["confidence"]), int(r["parsed"]), int(r["correct"]), r["raw"],
             r["copied_from"], r["error"]) for r in rows] == [
        (*s[:8], "", "") for s in stored]
    assert {r["version"] for r in rows} != {""}
    # a selection of no stored state and no episodes: one line
    code, _, err = lab(capsys, "--db", db, "export", tmp_path / "none", "--models", "nobody")
    one_error(code, err, "no trace states match")

    # with episodes too: the episode files and tables, then the trace files
    _run(capsys, "--db", db, "enqueue", "--models", "sim-own5", "--conditions",
         "enforced_rule", "--regimes", "clean", "--set", SET, "--run", "ep")
    _run(capsys, "--db", db, "worker", "--until-idle")
    code, out, err = lab(capsys, "--db", db, "export", tmp_path / "both", "--resamples", "20")
    assert code == 0, err
    names = {p.name for p in (tmp_path / "both").iterdir()}
    assert {"episodes.csv", "steps.csv", "success.csv", "traces.csv",
            "trace_table1.csv"} <= names
    with (tmp_path / "both" / "traces.csv").open(encoding="utf-8") as f:
        assert sum(1 for _ in f) == 4 * N + 1


def test_trace_cells_never_reach_the_episode_tables(collected: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    db = _copy(collected, tmp_path)
    _run(capsys, "--db", db, "enqueue", "--models", "sim-own5", "--conditions",
         "enforced_rule", "--regimes", "clean", "--set", SET, "--run", "ep")
    _run(capsys, "--db", db, "worker", "--until-idle")
    assert _query(db, "SELECT DISTINCT condition FROM cells ORDER BY 1") == [
        ("enforced_rule",), ("traces",)]
    for args in ((), ("--pool", "runs,seeds"), ("--set", SET)):
        rows = _json(capsys, db, "all", *args)
        assert rows and {r["arm"] for r in rows} == {"enforced_rule"}, args
        assert not any(RUN in r["runs"] for r in rows) and "none" not in {
            r["condition"] for r in rows}
    opened = store.connect(db)
    seen = facets(opened)
    assert "none" not in seen.arms and RUN not in seen.runs and "sim-trace" not in seen.models
    assert {label for _, label in arm_labels(opened).values()} == {"enforced_rule"}
    code, _, err = lab(capsys, "--db", db, "results", "success", "--conditions", "none")
    one_error(code, err, "none")
    code, _, err = lab(capsys, "--db", db, "results", "success", "--run", RUN)
    one_error(code, err, RUN)


def _musique(path: Path, sizes: tuple[int, ...]) -> Path:
    """A MuSiQue-format file: record i has sizes[i] paragraphs, the first one supporting."""
    lines = []
    for i, n in enumerate(sizes):
        lines.append(json.dumps({
            "id": f"2hop__{i}", "question": f"Which river flows through town {i}?",
            "answer": f"River Q{i}", "answer_aliases": [], "answerable": True,
            "paragraphs": [{"idx": k, "title": f"Page {i}-{k}", "paragraph_text":
                            f"Town {i} lies on River Q{i}." if k == 0 else f"Filler {k}.",
                            "is_supporting": k == 0} for k in range(n)]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_empty_slice_copies_the_state_before_it_unless_asked_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lab.db"
    _run(capsys, "--db", db, "init")
    _run(capsys, "--db", db, "data", "import", "musique",
         _musique(tmp_path / "mq.jsonl", (4, 2, 1)))
    _run(capsys, "--db", db, "sets", "create", "mq", "--dataset", "musique", "--n", "3",
         "--seed", "0")
    code, out, err = lab(capsys, "--db", db, "traces", "collect", "--set", "mq", "--models",
                         "sim-trace", "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(out)
    # 4 passages: slices 1-3 all shown; 2: depth 3 copies 2; 1: depths 2 and 3 copy 1
    assert (plan["calls"], plan["copies"], plan["empty_slice"]) == (9, 3, "copy")
    _run(capsys, "--db", db, "traces", "collect", "--set", "mq", "--models", "sim-trace")
    _run(capsys, "--db", db, "worker", "--until-idle")
    got = {(q, d): rest for q, d, *rest in _query(
        db, "SELECT question_id, depth, copied_from, prompt_tokens, raw IS NULL, answer, "
            "confidence, correct FROM traces WHERE run = 'traces-mq'")}
    assert {k: v[0] for k, v in got.items() if v[0] is not None} == {
        ("2hop__1", 3): 2, ("2hop__2", 2): 1, ("2hop__2", 3): 1}
    for (q, _), (origin, tokens, no_raw, *state) in got.items():
        if origin is None:
            assert tokens > 0 and not no_raw
        else:  # the state it copies, without a call
            assert tokens == 0 and no_raw and state == got[(q, origin)][3:]
    flagged = load_traces(store.connect(db), runs=["traces-mq"], new_evidence=True)
    assert flagged.loc[flagged["question_id"] == "2hop__2", "new_evidence"].tolist() == [
        False, True, False, False]
    code, out, _ = lab(capsys, "--db", db, "traces", "collect", "--set", "mq", "--models",
                       "sim-trace")
    assert code == 0 and "nothing to queue" in out

    # a copy lost after its source was stored (kill -9 between two flushes) is stored
    # again from the stored source, with no call
    before = _query(db, "SELECT question_id, depth, answer, confidence, copied_from FROM "
                        "traces WHERE copied_from IS NOT NULL ORDER BY 1, 2")
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM traces WHERE copied_from IS NOT NULL")
    code, out, err = lab(capsys, "--db", db, "traces", "collect", "--set", "mq", "--models",
                         "sim-trace", "--dry-run", "--json")
    assert (json.loads(out)["calls"], json.loads(out)["copies"]) == (0, 3)
    _run(capsys, "--db", db, "traces", "collect", "--set", "mq", "--models", "sim-trace")
    _run(capsys, "--db", db, "worker", "--until-idle")
    assert _query(db, "SELECT question_id, depth, answer, confidence, copied_from FROM "
                      "traces WHERE copied_from IS NOT NULL ORDER BY 1, 2") == before

    # --empty-slice ask: every depth is asked, as the depth's own state
    code, out, err = lab(capsys, "--db", db, "traces", "collect", "--set", "mq", "--models",
                         "sim-trace", "--run", "asked", "--empty-slice", "ask")
    assert code == 0 and "12 states" in out, err
    _run(capsys, "--db", db, "worker", "--until-idle")
    asked = _query(db, "SELECT question_id, depth, copied_from, prompt_tokens, confidence "
                       "FROM traces WHERE run = 'asked' ORDER BY 1, 2")
    assert len(asked) == 12 and all(c is None and t > 0 for _, _, c, t, _ in asked)
    question = store.load_questions(store.connect(db), ids=["2hop__1"])[0]
    assert dict(((q, d), c) for q, d, _, _, c in asked)[("2hop__1", 3)] == trace_state(
        "sim-trace", question, 3)[1]
