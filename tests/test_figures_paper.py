"""The paper-shaped figures and the drawing rules they share: Figure 4's paired budget
bars by model, Figure 3's Δ grid with a replication in parentheses, success against
calls, the second seed's ECE by depth on trace states (with the trace options of `lab
results` reaching `lab figures` and `lab report`), dodged points and marked cut
intervals."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_hex
from matplotlib.patches import Rectangle
from matplotlib.text import Annotation

from analysis.figures import FIGURES
from analysis.figures.base import Drawn
from analysis.figures.identity import arm_look
from analysis.figures.select import Declared, declare
from analysis.figures.study import RowDict
from analysis.figures.style import STYLES, styled
from tests.helpers.figure_rows import study_table_rows, synthetic_study, trace_table2_rows
from tests.helpers.report_study import lab

NEW = ("judged_but_not_acted", "delta_grid", "answer_action_by_budget", "cost_success",
       "trace_ece_by_depth")


def build(name: str, rows: dict[str, list[RowDict]], style: str = "column") -> Drawn:
    """Figure `name` drawn on `rows` as given (no selection applied)."""
    (fig,) = [f for f in FIGURES if f.name == name]
    with styled(STYLES[style]):
        out = fig.build(synthetic_study(rows), STYLES[style])
    assert isinstance(out, Drawn), out
    return out


def default_rows() -> dict[str, list[RowDict]]:
    """The synthetic study with trace rows, on the figures' default selection."""
    study, _ = declare(synthetic_study(study_table_rows() |
                                       {"trace_table2": trace_table2_rows()}), Declared())
    return study.rows


@pytest.mark.parametrize("name", NEW)
def test_a_new_figure_draws_one_budget_and_one_family_by_default(name: str) -> None:
    from analysis.figures.base import family

    out = build(name, default_rows())
    try:
        rows = out.rows
        assert rows
        if name == "trace_ece_by_depth":  # trace states: no action budget, no regime
            assert {r["table"] for r in rows} == {"trace_table2"}
            return
        assert {r["runs"] for r in rows} == {"confirm"}
        assert {family(r) for r in rows} == {"main"}
        if name != "answer_action_by_budget":  # Figure 4 compares two budgets
            assert {r["budget"] for r in rows} == {8}
    finally:
        plt.close(out.figure)


def _budget_rows() -> dict[str, list[RowDict]]:
    """Figure 4's rows as the budgets table gives them: the larger budget's median
    carries the larger budget."""
    rows = default_rows()
    fixed = [r | {"budget": 16} if r["measure"] == "median_action@16" else r
             for r in rows["budgets"]]
    return rows | {"budgets": fixed}


def test_figure_4_pairs_each_arms_budgets_side_by_side_in_its_colour_per_model() -> None:
    from tests.helpers.figure_rows import ARMS, MODELS

    out = build("answer_action_by_budget", _budget_rows())
    try:
        panels = [ax for ax in out.figure.axes if ax.get_visible()]
        assert [ax.get_title(loc="left") for ax in panels] == list(MODELS)
        for ax in panels:
            bars = sorted(cast("Sequence[Rectangle]", ax.patches), key=lambda p: p.get_x())
            assert len(bars) == 2 * len(ARMS)  # one pair per arm, no unpaired bar
            for arm, (light, dark) in zip(ARMS, zip(bars[::2], bars[1::2])):
                assert dark.get_x() == pytest.approx(light.get_x() + light.get_width())
                colour = arm_look(arm).color.lower()
                assert to_hex(light.get_facecolor()[:3]) == colour, arm
                assert to_hex(dark.get_facecolor()[:3]) == colour, arm
                alpha_light, alpha_dark = light.get_alpha(), dark.get_alpha()
                assert alpha_light is not None and alpha_dark is not None
                assert alpha_light < alpha_dark
            assert [t.get_text() for t in ax.get_xticklabels()] == list(ARMS)
    finally:
        plt.close(out.figure)


def test_the_delta_grid_shows_a_replication_in_parentheses() -> None:
    rows = default_rows()
    again = [r | {"runs": "fresh", "question_set": "fresh300",
                  "estimate": r["estimate"] + 0.05}
             for r in rows["delta"] if r["scope"] == "own judgments, by t"]
    out = build("delta_grid", rows | {"delta": rows["delta"] + again})
    try:
        (ax,) = out.figure.axes
        texts = {t.get_text() for t in ax.texts}
        # qwen3-8b · budget: Δ 0.1 in run confirm, 0.15 in the replication
        assert "+0.10\n(+0.15)" in texts, texts
        assert "in parentheses: run fresh · set fresh300" in ax.get_title(loc="left")
        assert [t.get_text() for t in ax.get_yticklabels()] == ["qwen3-8b", "llama-3.1-8b"]
        assert len(out.rows) == 2 * len(ax.texts)  # both runs' rows are the sidecar's
    finally:
        plt.close(out.figure)
    single = build("delta_grid", rows)
    try:
        assert all("(" not in t.get_text() for t in single.figure.axes[0].texts)
    finally:
        plt.close(single.figure)


def test_an_interval_cut_by_the_axis_is_marked() -> None:
    from analysis.figures.marks import CUT_GID

    rows = default_rows()
    wide = [r | {"ci_low": -5.0, "ci_high": 5.0} if r["arm"] == "budget" else r
            for r in rows["delta"]]
    out = build("delta_forest", rows | {"delta": wide})
    try:
        marks = [line for ax in out.figure.axes for line in ax.get_lines()
                 if line.get_gid() == CUT_GID]
        low, high = out.figure.axes[0].get_xlim()
        assert -5.0 < low and high < 5.0  # the wide interval does not set the axis
        # both ends of the budget arm's interval, in every cell that draws it
        cells = sum(1 for r in wide if r["arm"] == "budget" and r["scope"].endswith("by t"))
        assert len(marks) == 2 * cells and cells
        assert {line.get_marker() for line in marks} == {"<", ">"}
    finally:
        plt.close(out.figure)
    plain = build("delta_forest", rows)
    try:
        assert not [line for ax in plain.figure.axes for line in ax.get_lines()
                    if line.get_gid() == CUT_GID]
    finally:
        plt.close(plain.figure)


def _point_xs(out: Drawn) -> dict[str, float]:
    """Legend label -> the x of its point, in the first panel."""
    ax = out.figure.axes[0]
    return {text: float(handle.lines[0].get_xdata()[0])  # type: ignore[attr-defined]
            for handle, text in zip(*ax.get_legend_handles_labels())}


def test_points_on_top_of_one_another_are_dodged() -> None:
    rows = default_rows()
    same = [r | {"estimate": 4.0} if r["measure"] == "tool calls" else
            r | {"estimate": 0.3} if r["measure"] == "success" else r for r in rows["cost"]]
    out = build("cost_success", rows | {"cost": same})
    try:
        xs = _point_xs(out)
        assert len(xs) == 5 and len(set(xs.values())) == 5, xs
        assert all(abs(x - 4.0) < 0.5 for x in xs.values())
    finally:
        plt.close(out.figure)
    apart = build("cost_success", rows)
    try:  # points apart stay where their numbers put them
        assert sorted(_point_xs(apart).values()) == [4.0, 5.0, 6.0, 7.0, 8.0]
    finally:
        plt.close(apart.figure)


def _controller_rows(groups: dict[tuple[str, str], tuple[float, float | None]]
                     ) -> list[RowDict]:
    """Controllers rows: per (model, arm), coverage and committed accuracy, the same on
    raw and isotonic confidence, and ECE at t=1..3 equal to the coverage."""
    rows = []
    for (model, arm), (coverage, accuracy) in groups.items():
        base = {"model": model, "arm": arm, "budget": 8, "dataset": "demo",
                "question_set": "demo", "runs": "main", "seeds": "0", "replicates": "0",
                "regimes": "clean"}
        for kind in ("raw", "isotonic"):
            rows += [base | {"scope": kind, "measure": "coverage", "estimate": coverage},
                     base | {"scope": kind, "measure": "committed_accuracy",
                             "estimate": accuracy}]
            rows += [base | {"scope": f"{kind}, t={t}", "measure": "ece", "estimate": coverage}
                     for t in (1, 2, 3)]
    return rows


def _marker_xs(ax: Any, marker: str) -> list[float]:
    """The x of each point drawn with `marker` (a point with no y is not drawn)."""
    return sorted(float(x) for line in ax.get_lines() if line.get_marker() == marker
                  for x, y in zip(line.get_xdata(), line.get_ydata()) if y == y)


def test_controllers_figures_give_each_model_its_panel_and_keep_equal_groups_apart() -> None:
    """An arm looks the same in every model, so the controllers' figures draw a panel per
    model; in a panel, groups whose operating points (or ECEs) are equal are pulled apart
    sideways, and groups apart stay where their numbers put them; a group that commits
    nothing has no point, and its legend entry says n.a."""
    groups: dict[tuple[str, str], tuple[float, float | None]] = {
        ("m1", "none"): (0.5, 0.8), ("m1", "budget"): (0.5, 0.8),
        ("m1", "enforced_rule"): (0.9, 0.6), ("m2", "none"): (0.5, 0.8),
        ("m2", "budget"): (0.0, None)}  # commits nothing: no risk
    rows = {"controllers": _controller_rows(groups)}
    out = build("risk_coverage", rows)
    try:
        axes = [ax for ax in out.figure.axes if ax.get_lines()]
        assert [ax.get_title(loc="left") for ax in axes] == ["m1", "m2"]
        for marker in ("o", "s"):  # raw circles, isotonic squares
            xs = _marker_xs(axes[0], marker)
            assert len(xs) == 3 and xs[0] < xs[1] < 0.55 and xs[0] > 0.45, xs
            assert xs[2] == pytest.approx(0.9), xs  # a point apart is not moved
            assert _marker_xs(axes[1], marker) == [pytest.approx(0.5)]  # alone in its panel
        assert axes[1].get_legend_handles_labels()[1] == ["none", "budget (n.a.)"]
    finally:
        plt.close(out.figure)
    ece = build("ece_by_depth", rows)
    try:
        axes = [ax for ax in ece.figure.axes if ax.get_lines()]
        assert [ax.get_title(loc="left") for ax in axes] == ["m1", "m2"]
        firsts = sorted(float(cast(Any, line.get_xdata())[0]) for line in axes[0].get_lines())
        assert len(set(firsts)) == 3, firsts  # three groups at t=1, each at its own x
    finally:
        plt.close(ece.figure)


def test_trace_risk_coverage_labels_baselines_at_one_point_once_and_keys_undefined() -> None:
    """Baselines on one operating point get one label naming each ("A = B"), not labels
    printed over one another; a gated controller that commits nothing (no risk at any τ)
    is keyed "(n.a.)" instead of as a curve the panel does not show."""
    def row(arm: str, scope: str, measure: str, estimate: float | None) -> RowDict:
        return {"model": "m", "arm": arm, "scope": scope, "dataset": "hotpotqa",
                "measure": measure, "estimate": estimate}

    sweeps = [row("Parametric only", "baseline", "coverage", 1.0),
              row("Parametric only", "baseline", "CA", 0.0),
              row("Fixed RAG@1", "baseline", "coverage", 1.0),
              row("Fixed RAG@1", "baseline", "CA", 0.0),
              row("Fixed RAG@2", "baseline", "coverage", 1.0),
              row("Fixed RAG@2", "baseline", "CA", 0.5)]
    for tau, coverage in (("0.5", 0.5), ("0.9", 1.0)):
        sweeps += [row("Raw-Gated", f"τ_hi={tau}", "coverage", coverage),
                   row("Raw-Gated", f"τ_hi={tau}", "CA", 0.75),
                   row("Calibrated-Gated", f"τ_hi={tau}", "coverage", 0.0),
                   row("Calibrated-Gated", f"τ_hi={tau}", "CA", None)]
    out = build("trace_risk_coverage", {"trace_sweeps": sweeps})
    try:
        (ax,) = out.figure.axes
        labels = sorted(text.get_text() for text in ax.texts)
        assert labels == ["Fixed RAG@2", "Parametric only = Fixed RAG@1"], labels
        assert all(text.get_horizontalalignment() == "right" for text in ax.texts)
        assert sorted(ax.get_legend_handles_labels()[1]) == [
            "Calibrated-Gated (n.a.)", "Raw-Gated"]
    finally:
        plt.close(out.figure)


def test_every_arm_point_of_success_against_calls_is_in_its_arms_look() -> None:
    out = build("cost_success", default_rows())
    try:
        for ax in out.figure.axes:
            for handle, text in zip(*ax.get_legend_handles_labels()):
                line = cast(Any, handle).lines[0]  # an errorbar container's data line
                look = arm_look(text)
                assert (to_hex(line.get_color()), line.get_marker()) == \
                    (look.color.lower(), look.marker), text
    finally:
        plt.close(out.figure)


def test_ece_by_depth_on_traces_draws_raw_and_calibrated_in_the_controllers_looks() -> None:
    out = build("trace_ece_by_depth", default_rows())
    try:
        (ax,) = out.figure.axes
        labels = ax.get_legend_handles_labels()[1]
        assert labels == ["raw · hotpotqa", "raw · nq", "calibrated · hotpotqa",
                          "calibrated · nq"]
        lines = ax.get_lines()
        assert [to_hex(line.get_color()) for line in lines[::2]] == [
            arm_look("Raw-Gated").color.lower(), arm_look("Calibrated-Gated").color.lower()]
        assert list(cast("Sequence[float]", lines[0].get_xdata())) == [0, 1, 2, 3]
        assert list(cast("Sequence[float]", lines[0].get_ydata())) == pytest.approx(
            [0.3, 0.28, 0.26, 0.24])
    finally:
        plt.close(out.figure)


@pytest.fixture(scope="module")
def trace_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db holding only the trace sim's states (the second seed's study alone)."""
    from analysis.replay.trace_sim import sim_traces
    from core import store
    from core.store import traces as traces_store

    path = tmp_path_factory.mktemp("traces") / "lab.db"
    db = store.connect(path)
    traces_store.write_traces(db, [traces_store.TraceRecord(
        run=r.run, model=r.model, dataset=r.dataset, set_name=r.set_name,
        question_id=r.question_id, depth=int(r.depth), plan_sha256=r.plan_sha256,
        answer=r.answer, confidence=float(r.confidence), parsed=True, correct=bool(r.correct),
        prompt_tokens=int(r.prompt_tokens), completion_tokens=int(r.completion_tokens))
        for r in sim_traces(9).itertuples()])
    db.conn.close()
    return path


TRACE_OPTIONS = ("--tau-hi", "0.8", "--tau-lo", "0.2", "--max-retrievals", "2",
                 "--split-seed", "3", "--fit-depths", "all")


def _json(db: Path, *args: str) -> list[dict[str, Any]]:
    code, out, err = lab(db, *args)
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def test_lab_figures_takes_the_trace_options_as_lab_results_does(trace_db: Path, tmp_path: Path
                                                                ) -> None:
    code, out, err = lab(trace_db, "figures", str(tmp_path / "f"), "--resamples", "20",
                         "--format", "svg", "--table", "trace_sweeps", "--table",
                         "trace_table2", *TRACE_OPTIONS)
    assert code == 0, err
    assert "wrote 4 figures" in out
    table2 = _json(trace_db, "results", "trace_table2", "--format", "json", "--resamples",
                   "20", *TRACE_OPTIONS)
    side = json.loads((tmp_path / "f" / "trace_ece_by_depth.json").read_text(encoding="utf-8"))
    assert side["rows"] == [r for r in table2 if r["measure"] in ("ece_raw", "ece_cal")]
    assert all("τ_hi=0.8" in r["detail"] and "split seed 3" in r["detail"]
               for r in side["rows"])
    sweeps = _json(trace_db, "results", "trace_sweeps", "--format", "json", "--resamples",
                   "20", *TRACE_OPTIONS)
    side = json.loads((tmp_path / "f" / "trace_oa_cost.json").read_text(encoding="utf-8"))
    assert side["rows"] and all(r in sweeps for r in side["rows"])
    default = _json(trace_db, "results", "trace_table2", "--format", "json",
                    "--resamples", "20")
    assert [r["estimate"] for r in default] != [r["estimate"] for r in table2]


def test_lab_report_takes_the_trace_options(trace_db: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    code, _, err = lab(trace_db, "report", str(page), "--resamples", "20", "--split-seed",
                       "3", "--tau-hi", "0.8")
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "split seed 3" in html and "τ_hi=0.8" in html
    assert "split seed 0" not in html


def test_a_table_no_figure_draws_says_so_in_one_line(trace_db: Path, tmp_path: Path) -> None:
    code, out, err = lab(trace_db, "figures", str(tmp_path / "n"), "--resamples", "20",
                         "--table", "trace_table1")
    assert code == 0, err
    assert err.strip().splitlines() == [
        "no figure draws the trace_table1 table; `lab results trace_table1` prints it"]
    assert "wrote 0 figures" in out


def test_arms_that_figure_4_pairs_differ_in_colour_and_in_greyscale() -> None:
    """Figure 4's bars carry no marker, so two arms drawn there must differ by colour
    alone, in greyscale too: budget and two_source once shared orange."""
    from matplotlib.colors import to_rgb

    from tests.helpers.figure_rows import ARMS

    def grey(arm: str) -> float:
        red, green, blue = to_rgb(arm_look(arm).color)
        return 0.299 * red + 0.587 * green + 0.114 * blue

    colours = [arm_look(a).color for a in ARMS]
    assert len(set(colours)) == len(ARMS), colours
    assert abs(grey("budget") - grey("two_source")) > 0.2
    out = build("answer_action_by_budget", _budget_rows())
    try:
        ax = next(ax for ax in out.figure.axes if ax.get_visible())
        bars = sorted(cast("Sequence[Rectangle]", ax.patches), key=lambda p: p.get_x())
        faces = [to_hex(b.get_facecolor()[:3]) for b in bars[1::2]]
        assert len(set(faces)) == len(ARMS), faces
    finally:
        plt.close(out.figure)


def test_a_caption_gives_each_unit_its_own_range() -> None:
    """Figure 1 (right) draws judgment shares and question shares: the caption's n says
    each in its own unit, never one range under one of them."""
    from analysis.figures.caption import provenance
    from tests.helpers.figure_rows import synthetic_study

    out = build("judged_but_not_acted", default_rows())
    try:
        rows = [r | ({"n": 93, "unit": "judgments"} if r["measure"] == "USELESS on failed"
                     else {"n": 2 if i == 1 else 30, "unit": "questions"})
                for i, r in enumerate(out.rows)]
        caption = provenance(synthetic_study(), rows, "").caption
        assert "n = 93 judgments, 2–30 questions" in caption or \
            "n = 2–30 questions, 93 judgments" in caption, caption
        assert "2–93" not in caption
    finally:
        plt.close(out.figure)


def test_a_bar_of_zero_says_0_and_an_undefined_one_n_a() -> None:
    """A share of 0 draws a bar of no height, which would read as a bar that is missing:
    it is labelled "0" at its place, an undefined one "n.a.", and a bar that shows its
    height is labelled neither way (Figure 1, right, and Figure 4)."""
    from tests.helpers.figure_rows import MODELS

    rows = default_rows()
    answered = [r for r in rows["judgments"] if r["measure"] == "answered after 5 own useless"]
    zero, undefined = answered[0]["model"], answered[1]["model"]
    judged = [r | ({"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.0}
                   if r["model"] == zero and r in answered else
                   {"estimate": None, "ci_low": None, "ci_high": None}
                   if r["model"] == undefined and r in answered else {})
              for r in rows["judgments"]]
    out = build("judged_but_not_acted", rows | {"judgments": judged})
    try:
        (ax,) = out.figure.axes
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        marks = {t.get_text(): t.xy[0] for t in ax.texts if isinstance(t, Annotation)}
        assert set(marks) == {"0", "n.a."}, marks
        width = 0.38  # the answered bar is the right one of each pair
        assert marks["0"] == pytest.approx(ticks.index(zero) + width / 2), (marks, ticks)
        assert marks["n.a."] == pytest.approx(ticks.index(undefined) + width / 2)
        assert len(ticks) == len(MODELS)
    finally:
        plt.close(out.figure)

    budgets = _budget_rows()
    first = budgets["budgets"][0]
    fixed = [r | {"estimate": 0.0, "ci_low": 0.0, "ci_high": 0.0} if r is first else r
             for r in budgets["budgets"]]
    out = build("answer_action_by_budget", budgets | {"budgets": fixed})
    try:
        labelled = [t for ax in out.figure.axes for t in ax.texts
                    if isinstance(t, Annotation) and t.get_text() == "0"]
        assert len(labelled) == 1, [t.get_text() for ax in out.figure.axes for t in ax.texts]
        assert labelled[0].xy[1] == 0.0
    finally:
        plt.close(out.figure)


@pytest.mark.parametrize("name", ("success_by_regime", "hazard_by_run", "cost_success"))
def test_stacked_panels_in_one_column_share_one_legend_above_them(name: str) -> None:
    """At `--style column` a legend beside each stacked panel took half the width from
    every panel: when every panel keys the same entries, one legend above the first
    panel's title keys them all, inside the figure, and the panels span the column. A
    panel keying other entries keeps its own legend beside it; at `--style page` each
    panel keeps its legend beside it."""
    from analysis.figures.style import with_caption

    def laid_out(rows: dict[str, list[RowDict]], style: str) -> Drawn:
        out = build(name, rows, style)
        with styled(STYLES[style]):
            with_caption(out.figure, "caption", STYLES[style])
        out.figure.canvas.draw()
        return out

    out = laid_out(default_rows(), "column")
    try:
        fig = out.figure
        keyed = [ax for ax in fig.axes if ax.get_legend() is not None]
        assert len(keyed) == 1, len(keyed)
        first = fig.axes[0]
        shown = first.get_legend()
        assert shown is not None
        legend = shown.get_window_extent()
        title = first.title.get_window_extent()
        whole = fig.bbox
        assert legend.y0 >= title.y1 and legend.y1 <= whole.y1 + 1, (legend, title)
        assert legend.x0 >= whole.x0 - 1 and legend.x1 <= whole.x1 + 1, (legend, whole)
        assert all(ax.get_position().width > 0.7 for ax in fig.axes), \
            [ax.get_position().width for ax in fig.axes]
        shared = [ax.get_window_extent().height for ax in fig.axes]
    finally:
        plt.close(out.figure)

    rows = default_rows()
    table = {"success_by_regime": "success", "hazard_by_run": "hazard"}.get(name, "cost")
    last = rows[table][-1]["model"]
    fewer = [r for r in rows[table] if not (r["model"] == last and r["arm"] == "none")]
    for style, rows_drawn in (("column", rows | {table: fewer}), ("page", rows)):
        out = laid_out(rows_drawn, style)
        try:
            assert all(ax.get_legend() is not None for ax in out.figure.axes), style
            if style == "column":  # the legend above took no height from the panels
                beside = [ax.get_window_extent().height for ax in out.figure.axes]
                assert min(shared) >= 0.98 * min(beside), (shared, beside)
        finally:
            plt.close(out.figure)
