"""Do the measures mean what they claim? The simulated policies, run through the real
pipeline by `jobs.validate`, checked for the separation of SPEC §13.7 (paper App. C.1,
Table 7). This module only reads what they stored and computes.

Every built-in sim policy runs under condition "none", budget 8, in the five failure
regimes, into lab.db under the run "validate-measures" (episodes already stored are
reused). For each policy we report I, the design-label contrast and the own-judgment
Δ. Time- and deadline-driven policies, and an evidence threshold beyond the usable
budget (own7), must come out ≈ 0 on Δ and on the design contrast; evidence-driven
policies with a threshold inside the budget must come out > 0. I is reported, not
checked: it is positive for a clock by construction (the reason Δ exists).

The two-source sims run under "two_source" instead and are checked on leaving Δ
(`analysis.leaving`): the sim that switches to backup_search after its own k useless
judgments must come out > 0, the one that switches at a fixed action ≈ 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from sqlite_utils import Database

from analysis.decisions import clean_episodes, decision_table
from analysis.delta import Contrast, design_contrast, time_matched_contrast
from analysis.hazard import IntegrationIndex, integration_index
from analysis.leaving import leave_delta
from analysis.rows import Row, Table, interval_row, make_row
from analysis.stats import N_BOOT, Interval
from core.data import Question
from core.errors import LabError
from core.regimes import FAILURE_REGIMES

RUN = "validate-measures"
BUDGET = 8
CONDITION = "none"
ZERO_TOLERANCE = 0.05
"""A "≈ 0" measure passes when its interval covers 0 or |estimate| ≤ this."""
EXPECTED = (
    ("sim-never", "zero"), ("sim-deadline", "zero"), ("sim-clock4", "zero"),
    ("sim-clock6", "zero"), ("sim-hazard-time", "zero"), ("sim-own3", "positive"),
    ("sim-own5", "positive"), ("sim-own7", "zero"), ("sim-design3", "positive"),
    ("sim-design5", "positive"), ("sim-hazard-own", "positive"),
)
"""(built-in sim, expected sign of Δ and of the design contrast), paper Table 7."""
LEAVING_CONDITION = "two_source"
LEAVING_EXPECTED = (("sim-backup-own3", "positive"), ("sim-backup-clock4", "zero"))
"""(two-source sim, expected sign of leaving Δ): switch on evidence vs by the clock."""


PROBE_EXPECTED = (("sim-own3", "own 3"), ("sim-own5", "own 5"), ("sim-clock4", "cap 3"))
"""(sim, the simple stopping policy it was built with) for the answer-now checks;
sim-clock4 answers at action 4, i.e. after its third observation ("cap 3")."""


class ValidationFailed(LabError):
    """A simulated policy did not separate as the measures claim."""


def separates(interval: Interval, expected: str) -> bool:
    """Whether one measure came out as expected.

    Args:
        interval: the measure's estimate and interval.
        expected: "zero" (interval covers 0, |estimate| ≤ ZERO_TOLERANCE, or undefined)
            or "positive" (lower bound > 0).

    Returns:
        True when it did.
    """
    if expected == "positive":
        return not math.isnan(interval.low) and interval.low > 0
    if not interval.defined:
        return True
    covers = not math.isnan(interval.low) and interval.low <= 0 <= interval.high
    return covers or abs(interval.estimate) <= ZERO_TOLERANCE


@dataclass(frozen=True)
class PolicyCheck:
    """The three measures for one simulated policy.

    Attributes:
        model: the sim's name.
        expected: "zero" or "positive" for Δ and the design contrast.
        index: integration index I (reported, not checked).
        design: design-label contrast.
        delta: own-judgment Δ.
    """

    model: str
    expected: str
    index: IntegrationIndex
    design: Contrast
    delta: Contrast

    @property
    def passed(self) -> bool:
        """Δ and the design contrast both separate as expected."""
        return (separates(self.delta.interval, self.expected)
                and separates(self.design.interval, self.expected))


@dataclass(frozen=True)
class LeavingCheck:
    """Leaving Δ for one two-source sim.

    Attributes:
        model: the sim's name.
        expected: "zero" or "positive".
        delta: leaving Δ (own judgments, by t).
    """

    model: str
    expected: str
    delta: Contrast

    @property
    def passed(self) -> bool:
        """Leaving Δ separates as expected."""
        return separates(self.delta.interval, self.expected)


@dataclass(frozen=True)
class ProbeCheck:
    """Answer-now branches of one sim (issue 12): policy recovery and calibration.

    Attributes:
        model: the sim's name.
        built_with: the simple policy it was built with (PROBE_EXPECTED).
        recovered: the simple policy that reproduces its episodes
            (`analysis.policies.recovered_policy`), with the share it reproduces.
        ece_raw: ECE of its verbalized confidence on the evaluation split.
        ece_isotonic: ECE after isotonic calibration fitted on the calibration split.
        n: answer states evaluated.
    """

    model: str
    built_with: str
    recovered: tuple[str, float] | None
    ece_raw: float
    ece_isotonic: float
    n: int

    @property
    def passed(self) -> bool:
        """The built-in policy is recovered and isotonic calibration reduces ECE."""
        return (self.recovered is not None and self.recovered[0] == self.built_with
                and self.ece_isotonic < self.ece_raw)


@dataclass(frozen=True)
class Validation:
    """Outcome of `validate_measures`.

    Attributes:
        checks: one PolicyCheck per policy.
        n_questions: questions per cell.
        seeds: seeds run.
        episodes: episodes analysed.
        new_episodes: episodes run now (the rest were reused).
        leaving: one LeavingCheck per two-source sim.
        probes: one ProbeCheck per sim of PROBE_EXPECTED that ran.
    """

    checks: tuple[PolicyCheck, ...]
    n_questions: int
    seeds: tuple[int, ...]
    episodes: int
    new_episodes: int
    leaving: tuple[LeavingCheck, ...] = ()
    probes: tuple[ProbeCheck, ...] = ()

    @property
    def passed(self) -> bool:
        """Every policy separates as expected."""
        every: tuple[PolicyCheck | LeavingCheck | ProbeCheck, ...] = (
            *self.checks, *self.leaving, *self.probes)
        return all(c.passed for c in every)

    def failures(self) -> tuple[str, ...]:
        """Names of the policies that did not separate."""
        sign: tuple[PolicyCheck | LeavingCheck, ...] = (*self.checks, *self.leaving)
        return tuple(c.model for c in sign if not c.passed) + tuple(
            f"{c.model} (answer-now)" for c in self.probes if not c.passed)


def n_cells(seeds: Sequence[int], models: Sequence[str] | None = None) -> int:
    """Number of cells `validate_measures` runs (for a progress bar).

    Args:
        seeds: the seeds.
        models: the sims (default: all of EXPECTED and LEAVING_EXPECTED).

    Returns:
        seeds × sims × five failure regimes.
    """
    return len(seeds) * len(models or (*EXPECTED, *LEAVING_EXPECTED)) * len(FAILURE_REGIMES)


def validation_cells(models: Sequence[str] | None = None
                     ) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    """The sims a validation runs and the condition each runs under.

    Args:
        models: built-in sims (default: all of EXPECTED and LEAVING_EXPECTED).

    Returns:
        (the sims, [(sim, condition), ...]): CONDITION, or LEAVING_CONDITION for the
        two-source sims.

    Raises:
        ValueError: for a model that is not a built-in sim of EXPECTED or LEAVING_EXPECTED.
    """
    expected, leaving = dict(EXPECTED), dict(LEAVING_EXPECTED)
    names = tuple(models) if models else (*expected, *leaving)
    unknown = [m for m in names if m not in expected and m not in leaving]
    if unknown:
        raise ValueError(f"not a built-in sim policy: {unknown[0]!r}; "
                         f"choose from {', '.join([*expected, *leaving])}")
    return names, [(m, LEAVING_CONDITION if m in leaving else CONDITION) for m in names]


def validation_frames(db: Database, questions: Sequence[Question], seeds: Sequence[int],
                      cells: Sequence[tuple[str, str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The validation's clean episodes and its steps, read from run RUN.

    Args:
        db: an open lab.db.
        questions: the questions validated.
        seeds: the cell seeds.
        cells: (sim, condition) pairs from `validation_cells`.

    Returns:
        (episodes, steps) frames.
    """
    from core.store import episodes_frame, steps_frame

    names = [m for m, _ in cells]
    eps = episodes_frame(db, [RUN], names)
    ids = {q.id for q in questions}
    wanted = eps["model"].map(dict(cells)) == eps["condition"]
    eps = eps.loc[eps["seed"].isin(list(seeds)) & eps["question_id"].isin(ids)
                  & (eps["budget"] == BUDGET) & wanted & eps["regime"].isin(FAILURE_REGIMES)]
    eps, _ = clean_episodes(eps)
    return eps, steps_frame(db, [RUN], names)


def probe_episode_ids(eps: pd.DataFrame, names: Sequence[str]) -> list[int]:
    """The episodes whose answer-now branches the probe checks read (sims of PROBE_EXPECTED)."""
    built = dict(PROBE_EXPECTED)
    return eps.loc[eps["model"].isin([m for m in names if m in built]),
                   "episode_id"].astype(int).tolist()


def compute_validation(db: Database, eps: pd.DataFrame, steps: pd.DataFrame,
                       names: Sequence[str], n_questions: int, seeds: Sequence[int],
                       new_episodes: int, n_boot: int = N_BOOT, seed: int = 0) -> Validation:
    """I, the design contrast and Δ per sim, leaving Δ per two-source sim, and the
    answer-now checks, on episodes already run (see `jobs.validate`).

    Args:
        db: an open lab.db (read only: the answer-now probes of `probe_episode_ids`).
        eps: episodes from `validation_frames`.
        steps: steps from `validation_frames`.
        names: the sims, from `validation_cells`.
        n_questions: questions per cell.
        seeds: the cell seeds.
        new_episodes: how many episodes were run now (reported).
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        The Validation.
    """
    expected, leaving = dict(EXPECTED), dict(LEAVING_EXPECTED)
    dec = decision_table(eps, steps)
    checks, leaves = [], []
    for name in names:
        d = dec.loc[dec["model"] == name]
        if name in leaving:
            leaves.append(LeavingCheck(name, leaving[name], leave_delta(d, steps, n_boot, seed)))
            continue
        checks.append(PolicyCheck(name, expected[name], integration_index(d, n_boot, seed),
                                  design_contrast(d, n_boot, seed),
                                  time_matched_contrast(d, "side_channel", "t", n_boot, seed)))
    built = dict(PROBE_EXPECTED)
    probed = [m for m in names if m in built]
    probe_checks = _probe_checks(db, eps, steps, probed, built, seed) if probed else ()
    return Validation(tuple(checks), n_questions, tuple(seeds), len(eps), new_episodes,
                      tuple(leaves), probe_checks)


def _probe_checks(db: Database, eps: pd.DataFrame, steps: pd.DataFrame, names: Sequence[str],
                  built: dict[str, str], seed: int) -> tuple[ProbeCheck, ...]:
    """Policy recovery and isotonic calibration on the sims' answer-now branches."""
    import numpy as np

    from analysis.branches import build_branches
    from analysis.calibration import calibration_split, ece, fit_isotonic
    from analysis.policies import policies, recovered_policy
    from core.store.probes import probes_frame

    chosen = eps.loc[eps["model"].isin(list(names))]
    frame = probes_frame(db)
    frame = frame.loc[frame["episode_id"].isin(chosen["episode_id"])]
    out = []
    for name in names:
        b = build_branches(chosen.loc[chosen["model"] == name], steps, frame)
        cal = calibration_split(b.question_id, seed=seed)
        fit, ev = b.take(cal), b.take(~cal)
        fm = fit.has_branch & ~np.isnan(fit.confidence)
        em = ev.has_branch & ~np.isnan(ev.confidence)
        raw = ece(ev.confidence[em], ev.correct[em]) if em.any() else math.nan
        iso = (ece(fit_isotonic(fit.confidence[fm], fit.correct[fm]).predict(
            ev.confidence[em]), ev.correct[em]) if em.any() and fm.any() else math.nan)
        out.append(ProbeCheck(name, built[name], recovered_policy(list(policies(b))), raw, iso,
                              int(em.sum())))
    return tuple(out)


def validation_table(v: Validation) -> Table:
    """The validation as a results table (one line per policy).

    Args:
        v: a Validation.

    Returns:
        Table "validate" with I, design and Δ per policy, plus "expected" and "passed".
    """
    rows: list[Row] = []
    for c in v.checks:
        arm = (c.model, CONDITION, BUDGET)
        ok = "yes" if c.passed else "NO"
        rows += [interval_row(arm, "I", c.index.index, "failure regimes", "decisions",
                              c.index.n45 + c.index.n12),
                 interval_row(arm, "design", c.design.interval, "persistent − late3",
                              "decisions", c.design.n_a + c.design.n_b, c.design.detail),
                 interval_row(arm, "delta", c.delta.interval, "own judgments", "decisions",
                              c.delta.n_a + c.delta.n_b, c.delta.detail),
                 Row(c.model, CONDITION, BUDGET, "expected", detail=c.expected),
                 Row(c.model, CONDITION, BUDGET, "passed", detail=ok)]
    for lc in v.leaving:
        arm = (lc.model, LEAVING_CONDITION, BUDGET)
        rows += [interval_row(arm, "leave_delta", lc.delta.interval, "own judgments",
                              "decisions", lc.delta.n_a + lc.delta.n_b, lc.delta.detail),
                 Row(lc.model, LEAVING_CONDITION, BUDGET, "expected", detail=lc.expected),
                 Row(lc.model, LEAVING_CONDITION, BUDGET, "passed",
                     detail="yes" if lc.passed else "NO")]
    for pc in v.probes:
        arm = (pc.model, CONDITION, BUDGET)
        name, share = pc.recovered or ("none", math.nan)
        rows += [make_row(arm, "ece_raw", "evaluation split", pc.ece_raw, pc.n,
                          "answer states"),
                 make_row(arm, "ece_isotonic", "evaluation split", pc.ece_isotonic, pc.n,
                          "answer states"),
                 make_row(arm, "recovered_policy", "reproduces the episodes", share,
                          detail=f"{name} (built with {pc.built_with})"),
                 Row(pc.model, CONDITION, BUDGET, "passed", "answer-now",
                     detail="yes" if pc.passed else "NO")]
    notes = ((f"{v.n_questions} questions × seeds {', '.join(map(str, v.seeds))}; five failure "
             f"regimes, budget {BUDGET}, condition '{CONDITION}'; {v.episodes} episodes "
             f"({v.new_episodes} run now, the rest reused from run '{RUN}')."),
             ("expected: Δ and design ≈ 0 (interval covers 0 or |estimate| ≤ "
             f"{ZERO_TOLERANCE}) for time/deadline policies and own7 (k beyond the usable "
             "budget), > 0 (lower bound > 0) for evidence-driven ones; I is not checked "
             "(a clock scores I > 0 by construction)."),
             (f"Two-source sims run under '{LEAVING_CONDITION}' and are checked on leaving Δ "
              "(outcome: switches to backup_search or answers): > 0 when the switch follows "
              "own useless judgments, ≈ 0 when it comes at a fixed action."),
             ("Answer-now branches (every decision point of "
              f"{', '.join(m for m, _ in PROBE_EXPECTED)}): isotonic calibration fitted on "
              "half the questions must lower the ECE of the sims' over-confident verbalized "
              "confidence on the other half, and the simple policy that reproduces each "
              "sim's episodes must be the one it was built with."))
    return Table("validate", "Measures on simulated policies (SPEC §13.7)", tuple(rows), notes,
                 "wide", ("I", "design", "delta", "leave_delta"), (),
                 (("delta", "Δ own"), ("design", "design"), ("leave_delta", "Δ leave")))
