"""Tests for core.regimes: schedules, parsing, spec hashes and seeded draws."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core.data import Paragraph, Question
from core.errors import ConfigError
from core.regimes import (
    FAILURE_REGIMES,
    MEAN6,
    ForeignPool,
    Regime,
    draw_rng,
    parse_regime,
    short_regime,
)

T, F = True, False

# Expected failed observations for i = 1..10, written out.
SCHEDULES = {
    "clean": [F, F, F, F, F, F, F, F, F, F],
    "persistent": [T, T, T, T, T, T, T, T, T, T],
    "recover_after_1": [T, F, F, F, F, F, F, F, F, F],
    "recover_after_2": [T, T, F, F, F, F, F, F, F, F],
    "recover_after_3": [T, T, T, F, F, F, F, F, F, F],
    "recover_after_4": [T, T, T, T, F, F, F, F, F, F],
    "recover_after_5": [T, T, T, T, T, F, F, F, F, F],
    "late_onset_from_1": [T, T, T, T, T, T, T, T, T, T],
    "late_onset_from_3": [F, F, T, T, T, T, T, T, T, T],
    "late_onset": [F, F, T, T, T, T, T, T, T, T],
    "late_onset_from_7": [F, F, F, F, F, F, T, T, T, T],
    "plausible": [T, T, T, T, T, T, T, T, T, T],
    "answerless": [F, F, F, F, F, F, F, F, F, F],
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule(name: str) -> None:
    regime = parse_regime(name)
    assert [regime.fails(i) for i in range(1, 11)] == SCHEDULES[name]


def test_fails_rejects_zero_index() -> None:
    with pytest.raises(ValueError):
        parse_regime("clean").fails(0)


def test_parse_fields_and_flags() -> None:
    assert parse_regime("recover_after_2") == Regime("recover_after_2", "recover_after", 2)
    assert parse_regime("late_onset") == Regime("late_onset_from_3", "late_onset_from", 3)
    assert parse_regime("late_onset_from_12").param == 12
    assert parse_regime("persistent") == Regime("persistent", "persistent", None)
    assert parse_regime("answerless").answerless and not parse_regime("answerless").plausible
    assert parse_regime("plausible").plausible and not parse_regime("plausible").answerless
    assert not any(parse_regime(n).answerless or parse_regime(n).plausible for n in MEAN6)
    assert MEAN6[0] == "clean" and FAILURE_REGIMES == MEAN6[1:]
    assert [parse_regime(n).name for n in MEAN6] == list(MEAN6)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "Clean",
        "recover_after",
        "recover_after_0",
        "recover_after_6",
        "late_onset_from_0",
        "late_onset_from_03",
        "late_onset_from_x",
        "persistent ",
        "sometimes",
    ],
)
def test_parse_errors(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_regime(bad)
    message = str(info.value)
    assert "\n" not in message
    assert repr(bad) in message
    for valid in ("clean", "persistent", "recover_after_1", "late_onset_from_", "plausible",
                  "answerless"):
        assert valid in message


def test_inconsistent_regime_rejected() -> None:
    with pytest.raises(ConfigError):
        Regime("recover_after_9", "recover_after", 9)
    with pytest.raises(ConfigError):
        Regime("clean", "persistent", None)


def test_spec_json_and_hash_stable() -> None:
    regime = parse_regime("recover_after_2")
    assert regime.to_json() == '{"kind":"recover_after","name":"recover_after_2","param":2}'
    assert json.loads(parse_regime("clean").to_json()) == {
        "kind": "clean", "name": "clean", "param": None
    }
    # Pinned: changing the canonical JSON changes every stored hash.
    assert regime.spec_hash() == (
        "1bdb2d859230d9ab83a9a1e4a3f894c0e38fef4d1a06cd55f3ccc3582b696e16"
    )
    assert regime.spec_hash() == parse_regime("recover_after_2").spec_hash()
    assert parse_regime("late_onset").spec_hash() == parse_regime("late_onset_from_3").spec_hash()
    hashes = {parse_regime(n).spec_hash() for n in SCHEDULES}
    assert len(hashes) == len(SCHEDULES) - 1  # late_onset is an alias


# ---------------------------------------------------------------- seeded draws


def make_question(qid: str, dataset: str = "demo", n_pages: int = 4) -> Question:
    """An invented question: pages 0 and 1 are gold, the rest distractors."""
    pages = tuple(
        Paragraph(f"{qid} page {k}", (f"Sentence {k} of {qid}.", f"More about {qid}."))
        for k in range(n_pages)
    )
    return Question(
        id=qid,
        dataset=dataset,
        question=f"What about {qid}?",
        answer=qid,
        type="bridge",
        level="easy",
        paragraphs=pages,
        supporting_facts=((pages[0].title, 0), (pages[1].title, 1)),
    )


PINNED_DRAW = 546386163
QUESTIONS = [make_question(f"q{n:02d}", n_pages=3 + n % 5) for n in range(30)]


def test_draw_rng_is_keyed_and_stable() -> None:
    a = [draw_rng(7, "q01", 3).random() for _ in range(2)]
    assert a[0] == a[1]
    # Pinned value: blake2b keying, stable across processes (unlike the salted hash()).
    assert draw_rng(7, "q01", 3).randrange(10**9) == PINNED_DRAW
    assert draw_rng(7, "q01", 3).random() != draw_rng(7, "q01", 4).random()
    assert draw_rng(7, "q01", 3).random() != draw_rng(8, "q01", 3).random()
    assert draw_rng(7, "q01", 3).random() != draw_rng(7, "q02", 3).random()


def test_draws_identical_across_pools_and_calls() -> None:
    forward = ForeignPool(QUESTIONS)
    backward = ForeignPool(list(reversed(QUESTIONS)) + QUESTIONS[:5])  # order + duplicates
    for q in QUESTIONS:
        for i in range(1, 9):
            first = forward.draw(11, q, i)
            assert first == forward.draw(11, q, i) == backward.draw(11, q, i)
            own = forward.draw_own_distractor(11, q, i)
            assert own == forward.draw_own_distractor(11, q, i)
            assert own == backward.draw_own_distractor(11, q, i)


def test_draw_returns_consistent_triple() -> None:
    pool = ForeignPool(QUESTIONS)
    by_id = {q.id: q for q in QUESTIONS}
    for i in range(1, 30):
        qid, k, page = pool.draw(3, QUESTIONS[0], i)
        assert by_id[qid].paragraphs[k] == page


def test_different_keys_differ_in_aggregate() -> None:
    pool = ForeignPool(QUESTIONS)
    q = QUESTIONS[4]
    by_index = {pool.draw(0, q, i) for i in range(1, 41)}
    by_seed = {pool.draw(s, q, 1) for s in range(40)}
    assert len(by_index) >= 25 and len(by_seed) >= 25
    foreign_ids = {pool.draw(s, q, i)[0] for s in range(10) for i in range(1, 11)}
    assert len(foreign_ids) >= 20  # spreads over the 29 other questions
    own = {pool.draw_own_distractor(s, QUESTIONS[3], 1)[0] for s in range(40)}
    assert own == {2, 3, 4, 5}  # every distractor is reachable


def test_never_draws_own_question() -> None:
    pool = ForeignPool(QUESTIONS)
    for q in QUESTIONS:
        for s in range(5):
            for i in range(1, 9):
                qid, _, page = pool.draw(s, q, i)
                assert qid != q.id
                assert page not in q.paragraphs
    # Two-question pool: always the other one.
    a, b = QUESTIONS[:2]
    small = ForeignPool([b, a])
    assert {small.draw(s, a, 1)[0] for s in range(20)} == {b.id}


def test_draw_stays_in_dataset_and_needs_another_question() -> None:
    fever = make_question("f1", dataset="fever")
    pool = ForeignPool([*QUESTIONS, fever, make_question("f2", dataset="fever")])
    assert {pool.draw(s, fever, 1)[0] for s in range(20)} == {"f2"}
    with pytest.raises(ConfigError):
        ForeignPool([QUESTIONS[0]]).draw(1, QUESTIONS[0], 1)
    with pytest.raises(ConfigError):
        ForeignPool(QUESTIONS).draw(1, make_question("x", dataset="other"), 1)


def test_draw_for_question_outside_pool() -> None:
    outsider = make_question("zz")
    pool = ForeignPool(QUESTIONS[:3])
    assert {pool.draw(s, outsider, 1)[0] for s in range(40)} == {q.id for q in QUESTIONS[:3]}


def test_foreign_draw_skips_pages_titled_like_own_pages() -> None:
    shared = Paragraph("Shared Page", ("Shared text.",))
    q = make_question("a")
    q = replace(q, paragraphs=q.paragraphs + (shared,))
    other = replace(make_question("b"), paragraphs=(shared, Paragraph("B only", ("x",))))
    pool = ForeignPool([q, other])
    assert {pool.draw(s, q, 1)[2].title for s in range(30)} == {"B only"}


def test_duplicate_ids_with_different_content_rejected() -> None:
    with pytest.raises(ConfigError):
        ForeignPool([make_question("q1"), make_question("q1", n_pages=5)])


def test_plausible_draws_only_own_distractors() -> None:
    pool = ForeignPool(QUESTIONS)
    for q in QUESTIONS:
        for s in range(5):
            for i in range(1, 9):
                k, page = pool.draw_own_distractor(s, q, i)
                assert q.paragraphs[k] == page
                assert not q.is_gold(k)
    all_gold = replace(QUESTIONS[0], paragraphs=QUESTIONS[0].paragraphs[:2])
    with pytest.raises(ConfigError):
        pool.draw_own_distractor(1, all_gold, 1)


@pytest.mark.parametrize(("name", "short"), [
    ("recover_after_2", "rec2"), ("late_onset_from_3", "late3"), ("persistent", "pers."),
    ("plausible", "plaus."), ("answerless", "answerl."), ("clean", "clean"),
    ("mean6", "mean6")])
def test_short_regime(name: str, short: str) -> None:
    """One short name for the results tables and the console's lists."""
    assert short_regime(name) == short


def test_a_pools_remembered_draws_are_its_fresh_draws() -> None:
    from core.demo_data import demo_questions

    questions = demo_questions()
    pool = ForeignPool(questions)
    q = questions[0]
    first = pool.draw(0, q, 1)
    assert pool.draw(0, q, 1) == first == ForeignPool(questions).draw(0, q, 1)
    assert pool.draw(1, q, 1) == ForeignPool(questions).draw(1, q, 1)
    # the question re-imported with the drawn page's title among its own: drawn again
    page = first[2]
    edited = replace(q, paragraphs=(*q.paragraphs, Paragraph(page.title, ("x",))))
    again = pool.draw(0, edited, 1)
    assert again == ForeignPool(questions).draw(0, edited, 1) and again != first
