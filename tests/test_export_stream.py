"""lab export's streamed episodes.csv and steps.csv are byte for byte what the old pandas
path wrote: same columns, row order and value formatting.

The reference below is the pandas export as it was before streaming (read_sql_query
chunks joined with the cells frame, written with DataFrame.to_csv), frozen here with its
own SQL so later changes to core.store.frames cannot move it. Its chunks are tiny, so
every chunk-boundary and all-NULL-chunk case of pandas' dtype inference is exercised.
It now also reads the per-step tokens, refused and discarded flags and the
episodes' refused calls, and splits extra calls with `analysis.measures.cost.own_calls` (the
definition the cost table uses).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis.base.arms import EXPLORATORY
from analysis.measures.cost import measurement_calls, own_calls
from analysis.tables.export import EPISODE_COLUMNS, STEP_COLUMNS, export, write_rows_csvs
from core import store
from core.conditions import arm_label, parse_condition
from core.demo_data import demo_questions
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from core.store.export_rows import csv_line, step_lines
from core.store.selection import Selection, where_clause
from jobs.kinds.episodes import run_questions
from tests.oracles.export import nullable_ints

_CELLS = """
SELECT c.id AS cell_id, r.name AS run, r.amendment_id AS amendment, c.model, c.condition,
       c.condition_hash, c.condition_spec, c.regime, c.budget, c.seed, c.replicate,
       COALESCE(c.question_set, '') AS question_set
FROM cells c JOIN runs r ON r.id = c.run_id
"""
_EPISODES = """
SELECT e.id AS episode_id, e.cell_id, COALESCE(q.dataset, '') AS dataset, e.question_id,
       e.answered, e.answer_action, e.correct, e.f1, e.tool_calls, e.extra_calls,
       e.discarded_turns, e.primary_judgments, e.refused_calls,
       e.input_tokens, e.output_tokens, e.cost_usd, e.end_reason, e.error
FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id
LEFT JOIN questions q ON q.id = e.question_id
"""
_STEPS = """
SELECT s.episode_id, e.cell_id, e.question_id, s.t, s.action, s.obs_index, s.obs_failed,
       s.obs_source, s.judgment, s.judgment_source, s.stated_judgment, s.streak, s.forced,
       s.refused, s.discarded, s.input_tokens, s.output_tokens, s.reasoning,
       s.reasoning_tokens
FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id
JOIN runs r ON r.id = c.run_id
"""
THOUGHT = 'first, "quoted" thought,\nsecond line\r\nthird — naïve 思考 '
ERROR = 'TimeoutError: server said "no", twice\nretry later'


def _pandas_csvs(db: Any, directory: Path, selection: Selection, version: str,
                 rows: int = 3) -> tuple[bytes, bytes]:
    """The old pandas export of episodes.csv and steps.csv (the reference)."""
    where, args = where_clause(db, selection)
    cells = pd.read_sql_query(_CELLS, db.conn)
    cells.insert(5, "arm", cells["condition_spec"].map(arm_label).astype(object))
    out = []
    for name, sql, order, columns in (
            ("episodes.csv", _EPISODES, " ORDER BY e.id", EPISODE_COLUMNS),
            ("steps.csv", _STEPS, " ORDER BY s.episode_id, s.t, s.discarded DESC",
             STEP_COLUMNS)):
        path = directory / name
        with path.open("w", encoding="utf-8", newline="") as fh:
            header = True
            for chunk in pd.read_sql_query(sql + where + order, db.conn, params=args,
                                           chunksize=rows):
                frame = chunk.merge(cells, on="cell_id", how="left", validate="many_to_one")
                if name == "episodes.csv":
                    frame = frame.assign(amendment=frame["amendment"].where(
                        frame["amendment"].notna(), EXPLORATORY), version=version,
                        own_calls=own_calls(frame), measurement_calls=measurement_calls(frame))
                frame = nullable_ints(frame.loc[:, list(columns)])
                frame.to_csv(fh, index=False, header=header)
                header = False
            if header:
                pd.DataFrame(columns=list(columns)).to_csv(fh, index=False)
        out.append(path.read_bytes())
    return out[0], out[1]


async def _grid(db: Any) -> None:
    questions = demo_questions()[:6]
    specs, pool = builtin_models(), ForeignPool(demo_questions())
    for run, model, cond in (("main", "sim-stated", "stated_judgment_rule:k=3"),
                             ("pilot, \"b\"", "sim-own3", "none"),
                             ("pilot, \"b\"", "sim-own3", "enforced_rule:k=2")):
        run_id = store.ensure_run(db, run)
        for regime in ("clean", "persistent"):
            for seed in (0, 1):
                cell = CellSpec(specs[model], parse_condition(cond), parse_regime(regime), None,
                                6, seed)
                cell_id = store.ensure_cell(db, run_id, cell.columns())
                await run_questions(db, cell_id, cell, questions, pool, make_client(cell.model))


def _oddities(db: Any) -> None:
    """Everything the CSVs must format: NULLs, errors, quotes, newlines, odd floats."""
    sql = db.conn.execute
    with db.conn:
        sql("INSERT INTO amendments (id, seq, title, created_at) VALUES ('A1', 1, 't', 'now')")
        sql("UPDATE runs SET amendment_id = 'A1' WHERE name = 'main'")
        sql("UPDATE cells SET question_set = 'set, \"one\"' WHERE seed = 1 AND regime = 'clean'")
        ids = [r[0] for r in sql("SELECT id FROM episodes ORDER BY id")]
        sql("UPDATE episodes SET error = ?, answer_action = NULL, answered = 0 WHERE id IN "
            "(?, ?, ?)", (ERROR, ids[1], ids[7], ids[-1]))
        sql("UPDATE episodes SET question_id = 'not, \"in\" questions' WHERE id = ?", (ids[2],))
        for i, (f1, cost) in enumerate(((1e-05, 0.30000000000000004), (1e16, 2.5e-07),
                                        (0.1, 123456789.125), (0.0, 1 / 3))):
            sql("UPDATE episodes SET f1 = ?, cost_usd = ? WHERE id = ?", (f1, cost, ids[3 + i]))
        sql("UPDATE steps SET reasoning = ?, reasoning_tokens = 17 WHERE (episode_id + t) % 3 = 0",
            (THOUGHT,))
        sql("UPDATE steps SET obs_index = NULL, obs_failed = NULL, obs_source = NULL, "
            "action = 'a,b' WHERE episode_id = ? AND t = 1", (ids[4],))
        sql("UPDATE steps SET stated_judgment = 'useless, \"really\"' WHERE discarded = 1")
        # a replayed judgment lives in probes; steps.csv carries the stored one, as before
        sql("UPDATE steps SET judgment = NULL, judgment_source = NULL WHERE episode_id = ? "
            "AND t = 1", (ids[5],))
        sql("INSERT INTO probes (episode_id, t, kind, model, judgment, created_at) VALUES "
            "(?, 1, 'judgment', 'sim-own3', 'USELESS', 'now')", (ids[5],))


@pytest.fixture(scope="module")
def odd_db(tmp_path_factory: pytest.TempPathFactory) -> Any:
    db = store.connect(tmp_path_factory.mktemp("stream") / "lab.db")
    store.insert_questions(db, demo_questions())
    asyncio.run(_grid(db))
    _oddities(db)
    return db


def test_fixture_exercises_every_case(odd_db: Any) -> None:
    one = odd_db.conn.execute
    assert one("SELECT count(*) FROM steps WHERE discarded = 1").fetchone()[0] > 0
    assert one("SELECT count(*) FROM episodes WHERE error IS NOT NULL").fetchone()[0] == 3
    assert one("SELECT count(*) FROM steps WHERE reasoning IS NOT NULL").fetchone()[0] > 0
    assert one("SELECT count(*) FROM steps WHERE obs_index IS NULL").fetchone()[0] > 0
    assert one("SELECT count(DISTINCT amendment_id IS NULL) FROM runs").fetchone()[0] == 2


@pytest.mark.parametrize("selection", [
    Selection(), Selection(runs=("main",)), Selection(conditions=("enforced_rule",)),
    Selection(regimes=("persistent",), seeds=(1,)), Selection(runs=("nobody",))],
    ids=["all", "run", "arm", "regime-seed", "empty"])
def test_streamed_csvs_equal_the_pandas_ones_byte_for_byte(odd_db: Any, tmp_path: Path,
                                                           selection: Selection) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    want = _pandas_csvs(odd_db, tmp_path / "old", selection, "9.9.9")
    got = write_rows_csvs(odd_db, tmp_path / "new", selection, "9.9.9")
    assert [p.name for p in got] == ["episodes.csv", "steps.csv"]
    assert got[0].read_bytes() == want[0]
    assert got[1].read_bytes() == want[1]


def test_the_csvs_hold_the_awkward_values(odd_db: Any, tmp_path: Path) -> None:
    episodes, steps = (p.read_bytes().decode("utf-8")
                       for p in write_rows_csvs(odd_db, tmp_path, Selection(), "9.9.9"))
    assert '"TimeoutError: server said ""no"", twice\nretry later"' in episodes
    assert all(f",{x}," in episodes for x in ("1e-05", "1e+16", "0.30000000000000004", "2.5e-07"))
    assert ",A1," in episodes and f",{EXPLORATORY}," in episodes
    assert '"pilot, ""b"""' in episodes and '"set, ""one"""' in episodes
    assert '"first, ""quoted"" thought,\nsecond line\r\nthird — naïve 思考 "' in steps
    assert steps.count(os.linesep) > steps.count(THOUGHT) and "stated_judgment_rule:k=3" in steps


def _plain_step_lines(db: Any) -> list[str]:
    """steps.csv's lines by their definition: each row's values read as they are stored,
    through the stdlib csv writer in lab's dialect."""
    cells = {r[0]: (r[1], r[3], arm_label(r[6]), r[4], r[7])
             for r in db.conn.execute(_CELLS)}
    rows = db.conn.execute(_STEPS + " ORDER BY s.episode_id, s.t, s.discarded DESC")
    return [csv_line((r[0], *cells[r[1]], *r[2:])) for r in rows]


def test_values_sqlite_would_print_otherwise_are_written_as_the_csv_writer_writes_them(
        tmp_path: Path) -> None:
    """steps.csv's lines are formatted by SQLite (`core.store.export_rows.step_lines`);
    a value SQLite's text would give differently is written by the csv writer: a NUL
    in a text (printf stops there), a REAL, a text or a blob in an INTEGER column, a
    blob in a TEXT one, a sum of tokens past 64 bits. A lone carriage return is not
    quoted (the writer does not quote it when lines end in a newline), a newline is."""
    db = store.connect(tmp_path / "lab.db")
    store.insert_questions(db, demo_questions())
    asyncio.run(_grid(db))
    sql = db.conn.execute
    ids = [r[0] for r in sql("SELECT DISTINCT episode_id FROM steps ORDER BY 1")]
    odd = (("reasoning", "before\x00after, \"quoted\""), ("reasoning_tokens", 1 / 3),
           ("streak", "x,y"), ("input_tokens", b"\x00,"), ("action", b"bytes"),
           ("output_tokens", 2 ** 62), ("stated_judgment", "carriage\rreturn"),
           ("judgment_source", "new\nline"))
    with db.conn:
        for (column, value), episode in zip(odd, ids[1::2]):
            sql(f"UPDATE steps SET {column} = ? WHERE episode_id = ? AND t = 1",
                (value, episode))
        sql("UPDATE steps SET input_tokens = ? WHERE episode_id = ? AND t = 1",
            (2 ** 62, ids[11]))  # with output_tokens 2**62 below: their sum passes 64 bits
    lines = [line for batch in step_lines(db) for line in batch]
    want = _plain_step_lines(db)
    assert lines == want
    assert sum(line.count("\x00") for line in lines) == 1
    assert any(",carriage\rreturn," in line for line in lines)
    assert any('"new\nline"' in line for line in lines)


def test_export_writes_the_streamed_csvs_and_nothing_half_written(odd_db: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    import analysis.tables.export as ex

    out = tmp_path / "out"
    paths = export(odd_db, out, n_boot=5, hazard_boot=5)
    (tmp_path / "old").mkdir()
    want = _pandas_csvs(odd_db, tmp_path / "old", Selection(), ex.project_version())
    assert paths[0].read_bytes() == want[0] and paths[1].read_bytes() == want[1]

    def broken(db: Any, selection: Selection) -> Any:
        yield ["half,a,row"]
        raise RuntimeError("disk gone")

    monkeypatch.setattr(ex, "step_lines", broken)
    with pytest.raises(RuntimeError, match="disk gone"):
        write_rows_csvs(odd_db, out, Selection(), "0")
    assert (out / "steps.csv").read_bytes() == want[1]  # the earlier file, untouched
    assert not list(out.glob(".*.tmp"))


def test_export_on_two_cores_writes_the_same_files_as_on_one(odd_db: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """episodes.csv, steps.csv and the tables are written side by side in forked
    processes (`analysis.base.parallel`), each reading lab.db through a connection of
    its own: the same files, in the same order, as written one after another here."""
    import analysis.base.parallel as parallel

    written = {}
    for cores in (1, 2):
        monkeypatch.setattr(parallel, "cores", lambda n=cores: n)
        paths = export(odd_db, tmp_path / str(cores), n_boot=5, hazard_boot=5)
        written[cores] = [(p.name, p.read_bytes()) for p in paths]
    assert written[1] == written[2]
    assert [name for name, _ in written[2][:3]] == ["episodes.csv", "steps.csv", "success.csv"]


def test_an_error_in_a_forked_piece_is_raised_as_itself(odd_db: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import analysis.base.parallel as parallel
    import analysis.tables.export as ex
    from core.errors import ConfigError

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ConfigError("no tables today")

    monkeypatch.setattr(parallel, "cores", lambda: 2)
    monkeypatch.setattr(ex, "compute", broken)
    with pytest.raises(ConfigError, match="no tables today"):
        export(odd_db, tmp_path / "out", n_boot=5, hazard_boot=5)
    # steps.csv's pieces were written beside the failing one: none is left behind
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["episodes.csv"]


def test_steps_csv_in_pieces_is_the_file_in_one(odd_db: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """steps.csv written in pieces by episode id (one header, the pieces in id order,
    none left beside it) is the file written in one piece, for any number of pieces."""
    import analysis.base.parallel as parallel
    import analysis.tables.export as ex

    monkeypatch.setattr(parallel, "cores", lambda: 2)
    written = {}
    for parts in (1, 2, 3, 7):
        monkeypatch.setattr(ex, "STEP_PARTS", parts)
        out = tmp_path / str(parts)
        export(odd_db, out, n_boot=5, hazard_boot=5)
        written[parts] = (out / "steps.csv").read_bytes()
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert written[2] == written[1] and written[3] == written[1] and written[7] == written[1]
