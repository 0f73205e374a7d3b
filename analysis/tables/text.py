"""Aligned text tables in the paper's conventions: ``+0.33 [+0.25, +0.41]``, "–" when
undefined, "∞" for an infinite estimate. Only formatting: no statistics here.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from analysis.base.arms import ArmKey
from analysis.base.rows import ENDED_FIELDS, Row, Table
from analysis.measures.results import Results
from analysis.tables.fit import GAP, abbreviation_lines, blocks, canonical_columns, wrap_line
from core.end_reasons import apart_text
from core.regimes import FAILURE_REGIMES, MEAN6, short_regime

DASH = "–"
NOTE_WIDTH = 100
UNSIGNED = frozenset({
    "success", "h45", "h12", "hazard",
    # the second seed's tables and the controllers: levels, not differences
    "OA", "CA", "coverage", "cost", "abstain", "escalate", "risk", "aurc", "ece", "ece_raw",
    "ece_cal", "top_share", "top_raw", "top_accuracy", "top_cal", "helpful", "harmful",
    "bin_confidence", "bin_accuracy", "fit_record", "map",
    # the replication table's success levels (its Δ columns and differences are signed)
    "mean6_lab", "mean6_ref"})
"""Measures that are levels (probabilities, rates, means), printed without a sign."""
DIFFERENCE = " − "
_ENDED_WORDS = {"truncated": "generation cut at max_tokens", "refused": "refusal"}
"""What each ENDED_FIELDS column counts, in the note under a table that has it."""
"""In an arm label, marks a row of differences ("Calibrated − Raw"): signed, whatever
its measure."""


def _clean(x: float) -> float:
    return 0.0 if abs(x) < 1e-12 else x


def fmt_number(x: float | None, spec: str = ".2f", signed: bool = False) -> str:
    """Format one number; "–" for None/NaN, "∞" for infinity.

    Args:
        x: the number.
        spec: format spec, e.g. ".2f" or "d".
        signed: always print the sign (differences).

    Returns:
        The text.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if isinstance(x, float) and math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if spec.endswith("d"):
        return format(round(x), ("+" if signed else "") + spec)
    return format(_clean(float(x)), ("+" if signed else "") + spec)


def fmt_interval(estimate: float, low: float, high: float, digits: int = 2,
                 signed: bool = True) -> str:
    """``+0.33 [+0.25, +0.41]``; the estimate alone when no interval; "–" when undefined.

    Args:
        estimate: point estimate.
        low: lower bound.
        high: upper bound.
        digits: decimals.
        signed: print signs (differences) or not (probabilities).

    Returns:
        The text.
    """
    spec = f".{digits}f"
    est = fmt_number(estimate, spec, signed)
    if est == DASH or low is None or high is None or math.isnan(low) or math.isnan(high):
        return est
    return f"{est} [{fmt_number(low, spec, signed)}, {fmt_number(high, spec, signed)}]"


def align(header: Sequence[str], body: Sequence[Sequence[str]],
          right: Sequence[int]) -> list[str]:
    """Align columns: numbers (the `right` columns) right, text left.

    Args:
        header: column names.
        body: rows of cells.
        right: indices of right-aligned columns.

    Returns:
        Lines: header, a rule, then the rows.
    """
    widths = [max(len(str(c)) for c in col) for col in zip(header, *body)]

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if i in right else c.ljust(w)
               for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(out).rstrip()

    return [line(header), "  ".join("─" * w for w in widths), *map(line, body)]


ROW_NUMBER = -1
"""The column index `Fitted.blocks` gives the row-number column ("#")."""


@dataclass(frozen=True)
class Block:
    """Where one block of a fitted table sits in its lines.

    Attributes:
        line: the index of the block's header line (its rule follows, then one line per
            body row, in body order).
        columns: the table's column indexes the block shows, in order (`ROW_NUMBER` for
            the row-number column).
        starts: the character offset where each of those columns starts.
        widths: each one's width.
    """

    line: int
    columns: tuple[int, ...]
    starts: tuple[int, ...]
    widths: tuple[int, ...]


@dataclass(frozen=True)
class Fitted:
    """A table aligned and split into blocks no wider than a width, and where each cell
    went (so a console can point at a row or a cell of the text).

    Attributes:
        lines: the aligned lines (per block: header, rule, rows; a blank line between).
        blocks: each block's place and columns.
        numbered: whether the rows carry numbers (`#`) instead of repeating their key
            columns in every block: the first block, which shows every key column, is
            then the legend of the numbers.
    """

    lines: list[str]
    blocks: tuple[Block, ...]
    numbered: bool


def _repeated(widths: Sequence[int], body: Sequence[Sequence[str]], keys: int,
              width: int | None, together: Sequence[Sequence[int]]) -> list[int] | None:
    """The key columns every block after the first repeats so that each row tells itself
    apart there: all of them when they fit beside the widest column group, else those
    whose values differ between rows; None when even those leave no room (then rows are
    numbered)."""
    if width is None or sum(widths) + GAP * (len(widths) - 1) <= width:
        return list(range(keys))
    inside = {i for g in together for i in g}
    groups = [list(g) for g in together] + [[i] for i in range(keys, len(widths))
                                            if i not in inside]
    widest = max((sum(GAP + widths[i] for i in g) for g in groups), default=0)
    every = list(range(keys))
    varying = [i for i in every if len({row[i] for row in body}) > 1]
    for head in (every, varying):
        if sum(widths[i] for i in head) + GAP * (len(head) - 1) + widest <= width:
            return head
    return every if not varying else None


def fit(header: Sequence[str], body: Sequence[Sequence[str]], right: Sequence[int],
        keys: int, width: int | None, together: Sequence[Sequence[int]] = ()) -> Fitted:
    """`align`, split into blocks of columns no wider than `width` when it is given, a
    blank line between blocks, every row identifiable in every block: each block repeats
    the `keys` first columns (model, arm, and what else tells the rows apart) when they
    fit, else those of them that vary between rows; when even these leave no room, each
    row gets a number (`#`) shown in every block, and the first block, which shows every
    key column, is its legend.

    Args:
        header: column names.
        body: rows of cells.
        right: indices of right-aligned columns.
        keys: leading columns that identify a row.
        width: the widest a line may be (None: one block).
        together: groups of columns kept in one block (an interval and its p).

    Returns:
        The lines and where each block sits.
    """
    widths = [max(len(str(c)) for c in col) for col in zip(header, *body)]
    repeat = _repeated(widths, body, keys, width, together)
    numbered = repeat is None
    columns = list(range(len(header)))
    if numbered:  # the row number becomes column 0, every other one moves right by one
        header = ["#", *header]
        body = [[str(n), *row] for n, row in enumerate(body, 1)]
        widths = [max(len(header[0]), len(body[-1][0]) if body else 1), *widths]
        right = [0, *(i + 1 for i in right)]
        together = [[i + 1 for i in g] for g in together]
        columns = [ROW_NUMBER, *columns]
        plan = blocks(widths, keys + 1, width, together, [0])
    else:
        plan = blocks(widths, keys, width, together, repeat)
    lines: list[str] = []
    placed = []
    for cols in plan:
        lines += [""] if lines else []
        ws = [widths[i] for i in cols]
        starts = [sum(ws[:k]) + GAP * k for k in range(len(cols))]
        placed.append(Block(len(lines), tuple(columns[i] for i in cols), tuple(starts),
                            tuple(ws)))
        lines += align([header[i] for i in cols], [[row[i] for i in cols] for row in body],
                       [k for k, i in enumerate(cols) if i in right])
    return Fitted(lines, tuple(placed), numbered)


def _signed(r: Row) -> bool:
    if DIFFERENCE in r.label:
        return True
    return r.measure not in UNSIGNED and "@" not in r.measure  # "success@8": a level


def regimes_text(regimes: str) -> str:
    """What a row's comma-separated regimes read as in a table.

    Args:
        regimes: `Row.regimes`.

    Returns:
        "mean6 (6)", "mean6 failure (5)", or the short names joined by "+".
    """
    names = tuple(r for r in regimes.split(",") if r)
    if set(names) == set(MEAN6):
        return "mean6 (6)"
    if set(names) == set(FAILURE_REGIMES):
        return "mean6 failure (5)"
    return "+".join(short_regime(r) for r in canonical_columns(names)) or DASH


_DIMENSIONS = (("budget", "budget"), ("dataset", "dataset"), ("question_set", "set"),
               ("runs", "run"), ("seeds", "seed"), ("replicates", "rep"))
"""(Row attribute, column header) of what a row covers besides model and arm."""


def _columns(rows: Sequence[Row], by_scope: bool) -> tuple[list[tuple[str, str]], list[str]]:
    """The covering dimensions that vary among rows (columns), and the constant ones as
    header text (e.g. "dataset demo", "seed 0")."""
    varying, constant = [], []
    for attr, header in _DIMENSIONS:
        values = {str(getattr(r, attr)) for r in rows}
        if len(values) > 1:
            varying.append((attr, header))
        elif attr != "budget" and values != {""}:
            constant.append(f"{header} {values.pop()}")
    if not by_scope and len({regimes_text(r.regimes) for r in rows}) > 1:
        varying.append(("regimes", "regimes"))
    return varying, constant


def _arm_cells(r: Row, varying: Sequence[tuple[str, str]]) -> list[str]:
    """Model, arm and the varying dimensions' values; "–" where a row has none (imported
    released episodes belong to no question set)."""
    cells = [r.model, r.label]
    for attr, _ in varying:
        cells.append(regimes_text(r.regimes) if attr == "regimes"
                     else str(getattr(r, attr)) or DASH)
    return cells


def _wide_cell(table: Table, r: Row | None, column: str, formats: dict[str, str],
               by_scope: bool) -> str:
    if r is None:
        return DASH
    if math.isnan(r.estimate) and r.detail and not r.unit and column not in table.ci_columns:
        return r.detail  # a text cell, e.g. "expected: positive"
    if column in table.ci_columns:  # p and Holm have columns of their own (`_p_columns`)
        return fmt_interval(r.estimate, r.ci_low, r.ci_high, 2, _signed(r))
    spec = formats.get(column, ".3f" if by_scope else ".2f")
    return fmt_number(r.estimate, spec, _signed(r) and by_scope)


def _line_errored(rows: Sequence[Row], by_scope: bool, field: str = "errored") -> int:
    """Errored episodes of one line (or another count of its episodes, `field`: the
    ENDED_FIELDS): per-regime rows add up; rows of one group share."""
    singles = [r for r in rows if "," not in r.regimes]
    if by_scope and singles:
        return sum(getattr(r, field) for r in singles)
    return max(getattr(r, field) for r in rows)


def _ended_columns(rows: Sequence[Row]) -> list[str]:
    """The ENDED_FIELDS some row counts (a column each, after errored): a table of
    episodes that all answered, ran out or failed the format shows none."""
    return [f for f in ENDED_FIELDS if any(getattr(r, f) for r in rows)]


def _by_scope(table: Table) -> bool:
    return table.layout == "wide" and len({r.measure for r in table.rows}) == 1


def _p_columns(table: Table, column: str, rows: Sequence[Row]) -> list[str]:
    """"p" and/or "Holm" when a row of this interval column has them (printed beside the
    interval, not in its cell, so no cell is wider than a narrow terminal needs)."""
    if column not in table.ci_columns:
        return []
    return [name for name, attr in (("p", "p"), ("Holm", "p_holm"))
            if any(not math.isnan(getattr(r, attr)) for r in rows)]


@dataclass(frozen=True)
class WideCells:
    """A wide table's cells as text, before alignment (the terminal aligns them, the
    report lays them out as HTML).

    Attributes:
        header: the column headers.
        body: one list of cells per line (group).
        n_text: how many leading columns are text (model, arm, what varies); the others
            are numbers.
        together: column ranges kept in one block when the table is split (an interval
            and its p columns).
        lines: per line, the rows it shows (what the line covers: runs, amendment).
    """

    header: list[str]
    body: list[list[str]]
    n_text: int
    together: list[range]
    lines: list[list[Row]]


def wide_cells(table: Table) -> WideCells:
    """A wide table's cells: one line per group, one column per measure (or scope).

    Args:
        table: a results table.

    Returns:
        The header, the lines' cells and which columns are numbers.
    """
    rows = table.rows
    by_scope = _by_scope(table)
    key = (lambda r: r.scope) if by_scope else (lambda r: r.measure)
    columns = list(dict.fromkeys(key(r) for r in rows))
    if by_scope:
        columns = canonical_columns(columns)
    varying, _ = _columns(rows, by_scope)
    errored = any(r.errored for r in rows)
    formats = dict(table.formats)
    lines: dict[object, dict[str, Row]] = {}
    for r in rows:
        # one line per group; per-regime columns (by_scope) never pool regimes themselves
        lines.setdefault(r.line_key(family=not by_scope), {})[key(r)] = r
    header = ["model", "arm"] + [h for _, h in varying]
    names = dict(table.headers)
    p_cols = {c: _p_columns(table, c, [r for r in rows if key(r) == c]) for c in columns}
    several = sum(bool(v) for v in p_cols.values()) > 1
    together = []
    for c in columns:
        head = short_regime(c) if by_scope else names.get(c, c)
        together.append(range(len(header), len(header) + 1 + len(p_cols[c])))
        header += [head] + [f"{p} {head}" if several else p for p in p_cols[c]]
    header += ["errored"] if errored else []
    ended = _ended_columns(rows)
    header += ended
    body = []
    for cells in lines.values():
        first = next(iter(cells.values()))
        line = _arm_cells(first, varying)
        for c in columns:
            cell = cells.get(c)
            line.append(_wide_cell(table, cell, c, formats, by_scope))
            line += [DASH if cell is None else
                     fmt_number(cell.p if p == "p" else cell.p_holm, ".3f") for p in p_cols[c]]
        if errored:
            line.append(str(_line_errored(list(cells.values()), by_scope)))
        line += [str(_line_errored(list(cells.values()), by_scope, f)) for f in ended]
        body.append(line)
    return WideCells(header, body, 2 + len(varying), together,
                     [list(cells.values()) for cells in lines.values()])


def _constant_kind(table: Table) -> tuple[str, str] | None:
    """(measure, scope) shared by every row of a long table of several rows, else None:
    then the covers line names them once instead of two columns repeating them."""
    kinds = {(r.measure, r.scope) for r in table.rows}
    return next(iter(kinds)) if len(kinds) == 1 and len(table.rows) > 1 else None


@dataclass(frozen=True)
class LongCells:
    """A long table's cells as text, before alignment.

    Attributes:
        header: the column headers.
        body: one list of cells per row.
        right: the right-aligned (number) columns.
        keys: how many leading columns tell a row apart (model, arm, what varies, and
            measure and scope when they differ between rows).
    """

    header: list[str]
    body: list[list[str]]
    right: tuple[int, ...]
    keys: int = 2


def long_cells(table: Table) -> LongCells:
    """A long table's cells, one line per row of `table`."""
    varying, _ = _columns(table.rows, False)
    errored = any(r.errored for r in table.rows)
    ended = _ended_columns(table.rows)
    kind = [] if _constant_kind(table) else ["measure", "scope"]
    header = ["model", "arm"] + [h for _, h in varying] + kind + [
        "estimate [95% CI]", "n", "detail"] + (["errored"] if errored else []) + ended
    body = [_arm_cells(r, varying) + ([r.measure, r.scope] if kind else []) + [
        fmt_interval(r.estimate, r.ci_low, r.ci_high, 2, _signed(r)),
        str(r.n), r.detail] + ([str(r.errored)] if errored else [])
        + [str(getattr(r, f)) for f in ended] for r in table.rows]
    n_idx = header.index("n")
    counts = int(errored) + len(ended)
    right = (n_idx - 1, n_idx) + tuple(range(len(header) - counts, len(header)))
    return LongCells(header, body, right, header.index("estimate [95% CI]"))


def header_lines(table: Table) -> list[str]:
    """What every row of the table covers and pools, printed under its title.

    Args:
        table: a results table.

    Returns:
        Lines: the constant dimensions and regimes ("covers: …"), and what was pooled.
    """
    if not table.rows:
        return []
    by_scope = _by_scope(table)
    varying, constant = _columns(table.rows, by_scope)
    # rows not formed from episodes (the second seed's trace tables) have no seeds,
    # replicates or regimes to cover or split by
    episodic = any(r.regimes or r.seeds or r.replicates for r in table.rows)
    if episodic and not by_scope and "regimes" not in {a for a, _ in varying}:
        constant.append(f"regimes {regimes_text(table.rows[0].regimes)}")
    kind = _constant_kind(table) if table.layout != "wide" else None
    if kind is not None:
        constant += [f"measure {kind[0]}", f"scope {kind[1]}"]
    lines = [f"covers: {' · '.join(constant)}"] if constant else []
    split = "model × arm × budget × dataset × question set × run" + (
        (" × seed × replicate" + ("" if by_scope else " × regime family")) if episodic else "")
    if table.pooled:
        lines.append(f"pooled: {table.pooled} (each row lists the values it covers)")
    else:
        lines.append(f"pooled: nothing (one row per {split})")
    return lines


def judgment_lines(table: Table) -> list[str]:
    """Where each group's side-channel judgments came from (the rows' ``judgments``).

    One line per group that read judgments: the text its rows share, or, where its
    measures count different judgments (the judgments table), the text of the row with
    the largest n and that row's measure (every row's is in the CSV and JSON).

    Args:
        table: a results table.

    Returns:
        A heading and one line per group, or none when no row read judgments.
    """
    by_group: dict[object, list[Row]] = {}
    for r in table.rows:
        if r.judgments:
            by_group.setdefault(r.key(), []).append(r)
    if not by_group:
        return []
    varying, _ = _columns(table.rows, _by_scope(table))
    lines = ["judgments (side_channel: asked in-run; replay: lab replay judgments):"]
    for rows in by_group.values():
        top = max(rows, key=lambda r: r.n)
        label = " · ".join(_arm_cells(top, varying))
        several = len({r.judgments for r in rows}) > 1
        lines.append(f"  {label}: {top.judgments}" + (f" ({top.measure}; each row's in the "
                                                      "CSV/JSON)" if several else ""))
    return lines


def warning_lines(table: Table) -> list[str]:
    """A warning under a table whose rows left errored episodes out, and a note under
    one whose rows hold episodes that ended truncated or refused.

    Args:
        table: a results table.

    Returns:
        A line each, or none when every row's errored and ENDED_FIELDS counts are 0.
    """
    hit = [r for r in table.rows if r.errored]
    out = []
    if hit:
        groups = {r.key() for r in hit}
        out.append(f"  warning: {len(groups)} row group(s) leave out errored episodes that "
                   "have no complete retry (errored column); `lab status` shows how to "
                   "retry them")
    ended = _ended_columns(table.rows)
    if ended:
        groups = {r.key() for r in table.rows if any(getattr(r, f) for f in ended)}
        out.append(f"  note: {len(groups)} row group(s) hold episodes that ended with a "
                   f"{' or a '.join(_ENDED_WORDS[f] for f in ended)} ({', '.join(ended)} "
                   "column): complete, in the estimate as not answering; neither format "
                   "failures nor errors")
    return out


def abbreviations(table: Table) -> list[tuple[str, str]]:
    """(short, full) of every short name the table's text shows: regime columns and
    regime lists (pers., rec2, late3 …), measure headers (med.act, c.read …), `rep`.

    Args:
        table: a results table.

    Returns:
        The pairs, in the order they appear (a name that is not short is left out
        later, by `fit.abbreviation_lines`).
    """
    rows = table.rows
    by_scope = _by_scope(table)
    regimes = [g for r in rows for g in r.regimes.split(",") if g]
    if by_scope:
        regimes += [r.scope for r in rows]
    pairs = [(short_regime(g), g) for g in canonical_columns(list(dict.fromkeys(regimes)))]
    if table.layout == "wide" and not by_scope:
        names = dict(table.headers)
        pairs += [(names[m], m) for m in dict.fromkeys(r.measure for r in rows) if m in names]
    if any(str(r.replicates) for r in rows):
        pairs.append(("rep", "replicate"))
    return pairs


@dataclass(frozen=True)
class Cells:
    """A table's cells in either layout, as `fit` takes them.

    Attributes:
        header: the column headers.
        body: one list of cells per line of the table.
        right: the right-aligned (number) columns.
        keys: how many leading columns tell a line apart.
        together: column groups never split between blocks.
    """

    header: list[str]
    body: list[list[str]]
    right: tuple[int, ...]
    keys: int
    together: tuple[tuple[int, ...], ...] = ()


def table_cells(table: Table) -> Cells:
    """The cells `render_table` lays out (`wide_cells` or `long_cells`).

    Args:
        table: a results table with rows.

    Returns:
        Its cells.
    """
    if table.layout == "wide":
        wide = wide_cells(table)
        return Cells(wide.header, wide.body, tuple(range(wide.n_text, len(wide.header))),
                     wide.n_text, tuple(tuple(g) for g in wide.together))
    long = long_cells(table)
    return Cells(long.header, long.body, long.right, long.keys)


@dataclass(frozen=True)
class TableText:
    """A table's lines and where its cells sit in them.

    Attributes:
        lines: the lines (`render_table` joins them).
        grid: the index in `lines` of the fitted table's first line.
        fitted: the fitted table (None when the table has no rows).
        cells: the cells laid out (in the order shown).
    """

    lines: list[str]
    grid: int
    fitted: Fitted | None
    cells: Cells | None


def table_text(table: Table, width: int | None = None, cells: Cells | None = None
               ) -> TableText:
    """`render_table`'s lines with where the cells went.

    Args:
        table: a results table.
        width: as `render_table`.
        cells: the cells to lay out instead of the table's own (the console's sorted
            rows); None: `table_cells(table)`.

    Returns:
        The lines and places.
    """
    text_width = min(width or NOTE_WIDTH, NOTE_WIDTH)
    title = wrap_line(table.title, text_width)
    out = [*title, "=" * max(map(len, title))]
    out += [w for line in header_lines(table) for w in wrap_line(line, text_width)]
    grid, fitted = len(out), None
    if not table.rows:
        out.append("(no data for this selection)")
    else:
        cells = cells or table_cells(table)
        fitted = fit(cells.header, cells.body, cells.right, cells.keys, width, cells.together)
        out += fitted.lines
        out += abbreviation_lines(abbreviations(table), text_width)
    out += [w for line in judgment_lines(table) for w in wrap_line(line, text_width)]
    out += [w for line in warning_lines(table) for w in wrap_line(line, text_width)]
    out += [w for n in table.notes for w in textwrap.wrap(
        n, width=text_width, initial_indent="  ", subsequent_indent="  ")]
    return TableText(out, grid, fitted, cells if fitted else None)


def render_table(table: Table, width: int | None = None) -> str:
    """The table as aligned text with its title and notes.

    Args:
        table: a results table.
        width: fit every line in this many columns: wide tables split into blocks that
            show what tells each row apart (`fit`), title and text wrapped (None: one
            block, text at `NOTE_WIDTH`).

    Returns:
        Title, what the rows cover and pool, the aligned table (or "no data"), the
        abbreviations it uses, where each group's judgments came from, a warning when a
        row left errored episodes out, and the notes.
    """
    return "\n".join(table_text(table, width).lines)


def chart_label(arm: ArmKey, others: Sequence[ArmKey]) -> str:
    """A chart legend label: the arm label plus every dimension that tells it apart.

    Args:
        arm: the group.
        others: every group in the same chart.

    Returns:
        E.g. "enforced_rule:k=7", or "none seed=1 plausible".
    """
    label = arm.arm
    for attr, prefix in (("budget", "@"), ("dataset", "dataset="), ("question_set", "set="),
                         ("runs", "run="), ("seeds", "seed="), ("replicates", "rep=")):
        if len({getattr(o, attr) for o in others}) > 1:
            label += f" {prefix}{getattr(arm, attr)}"
    if len({o.family for o in others}) > 1:
        label += f" {arm.family}"
    return label


def _by_model(items: Sequence[tuple[ArmKey, object]]) -> dict[str, list]:
    arms = [arm for arm, _ in items]
    out: dict[str, list] = {}
    for arm, value in items:
        out.setdefault(arm.model, []).append((chart_label(arm, arms), value))
    return out


def render_results(results: Results, charts: bool = True, colorless: bool = True,
                   width: int | None = None) -> str:
    """Every table of `results` as text, with the hazard and answering-action charts.

    Args:
        results: computed results.
        charts: add the plotext charts (one per model) after the hazard and cost tables.
        colorless: strip ANSI colours from the charts.
        width: fit the tables in this many columns (`render_table`).

    Returns:
        The report.
    """
    from analysis.tables.plots import answer_action_chart, hazard_chart

    head = f"runs: {', '.join(results.runs) or DASH}"
    if results.errored:
        head += (f"; {results.errored} episode(s) ended in an error with no complete retry "
                 "and are left out (each table counts them per row; see `lab status`)")
    apart = apart_text(dict(results.apart))
    if apart:
        head += (f"; complete episodes that ended without an answer, counted as not "
                 f"answering: {apart} (generation cut at max_tokens, model refused; each "
                 "table counts them per row)")
    parts = ["\n".join(wrap_line(head, min(width or NOTE_WIDTH, NOTE_WIDTH)))]
    for table in results.tables:
        parts.append(render_table(table, width))
        if charts and table.name == "hazard":
            for model, curves in _by_model(results.hazard_curves).items():
                parts.append(hazard_chart(curves, f"{model}: P(answer) after j consecutive "
                                                  "failed observations", colorless))
        if charts and table.name == "cost":
            n_of = dict(zip((a for a, _ in results.answer_actions), results.episodes_per_arm))
            items = [(a, (c, n_of[a])) for a, c in results.answer_actions]
            for model, entries in _by_model(items).items():
                parts.append(answer_action_chart(
                    [(label, v[0]) for label, v in entries], [v[1] for _, v in entries],
                    f"{model}: share of episodes answering at each action", colorless))
    return "\n\n".join(parts)
