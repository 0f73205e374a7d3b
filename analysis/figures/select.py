"""Which rows a figure draws by default: a paper figure shows one declared selection, not
everything a lab.db holds.

By default only the confirmatory runs (those an amendment governs) are drawn, at the
primary budget (the smallest), in one regime family (the main one when present); a
study with no confirmatory run draws its exploratory runs and says so in the caption.
The second seed's trace states are never governed, so they are drawn beside either.
`--run`, `--budgets` and `--family` widen or change each choice. The rows kept are the
rows `lab results --format json` prints, unchanged: a filter only leaves rows out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from analysis.figures.base import family as _family
from analysis.figures.study import RowDict, StudyRows
from core.regimes import MAIN_FAMILY

EXPLORATORY = "exploratory"
"""A row's amendment field when no amendment governs its runs."""
ALL = "all"
CHOSEN_FROM = ("success",)
"""The table computed beside a figure's own to choose the declared selection from: the
success table has a row for each cell of the selection's finished episodes (model, arm,
regime, budget, run), so the budgets, family and runs chosen for one figure are those
chosen when every table is computed (the other episode tables and the tables on probes
hold rows of the same cells; the trace tables choose nothing)."""
COMPARES_BUDGETS = frozenset({"budgets"})
"""Tables whose rows compare budgets (a row's budget is the smaller one): never filtered
by budget."""


def _action_budgets(table: str) -> bool:
    """Whether a table's budget field is the episodes' action budget (the trace tables'
    is the retrieval budget their sweep varies; the budgets table compares two)."""
    from analysis.tables.registry import TRACES, table_def

    if table in COMPARES_BUDGETS:
        return False
    try:
        return table_def(table).family != TRACES
    except KeyError:  # the sweeps of the trace study, or a table not registered
        return not table.startswith("trace_")


def _trace_table(table: str) -> bool:
    """Whether a table reads the second seed's trace states, which no amendment governs:
    a study's confirmatory runs do not hide them."""
    from analysis.tables.registry import TRACES, table_def

    try:
        return table_def(table).family == TRACES
    except KeyError:
        return table.startswith("trace_")


@dataclass(frozen=True)
class Declared:
    """What the figures draw.

    Attributes:
        budgets: the budgets drawn; () for the primary one (the smallest of the study).
        all_budgets: every budget (`--budgets all`).
        family: the regime family ("main", "plausible", …), "" for the main one when the
            study has it (else the first), or ALL.
        runs_named: the user named the runs (`--run`): draw them, confirmatory or not.
    """

    budgets: tuple[int, ...] = ()
    all_budgets: bool = False
    family: str = ""
    runs_named: bool = False


DEFAULT = Declared()
"""Confirmatory runs, primary budget, main family."""


@dataclass(frozen=True)
class Chosen:
    """The selection a study's figures were drawn on, for the caption.

    Attributes:
        exploratory: no row drawn comes from a confirmatory run.
        budgets: the budgets drawn.
        family: the family drawn ("" when the rows have none, "all" for every one).
    """

    exploratory: bool
    budgets: tuple[int, ...]
    family: str


def _exploratory(row: RowDict) -> bool:
    """Whether no amendment governs the row's runs."""
    return row.get("amendment") in (None, "", EXPLORATORY)


def declare(study: StudyRows, declared: Declared) -> tuple[StudyRows, Chosen]:
    """The study with only the declared rows, and what was chosen.

    Args:
        study: every row of the selection (`study_rows`).
        declared: the budgets, family and runs asked for.

    Returns:
        (the filtered study, the choice made).
    """
    every = [r for rows in study.rows.values() for r in rows]
    confirmatory = [r for r in every if "amendment" in r and not _exploratory(r)]
    keep_confirmatory = bool(confirmatory) and not declared.runs_named
    pool = confirmatory if keep_confirmatory else every
    budgets = sorted({int(r["budget"]) for t, rows in study.rows.items() for r in rows
                      if _action_budgets(t) and r.get("budget") not in (None, "")
                      and (not keep_confirmatory or not _exploratory(r))})
    if declared.all_budgets:
        chosen_budgets = tuple(budgets)
    else:
        chosen_budgets = declared.budgets or tuple(budgets[:1])
    families = list(dict.fromkeys(_family(r) for r in pool if _family(r)))
    if declared.family:
        family = declared.family
    else:
        family = MAIN_FAMILY if MAIN_FAMILY in families else (families[0] if families else "")

    budgeted = {t: _action_budgets(t) for t in study.rows}
    governed = {t: not _trace_table(t) for t in study.rows}

    def kept(table: str, row: RowDict) -> bool:
        if keep_confirmatory and governed[table] and "amendment" in row and _exploratory(row):
            return False
        if (budgeted[table] and row.get("budget") not in (None, "")
                and int(row["budget"]) not in chosen_budgets):
            return False
        fam = _family(row)  # a row pooling families by design (Table 17's mean4) is
        # drawn with any of them
        return not (family and family != ALL and fam and family not in fam.split(","))

    rows = {t: [r for r in rs if kept(t, r)] for t, rs in study.rows.items()}
    drawn = [r for rs in rows.values() for r in rs]
    flags = [_exploratory(r) for r in drawn if "amendment" in r]
    exploratory = bool(flags) and all(flags)
    return replace(study, rows=rows), Chosen(exploratory, chosen_budgets, family)
