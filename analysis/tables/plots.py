"""Terminal charts (plotext): the stopping hazard curve and where answers fall.

Each function returns the chart as a string built with plotext's ``build()``. plotext
draws on one shared figure, so these functions clear it before and after and must
not run concurrently in two threads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MARKERS = ("●", "■", "▲", "◆", "○", "□", "✗", "+", "◇", "△")
WIDTH, HEIGHT = 72, 18

Series = tuple[str, Sequence[float], Sequence[float]]


def line_chart(series: Sequence[Series], title: str, xlabel: str, ylabel: str = "",
               width: int = WIDTH, height: int = HEIGHT, colorless: bool = True) -> str:
    """A line chart with one marker per series (readable without colours).

    Args:
        series: (label, x values, y values); NaN points are left out.
        title: chart title.
        xlabel: x-axis label.
        ylabel: y-axis label.
        width: width in terminal cells.
        height: height in terminal cells.
        colorless: strip ANSI colours (for files and pipes).

    Returns:
        The chart, or a one-line note when there is nothing to draw.
    """
    import plotext

    fig = plotext.figure
    fig.clear()
    drawn, xs_all = 0, set[float]()
    try:
        fig.plot_size(width, height)
        for i, (label, xs, ys) in enumerate(series):
            pts = [(x, y) for x, y in zip(xs, ys) if y is not None and not math.isnan(y)]
            if not pts:
                continue
            sig = fig.signal([p[0] for p in pts], [p[1] for p in pts],
                             marker=MARKERS[i % len(MARKERS)])
            sig.label(label)
            sig.lines()
            fig.draw(sig)
            drawn += 1
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
        return fig.build().string(colorless=colorless)
    finally:
        fig.clear()


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
