"""The report's figures, kept in the results cache: `lab report` run again on the same
rows (another title, another file, the console's `W` again) serves each figure's SVG
instead of drawing every figure again.

A figure is a pure function of the study's rows, the style, lab's analysis code and
matplotlib, so that is the key: a sha256 of the whole `StudyRows` as canonical JSON
(everything the figures read: tables, rows, provenance, selection, resamples), the
style, matplotlib's version, and the results cache's own version, schema and
analysis-code hash (`ResultsCache.shared_key`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, fields
from typing import Any

from analysis.base.cache import ResultsCache
from analysis.figures import FIGURES, Rendered, render_svgs
from analysis.figures.study import StudyRows
from analysis.figures.style import Style

KIND = "report_svgs"
"""What the cache entries hold (`ResultsCache.shared_key`'s name)."""


def report_svgs(db_path: str, study: StudyRows, style: Style) -> list[Rendered]:
    """Every figure of the report as SVG text (`render_svgs`), drawn once per rows and
    style and then read from `<lab.db>.results/`.

    Args:
        db_path: the lab.db file ("" for an in-memory one: drawn, not kept).
        study: the results rows.
        style: the figure style.

    Returns:
        The figures in report order, as `render_svgs` returns them.
    """
    if not db_path:
        return render_svgs(study, style)
    import matplotlib

    cache = ResultsCache(db_path)
    key = cache.shared_key(KIND, {
        "rows": content_hash(study), "style": asdict(style),
        "matplotlib": matplotlib.__version__})
    kept = cache.get(key)
    by_name = {f.name: f for f in FIGURES}
    if isinstance(kept, list) and all(name in by_name for name, *_ in kept):
        return [Rendered(by_name[name], svg, rows, note) for name, svg, rows, note in kept]
    rendered = render_svgs(study, style)
    cache.put(key, [(r.figure.name, r.svg, r.rows, r.note) for r in rendered])
    return rendered


def content_hash(study: StudyRows) -> str:
    """sha256 of what `study` holds, as JSON with sorted keys (a value JSON cannot hold is
    written as its repr): equal for equal content however it was built (computed, or
    read back from the results cache).

    Every field is taken as it is, except the spec (how the tables were computed: no
    figure reads it, and what it changes is in the rows) and the tables, whose rows are
    `rows` already (`Table.dicts()`): of each, its name, title, notes, layout and formats
    and its number of rows (a deep copy of every row object cost seconds on a large
    study).
    """
    content: dict[str, Any] = {f.name: getattr(study, f.name) for f in fields(study)
                               if f.name != "spec"}  # its effect is in the rows
    content["selection"] = asdict(study.selection)
    content["tables"] = [[t.name, t.title, t.notes, t.layout, t.ci_columns, t.formats,
                          t.headers, t.pooled, len(t.rows)] for t in study.tables]
    text = json.dumps(content, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
