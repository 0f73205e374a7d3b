"""The export alone recomputes TPC and the refused turns, and an infinite
TPC reaches the CSV and JSON as inf, never as the empty cell / null of "undefined".

The lab.db holds arms whose tokens are charged differently: sims under ``none`` (their
recorded judgments only measure, so only the acting turns' tokens count), under
``enforced_rule`` (the judgment calls are the arm's own), the stated-judgment rule
(discarded turns), and a scripted agent that keeps searching under the rule (refused
turns). sim-never in ``persistent`` answers nothing: its TPC is +inf.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from console.cli.results import export_cmd, results
from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.models.registry import ModelSpec, builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions
from tests.helpers.scripted import ScriptedClient

SEARCH = "Thought: look it up\nAction: search\nAction Input: Vellmore Quartet"
ARMS = (("sim-never", "none", ("persistent",)),
        ("sim-own5", "none", ("persistent", "clean")),
        ("sim-own3", "enforced_rule:k=2", ("persistent", "clean")),
        ("sim-stated", "stated_judgment_rule:k=3", ("persistent", "clean")))


async def _grid(path: Path) -> None:
    db = store.connect(path)
    questions = demo_questions()[:8]
    store.insert_questions(db, demo_questions())
    pool, specs = ForeignPool(demo_questions()), builtin_models()
    run_id = store.ensure_run(db, "main")
    for model, cond, regimes in ARMS:
        for regime in regimes:
            cell = CellSpec(specs[model], parse_condition(cond), parse_regime(regime), None, 8, 0)
            cell_id = store.ensure_cell(db, run_id, cell.columns())
            await run_questions(db, cell_id, cell, questions, pool, make_client(cell.model))
    # an agent that ignores the forced finish under the refuse option: every tool call
    # after the rule fires is refused (by default a forced turn's tool call runs)
    searcher = CellSpec(ModelSpec("scripted-searcher", "sim", {"policy": "never"}),
                        parse_condition("enforced_rule:k=2,forced_tool_call=refuse"),
                        parse_regime("persistent"), None, 8, 0)
    cell_id = store.ensure_cell(db, run_id, searcher.columns())
    await run_questions(db, cell_id, searcher, questions[:3], pool,
                        ScriptedClient(acts=[SEARCH] * 8, judgments=["USELESS"] * 8))
    db.conn.close()


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("recompute") / "lab.db"
    asyncio.run(_grid(path))
    return path


def invoke(command: click.Command, args: Sequence[str], db: Path) -> Result:
    return CliRunner().invoke(command, [*args], obj={"db": db, "config": db.with_name("lab.toml")})


@pytest.fixture(scope="module")
def exported(db_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export")
    r = invoke(export_cmd, [str(out), "--resamples", "10"], db_path)
    assert r.exit_code == 0, r.output
    return out


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _tpc(episodes: list[dict[str, str]], acting: dict[str, tuple[int, int]],
         charge_everything: bool = False) -> float:
    """TPC from episodes.csv rows and the steps' summed tokens, as docs/export.md documents it."""
    cost = correct = 0.0
    for e in episodes:
        if e["measurement_calls"] != "0" and not charge_everything:
            tin, tout = acting[e["episode_id"]]
        else:
            tin, tout = int(e["input_tokens"]), int(e["output_tokens"])
        cost += tout + 0.25 * tin + 500 * int(e["tool_calls"])
        correct += int(e["correct"])
    return cost / correct if correct else math.inf


def _covered(row: dict[str, str], episodes: list[dict[str, str]]) -> list[dict[str, str]]:
    """The error-free episodes a results row covers, read from its own columns."""
    def within(value: str, listed: str) -> bool:
        return value in listed.split(",")

    return [e for e in episodes if not e["error"] and all(
        e[c] == row[c] for c in ("model", "arm", "condition_hash", "budget", "dataset",
                                 "question_set"))
        and within(e["run"], row["runs"]) and within(e["seed"], row["seeds"])
        and within(e["replicate"], row["replicates"]) and within(e["regime"], row["regimes"])]


def test_tpc_recomputed_from_the_export_equals_the_cost_table(exported: Path) -> None:
    episodes, steps = _read(exported / "episodes.csv"), _read(exported / "steps.csv")
    acting: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for s in steps:  # every stored turn, discarded ones included, is an acting call
        tin, tout = acting[s["episode_id"]]
        acting[s["episode_id"]] = (tin + int(s["input_tokens"]), tout + int(s["output_tokens"]))
    rows = [r for r in _read(exported / "cost.csv") if r["measure"] == "TPC"]
    assert len(rows) == len(ARMS) + 1
    differs = 0
    for row in rows:
        mine = _covered(row, episodes)
        assert len(mine) == int(row["n"]) > 0, row["model"]
        want = _tpc(mine, acting)
        if math.isinf(want):
            assert row["estimate"] == "inf", row["model"]
        else:
            assert float(row["estimate"]) == pytest.approx(want, rel=1e-12), row["model"]
            differs += _tpc(mine, acting, charge_everything=True) != pytest.approx(want)
    # the per-step tokens matter: charging measuring arms their judgment forks gives
    # another TPC (sim-own5 and sim-stated record judgments that only measure)
    assert differs >= 2


def test_infinite_tpc_is_inf_in_every_export_format(db_path: Path, exported: Path) -> None:
    tpc = {r["model"]: r for r in _read(exported / "cost.csv") if r["measure"] == "TPC"}
    never = tpc["sim-never"]
    assert never["estimate"] == "inf" and never["n"] == "8"  # defined: 8 episodes, 0 correct
    # the scripted searcher never finishes either; every other arm has a correct answer
    assert {m for m, r in tpc.items() if r["estimate"] == "inf"} == {"sim-never",
                                                                      "scripted-searcher"}
    assert all(r["estimate"] != "" for r in tpc.values())
    as_json = invoke(results, ["cost", "--format", "json", "--resamples", "10",
                               "--models", "sim-never"], db_path)
    assert as_json.exit_code == 0, as_json.output
    got = [r for r in json.loads(as_json.stdout) if r["measure"] == "TPC"]
    assert [r["estimate"] for r in got] == ["inf"]
    # an undefined value stays null: the median answering action of an arm that never answers
    median = [r for r in json.loads(as_json.stdout) if r["measure"] == "median action"]
    assert [r["estimate"] for r in median] == [None]
    as_csv = invoke(results, ["cost", "--format", "csv", "--resamples", "10",
                              "--models", "sim-never"], db_path)
    assert as_csv.exit_code == 0, as_csv.output
    row = [r for r in csv.DictReader(as_csv.stdout.splitlines()) if r["measure"] == "TPC"][0]
    assert row["estimate"] == "inf" and float(row["estimate"]) == math.inf


def test_refused_turns_and_the_call_split_recomputed_from_the_export(exported: Path) -> None:
    episodes, steps = _read(exported / "episodes.csv"), _read(exported / "steps.csv")
    refused: dict[str, int] = defaultdict(int)
    discarded: dict[str, int] = defaultdict(int)
    for s in steps:
        refused[s["episode_id"]] += int(s["refused"])
        discarded[s["episode_id"]] += int(s["discarded"])
    assert sum(refused.values()) > 0 and sum(discarded.values()) > 0
    for e in episodes:
        assert int(e["refused_calls"]) == refused[e["episode_id"]]
        assert int(e["own_calls"]) + int(e["measurement_calls"]) == int(e["extra_calls"])
        if e["condition"] == "stated_judgment_rule":
            assert int(e["own_calls"]) == discarded[e["episode_id"]]
        elif e["condition"] == "enforced_rule":
            assert e["measurement_calls"] == "0"
        else:  # the sims' recorded judgments under none only measure
            assert e["own_calls"] == "0"
    by_model = {e["model"] for e in episodes if int(e["refused_calls"])}
    assert by_model == {"scripted-searcher"}
