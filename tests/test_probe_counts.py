"""The Dashboard's probe counts: complete, errored, and the rate of the last minute, read
from the partial indexes of migration 0023 rather than by scanning every probe (a
replay of a paper-scale study stores about a million)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database

from core import store
from core.episode import iso_time
from core.probes import ProbeRecord
from core.store import monitor
from core.store.probes import write_probes
from tests.helpers.console import build_small
from tests.helpers.reads import vm_steps

NOW = 1_800_000_000.0
OLD = 1_000
"""Complete probes stored an hour before NOW."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six sim episodes; each gets probes at many steps."""
    path = tmp_path_factory.mktemp("probes") / "lab.db"
    build_small(path, 6, ("clean",), "p")
    return path


def _probe(episode: int, t: int, ago: float, error: str | None = None) -> ProbeRecord:
    return ProbeRecord(episode, t, "answer_now", "sim-never", error=error,
                       created_at=iso_time(NOW - ago))


def _fill(db: Database) -> None:
    """OLD complete probes an hour back; in the last minute two complete ones (30 s and
    10 s back) and one errored (20 s back) then asked again (complete, 5 s back); one
    errored probe still standing (40 s back)."""
    episodes = [e for (e,) in db.conn.execute("SELECT id FROM episodes ORDER BY id")]
    write_probes(db, [_probe(episodes[i % 6], 100 + i, 3_600) for i in range(OLD)])
    e = episodes[0]
    write_probes(db, [_probe(e, 1, 30), _probe(e, 2, 10), _probe(e, 3, 20, "model error: 503"),
                      _probe(e, 4, 40, "model error: timeout")])
    write_probes(db, [_probe(e, 3, 5)])  # asked again: the errored row becomes complete


def test_probe_counts_and_rate(lab: Path) -> None:
    db = store.connect(lab)
    _fill(db)
    counts = monitor.queue_counts(db, now=NOW)
    assert (counts.probes, counts.probes_errored) == (OLD + 3, 1)
    assert counts.probe_rate == pytest.approx(3 / 30)  # three since the first, 30 s back
    # the counts read the indexes, not the probes: a small part of one scan of them
    since = iso_time(NOW - 60)
    read = vm_steps(db, lambda: db.conn.execute(monitor._PROBE_COUNTS, (since, since)).fetchall())
    scan = vm_steps(db, lambda: db.conn.execute(
        "SELECT count(*) - count(error), count(error) FROM probes").fetchall())
    assert scan > 0 and read * 20 < scan, (read, scan)
    # and reads no probe's row: each count is answered by an index alone (a busy
    # minute's 16,000 probes looked up row by row took 0.15 s)
    plan = [row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + monitor._PROBE_COUNTS,
                                               (since, since))]
    reads = [step for step in plan if "probes" in step]
    assert len(reads) == 5 and all("COVERING INDEX" in step for step in reads), plan
    db.conn.close()
