"""Prompt packs: import checks, what the worker sends and records, pins, and render."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

import prompts
from core import prereg, store
from core.conditions import parse_condition
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry, resolve_model
from core.react import EpisodeSetup, run_episode
from core.regimes import ForeignPool, parse_regime
from core.request_render import RecordingSession, render_request
from core.runner import CellSpec
from core.store import jobs as ledger
from core.store import prompt_packs as pack_rows
from jobs.control import enqueue_grid
from jobs.grid import GridRequest, expand
from jobs.settings import WorkerSettings
from jobs.tasks import cell_from_row, execute_job
from tests.helpers.queue import lab_here, write_registry
from tests.helpers.scripted import ScriptedClient

NEW_QUESTION = "Answer with the fewest words you can. Question to answer: {question}\n"
NEW_FORCED = "Stop searching now: reply with finish and your best answer.\n"


@pytest.fixture
def lab(tmp_path: Path) -> tuple[Path, Path, Database]:
    """(db path, config path, open db) with the demo set stored."""
    db_path = tmp_path / "lab.db"
    db = store.connect(db_path)
    ensure_demo_set(db)
    return db_path, write_registry(tmp_path, latency=0), db


def paper_pack(lab: tuple[Path, Path, Database], tmp_path: Path) -> Path:
    """A complete pack: every piece exported, two of them reworded."""
    db_path, config, _ = lab
    folder = tmp_path / "pack"
    assert lab_here(db_path, config, "prompts", "export", str(folder)).returncode == 0
    (folder / "question.txt").write_text(NEW_QUESTION, encoding="utf-8")
    (folder / "forced_observation.txt").write_text(NEW_FORCED, encoding="utf-8")
    return folder


def dump(db_path: Path) -> list[str]:
    """Every statement that rebuilds lab.db: equal dumps, equal contents."""
    conn = sqlite3.connect(db_path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def render(db_path: Path, config: Path, *args: str) -> dict:
    out = lab_here(db_path, config, "prompts", "render", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_complete_pack_changes_the_request_and_the_arm_and_cell_hash(
        lab: tuple[Path, Path, Database], tmp_path: Path) -> None:
    db_path, config, db = lab
    args = ("--condition", "enforced_rule:k=2", "--regime", "persistent", "--step", "2",
            "--forced")
    before = render(db_path, config, *args)
    cells_before = expand(GridRequest(models=("sim-own5",), conditions=("none",),
                                      regimes=("clean",), question_set="demo", run="r"),
                          load_registry(config), db)
    out = lab_here(db_path, config, "prompts", "import", str(paper_pack(lab, tmp_path)))
    assert out.returncode == 0, out.stderr
    after = render(db_path, config, *args)
    assert before["prompt_pack"] == "built-in" and after["prompt_pack"] == pack_rows.active_sha(db)
    first = after["body"]["messages"][1]["content"]
    assert first.startswith("Answer with the fewest words you can. Question to answer: ")
    assert after["forced"] and after["body"]["messages"][-1]["content"].endswith(NEW_FORCED.strip())
    assert before["body"]["messages"][1]["content"] != first
    cells_after = expand(GridRequest(models=("sim-own5",), conditions=("none",),
                                     regimes=("clean",), question_set="demo", run="r"),
                         load_registry(config), db)
    old, new = cells_before[0].columns(), cells_after[0].columns()
    assert new["prompt_pack"] == pack_rows.active_sha(db) and old["prompt_pack"] is None
    assert old["condition_hash"] == cells_before[0].condition.spec_hash()  # unchanged w/o pack
    assert new["condition_hash"] != old["condition_hash"]
    assert new["spec_hash"] != old["spec_hash"]
    # the worker rebuilds the same cell (and hash) from its row
    model = resolve_model(load_registry(config), "sim-own5")
    assert cell_from_row(new, model).columns()["spec_hash"] == new["spec_hash"]


def test_the_worker_runs_a_cell_with_its_pack_and_records_its_hashes(
        lab: tuple[Path, Path, Database], tmp_path: Path) -> None:
    db_path, config, db = lab
    settings = WorkerSettings(db_path=db_path, config_path=config, lease_s=30, heartbeat_s=0.2,
                              reconcile_s=0.5, worker_id="w1")
    models = load_registry(config)
    req = GridRequest(models=("sim-own5",), conditions=("enforced_rule",),
                      regimes=("persistent",), question_set="demo", run="plain")
    enqueue_grid(db, settings, req, models)
    lab_here(db_path, config, "prompts", "import", str(paper_pack(lab, tmp_path)))
    enqueue_grid(db, settings, GridRequest(**{**req.__dict__, "run": "pack"}), models)
    for run in ("plain", "pack"):
        for job in ledger.select_jobs(db, "run", run):
            assert execute_job(settings, job) == "done"
    rows = db.conn.execute(
        "SELECT r.name, c.prompt_pack, c.condition_hash, e.prompts_sha256, e.forced_turns "
        "FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id"
    ).fetchall()
    by_run = {run: [r for r in rows if r[0] == run] for run in ("plain", "pack")}
    assert all(r[1] is None for r in by_run["plain"])
    assert {r[1] for r in by_run["pack"]} == {pack_rows.active_sha(db)}
    assert {r[2] for r in by_run["plain"]}.isdisjoint({r[2] for r in by_run["pack"]})
    assert {r[3] for r in by_run["plain"]}.isdisjoint({r[3] for r in by_run["pack"]})
    files = store.episodes.prompt_set(db, by_run["pack"][0][3])
    assert files["prompts/question.txt"] == prompts.hashlib.sha256(
        NEW_QUESTION.encode()).hexdigest()
    # the sims still see the forced turns under the pack's wording
    assert sum(r[4] for r in by_run["pack"]) == sum(r[4] for r in by_run["plain"]) > 0


@pytest.mark.parametrize("write, needle", [
    (("question.txt", "Q: {questoin}\n"), "question.txt: placeholder {question} is missing"),
    (("question.txt", "Q: {question} {answer}\n"), "question.txt: unknown placeholder {answer}"),
    (("observation.txt", "Obs {observation} }\n"), "observation.txt: a lone brace"),
    (("questions.txt", "Q: {question}\n"), "questions.txt: not a prompt piece"),
])
def test_a_bad_pack_is_refused_in_one_line_and_nothing_is_stored(lab: tuple[Path, Path, Database],
                                                                 tmp_path: Path,
                                                                 write: tuple[str, str], needle: str
                                                                ) -> None:
    db_path, config, _ = lab
    folder = paper_pack(lab, tmp_path)
    name, text = write
    (folder / name).write_text(text, encoding="utf-8")
    before = dump(db_path)
    out = lab_here(db_path, config, "prompts", "import", str(folder))
    assert out.returncode != 0 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and needle in out.stderr, out.stderr
    assert dump(db_path) == before


def test_undecodable_text_is_refused(lab: tuple[Path, Path, Database], tmp_path: Path) -> None:
    db_path, config, _ = lab
    folder = paper_pack(lab, tmp_path)
    (folder / "system.txt").write_bytes(b"caf\xe9\n")
    out = lab_here(db_path, config, "prompts", "import", str(folder))
    assert out.returncode != 0 and "system.txt: not UTF-8 text (byte 3)" in out.stderr


def test_export_import_round_trip_and_back_to_builtin(lab: tuple[Path, Path, Database],
                                                      tmp_path: Path) -> None:
    db_path, config, db = lab
    first, second = tmp_path / "a", tmp_path / "b"
    lab_here(db_path, config, "prompts", "export", str(first))
    assert lab_here(db_path, config, "prompts", "import", str(first)).returncode == 0
    listed = lab_here(db_path, config, "prompts", "list").stdout.splitlines()
    assert all("pack (= built-in)" in line for line in listed[1:])
    lab_here(db_path, config, "prompts", "export", str(second))
    assert {p.name: p.read_bytes() for p in first.iterdir()} == {
        p.name: p.read_bytes() for p in second.iterdir()}
    assert {p.stem for p in first.iterdir()} == set(prompts.builtin_names())
    refused = lab_here(db_path, config, "prompts", "export", str(second))
    assert refused.returncode != 0 and "--force" in refused.stderr
    assert lab_here(db_path, config, "prompts", "import", "--builtin").returncode == 0
    assert pack_rows.active_sha(db) is None


def test_diff_shows_the_changed_lines_only(lab: tuple[Path, Path, Database], tmp_path: Path
                                          ) -> None:
    db_path, config, _ = lab
    folder = paper_pack(lab, tmp_path)
    out = lab_here(db_path, config, "prompts", "diff", str(folder))
    assert out.returncode == 0
    assert f"+{NEW_QUESTION.strip()}" in out.stdout
    assert "-Question: {question}" in out.stdout or "\n-" in out.stdout
    assert sorted(line for line in out.stdout.splitlines() if line.startswith("+++")) == [
        f"+++ {folder / 'forced_observation.txt'}", f"+++ {folder / 'question.txt'}"]
    lab_here(db_path, config, "prompts", "import", str(folder))
    assert lab_here(db_path, config, "prompts", "diff", str(folder)).stdout == "no differences\n"


def test_show_prints_a_piece_inert(lab: tuple[Path, Path, Database], tmp_path: Path) -> None:
    db_path, config, _ = lab
    folder = tmp_path / "esc"
    folder.mkdir()
    (folder / "permit.txt").write_text("You may \x1b[31mstop\x1b[0m.\n", encoding="utf-8")
    assert lab_here(db_path, config, "prompts", "import", str(folder)).returncode == 0
    out = lab_here(db_path, config, "prompts", "show", "permit").stdout
    assert "\x1b" not in out and "\\x1b[31mstop" in out


def test_an_amendment_frozen_with_a_pack_pins_it(lab: tuple[Path, Path, Database], tmp_path: Path
                                                ) -> None:
    db_path, config, db = lab
    models = load_registry(config)
    lab_here(db_path, config, "prompts", "import", str(paper_pack(lab, tmp_path)))
    sha = pack_rows.active_sha(db)
    scope = {"models": ["sim-own5"], "conditions": ["none"], "regimes": ["clean"],
             "question_sets": ["demo"], "budgets": [8]}
    aid = prereg.create(db, "pack", scope=scope)
    row = prereg.freeze(db, aid, models)
    assert row["pins"][prereg.PACK_PIN] == {"active": sha}
    assert row["pins"]["prompts"]["prompts/question.txt"] == prompts.hashlib.sha256(
        NEW_QUESTION.encode()).hexdigest()
    assert row["pins"][prereg.PINNED_TEXTS]["prompts/question.txt"] == NEW_QUESTION
    assert prereg.pin_changes(db, row, models) == []
    lab_here(db_path, config, "prompts", "reset")
    changes = prereg.pin_changes(db, row, models)
    assert any("the active prompt pack changed" in c and "built-in" in c for c in changes)
    assert any(c.startswith("prompts/question.txt changed") for c in changes)
    assert "prompts/question.txt" in prereg.prompt_diffs(row, db)


def test_render_shows_what_a_scripted_episode_actually_sent(lab: tuple[Path, Path, Database]
                                                           ) -> None:
    db_path, config, db = lab
    (q,) = store.load_questions(db, ids=["demo-001"])
    setup = EpisodeSetup(question=q, condition=parse_condition("enforced_rule:k=2"),
                         regime=parse_regime("persistent"), budget=8, seed=0,
                         pool=ForeignPool(store.load_questions(db, dataset=q.dataset)))
    script = RecordingSession(q.question, "react", useless=True)
    client = ScriptedClient(acts=[script.reply("act")] * 8, judgments=["USELESS"] * 8)
    asyncio.run(run_episode(setup, client.start(None)))  # type: ignore[arg-type]
    sent = [messages for kind, messages in client.calls if kind == "act"]
    for step, forced in ((1, ()), (3, ("--forced",)), (4, ("--forced",))):
        shown = render(db_path, config, "--condition", "enforced_rule:k=2", "--regime",
                       "persistent", "--step", str(step), *forced)
        assert shown["step"] == step and shown["forced"] == bool(forced)
        assert shown["body"]["messages"] == sent[step - 1]
        assert shown["body"]["max_tokens"] == setup.act_max_tokens
    direct = render_request(setup, None, 3, True, None)
    assert direct["forced"] and direct["step"] == 3 and direct["body"]["messages"] == sent[2]


def test_render_builds_an_openai_models_body(lab: tuple[Path, Path, Database], tmp_path: Path
                                            ) -> None:
    db_path, config, _ = lab
    config.write_text(config.read_text() + '\n[models.served]\nbackend = "openai"\n'
                      'model = "org/model"\nendpoints = ["http://127.0.0.1:9/v1"]\n')
    shown = render(db_path, config, "--condition", "none", "--regime", "clean",
                   "--model", "served", "--dataset", "fever")
    body = shown["body"]
    assert body["model"] == "org/model" and body["messages"][0]["role"] == "system"
    assert {"max_tokens", "stop", "messages"} <= set(body)
    assert shown["question"].startswith("fever") or "claim" in json.dumps(body).lower()


def test_cell_without_pack_keeps_its_old_hash() -> None:
    spec = resolve_model(load_registry(Path("/nonexistent.toml")), "sim-own5")
    cell = CellSpec(spec, parse_condition("none"), parse_regime("clean"), "demo", 8, 0)
    cols = cell.columns()
    assert "prompt_pack" not in json.dumps(cell.model.spec())
    assert cols["condition_hash"] == cell.condition.spec_hash() and cols["prompt_pack"] is None
