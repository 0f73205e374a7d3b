"""FEVER: the claims.jsonl + pages.json import, claim KBs, label scoring, balanced sets, prompts,
and every condition × regime through `lab try` on a demo claim."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.cli import main
from core import store
from core.conditions import ARMS, Condition, parse_condition
from core.data import TASK_FEVER, Question
from core.demo_data import demo_questions
from core.demo_fever import DEMO_FEVER_DATASET, demo_fever_questions
from core.episode import EpisodeResult
from core.errors import DataError
from core.fever import N_OTHER_PAGES, balanced_sample, load_fever, page_title
from core.kb import strip_supporting_facts
from core.models.registry import builtin_models, make_client
from core.react import EpisodeSetup, run_episode
from core.regimes import MEAN6, ForeignPool, parse_regime
from core.runner import CellSpec
from core.scoring import score_for_task
from jobs.kinds.episodes import run_questions
from tests.helpers.scripted import ScriptedClient

REGIMES = (*MEAN6, "plausible", "answerless")


def _claim(cid: int, label: str, page: str | None, line: int | None = 0,
           gold: str | None = None) -> dict:
    evidence = [[[cid, cid, page, line]]] if page else [[[cid, None, None, None]]]
    return {"id": cid, "claim": f"Claim number {cid} about {page or 'nothing'}.", "label": label,
            "evidence": evidence, "evidence_pages": [page] if page else [],
            "gold_evidence_sentence": None if gold is None else
            {"page": None, "line": None, "text": gold}}


def write_fever(folder: Path, claims: list[dict], pages: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "claims.jsonl").write_text("\n".join(json.dumps(c) for c in claims) + "\n")
    (folder / "pages.json").write_text(json.dumps(pages))
    return folder


def small_fever(folder: Path) -> Path:
    """12 SUPPORTS/REFUTES claims on their own pages (one -LRB- title), plus 3 NEI claims."""
    claims, pages = [], {}
    for i in range(12):
        page = f"Page_{i}" if i else "Soul_Food_-LRB-film-RRB-"
        pages[page] = {"lines": {"0": f"Sentence zero of page {i} .",
                                 "2": f"Evidence line two of page {i} -LRB- gold -RRB- ."},
                       "unplaced": []}
        claims.append(_claim(100 + i, "SUPPORTS" if i % 2 else "REFUTES", page, 2))
    claims += [_claim(200 + i, "NOT ENOUGH INFO", None) for i in range(3)]
    return write_fever(folder, claims, pages)


# --------------------------------------------------------------------------- import


def test_import_skips_nei_and_says_how_many(tmp_path: Path, db_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = small_fever(tmp_path / "fever")
    assert main(["--db", str(db_path), "data", "import", "fever", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "imported 12 claims" in out and "skipped 3 NOT ENOUGH INFO claims" in out
    db = store.connect(db_path)
    assert store.datasets(db)["fever"] == 12
    assert main(["--db", str(db_path), "data", "import", "fever", str(folder), "--dataset",
                 "fever_nei", "--include-nei"]) == 1  # same ids, other content: refused
    assert main(["--db", str(tmp_path / "b.db"), "data", "import", "fever", str(folder),
                 "--include-nei"]) == 0
    assert "imported 15 claims" in capsys.readouterr().out


@pytest.mark.parametrize("mutate, message", [
    (lambda c, p: c[2].update(label="MAYBE"), "claims.jsonl: record 2: label must be one of"),
    (lambda c, p: c[4].pop("claim"), "claims.jsonl: record 4: claim must be a non-empty string"),
    (lambda c, p: c[1].update(evidence=[[["x", 1, "Page_1"]]]), "record 1: evidence[0]"),
    (lambda c, p: c[3].update(id=c[0]["id"]), "record 3: duplicate id '100'"),
    (lambda c, p: p["Page_3"].update(lines={"two": "x"}), "pages.json: page 'Page_3': line key"),
])
def test_import_errors_are_one_line_and_store_nothing(tmp_path: Path, db_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      mutate: Callable[[list[dict[str, Any]],
                                                                        dict[str, Any]], object],
                                                      message: str) -> None:
    folder = small_fever(tmp_path / "fever")
    claims = [json.loads(x) for x in (folder / "claims.jsonl").read_text().splitlines()]
    pages = json.loads((folder / "pages.json").read_text())
    mutate(claims, pages)
    write_fever(folder, claims, pages)
    assert main(["--db", str(db_path), "data", "import", "fever", str(folder)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("error: ")
    assert "fever" not in store.datasets(store.connect(db_path))


def test_import_needs_both_files(tmp_path: Path, db_path: Path, capsys: pytest.CaptureFixture[str]
                                ) -> None:
    folder = small_fever(tmp_path / "fever")
    (folder / "pages.json").unlink()
    assert main(["--db", str(db_path), "data", "import", "fever", str(folder)]) == 1
    assert capsys.readouterr().err == (
        f"error: {folder}: no pages.json (a FEVER folder holds claims.jsonl and pages.json); "
        "it holds claims.jsonl\n")
    # the folder of another dataset's file: what it holds, so the wrong folder shows
    other = tmp_path / "hotpot"
    other.mkdir()
    for name in ("dev.json", "train.json", "notes.txt", "a.json", "b.json"):
        (other / name).write_text("[]")
    assert main(["--db", str(db_path), "data", "import", "fever", str(other)]) == 1
    assert capsys.readouterr().err.endswith(
        "no claims.jsonl and no pages.json (a FEVER folder holds claims.jsonl and pages.json); "
        "it holds a.json, b.json, dev.json, notes.txt and 1 more\n")
    assert main(["--db", str(db_path), "data", "import", "hotpotqa", str(folder)]) == 1
    assert "is a directory" in capsys.readouterr().err


def test_kb_is_evidence_plus_eight_drawn_by_claim_id(tmp_path: Path) -> None:
    folder = small_fever(tmp_path / "fever")
    questions = load_fever(folder).questions
    evidence = {page_title(f"Page_{i}") for i in range(1, 12)} | {"Soul Food (film)"}
    for q in questions:
        titles = [p.title for p in q.paragraphs]
        assert q.task == TASK_FEVER and q.answer in ("SUPPORTS", "REFUTES")
        assert len(titles) == 1 + N_OTHER_PAGES == len(set(titles))
        assert q.gold_titles <= set(titles) and set(titles) <= evidence
        (title, j), = q.supporting_facts  # the annotated line, in the page's line order
        assert q.paragraphs[titles.index(title)].sentences[j].startswith("Evidence line two")
    assert "Soul Food (film)" in {p.title for p in questions[0].paragraphs}
    assert "(gold)" in questions[0].paragraphs[0].text or any(
        "( gold )" in p.text for p in questions[0].paragraphs)
    # the draw depends on the claim id, not on the file's order
    lines = (folder / "claims.jsonl").read_text().splitlines()
    (folder / "claims.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    again = {q.id: q for q in load_fever(folder).questions}
    assert all(again[q.id] == q for q in questions)


def test_a_claim_whose_pages_are_missing_gets_its_gold_sentence_as_a_page(tmp_path: Path) -> None:
    folder = small_fever(tmp_path / "fever")
    claims = [json.loads(x) for x in (folder / "claims.jsonl").read_text().splitlines()]
    claims.append({**_claim(300, "REFUTES", "Backbeat_-LRB-film-RRB-", None,
                            gold="Lee relocated to Seattle to work in theater ."),
                   "evidence_pages": ["Backbeat_-LRB-film-RRB-", "Sheryl_Lee"]})
    claims.append(_claim(301, "SUPPORTS", "Nowhere", None))  # no text at all: skipped
    write_fever(folder, claims, json.loads((folder / "pages.json").read_text()))
    read = load_fever(folder)
    q = next(q for q in read.questions if q.id == "300")
    assert q.supporting_facts == (("Sheryl Lee", 0),)  # the title sharing a word, not "(film)"
    assert read.skipped_no_text == 1 and "301" not in {x.id for x in read.questions}


def test_answerless_claims_lose_their_evidence_sentences() -> None:
    q = demo_fever_questions()[0]
    stripped = {p.title: p.text for p in strip_supporting_facts(q)}
    (title, j), = q.supporting_facts
    evidence = next(p for p in q.paragraphs if p.title == title).sentences[j]
    assert evidence not in stripped[title] and stripped[title]


# --------------------------------------------------------------------------- scoring and sets


def test_labels_are_scored_as_the_harness_reads_them_and_answers_by_f1() -> None:
    # a verdict is the one of SUPPORT/REFUT that occurs in the answer (the paper's
    # harness); a sentence around it counts, both stems in one answer do not
    assert score_for_task("SUPPORTS", "SUPPORTS", "fever").correct
    assert score_for_task("refutes.", "REFUTES", "fever").correct
    assert score_for_task("The claim is supported", "SUPPORTS", "fever").correct
    assert not score_for_task("SUPPORTS or REFUTES", "SUPPORTS", "fever").correct
    assert not score_for_task("REFUTES", "SUPPORTS", "fever").correct
    assert not score_for_task(None, "SUPPORTS", "fever").correct
    assert score_for_task("the Eiffel tower", "Eiffel Tower", "hotpotqa").correct
    with pytest.raises(ValueError):
        score_for_task("x", "x", "trivia")


def test_demo_claims_are_balanced_and_stable() -> None:
    claims = demo_fever_questions()
    assert len(claims) >= 20 and claims == demo_fever_questions()
    labels = [q.answer for q in claims]
    assert labels.count("SUPPORTS") == labels.count("REFUTES")
    assert {q.dataset for q in claims} == {DEMO_FEVER_DATASET}


def test_balanced_sample() -> None:
    labels = {f"s{i}": "SUPPORTS" for i in range(10)} | {f"r{i}": "REFUTES" for i in range(30)}
    ids = balanced_sample(labels, 12, seed=4)
    assert len(ids) == len(set(ids)) == 12 and ids == balanced_sample(labels, 12, seed=4)
    assert sum(labels[i] == "SUPPORTS" for i in ids) == 6
    other = balanced_sample(labels, 8, seed=5, exclude=ids)
    assert not set(other) & set(ids)
    with pytest.raises(DataError, match="multiple of 2"):
        balanced_sample(labels, 7, seed=1)
    with pytest.raises(DataError, match="SUPPORTS claims: cannot sample 11"):
        balanced_sample(labels, 22, seed=1)


def test_sets_create_draws_balanced_fever_sets(db_path: Path, capsys: pytest.CaptureFixture[str]
                                              ) -> None:
    args = ["--db", str(db_path), "sets", "create"]
    assert main([*args, "fv10", "--dataset", DEMO_FEVER_DATASET, "--n", "10", "--seed", "2"]) == 0
    assert "(5 REFUTES, 5 SUPPORTS)" in capsys.readouterr().out
    db = store.connect(db_path)
    ids = store.question_set(db, "fv10")["ids"]
    gold = {q.id: q.answer for q in demo_fever_questions()}
    assert sorted(gold[i] for i in ids) == ["REFUTES"] * 5 + ["SUPPORTS"] * 5
    assert main([*args, "fv9", "--dataset", DEMO_FEVER_DATASET, "--n", "9", "--seed", "2"]) == 1
    assert "multiple of 2" in capsys.readouterr().err


# --------------------------------------------------------------------------- episodes


def test_fever_episodes_see_the_fever_prompts() -> None:
    q = demo_fever_questions()[0]
    client = ScriptedClient(acts=[
        "Thought: check it\nAction: search\nAction Input: Varnholt Bridge",
        "Thought: supported\nAction: finish\nAction Input: SUPPORTS"])
    setup = EpisodeSetup(question=q, condition=Condition("enforced_rule"),
                         regime=parse_regime("clean"), budget=8, seed=0,
                         pool=ForeignPool(demo_fever_questions()))
    result = asyncio.run(run_episode(setup, client.start(None)))  # type: ignore[arg-type]
    assert result.correct and result.answer == "SUPPORTS"
    kind, messages = client.calls[0]
    assert "SUPPORTS, REFUTES" in messages[0]["content"]
    assert messages[1]["content"] == f"Verify this claim: {q.question}"
    judge = next(m for k, m in client.calls if k == "judge")
    assert "verify the original claim" in judge[-1]["content"]
    assert {"prompts/fever_system.txt", "prompts/fever_question.txt"} <= set(result.prompts)
    assert "prompts/system.txt" not in result.prompts


def _conditions() -> list[str]:
    return [f"{name}:rate=0.5" if name == "random_rule" else name for name in ARMS]


def test_every_condition_and_regime_runs_on_fever_through_lab_try(db_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]
                                                                 ) -> None:
    """`lab try` with a sim over every condition × regime on one demo claim."""
    for condition in _conditions():
        for regime in REGIMES:
            code = main(["--db", str(db_path), "try", "--model", "sim-own3", "--condition",
                         condition, "--regime", regime, "--question", "demo-fever-002"])
            captured = capsys.readouterr()
            assert code == 0, (condition, regime, captured.err)
            assert "Osric Tellaway was born in a coastal village." in captured.out
            assert "gold: 'REFUTES'" in captured.out
            assert "answer: 'SUPPORTS'" in captured.out or "answer: 'REFUTES'" in captured.out \
                or "unanswered" in captured.out


async def _two_datasets(path: Path) -> None:
    db = store.connect(path)
    hotpot, fever = demo_questions()[:6], demo_fever_questions()[:6]
    store.insert_questions(db, hotpot + fever)
    run_id, spec = store.ensure_run(db, "main"), builtin_models()["sim-own3"]
    for name, questions in (("hp6", hotpot), ("fv6", fever)):
        ids = [q.id for q in questions]
        store.save_question_set(db, name, questions[0].dataset, ids, 0, [], False, "x" * 64)
        for regime in ("clean", "persistent"):
            cell = CellSpec(spec, parse_condition("enforced_rule:k=3"), parse_regime(regime),
                            name, 8, 0)
            cell_id = store.ensure_cell(db, run_id, cell.columns())
            await run_questions(db, cell_id, cell, questions, ForeignPool(questions),
                                make_client(spec))


def test_results_keep_datasets_apart(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(_two_datasets(db_path))
    frame = store.episodes_frame(store.connect(db_path))
    assert set(frame["dataset"]) == {"demo", DEMO_FEVER_DATASET}
    fever = frame[frame["dataset"] == DEMO_FEVER_DATASET]
    assert set(fever["answer"].dropna()) <= {"SUPPORTS", "REFUTES"}
    assert fever["correct"].any()
    capsys.readouterr()
    assert main(["--db", str(db_path), "results", "success", "--format", "json",
                 "--resamples", "20"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_dataset = {(r["dataset"], r["question_set"]) for r in rows}
    assert by_dataset == {("demo", "hp6"), (DEMO_FEVER_DATASET, "fv6")}


def test_a_verdict_is_shown_right_or_wrong_with_no_f1(db_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A FEVER verdict is scored by its exact label (its stored F1 is only 1.0 or 0.0), so
    where an episode's answer is shown (Trajectories, Live's outcome, `lab tail`, `lab
    try`) a verdict reads right or wrong with no "F1"; a HotpotQA answer keeps its F1."""
    from console.render import summary_lines
    from console.screens.live import outcome_text
    from console.widgets.traj_render import episode_head
    from core.store import jobs as ledger
    from core.store.trajectories import episode_detail

    asyncio.run(_two_datasets(db_path))
    db = store.connect(db_path)
    shown = {}
    for dataset in ("demo", DEMO_FEVER_DATASET):
        (episode_id,) = db.conn.execute(
            "SELECT e.id FROM episodes e JOIN questions q ON q.id = e.question_id "
            "WHERE q.dataset = ? AND e.answer IS NOT NULL ORDER BY e.id LIMIT 1",
            (dataset,)).fetchone()
        detail = episode_detail(db, episode_id)
        row = ledger.episode_row(db, episode_id)
        assert row is not None
        capsys.readouterr()
        assert main(["--db", str(db_path), "tail", str(episode_id)]) == 0
        tail = capsys.readouterr().out.splitlines()[-2]
        shown[dataset] = (detail.task, episode_head(detail, 120).plain,
                          outcome_text(row).plain, tail)
    task, head, live, tail = shown[DEMO_FEVER_DATASET]
    assert task == "fever"
    for text in (head, live, tail):
        assert "F1" not in text, text
        assert re.search(r"gold:? '(SUPPORTS|REFUTES)'", text), text
    task, head, live, tail = shown["demo"]
    assert task == "hotpotqa"
    for text in (head, live, tail):
        assert "F1 " in text, text
    verdict = EpisodeResult(question_id="c", answered=True, answer="SUPPORTS", answer_action=3,
                            correct=False, f1=0.0)
    assert "F1" not in summary_lines(verdict, "REFUTES", TASK_FEVER)[0]
    assert "F1 0.00" in summary_lines(verdict, "REFUTES")[0]


DEV_FORMAT = Path(__file__).parent / "data" / "fever"
"""15 invented claims written by hand in FEVER 1.0 dev's own layout (claims.jsonl with
verifiable, source_split and gold_evidence_sentence; pages.json of partial pages in
FEVER's tokens): lines pages.json lacks, a gold sentence whose page is unknown, one
among a page's unplaced sentences, one on no page at all, a claim outside paper_dev
without sentence annotations, two NOT ENOUGH INFO claims."""


def _fact(q: Question, i: int = 0) -> tuple[str, str]:
    title, line = q.supporting_facts[i]
    (page,) = [p for p in q.paragraphs if p.title == title]
    return title, page.sentences[line]


def test_dev_format_sample_imports_13_and_skips_2(db_path: Path, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    assert main(["--db", str(db_path), "data", "import", "fever", str(DEV_FORMAT)]) == 0
    out = capsys.readouterr().out
    assert "imported 13 claims" in out and "skipped 2 NOT ENOUGH INFO claims" in out
    questions = {q.id: q for q in store.load_questions(store.connect(db_path), dataset="fever")}
    assert len(questions) == 13
    for q in questions.values():  # its evidence pages and N_OTHER_PAGES others
        assert q.supporting_facts
        assert len(q.paragraphs) == len({t for t, _ in q.supporting_facts}) + N_OTHER_PAGES
    assert _fact(questions["1201"]) == ("Ada Brun", "Ada Brun ( 1931 -- 2004 ) was a violinist "
                                                    "and teacher .")
    assert _fact(questions["1201"], 1) == ("Ada Brun", "Brun was born in Lake Orrin .")
    assert _fact(questions["1202"]) == ("Vellmore Quartet", "The Vellmore Quartet is a string "
                                                            "quartet from Harlow Bay .")
    assert _fact(questions["1203"]) == ("Harlow Bay (town)",
                                        "Harlow Bay is a port town on the east coast .")
    assert _fact(questions["1204"]) == ("Skerry Isles", "The Skerry Isles are a group of small "
                                                        "islands off the east coast .")
    assert _fact(questions["1205"]) == ("Sallow cycle", "It was first played in 1949 at the "
                                                        "`` Omsby Rooms '' .")
    assert _fact(questions["1206"])[0] == "Sallow cycle"  # outside paper_dev: gold text only
    assert {q.answer for q in questions.values()} == {"SUPPORTS", "REFUTES"}
