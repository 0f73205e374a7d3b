"""Tests for core.data (loading, validation, sampling) and core.demo_data."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.data import (
    Question,
    ids_hash,
    load_hotpotqa,
    question_from_record,
    question_to_record,
    sample_ids,
)
from core.demo_data import demo_questions
from core.errors import DataError

ROOT = Path(__file__).resolve().parents[1]
DEV_FORMAT = Path(__file__).parent / "data" / "hotpotqa" / "dev_distractor_small.json"
"""Three invented questions written by hand in the official dev distractor file's own
layout: one JSON line, 24-hex ids, 10 paragraphs, sentences after the first starting
with a space, UTF-8 text, a yes/no comparison."""


# --------------------------------------------------------------------------- fixtures


def _official_records() -> list[dict[str, Any]]:
    """Three small invented records in the official HotpotQA format."""
    return [
        {
            "_id": "q1",
            "question": "Which lighthouse keeper wrote The Salt Ledger?",
            "answer": "Arno Pell",
            "type": "bridge",
            "level": "easy",
            "supporting_facts": [["The Salt Ledger", 0], ["Arno Pell", 1]],
            "context": [
                ["The Salt Ledger",
                 ["The Salt Ledger is a diary.", "It was written by Arno Pell."]],
                ["Arno Pell", ["Arno Pell kept a light.", "He wrote The Salt Ledger."]],
                ["Grey Point", ["Grey Point is a cape.", "It has a lighthouse."]],
            ],
        },
        {
            "_id": "q2",
            "question": "Which is older, Fenwick Bridge or Ostry Mill?",
            "answer": "Ostry Mill",
            "type": "comparison",
            "level": "medium",
            "supporting_facts": [["Fenwick Bridge", 0], ["Ostry Mill", 0]],
            "context": [
                ["Fenwick Bridge", ["Fenwick Bridge was built in 1820."]],
                ["Ostry Mill", ["Ostry Mill was built in 1710.", "It grinds oats."]],
                ["Brae Chapel", ["Brae Chapel was built in 1905."]],
            ],
        },
        {
            "_id": "q3",
            "question": "What colour is the flag of Tunmoor?",
            "answer": "green",
            "type": "bridge",
            "level": "hard",
            "supporting_facts": [["Tunmoor", 1]],
            "context": [
                ["Tunmoor", ["Tunmoor is a village.", "Its flag is green."]],
                ["Lessby", ["Lessby is a village.", "Its flag is blue."]],
            ],
        },
    ]


def _to_hf(record: dict[str, Any]) -> dict[str, Any]:
    """The same record in Hugging Face column format."""
    return {
        "id": record["_id"],
        "question": record["question"],
        "answer": record["answer"],
        "type": record["type"],
        "level": record["level"],
        "supporting_facts": {
            "title": [t for t, _ in record["supporting_facts"]],
            "sent_id": [i for _, i in record["supporting_facts"]],
        },
        "context": {
            "title": [t for t, _ in record["context"]],
            "sentences": [s for _, s in record["context"]],
        },
    }


def _write(path: Path, records: list[Any]) -> Path:
    """Write records as a JSON list, or as JSONL when the name ends in .jsonl."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return path


def _load_error(path: Path) -> str:
    """The one-line DataError message from loading path."""
    with pytest.raises(DataError) as info:
        load_hotpotqa(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


# --------------------------------------------------------------------------- loading


def test_load_official_json(tmp_path: Path) -> None:
    questions = load_hotpotqa(_write(tmp_path / "d.json", _official_records()))
    assert [q.id for q in questions] == ["q1", "q2", "q3"]
    q = questions[0]
    assert q.dataset == "hotpotqa"
    assert q.answer == "Arno Pell"
    assert (q.type, q.level) == ("bridge", "easy")
    assert [p.title for p in q.paragraphs] == ["The Salt Ledger", "Arno Pell", "Grey Point"]
    assert q.paragraphs[1].sentences == ("Arno Pell kept a light.", "He wrote The Salt Ledger.")
    assert q.supporting_facts == (("The Salt Ledger", 0), ("Arno Pell", 1))
    assert q.gold_titles == {"The Salt Ledger", "Arno Pell"}
    assert [q.is_gold(i) for i in range(3)] == [True, True, False]


@pytest.mark.parametrize("name", ["d.json", "d.jsonl"])
@pytest.mark.parametrize("fmt", ["official", "hf"])
def test_formats_load_identically(tmp_path: Path, name: str, fmt: str) -> None:
    records = _official_records()
    if fmt == "hf":
        records = [_to_hf(r) for r in records]
    expected = load_hotpotqa(_write(tmp_path / "ref.json", _official_records()))
    assert load_hotpotqa(_write(tmp_path / name, records)) == expected


def test_dataset_name_is_stamped(tmp_path: Path) -> None:
    questions = load_hotpotqa(_write(tmp_path / "d.json", _official_records()), dataset="hp2")
    assert {q.dataset for q in questions} == {"hp2"}


def test_type_and_level_are_optional(tmp_path: Path) -> None:
    records = _official_records()
    del records[0]["type"]
    del records[0]["level"]
    records[1]["level"] = None
    questions = load_hotpotqa(_write(tmp_path / "d.json", records))
    assert (questions[0].type, questions[0].level) == ("", "")
    assert questions[1].level == ""


def test_jsonl_blank_lines_are_ignored(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in _official_records()]
    path = tmp_path / "d.jsonl"
    path.write_text(lines[0] + "\n\n" + lines[1] + "\n" + lines[2] + "\n\n", encoding="utf-8")
    assert [q.id for q in load_hotpotqa(path)] == ["q1", "q2", "q3"]


def test_single_record_jsonl(tmp_path: Path) -> None:
    path = _write(tmp_path / "one.jsonl", _official_records()[:1])
    assert [q.id for q in load_hotpotqa(path)] == ["q1"]


def test_jsonl_content_without_jsonl_extension(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text("\n".join(json.dumps(r) for r in _official_records()), encoding="utf-8")
    assert [q.id for q in load_hotpotqa(path)] == ["q1", "q2", "q3"]


def test_out_of_range_sent_id_is_accepted(tmp_path: Path) -> None:
    records = _official_records()
    records[2]["supporting_facts"] = [["Tunmoor", 7]]
    assert load_hotpotqa(_write(tmp_path / "d.json", records))[2].supporting_facts == (
        ("Tunmoor", 7),
    )


def test_record_round_trip(tmp_path: Path) -> None:
    for q in load_hotpotqa(_write(tmp_path / "d.jsonl", [_to_hf(r) for r in _official_records()])):
        record = json.loads(json.dumps(question_to_record(q)))
        assert set(record) == {"_id", "question", "answer", "type", "level",
                               "supporting_facts", "context"}
        assert question_from_record(record, q.dataset) == q
    assert question_to_record(
        question_from_record(_official_records()[0], "x")
    ) == _official_records()[0]


def test_question_from_record_error_has_no_prefix() -> None:
    record = _official_records()[0]
    del record["question"]
    with pytest.raises(DataError, match=r"^missing field 'question'$"):
        question_from_record(record, "hotpotqa")


# --------------------------------------------------------------------------- validation

Mutation = Callable[[dict[str, Any]], Any]


def _set(key: str, value: Any) -> Mutation:
    def mutate(r: dict[str, Any]) -> None:
        r[key] = value
    return mutate


def _delete(key: str) -> Mutation:
    def mutate(r: dict[str, Any]) -> None:
        del r[key]
    return mutate


def _set_context(i: int, value: Any) -> Mutation:
    def mutate(r: dict[str, Any]) -> None:
        r["context"][i] = value
    return mutate


def _set_fact(i: int, value: Any) -> Mutation:
    def mutate(r: dict[str, Any]) -> None:
        r["supporting_facts"][i] = value
    return mutate


OFFICIAL_CASES: list[tuple[Mutation, str]] = [
    (_delete("answer"), "missing field 'answer'"),
    (_delete("question"), "missing field 'question'"),
    (_delete("_id"), "missing field '_id' (or 'id')"),
    (_delete("context"), "missing field 'context'"),
    (_delete("supporting_facts"), "missing field 'supporting_facts'"),
    (_set("_id", ""), "_id must be a non-empty string"),
    (_set("_id", 17), "_id must be a non-empty string"),
    (_set("question", 5), "question must be a non-empty string"),
    (_set("answer", "  "), "answer must be a non-empty string"),
    (_set("type", 3), "type must be a string"),
    (_set("context", "text"), "context must be a list of [title, [sentences]]"),
    (_set("context", []), "context must not be empty"),
    (_set_context(1, ["Arno Pell", "He kept a light."]), "context[1] must be [title, [sentences]]"),
    (_set_context(1, ["Arno Pell"]), "context[1] must be [title, [sentences]]"),
    (_set_context(1, [None, ["x"]]), "context[1] must be [title, [sentences]]"),
    (_set_context(2, ["", ["x"]]), "context[2] title must be a non-empty string"),
    (_set_context(2, ["Grey Point", ["ok", 4]]), "context[2] sentence 1 must be a string"),
    (_set("supporting_facts", []), "supporting_facts must not be empty"),
    (_set("supporting_facts", "x"), "supporting_facts must be a list of [title, sent_id]"),
    (_set_fact(1, ["Arno Pell"]), "supporting_facts[1] must be [title, sent_id]"),
    (_set_fact(1, ["Nowhere", 0]), "supporting_facts[1] names title 'Nowhere' not in context"),
    (_set_fact(0, ["The Salt Ledger", -1]), "supporting_facts[0] sent_id must be an integer >= 0"),
    (_set_fact(0, ["The Salt Ledger", True]),
     "supporting_facts[0] sent_id must be an integer >= 0"),
    (_set_fact(0, ["The Salt Ledger", "1"]), "supporting_facts[0] sent_id must be an integer >= 0"),
    (_set_fact(0, ["The Salt Ledger", 1.0]), "supporting_facts[0] sent_id must be an integer >= 0"),
    (_set_fact(0, [3, 0]), "supporting_facts[0] title must be a non-empty string"),
]


@pytest.mark.parametrize(("mutate", "problem"), OFFICIAL_CASES,
                         ids=[p for _, p in OFFICIAL_CASES])
@pytest.mark.parametrize("index", [0, 2])
def test_official_record_errors(tmp_path: Path, mutate: Mutation, problem: str,
                                index: int) -> None:
    records = _official_records()
    records[index] = copy.deepcopy(_official_records()[0]) | {"_id": "bad"}
    mutate(records[index])
    path = _write(tmp_path / "data.json", records)
    assert _load_error(path).startswith(f"{path}: record {index}: {problem}")


def _hf_context(key: str, value: Any) -> Mutation:
    def mutate(r: dict[str, Any]) -> None:
        r["context"][key] = value
    return mutate


def _hf_facts(key: str, value: Any) -> Mutation:
    def mutate(r: dict[str, Any]) -> None:
        r["supporting_facts"][key] = value
    return mutate


HF_CASES: list[tuple[Mutation, str]] = [
    (_delete("id"), "missing field '_id' (or 'id')"),
    (_set("id", " "), "id must be a non-empty string"),
    (_hf_context("sentences", [["a"], ["b"]]),
     "context.title and context.sentences differ in length (3 vs 2)"),
    (_hf_context("title", "The Salt Ledger"), "context.title must be a list"),
    (_hf_context("sentences", [["a"], "b", ["c"]]),
     "context.sentences[1] must be a list of strings"),
    (_hf_context("title", ["A", 2, "C"]), "context.title[1] must be a string"),
    (_hf_facts("sent_id", [0]),
     "supporting_facts.title and supporting_facts.sent_id differ in length (2 vs 1)"),
    (_hf_facts("sent_id", [0, -3]), "supporting_facts.sent_id[1] must be an integer >= 0"),
    (_hf_facts("title", ["Fenwick Bridge", "Nobody"]),
     "supporting_facts[1] names title 'Nobody' not in context"),
]


def _drop_hf_key(field: str, key: str) -> Mutation:
    def mutate(r: dict[str, Any]) -> None:
        del r[field][key]
    return mutate


HF_CASES += [
    (_drop_hf_key("context", "sentences"), "missing field 'context.sentences'"),
    (_drop_hf_key("supporting_facts", "sent_id"), "missing field 'supporting_facts.sent_id'"),
]


@pytest.mark.parametrize(("mutate", "problem"), HF_CASES, ids=[p for _, p in HF_CASES])
def test_hf_record_errors(tmp_path: Path, mutate: Mutation, problem: str) -> None:
    records = [_to_hf(r) for r in _official_records()]
    mutate(records[1])
    path = _write(tmp_path / "data.jsonl", records)
    assert _load_error(path) == f"{path}: record 1: {problem}"


def test_record_must_be_object(tmp_path: Path) -> None:
    records: list[Any] = _official_records()
    records.insert(1, ["not", "an", "object"])
    path = _write(tmp_path / "data.json", records)
    assert _load_error(path) == f"{path}: record 1: must be a JSON object, got array"


def test_duplicate_id(tmp_path: Path) -> None:
    records = _official_records()
    records.append(copy.deepcopy(records[1]))
    path = _write(tmp_path / "data.json", records)
    assert _load_error(path) == f"{path}: record 3: duplicate id 'q2' (first at record 1)"


def test_duplicate_id_across_formats(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = _official_records()
    records.append(_to_hf(records[0]))
    path = _write(tmp_path / "data.jsonl", records)
    assert _load_error(path) == f"{path}: record 3: duplicate id 'q1' (first at record 0)"


def test_first_invalid_record_is_reported(tmp_path: Path) -> None:
    records = _official_records()
    del records[2]["answer"]
    del records[1]["question"]
    path = _write(tmp_path / "data.json", records)
    assert _load_error(path) == f"{path}: record 1: missing field 'question'"


@pytest.mark.parametrize("content", ["", "   \n\n"])
@pytest.mark.parametrize("name", ["e.json", "e.jsonl"])
def test_empty_file(tmp_path: Path, content: str, name: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert _load_error(path) == f"{path}: file is empty"


def test_empty_list(tmp_path: Path) -> None:
    path = _write(tmp_path / "e.json", [])
    assert _load_error(path) == f"{path}: file holds no records"


def test_top_level_not_a_list(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"data": _official_records()}), encoding="utf-8")
    assert _load_error(path) == f"{path}: top level must be a JSON list of records, got object"


def test_invalid_json_names_position(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('[\n{"_id": "q1",\n "question": }\n]', encoding="utf-8")
    message = _load_error(path)
    assert re.fullmatch(
        re.escape(f"{path}: invalid JSON at line 3 column 14 (char 29): ") + ".+", message
    ), message


def test_invalid_jsonl_names_line(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in _official_records()]
    path = tmp_path / "d.jsonl"
    path.write_text(lines[0] + "\n\n" + '{"_id": "q2", oops}\n' + lines[2] + "\n", encoding="utf-8")
    assert _load_error(path).startswith(f"{path}: line 3: invalid JSON: ")


def test_missing_file(tmp_path: Path) -> None:
    assert _load_error(tmp_path / "nope.json") == f"{tmp_path / 'nope.json'}: file not found"


# --------------------------------------------------------------------------- sampling

POOL = [f"id-{i:03d}" for i in range(50)]


def test_sample_is_deterministic_and_order_independent() -> None:
    first = sample_ids(POOL, 10, seed=3)
    assert sample_ids(list(reversed(POOL)), 10, seed=3) == first
    assert sample_ids(POOL + POOL[:5], 10, seed=3) == first
    assert sample_ids(POOL, 10, seed=4) != first


def test_sample_is_deterministic_across_processes() -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from core.data import sample_ids;"
        "print(','.join(sample_ids([f'id-{i:03d}' for i in range(50)][::-1], 10, 3,"
        " {'id-001', 'id-040'})))"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True,
                       check=True, env=os.environ | {"PYTHONHASHSEED": seed}).stdout.strip()
        for seed in ("1", "2")
    }
    assert outputs == {",".join(sample_ids(POOL, 10, 3, {"id-001", "id-040"}))}


def test_sample_without_replacement_and_disjoint() -> None:
    exclude = set(POOL[::2])
    drawn = sample_ids(POOL + POOL, 25, seed=11, exclude=exclude)
    assert len(drawn) == len(set(drawn)) == 25
    assert set(drawn) <= set(POOL)
    assert not set(drawn) & exclude
    assert set(drawn) == set(POOL) - exclude


def test_sample_zero() -> None:
    assert sample_ids(POOL, 0, seed=1) == []


def test_sample_too_few() -> None:
    with pytest.raises(DataError, match=r"cannot sample 10 ids: only 3 available \(5 in pool, 2 "):
        sample_ids(["a", "b", "c", "d", "e"], 10, seed=1, exclude=["a", "b", "zz"])


def test_sample_negative_n() -> None:
    with pytest.raises(DataError, match="sample size"):
        sample_ids(POOL, -1, seed=1)


def test_ids_hash() -> None:
    expected = "c587492ba28757a9a5bc87417c913c5d998d34849aa2d3bbf2eb6a7cd423bc0a"
    assert ids_hash(["q1", "q2", "q3"]) == expected
    assert ids_hash(("q1", "q2", "q3")) == expected
    assert ids_hash(["q2", "q1", "q3"]) != expected
    assert ids_hash([]) == hashlib.sha256(b"").hexdigest()


# --------------------------------------------------------------------------- demo data


@pytest.fixture(scope="module")
def demo() -> list[Question]:
    return demo_questions()


def test_demo_size_and_ids(demo: list[Question]) -> None:
    assert len(demo) >= 48
    ids = [q.id for q in demo]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"demo-\d{3}", i) for i in ids)
    assert {q.dataset for q in demo} == {"demo"}
    assert {q.type for q in demo} == {"bridge", "comparison"}


def test_demo_paragraph_shape(demo: list[Question]) -> None:
    for q in demo:
        titles = [p.title for p in q.paragraphs]
        assert len(titles) == 10 and len(set(titles)) == 10, q.id
        assert sum(q.is_gold(i) for i in range(10)) == 2, q.id
        assert len(q.gold_titles) == 2, q.id
        assert all(3 <= len(p.sentences) <= 5 for p in q.paragraphs), q.id


def test_demo_gold_order_is_shuffled(demo: list[Question]) -> None:
    positions = {tuple(i for i in range(10) if q.is_gold(i)) for q in demo}
    assert len(positions) > 10


def test_demo_answers_in_supporting_sentences(demo: list[Question]) -> None:
    for q in demo:
        by_title = {p.title: p for p in q.paragraphs}
        for title, sent_id in q.supporting_facts:
            assert 0 <= sent_id < len(by_title[title].sentences), q.id
        supporting = [by_title[t].sentences[i] for t, i in q.supporting_facts]
        assert any(q.answer in s for s in supporting), q.id
        assert 1 <= len(q.answer.split()) <= 4, q.id
        assert (q.answer in q.question) == (q.type == "comparison"), q.id


def test_demo_gold_titles_are_reachable(demo: list[Question]) -> None:
    """Every gold title is named in the question or in the other gold paragraph."""
    for q in demo:
        gold = [p for i, p in enumerate(q.paragraphs) if q.is_gold(i)]
        for page, other in (gold, gold[::-1]):
            assert page.title in q.question or page.title in other.text, q.id
        assert any(p.title in q.question for p in gold), q.id


def test_demo_distractors_are_on_topic(demo: list[Question]) -> None:
    """Distractors come from the same world: their titles recur across questions."""
    gold_anywhere = {t for q in demo for t in q.gold_titles}
    for q in demo:
        distractors = [p.title for i, p in enumerate(q.paragraphs) if not q.is_gold(i)]
        assert len(distractors) == 8
        assert any(t in gold_anywhere for t in distractors), q.id


def test_demo_distractors_mention_gold_entities(demo: list[Question]) -> None:
    """Most questions have a distractor naming a gold entity, so title overlap misleads."""
    tricky = [
        q for q in demo
        if any(t in p.text for i, p in enumerate(q.paragraphs) if not q.is_gold(i)
               for t in q.gold_titles)
    ]
    assert len(tricky) >= len(demo) // 2


def test_demo_is_deterministic(demo: list[Question]) -> None:
    assert demo_questions() == demo
    code = (
        "import sys, hashlib; sys.path.insert(0, sys.argv[1]);"
        "from core.demo_data import demo_questions;"
        "print(hashlib.sha256(repr(demo_questions()).encode()).hexdigest())"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True,
                       check=True, env=os.environ | {"PYTHONHASHSEED": seed}).stdout.strip()
        for seed in ("5", "6")
    }
    assert outputs == {hashlib.sha256(repr(demo).encode()).hexdigest()}


def test_demo_survives_file_round_trip(tmp_path: Path, demo: list[Question]) -> None:
    path = _write(tmp_path / "demo.jsonl", [question_to_record(q) for q in demo])
    assert load_hotpotqa(path, dataset="demo") == demo


# --------------------------------------------------------------------------- dev file format


def test_dev_distractor_format_loads_exactly() -> None:
    questions = load_hotpotqa(DEV_FORMAT)
    assert [q.id for q in questions] == ["5c1f0a9e4b7d2e83a1f06b5d", "5c1f0a9e4b7d2e83a1f06b5e",
                                         "5c1f0a9e4b7d2e83a1f06b5f"]
    assert all(len(q.paragraphs) == 10 for q in questions)
    assert all(len(q.gold_titles) == 2 and q.level == "hard" for q in questions)
    assert [(q.type, q.answer) for q in questions] == [
        ("bridge", "Lake Orrin"), ("comparison", "yes"), ("bridge", "Sélune Press")]
    # sentences are kept as written (the leading space included); facts point into them
    pages = {p.title: p.sentences for p in questions[0].paragraphs}
    assert pages["Ada Brun"][0] == "Ada Brun (1931–2004) was a violinist and teacher."
    assert pages["Ada Brun"][2] == " Brun was born in Lake Orrin."
    assert questions[0].supporting_facts == (("Vellmore Quartet", 1), ("Ada Brun", 2))
    assert questions[2].supporting_facts[-1] == ("The Salt Ledger", 2)
    assert questions == load_hotpotqa(DEV_FORMAT, dataset="hotpotqa")  # the default name
    assert {q.dataset for q in load_hotpotqa(DEV_FORMAT, dataset="dev")} == {"dev"}


WRONG_KIND = {
    "hotpotqa": lambda: _official_records()[0],
    "musique": lambda: {"id": "2hop__1_2", "question": "Who?", "answer": "Ada",
                        "paragraphs": [{"idx": 0, "title": "A", "paragraph_text": "Ada.",
                                        "is_supporting": True}]},
    "fever": lambda: {"id": 97, "claim": "Ada is a violinist.", "label": "SUPPORTS",
                      "evidence_pages": ["Ada"]},
    "episodes": lambda: {"question_id": "q1", "regime": "persistent", "actions": ["search"],
                         "judgments": ["USELESS"], "success": False},
}
"""One record of each kind of import's file (what each import is given by mistake)."""


@pytest.mark.parametrize(("given", "to"), [(g, t) for g in WRONG_KIND
                                           for t in ("hotpotqa", "musique", "episodes", "fever")
                                           if g != t])
def test_a_file_of_another_kind_says_which_kind_and_its_command(
        given: str, to: str, tmp_path: Path, db_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A FEVER claims file, a MuSiQue file, a released-episodes file or a HotpotQA file given
    to another import is refused in one line naming what it is and the command that reads
    it; nothing is stored. (HotpotQA's official file is one JSON list: given to `episodes`,
    which reads JSON Lines, its first item is named. FEVER is a folder: the record is
    its claims.jsonl.)"""
    from tests.helpers.cli import dump_hash, lab, one_error

    record = WRONG_KIND[given]()
    path = tmp_path / ("given.json" if given == "hotpotqa" else "given.jsonl")
    if to == "fever":  # FEVER is a folder: the record as its claims.jsonl
        path = tmp_path / "claims.jsonl"
        (tmp_path / "pages.json").write_text("{}", encoding="utf-8")
    path.write_text(json.dumps([record]) if given == "hotpotqa" and to != "fever"
                    else json.dumps(record) + "\n", encoding="utf-8")
    assert lab(capsys, "--db", db_path, "init")[0] == 0
    before = dump_hash(db_path)
    code, _, err = lab(capsys, "--db", db_path, "data", "import", to,
                       tmp_path if to == "fever" else path)
    command = "lab data import fever DIR" if given == "fever" else f"lab data import {given}"
    one_error(code, err, str(path), command,
              "not a released episode" if to == "episodes" else "not a ")
    assert dump_hash(db_path) == before
