"""`lab validate-measures`: I checked against Table 7 like the contrasts, an undefined
value never ≈ 0, and `--paper-scale` against the paper's Table 7.

The paper-scale run itself (300 questions × 10 seeds) takes minutes; here its scale is
shrunk by monkeypatching PAPER_QUESTIONS / PAPER_SEEDS, and Table 7 by PAPER_TABLE7, so
the CLI's own path (questions, seeds, comparison, exit status) runs in seconds. The
deterministic sims (never, deadline, clocks, own7) give Table 7's numbers at any scale.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import analysis.validate as validate
from analysis.stats.bootstrap import Interval
from analysis.validate import (
    EXPECTED,
    MEASURES,
    PAPER_DATASET,
    PAPER_TABLE7,
    PaperComparison,
    paper_comparisons,
    paper_decisions,
    paper_scale_questions,
    seed_estimates,
)
from console.cli.results import validate_measures_cmd
from core import store
from core.data import ids_hash
from core.demo_data import demo_questions
from core.errors import ConfigError
from core.models.registry import builtin_models
from core.regimes import ForeignPool
from jobs.validate import validate_measures

DETERMINISTIC = ("sim-never", "sim-deadline", "sim-clock4", "sim-clock6", "sim-own7")


def invoke(args: Sequence[str], db: Path) -> Result:
    return CliRunner().invoke(validate_measures_cmd, [*args],
                              obj={"db": db, "config": db.with_name("lab.toml")})


def test_expectations_come_from_table7() -> None:
    expected = dict(EXPECTED)
    assert list(expected) == [m for m, _ in PAPER_TABLE7]
    assert set(expected) <= set(builtin_models())
    # I: a clock at 6 and a hazard rising with time score I > 0; undefined where "–"
    assert expected["sim-clock6"] == ("positive", "zero", "zero")
    assert expected["sim-hazard-time"] == ("positive", "zero", "zero")  # design −0.02 ≈ 0
    assert expected["sim-clock4"] == ("undefined", "zero", "zero")
    assert expected["sim-design3"] == ("undefined", "positive", "positive")
    assert expected["sim-own7"] == ("zero", "zero", "zero")


def test_a_policy_check_fails_on_the_measure_that_is_off() -> None:
    from analysis.measures.delta import Contrast
    from analysis.measures.hazard import IntegrationIndex
    from analysis.validate import PolicyCheck

    def contrast(iv: Interval) -> Contrast:
        return Contrast(iv, 1, 1, 0, 0, "t")

    zero = Interval(0.0, 0.0, 0.0)
    undefined = IntegrationIndex(Interval(math.nan), Interval(math.nan), Interval(math.nan),
                                 0, 0)
    clock4 = PolicyCheck("sim-clock4", ("undefined", "zero", "zero"), undefined,
                         contrast(zero), contrast(zero))
    assert clock4.passed
    # an undefined contrast is not ≈ 0
    off = PolicyCheck("sim-clock4", ("undefined", "zero", "zero"), undefined,
                      contrast(zero), contrast(Interval(math.nan)))
    assert off.failed == ("delta",)
    # a defined I where Table 7 prints "–" is wrong too
    defined = IntegrationIndex(zero, zero, zero, 10, 10)
    assert PolicyCheck("sim-clock4", ("undefined", "zero", "zero"), defined, contrast(zero),
                       contrast(zero)).failed == ("I",)


def test_paper_scale_questions_are_distinct_copies() -> None:
    base = demo_questions()
    qs = paper_scale_questions(base, 300)
    assert len(qs) == 300 and len({q.id for q in qs}) == 300
    assert {q.dataset for q in qs} == {PAPER_DATASET}
    assert qs[0].id == base[0].id + "#1" and qs[60].id == base[0].id + "#2"
    assert qs[61].paragraphs == base[1].paragraphs and qs[61].answer == base[1].answer
    ForeignPool(qs).draw(0, qs[0], 1)  # the copies' own pool serves failed observations
    assert len(paper_scale_questions(base, 7)) == 7
    with pytest.raises(ConfigError):
        paper_scale_questions([], 3)


@pytest.mark.parametrize("mean, paper, defined, within", [
    (0.43, 0.38, 2, True),                # exactly 0.05 off: inside
    (0.44, 0.38, 2, False),
    (0.33, 0.38, 2, True),
    (0.38, 0.38, 1, False),               # undefined in one seed
    (math.nan, None, 0, True),            # "–" and undefined in every seed
    (0.10, None, 1, False),               # "–" but defined somewhere
])
def test_paper_comparison_tolerance(mean: float, paper: float | None, defined: int, within: bool
                                   ) -> None:
    c = PaperComparison("sim-own5", "delta", paper, mean, 2, defined)
    assert c.within is within


def test_paper_comparisons_average_the_seeds(tmp_path: Path) -> None:
    db = store.connect(tmp_path / "lab.db")
    questions = demo_questions()[:20]
    store.insert_questions(db, demo_questions())
    names = ["sim-own5", "sim-clock4"]
    validate_measures(db, questions, (0, 1), models=names, n_boot=0)
    dec = paper_decisions(db, questions, (0, 1), names)
    assert set(dec["seed"]) == {0, 1} and set(dec["model"]) == set(names)
    got = {(c.model, c.measure): c for c in paper_comparisons(dec, names, (0, 1))}
    assert len(got) == len(names) * len(MEASURES)
    own5 = dec.loc[dec["model"] == "sim-own5"]
    per_seed = [seed_estimates(own5.loc[own5["seed"] == s]) for s in (0, 1)]
    pooled = seed_estimates(own5)
    for i, m in enumerate(MEASURES):
        assert got["sim-own5", m].mean == pytest.approx((per_seed[0][i] + per_seed[1][i]) / 2)
        assert got["sim-own5", m].defined == 2
    # the mean of the seeds is not the pooled estimate (the design contrast shows it)
    assert any(got["sim-own5", m].mean != pytest.approx(pooled[i], abs=1e-9)
               for i, m in enumerate(MEASURES))
    assert got["sim-clock4", "I"].defined == 0 and got["sim-clock4", "I"].within


@pytest.fixture
def small_scale(monkeypatch: pytest.MonkeyPatch
                ) -> tuple[tuple[str, tuple[float | None, float | None, float | None]], ...]:
    monkeypatch.setattr(validate, "PAPER_QUESTIONS", 12)
    monkeypatch.setattr(validate, "PAPER_SEEDS", 2)
    table = tuple((m, v) for m, v in PAPER_TABLE7 if m in DETERMINISTIC)
    monkeypatch.setattr(validate, "PAPER_TABLE7", table)
    return table


def test_paper_scale_cli_passes_within_the_tolerance(
        small_scale: tuple[tuple[str, tuple[float | None, float | None, float | None]], ...],
        tmp_path: Path) -> None:
    r = invoke(["--paper-scale", "--resamples", "50", "--format", "json"], tmp_path / "lab.db")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    within = {x["model"]: x["detail"] for x in rows if x["table"] == "validate_paper"
              and x["measure"] == "within"}
    assert within == {m: "yes" for m in DETERMINISTIC}
    clock6 = [x for x in rows if x["table"] == "validate_paper" and x["model"] == "sim-clock6"
              and x["measure"] in ("I", "I T7")]
    assert [(x["measure"], x["estimate"], x["n"]) for x in clock6] == [
        ("I T7", 0.5, 0), ("I", 0.5, 2)]
    db = store.connect(tmp_path / "lab.db")
    # 12 copies of demo questions × 2 seeds × 5 sims × 5 regimes, nothing else run
    assert store.count(db, "episodes") == 12 * 2 * 5 * 5
    assert db.conn.execute("SELECT DISTINCT dataset FROM questions q JOIN episodes e ON "
                           "e.question_id = q.id").fetchall() == [(PAPER_DATASET,)]


def test_paper_scale_cli_exits_1_outside_the_tolerance(
        small_scale: tuple[tuple[str, tuple[float | None, float | None, float | None]], ...],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shifted = tuple((m, (0.44, *v[1:]) if m == "sim-clock6" else v) for m, v in small_scale)
    monkeypatch.setattr(validate, "PAPER_TABLE7", shifted)
    r = invoke(["--paper-scale", "--resamples", "50"], tmp_path / "lab.db")
    assert r.exit_code == 1
    assert "sim-clock6 I vs Table 7" in str(r.exception)
    assert "NO (I +0.060)" in r.stdout
    ok = tuple((m, (0.45, *v[1:]) if m == "sim-clock6" else v) for m, v in small_scale)
    monkeypatch.setattr(validate, "PAPER_TABLE7", ok)
    again = invoke(["--paper-scale", "--resamples", "50"], tmp_path / "lab.db")
    assert again.exit_code == 0, again.output  # 0.05 off is inside


def test_paper_scale_refuses_other_seeds_and_small_sets(tmp_path: Path) -> None:
    r = invoke(["--paper-scale", "--seeds", "3"], tmp_path / "lab.db")
    assert r.exit_code == 1 and "drop --seeds 3" in str(r.exception)
    db = store.connect(tmp_path / "lab.db")
    questions = demo_questions()
    store.insert_questions(db, questions)
    ids = [q.id for q in questions]
    store.save_question_set(db, "all60", "demo", ids, 1, (), False, ids_hash(ids))
    r = invoke(["--paper-scale", "--set", "all60"], tmp_path / "lab.db")
    assert r.exit_code == 1 and "has 60" in str(r.exception)
