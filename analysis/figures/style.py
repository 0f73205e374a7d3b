"""How every figure looks and how it is saved: the headless Agg backend, DejaVu Sans (it
ships with matplotlib, so a bare machine has it), the Okabe–Ito colour-blind-safe
palette with a marker and a line style per arm (`analysis.figures.identity`), and
byte-deterministic SVG/PDF (fixed ``svg.hashsalt``, no dates in the metadata).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: no display, no GUI toolkit

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.figures.identity import LINESTYLES, MARKERS, PALETTE  # noqa: E402
from analysis.figures.plain_text import plain_figure, plain_metadata  # noqa: E402
from core.inert import plain  # noqa: E402

NEUTRAL = "#555555"
"""Reference lines (no effect, diagonal)."""
CREATOR = "lab figures"
FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Style:
    """A named set of sizes: `column` (one journal column, 3.3 in), `page` (the full text
    width, 6.9 in), `paper` (a two-column page, as before) or `talk` (slides).

    Attributes:
        name: the style's name.
        width: figure width in inches (its size in print: placed at 100%).
        panel_height: height of one panel row in inches.
        font_size: base font size in points.
        line_width: line width in points.
        marker_size: marker size in points.
        dpi: PNG resolution.
        min_font: no text is smaller than this, in points, once placed.
        max_height: no figure is taller than this, in inches (one page).
    """

    name: str
    width: float
    panel_height: float
    font_size: float
    line_width: float
    marker_size: float
    dpi: int
    min_font: float = 6.0
    max_height: float = 9.0


STYLES = {"column": Style("column", 3.3, 1.6, 8.0, 0.8, 3.5, 300),
          "page": Style("page", 6.9, 2.2, 8.0, 1.0, 4.0, 300),
          "paper": Style("paper", 6.75, 2.2, 8.0, 1.0, 4.0, 200),
          "talk": Style("talk", 10.0, 3.4, 14.0, 2.0, 7.0, 120, 10.0, 7.5)}


def series_style(i: int) -> dict[str, object]:
    """Colour, marker and line style of the i-th series of a figure whose series are not
    arms (leaving's shares); an arm's series take `identity.arm_look`."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[i % len(LINESTYLES)]}


@contextmanager
def styled(style: Style) -> Iterator[None]:
    """matplotlib settings of `style`, restored afterwards."""
    with matplotlib.rc_context({
        "font.family": "DejaVu Sans", "font.size": style.font_size,
        "axes.titlesize": style.font_size, "axes.labelsize": style.font_size,
        "xtick.labelsize": style.font_size * 0.9, "ytick.labelsize": style.font_size * 0.9,
        "legend.fontsize": style.font_size * 0.85, "lines.linewidth": style.line_width,
        "lines.markersize": style.marker_size, "axes.spines.top": False,
        "axes.spines.right": False, "axes.grid": True, "grid.color": "#dddddd",
        "grid.linewidth": 0.5, "svg.hashsalt": "lab", "svg.fonttype": "path",
        "pdf.fonttype": 42, "path.simplify": False, "savefig.bbox": "standard",
    }):
        yield


def new_figure(style: Style, rows: int = 1, cols: int = 1, height: float | None = None,
               sharex: bool = False, sharey: bool = False) -> tuple[Figure, list]:
    """A figure of `rows` × `cols` panels sized by `style`; the axes as a flat list."""
    fig, axes = plt.subplots(rows, cols, figsize=(style.width, min(
                                 style.max_height, height or style.panel_height * rows)),
                             squeeze=False, sharex=sharex, sharey=sharey)
    return fig, [ax for row in axes for ax in row]


NARROW = 5.0
"""A style narrower than this (in inches; `column`) stacks panels and keys them in one
legend above them where it can (`legends`), not beside each, where it takes the plot's
width."""


def narrow(style: Style) -> bool:
    """Whether `style` is a single column (`NARROW`)."""
    return style.width < NARROW


def legends(axes: list[Axes], style: Style,
            each: Callable[[Axes], None] | None = None, **kw: Any) -> None:
    """The legends of stacked panels: each panel's own (`each`; by default to its right),
    but on a narrow style, where such a legend took half the column's width from every
    panel (seven regimes × four arms squeezed into 1.2 in), one legend above the first
    panel's title when every panel keys the same entries, so each panel keeps the whole
    width."""
    first = one_key(axes)
    if narrow(style) and first is not None:
        legend_above(first, style, **kw)
        return
    for ax in axes:
        if ax.get_visible() and ax.get_legend_handles_labels()[1]:
            if each is None:
                legend_right(ax, style, **kw)
            else:
                each(ax)


def one_key(axes: list[Axes]) -> Axes | None:
    """The first panel that keys entries when every shown panel keys the same ones (one
    legend can then key them all); None otherwise."""
    keyed = [ax for ax in axes if ax.get_visible() and ax.get_legend_handles_labels()[1]]
    labels = [ax.get_legend_handles_labels()[1] for ax in keyed]
    if keyed and all(entry == labels[0] for entry in labels):
        return keyed[0]
    return None


def legend_above(ax: Axes, style: Style, **kw: Any) -> None:
    """The axes' legend above its title, in as many columns as the figure's width takes;
    the figure grows by the legend's height (up to the style's maximum), so the panels
    keep theirs."""
    from matplotlib.transforms import ScaledTranslation

    fig = ax.figure
    if not isinstance(fig, Figure):
        return
    title = float(ax.title.get_fontsize()) * 1.3 + float(plt.rcParams["axes.titlepad"])
    above = ax.transAxes + ScaledTranslation(0, title / 72, fig.dpi_scale_trans)
    place = {"loc": "lower left", "bbox_to_anchor": (0.0, 1.0), "bbox_transform": above,
             "frameon": False, "borderaxespad": 0.2, **kw}
    entries = len(ax.get_legend_handles_labels()[1])
    width, height = fig.get_size_inches()
    # the legend starts at the axes' left edge, right of the y label and tick labels,
    # which stay as wide when the layout widens the axes to the figure's right edge
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    tight_box = ax.get_tightbbox(renderer)
    labels = 0.0 if tight_box is None else \
        (ax.get_window_extent(renderer).x0 - tight_box.x0) / fig.dpi
    room = width - labels - 0.1
    legend = None
    for columns in range(entries, 0, -1):
        legend = ax.legend(ncols=columns, **place)
        if legend.get_window_extent().width / fig.dpi <= room or columns == 1:
            break
    if legend is not None:
        # its box as laid out before a draw, with the pad under it; 10 % more, as in
        # `legend_right`, for the drawn legend's rows
        tall = legend.get_window_extent().height / fig.dpi * 1.1 + 0.2 * style.font_size / 72
        fig.set_size_inches(width, min(style.max_height, height + tall))


LEGEND_COLUMNS = 3
"""At most this many columns in a legend to the right of its axes."""

TITLE_ROOM = 5.0
"""Room a panel needs besides its legend's height, in base font sizes: its title above,
a margin below (`legend_right`)."""


def legend_right(ax: Axes, style: Style, **kw: Any) -> None:
    """The axes' legend to its right, centred on it, in one column while it fits.

    A legend taller than its row of panels ran off the figure: its rows were cut off
    and matplotlib could not lay the axes' labels out ("Tight layout not applied"), as
    on a study of many arms × regimes × budgets × runs in one panel. Such a legend takes
    as many columns as it needs (up to `LEGEND_COLUMNS`) and the figure grows, up to the
    style's maximum height, until each row of panels is as tall as its legend."""
    right = {"loc": "center left", "bbox_to_anchor": (1.0, 0.5), "frameon": False, **kw}
    legend = ax.legend(**right)
    fig = ax.figure
    if not isinstance(fig, Figure):
        return
    spec = ax.get_subplotspec()
    rows = spec.get_gridspec().nrows if spec is not None else 1
    width, height = fig.get_size_inches()
    room = TITLE_ROOM * style.font_size / 72  # above the axes (a title) and below them
    # its box as laid out before a draw, which came out a row short of the drawn legend
    # (40 entries: 6.02 in measured, the last row cut off), hence the 10 % more
    tall = legend.get_window_extent().height / fig.dpi * 1.1
    if rows * (tall + room) <= height:
        return
    columns = 1
    while columns < LEGEND_COLUMNS and rows * (tall / columns + room) > style.max_height:
        columns += 1
    fig.set_size_inches(width, min(style.max_height, rows * (tall / columns + room)))
    if columns > 1:
        ax.legend(ncols=columns, **right)


def legible(fig: Figure, style: Style) -> None:
    """Raise every text of `fig` smaller than the style's minimum to it (relative sizes
    such as "x-small" fall under 6 pt at an 8-point base)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        if float(text.get_fontsize()) < style.min_font:
            text.set_fontsize(style.min_font)


def tight(fig: Figure, rect: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
          ) -> None:
    """`fig.tight_layout(rect=rect)`, once.

    matplotlib leaves a placeholder layout engine on the figure after `tight_layout`, and
    `savefig` lays out again (a whole draw with rendering off) before each format it writes
    while any engine is set; the layout is already done, so the engine is removed and each
    format is drawn once, to the same bytes.
    """
    fig.tight_layout(rect=rect)
    fig.set_layout_engine(None)


def chars_across(inches: float, points: float, least: int = 12) -> int:
    """About how many characters of a `points`-point font fit in `inches` (at least
    `least`)."""
    return max(least, int(inches * 72 / (points * 0.6)))


def with_caption(fig: Figure, caption: str, style: Style) -> None:
    """Lay `fig` out with `caption` wrapped to its width along the bottom."""
    import textwrap

    if not caption:
        tight(fig)
        return
    size = max(style.min_font, style.font_size * 0.8)
    chars = chars_across(style.width, size, least=30)
    text = textwrap.fill(caption, chars)
    lines = text.count("\n") + 1
    height = fig.get_size_inches()[1]
    bottom = min(0.5, (lines * size * 1.25 + 4) / 72 / height)
    tight(fig, rect=(0.0, bottom, 1.0, 1.0))
    fig.text(0.01, 0.005, text, ha="left", va="bottom", fontsize=size, color=NEUTRAL)


def save(fig: Figure, stem: Path, formats: tuple[str, ...], style: Style,
         caption: str = "", keywords: str = "") -> list[Path]:
    """Write `fig` as stem.<format> for each format, byte-deterministically; close it.

    Args:
        fig: the figure.
        stem: path without suffix.
        formats: among FORMATS.
        style: its style (PNG resolution).
        caption: printed along the bottom, and the files' description.
        keywords: the files' keywords (runs, amendments, rows' sha256).

    Returns:
        The paths written.
    """
    metadata: dict[str, dict[str, str | None]] = {
        "svg": {"Date": None, "Creator": CREATOR, "Description": caption or None,
                "Keywords": keywords or None},
        "pdf": {"CreationDate": None, "ModDate": None, "Creator": CREATOR,
                "Producer": CREATOR, "Subject": caption or None,
                "Keywords": keywords or None},
        "png": {"Software": CREATOR, "Description": caption, "Keywords": keywords}}
    written = []
    try:
        plain_figure(fig)
        legible(fig, style)
        with_caption(fig, plain(caption), style)
        for fmt in formats:
            path = stem.with_suffix(f".{fmt}")
            fig.savefig(path, format=fmt, metadata=plain_metadata(metadata[fmt]), dpi=style.dpi)
            written.append(path)
    finally:
        plt.close(fig)
    return written


def svg_text(fig: Figure) -> str:
    """`fig` as SVG text (deterministic, as `save`), closed afterwards."""
    import io

    buf = io.StringIO()
    try:
        plain_figure(fig)
        tight(fig)
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": CREATOR})
    finally:
        plt.close(fig)
    return buf.getvalue()
