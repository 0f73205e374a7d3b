"""Aligned text tables in the paper's conventions: ``+0.33 [+0.25, +0.41]``, "–" when
undefined, "∞" for an infinite estimate. Only formatting: no statistics here.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence

from analysis.measures import Results
from analysis.rows import Row, Table

DASH = "–"
NOTE_WIDTH = 100
UNSIGNED = frozenset({"success", "h45", "h12", "hazard"})
"""Measures that are probabilities, printed without a sign."""
_REGIME_SHORT = (("persistent", "pers."), ("clean", "clean"), ("plausible", "plaus."),
                 ("answerless", "answerl."))


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


def short_regime(name: str) -> str:
    """Paper-style short regime name.

    Args:
        name: regime name, e.g. "recover_after_2".

    Returns:
        The short form (rec2, late3, pers., …), or the name itself.
    """
    for long, short in _REGIME_SHORT:
        if name == long:
            return short
    m = re.fullmatch(r"recover_after_(\d+)", name)
    if m:
        return f"rec{m.group(1)}"
    m = re.fullmatch(r"late_onset_from_(\d+)", name)
    return f"late{m.group(1)}" if m else name


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


def _signed(measure: str) -> bool:
    return measure not in UNSIGNED


def _arm_cells(r: Row, budgets: bool) -> list[str]:
    return [r.model, r.condition] + ([str(r.budget)] if budgets else [])


def _wide_cell(table: Table, r: Row | None, column: str, formats: dict[str, str],
               by_scope: bool) -> str:
    if r is None:
        return DASH
    if math.isnan(r.estimate) and r.detail and not r.unit and column not in table.ci_columns:
        return r.detail  # a text cell, e.g. "expected: positive"
    if column in table.ci_columns:
        text = fmt_interval(r.estimate, r.ci_low, r.ci_high, 2, _signed(r.measure))
        if not math.isnan(r.p):
            text += f" p={fmt_number(r.p, '.3f')}"
        if not math.isnan(r.p_holm):
            text += f" Holm {fmt_number(r.p_holm, '.3f')}"
        return text
    spec = formats.get(column, ".3f" if by_scope else ".2f")
    return fmt_number(r.estimate, spec, _signed(r.measure) and by_scope)


def render_wide(table: Table) -> list[str]:
    """One line per arm, one column per measure (or per scope when one measure).

    Args:
        table: a results table.

    Returns:
        The aligned lines (header, rule, rows).
    """
    rows = table.rows
    by_scope = len({r.measure for r in rows}) == 1
    key = (lambda r: r.scope) if by_scope else (lambda r: r.measure)
    columns = list(dict.fromkeys(key(r) for r in rows))
    budgets = len({r.budget for r in rows}) > 1
    formats = dict(table.formats)
    arms: dict[tuple[str, str, int | None], dict[str, Row]] = {}
    for r in rows:
        arms.setdefault((r.model, r.condition, r.budget), {})[key(r)] = r
    header = ["model", "condition"] + (["budget"] if budgets else [])
    names = dict(table.headers)
    header += [short_regime(c) if by_scope else names.get(c, c) for c in columns]
    body = []
    for cells in arms.values():
        line = _arm_cells(next(iter(cells.values())), budgets)
        for c in columns:
            line.append(_wide_cell(table, cells.get(c), c, formats, by_scope))
        body.append(line)
    n_text = 3 if budgets else 2
    return align(header, body, range(n_text, len(header)))


def render_long(table: Table) -> list[str]:
    """One line per row: arm, measure, scope, estimate [CI], n, detail.

    Args:
        table: a results table.

    Returns:
        The aligned lines (header, rule, rows).
    """
    budgets = len({r.budget for r in table.rows}) > 1
    header = ["model", "condition"] + (["budget"] if budgets else []) + [
        "measure", "scope", "estimate [95% CI]", "n", "detail"]
    body = [_arm_cells(r, budgets) + [
        r.measure, r.scope, fmt_interval(r.estimate, r.ci_low, r.ci_high, 2, _signed(r.measure)),
        str(r.n), r.detail] for r in table.rows]
    return align(header, body, (len(header) - 3, len(header) - 2))


def render_table(table: Table) -> str:
    """The table as aligned text with its title and notes.

    Args:
        table: a results table.

    Returns:
        Title, the aligned table (or "no data"), and the notes.
    """
    out = [table.title, "=" * len(table.title)]
    if not table.rows:
        out.append("(no data for this selection)")
    else:
        out += render_wide(table) if table.layout == "wide" else render_long(table)
    out += [textwrap.fill(n, width=NOTE_WIDTH, initial_indent="  ", subsequent_indent="  ")
            for n in table.notes]
    return "\n".join(out)


def _by_model(items: Sequence[tuple[tuple[str, str, int], object]]) -> dict[str, list]:
    budgets = len({arm[2] for arm, _ in items}) > 1
    out: dict[str, list] = {}
    for arm, value in items:
        label = arm[1] + (f" @{arm[2]}" if budgets else "")
        out.setdefault(arm[0], []).append((label, value))
    return out


def render_results(results: Results, charts: bool = True, colorless: bool = True) -> str:
    """Every table of `results` as text, with the hazard and answering-action charts.

    Args:
        results: computed results.
        charts: add the plotext charts (one per model) after the hazard and cost tables.
        colorless: strip ANSI colours from the charts.

    Returns:
        The report.
    """
    from analysis.plots import answer_action_chart, hazard_chart

    head = f"runs: {', '.join(results.runs) or DASH}"
    if results.errored:
        head += (f"; {results.errored} episode(s) ended in an error and are excluded "
                 "(see `lab status`)")
    parts = [head]
    for table in results.tables:
        parts.append(render_table(table))
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
