"""Labels say what the numbers are: the episodes a registered test read, how they
stand to the freeze, and the regime a dissociation row is computed on."""

from __future__ import annotations

from analysis.prereg.document import _after
from console.cli.prereg import outcome_lines
from tests.test_registered import AFTER, BEFORE, Builder, delta_data, one


def _two_regimes(b: Builder, model: str = "m1", started: str = AFTER) -> None:
    """Both arms on four questions in persistent and in clean."""
    for regime in ("persistent", "clean"):
        for i in range(4):
            for cond, right in (("enforced_rule", int(i < 3)), ("none", int(i < 1))):
                b.add(model=model, cond=cond, regime=regime, q=f"q{i}", correct=right,
                      obs="x" * 7, answer_at=8, started=started)


PAIRED = {"id": "P", "kind": "paired_diff", "metric": "success", "regime": "persistent",
          "a": "enforced_rule", "b": "none", "models": ["m1"]}


def test_a_paired_test_counts_only_the_episodes_of_its_regime() -> None:
    b = Builder()
    _two_regimes(b)
    got = one(b.frames(), PAIRED)
    assert got.n_episodes == 8  # both arms × 4 questions in persistent, not clean's 8 too


def test_a_paired_test_counts_only_questions_both_arms_ran() -> None:
    b = Builder()
    _two_regimes(b)
    b.add(cond="none", regime="persistent", q="only-b", obs="x" * 7, answer_at=8)
    assert one(b.frames(), PAIRED).n_episodes == 8


def test_a_dissociation_test_counts_only_persistent() -> None:
    b = Builder()
    delta_data(b, "m1")                                   # persistent: 2 episodes
    b.add(model="m1", regime="clean", q="c1", obs="rrrr", answer_at=5)
    test = {"id": "D", "kind": "dissociation", "condition": "none", "op": "<",
            "threshold": 0.5, "models": ["m1"]}
    assert one(b.frames(), test).n_episodes == 2


def test_a_threshold_test_on_one_regime_counts_that_regime() -> None:
    b = Builder()
    delta_data(b, "m1")
    b.add(model="m1", regime="clean", q="c1", obs="rrrr", answer_at=5)
    test = {"id": "S", "kind": "answered_share", "condition": "none", "regime": "persistent",
            "op": ">", "value": 0.1, "models": ["m1"]}
    assert one(b.frames(), test).n_episodes == 2


def test_all_before_the_freeze_is_not_called_some() -> None:
    b = Builder()
    _two_regimes(b, started=BEFORE)
    got = one(b.frames(), PAIRED)
    assert (got.after_freeze, got.n_before, got.freeze_text()) == (False, 8, "ALL BEFORE FREEZE")
    assert "ALL BEFORE FREEZE" in outcome_lines([got])[2]
    assert "read 8 episodes" in outcome_lines([got])[2]
    assert _after(got) == "**none**"


def test_some_before_the_freeze_says_how_many() -> None:
    b = Builder()
    _two_regimes(b)
    b.episodes[0]["started_at"] = BEFORE
    got = one(b.frames(), PAIRED)
    assert got.freeze_text() == "1 OF 8 BEFORE FREEZE" and _after(got) == "**1 before**"
    assert got.to_dict()["n_before_freeze"] == 1
    b.episodes[0]["started_at"] = b.episodes[1]["started_at"]
    after = one(b.frames(), PAIRED)
    assert after.freeze_text() == "all after freeze" and _after(after) == "all"


def test_the_dissociation_row_covers_persistent_only() -> None:
    from analysis.measures.judgments import frame_counts, judgments_table

    b = Builder()
    delta_data(b, "m1")
    b.add(model="m1", regime="clean", q="c1", obs="rrrr", answer_at=5)
    f = b.frames()
    rows = judgments_table(frame_counts(f), f.decisions, f.episodes).rows
    dis = [r for r in rows if r.measure.startswith("answered after 5")]
    assert len(dis) == 2 and all(r.regimes == "persistent" for r in dis)
    other = [r for r in rows if r not in dis]
    assert other and all(r.regimes == "clean,persistent" for r in other)


def test_the_trace_split_says_it_is_a_hashed_split_not_the_seeds() -> None:
    from analysis.replay.trace_tables import TraceSettings
    from analysis.replay.traces import CAL_SHARE

    text = TraceSettings().text
    assert "seeded hash" in text and "not the seed's source-order split" in text
    assert CAL_SHARE == 2 / 3
