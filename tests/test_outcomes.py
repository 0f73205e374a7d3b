"""Registered tests evaluated on real runs of simulated agents: register → freeze → run →
verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlite_utils import Database

from analysis.measures.frames import Frames, frames_from, load_frames
from analysis.prereg.outcomes import VERDICTS, Outcome, evaluate, prediction_text
from console.cli import main
from core import prereg, store
from core.data import ids_hash
from core.demo_set import ensure_demo_set
from core.models.registry import builtin_models
from core.store import prereg as rows
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers.console import copy_db

REGIMES = ["clean", "persistent", "recover_after_1", "recover_after_2", "recover_after_3",
           "late_onset_from_3"]
SCOPE: dict[str, Any] = {
    "models": ["sim-never", "sim-deadline"], "conditions": ["none", "enforced_rule"],
    "regimes": REGIMES, "question_sets": ["t20"], "budgets": [8]}
TESTS: list[dict[str, Any]] = [
    {"id": "P", "kind": "paired_diff", "metric": "mean6", "a": "enforced_rule", "b": "none",
     "models": ["sim-never"]},
    {"id": "F", "kind": "paired_diff", "metric": "mean6", "a": "none", "b": "enforced_rule",
     "models": ["sim-never"]},
    {"id": "N", "kind": "noninferiority", "metric": "mean6", "a": "enforced_rule", "b": "none",
     "margin": -0.05, "models": ["sim-never"]},
    {"id": "D", "kind": "delta_bound", "condition": "none", "bound": "upper", "threshold": 0.06},
    {"id": "R", "kind": "delta_bound", "condition": "enforced_rule", "bound": "lower",
     "threshold": 0.0},
    {"id": "M", "kind": "median_action", "condition": "none", "regime": "persistent", "op": "==",
     "value": 8, "models": ["sim-deadline"]},
    {"id": "U", "kind": "median_action", "condition": "none", "regime": "persistent", "op": "==",
     "value": 8, "models": ["sim-never"]},
    {"id": "S", "kind": "answered_share", "condition": "enforced_rule", "regime": "persistent",
     "op": ">", "value": 0.5},
    {"id": "A", "kind": "answered_share", "condition": "none", "regime": "persistent",
     "op": ">=", "value": 1.0, "at_action": 8, "models": ["sim-deadline"]},
    {"id": "I", "kind": "index_bound", "condition": "enforced_rule", "bound": "lower",
     "threshold": 0.1},
]


@pytest.fixture(scope="module")
def governed_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A1 frozen over SCOPE and its grid run (480 episodes), built once for the module:
    each test that writes to it gets its own copy (`governed`)."""
    db_path = tmp_path_factory.mktemp("governed") / "lab.db"
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"][:20]
    store.save_question_set(db, "t20", "demo", ids, 5, [], True, ids_hash(ids))
    models = builtin_models()
    prereg.create(db, "sims", "", TESTS, SCOPE)
    prereg.freeze(db, "A1", models)
    settings = WorkerSettings(db_path=db_path)
    enqueue_grid(db, settings, GridRequest(models=tuple(SCOPE["models"]),
                                           conditions=tuple(SCOPE["conditions"]),
                                           regimes=tuple(REGIMES), question_set="t20",
                                           run="gov", amendment="A1"), models)
    run_worker(settings, until_idle=True)
    db.conn.close()
    return db_path


@pytest.fixture
def governed(db_path: Path, governed_built: Path) -> Database:
    """A private copy of `governed_built` at `db_path`."""
    copy_db(governed_built, db_path)
    return store.connect(db_path)


def test_outcomes_follow_the_data(governed: Database) -> None:
    db = governed
    got = {o.id: o for o in evaluate(rows.amendment(db, "A1"), load_frames(db), n_boot=500)}
    verdicts = {k: o.verdict for k, o in got.items()}
    assert verdicts == {"P": "pass", "F": "fail", "N": "pass", "D": "pass", "R": "pass",
                        "M": "pass", "U": "n.a.", "S": "pass", "A": "pass", "I": "pass"}
    assert all(o.after_freeze is True for o in got.values() if o.n_episodes)
    assert got["P"].n_episodes == 2 * 6 * 20  # both arms of one model, six regimes, 20 questions
    assert "[" in got["P"].numbers and "p=" in got["P"].numbers
    assert prediction_text(TESTS[0]) == "enforced_rule > none (mean6); one-sided, Holm"


def test_data_before_freeze_is_flagged(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"][:20]
    store.save_question_set(db, "t20", "demo", ids, 5, [], False, ids_hash(ids))
    settings = WorkerSettings(db_path=db_path)
    models = builtin_models()
    enqueue_grid(db, settings, GridRequest(models=("sim-never",), conditions=("none",
                                           "enforced_rule"), regimes=tuple(REGIMES),
                                           question_set="t20", run="early"), models)
    run_worker(settings, until_idle=True)
    reanalysis = {**TESTS[0], "id": "P-early", "runs": ["early"]}
    prereg.create(db, "late registration", "", [TESTS[0], reanalysis], SCOPE)
    frozen = prereg.freeze(db, "A1", models)
    assert frozen["data_existed"] and sum(d["episodes"] for d in frozen["data_existed"]) == 240
    own, named = evaluate(rows.amendment(db, "A1"), load_frames(db), n_boot=200)
    # by default a test reads only runs enqueued under its amendment: none yet
    assert (own.verdict, own.n_episodes, own.after_freeze) == ("n.a.", 0, None)
    # a test that names an earlier run reads it, and the freeze check says so
    assert named.runs == ("early",) and named.n_episodes == 240
    assert named.after_freeze is False
    assert main(["--db", str(db_path), "results", "success", "--resamples", "100"]) == 0
    assert "run early: EXPLORATORY" in capsys.readouterr().out


def test_outcomes_and_export_cli(governed: Database, db_path: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--db", str(db_path)]
    assert main([*base, "prereg", "deviation", "A1", "reran one job"]) == 0
    capsys.readouterr()
    assert main([*base, "prereg", "outcomes", "A1", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "A1   P      pass" in out and "all after freeze" in out and "reran one job" in out
    assert main([*base, "prereg", "outcomes", "--format", "json", "--resamples", "200"]) == 0
    rows_json = json.loads(capsys.readouterr().out)
    assert {r["id"] for r in rows_json} == {t["id"] for t in TESTS}
    p = next(r for r in rows_json if r["id"] == "P")
    assert (p["amendment"], p["kind"], p["verdict"], p["n_episodes"], p["runs"],
            p["after_freeze"]) == ("A1", "paired_diff", "pass", 240, ["gov"], True)
    assert p["ci_low"] <= p["estimate"] <= p["ci_high"] and p["parts"][0]["model"] == "sim-never"
    assert main([*base, "results", "success", "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "run gov: governed by A1" in out and "deviation 1 on A1: reran one job" in out
    target = tmp_path / "prereg.md"
    assert main([*base, "prereg", "export", str(target), "--resamples", "200"]) == 0
    text = target.read_text()
    assert "## A1: sims" in text and "Deviation 1" in text and "## Outcomes" in text
    assert rows.amendment(store.connect(db_path), "A1")["content_sha256"] in text


FIXTURES = Path(__file__).parent / "fixtures"
SIM_CONDITIONS = ("none", "permit", "budget", "stated_rule", "call_cost", "decide",
                  "enforced_rule", "combo", "random_rule:rate=0.3", "lexical_rule",
                  "none:judge=true")
STAND_INS = {
    "two-source": ("sim-backup-own3", ("two_source", "switch_rule"),
                   ("two_source", "switch_rule")),
    "stated": ("sim-stated", ("none", "budget", "enforced_rule", "stated_judgment_rule",
                                   "stated_judgment_combo"),
               ("stated_judgment_rule", "stated_judgment_combo"))}
"""Run → (the sim that exercises the mechanism, the arms it runs, the arms the paper's
sims add to their grid): A13–A14's two sources and A19's stated-judgment rule."""


def _as_governed(frames: Frames, amendment: dict[str, Any],
                 built: dict[tuple[str, ...], Frames]) -> Frames:
    """The sim episodes as if enqueued under `amendment`, once per question set it scopes.

    Amendments that scope the same question sets get the same rows but for their
    ``amendment`` column, so their frames (the decision table, derived again from every
    step) are built once per scope, into `built`, and each amendment gets a copy of its
    scope's frames with its own id in that column."""
    sets = tuple(amendment["scope"]["question_sets"])
    if sets not in built:
        eps, steps = [], []
        for i, name in enumerate(sets):
            shift = i * 1_000_000
            eps.append(frames.episodes.assign(question_set=name, amendment="",
                                              episode_id=frames.episodes["episode_id"] + shift))
            steps.append(frames.steps.assign(episode_id=frames.steps["episode_id"] + shift))
        built[sets] = frames_from(pd.concat(eps, ignore_index=True),
                                  pd.concat(steps, ignore_index=True))
    scope = built[sets]
    own = {"amendment": amendment["id"]}
    return Frames(scope.episodes.assign(**own), scope.steps, scope.decisions.assign(**own),
                  scope.errored, scope.runs, scope.errored_episodes, scope.selection,
                  apart_episodes=scope.apart_episodes.assign(**own))


def _na_reasons(outcome: Outcome) -> list[str]:
    """The details of an outcome's n.a. parts (a classify part says which condition
    could not be evaluated and why)."""
    return [p.detail for p in outcome.parts if p.verdict == "n.a."]


def test_paper_tables_4_and_5_as_the_paper_ran_them(db_path: Path) -> None:
    """Both fixtures register, freeze and evaluate on a sim study with the paper's
    design (arms, regimes, budgets, seeds and runs each amendment governs), and no test
    of the paper is n.a. for want of data that design has: a fixture that drifts from
    the design (a regime the 16-action runs lacked, a run or seed it names) fails here.
    Parts may still be n.a. where the sims' behaviour leaves a number undefined."""
    from analysis.prereg.outcome_kinds import MISSING_DATA
    from core.regimes import MEAN3

    docs = [json.loads((FIXTURES / f"paper_table{n}.json").read_text()) for n in (4, 5)]
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"][:3]
    for name in {s for d in docs for a in d["amendments"] for s in a["scope"]["question_sets"]}:
        store.save_question_set(db, name, "demo", ids, 0, [], False, ids_hash(ids))
    models = builtin_models()
    for d in docs:  # every amendment validates, resolves and freezes
        for a in d["amendments"]:
            prereg.freeze(db, prereg.create(db, f"{a['doc']}: {a['title']}", "", a["tests"],
                                            a["scope"]), models)
    sims = tuple(sorted({m for d in docs for m in d["models"]} - set(STAND_INS)))
    settings = WorkerSettings(db_path=db_path)
    replicate = ("none", "budget", "enforced_rule", "combo")

    def grid(**kw: Any) -> None:
        enqueue_grid(db, settings, GridRequest(question_set="test300", **kw), models)

    grid(models=sims, conditions=SIM_CONDITIONS,
         regimes=(*REGIMES, "recover_after_4", "recover_after_5"), run="sims")
    grid(models=sims, conditions=replicate, regimes=MEAN3, budgets=(16,), run="sims16")
    grid(models=sims, conditions=replicate, regimes=tuple(REGIMES), seeds=(1,), run="seed1")
    grid(models=sims, conditions=replicate, regimes=tuple(REGIMES), seeds=(2,),
         run="third-run")
    for run, (stand_in, conditions, new_arms) in STAND_INS.items():  # A13, A14, A19
        for who, arms in ((sims, new_arms), ((stand_in,), conditions)):
            grid(models=who, conditions=arms, regimes=tuple(REGIMES), run=run)
    run_worker(settings, until_idle=True)
    frames = load_frames(db)
    assert frames.errored == 0
    outcomes, numbers = {}, {}
    built: dict[tuple[str, ...], Frames] = {}
    for row in rows.amendments(db):
        got = evaluate(row, _as_governed(frames, row, built), n_boot=100)
        assert [o.id for o in got] == [t["id"] for t in row["tests"]]
        for o in got:
            if o.kind != "classify":
                assert o.verdict in VERDICTS, (o.id, o.verdict)
            json.dumps(o.to_dict())
            missing = [r for r in _na_reasons(o) if any(m in r for m in MISSING_DATA)]
            assert not missing, (row["title"], o.id, o.numbers)
            outcomes[(row["title"].split(":")[0], o.id)] = o
            numbers[o.id] = o.numbers
    assert len(outcomes) == 83
    decided = [o for o in outcomes.values() if o.verdict != "n.a."]
    assert len(decided) >= 60, [k for k, o in outcomes.items() if o.verdict == "n.a."]
    # the paper's "reported" rows carry numbers and no verdict
    for key in (("Orig.", "H5"), ("A3", "H8"), ("A11", "PP2-permit"), ("A12", "J1"),
                ("A13", "S4"), ("A18", "T2-32B"), ("A20", "H2-none"), ("A20", "H3-utility-rule")):
        assert outcomes[key].verdict == "reported", (key, outcomes[key].numbers)
    # the third run has all four replication tests; the 16-action runs only mean3
    assert {k[1] for k in outcomes if k[1].startswith("13d-")} == {
        "13d-Rp1", "13d-Rp2-rule", "13d-Rp2-none", "13d-Rp3", "13d-Rp4-rule", "13d-Rp4-budget"}
    assert outcomes[("A13", "13d-Rp1")].runs == ("third-run",)
    assert outcomes[("A10", "Rp1")].runs == ("seed1",)
    assert outcomes[("A9", "A9x")].verdict in ("pass", "fail"), numbers["A9x"]
    assert numbers["A9x"] in ("sim-hazard-own: pass", "sim-hazard-own: fail")
    # the sim that switches after 3 own useless judgments switches by action 4 and leaves
    # by the backup; the paper's sims never switch on their own
    assert "sim-backup-own3: switches" in numbers["S1–S3"]
    assert "sim-backup-own3: prefers evidence" in numbers["A14"]
    assert "sim-own5: prefers answering" in numbers["A14"]
    assert "sim-never: does not abandon" in numbers["S1–S3"]


def test_paper_fixture_tests_are_encoded_as_the_paper_ran_them() -> None:
    """C compares cost-adjusted success on tool calls (Table 6's first number; utility_all
    flips all four verdicts on the paper's numbers); C4 and A9x read persistent; the
    16-action I reads persistent and recover_after_2 (Table 16); not_expressible lists
    only what lab cannot express."""
    docs = {n: json.loads((FIXTURES / f"paper_table{n}.json").read_text()) for n in (4, 5)}
    tests = {(a["doc"], t["id"]): t for d in docs.values() for a in d["amendments"]
             for t in a["tests"]}
    assert tests[("A12", "C-utility")]["metric"] == "utility"
    subs = [s for o in tests[("A6", "C4")]["outcomes"] for s in o.get("all", [])]
    assert subs and all(s["regime"] == "persistent" for s in subs)
    for key in (("A5", "D4"), ("A6", "C3-16")):
        assert tests[key]["regimes"] == ["persistent", "recover_after_2"], key
    a5 = next(a for a in docs[4]["amendments"] if a["doc"] == "A5")
    assert a5["scope"]["regimes"] == ["clean", "persistent", "recover_after_2"]
    assert tests[("A18", "T2")]["models"] == ["sim-own5", "sim-clock6", "sim-never"]
    assert [e["id"] for e in docs[5]["not_expressible"]] == ["16b", "E1 (applicability)"]


def test_another_amendments_runs_are_not_counted(governed: Database, db_path: Path) -> None:
    db = governed
    prereg.create(db, "same scope", "", TESTS[:1], SCOPE)
    prereg.freeze(db, "A2", builtin_models())
    settings = WorkerSettings(db_path=db_path)
    enqueue_grid(db, settings, GridRequest(models=("sim-never",), conditions=("none",
                                           "enforced_rule"), regimes=tuple(REGIMES),
                                           question_set="t20", run="gov2", amendment="A2"),
                 builtin_models())
    run_worker(settings, until_idle=True)
    frames = load_frames(db)
    (a1,) = evaluate(rows.amendment(db, "A1"), frames, n_boot=100)[:1]
    (a2,) = evaluate(rows.amendment(db, "A2"), frames, n_boot=100)
    assert (a1.runs, a1.n_episodes) == (("gov",), 240)
    assert (a2.runs, a2.n_episodes) == (("gov2",), 240)


def test_a_model_with_no_episodes_is_named_without_an_empty_dataset_and_set() -> None:
    """A test covering several units names each unit's dataset and set; a model the test
    names but no episode of has neither, and is named alone (it read "sim-x (/)")."""
    from analysis.prereg.outcome_data import Unit

    assert Unit("sim-own5", "fever", "fv").text(True) == "sim-own5 (fever/fv)"
    assert Unit("sim-own5", "fever", "fv").text(False) == "sim-own5"
    assert Unit("sim-hazard-own", "", "").text(True) == "sim-hazard-own"
