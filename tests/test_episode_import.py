"""`lab data import episodes`: released episode files come into lab as an imported run.

The hand-made file (tests/helpers/released.py, HAND) is read through every table and
each value is worked out by hand below. Malformed files store nothing. The released
development cell, where it is beside the checkout, gives the published Δ.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core import store
from core.episode_import import read_episode_import, store_episode_import
from core.store.imports import imports, question_datasets
from tests.helpers.builders import make_question
from tests.helpers.cli import dump_hash, lab, one_error
from tests.helpers.released import (
    CELL_CI,
    CELL_DELTA,
    CELL_SUCCESS,
    HAND,
    released_cell,
    write_released,
)


def _import(capsys: pytest.CaptureFixture[str], db_path: Path, *args: object) -> str:
    code, out, err = lab(capsys, "--db", db_path, "data", "import", "episodes", *args)
    assert code == 0, err
    return out


def _results(capsys: pytest.CaptureFixture[str], db_path: Path, *args: object
             ) -> list[dict[str, Any]]:
    code, out, err = lab(capsys, "--db", db_path, "results", *args, "--format", "json",
                         "--resamples", "50")
    assert code == 0, err
    return list(json.loads(out))


@pytest.fixture
def hand_db(tmp_path: Path, db_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = _import(capsys, db_path, write_released(tmp_path / "m1.jsonl", HAND))
    assert "imported 6 episodes from 1 file into run 's1' (3 cells: m1 enforced_rule)" in out
    assert "2 questions not in lab.db yet" in out
    return db_path


def test_success_per_regime_is_the_records_success(hand_db: Path, capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    rows = {r["scope"]: r for r in _results(capsys, hand_db, "success")
            if r["table"] == "success"}
    # persistent: q1 and q2 wrong; recover_after_1: both right; clean: q1 right, q2 wrong
    assert {k: (r["estimate"], r["n"]) for k, r in rows.items()} == {
        "persistent": (0.0, 2), "recover_after_1": (1.0, 2), "clean": (0.5, 2),
        "mean6": (None, 2)}  # mean6 needs all six regimes
    assert {r["dataset"] for r in rows.values()} == {"hotpotqa"}  # by the question refs
    assert {r["runs"] for r in rows.values()} == {"s1"}


def test_delta_counts_an_invalid_turn_as_an_observation_not_answered(
        hand_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = {r["scope"]: r for r in _results(capsys, hand_db, "delta")}
    row = rows["own judgments, by t"]
    # decisions after t = 3..6 results (final action excluded), group (a) run = t,
    # group (b) 1 <= run <= t-2:
    #   q1 persistent       U U U U: t3 a (search), t4 a (finish)
    #   q1 recover_after_1  F U F U U: t4 run 1 b (search), t5 run 2 b (finish)
    #   q2 persistent       U invalid(null) U U U U U: the invalid turn is observation 2,
    #                       resetting the run: t3..t6 runs 1..4 all b, none answered
    #   q2 recover_after_1  U U U: t3 a (finish)
    # t3: a 1/2, b 0/1, w = 2/3, diff 1/2; t4: a 1/1, b 0/2, w = 2/3, diff 1;
    # t5, t6: no (a). Δ = (2/3·1/2 + 2/3·1) / (4/3) = 0.75
    assert row["estimate"] == pytest.approx(0.75, abs=1e-12)
    assert row["detail"] == "a 2/3, b 1/6" and row["n"] == 9
    assert row["judgments"] == "side_channel 9"
    assert rows["stated judgments, by t"]["n"] == 0  # no stated judgments were released


def test_hazard_and_index_read_the_regimes_design_labels(hand_db: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    rows = _results(capsys, hand_db, "hazard")
    hazard = {r["scope"]: (r["estimate"], r["n"]) for r in rows
              if r["table"] == "hazard" and r["measure"] == "hazard"}
    # design run j over persistent and recover_after_1 (recover_after_1 fails only the
    # first search; an invalid turn is no failed result and resets j), final action out:
    # j=0: q1 rec obs 2-5 (finish at 5), q2 rec obs 2-3 (finish at 3), q2 pers obs 2 → 2/7
    # j=1: q1 pers 1, q1 rec 1, q2 pers 1 and 3 (after the reset), q2 rec 1 → 0/5
    # j=2, 3: q1 pers and q2 pers → 0/2 each; j=4: q1 pers finishes, q2 pers not → 1/2
    # j=5: q2 pers obs 7 is followed by the final action → no decision
    assert hazard["j=0"] == (pytest.approx(2 / 7), 7)
    assert hazard["j=1"] == (0.0, 5)
    assert hazard["j=2"] == hazard["j=3"] == (0.0, 2)
    assert hazard["j=4"] == (0.5, 2)
    assert hazard["j=5"] == (None, 0)
    index = {r["measure"]: (r["estimate"], r["n"]) for r in _results(capsys, hand_db, "index")}
    assert index == {"I": (0.5, 9), "h45": (0.5, 2), "h12": (0.0, 7)}


def test_judgment_rates_count_released_judgments(hand_db: Path, capsys: pytest.CaptureFixture[str]
                                                ) -> None:
    rows = {r["measure"]: r for r in _results(capsys, hand_db, "judgments")}
    # failed results judged: q1 pers 4 U; q1 rec obs 1 USEFUL; q2 pers 6 U (obs 8 not
    # judged, the invalid turn is no failed result); q2 rec obs 1 U → 11/12
    assert rows["USELESS on failed"]["detail"] == "11/12"
    # real results judged: q1 rec U F U U, q2 rec U U, q1 clean USEFUL, q2 clean
    # UNPARSED → 5/8
    assert rows["USELESS on real"]["detail"] == "5/8"
    # run of 5 USELESS reached once (q2 persistent), and not answered
    assert rows["answered after 5 own useless"]["detail"] == "0/1"


def test_cost_shows_no_tokens_dollars_or_tpc_for_calls_made_elsewhere(
        hand_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Released episodes carry no tokens or dollars: the cost table leaves those and TPC
    empty (TPC from zero tokens would be 500·calls/correct, a number that means something
    else), while the calls and success counted from the actions stay."""
    rows = [r for r in _results(capsys, hand_db, "cost") if r["table"] == "cost"]
    by_measure: dict[str, list[Any]] = {}
    for r in rows:
        by_measure.setdefault(r["measure"], []).append(r["estimate"])
    for measure in ("input tokens", "output tokens", "cache read tokens",
                    "cache write tokens", "dollars", "TPC"):
        assert by_measure[measure] and set(by_measure[measure]) == {None}, measure
    assert all(v is not None and v > 0 for v in by_measure["tool calls"])


def test_judgments_asked_in_the_run_are_the_conditions_own_calls(
        tmp_path: Path, db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An arm that asked for its judgments in the run (enforced_rule) made one judgment
    call for each judgment given, UNPARSED too: the cost table's own calls, charged in
    utility (all calls). The unaided arm's judgments were replayed by the authors on the
    recorded trajectories: no call of the run."""
    unaided = [{**r, "condition": "unaided", "split": "s2"} for r in HAND]
    _import(capsys, db_path, write_released(tmp_path / "m1.jsonl", HAND))
    _import(capsys, db_path, write_released(tmp_path / "m1u.jsonl", unaided))
    rows = _results(capsys, db_path, "cost")
    calls = {(r["arm"], r["measure"]): r["estimate"] for r in rows if r["table"] == "cost"
             and r["measure"] in ("own calls", "measurement calls")}
    # HAND's six records give 4 + 5 + 6 + 3 + 1 + 1 judgments
    assert calls == {("enforced_rule", "own calls"): pytest.approx(20 / 6),
                     ("enforced_rule", "measurement calls"): 0.0,
                     ("none", "own calls"): 0.0, ("none", "measurement calls"): 0.0}


def test_the_dashboards_spend_leaves_imported_episodes_out_and_says_so(hand_db: Path) -> None:
    """The Dashboard's spend counts what was spent here: imported episodes (no tokens, no
    dollars) are no row of zeros but a count in the title."""
    from console.screens.dashboard import spend_title
    from core.store import monitor

    spent = monitor.spend_counted(store.connect(hand_db))
    assert spent.rows == [] and spent.made_elsewhere == 6
    assert "6 imported (no tokens: run elsewhere) are not spend" in spend_title(spent)


def test_episodes_carry_no_text_and_keep_their_actions(hand_db: Path) -> None:
    db = store.connect(hand_db)
    row = db.conn.execute(
        "SELECT e.id, e.answered, e.correct, e.tool_calls, e.format_failures, e.end_reason, "
        "e.answer, e.server FROM episodes e JOIN cells c ON c.id = e.cell_id "
        "WHERE c.regime = 'persistent' AND e.question_id = 'q2'").fetchone()
    assert tuple(row[1:]) == (0, 0, 7, 1, "budget", None, "imported")
    steps = store.episode_steps(db, row[0])
    assert [s.action for s in steps] == ["search", "invalid"] + ["search"] * 6
    assert [s.obs_index for s in steps] == list(range(1, 9))
    assert [s.obs_failed for s in steps] == [True, None] + [True] * 6
    assert {s.raw for s in steps} == {""} and {s.thought for s in steps} == {""}
    assert [s.streak for s in steps] == [1, 0, 1, 2, 3, 4, 5, 0]
    cells = db.conn.execute("SELECT model, model_spec, condition, budget, seed, "
                            "question_set FROM cells ORDER BY id").fetchall()
    assert {c[:5] for c in cells} == {
        ("m1", '{"backend":"imported","name":"m1"}', "enforced_rule", 8, 0)}
    assert {c[5] for c in cells} == {None}  # no set named s1


def test_the_run_records_its_source_file(hand_db: Path, tmp_path: Path) -> None:
    db = store.connect(hand_db)
    (f,) = imports(db, "s1")
    import hashlib
    assert f.file == "m1.jsonl" and f.records == 6 and f.split == "s1"
    assert f.sha256 == hashlib.sha256((tmp_path / "m1.jsonl").read_bytes()).hexdigest()
    assert "CC BY 4.0" in f.license


def test_unknown_questions_link_up_when_their_dataset_is_imported(hand_db: Path) -> None:
    db = store.connect(hand_db)
    assert question_datasets(db) == {"q1": "hotpotqa", "q2": "hotpotqa"}
    store.insert_questions(db, [replace(make_question("q1"), dataset="hotpotqa")])
    assert question_datasets(db)["q1"] == "hotpotqa"
    from core.store.trajectories import episode_detail
    eid = db.conn.execute("SELECT min(id) FROM episodes WHERE question_id = 'q1'").fetchone()[0]
    assert episode_detail(db, eid).question == make_question("q1").question


def test_flags_fill_what_a_file_lacks_and_gz_reads_the_same(tmp_path: Path, db_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    path = write_released(tmp_path / "cell.jsonl.gz", HAND[:2],
                          drop=("model", "condition", "split"))
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "episodes", path)
    one_error(code, err, "cell.jsonl.gz", "line 1", "condition")
    out = _import(capsys, db_path, path, "--model", "m2", "--condition", "unaided", "--run",
                  "r2")
    assert "into run 'r2'" in out
    db = store.connect(db_path)
    assert db.conn.execute("SELECT DISTINCT model, condition FROM cells").fetchall() == [
        ("m2", "none")]
    steps = db.conn.execute("SELECT DISTINCT judgment_source FROM steps "
                            "WHERE judgment IS NOT NULL").fetchall()
    assert steps == [("released",)]  # replayed by the authors, not asked in the run


@pytest.mark.parametrize("splits, said", [
    ((None, None), "the records name no split; give the run to import into with --run NAME"),
    (("s1", None), "the records name the split s1 and some records none; give the run"),
    (("s1", "s2"), "the records name 2 splits (s1, s2); give the run"),
])
def test_without_one_split_the_run_is_asked_for_in_words(splits: tuple[str | None, ...], said: str,
                                                         tmp_path: Path, db_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """A file naming no split (as the paper's released cells), or several, asks for
    --run; the line says which, without "1 splits (none)"."""
    paths = [write_released(tmp_path / f"f{i}.jsonl", HAND[i:i + 1],
                            drop=("split",) if split is None else ())
             for i, split in enumerate(splits)]
    for path, split in zip(paths, splits):
        if split is not None:
            lines = [dict(json.loads(x), split=split) for x in path.read_text().splitlines()]
            path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "episodes", *paths)
    one_error(code, err, said)


def test_a_flag_that_contradicts_the_file_is_refused(tmp_path: Path, db_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = write_released(tmp_path / "m1.jsonl", HAND)
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "episodes", path,
                       "--model", "other")
    one_error(code, err, "m1.jsonl", "line 1", "model", "other")


def _bad(records: list[dict[str, Any]], line: int, **change: Any) -> list[dict[str, Any]]:
    out = [dict(r) for r in records]
    for key, value in change.items():
        if value is ...:
            del out[line - 1][key]
        else:
            out[line - 1][key] = value
    return out


BAD = {
    "missing field": (_bad(list(HAND), 3, success=...), ("line 3", "success", "missing")),
    "bad action": (_bad(list(HAND), 2, actions=["search", "jump", "finish"],
                        judgments=["USELESS", None]), ("line 2", "actions", "jump")),
    "finish not last": (_bad(list(HAND), 2, actions=["finish", "search"], judgments=[None]),
                        ("line 2", "actions", "finish")),
    "bad judgment": (_bad(list(HAND), 4, judgments=["USELESS", "maybe", "USELESS"]),
                     ("line 4", "judgments", "maybe")),
    "lengths differ": (_bad(list(HAND), 5, judgments=["USEFUL", None, None]),
                       ("line 5", "judgments", "3 judgments")),
    "success not bool": (_bad(list(HAND), 1, success="yes"), ("line 1", "success")),
    "success without answer": (_bad(list(HAND), 3, success=True), ("line 3", "success")),
    "bad regime": (_bad(list(HAND), 2, regime="stormy"), ("line 2", "regime", "stormy")),
    "bad condition": (_bad(list(HAND), 6, condition="yolo"), ("line 6", "condition", "yolo")),
    "over budget": (_bad(list(HAND), 1, actions=["search"] * 9, judgments=[None] * 9),
                    ("line 1", "actions", "budget")),
    "episode twice": (list(HAND) + [HAND[0]], ("line 7", "question_id", "line 1")),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_malformed_file_stores_nothing(case: str, tmp_path: Path, db_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    records, words = BAD[case]
    path = write_released(tmp_path / "bad.jsonl", records)
    good = write_released(tmp_path / "good.jsonl", HAND, drop=("split",))
    store.connect(db_path).close()
    before = dump_hash(db_path)
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "episodes", good, path,
                       "--run", "r")
    one_error(code, err, "bad.jsonl", *words)
    assert dump_hash(db_path) == before


def test_a_line_that_is_no_json_stores_nothing(tmp_path: Path, db_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = write_released(tmp_path / "bad.jsonl", HAND)
    path.write_text(path.read_text() + '{"question_id": "q9", \n', encoding="utf-8")
    store.connect(db_path).close()
    before = dump_hash(db_path)
    code, _, err = lab(capsys, "--db", db_path, "data", "import", "episodes", path)
    one_error(code, err, "bad.jsonl", "line 7", "invalid JSON")
    assert dump_hash(db_path) == before


def test_imported_runs_never_mix_with_run_episodes(hand_db: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # a second import of the same episodes into the run: refused, nothing stored
    before = dump_hash(hand_db)
    code, _, err = lab(capsys, "--db", hand_db, "data", "import", "episodes",
                       write_released(tmp_path / "again.jsonl", HAND[:1]))
    one_error(code, err, "s1", "q1", "already")
    assert dump_hash(hand_db) == before
    code, _, err = lab(capsys, "--db", hand_db, "demo-set")
    code, _, err = lab(capsys, "--db", hand_db, "enqueue", "--models", "sim-never",
                       "--conditions", "none", "--regimes", "clean", "--set", "demo",
                       "--run", "s1")
    one_error(code, err, "s1", "imported")


def test_a_question_of_another_dataset_is_refused(hand_db: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    db = store.connect(hand_db)
    store.insert_questions(db, [replace(make_question("q7"), dataset="other")])
    db.close()
    records = [dict(HAND[0], question_id="q7")]
    code, _, err = lab(capsys, "--db", hand_db, "data", "import", "episodes",
                       write_released(tmp_path / "o.jsonl", records), "--run", "r3")
    one_error(code, err, "o.jsonl", "line 1", "q7", "other", "--dataset")


def test_import_reads_files_without_touching_lab_db(tmp_path: Path, db_path: Path) -> None:
    db = store.connect(db_path)
    before = dump_hash(db_path)
    plan = read_episode_import(db, [write_released(tmp_path / "m1.jsonl", HAND)])
    assert dump_hash(db_path) == before
    assert plan.run == "s1" and plan.episodes == 6 and plan.unknown == ("q1", "q2")
    assert store_episode_import(db, plan) == 6


def test_the_released_cell_gives_the_published_delta(tmp_path: Path, db_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cell = released_cell()
    if cell is None:
        pytest.skip("the released development cell is not beside this checkout "
                    "(set LAB_PAPER_EPISODES to it)")
    _import(capsys, db_path, cell, "--model", "qwen3-8b", "--condition", "enforced_rule",
            "--run", "test300")
    code, out, err = lab(capsys, "--db", db_path, "results", "delta", "--format", "json")
    assert code == 0, err
    row = next(r for r in json.loads(out) if r["scope"] == "own judgments, by t")
    assert row["estimate"] == pytest.approx(CELL_DELTA, rel=1e-12)
    assert abs(row["ci_low"] - CELL_CI[0]) < 0.005 and abs(row["ci_high"] - CELL_CI[1]) < 0.005
    success = {r["scope"]: r for r in _results(capsys, db_path, "success")
               if r["table"] == "success" and r["scope"] in CELL_SUCCESS}
    assert {k: round(r["estimate"] * r["n"]) for k, r in success.items()} == CELL_SUCCESS
    assert {r["n"] for r in success.values()} == {300}


def test_a_table_says_imported_episodes_belong_to_no_question_set(
        hand_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Beside a run on a question set, the imported run's `set` cell reads "–", not blank."""
    for args in (("demo-set",),
                 ("enqueue", "--models", "sim-never", "--conditions", "enforced_rule",
                  "--regimes", "clean", "--set", "demo", "--run", "s2"),
                 ("worker", "--until-idle")):
        code, _, err = lab(capsys, "--db", hand_db, *args)
        assert code == 0, err
    code, out, err = lab(capsys, "--db", hand_db, "results", "success", "--resamples", "50")
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("model "))
    cells = {line.split()[0]: line.split()
             for line in out.splitlines() if line.startswith(("m1 ", "sim-never "))}
    assert "set" in header.split(), header
    column = header.split().index("set")
    assert cells["m1"][column] == "–" and cells["sim-never"][column] == "demo", out
