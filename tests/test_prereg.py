"""Pre-registration: drafts, validation, freezing, hash chain, gating, tamper detection."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

import prompts
from console.cli import main
from core import prereg, store
from core.demo_set import ensure_demo_set
from core.errors import ConfigError, LabError, StoreError
from core.models.registry import builtin_models
from core.store import prereg as rows
from jobs.grid import GridRequest, plan
from tests.helpers.queue import job_row

SCOPE = {"models": ["sim-own5", "sim-clock6"], "conditions": ["none", "enforced_rule"],
         "regimes": ["clean", "persistent"], "question_sets": ["test20", "dev10"],
         "budgets": [8]}
TESTS: list[dict[str, Any]] = [
    {"id": "H1", "kind": "paired_diff", "metric": "mean6", "a": "enforced_rule", "b": "none",
     "alternative": "greater", "correction": "holm", "models": ["sim-own5"]},
    {"id": "H2", "kind": "delta_bound", "condition": "none", "bound": "upper",
     "threshold": 0.06, "comparison": "<"},
]


@pytest.fixture
def db(db_path: Path) -> Database:
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"]
    from core.data import ids_hash
    store.save_question_set(db, "dev10", "demo", ids[:10], 1, [], False, ids_hash(ids[:10]))
    store.save_question_set(db, "test20", "demo", ids[10:30], 2, [], True, ids_hash(ids[10:30]))
    return db


@pytest.fixture(autouse=True)
def own_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of prompts/ so tests can change a pinned file."""
    copy = tmp_path / "prompts"
    shutil.copytree(prompts.PROMPT_DIR, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(prompts, "PROMPT_DIR", copy)
    return copy


def req(**kw: Any) -> GridRequest:
    base: dict[str, Any] = dict(models=("sim-own5",), conditions=("none",), regimes=("clean",),
                question_set="test20", run="r")
    base.update(kw)
    return GridRequest(**base)


@pytest.mark.parametrize("test, message", [
    ({"id": "X", "kind": "vibes"}, "unknown kind 'vibes'"),
    ({"id": "X", "kind": "paired_diff", "metric": "joy", "a": "none", "b": "budget"},
     "unknown metric 'joy'"),
    ({"id": "X", "kind": "paired_diff", "metric": "mean6", "a": "nope", "b": "none"},
     "a: unknown condition 'nope'"),
    ({"id": "X", "kind": "noninferiority", "metric": "mean6", "a": "combo", "b": "budget",
      "marign": -0.05}, "unknown field 'marign'"),
    ({"id": "X", "kind": "noninferiority", "metric": "mean6", "a": "combo", "b": "budget"},
     "missing field 'margin'"),
    ({"id": "X", "kind": "delta_bound", "condition": "none", "bound": "sideways",
      "threshold": 0.1}, "bound must be one of upper, lower"),
    ({"id": "X", "kind": "median_action", "condition": "budget", "op": "=>", "value": 8},
     "op must be one of"),
    ({"id": "X", "kind": "index_bound", "condition": "none", "bound": "upper",
      "threshold": "high"}, "threshold must be float"),
    ({"kind": "index_bound"}, "missing field 'id'"),
])
def test_registered_tests_are_validated_with_precise_errors(db: Database,
                                                            test: dict[str, str | float],
                                                            message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        prereg.create(db, "t", tests=[test], scope=SCOPE)
    assert "\n" not in str(info.value)
    assert rows.amendments(db) == []


def test_scope_validation(db: Database) -> None:
    with pytest.raises(ConfigError, match="unknown key 'modles'"):
        prereg.create(db, "t", scope={**SCOPE, "modles": []})
    with pytest.raises(ConfigError, match="regimes: unknown regime 'rain'"):
        prereg.create(db, "t", scope={**SCOPE, "regimes": ["rain"]})
    with pytest.raises(ConfigError, match="duplicate test id"):
        prereg.create(db, "t", tests=[TESTS[0], TESTS[0]], scope=SCOPE)


def test_freeze_pins_chain_and_immutability(db: Database) -> None:
    a1 = prereg.create(db, "first", "body", TESTS, SCOPE)
    a2 = prereg.create(db, "second", "", [], SCOPE)
    assert (a1, a2) == ("A1", "A2")
    f1 = prereg.freeze(db, a1, builtin_models())
    f2 = prereg.freeze(db, a2, builtin_models())
    assert f1["prev_sha256"] == prereg.GENESIS and f2["prev_sha256"] == f1["content_sha256"]
    assert set(f1["pins"]["prompts"]) == {f"prompts/{p.name}"
                                          for p in prompts.PROMPT_DIR.glob("*.txt")}
    assert set(f1["pins"]["question_sets"]) == {"test20", "dev10"}
    assert f1["pins"]["conditions"]["enforced_rule"] == \
        __import__("core.conditions").conditions.parse_condition("enforced_rule").spec_hash()
    assert f1["version"] and f1["data_existed"] == []
    with pytest.raises(StoreError, match="already frozen"):
        prereg.freeze(db, a1, builtin_models())
    with pytest.raises(StoreError, match="can never change"):
        prereg.edit(db, a1, title="changed")
    assert prereg.verify(db, builtin_models()) == []


def test_cli_cannot_change_a_frozen_amendment(db: Database, db_path: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    prereg.create(db, "first", "", TESTS, SCOPE)
    prereg.freeze(db, "A1", builtin_models())
    before = rows.amendment(db, "A1")
    (tmp_path / "t.json").write_text("[]")
    base = ["--db", str(db_path)]
    assert main([*base, "prereg", "edit", "A1", "--title", "x"]) != 0
    assert main([*base, "prereg", "edit", "A1", "--tests", str(tmp_path / "t.json")]) != 0
    assert main([*base, "prereg", "freeze", "A1", "--yes"]) != 0
    assert "can never change" in capsys.readouterr().err
    assert rows.amendment(db, "A1") == before


def test_gating(db: Database) -> None:
    models = builtin_models()
    with pytest.raises(prereg.GateError, match="test20 is held-out"):
        plan(db, req(), models)
    assert plan(db, req(question_set="dev10"), models).mode == "exploratory"
    prereg.create(db, "first", "", TESTS, SCOPE)
    with pytest.raises(prereg.GateError, match="A1 is a draft"):
        plan(db, req(amendment="A1"), models)
    prereg.freeze(db, "A1", models)
    assert plan(db, req(amendment="A1"), models).mode == "governed"
    with pytest.raises(prereg.GateError, match="model sim-own7 is not in its scope"):
        plan(db, req(amendment="A1", models=("sim-own7",)), models)
    with pytest.raises(prereg.GateError, match="condition enforced_rule:k=4 is not in its scope"):
        plan(db, req(amendment="A1", conditions=("enforced_rule:k=4",)), models)
    with pytest.raises(prereg.GateError, match="budget 16 is not in its scope"):
        plan(db, req(amendment="A1", budgets=(16,)), models)


def test_changed_prompt_refused_until_a_deviation_is_logged(db: Database, own_prompts: Path
                                                           ) -> None:
    models = builtin_models()
    prereg.create(db, "first", "", TESTS, SCOPE)
    prereg.freeze(db, "A1", models)
    (own_prompts / "side_channel.txt").write_text("Was it useful? USEFUL or USELESS.\n")
    with pytest.raises(prereg.GateError, match=r"prompts/side_channel.txt changed since A1 was "
                       r"frozen \(sha256 [0-9a-f]{4}… → [0-9a-f]{4}…\): log a deviation"):
        plan(db, req(amendment="A1"), models)
    problems = prereg.verify(db, models)
    assert [p.what for p in problems] == [
        p.what for p in problems if "prompts/side_channel.txt changed" in p.what] and problems
    rows.add_deviation(db, "A1", "shortened the side-channel question")
    assert plan(db, req(amendment="A1"), models).mode == "governed"


def test_data_existed_at_freeze(db: Database) -> None:
    from jobs.grid import enqueue

    models = builtin_models()
    enqueue(db, req(question_set="dev10", run="explore"), models)
    # store one episode of that cell by hand through the runner
    import asyncio

    from core.models.registry import make_client
    from core.regimes import ForeignPool
    from core.store import jobs as ledger
    from jobs.kinds.episodes import run_questions

    job = job_row(db, ledger.select_jobs(db, "run", "explore")[0])
    cell_spec = __import__("jobs.tasks").tasks.cell_spec(
        db, job["cell_id"], __import__("jobs.settings").settings.WorkerSettings(
            db_path=Path(db.conn.execute("PRAGMA database_list").fetchone()[2])))
    qs = store.load_questions(db, ids=job["question_ids"])
    asyncio.run(run_questions(db, job["cell_id"], cell_spec, qs, ForeignPool(qs),
                              make_client(cell_spec.model)))
    prereg.create(db, "late", "", [], SCOPE)
    frozen = prereg.freeze(db, "A1", models)
    assert frozen["data_existed"] and frozen["data_existed"][0]["episodes"] == 10


@pytest.mark.parametrize("tamper, finding", [
    ("UPDATE amendments SET body = 'edited' WHERE id = 'A1'", "A1: frozen content was edited"),
    ("UPDATE amendments SET tests = '[]' WHERE id = 'A2'", "A2: frozen content was edited"),
    ("UPDATE amendments SET pins = replace(pins, 'test20', 'test21') WHERE id = 'A1'",
     "A1: frozen content was edited"),
    ("DELETE FROM amendments WHERE id = 'A1'", "A2: is at position 2 but should be 1"),
    ("UPDATE amendments SET seq = 10 WHERE id = 'A1'; UPDATE amendments SET seq = 1 "
     "WHERE id = 'A2'; UPDATE amendments SET seq = 2 WHERE id = 'A1'",
     "A1: id does not match its position A2"),
    ("UPDATE amendments SET state = 'draft' WHERE id = 'A2'",
     "A2: was frozen and has been set back to draft"),
    ("UPDATE amendments SET frozen_at = '2020-01-01T00:00:00+00:00' WHERE id = 'A2'",
     "chain broken"),
])
def test_verify_detects_tampering_with_the_file(db: Database, db_path: Path, tamper: str,
                                                finding: str, capsys: pytest.CaptureFixture[str]
                                               ) -> None:
    prereg.create(db, "first", "body", TESTS, SCOPE)
    prereg.create(db, "second", "", TESTS, SCOPE)
    prereg.freeze(db, "A1", builtin_models())
    prereg.freeze(db, "A2", builtin_models())
    rows.add_deviation(db, "A1", "a note")
    db.conn.close()
    conn = sqlite3.connect(db_path)
    conn.executescript(tamper)
    conn.commit()
    conn.close()
    assert main(["--db", str(db_path), "prereg", "verify"]) == 1
    err = capsys.readouterr().err
    assert finding in err


def test_cli_new_show_freeze_deviation(db: Database, db_path: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tests.json").write_text(json.dumps(TESTS))
    (tmp_path / "scope.json").write_text(json.dumps(SCOPE))
    (tmp_path / "body.md").write_text("# Hypotheses\nThe rule helps.")
    base = ["--db", str(db_path)]
    assert main([*base, "prereg", "new", "--title", "Rule", "--body", str(tmp_path / "body.md"),
                 "--tests", str(tmp_path / "tests.json"), "--scope",
                 str(tmp_path / "scope.json")]) == 0
    assert capsys.readouterr().out.strip() == "A1"
    assert main([*base, "prereg", "deviation", "A1", "early"]) != 0  # drafts have no deviations
    assert main([*base, "prereg", "freeze", "A1", "--yes"]) == 0
    capsys.readouterr()
    assert main([*base, "prereg", "verify"]) == 0
    assert capsys.readouterr().out == "ok: 1 frozen amendment, chain and pins intact\n"
    assert main([*base, "prereg", "deviation", "A1", "ran late"]) == 0
    capsys.readouterr()
    assert main([*base, "prereg", "show"]) == 0
    assert f"{len(TESTS)} tests, 1 deviation  Rule" in capsys.readouterr().out
    assert main([*base, "prereg", "show", "A1"]) == 0
    out = capsys.readouterr().out
    assert all(s in out for s in ("frozen", "deviation 1", "ran late", "The rule helps"))
    (tmp_path / "bad.json").write_text("[{")
    bad = str(tmp_path / "bad.json")
    assert main([*base, "prereg", "new", "--title", "x", "--tests", bad]) == 1
    assert "invalid JSON for tests" in capsys.readouterr().err


def test_freeze_refuses_a_scope_that_does_not_resolve(db: Database, db_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    models = builtin_models()
    prereg.create(db, "ghost model", "", [], {**SCOPE, "models": ["sim-own5", "qwen-ghost"]})
    with pytest.raises(LabError, match="scope model 'qwen-ghost' is not in the model registry"):
        prereg.freeze(db, "A1", models)
    assert main(["--db", str(db_path), "prereg", "freeze", "A1", "--yes"]) == 1
    assert "qwen-ghost" in capsys.readouterr().err
    assert rows.amendment(db, "A1")["state"] == "draft"
    prereg.create(db, "no set", "", [], {**SCOPE, "question_sets": ["test20", "fresh300"]})
    with pytest.raises(LabError, match="no question set 'fresh300'"):
        prereg.freeze(db, "A2", models)
    prereg.create(db, "wrong dataset", "", [], {**SCOPE, "datasets": ["fever"]})
    with pytest.raises(LabError, match="dataset 'fever' is not the dataset of any scoped"):
        prereg.freeze(db, "A3", models)
    prereg.create(db, "fine", "", [], {**SCOPE, "datasets": ["demo"]})
    frozen = prereg.freeze(db, "A4", models)
    assert set(frozen["pins"]["models"]) == {"sim-own5", "sim-clock6"}  # every model pinned


def test_tests_stay_inside_their_amendments_scope(db: Database) -> None:
    outside = {**TESTS[0], "models": ["sim-own7"]}
    with pytest.raises(ConfigError, match="model 'sim-own7' is outside the amendment's scope"):
        prereg.create(db, "t", tests=[outside], scope=SCOPE)
    prereg.create(db, "t", tests=TESTS, scope=SCOPE)
    with pytest.raises(ConfigError, match="model 'sim-own5' is outside"):
        prereg.edit(db, "A1", scope={**SCOPE, "models": ["sim-clock6"]})
    assert rows.amendment(db, "A1")["scope"]["models"] == SCOPE["models"]


def test_scoped_seeds_gate_the_grid(db: Database) -> None:
    models = builtin_models()
    prereg.create(db, "seed 0", "", [], {**SCOPE, "seeds": [0]})
    prereg.freeze(db, "A1", models)
    assert plan(db, req(amendment="A1"), models).mode == "governed"
    with pytest.raises(prereg.GateError, match="seed 1 is not in its scope"):
        plan(db, req(amendment="A1", seeds=(0, 1)), models)


def test_a_scoped_models_spec_is_pinned_and_a_change_is_caught(db: Database) -> None:
    from core.models.registry import ModelSpec

    models = builtin_models()
    prereg.create(db, "pinned", "", TESTS, SCOPE)
    prereg.freeze(db, "A1", models)
    assert prereg.verify(db, models) == []
    own5 = models["sim-own5"]
    changed = {**models, "sim-own5": ModelSpec("sim-own5", "sim", {**own5.params, "k": 4})}
    assert [p.what for p in prereg.verify(db, changed)] == [
        p.what for p in prereg.verify(db, changed) if p.what.startswith("model sim-own5 changed")]
    assert prereg.verify(db, changed)
    with pytest.raises(prereg.GateError, match="model sim-own5 changed since A1 was frozen"):
        plan(db, req(amendment="A1"), changed)


def test_cli_freeze_asks_with_counted_nouns(db: Database, db_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The freeze question counts what it pins: `1 model`, never `1 models`; `n`
    leaves the amendment a draft."""
    prereg.create(db, "one model", "", [], {**SCOPE, "models": ["sim-own5"],
                                             "conditions": ["none"]})
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["--db", str(db_path), "prereg", "freeze", "A1"]) != 0
    out = capsys.readouterr().out
    assert "1 condition, 2 regimes, 1 model." in out, out
    assert rows.amendment(db, "A1")["state"] == "draft"
