"""The beliefs table (`lab results beliefs`): every measure against a hand computation on
five episodes, and the table through the real queue on the sims."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.base.rows import Row
from analysis.measures.decisions import decision_table
from analysis.replay.beliefs import belief_table

SEARCH = "search"
FINISH = "finish"


def _episode(eid: int, qid: str, regime: str, judgments: tuple[str, ...], failed: bool,
             correct: int, model: str = "m") -> tuple[dict, list[dict]]:
    """An episode that searches once per judgment (each returns an observation), then
    finishes."""
    ep = dict(episode_id=eid, question_id=qid, model=model, arm="none", condition="none",
              condition_hash="h", budget=8, dataset="d", question_set="s", run="r", seed=0,
              replicate=0, amendment=None, regime=regime, correct=correct, answered=1,
              answer="x", em=correct, f1=float(correct), placeholder=0,
              tool_calls=len(judgments), error=None)
    steps = [dict(episode_id=eid, t=t, action=SEARCH, obs_index=t, obs_failed=int(failed),
                  judgment=j, stated_judgment=None, format_failure=0, refused=0,
                  discarded=0) for t, j in enumerate(judgments, start=1)]
    steps.append(dict(episode_id=eid, t=len(judgments) + 1, action=FINISH, obs_index=None,
                      obs_failed=None, judgment=None, stated_judgment=None,
                      format_failure=0, refused=0, discarded=0))
    return ep, steps


U, F = "USELESS", "USEFUL"
EPISODES = (  # A and B persistent, C, D, E clean; B searches once more (no probe there)
    (1, "q1", "persistent", (U, U, U), True, 0),
    (2, "q2", "persistent", (F, U, U, U), True, 0),
    (3, "q1", "clean", (F, F, U), False, 1),
    (4, "q3", "clean", (U, F, F), False, 0),
    (5, "q4", "clean", ("UNPARSED", F, F), False, 1),
)
BELIEFS = {  # (episode, t): (p_continue, p_answer_now, prefer) or None: did not parse
    (1, 1): (0.6, 0.2, "continue"), (1, 2): (0.5, 0.3, "continue"),
    (1, 3): (0.4, 0.5, "answer_now"),
    (2, 1): (0.8, 0.1, "continue"), (2, 2): None, (2, 3): (0.2, 0.7, "answer_now"),
    **{(e, t): (0.9, 0.9, "unsure") for e in (3, 4, 5) for t in (1, 2, 3)},
}
BRANCHES = {(1, 1): 1, (2, 1): 0, (1, 3): 1}
"""(episode, t): the answer-now branch's correctness."""


def _fixture(repairs: dict[int, int] | None = None
             ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    eps, steps = [], []
    for spec in EPISODES:
        ep, st = _episode(*spec)
        eps.append(ep)
        steps += st
    other, other_steps = _episode(9, "q1", "persistent", (U, U), True, 0, model="m2")
    eps.append(other)  # a group without belief probes
    steps += other_steps
    probes = []
    for (e, t), reply in BELIEFS.items():
        probes.append(dict(episode_id=e, t=t, kind="belief", parse_ok=int(reply is not None),
                           p_continue=reply[0] if reply else None,
                           p_answer_now=reply[1] if reply else None,
                           prefer=reply[2] if reply else None, correct=None))
    for (e, t), ok in BRANCHES.items():
        probes.append(dict(episode_id=e, t=t, kind="answer_now", parse_ok=1, correct=ok))
    for e, ok in (repairs or {}).items():
        probes.append(dict(episode_id=e, t=4, kind="repair", answer="y", em=ok, f1=float(ok),
                           correct=ok, placeholder=0, parse_ok=1))
    episodes, step_frame = pd.DataFrame(eps), pd.DataFrame(steps)
    return episodes, step_frame, decision_table(episodes, step_frame), pd.DataFrame(probes)


def _table(repairs: dict[int, int] | None = None) -> dict[tuple[str, str, str, str], Row]:
    table = belief_table(*_fixture(repairs))
    return {(r.model, r.regimes, r.scope, r.measure): r for r in table.rows}


def test_every_measure_equals_the_hand_computation() -> None:
    rows = _table()
    assert {m for m, *_ in rows} == {"m"}  # m2 has no belief probe: no rows
    assert {(g, s) for _, g, s, _ in rows} == {
        ("persistent", "k=1"), ("persistent", "k=2"), ("persistent", "k=3"), ("clean", "k=0")}

    def est(regime: str, k: int, measure: str) -> tuple[float, int]:
        row = rows[("m", regime, f"k={k}", measure)]
        return row.estimate, row.n

    assert est("persistent", 1, "p_continue") == (pytest.approx(0.7), 2)
    assert est("persistent", 1, "p_answer_now") == (pytest.approx(0.15), 2)
    assert est("persistent", 2, "p_continue") == (pytest.approx(0.5), 1)  # B's did not parse
    assert rows[("m", "persistent", "k=2", "p_continue")].detail == "1 replies did not parse"
    assert est("persistent", 3, "p_answer_now") == (pytest.approx(0.6), 2)
    assert est("persistent", 3, "prefers_answering") == (1.0, 2)
    assert est("persistent", 1, "prefers_answering") == (0.0, 2)
    # A finishes after its third observation, B searches once more
    assert est("persistent", 3, "answers") == (0.5, 2)
    assert est("persistent", 3, "answers_when_preferring") == (0.5, 2)
    assert est("persistent", 1, "answers") == (0.0, 2)
    assert est("clean", 0, "answers") == (pytest.approx(1 / 3), 9)
    assert est("persistent", 1, "value_answer_now") == (0.5, 2)
    assert est("persistent", 3, "value_answer_now") == (1.0, 1)
    value, n = est("persistent", 2, "value_answer_now")
    assert value != value and n == 0  # no branch stored there: NaN
    assert est("persistent", 1, "value_continue") == (0.0, 2)
    assert est("clean", 0, "value_continue") == (pytest.approx(2 / 3), 9)


def test_the_ideal_observer_is_the_hand_computed_posterior_mean() -> None:
    """Equal prior 1/2 on persistent and clean. q_persistent = 1/2, 1, 1 at positions 1–3
    (A: U U U, B: F U U U); q_clean = 1/2, 0, 1/3 (C: F F U, D: U F F, E: ? F F, its
    unparsed reply left out). The values of continuing: persistent 0 (A, B wrong), clean
    2/3 (C, E right). k=1: weights 1/2·1/2 each, posterior 1/2, E = 1/2 · 2/3.
    k=2: clean's q(2) = 0 leaves persistent alone: E = 0."""
    rows = _table()
    k1 = rows[("m", "persistent", "k=1", "ideal_continue")]
    assert k1.estimate == pytest.approx(0.5 * 2 / 3)
    assert k1.n == 5  # decision points at position 1
    assert k1.detail == ("equal prior over clean, persistent; posterior clean 0.50, "
                         "persistent 0.50")
    assert rows[("m", "persistent", "k=2", "ideal_continue")].estimate == 0.0
    assert rows[("m", "persistent", "k=3", "ideal_continue")].estimate == 0.0
    k0 = rows[("m", "clean", "k=0", "ideal_continue")]
    assert k0.estimate != k0.estimate and k0.detail == "no failed result yet"


def test_realized_values_read_repaired_answers() -> None:
    rows = _table(repairs={1: 1})  # A's answer repaired into a right one
    assert rows[("m", "persistent", "k=1", "value_continue")].estimate == 0.5
    # and the ideal observer's persistent value of continuing with it: ½·½ + ½·2/3
    assert rows[("m", "persistent", "k=1", "ideal_continue")].estimate == pytest.approx(
        0.5 * 0.5 + 0.5 * 2 / 3)


def test_lab_results_beliefs_on_the_sims_through_the_queue(tmp_path: Path) -> None:
    from tests.helpers.report_study import lab

    db = tmp_path / "lab.db"
    for args in (("init",), ("sets", "create", "d4", "--dataset", "demo", "--n", "4",
                             "--seed", "1"),
                 ("enqueue", "--models", "sim-never", "--conditions", "none", "--regimes",
                  "clean,persistent", "--set", "d4", "--run", "pilot"),
                 ("worker", "--until-idle"), ("replay", "beliefs", "--run", "pilot"),
                 ("worker", "--until-idle")):
        code, _, err = lab(db, *args)
        assert code == 0, (args, err)
    code, out, err = lab(db, "results", "beliefs", "--format", "json", "--resamples", "20")
    assert code == 0, err
    rows = [r for r in json.loads(out) if r["table"] == "beliefs"]
    persistent = [r for r in rows if r["regimes"] == "persistent"]
    assert {r["scope"] for r in persistent} == {f"k={k}" for k in range(1, 8)}
    assert all(r["n"] == 4 for r in persistent if r["measure"] == "p_continue")
    # sim-never never answers before its budget, and its persistent episodes all fail
    assert {r["estimate"] for r in persistent if r["measure"] in ("answers",
                                                                  "value_continue")} == {0.0}
