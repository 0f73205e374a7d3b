"""`lab sets import`: a question set from a released list of ids, and imported episodes
linked to the set their split names."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from core import store
from core.set_import import default_name, read_id_list
from tests.helpers.builders import make_question
from tests.helpers.cli import dump_hash, lab, one_error
from tests.helpers.released import HAND, write_released

IDS = ("q1", "q2", "q3")


@pytest.fixture
def with_questions(db_path: Path) -> Path:
    db = store.connect(db_path)
    store.insert_questions(db, [replace(make_question(q), dataset="hotpotqa") for q in IDS])
    db.close()
    return db_path


def _manifest(path: Path, ids: list[str]) -> Path:
    path.write_text(json.dumps({"version": "s1-v1", "seed_tag": "test-v1",
                                "dataset_sha256": "ab" * 32, "question_ids": ids,
                                "excluded": {"dev100": 100}}), encoding="utf-8")
    return path


@pytest.mark.parametrize("layout", ["json list", "lines", "manifest"])
def test_every_layout_makes_the_same_set(layout: str, with_questions: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ids = ["q2", "q1"]
    path = tmp_path / "ids.json"
    if layout == "json list":
        path.write_text(json.dumps(ids), encoding="utf-8")
    elif layout == "lines":
        path.write_text("q2\n\nq1\n", encoding="utf-8")
    else:
        _manifest(path, ids)
    code, out, err = lab(capsys, "--db", with_questions, "sets", "import", path,
                         "--dataset", "hotpotqa", "--name", "pick")
    assert code == 0, err
    assert "imported dev set 'pick': 2 questions from hotpotqa" in out
    s = store.question_set(store.connect(with_questions), "pick")
    assert s["ids"] == ids and s["seed"] == 0 and s["exclude"] == []
    assert s["manifest"]["file"] == "ids.json"
    if layout == "manifest":
        assert s["manifest"]["version"] == "s1-v1"
        assert s["manifest"]["dataset_sha256"] == "ab" * 32
        assert s["manifest"]["excluded"] == {"dev100": 100}


def test_missing_ids_store_nothing_and_are_counted_in_one_line(with_questions: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    path = _manifest(tmp_path / "test9_v1.json", ["q1", "x1", "x2", "x3", "x4"])
    before = dump_hash(with_questions)
    code, _, err = lab(capsys, "--db", with_questions, "sets", "import", path,
                       "--dataset", "hotpotqa")
    one_error(code, err, "test9_v1.json", "4 of 5 ids", "x1, x2, x3 …")
    assert dump_hash(with_questions) == before


@pytest.mark.parametrize("text,words", [
    ('["q1", "q1"]', ("q1", "twice")),
    ('["q1", 7]', ("id 2",)),
    ('{"ids": ["q1"]}', ("question_ids",)),
    ("", ("no question ids",)),
])
def test_a_malformed_list_stores_nothing(text: str, words: tuple[str, ...], with_questions: Path,
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    before = dump_hash(with_questions)
    code, _, err = lab(capsys, "--db", with_questions, "sets", "import", path,
                       "--dataset", "hotpotqa", "--name", "bad")
    one_error(code, err, "bad.json", *words)
    assert dump_hash(with_questions) == before


def test_the_name_defaults_to_the_file_without_its_version(tmp_path: Path) -> None:
    assert default_name(Path("test300_v1.json")) == "test300"
    assert default_name(Path("dev100_v2.1.json")) == "dev100"
    assert default_name(Path("pilot.txt")) == "pilot"
    assert read_id_list(_manifest(tmp_path / "a.json", ["q1"])).ids == ("q1",)


def _cell_sets(db_path: Path) -> set[str | None]:
    db = store.connect(db_path)
    return {r[0] for r in db.conn.execute("SELECT question_set FROM cells")}


def test_a_set_imported_after_the_episodes_links_them(with_questions: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = lab(capsys, "--db", with_questions, "data", "import", "episodes",
                       write_released(tmp_path / "m1.jsonl", HAND))
    assert code == 0, err
    assert _cell_sets(with_questions) == {None}
    code, out, err = lab(capsys, "--db", with_questions, "sets", "import",
                         _manifest(tmp_path / "s1_v1.json", ["q1", "q2"]),
                         "--dataset", "hotpotqa")
    assert code == 0, err
    assert "set 's1'" in out and "linked 3 imported cells" in out
    assert _cell_sets(with_questions) == {"s1"}
    code, out, err = lab(capsys, "--db", with_questions, "results", "success", "--format",
                         "json", "--resamples", "20", "--set", "s1")
    assert code == 0, err
    assert {r["question_set"] for r in json.loads(out)} == {"s1"}


def test_episodes_imported_after_the_set_link_to_it(with_questions: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = lab(capsys, "--db", with_questions, "sets", "import",
                       _manifest(tmp_path / "s1_v1.json", ["q1", "q2"]),
                       "--dataset", "hotpotqa")
    assert code == 0, err
    code, out, err = lab(capsys, "--db", with_questions, "data", "import", "episodes",
                         write_released(tmp_path / "m1.jsonl", HAND))
    assert code == 0, err
    assert "linked to question set s1" in out and "not in lab.db" not in out
    assert _cell_sets(with_questions) == {"s1"}


def test_an_episode_outside_its_splits_set_stores_nothing(with_questions: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    code, _, err = lab(capsys, "--db", with_questions, "sets", "import",
                       _manifest(tmp_path / "s1_v1.json", ["q1", "q3"]),
                       "--dataset", "hotpotqa")
    assert code == 0, err
    before = dump_hash(with_questions)
    code, _, err = lab(capsys, "--db", with_questions, "data", "import", "episodes",
                       write_released(tmp_path / "m1.jsonl", HAND))
    one_error(code, err, "m1.jsonl", "line 3", "q2", "not in question set 's1'")
    assert dump_hash(with_questions) == before
