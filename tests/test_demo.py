"""`lab demo` from nothing, and again (reusing what exists)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.settings import WorkerSettings
from tests.helpers.queue import run_lab


def test_demo_from_nothing_then_reuse(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    config = tmp_path / "lab.toml"
    config.write_text("")  # only the built-in sims
    first = run_lab(db, config, "demo", timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "7,200 new episodes" in first.stdout
    assert "mean6" in first.stdout and "sim-own5" in first.stdout
    out = first.stdout
    assert "do not read prompts" in out  # says what the sims do
    for prompt_only in ("budget  ", "stated_rule  ", "permit  ", "decide  "):
        assert prompt_only not in out  # arms the sims cannot see are left out
    delta = out.split("Time-matched contrast Δ")[1].split("Stopping and cost")[0]
    rows = [line for line in delta.splitlines() if line.startswith("sim-")]
    assert len(rows) == 20  # 5 policies × 4 arms: one screen
    for test in ("D1", "D2", "D3"):  # the registered tests hold on the new grid
        assert re.search(rf"A1\s+{test}\s+pass", out), test
    assert "lab` opens the console" in out
    _fits_and_defines(out)
    again = run_lab(db, config, "demo", timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "already stored" in again.stdout
    status = run_lab(db, config, "status", "--json")
    assert '"stored": 7200' in status.stdout


def _fits_and_defines(out: str) -> None:
    """Without a terminal every line fits 100 columns (wide tables split into blocks that
    repeat model and arm), each sim is named with its policy on one line, and every
    abbreviation the tables use is defined under them."""
    from console.cli.demo import DEMO_MODELS, policy_text
    from core.models.sim import BUILTIN_SIMS

    long = [line for line in out.splitlines() if len(line) > 100]
    assert not long, long
    lines = out.splitlines()
    for model in DEMO_MODELS:
        assert any(line.split()[:1] == [model] and policy_text(BUILTIN_SIMS[model]) in line
                   for line in lines), model
    text = " ".join(out.split())
    for short, full in (("pers.", "persistent"), ("rec1", "recover_after_1"),
                        ("late3", "late_onset_from_3"), ("med.act", "median action"),
                        ("c.read", "cache read tokens"), ("tok.in", "input tokens"),
                        ("util.all", "utility (all calls)"), ("rep", "replicate")):
        assert f"{short} = {full}" in text, short
    success = out.split("Success per regime and mean6")[1].split("Paired success")[0]
    headers = [line.split() for line in success.splitlines() if line.startswith("model")]
    assert headers[0][:8] == ["model", "arm", "clean", "pers.", "rec1", "rec2", "rec3",
                              "late3"] and headers[-1][-1] == "mean6"
    assert all(h[:2] == ["model", "arm"] for h in headers)


def test_a_resumed_demo_says_what_is_stored_and_what_remains(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    from console.cli import demo as demo_cmd
    from core import store
    from core.store import jobs as ledger
    from jobs.tasks import execute_job

    db_path, config = tmp_path / "lab.db", tmp_path / "lab.toml"
    config.write_text("")

    def first_jobs(settings: WorkerSettings, **_kw: object
                   ) -> None:  # an interrupted first demo: three jobs ran
        jobs = ledger.select_jobs(store.connect(db_path), "run", demo_cmd.DEMO_RUN)
        for job_id in jobs[:3]:
            assert execute_job(settings, job_id) == "done"

    monkeypatch.setattr(demo_cmd, "run_worker", first_jobs)
    demo_cmd.run_demo(db_path, config)
    out = " ".join(capsys.readouterr().out.split())  # a line wraps at 100 columns
    assert "7,200 new episodes in 240 jobs; running the 7,200 that remain" in out
    stored = store.count(store.connect(db_path), "episodes")
    assert 0 < stored < 7200
    monkeypatch.setattr(demo_cmd, "run_worker", lambda settings, **_kw: None)
    demo_cmd.run_demo(db_path, config)
    printed = capsys.readouterr().out
    assert all(len(line) <= 100 for line in printed.splitlines()), printed
    out = " ".join(printed.split())
    assert f"{stored:,} of 7,200 episodes already stored" in out, out
    assert f"{7200 - stored:,} queued by an earlier run of the demo" in out
    assert f"running the {7200 - stored:,} that remain" in out and "all 7" not in out
