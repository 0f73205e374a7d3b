"""A figure is laid out once and drawn once for each format it is written in
(`analysis.figures.style.tight`): matplotlib would lay it out again before every format,
which doubled the CPU of `lab figures` and `lab report`, and the files stay the bytes
they were."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from analysis.figures import style
from analysis.figures.style import STYLES, new_figure, save, styled, svg_text

STYLE = STYLES["paper"]


def _figure() -> Figure:
    fig, (ax,) = new_figure(STYLE)
    ax.plot([0, 1, 2, 3], [0.2, 0.5, 0.4, 0.9], label="a series with a long name")
    ax.set_title("a panel")
    ax.set_xlabel("turn")
    ax.legend()
    return fig


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """Every `Figure.draw` call, rendering or not."""
    calls: list[Figure] = []
    draw = Figure.draw

    def counted(self: Figure, renderer: object) -> None:
        calls.append(self)
        draw(self, renderer)  # type: ignore[arg-type]

    monkeypatch.setattr(Figure, "draw", counted)
    return calls


def test_each_format_is_drawn_once(tmp_path: Path, draws: list[Figure]) -> None:
    with styled(STYLE):
        files = save(_figure(), tmp_path / "f", ("png", "svg", "pdf"), STYLE, "a caption")
    assert [p.suffix for p in files] == [".png", ".svg", ".pdf"]
    assert len(draws) == 3


def test_the_reports_svg_is_drawn_once(draws: list[Figure]) -> None:
    with styled(STYLE):
        assert svg_text(_figure()).startswith("<?xml")
    assert len(draws) == 1


def test_the_files_are_the_bytes_of_laying_out_before_each_format(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    formats = ("png", "svg", "pdf")
    with styled(STYLE):
        save(_figure(), tmp_path / "once", formats, STYLE, "a caption")
        monkeypatch.setattr(style, "tight", lambda fig, rect=(0.0, 0.0, 1.0, 1.0):
                            fig.tight_layout(rect=rect))  # matplotlib's own: again each time
        save(_figure(), tmp_path / "again", formats, STYLE, "a caption")
    for fmt in formats:
        assert (tmp_path / f"once.{fmt}").read_bytes() == (tmp_path / f"again.{fmt}").read_bytes()
