"""`lab data import musique` on a small MuSiQue-format file written here:
validated whole, stored in one transaction, one-line errors naming file, record and field."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core import store
from core.data import load_musique
from core.plans import build_plan, supporting_indices
from core.traces import references, score
from tests.helpers.cli import dump_hash, lab, one_error


def _record(i: int, **over: object) -> dict:
    rec = {
        "id": f"2hop__{100 + i}_{200 + i}",
        "question": f"Who founded the company that makes product {i}?",
        "answer": f"Ada Founder{i}",
        "answer_aliases": [f"A. Founder{i}", "Ada"],
        "answerable": True,
        "paragraphs": [
            {"idx": 0, "title": f"Product {i}", "paragraph_text": f"Product {i} is made by "
             f"Firm{i}.", "is_supporting": True},
            {"idx": 1, "title": "Firm", "paragraph_text": "Another firm makes boats.",
             "is_supporting": False},
            {"idx": 2, "title": f"Firm{i}", "paragraph_text": f"Firm{i} was founded by Ada "
             f"Founder{i}.", "is_supporting": True},
            {"idx": 3, "title": f"Product {i}", "paragraph_text": "A different page of the same "
             "title.", "is_supporting": False},
        ],
        "question_decomposition": [],
    }
    rec.update(over)
    return rec


def _write(tmp_path: Path, records: list[object], name: str = "musique_dev.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_import_stores_questions_aliases_and_marked_supports(tmp_path: Path, db_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    path = _write(tmp_path, [_record(1), _record(2), _record(3, answerable=False)])
    code, out, err = lab(capsys, "--db", db_path, "data", "import", "musique", path)
    assert code == 0, err
    assert "imported 2 questions" in out and "dataset 'musique'" in out
    assert "skipped 1 unanswerable record" in out
    db = store.connect(db_path)
    q = store.load_questions(db, ids=["2hop__101_201"])[0]
    assert q.dataset == "musique" and q.type == "2hop" and q.answer == "Ada Founder1"
    assert q.aliases == ("A. Founder1", "Ada")
    assert q.supporting_paragraphs == (0, 2)
    assert [p.text for p in q.paragraphs][1] == "Another firm makes boats."
    # the repeated title does not make the distractor a support
    assert supporting_indices(q) == [0, 2]
    plan = build_plan(q)
    assert [(p.source_index, p.supporting) for p in plan.passages][:3] == [
        (0, True), (plan.passages[1].source_index, False), (2, True)]
    # the scorer takes the best reference: an alias counts
    assert references(q) == ["Ada Founder1", "A. Founder1", "Ada"]
    assert score("Ada", q) == (True, 1.0)
    assert score("Bob", q)[0] is False
    # idempotent: a second import stores nothing new
    code, out, _ = lab(capsys, "--db", db_path, "data", "import", "musique", path)
    assert code == 0 and "imported 0 questions" in out and "(2 already present)" in out


@pytest.mark.parametrize("bad,words", [
    (lambda r: r.pop("paragraphs"), ("record 1", "paragraphs")),
    (lambda r: r["paragraphs"][2].update(is_supporting="yes"),
     ("record 1", "paragraphs[2].is_supporting")),
    (lambda r: r["paragraphs"][0].update(paragraph_text=None),
     ("record 1", "paragraphs[0].paragraph_text")),
    (lambda r: [p.update(is_supporting=False) for p in r["paragraphs"]],
     ("record 1", "is_supporting")),
    (lambda r: r.update(answer_aliases="Ada"), ("record 1", "answer_aliases")),
    (lambda r: r.update(answer=""), ("record 1", "answer")),
    (lambda r: r.update(id="2hop__101_201"), ("record 1", "duplicate id")),
])
def test_a_bad_record_stores_nothing_and_says_where(tmp_path: Path, db_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    bad: Callable[[dict[str, Any]], object],
                                                    words: tuple[str, str]) -> None:
    assert lab(capsys, "--db", db_path, "init")[0] == 0
    before = dump_hash(db_path)
    second = _record(2)
    bad(second)
    path = _write(tmp_path, [_record(1), second])
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "musique", path)
    one_error(code, err, str(path), *words)
    assert dump_hash(db_path) == before


def test_invalid_json_line_and_empty_file(tmp_path: Path, db_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(_record(1)) + "\n{not json\n", encoding="utf-8")
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "musique", path)
    one_error(code, err, str(path), "line 2")
    only_unanswerable = _write(tmp_path, [_record(1, answerable=False)], "none.jsonl")
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "musique", only_unanswerable)
    one_error(code, err, "no answerable records")
    with pytest.raises(Exception, match="record 0"):
        load_musique(_write(tmp_path, [[1, 2]], "list.jsonl"))


def test_hotpotqa_records_are_stored_as_before(db_path: Path) -> None:
    """Records without aliases or marked paragraphs keep their exact stored JSON."""
    db = store.connect(db_path)
    from core.demo_set import load_demo_questions

    load_demo_questions(db)
    rec = json.loads(sqlite3.connect(db_path).execute(
        "SELECT record FROM questions WHERE dataset = 'demo' LIMIT 1").fetchone()[0])
    assert "answer_aliases" not in rec and "supporting_paragraphs" not in rec
