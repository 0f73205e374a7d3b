"""The fast analysis path gives the same numbers as the path that read every
step into pandas (fixture computed before the change, same seeds; recomputed for later
definitions: p floored at 1/(B+1), holm_m, judgments, dissociation by question, the
γ warning, exact ties of paired differences, the dissociation rows' regimes), every text
and count identical and floats to 1e-12 relative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from analysis.measures.frames import load_frames
from analysis.tables.compute import compute
from core import store
from core.store.selection import Selection
from tests.helpers.scale import (
    HAZARD_BOOT,
    N_BOOT,
    NAMES,
    POOLS,
    load_fixture,
    results_json,
    write_rows,
)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The fixture's rows written through the store into a fresh lab.db."""
    data = load_fixture()
    path = tmp_path_factory.mktemp("scale") / "lab.db"
    write_rows(store.connect(path), data)
    return path, data


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: ",".join(p) or "split")
def test_every_table_identical_to_the_reference(stored: tuple[Path, dict],
                                                pool: tuple[str, ...]) -> None:
    path, data = stored
    db = store.connect(path)
    got = results_json(compute(load_frames(db, Selection(pool=pool)), NAMES, N_BOOT,
                               HAZARD_BOOT, 0))
    want = data["results"][",".join(pool) or "-"]
    assert got.keys() == want.keys()
    for key in want:
        if key != "tables":
            assert got[key] == want[key], key
    assert [len(t) for t in got["tables"]] == [len(t) for t in want["tables"]]
    for g_table, w_table in zip(got["tables"], want["tables"]):
        for g, w in zip(g_table, w_table):
            assert _same(g, w), (g["table"], g["model"], g["arm"], g["measure"], g["scope"],
                                 {k: (g.get(k), w.get(k)) for k in set(g) | set(w)
                                  if g.get(k) != w.get(k)})


def _same(got: dict, want: dict) -> bool:
    """Rows equal field by field; floats to 1e-12 relative (numpy's BLAS build changes
    the last bits of the hazard fits' solves and of a few sums between machines and
    versions; every text, count and label must be identical)."""
    if got.keys() != want.keys():
        return False
    for key, g in got.items():
        w = want[key]
        if isinstance(g, float) and isinstance(w, float):
            if not math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12):
                return False
        elif g != w:
            return False
    return True


def test_delta_rows_equal_those_of_the_five_failure_regimes_alone(
        stored: tuple[Path, dict]) -> None:
    """The main family's Δ rows on a study with clean are those of the same study with
    clean left out of the selection (the paper's Δ pools the five failure regimes): same
    decisions, questions, intervals, counts; ``--delta-regimes mean6`` pools clean."""
    from core.regimes import FAILURE_REGIMES

    path, _ = stored
    db = store.connect(path)

    def rows(selection: Selection, pool: str = "failure") -> list[dict]:
        table = compute(load_frames(db, selection), ("delta",), 50, delta_regimes=pool
                        ).tables[0]
        return [{k: v for k, v in r.items() if k != "provenance"} for r in table.dicts()
                if r["measure"] == "delta" and r["regimes"].startswith("persistent")]

    whole, five = rows(Selection()), rows(Selection(regimes=FAILURE_REGIMES))
    assert whole == five and len(whole) > 0
    assert all(r["regimes"] == ",".join(FAILURE_REGIMES) for r in whole)
    pooled = rows(Selection(), "mean6")
    assert not pooled  # every row covers clean too
    with_clean = [r for r in compute(load_frames(db), ("delta",), 50, delta_regimes="mean6"
                                     ).tables[0].dicts() if r["measure"] == "delta"
                  and r["regimes"].startswith("clean,")]
    assert len(with_clean) == len(whole)
    assert all(c["n"] >= f["n"] for c, f in zip(with_clean, whole))
    assert any(c["n"] > f["n"] for c, f in zip(with_clean, whole))  # clean has (a)/(b)


def test_stored_decisions_equal_the_definition_and_rederive(stored: tuple[Path, dict]) -> None:
    """lab.db's decisions (written with each episode) equal `decision_table` on the steps,
    and recomputing them (judgment replay, the migration's backfill) changes nothing."""
    from analysis.measures.decisions import decision_table
    from analysis.measures.frames import frames_from
    from core.store.decisions import rederive
    from core.store.frames import episodes_frame, steps_frame

    path, _ = stored
    db = store.connect(path)
    frames = load_frames(db)
    in_memory = frames_from(episodes_frame(db), steps_frame(db)).decisions
    assert frames.decisions.equals(in_memory)
    defined = decision_table(frames.episodes, frames.steps)  # once, not once per column
    assert defined.columns.tolist() == [c for c in in_memory.columns if c in defined]
    before = db.conn.execute("SELECT * FROM decisions ORDER BY episode_id, seq").fetchall()
    changes = db.conn.execute("SELECT changes FROM analysis_state").fetchone()[0]
    ids = [r[0] for r in db.conn.execute("SELECT id FROM episodes")]
    assert rederive(db, ids) == len([i for i in ids if db.conn.execute(
        "SELECT 1 FROM steps WHERE episode_id = ?", (i,)).fetchone()])
    assert db.conn.execute("SELECT * FROM decisions ORDER BY episode_id, seq").fetchall() == before
    assert db.conn.execute("SELECT changes FROM analysis_state").fetchone()[0] > changes


def test_holm_matches_statsmodels(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    import numpy as np
    from statsmodels.stats.multitest import multipletests

    from analysis.stats.bootstrap import holm

    # statsmodels' holm branch ends with gc.collect(), which changes no number and costs
    # up to 0.7 s per call in a test process's large heap (400 calls: 4 minutes)
    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)
    rng = np.random.default_rng(3)
    for n in range(1, 9):
        for _ in range(50):
            p = rng.random(n)
            p[rng.random(n) < 0.3] = rng.choice([0.0, 0.5, 1.0])
            # holm takes a sequence; the array stands for one
            adjusted = holm(cast("Sequence[float]", p))
            assert list(adjusted) == list(multipletests(p, method="holm")[1])
    assert holm([float("nan"), 0.01])[1] == 0.01 and holm([float("nan"), 0.01])[0] != 0.0


def _copy(path: Path, tmp_path: Path) -> Path:
    import sqlite3

    target = tmp_path / "copy.db"
    src = sqlite3.connect(path)
    dst = sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()
    return target


def test_results_cache_serves_unchanged_numbers_and_new_episodes_invalidate(
        stored: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import analysis.tables.compute as measures
    from analysis.base.cache import SUFFIX
    from core.episode import EpisodeResult
    from core.store import cell_hash

    path = _copy(stored[0], tmp_path)
    db = store.connect(path)
    run = db.conn.execute("SELECT name FROM runs").fetchone()[0]
    sel = Selection(runs=(run,))
    first = compute(load_frames(db, sel), ("success", "index"), 50, 20, 0)
    assert len(list(Path(f"{path}{SUFFIX}").glob("*.pkl"))) == 2
    real, calls = measures._compute_one, []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(measures, "_compute_one", counting)
    again = load_frames(db, sel)
    res = compute(again, ("index", "success"), 50, 20, 0)
    assert calls == [] and again._episodes is None  # served without reading a frame
    assert [t.dicts() for t in res.tables] == [t.dicts() for t in (first.tables[2],
                                                                  *first.tables[:2])]
    assert compute(load_frames(db, sel), ("index",), 51, 20, 0) and calls == ["index"]

    def new_episode(run_name: str, tag: str) -> None:
        cell = dict(stored[1]["cells"][0]["columns"], spec_hash=cell_hash({"tag": tag}))
        cell_id = store.ensure_cell(db, store.ensure_run(db, run_name), cell)
        store.write_episodes(db, [(cell_id, EpisodeResult("q-" + tag, end_reason="budget"),
                                   None)])

    new_episode("another-run", "a")  # outside the selection: still cached
    compute(load_frames(db, sel), ("index",), 50, 20, 0)
    assert calls == ["index"]
    new_episode(run, "b")  # inside it: recomputed
    compute(load_frames(db, sel), ("index",), 50, 20, 0)
    assert calls == ["index", "index"]


def test_export_streams_the_same_rows(stored: tuple[Path, dict], tmp_path: Path) -> None:
    import pandas as pd

    from analysis.tables.export import export
    from core.store.frames import episodes_frame
    from tests.oracles.export import episodes_table

    db = store.connect(stored[0])
    paths = export(db, tmp_path / "out", n_boot=20, hazard_boot=10)
    got = pd.read_csv(paths[0])
    episodes_table(episodes_frame(db)).to_csv(tmp_path / "want.csv", index=False)
    assert got.equals(pd.read_csv(tmp_path / "want.csv"))
    steps = pd.read_csv(paths[1])
    assert len(steps) == db.conn.execute("SELECT count(*) FROM steps").fetchone()[0]
    assert steps["episode_id"].is_monotonic_increasing


def test_ols_params_match_statsmodels() -> None:
    import warnings

    import numpy as np
    import statsmodels.api as sm

    from analysis.stats.lpm import ols_params

    rng = np.random.default_rng(5)
    for trial in range(60):
        n, p = int(rng.integers(5, 120)), int(rng.integers(1, 10))
        x = rng.random((n, p)).round(1)
        if trial % 3 == 0:
            x[:, -1] = x[:, 0]  # rank-deficient, as without earlier useful judgments
        y = (rng.random(n) < 0.4).astype(float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = sm.OLS(y, x).fit().params
        assert np.array_equal(ols_params(x, y), want)


def test_hazard_fits_are_kept_by_sample_and_new_episodes_refit_only_what_they_change(
        stored: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The results cache keeps the hazard model's fits by each group's sample: a new
    episode invalidates the table, and the recomputation fits only samples it has not
    fitted before, with the same numbers."""
    import analysis.measures.hazard as hazard
    from analysis.base.cache import ResultsCache
    from analysis.measures.hazard import FITS_KEPT
    from analysis.stats.lpm_batch import CodedSample
    from core.episode import EpisodeResult
    from core.store import cell_hash

    path = _copy(stored[0], tmp_path)
    db = store.connect(path)
    real, fitted = hazard.start_fits, []

    def counting(samples: Sequence[CodedSample], *args: Any, **kwargs: Any) -> Any:
        fitted.append(len(samples))
        return real(samples, *args, **kwargs)

    monkeypatch.setattr(hazard, "start_fits", counting)
    first = compute(load_frames(db), ("hazard",), 50, 20, 0).tables[0].dicts()
    assert len(fitted) == 1 and fitted[0] > 1
    cache = ResultsCache(path)
    key = cache.shared_key("hazard fits", {"hazard_boot": 20, "seed": 0})
    memo = cache.get(key)
    assert isinstance(memo, dict) and len(memo) == fitted[0] <= FITS_KEPT
    memo.pop(next(iter(memo)))  # one group's fit forgotten
    cache.put(key, memo)

    cell = dict(stored[1]["cells"][0]["columns"], spec_hash=cell_hash({"tag": "new"}))
    cell_id = store.ensure_cell(db, store.ensure_run(db, "r-new"), cell)
    store.write_episodes(db, [(cell_id, EpisodeResult("q-new", end_reason="budget"), None)])
    again = compute(load_frames(db), ("hazard",), 50, 20, 0).tables[0].dicts()
    assert fitted == [fitted[0], 1]  # the table was recomputed; one sample fitted again
    assert again == first
    assert compute(load_frames(db), ("hazard",), 50, 21, 0).tables and fitted[-1] == fitted[0]
