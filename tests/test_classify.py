"""A classify test's verdict: decided conditions decide, and its conditions' Holm
family is the one they have as tests of their own (hand-built episodes)."""

from __future__ import annotations

import pytest

from tests.test_registered import SCOPE, Builder, delta_data, one, success_pair

NEVER = {"kind": "answered_share", "condition": "none", "regime": "persistent", "op": ">",
         "value": 0.4}
"""False for an agent that never answers (0 > .4)."""
DELTA = {"kind": "delta_bound", "condition": "none", "on": "estimate", "op": ">",
         "threshold": 0.25}
"""n.a. for an agent whose Δ is undefined."""


def _never_answers() -> Builder:
    b = Builder()
    b.add(model="m3", q="y1", obs="x" * 8)
    b.add(model="m3", q="y2", obs="x" * 8)  # only group (a), never answers: Δ undefined
    return b


def test_an_all_with_a_false_condition_is_decided_whatever_the_na_ones_say() -> None:
    test = {"id": "PP1", "kind": "classify", "models": ["m3"], "outcomes": [
        {"label": "executed", "all": [DELTA, NEVER]},
        {"label": "not executed", "all": [{**NEVER, "op": "<"}]}, {"label": "else"}]}
    got = one(_never_answers().frames(), test)
    assert got.verdict == "not executed"
    # with only the n.a. condition the outcome cannot be evaluated
    only_na = dict(test, outcomes=[{"label": "executed", "all": [DELTA]},
                                   *test["outcomes"][1:]])
    assert one(_never_answers().frames(), only_na).verdict == "n.a."
    # a true condition beside an n.a. one does not decide an all
    true_na = dict(test, outcomes=[{"label": "executed", "all": [DELTA, {**NEVER, "op": "<"}]},
                                   *test["outcomes"][1:]])
    assert one(_never_answers().frames(), true_na).verdict == "n.a."


def test_an_any_with_a_true_condition_holds_whatever_the_na_ones_say() -> None:
    test = {"id": "PP2", "kind": "classify", "models": ["m3"], "outcomes": [
        {"label": "silent", "any": [DELTA, {**NEVER, "op": "<"}]}, {"label": "else"}]}
    assert one(_never_answers().frames(), test).verdict == "silent"
    # a false condition beside an n.a. one does not decide an any
    false_na = dict(test, outcomes=[{"label": "silent", "any": [DELTA, NEVER]},
                                    {"label": "else"}])
    assert one(_never_answers().frames(), false_na).verdict == "n.a."


MODELS = ["m1", "m2", "m3", "m4"]
FOUR = {**SCOPE, "models": MODELS}
PAIRED = {"kind": "paired_diff", "metric": "success", "regime": "persistent",
          "a": "enforced_rule", "b": "none"}


def _four_models() -> Builder:
    """Four models with the same moderate advantage of enforced_rule: alone each p is
    below .05, Holm over the four lifts it above."""
    b = Builder()
    for m in MODELS:
        success_pair(b, m, 6, 3, n=8)
    return b


def test_holm_inside_classify_is_the_tests_own_family() -> None:
    frames = _four_models().frames()
    alone = one(frames, {"id": "H", **PAIRED, "models": MODELS}, scope=FOUR)
    assert all(p.holm_m == 4 for p in alone.parts)
    assert all(p.p < 0.05 <= p.p_adjusted for p in alone.parts), alone.numbers
    assert alone.verdict == "fail"
    test = {"id": "C", "kind": "classify", "models": MODELS, "outcomes": [
        {"label": "significant", "all": [PAIRED]}, {"label": "not significant"}]}
    got = one(frames, test, scope=FOUR)
    assert got.verdict == "not significant"  # each model alone (m = 1): "significant"


def test_holm_inside_classify_still_passes_what_passes_alone() -> None:
    b = Builder()
    for m in MODELS:
        success_pair(b, m, 8, 0, n=8)
    frames = b.frames()
    alone = one(frames, {"id": "H", **PAIRED, "models": MODELS}, scope=FOUR)
    assert alone.verdict == "pass" and {p.holm_m for p in alone.parts} == {4}
    test = {"id": "C", "kind": "classify", "models": MODELS, "outcomes": [
        {"label": "significant", "all": [PAIRED]}, {"label": "not significant"}]}
    assert one(frames, test, scope=FOUR).verdict == "significant"


@pytest.mark.parametrize("models", [["m1"], ["m1", "m3"]])
def test_delta_data_still_classifies_as_executed(models: list[str]) -> None:
    b = _never_answers()
    delta_data(b, "m1")
    test = {"id": "PP1", "kind": "classify", "models": models, "outcomes": [
        {"label": "executed", "all": [DELTA]}, {"label": "else"}]}
    got = one(b.frames(), test)
    assert got.parts[0].verdict == "executed"
