"""Registered tests of a pre-registration amendment, evaluated on the data (docs/prereg.md).

Each test becomes an Outcome like a line of the paper's Tables 4–5: the document,
the test id, the prediction, the verdict and the numbers with 95% intervals, the
runs and episodes it used, and whether every one of those episodes started after
the amendment was frozen (checked against lab.db, not taken on trust). Which data
a test reads is `analysis.prereg.outcome_data`; how each kind computes its parts is
`analysis.prereg.outcome_kinds`.

Verdicts. A test's parts (one per unit — model × dataset × question set — and,
where the test asks for several, per regime, condition or measure) each pass,
fail or are n.a. The test is

- ``pass``: every part has data and passes;
- ``fail``: no part passes and at least one fails;
- ``partial``: some parts pass and some fail;
- ``n.a.``: no part has data, or every part with data passes but some have none
  (a pass is never claimed on missing data);
- ``reported``: a descriptive test (``"descriptive": true``, the paper's "reported"
  rows) or part (a dissociation below its ``min_questions``): the number is shown,
  no verdict is drawn, and such parts never count towards pass or fail.

A stored test whose numbers cannot mean anything (alpha outside (0, 1), a NaN
threshold: `core.registered_tests.check_numbers`, e.g. frozen by an older version)
is n.a. with the reason, never pass.

A ``classify`` test's verdict is instead the label of the first of its ordered
``outcomes`` whose condition holds (the same for every unit), or the units'
labels joined by " / " in unit order when they differ. An ``all`` with a false
condition does not hold and an ``any`` with a true one holds, whatever its n.a.
conditions say; otherwise a unit where a condition cannot be evaluated is n.a.
Each condition is evaluated over all the test's units at once, so its Holm family
is the one it has as a test of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from analysis.measures.frames import Frames
from analysis.prereg import outcome_kinds as kinds
from analysis.prereg.outcome_data import TestData, Unit
from analysis.prereg.outcome_kinds import NA, REPORTED, Part
from core.errors import ConfigError, LabError
from core.registered_tests import bound_rule, check_numbers, inherit, named_conditions, subtests

VERDICTS = ("pass", "fail", "partial", NA, REPORTED)


@dataclass(frozen=True)
class Outcome:
    """One registered test's verdict.

    Attributes:
        amendment: the amendment that registered it.
        id: the test id.
        kind: the test's kind.
        prediction: a one-line reading of the rule.
        verdict: one of VERDICTS (a classify test: its outcome label(s)).
        estimate: the number when the test has exactly one part (else NaN; see parts).
        ci_low: its 95% lower bound.
        ci_high: its 95% upper bound.
        n_episodes: episodes the numbers were computed from.
        runs: the runs those episodes belong to.
        after_freeze: all those episodes started after the freeze (None: no episode
            or the amendment is a draft).
        parts: the per-unit numbers and verdicts.
        numbers: the parts as one line of text.
        n_before: of the episodes used, those that started at or before the freeze.
    """

    amendment: str
    id: str
    kind: str
    prediction: str
    verdict: str
    estimate: float
    ci_low: float
    ci_high: float
    n_episodes: int
    runs: tuple[str, ...]
    after_freeze: bool | None
    parts: tuple[Part, ...]
    numbers: str
    n_before: int = 0

    def freeze_text(self) -> str:
        """How the used episodes' starts stand to the freeze: "all after freeze",
        "ALL BEFORE FREEZE", "k OF n BEFORE FREEZE", or "–" (no episode, or a draft)."""
        if self.after_freeze is None:
            return "–"
        if self.after_freeze:
            return "all after freeze"
        if self.n_before >= self.n_episodes:
            return "ALL BEFORE FREEZE"
        return f"{self.n_before} OF {self.n_episodes} BEFORE FREEZE"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN → null), with one object per part."""
        return {
            "amendment": self.amendment, "id": self.id, "kind": self.kind,
            "prediction": self.prediction, "verdict": self.verdict,
            "estimate": _num(self.estimate), "ci_low": _num(self.ci_low),
            "ci_high": _num(self.ci_high), "n_episodes": self.n_episodes,
            "runs": list(self.runs), "after_freeze": self.after_freeze,
            "n_before_freeze": self.n_before if self.after_freeze is not None else None,
            "numbers": self.numbers,
            "parts": [{"model": p.unit.model, "dataset": p.unit.dataset,
                       "question_set": p.unit.question_set, "what": p.what,
                       "verdict": p.verdict, "estimate": _num(p.estimate),
                       "ci_low": _num(p.ci_low), "ci_high": _num(p.ci_high),
                       "p": _num(p.p), "p_holm": _num(p.p_adjusted), "holm_m": p.holm_m,
                       "detail": p.detail}
                      for p in self.parts],
        }


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def _fmt(x: float, signed: bool = True) -> str:
    if x is None or math.isnan(x):
        return "–"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def verdict(parts: Sequence[Part]) -> str:
    """Combine part verdicts (see the module docstring)."""
    decided = [p for p in parts if p.verdict != REPORTED]
    if parts and not decided:
        return REPORTED
    parts = decided
    passed = sum(p.verdict == "pass" for p in parts)
    failed = sum(p.verdict == "fail" for p in parts)
    if passed and failed:
        return "partial"
    if failed:
        return "fail"
    if passed and passed == len(parts):
        return "pass"
    return NA


def _arms(test: Mapping[str, Any]) -> str:
    return ", ".join(named_conditions(test))


def prediction_text(test: Mapping[str, Any]) -> str:
    """A one-line reading of a registered test (its own `prediction` if given)."""
    if test.get("prediction"):
        return str(test["prediction"])
    kind = test["kind"]
    where = f" on {test['regime']}" if test.get("regime") else (
        f" on {', '.join(test['regimes'])}" if test.get("regimes") else "")
    budget = f", budget {test['budget']}" if test.get("budget") else ""
    if kind == "paired_diff":
        if "on" in test:
            return (f"{test['a']} − {test['b']} ({test['metric']}{where}{budget}): "
                    f"{test['on']} {test['op']} {test['threshold']:+g}")
        sign = {"greater": ">", "less": "<"}.get(test.get("alternative", "greater"), "≠")
        sided = "two-sided" if test.get("alternative") == "two-sided" else "one-sided"
        corr = ", Holm" if test.get("correction", "holm") == "holm" else ""
        return f"{test['a']} {sign} {test['b']} ({test['metric']}{where}{budget}); {sided}{corr}"
    if kind == "noninferiority":
        return (f"{test['a']} ≥ {test['b']} {test['margin']:+g} ({test['metric']}{where}"
                f"{budget}; 95% LB)")
    if kind.endswith("_bound"):
        name = {"delta_bound": "Δ", "index_bound": "I",
                "design_contrast_bound": "design-label contrast"}[kind]
        on, op = bound_rule(test)
        side = {"ci_high": "95% upper bound", "ci_low": "95% lower bound",
                "estimate": "estimate"}[on]
        judg = " (stated judgments)" if test.get("judgments") == "stated" else ""
        return f"{name}({_arms(test)}){judg}{where}{budget}: {side} {op} {test['threshold']:+g}"
    if kind == "median_action":
        return (f"median answering action of {_arms(test)}{where}{budget} {test['op']} "
                f"{test['value']:g}")
    if kind == "answered_share":
        at = f" at action {test['at_action']}" if test.get("at_action") else ""
        return f"share answered{at} of {_arms(test)}{where}{budget} {test['op']} {test['value']:g}"
    if kind == "budget_contrast":
        hi, lo = test["budgets"]
        diff = f"|{test['metric']}({hi}) − ({lo})|" if test.get("absolute") else \
            f"{test['metric']}({hi}) − {test['metric']}({lo})"
        return f"{_arms(test)}{where}: {diff} {test['op']} {test['threshold']:g}"
    if kind == "dissociation":
        judg = "stated" if test.get("judgments") == "stated" else "own"
        return (f"{_arms(test)}: share answered after {test.get('k', 5)} consecutive {judg} "
                f"useless judgments ({test.get('regime', 'persistent')}) "
                f"{test.get('on', 'estimate')} {test['op']} {test['threshold']:g}")
    if kind == "judgment_validity":
        rules = [f"USELESS on failed ≥ {test['useless_on_failed']:g}"
                 if "useless_on_failed" in test else "",
                 f"on real ≤ {test['useless_on_real']:g}" if "useless_on_real" in test else "",
                 f"κ(stated, side channel) ≥ {test['kappa']:g}" if "kappa" in test else ""]
        return f"judgment validity of {_arms(test)}: " + ", ".join(r for r in rules if r)
    if kind == "leaving":
        return (f"{test['metric']} of {_arms(test)}{where}{budget}: "
                f"{test.get('on', 'estimate')} {test['op']} {test['threshold']:g}")
    labels = [o["label"] for o in test["outcomes"]]
    return " / ".join(labels) + " (first that holds)"


def _part_text(p: Part, several_units: bool, classify: bool = False) -> str:
    head = " ".join(x for x in (p.unit.text(several_units), p.what) if x)
    if classify or p.verdict not in ("pass", "fail", NA, REPORTED):  # a classify label
        shown = p.detail if p.detail not in ("", "else") else ""
        return f"{head}: {p.verdict}" + (f" ({shown})" if shown else "")
    if math.isnan(p.estimate):
        return f"{head}: – ({p.detail})"
    ci = "" if math.isnan(p.ci_low) else f" [{_fmt(p.ci_low)}, {_fmt(p.ci_high)}]"
    pv = "" if math.isnan(p.p) else f" p={p.p:.4f}" + (
        "" if p.holm_m <= 1 else f" (Holm {p.p_adjusted:.4f}, m={p.holm_m})")
    mark = {"pass": "", "fail": " ✗", NA: " n.a.", REPORTED: " (reported)"}[p.verdict]
    return f"{head} {_fmt(p.estimate)}{ci}{pv}{mark}" + (f" ({p.detail})" if p.detail else "")


def numbers_text(parts: Sequence[Part], classify: bool = False) -> str:
    """The parts as one line: a tally, then each part's number (a classify test: each
    unit's label, and why where it is n.a.)."""
    units = {p.unit for p in parts}
    several = len({(u.dataset, u.question_set) for u in units}) > 1
    if classify:
        return "; ".join(_part_text(p, several, True) for p in parts)
    decided = [p for p in parts if p.verdict in ("pass", "fail", NA)]
    shown = [p for p in parts if p.verdict != REPORTED]
    tally = (f"{sum(p.verdict == 'pass' for p in decided)}/{len(decided)}: "
             if decided and len(decided) == len(shown) else "")
    return tally + "; ".join(_part_text(p, several) for p in parts)


def _parts(data: TestData, test: Mapping[str, Any], units: Sequence[Unit], n_boot: int,
           seed: int) -> list[Part]:
    kind = test["kind"]
    if kind == "paired_diff":
        return kinds.paired_diff(data, test, units, n_boot, seed)
    if kind == "noninferiority":
        return kinds.noninferiority(data, test, units, n_boot, seed)
    if kind.endswith("_bound"):
        return kinds.bound(data, test, units, n_boot, seed)
    if kind in ("median_action", "answered_share"):
        return kinds.answers(data, test, units)
    if kind == "budget_contrast":
        return kinds.budget_contrast(data, test, units)
    if kind == "dissociation":
        return kinds.dissociation_parts(data, test, units)
    if kind == "judgment_validity":
        return kinds.judgment_validity(data, test, units)
    if kind == "leaving":
        return kinds.leaving_parts(data, test, units, n_boot, seed)
    return _classify(data, test, units, n_boot, seed)


def _holds(parts: Sequence[Part], unit: Unit) -> tuple[bool | None, str]:
    """Whether a sub-test passes for one unit, read from its parts over every unit
    (None: n.a., with the reason)."""
    mine = [p for p in parts if p.unit == unit]
    if not mine:
        return None, "no data"
    na = next((p for p in mine if p.verdict == NA), None)
    if na is not None:
        return None, na.detail
    return all(p.verdict == "pass" for p in mine), ""


def _decided(held: Sequence[bool | None], every: bool) -> bool | None:
    """An `all` (every) or `any` condition list: decided by a false (all) or a true
    (any) condition whatever the n.a. ones say, else n.a. if one is n.a."""
    if every:
        return False if False in held else (None if None in held else True)
    return True if True in held else (None if None in held else False)


def _classify(data: TestData, test: Mapping[str, Any], units: Sequence[Unit], n_boot: int,
              seed: int) -> list[Part]:
    """Per unit: the label of the first outcome whose condition holds.

    Each condition is evaluated once over all the test's units, as it would be on its
    own, so a paired difference's Holm family is the same (across models) inside a
    classify test as outside it.
    """
    evaluated: dict[tuple[int, int], list[Part]] = {}

    def parts_of(i: int, j: int, sub: Mapping[str, Any]) -> list[Part]:
        if (i, j) not in evaluated:
            evaluated[i, j] = _parts(data, inherit(test, sub), units, n_boot, seed)
        return evaluated[i, j]

    out = []
    for unit in units:
        label, why = NA, "no outcome held"
        for i, o in enumerate(test["outcomes"]):
            subs = o.get("all", o.get("any"))
            if subs is None:
                label, why = o["label"], "else"
                break
            results = [_holds(parts_of(i, j, s), unit) for j, s in enumerate(subs)]
            held = _decided([h for h, _ in results], "all" in o)
            if held is None:
                reason = next(r for h, r in results if h is None)
                label, why = NA, f"cannot evaluate a condition of '{o['label']}': {reason}"
                break
            if held:
                label, why = o["label"], ""
                break
        out.append(Part(unit, "", label, detail=why))
    return out


def _classify_verdict(parts: Sequence[Part]) -> str:
    labels = [p.verdict for p in parts]
    if all(lab == NA for lab in labels):
        return NA
    return labels[0] if len(set(labels)) == 1 else " / ".join(labels)


def evaluate_test(amendment: Mapping[str, Any], test: Mapping[str, Any], frames: Frames,
                  n_boot: int = 2000, seed: int = 0) -> Outcome:
    """Evaluate one registered test on the data it governs.

    Args:
        amendment: the amendment row (id, scope, frozen_at).
        test: one of its registered tests.
        frames: analysis frames (every run may be in them; the test picks its own).
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        The Outcome. A test whose condition names several arms of one model (a bare
        random_rule run at two rates) is n.a. with the reason.
    """
    data = TestData(frames, amendment, test)
    models = test.get("models") or (amendment.get("scope") or {}).get("models", [])
    units = data.units(models)
    try:
        for t in (test, *subtests(test)):
            check_numbers(t, str(test["id"]))
    except ConfigError as exc:
        parts = [Part(units[0] if units else Unit("", "", ""), "", NA,
                      detail=f"not evaluated: {exc}")]
    else:
        try:
            parts = _parts(data, test, units, n_boot, seed)
        except LabError as exc:
            parts = [Part(units[0] if units else Unit("", "", ""), "", NA, detail=str(exc))]
        if test.get("descriptive"):
            parts = [replace(p, verdict=REPORTED) if p.verdict in ("pass", "fail") else p
                     for p in parts]
    used = data.used_episodes()
    after, before = None, 0
    if amendment.get("frozen_at") and len(used):
        before = int((used["started_at"] <= amendment["frozen_at"]).sum())
        after = before == 0
    one = parts[0] if len(parts) == 1 else None
    final = (_classify_verdict(parts) if test["kind"] == "classify" else verdict(parts))
    return Outcome(
        str(amendment["id"]), str(test["id"]), test["kind"], prediction_text(test), final,
        one.estimate if one else math.nan, one.ci_low if one else math.nan,
        one.ci_high if one else math.nan, len(used),
        tuple(sorted(str(r) for r in used["run"].unique())), after, tuple(parts),
        numbers_text(parts, test["kind"] == "classify"), before)


def evaluate(amendment: Mapping[str, Any], frames: Frames, n_boot: int = 2000,
             seed: int = 0) -> list[Outcome]:
    """Evaluate every registered test of one amendment.

    Args:
        amendment: the amendment row (tests, scope, frozen_at, id).
        frames: the analysis frames of lab.db; each test reads only the runs enqueued
            under this amendment (or the runs it names), see `analysis.prereg.outcome_data`.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        One Outcome per registered test, in registration order.
    """
    return [evaluate_test(amendment, test, frames, n_boot, seed)
            for test in amendment.get("tests") or []]
