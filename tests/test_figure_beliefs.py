"""The main paper's Figure 6 from the beliefs table, on a study built through the real
queue: its sidecar rows are `lab results beliefs --format json`'s (persistent, after a
failed result), three panels hold one report line and one reference line per model, and
the held-out persistent regime is the default."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from analysis.figures.beliefs import PANELS
from tests.helpers.figures_study import figures_study
from tests.helpers.report_study import RESAMPLES, lab, results_json

MODELS = ("sim-never", "sim-own5")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return figures_study(tmp_path_factory)


def test_figure_6_sidecar_rows_are_the_beliefs_tables_json_rows(study: Path, tmp_path: Path
                                                               ) -> None:
    code, out, err = lab(study, "figures", str(tmp_path), "--table", "beliefs", "--resamples",
                         str(RESAMPLES), "--format", "png", "--style", "column")
    assert code == 0, err
    assert "wrote 1 figure (" in out
    side = json.loads((tmp_path / "beliefs.json").read_text(encoding="utf-8"))
    drawn = {m for panel in PANELS for m in panel[:2]}
    want = [r for r in results_json(study, "beliefs") if r["regimes"] == "persistent"
            and r["measure"] in drawn and r["scope"] != "k=0" and r["budget"] == 8]
    assert want and side["rows"] == want
    assert {r["model"] for r in side["rows"]} == set(MODELS)


def test_figure_6_draws_a_report_and_a_reference_line_per_model_in_three_panels(study: Path
                                                                               ) -> None:
    from analysis.figures import FIGURES
    from analysis.figures.select import DEFAULT, declare
    from analysis.figures.study import study_rows
    from analysis.figures.style import STYLES, styled
    from core import store
    from core.store.selection import Selection

    (fig,) = [f for f in FIGURES if f.name == "beliefs"]
    rows, _ = declare(study_rows(store.connect(study), Selection(), RESAMPLES,
                                 names=("beliefs",)), DEFAULT)
    for style in ("column", "page"):
        with styled(STYLES[style]):
            out = fig.build(rows, STYLES[style])
        try:
            panels = out.figure.axes  # type: ignore[union-attr]
            assert len(panels) == 3
            for ax, (own, reference, _) in zip(panels, PANELS):
                lines = [line for line in ax.get_lines() if len(line.get_xdata())]
                assert len(lines) == 2 * len(MODELS), (style, own)
                solid = [line for line in lines if line.get_linestyle() == "-"]
                dashed = [line for line in lines if line.get_linestyle() == "--"]
                assert len(solid) == len(dashed) == len(MODELS)
                # one colour per model, the same for its report and its reference
                assert {line.get_color() for line in solid} == \
                    {line.get_color() for line in dashed}
                assert len({line.get_color() for line in solid}) == len(MODELS)
                # the reference is drawn from its rows: persistent, k = 1 … 7
                want = sorted((int(r["scope"][2:]), r["estimate"])
                              for r in rows.table_rows("beliefs")
                              if r["measure"] == reference and r["model"] == "sim-never"
                              and r["regimes"] == "persistent" and r["scope"] != "k=0")
                # (each series a little aside of its k, so equal series stay visible)
                got = [list(zip(line.get_xdata(), line.get_ydata())) for line in dashed]
                assert [(float(x), float(y)) for x, y in want] in [
                    [(float(round(x)), float(y)) for x, y in g] for g in got], (style, reference)
                assert all(0 < abs(x - round(x)) < 0.2 for g in got for x, _ in g)
            assert "persistent regime" in out.note  # type: ignore[union-attr]
        finally:
            plt.close(out.figure)  # type: ignore[union-attr]
