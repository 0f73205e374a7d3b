"""Figure text is plain: a model whose name holds a control character (`ESC[2J`) is
drawn into a well-formed SVG (an XML parser reads it) and a PDF, with the character
taken out of its labels, legends, caption and metadata (`analysis.figures.plain_text`)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from analysis.figures.style import STYLES, save, svg_text
from tests.helpers.cli import lab
from tests.helpers.hostile import NAME, hostile_lab

CONTROL = "\x1b\x07\x0b\x01"


@pytest.fixture()
def hostile_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[Path, Path]]:
    """A lab.db whose model name holds `ESC[2J`."""
    with hostile_lab(tmp_path, capsys) as paths:
        yield paths


def _no_controls(data: bytes) -> None:
    assert not any(c.encode() in data for c in CONTROL), data[:200]


def _a_pdf(data: bytes) -> None:
    """A whole PDF (its text is in compressed streams; its metadata is not)."""
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")


def test_lab_figures_with_a_control_character_in_a_model_name(hostile_db: tuple[Path, Path],
                                                              tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    db, config = hostile_db
    out = tmp_path / "figs"
    code, _, err = lab(capsys, "--db", db, "--config", config, "figures", out,
                       "--resamples", "20", "--format", "svg,pdf")
    assert code == 0, err
    svgs = sorted(out.glob("*.svg"))
    assert svgs and sorted(out.glob("*.pdf"))
    named = 0
    for svg in svgs:
        data = svg.read_bytes()
        ET.fromstring(data)  # well-formed XML
        _no_controls(data)
        named += b"or[2Jacle" in data
    assert named, "no figure names the model"
    for pdf in out.glob("*.pdf"):
        _a_pdf(pdf.read_bytes())


def test_every_text_of_a_figure_and_its_metadata_is_plain(tmp_path: Path) -> None:
    """Tick labels (written when drawn), title, axis labels, legend, annotation and
    caption, each holding a control character, in SVG and PDF."""
    fig, ax = plt.subplots()
    ax.bar([f"m{c}one" for c in CONTROL], [1, 2, 3, 4], label=f"le{CONTROL}gend")
    ax.set_title(f"ti{CONTROL}tle")
    ax.set_ylabel(f"y{CONTROL}")
    ax.annotate(f"no{CONTROL}te", (0, 1))
    ax.legend()
    paths = save(fig, tmp_path / "f", ("svg", "pdf"), STYLES["column"],
                 caption=f"cap{CONTROL}tion", keywords=f"run{CONTROL}")
    svg = paths[0].read_bytes()
    ET.fromstring(svg)
    _no_controls(svg)
    for word in (b"mone", b"legend", b"title", b"note", b"caption"):
        assert word in svg, word
    pdf = paths[1].read_bytes()
    _a_pdf(pdf)
    assert b"/Subject (caption)" in pdf and b"/Keywords (run)" in pdf  # the metadata
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], label=NAME)
    ax.legend()
    text = svg_text(fig)
    ET.fromstring(text)
    assert "or[2Jacle" in text and "\x1b" not in text


def test_a_line_break_in_a_figure_text_stays_and_each_line_is_plain(tmp_path: Path) -> None:
    """A forest cell's title is two lines (model, then measure · scope): the line break
    stays (matplotlib draws each line as a text of its own) while each line loses its
    control characters; it was flattened to one line that ran past the figure's edge."""
    fig, ax = plt.subplots()
    ax.set_title(f"mo{CONTROL}del\nmeasure · scope", loc="left")
    (path,) = save(fig, tmp_path / "f", ("svg",), STYLES["column"])
    assert ax.get_title(loc="left") == "model\nmeasure · scope"
    svg = path.read_bytes()
    ET.fromstring(svg)
    _no_controls(svg)
