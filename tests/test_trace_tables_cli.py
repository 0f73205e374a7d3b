"""`lab results trace_*` and `lab export` on traces stored in a real temporary lab.db
(docs/traces.md): the trace sim's states written through `core.store.traces`, read back by
`load_traces`, give the tables the frame gives."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import cast

import click
import pytest
from click.testing import CliRunner

from analysis.replay.trace_sim import sim_traces
from analysis.replay.trace_tables import TraceSettings
from analysis.tables.registry import TRACES, table_names
from analysis.tables.results import trace_tables
from console.cli import results as results_cli
from core import store
from core.store import traces as traces_store
from core.store.selection import Selection


def _store_sim(path: Path, plan_of: dict[str, str] | None = None) -> None:
    db = store.connect(path)
    frame = sim_traces(9)
    for qid, sha in (plan_of or {}).items():
        frame.loc[frame["question_id"] == qid, "plan_sha256"] = sha
    records = [traces_store.TraceRecord(
        run=r.run, model=r.model, dataset=r.dataset, set_name=r.set_name,
        question_id=r.question_id, depth=int(r.depth), plan_sha256=r.plan_sha256,
        answer=r.answer, confidence=float(r.confidence), parsed=True, correct=bool(r.correct),
        prompt_tokens=int(r.prompt_tokens), completion_tokens=int(r.completion_tokens))
        for r in frame.itertuples()]
    traces_store.write_traces(db, records)
    db.conn.close()


def _invoke(path: Path, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(results_cli.results, [*args], obj={
        "db": path, "config": path.with_name("lab.toml")})
    return out.exit_code, out.output + (str(out.exception) if out.exception else "")


def test_cli_lists_the_trace_tables() -> None:
    from analysis.tables.registry import TRACES, table_names

    assert table_names(TRACES) == table_names(TRACES)
    choice = cast(click.Choice, results_cli.results.params[0].type)
    assert set(table_names(TRACES)) <= set(choice.choices)


def test_results_trace_table1_json_matches_the_frame(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    _store_sim(path)
    code, out = _invoke(path, "trace_table1", "--format", "json", "--resamples", "20",
                        "--split-seed", "7", "--tau-hi", "0.9")
    assert code == 0, out
    rows = json.loads(out)
    got = {(r["arm"], r["measure"]): r["estimate"] for r in rows}
    # τ_hi = 0.9 on the docstring sim of tests/test_trace_tables.py: raw q2 escalates,
    # q3 commits at 1 and q7 at 2, both right
    assert got[("Raw-Gated", "OA")] == pytest.approx(2 / 3)
    assert got[("Raw-Gated", "coverage")] == pytest.approx(2 / 3)
    assert all("τ_hi=0.9" in r["detail"] for r in rows)
    frame = traces_store.load_traces(store.connect(path))
    settings = TraceSettings(split_seed=7)
    (table,) = trace_tables(frame, ("trace_table3",), None, settings, 20)
    (direct,) = trace_tables(sim_traces(9), ("trace_table3",), None, settings, 20)
    assert [r.estimate for r in table.rows] == [r.estimate for r in direct.rows]


def test_results_trace_sweeps_prints_charts_and_an_empty_selection_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    _store_sim(path)
    code, out = _invoke(path, "trace_sweeps", "--resamples", "0")
    assert code == 0, out
    assert "Second seed sweeps" in out and "risk vs coverage" in out and "reliability" in out
    code, out = _invoke(path, "trace_table2", "--models", "nobody")
    assert code != 0 and "lab traces collect" in out


def test_export_writes_the_trace_tables(tmp_path: Path) -> None:
    from analysis.tables.export import export_traces

    path = tmp_path / "lab.db"
    _store_sim(path)
    out = tmp_path / "out"
    out.mkdir()
    written = export_traces(store.connect(path), out, Selection(), "test", 10)
    names = {p.name for p in written}
    assert {"traces.csv", *(f"{t}.csv" for t in table_names(TRACES))} == names
    with (out / "trace_calibration.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sum(r["measure"] == "split" for r in rows) == 9
    assert sum(r["measure"] == "fit_record" for r in rows) > 0


def test_a_stored_plan_with_an_empty_third_slice_removes_that_transition(tmp_path: Path) -> None:
    from core.plans import EvidencePlan, PlanPassage
    from core.store.plans import save_plans

    path = tmp_path / "lab.db"
    plan = EvidencePlan("hotpotqa-q2", "hotpotqa", "tfidf", (
        PlanPassage(0, "A", True, 1, None, "a" * 64), PlanPassage(3, "B", False, 2, 0.5, "b" * 64)))
    save_plans(store.connect(path), [plan])
    _store_sim(path, {"hotpotqa-q2": plan.sha256})
    code, out = _invoke(path, "trace_table3", "--format", "json", "--resamples", "0",
                        "--split-seed", "7")
    assert code == 0, out
    n = {(r["arm"], r["measure"]): r["n"] for r in json.loads(out)}
    assert n[("all", "helpful")] == 9 - 1 and n[("2→3", "helpful")] == 2  # q2's 2 → 3 is out
