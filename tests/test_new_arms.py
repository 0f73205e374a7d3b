"""The newer arms: stated-judgment rule, two sources and the switch rule, leaving."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlite_utils import Database

import prompts
from analysis.measures.cost import charged_cost, measurement_calls, own_calls
from analysis.measures.decisions import decision_table
from analysis.measures.frames import load_frames
from analysis.measures.leaving import leave_delta, switching
from analysis.tables.compute import compute
from console.cli import main
from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.episode import EpisodeResult
from core.models.base import EpisodeView
from core.models.registry import builtin_models, make_client
from core.react import EpisodeSetup, run_episode
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions
from tests.helpers.builders import make_pool
from tests.helpers.scripted import ScriptedClient

SEARCH = "Thought: look it up\nAction: search\nAction Input: Vellmore Quartet"
BACKUP = "Thought: try the other copy\nAction: backup_search\nAction Input: Vellmore Quartet"
SAID_USELESS = ("Thought: This result does not mention the quartet. Search again.\n"
                "Action: search\nAction Input: Vellmore Quartet")
SILENT = "Thought: Let me try once more.\nAction: search\nAction Input: Vellmore Quartet"
FINISH = "Thought: I know it\nAction: finish\nAction Input: Lake 1"
NEW_ARMS = ("stated_judgment_rule:k=3", "stated_judgment_combo:k=3", "two_source",
            "switch_rule:k=3")


def run(client: ScriptedClient, condition: str, regime: str = "persistent", budget: int = 8
       ) -> EpisodeResult:
    pool = make_pool()
    setup = EpisodeSetup(question=pool[0], condition=parse_condition(condition),
                         regime=parse_regime(regime), budget=budget, seed=0,
                         pool=ForeignPool(pool))
    view = EpisodeView(question=pool[0], seed=0, budget=budget)
    return asyncio.run(run_episode(setup, client.start(view), view=view))


def test_backup_never_fails_under_persistent_and_the_primary_still_does() -> None:
    client = ScriptedClient(acts=[SEARCH, BACKUP, SEARCH, FINISH], judgments=["USELESS"] * 8)
    r = run(client, "two_source")
    s = r.steps
    assert [x.tool_source for x in s[:3]] == ["primary", "backup", "primary"]
    assert [x.obs_failed for x in s[:3]] == [True, False, True]
    assert s[1].obs_source in ("gold", "distractor") and s[1].shown is not None
    assert s[1].shown.startswith("[Vellmore")
    assert r.tool_calls == 3 and r.answered
    assert "backup_search[query]" in client.calls[0][1][0]["content"]
    assert not any(kind == "judge" for kind, _ in client.calls)  # two_source asks nothing


def test_schedule_counts_primary_results_only() -> None:
    # recover_after_1: the first PRIMARY result fails even after a backup result
    r = run(ScriptedClient(acts=[BACKUP, SEARCH, SEARCH, FINISH]), "two_source",
            "recover_after_1")
    assert [x.obs_failed for x in r.steps[:3]] == [False, True, False]
    assert [x.obs_index for x in r.steps[:3]] == [1, 2, 3]


def test_answerless_backup_is_the_intact_page() -> None:
    r = run(ScriptedClient(acts=[SEARCH, BACKUP, FINISH]), "two_source", "answerless")
    primary, backup = r.steps[0].shown, r.steps[1].shown
    assert primary is not None and backup is not None
    assert len(backup) > len(primary) and backup.startswith(primary.split("]")[0] + "]")
    assert r.steps[1].obs_text == backup  # stored, since obs_ref would read stripped


def test_switch_rule_disables_primary_exactly_after_k_useless() -> None:
    client = ScriptedClient(acts=[SEARCH, SEARCH, SEARCH, SEARCH, SEARCH, BACKUP, FINISH],
                            judgments=["USELESS", "USEFUL", "USELESS", "USELESS", "USELESS"])
    r = run(client, "switch_rule:k=2", "persistent")
    s = r.steps
    assert [x.streak for x in s[:4]] == [1, 0, 1, 2]
    assert [x.refused for x in s[:6]] == [False] * 4 + [True, False]
    assert s[4].tool_source == "primary" and s[5].tool_source == "backup"
    notice = prompts.load("switch_notice")
    acting = client.calls[-1][1]
    # the notice follows the 4th observation (the 2nd useless in a row) and answers the refusal
    user = [m["content"] for m in acting if m["role"] == "user"]
    assert notice not in user[3] and user[4].endswith(notice) and user[5].startswith(notice)
    # judgments are asked on primary results only, while the primary is on
    assert sum(kind == "judge" for kind, _ in client.calls) == 4
    assert r.refused_calls == 1 and r.extra_calls == 4


def test_backup_search_without_two_source_is_a_format_failure() -> None:
    r = run(ScriptedClient(acts=[BACKUP, BACKUP]), "none")
    assert r.end_reason == "format_failure" and r.tool_calls == 0 and r.format_failures == 1
    r = run(ScriptedClient(acts=[BACKUP, BACKUP]), "none:format_retries=1")
    assert r.end_reason == "format_failure" and r.tool_calls == 0 and r.format_failures == 2


def test_stated_rule_discards_the_turn_and_re_asks_once() -> None:
    # stated: useless, none (unchanged), useless -> run 2 = k at the 4th turn's proposal
    # forced_tool_call=refuse: a tool call in the re-asked turn is refused and every
    # later turn is forced (the default executes it: tests/test_react_protocol.py)
    client = ScriptedClient(acts=[SEARCH, SAID_USELESS, SILENT, SAID_USELESS, SEARCH, FINISH])
    r = run(client, "stated_judgment_rule:k=2,forced_tool_call=refuse")
    s = r.steps
    assert [x.stated_judgment for x in s[:3]] == ["useless", None, "useless"]
    assert [x.streak for x in s[:3]] == [1, 1, 2]
    discarded = [x for x in s if x.discarded]
    assert len(discarded) == 1 and discarded[0].t == 4 and discarded[0].action == "search"
    after = s[s.index(discarded[0]) + 1]
    assert after.t == 4 and after.forced and after.refused  # re-asked, still a tool call
    assert s[-1].t == 5 and s[-1].forced and not s[-1].discarded and r.answer_action == 5
    assert r.extra_calls == 1 and r.forced_turns == 2 and r.refused_calls == 1
    assert not any(kind == "judge" for kind, _ in client.calls)
    re_ask = client.calls[4][1]
    assert prompts.load("forced_system") in re_ask[0]["content"]
    assert re_ask[-1]["content"].endswith(prompts.load("forced_observation"))
    assert SAID_USELESS not in [m["content"] for m in re_ask[-2:]]


def test_stated_rule_lets_a_finish_through() -> None:
    r = run(ScriptedClient(acts=[SEARCH, SAID_USELESS, FINISH.replace(
        "I know it", "This result does not mention it.")]), "stated_judgment_rule:k=2")
    assert r.answer_action == 3 and not any(x.discarded for x in r.steps)


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    """A small two-source and stated grid of sims stored in a real lab.db."""
    db = store.connect(tmp_path_factory.mktemp("arms") / "lab.db")
    questions = demo_questions()[:12]
    store.insert_questions(db, demo_questions())
    run_id = store.ensure_run(db, "arms")
    specs = builtin_models()
    pool = ForeignPool(demo_questions())

    async def go() -> None:
        for model, cond in (("sim-backup-own3", "two_source"), ("sim-backup-own3", "switch_rule"),
                            ("sim-stated", "stated_judgment_rule:k=3")):
            for regime in ("clean", "persistent", "recover_after_2"):
                cell = CellSpec(specs[model], parse_condition(cond), parse_regime(regime),
                                None, 8, 0)
                cell_id = store.ensure_cell(db, run_id, cell.columns())
                await run_questions(db, cell_id, cell, questions, pool, make_client(cell.model))

    asyncio.run(go())
    return db


def test_stored_discarded_turns_and_sources_round_trip(sim_db: Database) -> None:
    rows = sim_db.conn.execute("SELECT count(*), sum(discarded) FROM steps s JOIN episodes e "
                               "ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id "
                               "WHERE c.condition = 'stated_judgment_rule'").fetchone()
    assert rows[1] > 0
    eid = sim_db.conn.execute("SELECT episode_id FROM steps WHERE discarded = 1").fetchone()[0]
    steps = store.episode_steps(sim_db, eid)
    i = next(i for i, s in enumerate(steps) if s.discarded)
    assert steps[i + 1].t == steps[i].t and steps[i + 1].forced
    sources = {r[0] for r in sim_db.conn.execute("SELECT DISTINCT tool_source FROM steps")}
    assert {"primary", "backup", None} <= sources


def test_own_calls_charge_discarded_turns_and_backup_price(sim_db: Database) -> None:
    ep = load_frames(sim_db).episodes
    stated = ep.loc[ep["condition"] == "stated_judgment_rule"]
    # sims record a judgment after every observation: only the discarded turns are own calls
    assert (own_calls(stated) == stated["discarded_turns"]).all()
    assert (measurement_calls(stated) == stated["extra_calls"] - stated["discarded_turns"]).all()
    two = ep.loc[ep["condition"] == "two_source"]
    assert (own_calls(two) == 0).all() and two["backup_calls"].sum() > 0
    cost = charged_cost(two, 0.05, own=False)
    expected = 0.05 * (two["tool_calls"] - two["backup_calls"]) + 0.10 * two["backup_calls"]
    assert np.allclose(cost, expected)
    switch = ep.loc[ep["condition"] == "switch_rule"]
    assert (own_calls(switch) == switch["primary_judgments"]).all()
    assert (own_calls(switch) < switch["extra_calls"]).any()  # backup judgments only measure


def test_leaving_table_from_lab_db(sim_db: Database) -> None:
    res = compute(load_frames(sim_db), ("leaving",), n_boot=100)
    table = res.table("leaving")
    assert table is not None
    rows = table.rows
    assert {r.arm for r in rows} == {"two_source", "switch_rule"}
    by = {(r.arm, r.measure): r for r in rows}
    assert by[("two_source", "switched_by_4")].estimate == 1.0  # own3 switches at action 4
    assert by[("two_source", "median_first_switch")].estimate == 4.0
    assert by[("two_source", "switched_by_4")].n == 12  # persistent episodes only


def _hand_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Four persistent episodes: switch at 2, switch at 5, answer at 3, both (answer first)."""
    ep = pd.DataFrame({"episode_id": [1, 2, 3, 4], "regime": "persistent",
                       "answered": [False, False, True, True], "answer_action": [None, None, 3, 2],
                       "run": "r", "model": "m", "condition": "two_source", "budget": 8,
                       "seed": 0, "question_id": ["a", "b", "c", "d"]})
    rows = []
    plans = {1: ["search", "backup_search", "finish"],
             2: ["search"] * 4 + ["backup_search", "finish"],
             3: ["search", "search", "finish"], 4: ["search", "finish"]}
    for eid, acts in plans.items():
        for t, act in enumerate(acts, 1):
            tool = act != "finish"
            rows.append({"episode_id": eid, "t": t, "action": act,
                         "obs_index": t if tool else None, "obs_failed": act == "search",
                         "judgment": "USELESS" if tool else None, "stated_judgment": None,
                         "format_failure": 0, "refused": 0, "discarded": 0,
                         "tool_source": ("backup" if act == "backup_search" else "primary")
                         if tool else None})
    return ep, pd.DataFrame(rows)


def test_switching_measures_by_hand() -> None:
    ep, st = _hand_frames()
    sw = switching(ep, st)
    assert sw.episodes == 4 and sw.switched_by == 0.25 and sw.ever == 0.5
    assert sw.median_first == 3.5 and sw.answered_first == 0.5
    assert sw.exits == 4 and sw.backup_first == 0.5


def test_leave_delta_by_hand() -> None:
    ep, st = _hand_frames()
    dec = decision_table(ep, st)
    # episode 2: after 3 and 4 useless results it keeps searching, then leaves at action 5
    c = leave_delta(dec, st, n_boot=50)
    assert (c.n_a, c.answered_a) == (2, 1) and c.n_b == 0
    assert np.isnan(c.interval.estimate)  # no group (b): undefined, never a number


@pytest.mark.parametrize("condition", NEW_ARMS)
def test_every_new_condition_and_regime_through_lab_try(db_path: Path, condition: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    regimes = ("clean", "persistent", "recover_after_1", "recover_after_5", "late_onset_from_3",
               "plausible", "answerless")
    model = "sim-backup-own3" if "source" in condition or "switch" in condition else "sim-stated"
    for regime in regimes:
        code = main(["--db", str(db_path), "try", "--model", model, "--condition", condition,
                     "--regime", regime, "--question", "demo-002"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert "answer:" in out or "unanswered" in out
        if regime == "persistent" and "stated" in condition:
            assert "DISCARDED" in out
        if regime == "persistent" and condition.startswith("two_source"):
            assert "backup_search[" in out


def test_arm_labels_and_knobs() -> None:
    assert parse_condition("switch_rule:k=3").label() == "switch_rule:k=3"
    assert parse_condition("two_source:backup_price=0.2").label() == "two_source:backup_price=0.2"
    assert parse_condition("two_source").label() == "two_source"
    assert parse_condition("stated_judgment_combo").arm.budget


def test_leaving_registered_test_kind(sim_db: Database) -> None:
    from analysis.prereg.outcomes import evaluate_test
    from core.errors import ConfigError
    from core.registered_tests import validate_test

    switches = validate_test({"id": "S1", "kind": "leaving", "condition": "two_source",
                              "metric": "switched_by_4", "op": ">=", "threshold": 0.5,
                              "runs": ["arms"], "models": ["sim-backup-own3"]},
                             "test S1")
    amendment = {"id": "A13", "scope": {
        "models": ["sim-backup-own3"], "conditions": ["two_source"], "question_sets": [""],
        "regimes": ["clean", "persistent", "recover_after_2"]}}
    out = evaluate_test(amendment, switches, load_frames(sim_db), n_boot=100)
    assert out.verdict == "pass", out
    never = dict(switches, op=">", threshold=1.0)  # a share is never above 1
    assert evaluate_test(amendment, never, load_frames(sim_db),
                         n_boot=100).verdict == "fail"
    beyond = dict(switches, threshold=1.01)  # a share threshold above 1 means nothing
    with pytest.raises(ConfigError, match=r"threshold is a share and must be in \[0, 1\]"):
        validate_test(beyond, "test S1")
    assert "not evaluated" in evaluate_test(amendment, beyond, load_frames(sim_db),
                                            n_boot=100).numbers
    with pytest.raises(ConfigError, match="unknown metric 'switched'"):
        validate_test({**switches, "metric": "switched"}, "test S1")
