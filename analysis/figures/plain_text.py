"""Figure text without control characters, so an SVG stays well-formed XML and a PDF
holds no stray bytes.

Model, run, set and arm names come from outside (lab.toml, imported data) and reach a
figure as titles, axis and tick labels, legends, annotations, its caption and the
files' metadata. XML 1.0 forbids most control characters, so one such name made an SVG
that no parser reads. `plain_figure` takes them out (`core.inert.plain`) of every text
the figure holds just before it is saved; tick labels are written by the axes'
formatters when the figure is drawn, so each formatter is wrapped to do the same. Text
without control characters is unchanged, so clean figures keep their bytes.
"""

from __future__ import annotations

from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import Formatter

from core.inert import plain


class PlainFormatter(Formatter):
    """Another formatter's tick labels and offset text, control characters taken out.

    Args:
        inner: the formatter whose labels are shown.
    """

    def __init__(self, inner: Formatter) -> None:
        self.inner = inner

    def __call__(self, x: float, pos: int | None = None) -> str:
        """The tick label of `x` at position `pos`."""
        return plain(self.inner(x, pos))

    def format_ticks(self, values: list[float]) -> list[str]:
        """Every tick's label (the inner formatter sees all locations first)."""
        return [plain(s) for s in self.inner.format_ticks(values)]

    def get_offset(self) -> str:
        """The axis's offset text."""
        return plain(self.inner.get_offset())

    def set_locs(self, locs: list[float]) -> None:
        """Tell the inner formatter the tick locations."""
        self.inner.set_locs(locs)


def _wrap(axis: Axis) -> None:
    for ticker, setter in ((axis.major, axis.set_major_formatter),
                           (axis.minor, axis.set_minor_formatter)):
        formatter = ticker.formatter
        if formatter is not None and not isinstance(formatter, PlainFormatter):
            setter(PlainFormatter(formatter))


def plain_figure(fig: Figure) -> None:
    """Take control characters out of every text of `fig` (titles, labels, legends,
    annotations, the caption) and out of its tick labels when they are drawn. Line
    breaks stay (matplotlib draws each line as a text of its own): a forest cell's title
    and a Δ grid cell's second run are two lines."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            _wrap(axis)
    for text in fig.findobj(Text):
        shown = text.get_text()
        if shown != (clean := "\n".join(map(plain, shown.split("\n")))):
            text.set_text(clean)


def plain_metadata(metadata: dict[str, str | None]) -> dict[str, str | None]:
    """A file's metadata with control characters taken out of each value."""
    return {k: None if v is None else plain(v) for k, v in metadata.items()}
