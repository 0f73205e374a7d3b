"""`lab demo` from nothing, and again (reusing what exists)."""

from __future__ import annotations

from tests.queue_helpers import run_lab


def test_demo_from_nothing_then_reuse(tmp_path):
    db = tmp_path / "lab.db"
    config = tmp_path / "missing.toml"
    first = run_lab(db, config, "demo", timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "9000 new episodes" in first.stdout
    assert "mean6" in first.stdout and "sim-own5" in first.stdout
    again = run_lab(db, config, "demo", timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "already stored" in again.stdout
    status = run_lab(db, config, "status", "--json")
    assert '"stored": 9000' in status.stdout
