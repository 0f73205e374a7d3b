"""Rows by full arm spec, never pooled by name, through the real CLI.

One small sim grid in a temporary lab.db: sim-own5 under six arms that differ only in a
knob (k, judge=true, rate), three regimes of two families, two seeds, six questions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner, Result

from analysis.base.arms import Grouping, regime_order
from analysis.measures.decisions import arm_groups, errored_episodes
from console.cli.results import export_cmd, results
from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.errors import LabError
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime, regime_family
from core.runner import CellSpec
from core.version import project_version
from jobs.kinds.episodes import run_questions

ARMS = ("none", "none:judge=true", "enforced_rule", "enforced_rule:k=2",
        "random_rule:rate=0.3", "random_rule:rate=0.6")
REGIMES = ("persistent", "late_onset_from_3", "plausible")
SEEDS = (0, 1)
N_QUESTIONS = 6
KNOB_PAIRS = [("enforced_rule", "enforced_rule:k=2"), ("none", "none:judge=true"),
              ("random_rule:rate=0.3", "random_rule:rate=0.6")]


async def _grid(path: Path) -> None:
    db = store.connect(path)
    questions = demo_questions()[:N_QUESTIONS]
    store.insert_questions(db, demo_questions())
    pool, model = ForeignPool(questions), builtin_models()["sim-own5"]
    run_id = store.ensure_run(db, "main")
    for arm in ARMS:
        for regime in REGIMES:
            for seed in SEEDS:
                cell = CellSpec(model, parse_condition(arm), parse_regime(regime), None, 8, seed)
                cell_id = store.ensure_cell(db, run_id, cell.columns())
                await run_questions(db, cell_id, cell, questions, pool, make_client(model))


@pytest.fixture(scope="module")
def grid_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sim-own5 × 6 arms × 3 regimes × 2 seeds × 6 questions (216 episodes)."""
    path = tmp_path_factory.mktemp("arms") / "lab.db"
    asyncio.run(_grid(path))
    return path


def invoke(command: click.Command, args: Sequence[str], db: Path) -> Result:
    return CliRunner().invoke(command, [*args], obj={"db": db, "config": db.with_name("lab.toml")})


def rows_of(db: Path, table: str, *args: str) -> list[dict]:
    r = invoke(results, [table, "--format", "json", "--resamples", "20", *args], db)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _cell_id(db: Path, arm: str, regime: str, seed: int) -> int:
    h = parse_condition(arm).spec_hash()
    (cell_id,) = store.connect(db).conn.execute(
        "SELECT id FROM cells WHERE condition_hash = ? AND regime = ? AND seed = ?",
        (h, regime, seed)).fetchone()
    return cell_id


def _insert_errored(db_path: Path, cell_id: int, question_id: str) -> None:
    db = store.connect(db_path)
    with store.write(db):
        db.conn.execute(
            "INSERT INTO episodes (cell_id, question_id, answered, em, f1, correct, placeholder, "
            "tool_calls, extra_calls, format_failures, forced_turns, refused_calls, "
            "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, "
            "wall_ms, end_reason, error, started_at, finished_at) VALUES (?, ?, 0, 0, 0, 0, 0, "
            "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'error', 'server_error: 503', '2025-01-01', "
            "'2025-01-01')", (cell_id, question_id))


# --- an arm is its full spec ------------------------------------------------------


@pytest.mark.parametrize("a, b", KNOB_PAIRS, ids=["k", "judge", "rate"])
def test_two_arms_differing_in_one_knob_are_two_rows_in_every_table(grid_db: Path, a: str, b: str
                                                                   ) -> None:
    sel = ["--conditions", f"{a},{b}", "--seeds", "0"]
    hashes = {parse_condition(a).spec_hash(), parse_condition(b).spec_hash()}
    checks = (("success", "success", "persistent"), ("delta", "delta", "own judgments, by t"),
              ("cost", "tool calls", ""))
    for table, measure, scope in checks:
        rows = [x for x in rows_of(grid_db, table, *sel)
                if x["measure"] == measure and x["scope"] == scope
                and "plausible" not in x["regimes"]]
        # one row per arm (the old grouping by bare name gave one row for both)
        assert sorted(x["arm"] for x in rows) == sorted([a, b]), table
        assert {x["condition_hash"] for x in rows} == hashes
        assert {x["condition"] for x in rows} == {parse_condition(a).name}


@pytest.mark.parametrize("a, b", KNOB_PAIRS, ids=["k", "judge", "rate"])
def test_export_keeps_the_two_arms_apart_with_provenance(grid_db: Path, tmp_path: Path, a: str,
                                                         b: str) -> None:
    out = tmp_path / "export"
    r = invoke(export_cmd, [str(out), "--resamples", "10", "--conditions", f"{a},{b}",
                            "--seeds", "1"], grid_db)
    assert r.exit_code == 0, r.output
    episodes = pd.read_csv(out / "episodes.csv", keep_default_na=False)
    assert set(episodes["arm"]) == {a, b}
    assert len(episodes) == 2 * len(REGIMES) * N_QUESTIONS
    assert set(episodes["amendment"]) == {"exploratory"} and set(episodes["run"]) == {"main"}
    assert set(episodes["version"]) == {project_version()}
    cost = pd.read_csv(out / "cost.csv", keep_default_na=False)
    calls = cost.loc[(cost["measure"] == "tool calls") & (cost["regimes"] != "plausible")]
    assert sorted(calls["arm"]) == sorted([a, b])
    assert calls["condition_hash"].nunique() == 2
    assert set(cost["runs"]) == {"main"} and set(cost["amendment"]) == {"exploratory"}
    assert set(cost["seeds"].astype(str)) == {"1"} and set(cost["version"]) == {project_version()}
    steps = pd.read_csv(out / "steps.csv", keep_default_na=False)
    assert set(steps["arm"]) == {a, b}


# --- pooling ----------------------------------------------------------------------


def test_seeds_split_by_default_and_pool_only_when_asked(grid_db: Path) -> None:
    def persistent(rows: list[dict]) -> list[dict]:
        return [x for x in rows if x["table"] == "success" and x["scope"] == "persistent"]

    # "none:" is exactly the default none arm (a bare "none" also selects none:judge=true)
    split = persistent(rows_of(grid_db, "success", "--conditions", "none:"))
    assert sorted(x["seeds"] for x in split) == ["0", "1"]
    assert {x["n"] for x in split} == {N_QUESTIONS}
    pooled = persistent(rows_of(grid_db, "success", "--conditions", "none:", "--pool", "seeds"))
    assert [x["seeds"] for x in pooled] == ["0,1"]
    text = invoke(results, ["success", "--conditions", "none", "--pool", "seeds",
                            "--resamples", "10"], grid_db)
    assert text.exit_code == 0, text.output
    assert "pooled: seeds" in text.stdout
    default = invoke(results, ["success", "--conditions", "none", "--resamples", "10"], grid_db)
    assert "pooled: nothing" in default.stdout


def test_paired_differences_pair_only_with_exactly_none_of_the_same_seed(grid_db: Path) -> None:
    rows = [x for x in rows_of(grid_db, "success") if x["table"] == "paired"
            and x["scope"] == "persistent"]
    # every arm but "none" itself, once per seed; none:judge=true is an arm, not a reference
    assert sorted((x["arm"], x["seeds"]) for x in rows) == sorted(
        (a, str(s)) for a in ARMS if a != "none" for s in SEEDS)
    # none:judge=true behaves like none on the sims: the same seed pairs to exactly 0
    same = [x for x in rows if x["arm"] == "none:judge=true"]
    assert all(x["estimate"] == 0 for x in same)


def test_pooling_sets_lists_what_the_row_covers() -> None:
    frame = pd.DataFrame({
        "episode_id": range(4), "model": "m", "arm": "none", "condition": "none",
        "condition_hash": "h", "budget": 8, "dataset": "d", "run": "r", "seed": 0,
        "replicate": 0, "regime": "persistent", "question_id": ["a", "b", "c", "d"],
        "question_set": ["dev100", "dev100", "test300", "test300"], "amendment": None})
    split = [k.question_set for k, _ in arm_groups(frame)]
    assert split == ["dev100", "test300"]
    ((key, sub),) = list(arm_groups(frame, Grouping(pool=("sets",))))
    assert key.question_set == "dev100+test300" and len(sub) == 4
    assert key.amendment == "exploratory"
    with pytest.raises(ValueError, match="cannot pool 'arms'"):
        Grouping(pool=("arms",))


def test_groups_and_codes_split_like_a_sorted_groupby() -> None:
    """`Grouping.groups` and `Grouping.codes` give pandas' sorted groupby split: same
    order, same rows and index labels; equal strings held by different objects are
    one value, a missing value is its own group, sorted last."""
    import numpy as np

    rng = np.random.default_rng(0)
    n = 400
    models = np.array(["m2", "m1", "".join(["m", "1"])], dtype=object)  # m1 twice, 2 objects
    datasets = np.array(["b", "a", None], dtype=object)
    amendments = np.array([None, "A1"], dtype=object)
    frame = pd.DataFrame({
        "episode_id": rng.integers(0, 60, n), "model": models[rng.integers(0, 3, n)],
        "arm": "none", "condition": "none", "condition_hash": "h",
        "budget": rng.choice([8, 4], n), "dataset": rng.choice(datasets, n),
        "run": "r", "seed": rng.integers(0, 3, n), "replicate": 0,
        "regime": rng.choice(["persistent", "plausible", "clean"], n), "question_set": "",
        "amendment": rng.choice(amendments, n)}, index=np.arange(n)[::-1] * 2)
    for pool, families in (((), False), (("seeds",), True)):
        grouping = Grouping(pool=pool)
        by = grouping.columns()
        family = frame["regime"].map(regime_family) if families else ""
        want = list(frame.assign(_f=family).groupby([*by, "_f"], sort=True, dropna=False))
        got = list(grouping.groups(frame, families))
        keys, codes = grouping.codes(frame, families)
        assert [k for k, _ in got] == keys and len(keys) == len(want)
        for g, ((values, sub), (key, part)) in enumerate(zip(want, got)):
            assert part.equals(sub.drop(columns="_f")) and part.index.equals(sub.index)
            assert frame.iloc[np.flatnonzero(codes == g)].equals(part)
            assert (key.model, key.budget, key.family) == (values[0], values[3], values[-1])
            assert key.dataset == str(values[by.index("dataset")])
            seeds = sorted(set(part["seed"]))
            assert key.seeds == ",".join(map(str, seeds))
            assert key.regimes == regime_order(part["regime"])
            assert key.amendment == ",".join(sorted(
                {"exploratory" if pd.isna(a) else a for a in part["amendment"]}))
    assert Grouping().codes(frame.iloc[0:0])[0] == []

# --- regime families --------------------------------------------------------------


def test_regime_family() -> None:
    assert regime_family("persistent") == regime_family("clean") == "main"
    assert regime_family("plausible") == "plausible"
    assert regime_family("recover_after_4") == "recover_after_4"


def test_regime_families_are_never_pooled(grid_db: Path) -> None:
    rows = rows_of(grid_db, "delta", "--conditions", "none:", "--seeds", "0")
    covered = {x["regimes"] for x in rows if x["measure"] == "delta"}
    assert covered == {"persistent,late_onset_from_3", "plausible"}
    design = [x for x in rows if x["measure"] == "design"]
    assert [x["regimes"] for x in design] == ["persistent,late_onset_from_3"]
    index = [x for x in rows_of(grid_db, "index", "--conditions", "none:", "--seeds", "0")
             if x["measure"] == "I"]
    assert sorted(x["regimes"] for x in index) == ["persistent,late_onset_from_3", "plausible"]
    hazard = rows_of(grid_db, "hazard", "--conditions", "none:", "--seeds", "0")
    assert {x["regimes"] for x in hazard} == {"persistent,late_onset_from_3", "plausible"}
    text = invoke(results, ["delta", "--conditions", "none:", "--seeds", "0", "--resamples",
                            "10"], grid_db).stdout
    assert "pers.+late3" in text and "plaus." in text  # a regimes column says which


# --- errored episodes -------------------------------------------------------------


@pytest.fixture
def errored_db(grid_db: Path, tmp_path: Path) -> Path:
    """The grid plus one errored episode without a retry and one superseded by a retry."""
    path = tmp_path / "lab.db"
    src, dst = store.connect(grid_db), store.connect(path)
    src.conn.backup(dst.conn)
    dst.conn.close()
    ran = [q.id for q in demo_questions()[:N_QUESTIONS]]
    missing = demo_questions()[N_QUESTIONS].id
    _insert_errored(path, _cell_id(path, "none", "persistent", 0), missing)
    _insert_errored(path, _cell_id(path, "enforced_rule", "persistent", 0), ran[0])
    return path


def test_errored_episodes_are_counted_on_their_row_with_a_warning(errored_db: Path) -> None:
    rows = rows_of(errored_db, "cost", "--seeds", "0")
    calls = {(x["arm"], x["regimes"]): x["errored"] for x in rows if x["measure"] == "tool calls"}
    assert calls[("none", "persistent,late_onset_from_3")] == 1
    # superseded by a complete episode of the same (cell, question): not counted
    assert calls[("enforced_rule", "persistent,late_onset_from_3")] == 0
    assert sum(calls.values()) == 1
    success = [x for x in rows_of(errored_db, "success", "--seeds", "0", "--conditions", "none:")
               if x["table"] == "success"]
    assert {x["scope"]: x["errored"] for x in success}["late_onset_from_3"] == 0
    assert {x["scope"]: x["errored"] for x in success}["persistent"] == 1
    r = invoke(results, ["cost", "--seeds", "0", "--resamples", "10"], errored_db)
    assert r.exit_code == 0, r.output
    assert "1 episode(s) ended in an error" in r.stdout
    assert "warning: 1 row group(s) leave out errored episodes" in r.stdout
    clean = invoke(results, ["cost", "--seeds", "1", "--resamples", "10"], errored_db)
    assert "warning" not in clean.stdout


def test_superseded_errors_are_not_errored() -> None:
    frame = pd.DataFrame({"episode_id": [1, 2, 3], "cell_id": [7, 7, 7],
                          "question_id": ["a", "a", "b"], "error": ["503", None, "503"]})
    assert errored_episodes(frame)["episode_id"].tolist() == [3]


# --- filters ----------------------------------------------------------------------


def test_filters_select_in_sql(grid_db: Path) -> None:
    rows = rows_of(grid_db, "cost", "--regimes", "persistent", "--conditions", "enforced_rule")
    assert {x["regimes"] for x in rows} == {"persistent"}
    # a bare name selects every arm of the condition, a label exactly one
    assert {x["arm"] for x in rows} == {"enforced_rule", "enforced_rule:k=2"}
    one = rows_of(grid_db, "cost", "--conditions", "enforced_rule:k=2", "--seeds", "1")
    assert {(x["arm"], x["seeds"]) for x in one} == {("enforced_rule:k=2", "1")}
    assert {x["runs"] for x in one} == {"main"}


@pytest.mark.parametrize("args, message", [
    (["--conditions", "enforced_rule:k=9"], "no arm 'enforced_rule:k=9' in lab.db; arms: "),
    (["--regimes", "clean"], "no regime 'clean' in lab.db; regimes: late_onset_from_3,"),
    (["--set", "dev100"], "no question set 'dev100'"),
    (["--seeds", "7"], "no seed '7' in lab.db; seeds: 0, 1"),
    (["--seeds", "x"], "--seeds takes comma-separated integers"),
    (["--pool", "arms"], "cannot pool 'arms'; choose from runs, seeds, replicates, sets"),
])
def test_unknown_names_are_one_error_listing_the_known_ones(grid_db: Path, args: list[str],
                                                            message: str) -> None:
    r = invoke(results, ["cost", *args], grid_db)
    assert r.exit_code != 0
    assert isinstance(r.exception, LabError) and message in str(r.exception)
    assert "\n" not in str(r.exception)


def test_unknown_arm_message_lists_every_label(grid_db: Path) -> None:
    r = invoke(results, ["cost", "--conditions", "none:judge=false,permit"], grid_db)
    assert r.exit_code != 0
    listed = str(r.exception).split("arms: ")[1]
    for arm in ARMS:
        assert arm in listed


def test_row_fields_name_every_row_attribute_in_csv_order() -> None:
    from dataclasses import fields

    from analysis.base.rows import ENDED_FIELDS, ROW_FIELDS, Row

    assert sorted((*ROW_FIELDS, *ENDED_FIELDS)) == sorted(f.name for f in fields(Row))
    assert list(Row("m", "none", 8, "success").as_dict()) == list(ROW_FIELDS)
    # the ended-apart counts join a row's dict only where one is not 0
    assert list(Row("m", "none", 8, "success", refused=1).as_dict()) == [*ROW_FIELDS,
                                                                          *ENDED_FIELDS]


def test_row_as_dict_is_asdict_with_nan_as_none_and_infinities_as_text() -> None:
    """NaN (undefined) is None; ±inf (defined, unbounded, e.g. a TPC) is "inf"/"-inf"."""
    import math
    from dataclasses import asdict

    from analysis.base.rows import ROW_FIELDS, Row

    row = Row("m", "none", None, "beta", "pooled", 0.25, -math.inf, math.nan, 7, "decisions",
              math.inf, 0.5, 3, "side_channel 7", "d", "r1", "none", "abc", "hotpotqa", "dev",
              "0", "1", "persistent", 2, "a1")
    expected = {k: ((None if math.isnan(v) else ("inf" if v > 0 else "-inf"))
                    if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(row).items() if k in ROW_FIELDS}
    got = row.as_dict()
    assert got == expected and list(got) == list(ROW_FIELDS)
    assert got["ci_low"] == "-inf" and got["p"] == "inf" and got["ci_high"] is None
    assert got["budget"] is None and got["holm_m"] == 3
