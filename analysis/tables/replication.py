"""The replication table (`lab results replication`): lab's Δ and mean6 beside a
reference's, their difference, and whether the two Δ intervals overlap.

The reference is either a reference set of published values (`lab data import
paper-values`: the main paper's Δ, 95% interval and mean6 per split × model × arm) or
another run (a researcher's replication run against the paper's imported episodes):

- ``NAME``: reference set NAME; a line of run R is compared with its values of split R;
- ``NAME/SPLIT``: the same, every run compared with split SPLIT (a replication run
  named otherwise than the split it replicates);
- ``run:OTHER``: run OTHER's own Δ and mean6, computed as lab's are.

Each line is one group of lab's rows (model × arm × budget × dataset × question set ×
run × seed × replicate, as every results table splits them; ``--pool`` merges as
elsewhere), never pooled across budgets, sets or datasets. Lab's Δ is its own-judgment
time-matched contrast by t on the five failure regimes (the paper's Δ pools those,
not clean); mean6 is the six-regime success. A published value matches a line of the
same split, model and arm whose budget and dataset are the reference set's; another
run's line matches on model, arm, budget, dataset and question set (and seed and
replicate where that run has several lines for them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from analysis.base.rows import Row, Table
from analysis.measures.delta import VARIANTS
from analysis.measures.results import Results
from analysis.measures.success import MEAN6_LABEL
from core.errors import ConfigError
from core.regimes import DELTA_FAILURE, MAIN_FAMILY
from core.store.references import ReferenceSet, reference_set, reference_sets, reference_values

if TYPE_CHECKING:
    from sqlite_utils import Database

    from analysis.measures.frames import Frames
    from analysis.tables.results import ResultsSpec
    from core.store.selection import Selection

NAME = "replication"
RUN_PREFIX = "run:"
"""``--against run:OTHER`` names a run; a bare name, a reference set."""
OWN_DELTA = VARIANTS[0][3]
"""The Δ row compared: own judgments, by t (the paper's Δ)."""
MEASURES = ("delta_lab", "delta_ref", "delta_diff", "delta_overlap", "mean6_lab", "mean6_ref",
            "mean6_diff")
"""The table's measures, one column each, in order."""
HEADERS = (("delta_lab", "Δ lab"), ("delta_ref", "Δ ref"), ("delta_diff", "Δ diff"),
           ("delta_overlap", "overlap"), ("mean6_lab", "mean6 lab"),
           ("mean6_ref", "mean6 ref"), ("mean6_diff", "mean6 diff"))
_LineKey = tuple[object, ...]


@dataclass(frozen=True)
class Against:
    """What lab's numbers are compared with.

    Attributes:
        name: a reference set's name, or a run's (`run`).
        run: whether `name` is a run.
        split: the split every run is compared with (None: each run's own name).
    """

    name: str
    run: bool = False
    split: str | None = None

    @property
    def label(self) -> str:
        """As ``--against`` takes it."""
        if self.run:
            return RUN_PREFIX + self.name
        return self.name + (f"/{self.split}" if self.split else "")


def parse_against(text: str) -> Against:
    """``NAME``, ``NAME/SPLIT`` or ``run:OTHER`` (see the module docstring).

    Raises:
        ConfigError: an empty name or split.
    """
    if text.startswith(RUN_PREFIX):
        run = text[len(RUN_PREFIX):]
        if not run.strip():
            raise ConfigError(f"--against {text!r}: name the run, e.g. run:test300")
        return Against(run, run=True)
    name, slash, split = text.partition("/")
    if not name.strip() or (slash and not split.strip()):
        raise ConfigError(f"--against {text!r}: give NAME, NAME/SPLIT or run:OTHER, e.g. "
                          f"--against paper or --against paper/test300")
    return Against(name, split=split or None)


@dataclass(frozen=True)
class _Ref:
    """One reference line: Δ with its interval, mean6 with its interval (NaN where none),
    and where it came from."""

    delta: float
    delta_low: float
    delta_high: float
    mean6: float
    mean6_low: float
    mean6_high: float
    source: str
    n_delta: int = 0
    n_mean6: int = 0
    unit_delta: str = ""
    unit_mean6: str = ""


def _line_key(r: Row) -> _LineKey:
    return (r.model, r.label, r.condition_hash, r.budget, r.dataset, r.question_set, r.runs,
            r.seeds, r.replicates)


def _lab_lines(db: Database, selection: Selection, spec: ResultsSpec,
               frames: Frames | None) -> tuple[dict[_LineKey, dict[str, Row]], Results | None]:
    """Lab's Δ row and mean6 row of every line of `selection`, and the success results
    they came from (None when the selection holds no episode).

    The Δ row is the delta table's own (`results_for`, so the two tables cannot
    disagree), on the five failure regimes whatever ``spec.delta_regimes`` says: the
    paper's Δ pools those."""
    from analysis.measures.frames import load_frames
    from analysis.tables.results import results_for

    frames = frames if frames is not None else load_frames(db, selection)
    if not frames.n_episodes:
        return {}, None
    lines: dict[_LineKey, dict[str, Row]] = {}
    delta = results_for(db, selection, "delta", replace(spec, delta_regimes=DELTA_FAILURE),
                        frames).table("delta")
    for r in delta.rows if delta else ():
        if r.measure == "delta" and r.scope == OWN_DELTA and r.regimes \
                and r.family == MAIN_FAMILY:
            lines.setdefault(_line_key(r), {})["delta"] = r
    success = results_for(db, selection, "success", spec, frames)
    table = success.table("success")
    for r in table.rows if table else ():
        if r.scope == MEAN6_LABEL:
            lines.setdefault(_line_key(r), {})["mean6"] = r
    return lines, success


def _ref_of_rows(rows: Mapping[str, Row], source: str) -> _Ref:
    nan = math.nan
    d, m = rows.get("delta"), rows.get("mean6")
    return _Ref(d.estimate if d else nan, d.ci_low if d else nan, d.ci_high if d else nan,
                m.estimate if m else nan, m.ci_low if m else nan, m.ci_high if m else nan,
                source, d.n if d else 0, m.n if m else 0, d.unit if d else "",
                m.unit if m else "")


def overlap(low_a: float, high_a: float, low_b: float, high_b: float) -> bool | None:
    """Whether two closed intervals share a point; None when a bound is missing."""
    if any(math.isnan(x) for x in (low_a, high_a, low_b, high_b)):
        return None
    return low_a <= high_b and low_b <= high_a


def _rows(base: Row, lab: Mapping[str, Row], ref: _Ref | None, label: str) -> list[Row]:
    """The line's rows, one per measure it has (a missing one prints as –)."""
    nan = math.nan
    blank = replace(base, estimate=nan, ci_low=nan, ci_high=nan, p=nan, p_holm=nan, holm_m=0,
                    judgments="", detail="", n=0, unit="")
    out: list[Row] = []
    for what in ("delta", "mean6"):
        own = lab.get(what)
        cover = replace(blank, regimes=own.regimes) if own else blank
        if own is not None:
            out.append(replace(own, measure=f"{what}_lab", scope="lab", p=nan, p_holm=nan,
                               holm_m=0))
        if ref is None:
            continue
        est = ref.delta if what == "delta" else ref.mean6
        low, high = ((ref.delta_low, ref.delta_high) if what == "delta" else
                     (ref.mean6_low, ref.mean6_high))
        if math.isnan(est):
            continue
        out.append(replace(cover, measure=f"{what}_ref", scope=label, estimate=est, ci_low=low,
                           ci_high=high, detail=ref.source,
                           n=ref.n_delta if what == "delta" else ref.n_mean6,
                           unit=ref.unit_delta if what == "delta" else ref.unit_mean6))
        if own is None or math.isnan(own.estimate):
            continue
        out.append(replace(cover, measure=f"{what}_diff", scope=f"lab − {label}",
                           estimate=own.estimate - est))
        if what == "delta":
            shared = overlap(own.ci_low, own.ci_high, low, high)
            if shared is not None:
                out.append(replace(cover, measure="delta_overlap", scope=f"lab vs {label}",
                                   detail="yes" if shared else "no"))
    return out


def _base(lab: Mapping[str, Row]) -> Row:
    return lab["delta"] if "delta" in lab else lab["mean6"]


def _published(db: Database, against: Against, ref: ReferenceSet,
               lines: Mapping[_LineKey, Mapping[str, Row]]
               ) -> tuple[dict[_LineKey, _Ref], list[str]]:
    """Each line's published value, and notes (values no line matched)."""
    values = reference_values(db, against.name)
    by_cell = {(v.split, v.model, v.arm): v for v in values}
    matched: dict[_LineKey, _Ref] = {}
    used: set[tuple[str, str, str]] = set()
    splits: set[str] = set()
    for key, lab in lines.items():
        base = _base(lab)
        split = against.split or base.runs
        splits.add(split)
        cell = (split, base.model, base.label)
        v = by_cell.get(cell)
        if v is None or base.budget != ref.budget or base.dataset != ref.dataset:
            continue
        used.add(cell)
        nan = math.nan
        matched[key] = _Ref(v.delta, v.ci_low, v.ci_high, nan if v.mean6 is None else v.mean6,
                            nan, nan, f"{against.name}: {v.source_key}")
    left = [v for v in values if v.split in splits and (v.split, v.model, v.arm) not in used]
    notes = []
    if left:
        shown = ", ".join(f"{v.split}/{v.model} {v.arm}" for v in left[:6])
        notes.append(f"{len(left)} published value(s) of {against.name} have no line here: "
                     f"{shown}{' …' if len(left) > 6 else ''}")
    return matched, notes


def _other_run(db: Database, against: Against, selection: Selection, spec: ResultsSpec,
               lines: Mapping[_LineKey, Mapping[str, Row]]) -> dict[_LineKey, _Ref]:
    """Each line's match among run OTHER's lines (model, arm, budget, dataset, set; seed
    and replicate too where OTHER has several such lines)."""
    other, _ = _lab_lines(db, replace(selection, runs=(against.name,)), spec, None)
    exact: dict[tuple[object, ...], Mapping[str, Row]] = {}
    loose: dict[tuple[object, ...], list[Mapping[str, Row]]] = {}
    for found in other.values():
        b = _base(found)
        wide = (b.model, b.label, b.budget, b.dataset, b.question_set)
        exact[(*wide, b.seeds, b.replicates)] = found
        loose.setdefault(wide, []).append(found)
    matched: dict[_LineKey, _Ref] = {}
    for key, lab in lines.items():
        b = _base(lab)
        wide = (b.model, b.label, b.budget, b.dataset, b.question_set)
        rows: Mapping[str, Row] | None = exact.get((*wide, b.seeds, b.replicates))
        if rows is None and len(loose.get(wide, ())) == 1:
            rows = loose[wide][0]
        if rows is not None:
            matched[key] = _ref_of_rows(rows, f"run {against.name}")
    return matched


def _notes(against: Against | None, ref: ReferenceSet | None) -> list[str]:
    lines = ["Δ: lab's own-judgment time-matched contrast (own judgments, by t) on the five "
             "failure regimes, as the paper pools them (clean left out); mean6: success "
             "averaged over the six regimes (– if one is missing). diff = lab − reference; "
             "overlap: whether the two 95% intervals share a point."]
    if against is None:
        return lines
    if against.run:
        lines.append(f"reference: run {against.name}, computed as lab's (its line of the same "
                     "model, arm, budget, dataset and question set); – : no such line")
    elif ref is not None:
        split = f"split {against.split}" if against.split else "the split named as the run"
        lines.append(f"reference: {ref.name} ({ref.file}, sha256 {ref.sha256[:12]}; "
                     f"{ref.license}): the published value of {split}, model and arm, where "
                     f"the line's budget is {ref.budget} and dataset {ref.dataset}; – : none")
    return lines


def _no_reference(db: Database, against: Against | None) -> tuple[Against | None,
                                                                   ReferenceSet | None, str]:
    """The reference set `against` names (the first imported when None), or why none."""
    if against is not None and against.run:
        from core.store.runs import run_names

        names = run_names(db)
        if against.name not in names:
            return against, None, (f"no run '{against.name}' to compare with (runs: "
                                   f"{', '.join(names) or 'none'})")
        return against, None, ""
    sets = reference_sets(db)
    if against is None:
        if not sets:
            return None, None, ("no reference to compare with: import the paper's values with "
                                "`lab data import paper-values FILE`, or compare with another "
                                "run: lab results replication --run R --against run:OTHER")
        against = Against(sets[0].name)
    ref = reference_set(db, against.name)
    if ref is None:
        return against, None, (f"no reference set '{against.name}' (imported: "
                               f"{', '.join(s.name for s in sets) or 'none'}; a run is "
                               f"run:NAME)")
    return against, ref, ""


def replication_results(db: Database, selection: Selection, spec: ResultsSpec,
                        frames: Frames | None = None) -> Results:
    """The replication table of `selection` against `spec.against` (see the module
    docstring; None: the first imported reference set).

    Returns:
        Results holding table "replication"; without a reference, or when no line has
        one, the table's first note says why (`unmatched`).

    Raises:
        ConfigError: an `against` that does not parse.
    """
    against = parse_against(spec.against) if spec.against else None
    against, ref, why = _no_reference(db, against)
    title = f"Replication: lab beside {against.label if against else 'a reference'}"
    if why:
        return Results((Table(NAME, title, (), (why, *_notes(against, ref))),), (), (), (), 0,
                       ())
    assert against is not None
    lines, success = _lab_lines(db, selection, spec, frames)
    extra: list[str] = []
    if against.run:
        lines = {k: v for k, v in lines.items() if _base(v).runs != against.name}
        matched = _other_run(db, against, selection, spec, lines)
    else:
        assert ref is not None
        matched, extra = _published(db, against, ref, lines)
    # measure-major, so the columns come in MEASURES order whichever line has a reference
    rows = sorted((row for key, lab in lines.items()
                   for row in _rows(_base(lab), lab, matched.get(key), against.label)),
                  key=lambda r: MEASURES.index(r.measure))
    notes = _notes(against, ref) + extra
    if not matched:
        runs = sorted({_base(v).runs for v in lines.values()})
        notes.insert(0, _unmatched_line(db, against, ref, runs))
    table = Table(NAME, title, tuple(rows), tuple(notes), "wide", ("delta_lab", "delta_ref",
                  "mean6_lab", "mean6_ref"), (("delta_diff", "+.3f"), ("mean6_diff", "+.3f")),
                  HEADERS, success.pooled if success else "")
    if success is None:
        return Results((table,), (), (), (), 0, ())
    return Results((table,), (), (), (), success.errored, success.runs, success.pooled,
                   success.apart, success.repaired)


def _unmatched_line(db: Database, against: Against, ref: ReferenceSet | None,
                    runs: Sequence[str]) -> str:
    """Why no line of `runs` has a reference value."""
    shown = ", ".join(runs) or "none"
    if against.run and not runs:
        return (f"the selection holds no run but {against.name}, the reference: name the run "
                f"to compare with it, e.g. --run R --against run:{against.name}")
    if against.run:
        return (f"no line of run(s) {shown} has a line of run {against.name} with the same "
                "model, arm, budget, dataset and question set")
    assert ref is not None
    splits = ref.splits.replace(",", ", ")
    hint = (f"; compare with a split by --against {ref.name}/SPLIT" if not against.split
            else "")
    return (f"no line of run(s) {shown} matches a published value of {against.label} "
            f"(splits {splits}; budget {ref.budget}, dataset {ref.dataset}){hint}")


def unmatched(table: Table) -> str | None:
    """Why table "replication" holds no reference value (its first note), else None."""
    if any(r.measure in ("delta_ref", "mean6_ref") for r in table.rows):
        return None
    return table.notes[0] if table.notes else "no reference value"
