"""`lab report` in a real browser: headless Chromium opens the page with no
console error, no uncaught exception, no failed load and no broken image, every figure
drawn, tables sortable; a PNG of the first screen is saved under the test's tmp dir.

Chromium is Debian's `chromium` package (.ci/run installs it); without it these tests
skip and say so. The browser is driven over the DevTools protocol on a pipe
(`tests/helpers/cdp.py`), so nothing beyond the standard library is needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cdp import find_browser, open_page
from tests.helpers.report_study import RESAMPLES, lab, study_db

pytestmark = pytest.mark.skipif(
    find_browser() is None,
    reason="chromium is not installed (Debian: apt-get install -y chromium; .ci/run "
           "installs it)")

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
    db = study_db(tmp_path_factory)
    path = tmp_path_factory.mktemp("browser") / "study.html"
    code, _, err = lab(db, "report", str(path), "--resamples", str(RESAMPLES))
    assert code == 0, err
    return path


def test_the_report_opens_without_errors_and_draws_every_figure(report_file, tmp_path):
    with open_page(report_file.as_uri()) as page:
        checks = json.loads(page.evaluate(CHECKS))
        shot = page.screenshot(tmp_path / "report-first-screen.png")
        errors = page.collect_errors()
    assert errors == [], errors
    assert checks["broken"] == 0
    assert len(checks["svgs"]) == 9
    assert all(w > 200 and h > 100 for w, h in checks["svgs"]), checks["svgs"]
    assert checks["tables"] >= 11 and checks["sheets"] == 1
    assert checks["h1"] == "lab report" and checks["title"].startswith("lab report")
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1280, 900)


def test_tables_sort_when_javascript_is_on(report_file):
    with open_page(report_file.as_uri()) as page:
        result = json.loads(page.evaluate(SORT))
        assert page.collect_errors() == []
    up = [x for x in result["up"] if x == x]
    down = [x for x in result["down"] if x == x]
    assert up == sorted(up) and down == sorted(down, reverse=True) and len(up) > 5
    assert result["sort"] == "descending"


def test_the_check_catches_a_broken_image_and_a_console_error(tmp_path):
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
