"""`lab demo` from nothing, and again (reusing what exists)."""

from __future__ import annotations

import re

from tests.queue_helpers import run_lab


def test_demo_from_nothing_then_reuse(tmp_path):
    db = tmp_path / "lab.db"
    config = tmp_path / "lab.toml"
    config.write_text("")  # only the built-in sims
    first = run_lab(db, config, "demo", timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "7200 new episodes" in first.stdout
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
    again = run_lab(db, config, "demo", timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "already stored" in again.stdout
    status = run_lab(db, config, "status", "--json")
    assert '"stored": 7200' in status.stdout
