"""The trace tables' pooled row reads every dataset, and the Adaptive proxy's depth
rule has its thresholds where the seed puts them (18 and 9 tokens, 2 and 1 markers)."""

from __future__ import annotations

import pytest

from analysis.base.rows import Table
from analysis.replay.trace_sim import sim_questions, sim_traces
from analysis.replay.trace_tables import TraceSettings
from analysis.replay.traces import proxy_depth
from analysis.tables.results import trace_tables

DATASETS = ("hotpotqa", "musique")


@pytest.fixture(scope="module")
def table1() -> Table:
    frame = sim_traces(30, datasets=DATASETS)
    questions = {**sim_questions(30, DATASETS[0]), **sim_questions(30, DATASETS[1])}
    (table,) = trace_tables(frame, ("trace_table1",), questions, TraceSettings(), n_boot=20)
    return table


def test_the_pooled_row_is_every_datasets_questions(table1: Table) -> None:
    """Micro-pooled: each test question one episode, so a mean over questions pools as
    the question-weighted mean of the datasets' rows."""
    rows = {(r.arm, r.measure, r.dataset): r for r in table1.rows if r.scope == ""}
    pooled = "+".join(DATASETS)
    checked = 0
    for (arm, measure, dataset), row in rows.items():
        if dataset != pooled or measure not in ("OA", "coverage", "cost"):
            continue
        parts = [rows[(arm, measure, d)] for d in DATASETS]
        assert all(p.n for p in parts), (arm, measure)
        assert row.n == sum(p.n for p in parts)
        assert row.estimate == pytest.approx(sum(p.estimate * p.n for p in parts) / row.n)
        checked += 1
    assert checked >= 15  # every system × OA, coverage, cost


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize(("question", "depth"), [
    (_words(18), 3), (_words(17), 2), (_words(9), 2), (_words(8), 1),
    (_words(3) + " same both", 3), (_words(3) + " which", 2), ("who was it", 2),
    ("is it the samething", 1), (_words(17) + " before", 3), (_words(8) + " after", 2)])
def test_the_proxy_depth_thresholds(question: str, depth: int) -> None:
    assert proxy_depth(question) == depth
