"""The episode path's CPU savings change nothing a researcher reads.

- each question's knowledge base is built once per process, and a question with other
  pages (re-imported) or the answerless regime gets its own;
- a live step is stored as JSON of its non-default fields and reads back equal.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import cast

from core import store
from core.data import Paragraph
from core.demo_data import demo_questions
from core.episode import Step
from core.kb import KnowledgeBase, knowledge_base, strip_supporting_facts
from core.store.episodes import live_step_json


def _same_search(a: KnowledgeBase, b: KnowledgeBase, queries: list[str]) -> bool:
    return all(a.search(q) == b.search(q) for q in queries) and \
        [a.paragraph_text(i) for i in range(len(a))] == [b.paragraph_text(i) for i in range(len(b))]


def test_a_questions_kb_is_built_once_and_answers_as_a_fresh_one() -> None:
    q = demo_questions()[3]
    copy = dataclasses.replace(q)  # loaded again from lab.db: an equal, distinct object
    assert knowledge_base(q) is knowledge_base(copy)
    queries = [p.title for p in q.paragraphs] + [q.question, "zzz nothing", ""]
    assert _same_search(knowledge_base(q), KnowledgeBase(q.paragraphs), queries)
    stripped = knowledge_base(q, answerless=True)
    assert stripped is not knowledge_base(q)
    assert _same_search(stripped, KnowledgeBase(strip_supporting_facts(q)), queries)


def test_a_question_with_other_pages_gets_its_own_kb() -> None:
    q = demo_questions()[4]
    edited = dataclasses.replace(q, paragraphs=(Paragraph("Only page", ("New text.",)),
                                                *q.paragraphs[1:]))
    assert knowledge_base(edited) is not knowledge_base(q)
    assert knowledge_base(edited).paragraph_text(0) == "[Only page] New text."
    assert knowledge_base(q).paragraph_text(0) != "[Only page] New text."


def test_live_steps_store_only_non_default_fields_and_read_back_equal(db_path: Path) -> None:
    steps = [Step(t=1, raw="Thought: x\nAction: search\nAction Input: é", thought="x",
                  action="search", argument="é", obs_index=0, obs_failed=False,
                  obs_source="gold", obs_ref="q#0", streak=0, input_tokens=12,
                  latency_ms=100.5, shown="Page: ünïcode"),
             Step(t=2, raw="", forced=True, obs_failed=None, reasoning="think",
                  reasoning_tokens=3)]
    stored = json.loads(live_step_json(steps[0]))
    assert "judgment" not in stored and "streak" not in stored  # defaults left out
    assert stored["obs_failed"] is False and stored["obs_index"] == 0  # not defaults
    db = store.connect(db_path)
    live = store.live_start(db, None, "q", "label")
    for s in steps:
        store.live_step(db, live, s)
    back = store.live_steps(db, live)
    assert back == steps and [s.shown for s in back] == [s.shown for s in steps]
    assert [dataclasses.asdict(s) for s in back] == [dataclasses.asdict(s) for s in steps]


def test_a_worker_loads_a_question_set_once_and_serves_jobs_from_it(db_path: Path) -> None:
    from types import SimpleNamespace

    from click.testing import CliRunner

    from console.cli import cli
    from core.runner import CellSpec
    from jobs.sets import job_questions, loaded_set

    assert CliRunner().invoke(cli, ["--db", str(db_path), "demo-set"]).exit_code == 0
    db = store.connect(db_path)
    pools: dict = {}
    cell = cast(CellSpec, SimpleNamespace(question_set="demo"))  # all loaded_set reads
    loaded = loaded_set(db, cell, pools)
    assert loaded is not None
    assert loaded_set(db, cell, pools) is loaded and len(pools) == 1
    ids = ["demo-003", "demo-001"]
    got = job_questions(db, {"question_ids": ids}, loaded)
    assert [q.id for q in got] == ids and got[0] is loaded.questions["demo-003"]
    assert got == store.load_questions(db, ids=ids)  # the same questions as a fresh read
    assert loaded_set(db, cast(CellSpec, SimpleNamespace(question_set=None)), pools) is None
    fresh = job_questions(db, {"question_ids": ids}, None)
    assert fresh == got and fresh[0] is not got[0]
