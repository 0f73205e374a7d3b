"""`interval_rows` draws a forest panel's rows in a few artists with the same pixels as
one `errorbar` call per row (the reference it replaced)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import matplotlib
from matplotlib.axes import Axes

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from analysis.figures.identity import arm_look  # noqa: E402
from analysis.figures.marks import CAPSIZE, interval_rows  # noqa: E402

ROWS: list[tuple[float, float, tuple[float, float] | None, dict[str, Any]]] = [
    (0.10, 0.0, (0.05, 0.08), arm_look("none").kwargs()),
    (-0.20, 1.0, (0.30, 0.10), arm_look("enforced_rule").kwargs()),
    (0.05, 2.0, None, arm_look("budget").kwargs()),
    (0.30, 3.0, (0.02, 0.40), arm_look("enforced_rule:k=7").kwargs(open_marker=True)),
    (0.00, 4.0, (0.10, 0.10), arm_look("call_cost").kwargs()),
    (0.15, 5.0, (0.05, 0.05), arm_look("none").kwargs(open_marker=True)),
]


def _pixels(draw: Callable[[Axes], None]) -> np.ndarray:
    fig, ax = plt.subplots(figsize=(3, 2.5), dpi=150)
    draw(ax)
    ax.set_xlim(-0.6, 0.8)
    ax.set_ylim(-0.7, len(ROWS) - 0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return np.asarray(Image.open(buf).convert("RGBA"))


def _one_errorbar_per_row(ax: Axes) -> None:
    for est, y, bar, look in ROWS:
        ax.errorbar([est], [y], xerr=[[bar[0]], [bar[1]]] if bar else None,
                    capsize=CAPSIZE, **(look | {"linestyle": "none"}))


def test_the_same_pixels_as_one_errorbar_per_row() -> None:
    want = _pixels(_one_errorbar_per_row)
    got = _pixels(lambda ax: interval_rows(ax, ROWS))
    assert got.shape == want.shape
    assert int((got != want).any(axis=2).sum()) == 0


def test_few_artists_per_panel() -> None:
    fig, ax = plt.subplots()
    interval_rows(ax, ROWS)
    colours = {look["color"] for _, _, bar, look in ROWS if bar}
    # a marker line per row, two cap lines per colour, one collection for the intervals
    assert len(ax.get_lines()) == len(ROWS) + 2 * len(colours)
    assert len(ax.collections) == 1
    plt.close(fig)
