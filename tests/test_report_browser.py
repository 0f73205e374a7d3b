"""`lab report` in a real browser: headless Chromium opens the page with no
console error, no uncaught exception, no failed load and no broken image, every figure
drawn, tables sortable, figures zoom on a click; at 1400 px the title, generation time,
summary and verdicts are in the first screen; at 390 px (a phone) nothing overflows
sideways; printed (print media at an A4 page's width) no table is clipped. PNGs of
each first screen are saved under the test's tmp dir.

Chromium is Debian's `chromium` package (.ci/run installs it); without it these tests
skip and say so. The browser is driven over the DevTools protocol on a pipe
(`tests/helpers/cdp.py`), so nothing beyond the standard library is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.helpers.cdp import Browser, Page, chromium, find_browser
from tests.helpers.report_study import RESAMPLES, lab, registered_study

pytestmark = pytest.mark.skipif(
    find_browser() is None,
    reason="chromium is not installed (Debian: apt-get install -y chromium; .ci/run "
           "installs it)")


_BROWSER: list[Browser] = []
"""The module's one Chromium (`_one_browser`)."""


@pytest.fixture(scope="module", autouse=True)
def _one_browser() -> Iterator[None]:
    """One Chromium for all the module's checks, each page loaded in a tab of its own
    (a browser started for each check cost about 0.7 s of CPU more)."""
    with chromium() as browser:
        _BROWSER.append(browser)
        try:
            yield
        finally:
            _BROWSER.clear()


def open_page(url: str, width: int = 1280, height: int = 900
              ) -> AbstractContextManager[Page]:
    """`url` loaded in a new tab of the module's browser at `width` x `height`."""
    return _BROWSER[0].open(url, width, height)


CHECKS = """JSON.stringify({
  images: document.images.length,
  broken: Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).length,
  svgs: Array.from(document.querySelectorAll('figure svg')).map(
      s => [s.getBoundingClientRect().width, s.getBoundingClientRect().height]),
  tables: document.querySelectorAll('table.sortable[data-table]').length,
  sheets: document.styleSheets.length,
  title: document.title,
  h1: document.querySelector('h1').textContent,
})"""
SORT = """(function () {
  var t = document.querySelector('table[data-table="success"]');
  var col = Array.from(t.tHead.rows[0].cells).findIndex(c => c.dataset.f === 'estimate');
  var read = () => Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[col].dataset.v));
  t.tHead.rows[0].cells[col].click();
  var up = read();
  t.tHead.rows[0].cells[col].click();
  var down = read();
  var sort = t.tHead.rows[0].cells[col].getAttribute('aria-sort');
  return JSON.stringify({up: up, down: down, sort: sort});
})()"""


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = registered_study(tmp_path_factory)
    path = tmp_path_factory.mktemp("browser") / "study.html"
    code, _, err = lab(db, "report", str(path), "--resamples", str(RESAMPLES), "--title",
                       "Rule study")
    assert code == 0, err
    return path


def test_the_report_opens_without_errors_and_draws_every_figure(report_file: Path, tmp_path: Path
                                                               ) -> None:
    with open_page(report_file.as_uri()) as page:
        checks = json.loads(page.evaluate(CHECKS))
        shot = page.screenshot(tmp_path / "report-first-screen.png")
        errors = page.collect_errors()
    assert errors == [], errors
    assert checks["broken"] == 0
    assert len(checks["svgs"]) == 12  # every figure the study feeds (no trace states)
    assert all(w > 200 and h > 100 for w, h in checks["svgs"]), checks["svgs"]
    assert checks["tables"] >= 11 and checks["sheets"] == 1
    assert checks["h1"] == "Rule study" and checks["title"] == "Rule study"
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1280, 900)


def test_tables_sort_when_javascript_is_on(report_file: Path) -> None:
    with open_page(report_file.as_uri()) as page:
        result = json.loads(page.evaluate(SORT))
        assert page.collect_errors() == []
    up = [x for x in result["up"] if x == x]
    down = [x for x in result["down"] if x == x]
    assert up == sorted(up) and down == sorted(down, reverse=True) and len(up) > 5
    assert result["sort"] == "descending"


def test_the_check_catches_a_broken_image_and_a_console_error(tmp_path: Path) -> None:
    page_file = tmp_path / "broken.html"
    page_file.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                         "<title>x</title></head><body><img src=\"missing.png\" alt=\"x\">"
                         "<script>console.error('boom')</script></body></html>",
                         encoding="utf-8")
    with open_page(page_file.as_uri()) as page:
        broken = page.evaluate("Array.from(document.images).filter(i => i.naturalWidth === 0)"
                               ".length")
        errors = page.collect_errors()
    assert broken == 1
    assert any("boom" in e for e in errors), errors
    assert any("missing.png" in e for e in errors), errors


FIRST_SCREEN = """JSON.stringify(['h1', 'header time', '#summary', '#summary .verdicts'].map(
  function (q) { var e = document.querySelector(q);
                 return e ? [q, e.getBoundingClientRect().top, e.getBoundingClientRect().bottom]
                          : [q, null, null]; }))"""
OVERFLOW = """JSON.stringify({
  page: document.documentElement.scrollWidth,
  wide: Array.from(document.querySelectorAll('body *')).filter(function (e) {
      if (e.closest('.scroll, svg, details:not([open])')) { return false; }
      return e.getBoundingClientRect().right > window.innerWidth + 1 ||
             e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0;
    }).slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' +
                             e.textContent.slice(0, 40)),
})"""
TABLES_FIT = """JSON.stringify(Array.from(document.querySelectorAll('table')).filter(
  t => t.offsetParent !== null && t.getBoundingClientRect().right > window.innerWidth + 1
).map(t => (t.dataset.table || t.dataset.paper) + ' ' + t.getBoundingClientRect().right))"""


def test_title_time_summary_and_verdicts_are_in_the_first_screen(report_file: Path, tmp_path: Path
                                                                ) -> None:
    with open_page(report_file.as_uri(), 1400, 900) as page:
        where = json.loads(page.evaluate(FIRST_SCREEN))
        shot = page.screenshot(tmp_path / "report-1400.png")
        errors = page.collect_errors()
    assert errors == []
    for name, top, bottom in where:
        assert top is not None and 0 <= top and bottom <= 900, (name, top, bottom)
    assert shot.stat().st_size > 20_000


def test_nothing_overflows_sideways_on_a_phone(report_file: Path, tmp_path: Path) -> None:
    with open_page(report_file.as_uri(), 390, 844) as page:
        found = json.loads(page.evaluate(OVERFLOW))
        shot = page.screenshot(tmp_path / "report-390.png")
        errors = page.collect_errors()
    assert errors == []
    assert found["page"] <= 390 and found["wide"] == [], found
    png = shot.read_bytes()
    assert int.from_bytes(png[16:20], "big") == 390


def test_the_overflow_check_catches_a_wide_element(tmp_path: Path) -> None:
    page_file = tmp_path / "wide.html"
    page_file.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                         '<meta name="viewport" content="width=device-width">'
                         "<title>x</title></head><body><pre>" + "x" * 200
                         + "</pre></body></html>", encoding="utf-8")
    with open_page(page_file.as_uri(), 390, 844) as page:
        found = json.loads(page.evaluate(OVERFLOW))
    assert found["page"] > 390 and found["wide"]


def test_printed_no_table_is_clipped(report_file: Path) -> None:
    a4 = 703  # 210 mm less 12 mm margins each side, at 96 px per inch
    with open_page(report_file.as_uri(), a4, 1000) as page:
        page.pipe.call("Emulation.setEmulatedMedia", {"media": "print"}, page.session)
        clipped = json.loads(page.evaluate(TABLES_FIT))
        shown = page.evaluate("document.querySelectorAll('table.paper').length")
        scroll = page.evaluate("getComputedStyle(document.querySelector('.scroll')).overflowX")
    assert shown >= 5 and scroll == "visible"
    assert clipped == [], clipped


def test_a_click_zooms_a_figure_and_a_second_one_returns_it(report_file: Path) -> None:
    zoom = """(function () {
      var f = document.querySelector('figure.zoomable');
      var before = f.querySelector('svg').getBoundingClientRect().width;
      f.click();
      var zoomed = f.querySelector('svg').getBoundingClientRect().width;
      var cls = f.className;
      f.click();
      return JSON.stringify([before, zoomed, cls, f.className]);
    })()"""
    with open_page(report_file.as_uri(), 1400, 900) as page:
        before, zoomed, during, after = json.loads(page.evaluate(zoom))
        assert page.collect_errors() == []
    assert before <= 600 and zoomed > 1200
    assert "zoomed" in during and "zoomed" not in after
