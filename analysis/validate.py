"""Do the measures mean what they claim? The simulated policies, run through the real
pipeline by `jobs.validate`, checked that time- and deadline-driven policies come out
≈ 0 and evidence-driven ones > 0 (the main paper, App. C.1, Table 7). This
module only reads what they stored and computes.

Every built-in sim policy runs under condition "none", budget 8, in the five failure
regimes, into lab.db under the run "validate-measures" (episodes already stored are
reused). For each policy we check I, the design-label contrast and the own-judgment
Δ against what the paper's Table 7 shows for that policy (`PAPER_TABLE7`, classified
by `expectation`): ≈ 0 (Δ and the design contrast for time- and deadline-driven
policies and for an evidence threshold beyond the usable budget, own7; I for the
policies that never answer before the last action), > 0 (every evidence-driven policy
with a threshold inside the budget; I also for a clock at action 6 and a hazard
rising with time, the reason Δ exists), or undefined (I when stopping precedes four
failures: clock at action 4, design-label count 3). An undefined value never counts
as ≈ 0, and a defined one never as undefined.

At paper scale (`lab validate-measures --paper-scale`: 300 questions × 10 seeds, the
paper's "300 questions, mean of 10 simulations") each measure is also computed on
each seed's episodes alone, averaged over the seeds, and compared with Table 7's
number (`paper_comparisons`): within ±PAPER_TOLERANCE, or undefined where Table 7
shows "–". Table 7 is itself simulated (App. C.1: no model calls; failed observations
judged USELESS w.p. 0.99, real ones w.p. 0.45, a real one judged useful ends the
episode w.p. 0.3), so the sims here, built to that description, can reproduce it; the
two hazard policies' slopes are not given in the paper (ours: 0.06 per action, 0.12
per useless judgment), so their rows test those choices as much as the measures.

The two-source sims run under "two_source" instead and are checked on leaving Δ
(`analysis.measures.leaving`): the sim that switches to backup_search after its own k useless
judgments must come out > 0, the one that switches at a fixed action ≈ 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pandas as pd
from sqlite_utils import Database

from analysis.base.rows import Row, Table, interval_row, make_row
from analysis.measures.decisions import clean_episodes, decision_table
from analysis.measures.delta import Contrast, design_contrast, time_matched_contrast
from analysis.measures.hazard import IntegrationIndex, integration_index
from analysis.measures.leaving import leave_delta
from analysis.stats.bootstrap import N_BOOT, Interval
from core.data import Question
from core.errors import ConfigError, LabError
from core.regimes import FAILURE_REGIMES

RUN = "validate-measures"
BUDGET = 8
CONDITION = "none"
ZERO_TOLERANCE = 0.05
"""A "≈ 0" measure passes when its interval covers 0 or |estimate| ≤ this (and its
interval is narrow: `ZERO_HALF_WIDTH`)."""
ZERO_HALF_WIDTH = 0.10
"""The widest 95% interval (half its width) a "≈ 0" measure may have: an interval
that covers 0 only because it is wide says the data cannot tell, not that the measure
is 0. The default validation's widest ≈ 0 interval (sim-hazard-time's Δ) is ±0.07."""
MEASURES = ("I", "design", "delta")
"""The three measures of Table 7, in its column order: I, design-label contrast, own Δ."""
PAPER_TABLE7: tuple[tuple[str, tuple[float | None, float | None, float | None]], ...] = (
    ("sim-never", (0.00, 0.00, 0.00)),
    ("sim-deadline", (0.00, 0.00, 0.00)),
    ("sim-clock4", (None, 0.00, 0.00)),
    ("sim-clock6", (0.50, 0.00, 0.00)),
    ("sim-hazard-time", (0.18, -0.02, 0.00)),
    ("sim-own3", (0.39, 0.60, 1.00)),
    ("sim-own5", (0.44, 0.21, 0.38)),
    ("sim-own7", (0.00, 0.00, 0.00)),
    ("sim-design3", (None, 1.00, 0.33)),
    ("sim-design5", (0.37, 0.33, 0.20)),
    ("sim-hazard-own", (0.32, 0.18, 0.31)),
)
"""The paper's Table 7 (App. C.1): (built-in sim, (I, design, own Δ)); None where the
paper prints "–" (undefined). Rows in the paper's order: never stops, answers at the
deadline, clock at action 4 and 6, hazard rising with time, own-judgment count k = 3,
5, 7, design-label count k = 3, 5, hazard rising with own count."""
PAPER_QUESTIONS = 300
PAPER_SEEDS = 10
"""Table 7's scale: 300 questions, the mean of 10 simulations."""
PAPER_TOLERANCE = 0.05
"""How far a paper-scale mean may lie from Table 7's number."""
PAPER_DATASET = "demo-validation"
"""Dataset of the demo-question copies a paper-scale run uses (`paper_scale_questions`)."""


def expectation(paper: float | None) -> str:
    """What a Table 7 number says a measure must show on a short run.

    Args:
        paper: the number, or None for the paper's "–".

    Returns:
        "undefined" (None), "zero" (|paper| ≤ ZERO_TOLERANCE) or "positive".
    """
    if paper is None:
        return "undefined"
    return "zero" if abs(paper) <= ZERO_TOLERANCE else "positive"


EXPECTED: tuple[tuple[str, tuple[str, str, str]], ...] = tuple(
    (name, (expectation(i), expectation(design), expectation(delta)))
    for name, (i, design, delta) in PAPER_TABLE7)
"""(built-in sim, expected (I, design, Δ)): "zero", "positive" or "undefined", from
PAPER_TABLE7 (`expectation`)."""
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
        expected: "zero" (defined, its interval's half-width ≤ ZERO_HALF_WIDTH, and
            the interval covers 0 or |estimate| ≤ ZERO_TOLERANCE; without an interval,
            |estimate| ≤ ZERO_TOLERANCE; an undefined value is not ≈ 0), "positive"
            (lower bound > 0) or "undefined" (no estimate).

    Returns:
        True when it did.

    Raises:
        ValueError: an unknown expectation.
    """
    if expected == "undefined":
        return not interval.defined
    if expected == "positive":
        return not math.isnan(interval.low) and interval.low > 0
    if expected != "zero":
        raise ValueError(f"unknown expectation {expected!r}; use zero, positive or undefined")
    if not interval.defined:
        return False
    if math.isnan(interval.low) or math.isnan(interval.high):
        return abs(interval.estimate) <= ZERO_TOLERANCE
    if (interval.high - interval.low) / 2 > ZERO_HALF_WIDTH:
        return False
    covers = interval.low <= 0 <= interval.high
    return covers or abs(interval.estimate) <= ZERO_TOLERANCE


@dataclass(frozen=True)
class PolicyCheck:
    """The three measures for one simulated policy.

    Attributes:
        model: the sim's name.
        expected: ("zero", "positive" or "undefined") for I, the design contrast and
            Δ, in MEASURES order (EXPECTED).
        index: integration index I.
        design: design-label contrast.
        delta: own-judgment Δ.
    """

    model: str
    expected: tuple[str, str, str]
    index: IntegrationIndex
    design: Contrast
    delta: Contrast

    @property
    def intervals(self) -> tuple[Interval, Interval, Interval]:
        """I, the design contrast and Δ, in MEASURES order."""
        return self.index.index, self.design.interval, self.delta.interval

    @property
    def failed(self) -> tuple[str, ...]:
        """The MEASURES that did not come out as expected."""
        return tuple(m for m, iv, want in zip(MEASURES, self.intervals, self.expected)
                     if not separates(iv, want))

    @property
    def passed(self) -> bool:
        """I, the design contrast and Δ all separate as expected."""
        return not self.failed


@dataclass(frozen=True)
class PaperComparison:
    """One measure of one sim at paper scale against the paper's Table 7.

    Attributes:
        model: the sim's name.
        measure: one of MEASURES.
        paper: Table 7's number (None: "–", undefined).
        mean: mean over the seeds of the measure on each seed's episodes alone (NaN
            when it is undefined in every seed).
        seeds: seeds run.
        defined: seeds in which it was defined (the mean is over these).
    """

    model: str
    measure: str
    paper: float | None
    mean: float
    seeds: int
    defined: int

    @property
    def difference(self) -> float:
        """mean − paper (NaN where either is undefined)."""
        return math.nan if self.paper is None else self.mean - self.paper

    @property
    def within(self) -> bool:
        """Undefined in every seed where Table 7 shows "–"; else defined in every seed
        and within ±PAPER_TOLERANCE of Table 7 (rounded to the paper's two decimals)."""
        if self.paper is None:
            return self.defined == 0
        return (self.defined == self.seeds
                and round(abs(self.mean - self.paper), 9) <= PAPER_TOLERANCE)


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
    """Answer-now branches of one sim (docs/replay.md): policy recovery and calibration.

    Attributes:
        model: the sim's name.
        built_with: the simple policy it was built with (PROBE_EXPECTED).
        recovered: the simple policy that reproduces its episodes
            (`analysis.replay.policies.recovered_policy`), with the share it reproduces.
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
class TraceCheck:
    """The second seed's depth-zero map on the trace sim (docs/traces.md).

    Attributes:
        ece_raw: held-out ECE of the sim's over-stated confidence at depth 0.
        ece_cal: the same through the isotonic map fitted on the calibration split's
            depth-zero records.
        n: test questions.
    """

    ece_raw: float
    ece_cal: float
    n: int

    @property
    def passed(self) -> bool:
        """The calibrated map lowers held-out ECE at depth 0."""
        return self.ece_cal < self.ece_raw


def trace_check() -> TraceCheck:
    """Run the trace sim (300 questions, no database) and compare depth-0 ECE."""
    from analysis.replay.trace_sim import depth_zero_ece

    return TraceCheck(*depth_zero_ece())


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
        paper: at paper scale, one PaperComparison per sim of PAPER_TABLE7 that ran
            and measure (empty otherwise).
    """

    checks: tuple[PolicyCheck, ...]
    n_questions: int
    seeds: tuple[int, ...]
    episodes: int
    new_episodes: int
    leaving: tuple[LeavingCheck, ...] = ()
    probes: tuple[ProbeCheck, ...] = ()
    trace: TraceCheck | None = None
    paper: tuple[PaperComparison, ...] = ()

    @property
    def passed(self) -> bool:
        """Every policy separates as expected (and, at paper scale, lies within
        ±PAPER_TOLERANCE of Table 7)."""
        every: tuple[PolicyCheck | LeavingCheck | ProbeCheck | TraceCheck, ...] = (
            *self.checks, *self.leaving, *self.probes, *((self.trace,) if self.trace else ()))
        return all(c.passed for c in every) and all(c.within for c in self.paper)

    def failures(self) -> tuple[str, ...]:
        """Names of the policies that did not separate (with the measures that did not),
        then the measures outside Table 7's tolerance."""
        return (tuple(f"{c.model} ({', '.join(c.failed)})" for c in self.checks if not c.passed)
                + tuple(c.model for c in self.leaving if not c.passed)
                + tuple(f"{c.model} (answer-now)" for c in self.probes if not c.passed)
                + (("sim-trace (depth-0 map)",) if self.trace and not self.trace.passed
                   else ())
                + tuple(f"{c.model} {c.measure} vs Table 7" for c in self.paper
                        if not c.within))


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
                      tuple(leaves), probe_checks, trace=trace_check())


def paper_scale_questions(base: Sequence[Question], n: int = PAPER_QUESTIONS
                          ) -> list[Question]:
    """n questions for the paper-scale run, made from a smaller bundled set.

    The sims' draws are keyed by (seed, question id, observation), so a copy under a
    new id is a new question to them, and the question-level bootstrap sees n
    clusters. Copies are "<id>#1", "<id>#2", … in dataset PAPER_DATASET, so they never
    join the originals' foreign pool (a copy's pages share the original's titles, and
    the pool redraws a page whose title the question's own KB has).

    Args:
        base: the questions to copy (e.g. the 60 demo questions).
        n: how many to return.

    Returns:
        n questions: every base question's first copy, then the second copies, ….

    Raises:
        ConfigError: `base` is empty.
    """
    if not base:
        raise ConfigError("paper-scale validation needs at least one question to copy")
    copies = -(-n // len(base))
    out = [replace(q, id=f"{q.id}#{j}", dataset=PAPER_DATASET)
           for j in range(1, copies + 1) for q in base]
    return out[:n]


def paper_decisions(db: Database, questions: Sequence[Question], seeds: Sequence[int],
                    names: Sequence[str]) -> pd.DataFrame:
    """The decision points of the validation's episodes of these sims, questions and
    seeds, read from lab.db's stored decision points (no step is parsed).

    Args:
        db: an open lab.db.
        questions: the questions validated.
        seeds: the cell seeds.
        names: the sims.

    Returns:
        Decision-table rows (error-free episodes, condition CONDITION, budget BUDGET,
        the five failure regimes).
    """
    from analysis.measures.frames import load_frames
    from core.store.selection import Selection

    frames = load_frames(db, Selection(runs=(RUN,), seeds=tuple(seeds), models=tuple(names),
                                       conditions=(CONDITION,), regimes=FAILURE_REGIMES))
    dec = frames.decisions
    ids = {q.id for q in questions}
    return dec.loc[dec["question_id"].isin(ids) & (dec["budget"] == BUDGET)
                   & (dec["condition"] == CONDITION)]


def seed_estimates(decisions: pd.DataFrame) -> tuple[float, float, float]:
    """I, the design contrast and Δ (MEASURES order) of one sim's decisions, point
    estimates only (NaN where undefined)."""
    return (integration_index(decisions, 0).index.estimate,
            design_contrast(decisions, 0).interval.estimate,
            time_matched_contrast(decisions, "side_channel", "t", 0).interval.estimate)


def paper_comparisons(decisions: pd.DataFrame, names: Sequence[str], seeds: Sequence[int]
                      ) -> tuple[PaperComparison, ...]:
    """Each Table 7 measure of each sim as the paper computes it: on each seed's
    episodes alone (one simulation of every question), then the mean over the seeds.

    Args:
        decisions: decision-table rows of the sims (`paper_decisions`).
        names: the sims; those not in PAPER_TABLE7 are skipped.
        seeds: the seeds (simulations).

    Returns:
        One PaperComparison per sim of PAPER_TABLE7 among `names` and measure.
    """
    paper = dict(PAPER_TABLE7)
    out = []
    for name in (m for m in names if m in paper):
        mine = decisions.loc[decisions["model"] == name]
        per_seed = [seed_estimates(mine.loc[mine["seed"] == s]) for s in seeds]
        for i, measure in enumerate(MEASURES):
            values = [v[i] for v in per_seed if not math.isnan(v[i])]
            mean = math.fsum(values) / len(values) if values else math.nan
            out.append(PaperComparison(name, measure, paper[name][i], mean, len(seeds),
                                       len(values)))
    return tuple(out)


def _probe_checks(db: Database, eps: pd.DataFrame, steps: pd.DataFrame, names: Sequence[str],
                  built: dict[str, str], seed: int) -> tuple[ProbeCheck, ...]:
    """Policy recovery and isotonic calibration on the sims' answer-now branches."""
    import numpy as np

    from analysis.replay.branches import build_branches
    from analysis.replay.calibration import calibration_split, ece, fit_isotonic
    from analysis.replay.policies import policies, recovered_policy
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
        ok = "yes" if c.passed else f"NO ({', '.join(c.failed)})"
        rows += [interval_row(arm, "I", c.index.index, "failure regimes", "decisions",
                              c.index.n45 + c.index.n12),
                 interval_row(arm, "design", c.design.interval, "persistent − late3",
                              "decisions", c.design.n_a + c.design.n_b, c.design.detail),
                 interval_row(arm, "delta", c.delta.interval, "own judgments", "decisions",
                              c.delta.n_a + c.delta.n_b, c.delta.detail),
                 Row(c.model, CONDITION, BUDGET, "expected", detail=expected_text(c.expected)),
                 Row(c.model, CONDITION, BUDGET, "passed", detail=ok)]
    for lc in v.leaving:
        arm = (lc.model, LEAVING_CONDITION, BUDGET)
        rows += [interval_row(arm, "leave_delta", lc.delta.interval, "own judgments",
                              "decisions", lc.delta.n_a + lc.delta.n_b, lc.delta.detail),
                 Row(lc.model, LEAVING_CONDITION, BUDGET, "expected", detail=lc.expected),
                 Row(lc.model, LEAVING_CONDITION, BUDGET, "passed",
                     detail="yes" if lc.passed else "NO")]
    if v.trace:
        arm = ("sim-trace", "traces", 3)
        rows += [make_row(arm, "ece_raw", "depth 0, test split", v.trace.ece_raw, v.trace.n,
                          "answer states"),
                 make_row(arm, "ece_isotonic", "depth 0, test split", v.trace.ece_cal,
                          v.trace.n, "answer states"),
                 Row("sim-trace", "traces", 3, "passed", "depth-0 map",
                     detail="yes" if v.trace.passed else "NO")]
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
             ("expected (I, design, Δ own), from the paper's Table 7: ≈0 = defined, its "
              f"interval no wider than ±{ZERO_HALF_WIDTH:g}, and covering 0 or |estimate| ≤ "
              f"{ZERO_TOLERANCE} (an undefined value is not ≈ 0); >0 = lower bound > 0; "
              "– = undefined. Δ and design are ≈ 0 for time/"
              "deadline policies and own7 (k beyond the usable budget) and > 0 for "
              "evidence-driven ones; I is > 0 for a clock at action 6 and a hazard rising "
              "with time too (why Δ exists) and undefined when stopping precedes four "
              "failures."),
             (f"Two-source sims run under '{LEAVING_CONDITION}' and are checked on leaving Δ "
              "(outcome: switches to backup_search or answers): > 0 when the switch follows "
              "own useless judgments, ≈ 0 when it comes at a fixed action.") if v.leaving else "",
             ("Answer-now branches (every decision point of "
              f"{', '.join(m for m, _ in PROBE_EXPECTED)}): isotonic calibration fitted on "
              "half the questions must lower the ECE of the sims' over-confident verbalized "
              "confidence on the other half, and the simple policy that reproduces each "
              "sim's episodes must be the one it was built with.") if v.probes else "",
             ("sim-trace (the second seed's traces, analysis.replay.trace_sim: confidence "
              "over-states the chance of a right answer by 0.25): the isotonic map fitted on "
              "the calibration split's depth-zero records must lower held-out ECE at depth "
              "0.") if v.trace else "")
    return Table("validate", "Measures on simulated policies", tuple(rows),
                 tuple(n for n in notes if n),
                 "wide", ("I", "design", "delta", "leave_delta"), (),
                 (("delta", "Δ own"), ("design", "design"), ("leave_delta", "Δ leave")))


_SYMBOLS = {"zero": "≈0", "positive": ">0", "undefined": "–"}


def expected_text(expected: Sequence[str]) -> str:
    """The expectations of (I, design, Δ) as short text, e.g. "I>0 design≈0 Δ≈0"."""
    return " ".join(f"{label}{_SYMBOLS[e]}" for label, e in zip(("I", "design", "Δ"), expected))


_PAPER_HEADERS = (("delta", "Δ own"), ("delta T7", "Δ T7"))


def paper_table(v: Validation) -> Table:
    """The paper-scale comparison with Table 7 (one line per sim).

    Args:
        v: a Validation with `paper` comparisons (`paper_comparisons`).

    Returns:
        Table "validate_paper": per sim and measure Table 7's number ("<measure> T7")
        and the mean over the seeds (n = seeds in which it was defined; detail: the
        difference), then "within" (yes, or NO with the measures outside).
    """
    rows: list[Row] = []
    by_model: dict[str, list[PaperComparison]] = {}
    for c in v.paper:
        by_model.setdefault(c.model, []).append(c)
    for model, comps in by_model.items():
        arm = (model, CONDITION, BUDGET)
        for c in comps:
            diff = "" if math.isnan(c.difference) else f"{c.difference:+.3f}"
            rows += [make_row(arm, f"{c.measure} T7", "Table 7",
                              math.nan if c.paper is None else c.paper),
                     make_row(arm, c.measure, "mean of seeds", c.mean, c.defined, "seeds",
                              detail=diff)]
        outside = [c.measure + ("" if math.isnan(c.difference) else f" {c.difference:+.3f}")
                   for c in comps if not c.within]
        rows.append(Row(model, CONDITION, BUDGET, "within",
                        detail=f"NO ({', '.join(outside)})" if outside else "yes"))
    notes = ((f"{v.n_questions} questions × {len(v.seeds)} seeds: each measure is computed on "
              "each seed's episodes alone (one simulation of every question, as the paper's "
              "\"300 questions, mean of 10 simulations\") and averaged over the seeds in "
              "which it is defined; T7 is the paper's Table 7 (– where it prints –)."),
             (f"within: every measure within ±{PAPER_TOLERANCE} of Table 7 and defined in "
              "every seed, or undefined in every seed where Table 7 prints –. The exit "
              "status is 1 when a sim is not within."))
    formats = tuple((m, "+.3f") for m in MEASURES) + tuple((f"{m} T7", "+.2f")
                                                          for m in MEASURES)
    return Table("validate_paper", f"Simulated policies against the paper's Table 7 "
                 f"(±{PAPER_TOLERANCE})", tuple(rows), notes, "wide", (), formats,
                 _PAPER_HEADERS)
