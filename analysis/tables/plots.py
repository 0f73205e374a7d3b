"""Terminal charts (plotext): the stopping hazard curve and where answers fall.

Each function returns the chart as a string built with plotext's ``build()``. plotext
draws on one shared figure, so these functions clear it before and after and must
not run concurrently in two threads.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from typing import Literal

from core.inert import inert

MARKERS = ("●", "■", "▲", "◆", "○", "□", "✗", "+", "◇", "△")
WIDTH, HEIGHT = 72, 18

Series = tuple[str, Sequence[float], Sequence[float]]
Legend = Literal["inside", "below"]
"""Where a chart's legend goes: plotext's box in the plot's corner, or keyed lines under
the chart (the plot left whole; what a narrow screen needs)."""

_SGR_RUN = re.compile(r"((?:\x1b\[[0-9;]*m)+)([^\x1b]*)")


def line_chart(series: Sequence[Series], title: str, xlabel: str, ylabel: str = "",
               width: int = WIDTH, height: int = HEIGHT, colorless: bool = True,
               legend: Legend = "inside") -> str:
    """A line chart with one marker per series (readable without colours).

    Args:
        series: (label, x values, y values); NaN points are left out.
        title: chart title.
        xlabel: x-axis label.
        ylabel: y-axis label.
        width: width in terminal cells.
        height: height in terminal cells.
        colorless: strip ANSI colours (for files and pipes).
        legend: "inside" (plotext's box over the plot's corner) or "below": one marker
            and label per series on lines under the x axis, in the series' colours, so
            no label covers the plot (`height` then holds those lines too).

    Returns:
        The chart, or a one-line note when there is nothing to draw. Labels and titles
        are drawn inert (a control character escaped, `\\x1b`): the chart is read back
        as ANSI, which would take a stored name's escape for its own.
    """
    import plotext

    series = [(inert(label, keep=""), xs, ys) for label, xs, ys in series]
    title, xlabel, ylabel = (inert(t, keep="") for t in (title, xlabel, ylabel))

    fig = plotext.figure
    fig.clear()
    xs_all = set[float]()
    drawn = _distinct_curves(series)
    keyed = [(MARKERS[i % len(MARKERS)], label) for i, label, _ in drawn]
    below = legend == "below"
    if below:
        height = max(height - len(legend_text(keyed, width)), 6)
    try:
        fig.plot_size(width, height)
        for (marker, label), (_, _, pts) in zip(keyed, drawn):
            sig = fig.signal([p[0] for p in pts], [p[1] for p in pts], marker=marker)
            if not below:
                sig.label(label)
            sig.lines()
            fig.draw(sig)
            xs_all.update(p[0] for p in pts)
        if not drawn:
            return f"{title}: nothing to plot"
        if all(float(x).is_integer() for x in xs_all) and len(xs_all) <= 16:
            ticks = sorted(int(x) for x in xs_all)
            fig.ruler("x").ticks(ticks, [str(t) for t in ticks])
        fig.title(title)
        fig.label(xlabel)
        if ylabel:
            fig.label(ylabel, axis="y")
        chart = fig.build().string(colorless=colorless)
    finally:
        fig.clear()
    if not below:
        return chart
    styles = {} if colorless else marker_styles(chart)
    lines = legend_text(keyed, width, styles)
    return chart.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


def _distinct_curves(series: Sequence[Series]
                     ) -> list[tuple[int, str, list[tuple[float, float]]]]:
    """(index, label, points) of each curve to draw: a series' non-NaN points, series
    without any left out, and a series whose points equal an earlier one's drawn once
    under both labels ("a = b"), since the later curve would hide the earlier one
    exactly and the legend would key a curve no one can see."""
    drawn: list[tuple[int, str, list[tuple[float, float]]]] = []
    for i, (label, xs, ys) in enumerate(series):
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None and not math.isnan(y)]
        if not pts:
            continue
        same = next((k for k, (_, _, seen) in enumerate(drawn) if seen == pts), None)
        if same is None:
            drawn.append((i, label, pts))
        else:
            first, shown, seen = drawn[same]
            drawn[same] = (first, f"{shown} = {label}", seen)
    return drawn


def legend_text(keyed: Sequence[tuple[str, str]], width: int,
                styles: dict[str, str] | None = None) -> list[str]:
    """The legend under a chart: "● label" per series, three spaces apart, wrapped on
    whole entries to `width` (a label longer than a line wraps after its marker).

    Args:
        keyed: (marker, label) per series drawn.
        width: the chart's width in cells.
        styles: the ANSI codes a marker is drawn with in the chart (`marker_styles`);
            a marker without one is plain.

    Returns:
        The lines (no newline).
    """
    styles = styles or {}
    lines: list[str] = []
    shown, length = "", 0
    for marker, label in keyed:
        entry = f"{marker} {label}"
        if length and length + 3 + len(entry) > width:
            lines.append(shown)
            shown, length = "", 0
        pieces = textwrap.wrap(entry, width, subsequent_indent="  ") or [entry]
        for piece in pieces[:-1]:
            lines.append(("   " if length else "") + _styled(piece, marker, styles))
        tail = pieces[-1]
        if len(pieces) > 1:
            shown, length = _styled(tail, marker, styles), len(tail)
            continue
        shown += ("   " if length else "") + _styled(tail, marker, styles)
        length += (3 if length else 0) + len(tail)
    if length:
        lines.append(shown)
    return lines


def _styled(piece: str, marker: str, styles: dict[str, str]) -> str:
    """`piece` with its marker drawn in the series' colour (the label stays plain)."""
    code = styles.get(marker)
    if not code or not piece.startswith(marker):
        return piece
    return f"{code}{marker}\x1b[0m{piece[len(marker):]}"


def marker_styles(chart: str) -> dict[str, str]:
    """The ANSI codes each marker is first drawn with in a coloured `chart` (so the
    legend under it shows each series in its colour)."""
    styles: dict[str, str] = {}
    for match in _SGR_RUN.finditer(chart):
        for marker in MARKERS:
            if marker in match.group(2) and marker not in styles:
                styles[marker] = match.group(1)
    return styles


def hazard_chart(curves: Sequence[tuple[str, Sequence[float]]], title: str = "",
                 colorless: bool = True) -> str:
    """Stopping hazard by consecutive failed observations j = 0, 1, … per arm.

    Args:
        curves: (arm label, hazard at j = 0 … len−1).
        title: chart title (default describes the axes).
        colorless: strip ANSI colours.

    Returns:
        The chart.
    """
    series = [(label, list(range(len(h))), list(h)) for label, h in curves]
    return line_chart(series, title or "P(answer) after j consecutive failed observations",
                      "j (consecutive failed observations)", colorless=colorless)


def answer_action_chart(dists: Sequence[tuple[str, Sequence[tuple[int, int]]]],
                        episodes: Sequence[int], title: str = "",
                        colorless: bool = True) -> str:
    """Share of episodes answering at each action, per arm.

    Args:
        dists: (arm label, ((action, answers), …)).
        episodes: episodes per arm (the denominators), aligned with `dists`.
        title: chart title.
        colorless: strip ANSI colours.

    Returns:
        The chart.
    """
    series = []
    for (label, counts), n in zip(dists, episodes):
        xs = [a for a, _ in counts]
        ys = [c / n if n else math.nan for _, c in counts]
        series.append((label, xs, ys))
    return line_chart(series, title or "Share of episodes answering at each action", "action",
                      colorless=colorless)
