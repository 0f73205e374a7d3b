"""Drawing rules every figure shares: series drawn at the same position are dodged
sideways so their points and intervals do not hide one another, and an interval that
runs past the axis limit is drawn to the limit and marked there with an arrowhead
pointing off the axis, so a reader never takes a cut interval for a short one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes

CUT_GID = "cut-interval"
"""The gid of each arrowhead marking a cut interval (tests look them up by it)."""
DODGE = 0.5
"""How much of the distance between two positions the dodged series share."""
SERIES_SPREAD = 0.3
"""How far apart sideways, in steps of a count (a run length j or k, a depth t), the
series' points at one step are drawn (`dodge(i, n, SERIES_SPREAD)`)."""


def dodge(index: int, count: int, span: float = DODGE) -> float:
    """The offset of series `index` of `count` drawn at the same positions: spread
    evenly over `span` around the position (0 for a lone series)."""
    if count <= 1:
        return 0.0
    return -span / 2 + span * (index + 0.5) / count


def bounded_limits(estimates: Sequence[float], lows: Sequence[float],
                   highs: Sequence[float], reach: float = 1.0, floor: float = 0.25,
                   include: Sequence[float] = (0.0,)) -> tuple[float, float]:
    """Axis limits that hold every estimate and every interval up to a reach beyond the
    estimates (`reach` times their spread, at least `floor`), so one very wide interval
    does not squeeze every other row to a dot; an interval past them is cut and marked
    (`cut_interval`).

    Args:
        estimates: the finite estimates drawn.
        lows: interval lower ends (NaN for none).
        highs: interval upper ends (NaN for none).
        reach: how far beyond the estimates an interval may reach, in spreads.
        floor: the least such reach.
        include: values the limits always hold (the no-effect line).

    Returns:
        (low, high), padded by 5%.
    """
    finite = [e for e in estimates if math.isfinite(e)] + list(include)
    if not finite:
        return -1.0, 1.0
    top, bottom = max(finite), min(finite)
    extra = max(floor, reach * (top - bottom))
    low = min([bottom, *(v for v in lows if math.isfinite(v))])
    high = max([top, *(v for v in highs if math.isfinite(v))])
    low, high = max(low, bottom - extra), min(high, top + extra)
    pad = 0.05 * max(1e-9, high - low)
    return low - pad, high + pad


CAPSIZE = 2.0
"""The interval caps' half-length in points (`errorbar`'s ``capsize``)."""


def interval_rows(ax: Axes, rows: Sequence[tuple[float, float, tuple[float, float] | None,
                                                  dict[str, Any]]]) -> None:
    """Draw horizontal estimates with their intervals as one `Axes.errorbar` call per row
    would (``capsize=CAPSIZE``, the row's look, no line), in a few artists per panel: a
    marker line per row, one line collection for every interval of the panel and one
    cap line per side and colour. A forest of 660 rows spent most of its drawing time in
    `errorbar`'s five artists per row; the pixels are the same (the same artists'
    styles and z-order: intervals and caps at 2, points at 2.1 above them).

    Args:
        ax: the panel.
        rows: each row's (estimate, y, (distance down, distance up) or None for no
            interval, its look: `Line2D` keywords with a ``color``).
    """
    from matplotlib.lines import Line2D

    for est, y, _, look in rows:
        ax.plot([est], [y], **(look | {"linestyle": "none", "zorder": 2.1,
                                      "label": "_nolegend_"}))
    bars = [(est, y, bar, look["color"]) for est, y, bar, look in rows if bar is not None]
    if not bars:
        return
    ys = [y for _, y, _, _ in bars]
    lows = [est - bar[0] for est, _, bar, _ in bars]
    highs = [est + bar[1] for est, _, bar, _ in bars]
    colours = [c for _, _, _, c in bars]
    ax.hlines(ys, lows, highs, colors=colours, zorder=2, label="_nolegend_")
    for colour in dict.fromkeys(colours):
        at = [i for i, c in enumerate(colours) if c == colour]
        for ends in (lows, highs):
            ax.add_line(Line2D([ends[i] for i in at], [ys[i] for i in at], marker="|",
                               linestyle="none", markersize=2 * CAPSIZE, color=colour,
                               markeredgecolor=colour, zorder=2, label="_nolegend_"))


def cut_interval(ax: Axes, position: float, low: float, high: float,
                 limits: tuple[float, float], color: str, horizontal: bool = True,
                 **kw: Any) -> bool:
    """Mark the ends of interval [low, high] that lie past `limits` with an arrowhead at
    the limit, pointing off the axis (the interval itself is drawn, clipped at the
    axes, by the caller).

    Args:
        ax: the panel.
        position: the interval's row (horizontal) or column (vertical) coordinate.
        low: its lower end.
        high: its upper end.
        limits: the axis limits along the interval.
        color: the series' colour.
        horizontal: the interval runs along x (a forest row) rather than y.
        kw: more Line2D keywords.

    Returns:
        Whether either end was cut.
    """
    cut = False
    for end, limit, marker in ((low, limits[0], "<" if horizontal else "v"),
                               (high, limits[1], ">" if horizontal else "^")):
        past = end < limit if limit == limits[0] else end > limit
        if not (math.isfinite(end) and past):
            continue
        point = ([limit], [position]) if horizontal else ([position], [limit])
        (line,) = ax.plot(*point, marker=marker, color=color, linestyle="none",
                          markersize=4, clip_on=False, zorder=5, **kw)
        line.set_gid(CUT_GID)
        cut = True
    return cut


def coincident_offsets(points: Sequence[tuple[float, float]], share: float = 0.04,
                       spans: tuple[float, float] | None = None) -> list[float]:
    """Sideways offsets that pull apart points drawn (nearly) on top of one another in a
    scatter: points within `share` of the panel's x and y spans of each other form a
    cluster, spread evenly over `share` of the x span per point, in order; a lone point
    stays where it is.

    Args:
        points: the (x, y) of each point of one panel (NaN for one not drawn).
        share: the nearness that counts as overlapping, and the spacing, as a share of
            the spans.
        spans: the panel's (x, y) spans where its axes are fixed (default: the points'
            own, for axes that follow the data).

    Returns:
        An x offset per point, in data units.
    """
    drawn = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    if not drawn:
        return [0.0] * len(points)
    xs, ys = [p[0] for p in drawn], [p[1] for p in drawn]
    x_span, y_span = spans or (max(xs) - min(xs) or max(1.0, abs(xs[0])),
                               max(ys) - min(ys) or 1.0)
    clusters: list[list[int]] = []
    for i, (x, y) in enumerate(points):
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        for cluster in clusters:
            cx, cy = points[cluster[0]]
            if abs(x - cx) <= share * x_span and abs(y - cy) <= share * y_span:
                cluster.append(i)
                break
        else:
            clusters.append([i])
    offsets = [0.0] * len(points)
    for cluster in clusters:
        for k, i in enumerate(cluster):
            offsets[i] = dodge(k, len(cluster), share * x_span * len(cluster))
    return offsets


def tick_rotation(labels: Sequence[str], slot_inches: float, font_size: float) -> int:
    """The rotation of category tick labels `slot_inches` apart: 0 when the longest fits
    its slot lying flat, else 90 (upright labels a line's height apart never collide,
    where slanted ones of unequal length do)."""
    longest = max((len(t) for t in labels), default=0)
    return 0 if longest * 0.6 * font_size / 72 <= 0.9 * slot_inches else 90


def label_room(labels: Sequence[str], rotation: int, font_size: float) -> float:
    """Inches below a panel that its category labels take (upright ones their length)."""
    if rotation != 90:
        return 0.0
    return max((len(t) for t in labels), default=0) * 0.55 * font_size / 72
