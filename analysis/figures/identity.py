"""Each arm's look, the same in every panel and every figure: an Okabe–Ito colour, a
marker of its own and a line style, fixed by the arm's name rather than by the order in
which a figure meets it, so `none` is the same blue circle wherever it appears.

Every known arm (the conditions of `core.conditions.ARMS`, then the second seed's
systems) has its own marker, so two arms differ in greyscale even where two colours
turn the same grey; colours repeat only with a different marker. An arm variant
(`enforced_rule:k=7` beside `enforced_rule:k=3`) keeps its condition's colour and marker
and takes a line style and a half-filled marker of its own (a point shows no line
style). Budget is a second channel: a budget other than the
figure's primary one draws open markers.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from core.conditions import ARMS

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000",
           "#F0E442")
"""Okabe & Ito (2008), colour-blind safe; yellow last, as it is faint on white (its
markers get a dark edge)."""
FAINT = frozenset({"#F0E442"})
EDGE = "#333333"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "p", "h", "<", ">", "d", "H", "8",
           "1", "2", "3", "4", "+", "x")
"""One marker per known arm: distinct shapes in greyscale."""
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
FILLS = ("left", "bottom", "right", "top")
"""Half-filled markers of an arm variant (the bare condition's are full)."""
TRACE_SYSTEMS = ("Raw-Gated", "Calibrated-Gated", "Parametric only", "Fixed RAG@1",
                 "Fixed RAG@2", "Fixed RAG@3", "Adaptive proxy")
"""The second seed's systems (trace tables' arms), after the conditions."""
KNOWN = (*ARMS, *TRACE_SYSTEMS)
_BLUE, _ORANGE, _GREEN, _PURPLE, _SKY, _VERMILLION, _BLACK, _YELLOW = PALETTE
WINE = "#882255"
"""Paul Tol's colour-blind-safe wine, for the two-source arm: the eight Okabe–Ito colours
are the paper's eight arms, and two_source is drawn beside `budget` (Figure 4's bars,
which carry no marker), so it may not share budget's orange; much darker than orange,
it stays apart in greyscale too."""
COLOURS = {"none": _BLUE, "permit": _SKY, "budget": _ORANGE, "stated_rule": _GREEN,
           "call_cost": _YELLOW, "decide": _BLACK, "enforced_rule": _VERMILLION,
           "combo": _PURPLE, "random_rule": _BLACK, "lexical_rule": _GREEN,
           "stated_judgment_rule": _PURPLE, "stated_judgment_combo": _SKY,
           "two_source": WINE, "switch_rule": _PURPLE,
           "Raw-Gated": _BLUE, "Calibrated-Gated": _VERMILLION}
"""Arms drawn together (the paper's five arms; none beside the three enforced rules; the
two-source arms beside none and budget) get different colours; the marker tells apart the
few that share one (never two arms a bar chart draws together)."""


@dataclass(frozen=True)
class Look:
    """How one arm is drawn.

    Attributes:
        color: line and marker colour.
        marker: marker shape.
        linestyle: line style (the arm variant's).
        edge: marker edge colour (dark for a faint colour).
        fill: "full" for the bare condition, a half (FILLS) for a variant.
    """

    color: str
    marker: str
    linestyle: Any
    edge: str
    fill: str = "full"

    def kwargs(self, open_marker: bool = False) -> dict[str, Any]:
        """matplotlib keyword arguments of a line or errorbar drawn in this look; an
        open marker (white face) for a second budget."""
        return {"color": self.color, "marker": self.marker, "linestyle": self.linestyle,
                "markeredgecolor": self.edge, "fillstyle": self.fill,
                "markerfacecoloralt": "white",
                "markerfacecolor": "white" if open_marker else self.color}


def _slot(condition: str) -> int:
    """A known arm's fixed slot; an unknown one a stable slot after the known ones."""
    if condition in KNOWN:
        return KNOWN.index(condition)
    spare = len(MARKERS) - len(KNOWN)
    return len(KNOWN) + zlib.crc32(condition.encode()) % max(1, spare)


def arm_look(arm: str) -> Look:
    """The look of arm label `arm` (a condition, maybe with knobs: "enforced_rule:k=7").

    Args:
        arm: the arm label as rows carry it.

    Returns:
        Its Look: the condition's colour and marker; solid for the bare condition, a line
        style chosen by the knobs' text otherwise.
    """
    condition, _, knobs = arm.partition(":")
    slot = _slot(condition)
    color = COLOURS.get(condition, PALETTE[slot % len(PALETTE)])
    code = zlib.crc32(knobs.encode())
    style = LINESTYLES[0] if not knobs else LINESTYLES[1 + code % (len(LINESTYLES) - 1)]
    return Look(color, MARKERS[slot % len(MARKERS)], style,
                EDGE if color in FAINT else color,
                FILLS[code % len(FILLS)] if knobs else "full")


def row_look(row: dict[str, Any], primary_budget: int | None = None) -> dict[str, Any]:
    """matplotlib keyword arguments for a row's series: its arm's look, open markers when
    its budget is not `primary_budget` (None: every budget filled)."""
    budget = row.get("budget")
    open_marker = primary_budget is not None and budget is not None and \
        int(budget) != primary_budget
    return arm_look(str(row["arm"])).kwargs(open_marker)
