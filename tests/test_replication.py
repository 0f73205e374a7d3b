"""`lab data import paper-values` and `lab results replication`: published values come in
as a named reference set, and each line of a run is set beside its published value (or
another run's line) with the difference and whether the intervals overlap.

A released-format file is written here by hand (two models, the six regimes, two
questions) and its Δ and mean6 are worked out below; the published values are written
by hand around them. Malformed files store nothing. The released development cell,
where it is beside the checkout, shows difference 0 against its published Δ.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from core import store
from tests.helpers.cli import dump_hash, lab, one_error
from tests.helpers.console import FIXED_TS, wait_workers
from tests.helpers.released import CELL_CI, CELL_DELTA, released_cell, write_released

U, F, N = "USELESS", "USEFUL", None
S, INV, FIN = "search", "invalid", "finish"
EPISODES = (
    # the first four are tests/helpers/released.py's HAND: Δ on them is 0.75 (worked out
    # in tests/test_episode_import.py); the others answer after one result, so they add
    # no decision after 3–6 results, except clean q1 (see the Δ test)
    ("q1", "persistent", [S, S, S, S, FIN], [U, U, U, U], False),
    ("q1", "recover_after_1", [S, S, S, S, S, FIN], [F, U, F, U, U], True),
    ("q2", "persistent", [S, INV, S, S, S, S, S, S], [U, N, U, U, U, U, U, N], False),
    ("q2", "recover_after_1", [S, S, S, FIN], [U, U, U], True),
    ("q1", "clean", [S, S, S, S, FIN], [U, U, U, U], True),
    ("q2", "clean", [S, FIN], [F], True),
    ("q1", "recover_after_2", [S, FIN], [U], True),
    ("q2", "recover_after_2", [S, FIN], [U], False),
    ("q1", "recover_after_3", [S, FIN], [U], True),
    ("q2", "recover_after_3", [S, FIN], [U], True),
    ("q1", "late_onset_from_3", [S, FIN], [F], False),
    ("q2", "late_onset_from_3", [S, FIN], [F], True),
)
LAB_DELTA = 0.75
"""Δ of either model on the five failure regimes: the four HAND episodes' (every bootstrap
resample of the two questions gives 0.75 or 1, so lab's interval lies in [0.75, 1])."""
LAB_MEAN6 = 4 / 6
"""Success per regime: clean 2/2, persistent 0/2, rec1 2/2, rec2 1/2, rec3 2/2, late 1/2."""
PUBLISHED = {
    "s1/m1__enforced_rule": {"delta": 0.75, "ci_low": 0.70, "ci_high": 0.80, "mean6": 0.6},
    "s1/m2__unaided": {"delta": 0.5, "ci_low": 0.2, "ci_high": 0.6, "mean6": 0.7},
    "s1/m3__budget": {"delta": 0.1, "ci_low": 0.0, "ci_high": 0.2},
    "s2/m1__enforced_rule": {"delta": 0.9, "ci_low": 0.85, "ci_high": 0.95, "mean6": None},
}
"""Published values written by hand: m1 agrees (difference 0, intervals overlap), m2 does
not (its interval ends at 0.6, below lab's 0.75), m3 is not in the run, s2 is another
split."""


def _records(run_changes: dict[tuple[str, str, str], bool] | None = None
             ) -> list[dict[str, Any]]:
    changes = run_changes or {}
    return [{"model": m, "condition": c, "split": "s1", "question_id": q, "regime": r,
             "actions": a, "judgments": j, "success": changes.get((m, q, r), s)}
            for m, c in (("m1", "enforced_rule"), ("m2", "unaided"))
            for q, r, a, j, s in EPISODES]


def _ok(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    code, out, err = lab(capsys, *args)
    assert code == 0, err
    return out


def _replication(capsys: pytest.CaptureFixture[str], db: Path, *args: object
                 ) -> dict[tuple[str, str], dict[str, Any]]:
    """{(model, measure): row} of `lab results replication ARGS --format json`."""
    out = _ok(capsys, "--db", db, "results", "replication", *args, "--format", "json",
              "--resamples", "50")
    rows = json.loads(out)
    assert {r["table"] for r in rows} == {"replication"}
    by = {(r["model"], r["measure"]): r for r in rows}
    assert len(by) == len(rows)
    return by


@pytest.fixture
def run_db(tmp_path: Path, db_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    _ok(capsys, "--db", db_path, "data", "import", "episodes",
        write_released(tmp_path / "s1.jsonl", _records()))
    return db_path


@pytest.fixture
def values_file(tmp_path: Path) -> Path:
    path = tmp_path / "paper_values.json"
    path.write_text(json.dumps(PUBLISHED, indent=1), encoding="utf-8")
    return path


@pytest.fixture
def paper_db(run_db: Path, values_file: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = _ok(capsys, "--db", run_db, "data", "import", "paper-values", values_file)
    assert "imported 4 values from paper_values.json as reference set 'paper' (splits s1, s2;" \
        in out
    return run_db


def test_each_line_beside_its_published_value(paper_db: Path, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    rows = _replication(capsys, paper_db, "--run", "s1")
    m1_lab = rows["m1", "delta_lab"]
    assert m1_lab["estimate"] == pytest.approx(LAB_DELTA, abs=1e-12)
    assert 0.75 - 1e-12 <= m1_lab["ci_low"] <= m1_lab["ci_high"] <= 1 + 1e-12
    assert m1_lab["regimes"] == ("persistent,recover_after_1,recover_after_2,recover_after_3,"
                                 "late_onset_from_3")
    # m1: published 0.75 [0.70, 0.80], mean6 0.6
    assert (rows["m1", "delta_ref"]["estimate"], rows["m1", "delta_ref"]["ci_low"],
            rows["m1", "delta_ref"]["ci_high"]) == (0.75, 0.70, 0.80)
    assert rows["m1", "delta_ref"]["detail"] == "paper: s1/m1__enforced_rule"
    assert rows["m1", "delta_diff"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    assert rows["m1", "delta_overlap"]["detail"] == "yes"  # 0.70 ≤ lab's high, 0.75 ≤ 0.80
    assert rows["m1", "mean6_lab"]["estimate"] == pytest.approx(LAB_MEAN6, abs=1e-12)
    assert rows["m1", "mean6_ref"]["estimate"] == 0.6
    assert rows["m1", "mean6_diff"]["estimate"] == pytest.approx(LAB_MEAN6 - 0.6, abs=1e-12)
    # m2 (released as unaided, lab's none): published 0.5 [0.2, 0.6], mean6 0.7
    assert rows["m2", "delta_lab"]["arm"] == "none"
    assert rows["m2", "delta_diff"]["estimate"] == pytest.approx(+0.25, abs=1e-12)
    assert rows["m2", "delta_overlap"]["detail"] == "no"  # 0.6 is below lab's 0.75
    assert rows["m2", "mean6_diff"]["estimate"] == pytest.approx(LAB_MEAN6 - 0.7, abs=1e-12)
    assert not any(m == "m3" for m, _ in rows)
    text = _ok(capsys, "--db", paper_db, "results", "replication", "--run", "s1",
               "--resamples", "50")
    assert "1 published value(s) of paper have no line here: s1/m3 budget" in text
    assert "+0.250" in text and "yes" in text and " no" in text


FIVE = "persistent,recover_after_1,recover_after_2,recover_after_3,late_onset_from_3"


def _own_delta(capsys: pytest.CaptureFixture[str], db: Path, *args: object
               ) -> dict[str, Any]:
    out = _ok(capsys, "--db", db, "results", "delta", "--format", "json", "--resamples", "50",
              "--models", "m1", *args)
    return next(r for r in json.loads(out) if r["scope"] == "own judgments, by t")


def test_delta_is_on_the_five_failure_regimes_as_published(paper_db: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    # the four HAND episodes (five failure regimes) by t: t3 a 1/2, b 0/1 (w 2/3, diff
    # 1/2), t4 a 1/1, b 0/2 (w 2/3, diff 1): Δ = (1/3 + 2/3) / (4/3) = 0.75; (a) holds 3
    # decisions (2 answers), (b) 6 (1 answer; 3 of them at t5–t6, where (a) has none).
    # Clean q1 (U U U U) would add a decision to (a) at t3 (searching) and one at t4
    # (answering): t3 a 1/3, b 0/1 (w 3/4, diff 1/3), t4 a 2/2, b 0/2 (w 1, diff 1):
    # Δ = 5/7 on 5 + 6. The delta table leaves clean out, as the paper does
    own = _own_delta(capsys, paper_db)
    assert own["estimate"] == pytest.approx(0.75, abs=1e-12)
    assert (own["n"], own["detail"], own["regimes"]) == (9, "a 2/3, b 1/6", FIVE)
    # the old pooling, by name
    pooled = _own_delta(capsys, paper_db, "--delta-regimes", "mean6")
    assert pooled["estimate"] == pytest.approx(5 / 7, abs=1e-12)
    assert (pooled["n"], pooled["detail"]) == (11, "a 3/5, b 1/6")
    assert pooled["regimes"] == "clean," + FIVE
    # the replication line is the delta table's row, interval and all
    rows = _replication(capsys, paper_db, "--run", "s1", "--models", "m1")
    lab_row = rows["m1", "delta_lab"]
    assert {k: lab_row[k] for k in ("estimate", "ci_low", "ci_high", "n", "detail", "regimes",
                                    "errored")} == \
        {k: own[k] for k in ("estimate", "ci_low", "ci_high", "n", "detail", "regimes",
                             "errored")}


def test_a_run_named_otherwise_is_compared_with_the_split_given(paper_db: Path,
                                                                capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    rows = _replication(capsys, paper_db, "--run", "s1", "--against", "paper/s2")
    assert rows["m1", "delta_ref"]["estimate"] == 0.9
    assert rows["m1", "delta_diff"]["estimate"] == pytest.approx(0.75 - 0.9, abs=1e-12)
    assert rows["m1", "delta_overlap"]["detail"] == "yes"  # 0.85 ≤ lab's high, 0.75 ≤ 0.95
    assert ("m1", "mean6_ref") not in rows  # s2 gives no mean6
    assert ("m2", "delta_ref") not in rows and ("m2", "delta_lab") in rows


def test_another_run_as_the_reference(paper_db: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # run rep: the same episodes but m1's q1 recover_after_2 wrong: its mean6 is 3.5/6
    records = _records({("m1", "q1", "recover_after_2"): False})
    _ok(capsys, "--db", paper_db, "data", "import", "episodes",
        write_released(tmp_path / "rep.jsonl", records), "--run", "rep")
    rows = _replication(capsys, paper_db, "--run", "rep", "--against", "run:s1")
    assert {r["runs"] for r in rows.values()} == {"rep"}
    ref = rows["m1", "delta_ref"]
    assert ref["detail"] == "run s1" and ref["estimate"] == pytest.approx(0.75, abs=1e-12)
    assert ref["ci_low"] is not None and ref["n"] > 0  # computed as lab's, interval and all
    assert rows["m1", "delta_diff"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    assert rows["m1", "delta_overlap"]["detail"] == "yes"
    assert rows["m1", "mean6_diff"]["estimate"] == pytest.approx(3.5 / 6 - 4 / 6, abs=1e-12)
    assert rows["m2", "mean6_diff"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    # without --run, every run but the reference is a line
    rows = _replication(capsys, paper_db, "--against", "run:s1")
    assert {r["runs"] for r in rows.values()} == {"rep"}


def test_refusals_are_one_line(paper_db: Path, run_db: Path, capsys: pytest.CaptureFixture[str]
                              ) -> None:
    code, _, err = lab(capsys, "--db", paper_db, "results", "replication", "--run", "s1",
                       "--against", "nope")
    one_error(code, err, "no reference set 'nope'", "paper")
    code, _, err = lab(capsys, "--db", paper_db, "results", "replication", "--against",
                       "run:ghost")
    one_error(code, err, "no run 'ghost'", "s1")
    code, _, err = lab(capsys, "--db", paper_db, "results", "replication", "--run", "s1",
                       "--against", "paper/s9")
    one_error(code, err, "paper/s9", "splits s1, s2")
    code, _, err = lab(capsys, "--db", paper_db, "results", "delta", "--against", "paper")
    one_error(code, err, "--against", "replication")


def test_without_a_reference_it_says_how_to_import_one(run_db: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = lab(capsys, "--db", run_db, "results", "replication", "--run", "s1")
    one_error(code, err, "lab data import paper-values FILE", "run:OTHER")


BAD = [
    ("not json", "{", "invalid JSON"),
    ("a list", "[]", "must be one JSON object"),
    ("no values", "{}", "no values"),
    ("key without split", '{"m1__enforced_rule": {}}', "'m1__enforced_rule'", "key"),
    ("key without condition", '{"s1/m1-enforced_rule": {}}', "'s1/m1-enforced_rule'", "key"),
    ("unknown condition", '{"s1/m1__bogus": {"delta": 0.1, "ci_low": 0, "ci_high": 0.2}}',
     "s1/m1__bogus", "condition", "bogus"),
    ("missing ci_high", '{"s1/m1__budget": {"delta": 0.1, "ci_low": 0}}', "s1/m1__budget",
     "ci_high: missing"),
    ("text delta", '{"s1/m1__budget": {"delta": "0.1", "ci_low": 0, "ci_high": 0.2}}',
     "s1/m1__budget", "delta: must be a number"),
    ("boolean delta", '{"s1/m1__budget": {"delta": true, "ci_low": 0, "ci_high": 0.2}}',
     "delta: must be a number"),
    ("NaN", '{"s1/m1__budget": {"delta": NaN, "ci_low": 0, "ci_high": 0.2}}',
     "s1/m1__budget", "delta", "outside"),
    ("reversed interval", '{"s1/m1__budget": {"delta": 0.1, "ci_low": 0.3, "ci_high": 0.2}}',
     "s1/m1__budget", "ci_low", "above ci_high"),
    ("mean6 above 1", '{"s1/m1__budget": {"delta": 0.1, "ci_low": 0, "ci_high": 0.2, '
     '"mean6": 1.5}}', "s1/m1__budget", "mean6", "outside"),
    ("misspelt field", '{"s1/m1__budget": {"delta": 0.1, "ci_lo": 0, "ci_high": 0.2}}',
     "s1/m1__budget", "ci_lo: unknown field"),
    ("key twice", '{"s1/m1__budget": {"delta": 0.1, "ci_low": 0, "ci_high": 0.2}, '
     '"s1/m1__budget": {"delta": 0.1, "ci_low": 0, "ci_high": 0.2}}', "s1/m1__budget",
     "twice"),
    ("one cell twice by name", '{"s1/m1__unaided": {"delta": 0.1, "ci_low": 0, "ci_high": '
     '0.2}, "s1/m1__none": {"delta": 0.1, "ci_low": 0, "ci_high": 0.2}}', "s1/m1__none",
     "condition", "s1/m1__unaided"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_a_malformed_file_stores_nothing(case: tuple[str, ...], paper_db: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    _, text, *words = case
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    before = dump_hash(paper_db)
    code, _, err = lab(capsys, "--db", paper_db, "data", "import", "paper-values", path,
                       "--name", "other")
    one_error(code, err, "bad.json", *words)
    assert dump_hash(paper_db) == before


def test_the_same_name_again_needs_replace(paper_db: Path, values_file: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    before = dump_hash(paper_db)
    code, _, err = lab(capsys, "--db", paper_db, "data", "import", "paper-values", values_file)
    one_error(code, err, "reference set 'paper' exists", "--replace")
    assert dump_hash(paper_db) == before
    values_file.write_text(json.dumps({"s1/m1__enforced_rule": {
        "delta": 0.6, "ci_low": 0.5, "ci_high": 0.7}}), encoding="utf-8")
    _ok(capsys, "--db", paper_db, "data", "import", "paper-values", values_file, "--replace")
    rows = _replication(capsys, paper_db, "--run", "s1")
    assert rows["m1", "delta_ref"]["estimate"] == 0.6 and ("m2", "delta_ref") not in rows
    listed = _ok(capsys, "--db", paper_db, "data", "list")
    assert "paper: 1 value (splits s1; dataset hotpotqa, budget 8) from paper_values.json" \
        in listed
    assert "s1: 24 episodes from s1.jsonl" in listed
    code, _, err = lab(capsys, "--db", paper_db, "data", "import", "paper-values", values_file,
                       "--name", "a/b")
    one_error(code, err, "reference name 'a/b'")
    code, _, err = lab(capsys, "--db", paper_db, "data", "import", "hotpotqa", values_file,
                       "--replace")
    one_error(code, err, "--replace", "paper-values")


def test_export_writes_replication_csv_once_a_reference_exists(run_db: Path, values_file: Path,
                                                               tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    _ok(capsys, "--db", run_db, "export", tmp_path / "before", "--resamples", "20")
    assert not (tmp_path / "before" / "replication.csv").exists()
    _ok(capsys, "--db", run_db, "data", "import", "paper-values", values_file)
    _ok(capsys, "--db", run_db, "export", tmp_path / "after", "--resamples", "20")
    with (tmp_path / "after" / "replication.csv").open(newline="") as f:
        rows = {(r["model"], r["measure"]): r for r in csv.DictReader(f)}
    assert float(rows["m2", "delta_diff"]["estimate"]) == pytest.approx(0.25, abs=1e-12)
    assert rows["m1", "delta_overlap"]["detail"] == "yes"


@pytest.mark.asyncio
async def test_the_results_screen_has_a_replication_tab(run_db: Path, values_file: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from textual.widgets import Tabs

    from console.app import ConsoleConfig, make_app
    from console.screens.results import ResultsScreen

    async def tab_text() -> str:
        app = make_app(Path(run_db.name), ConsoleConfig(
            db_path=Path(run_db.name), first_screen="results", export_dir=Path("exports"),
            clock=lambda: FIXED_TS, n_boot=20, hazard_boot=20))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await wait_workers(app)
            screen = app.screen
            assert isinstance(screen, ResultsScreen)
            screen.query_one("#results-tabs", Tabs).active = "tab-replication"
            await pilot.pause()
            await wait_workers(app)
            await pilot.pause()
            assert screen.view == "replication"
            return str(screen.query_one("#results-text").render())

    monkeypatch.chdir(run_db.parent)
    assert "lab data import paper-values FILE" in await tab_text()
    _ok(capsys, "--db", run_db, "data", "import", "paper-values", values_file)
    text = await tab_text()
    assert "Replication: lab beside paper" in text and "+0.250" in text


def test_the_released_cell_replicates_its_published_delta(tmp_path: Path, db_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    cell = released_cell()
    if cell is None:
        pytest.skip("the released development cell is not beside this checkout "
                    "(set LAB_PAPER_EPISODES to it)")
    _ok(capsys, "--db", db_path, "data", "import", "episodes", cell, "--model", "qwen3-8b",
        "--condition", "enforced_rule", "--run", "test300")
    published = tmp_path / "paper_values.json"
    published.write_text(json.dumps({"test300/qwen3-8b__enforced_rule": {
        "delta": CELL_DELTA, "ci_low": CELL_CI[0], "ci_high": CELL_CI[1],
        "mean6": 0.4738888888888889}}), encoding="utf-8")
    _ok(capsys, "--db", db_path, "data", "import", "paper-values", published)
    rows = _replication(capsys, db_path, "--run", "test300", "--against", "paper")
    assert rows["qwen3-8b", "delta_lab"]["estimate"] == pytest.approx(CELL_DELTA, rel=1e-12)
    assert abs(rows["qwen3-8b", "delta_diff"]["estimate"]) <= 1e-12 * CELL_DELTA
    assert rows["qwen3-8b", "delta_overlap"]["detail"] == "yes"
    assert rows["qwen3-8b", "mean6_ref"]["estimate"] == 0.4738888888888889
    assert ("qwen3-8b", "mean6_diff") not in rows  # the cell holds five regimes, not clean
    db = store.connect(db_path)
    assert store.count(db, "episodes") == 1500
