"""`lab results all --format json` on a fixed sim study prints exactly the golden bytes.

Moves and refactors keep every results table byte-identical. The golden file
(`tests/data/results_all.golden.json`) was written from the code before the moves; a
difference here is a change of results, so fix the code, not the file (see
`tests/golden_study.py` for the study and for when the file may be rewritten).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.golden_study import GOLDEN, build_study, results_all


def test_results_all_json_is_byte_identical_to_the_golden_file(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    build_study(path)
    got, want = results_all(path), GOLDEN.read_text(encoding="utf-8")
    if got != want:
        got_rows, want_rows = json.loads(got), json.loads(want)
        assert len(got_rows) == len(want_rows), (len(got_rows), len(want_rows))
        for i, (g, w) in enumerate(zip(got_rows, want_rows)):
            assert g == w, (i, {k: (g.get(k), w.get(k)) for k in set(g) | set(w)
                                if g.get(k) != w.get(k)}, w)
        assert got == want, "same rows, different bytes (key order or JSON formatting)"
