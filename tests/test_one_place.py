"""Each shared thing is defined in one place, and the helpers behave."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.data import Paragraph, Question
from core.kb import ref_title, resolve_ref

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "analysis", "jobs", "console")


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


@pytest.mark.parametrize("pattern, home", [
    (r"separators=\(\",\", *\":\"\)", "core/canonical.py"),
    (r"hashlib\.blake2b\(", "core/canonical.py"),
    (r"re\.compile\(r?[\"'][^\"']*<think>", "core/thinking.py"),
    (r"^\s*LAMBDA\s*=\s*0\.05", "core/conditions.py"),
    (r"def _db\(ctx", None),
    (r"\.rpartition\(\"#\"\)", "core/kb.py"),
    # writing a file whole: temporary name, then a rename (a DataFrame's rename of its
    # columns or index is not a file's)
    (r"os\.replace\(|\.rename\((?!columns=|index=)|\b\w*(tmp|temp)\w*\.replace\(",
     "core/atomic_write.py"),
])
def test_defined_in_one_place(pattern: str, home: str | None) -> None:
    rx = re.compile(pattern, re.MULTILINE)
    where = sorted(path for path, text in _sources().items() if rx.search(text))
    assert where == ([home] if home else []), f"{pattern!r} written in {where}"


def _question() -> Question:
    pages = (Paragraph("Alpha", ("a.",)), Paragraph("Beta", ("b.",)))
    return Question(id="q#1", dataset="d", question="?", answer="a", type="bridge",
                    level="easy", paragraphs=pages, supporting_facts=())


def test_ref_title_resolves_and_falls_back() -> None:
    q = _question()
    by_id = {q.id: q}
    assert resolve_ref("q#1#1", by_id.get) == (q, 1)
    assert ref_title("q#1#0", by_id.get) == "Alpha"
    for bad in ("q#1#2", "q#1#x", "nope#0", "q#1"):
        assert resolve_ref(bad, by_id.get) is None
        assert ref_title(bad, by_id.get) == bad


def test_run_lookups_live_in_the_store(tmp_path: Path) -> None:
    from core import store

    db = store.connect(tmp_path / "lab.db")
    assert store.run_id(db, "r") is None and store.cell_ids_by_hash(db, "r") == {}
    rid = store.ensure_run(db, "r")
    cell = {"model": "m", "model_spec": "{}", "condition": "none", "condition_spec": "{}",
            "condition_hash": "c", "regime": "clean", "regime_hash": "g",
            "question_set": "demo", "budget": 8, "seed": 0, "replicate": 0, "spec_hash": "h1"}
    cid = store.ensure_cell(db, rid, cell)
    assert store.run_id(db, "r") == rid
    assert store.cell_ids_by_hash(db, "r") == {"h1": cid}
    assert store.cell_ids_by_hash(db, "other") == {}
