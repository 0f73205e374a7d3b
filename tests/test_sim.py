"""Simulated agents: known stopping behaviour through the real loop and parser."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from core.conditions import parse_condition
from core.data import Question
from core.demo_data import demo_questions
from core.episode import EpisodeResult
from core.models.registry import builtin_models, make_client
from core.react import EpisodeSetup
from core.regimes import ForeignPool, parse_regime
from core.runner import run_one


@pytest.fixture(scope="module")
def pool() -> list[Question]:
    return demo_questions()


def episodes(model: str, condition: str, regime: str, pool: list[Question],
             seeds: Iterable[int] = range(4), budget: int = 8) -> list[EpisodeResult]:
    client = make_client(builtin_models()[model])
    fp = ForeignPool(pool)
    out = []
    for seed in seeds:
        for q in pool:
            setup = EpisodeSetup(question=q, condition=parse_condition(condition),
                                 regime=parse_regime(regime), budget=budget, seed=seed, pool=fp,
                                 always_judge=True)
            out.append(asyncio.run(run_one(setup, client)))
    return out


def test_every_builtin_sim_runs_every_condition(pool: list[Question]) -> None:
    for model in builtin_models():
        for cond in ("none", "budget", "decide", "enforced_rule", "lexical_rule",
                     "random_rule:rate=0.5"):
            for r in episodes(model, cond, "recover_after_2", pool[:3], seeds=[0]):
                assert r.error is None and r.format_failures == 0


def test_clock6_answers_at_action_6_when_not_stopped_before(pool: list[Question]) -> None:
    results = episodes("sim-clock6", "none", "persistent", pool)
    assert results
    for r in results:
        assert r.answered and r.answer_action is not None
        if r.answer_action != 6:  # only a useful real observation can stop it earlier
            assert r.answer_action < 6
            prev = r.steps[r.answer_action - 2]
            assert prev.obs_failed is False and prev.judgment == "USEFUL"
    assert sum(r.answer_action == 6 for r in results) > 0.9 * len(results)


def test_own5_answers_exactly_when_its_own_run_first_reaches_5(pool: list[Question]) -> None:
    results = episodes("sim-own5", "none", "late_onset_from_3", pool)
    reached = 0
    for r in results:
        streaks = [s.streak for s in r.steps]
        first = next((i for i, s in enumerate(streaks) if s == 5), None)
        if first is not None:
            reached += 1
            assert r.answered and r.answer_action == first + 2
        if r.answered and (first is None or r.answer_action != first + 2):
            assert r.answer_action is not None  # an answered episode says when
            prev = r.steps[r.answer_action - 2]
            assert prev.judgment == "USEFUL" and prev.obs_failed is False
    assert reached > 0


def test_sim_judgments_follow_design_labels(pool: list[Question]) -> None:
    results = episodes("sim-never", "none", "recover_after_3", pool)
    failed = [s.judgment for r in results for s in r.steps if s.obs_failed and s.judgment]
    real = [s.judgment for r in results for s in r.steps if s.obs_failed is False and s.judgment]
    assert sum(j == "USELESS" for j in failed) / len(failed) > 0.95
    assert 0.3 < sum(j == "USELESS" for j in real) / len(real) < 0.6


def test_sim_is_deterministic(pool: list[Question]) -> None:
    a = episodes("sim-hazard-own", "none", "persistent", pool[:10], seeds=[1])
    b = episodes("sim-hazard-own", "none", "persistent", pool[:10], seeds=[1])
    assert [(r.answer_action, r.answer) for r in a] == [(r.answer_action, r.answer) for r in b]


def test_deadline_and_never(pool: list[Question]) -> None:
    for r in episodes("sim-deadline", "none", "persistent", pool[:10]):
        assert r.answered
    never = episodes("sim-never", "none", "persistent", pool[:10])
    assert all(not r.answered or r.answer_action is not None
               and r.steps[r.answer_action - 2].judgment == "USEFUL" for r in never)


def test_failed_observations_never_teach_the_answer(pool: list[Question]) -> None:
    results = episodes("sim-deadline", "none", "persistent", pool, seeds=range(3))
    share = sum(r.correct for r in results) / len(results)
    assert share < 0.3  # only seeded guesses (p_guess = 0.15) can be right
    clean = episodes("sim-deadline", "none", "clean", pool, seeds=range(3))
    assert sum(r.correct for r in clean) / len(clean) > share + 0.3


def test_a_sims_remembered_draws_are_its_keyed_draws_per_key_and_type() -> None:
    from core.canonical import keyed_uniform
    from core.models.sim import _draw

    assert _draw("judge", 0, "demo-001", 3) == keyed_uniform("judge", 0, "demo-001", 3)
    assert _draw("judge", 0, "demo-001", 3) == keyed_uniform("judge", 0, "demo-001", 3)
    # equal keys of another type ("1" and "True" hash differently) are drawn apart
    assert _draw("silent", 1, "q") == keyed_uniform("silent", 1, "q")
    assert _draw("silent", True, "q") == keyed_uniform("silent", True, "q")
    assert keyed_uniform("silent", True, "q") != keyed_uniform("silent", 1, "q")
