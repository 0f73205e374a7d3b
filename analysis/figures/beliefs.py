"""The main paper's Figure 6 (table "beliefs"): what agents say continuing and answering
now are worth, against what they were worth, by the number of failed results so far, in
one regime (the held-out persistent one by default).

Three panels, one line per model (× arm, when several are drawn), the model's own report
solid with filled markers and its reference dashed with open ones; the series' points
at one k are dodged sideways, so equal series stay visible:

- left: self-reported p_continue against the ideal observer E[V_c | k];
- middle: self-reported p_answer_now against the realized success of the answer-now
  branch;
- right: the share of decision points at which the agent's report prefers answering,
  against the share at which it answers.
"""

from __future__ import annotations

from matplotlib.lines import Line2D

from analysis.figures.base import Drawn, FigureDef, Skipped, labeller, ordered, pick, value
from analysis.figures.identity import arm_look
from analysis.figures.marks import SERIES_SPREAD, dodge
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import NEUTRAL, Style, narrow, new_figure, series_style

PANELS = (("p_continue", "ideal_continue", "continuing"),
          ("p_answer_now", "value_answer_now", "answering now"),
          ("prefers_answering", "answers", "share of points"))
"""(self-report measure, reference measure, y label) per panel."""
TITLES = ("continue vs ideal observer", "answer now vs branch", "prefers vs answers")
HELD_OUT = "persistent"
"""The regime the paper's figure shows."""


def _k(row: RowDict) -> int:
    return int(str(row["scope"]).removeprefix("k="))


def _series(rows: list[RowDict]) -> list[tuple[str, str, str]]:
    """Each series' key: (model, arm, the rest of its group) in first-seen order."""
    return ordered((str(r["model"]), str(r["arm"]), label) for r, label in
                   zip(rows, map(labeller(rows), rows)))


def beliefs_figure(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Figure 6: three panels of beliefs against their references, one line per series."""
    measures = [m for panel in PANELS for m in panel[:2]]
    every = [r for r in pick(study, "beliefs", measures) if "," not in str(r["regimes"])]
    if not every:
        return Skipped("no beliefs rows (no belief probes in this selection; run `lab replay "
                       "beliefs --run R`, and `lab replay answer-now --run R` for the "
                       "realized value of answering now)")
    regimes = ordered(str(r["regimes"]) for r in every)
    regime = HELD_OUT if HELD_OUT in regimes else regimes[0]
    rows = [r for r in every if r["regimes"] == regime and _k(r) >= 1]
    if not rows:
        return Skipped(f"no beliefs rows after a failed result in {regime}")
    label = labeller(rows)
    keys = ordered(label(r) for r in rows)
    models = ordered(str(r["model"]) for r in rows)
    several_arms = len({r["arm"] for r in rows}) > 1
    wide = not narrow(style)
    fig, axes = new_figure(style, rows=1 if wide else 3, cols=3 if wide else 1,
                           height=style.panel_height * (1.3 if wide else 3.0), sharex=True)
    ks = sorted({_k(r) for r in rows})
    for ax, (own, reference, ylabel) in zip(axes, PANELS):
        for i, key in enumerate(keys):
            series = [r for r in rows if label(r) == key]
            shift = dodge(i, len(keys), SERIES_SPREAD)  # equal series stay visible side by side
            look = series_style(models.index(str(series[0]["model"])))
            marker = arm_look(str(series[0]["arm"])).marker if several_arms else look["marker"]
            for measure, line, face in ((own, "-", look["color"]), (reference, "--", "white")):
                points = sorted((_k(r), value(r["estimate"])) for r in series
                                if r["measure"] == measure)
                if points:
                    ax.plot([p[0] + shift for p in points], [p[1] for p in points],
                            color=look["color"], linestyle=line, marker=marker,
                            markerfacecolor=face, markeredgecolor=look["color"])
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel(ylabel)
        ax.set_xticks(ks)
    for ax in axes if wide else axes[-1:]:
        ax.set_xlabel("k: failed results so far")
    handles = []
    for key in keys:
        first = next(r for r in rows if label(r) == key)
        look = series_style(models.index(str(first["model"])))
        marker = arm_look(str(first["arm"])).marker if several_arms else str(look["marker"])
        handles.append(Line2D([], [], color=str(look["color"]), marker=marker,
                              linestyle="-", label=key))
    handles += [Line2D([], [], color=NEUTRAL, linestyle="-", marker="o",
                       label="report (filled)"),
                Line2D([], [], color=NEUTRAL, linestyle="--", marker="o",
                       markerfacecolor="white", label="reference (open)")]
    for ax, title in zip(axes, TITLES):
        ax.set_title(title, loc="left", fontsize="small")
    if wide:
        axes[-1].legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5),
                        frameon=False)
    else:
        axes[0].legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.15),
                       ncol=2, frameon=False)
    where = ("left", "middle", "right") if wide else ("top", "middle", "bottom")
    return Drawn(fig, rows, f"{regime} regime, means over decision points by the number of "
                            f"failed results so far; {where[0]}: self-reported value of "
                            "continuing against the ideal observer, "
                            f"{where[1]}: of answering now against the answer-now branch, "
                            f"{where[2]}: the report preferring to answer against the agent "
                            "answering")


FIGURES = (FigureDef("beliefs", "Beliefs against realized values (Figure 6)", ("beliefs",),
                     beliefs_figure),)
