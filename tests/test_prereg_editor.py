"""`lab prereg edit` / `lab prereg new --edit`: the $EDITOR round-trip (click.edit) through
the real CLI against a real temp lab.db, with EDITOR set to a small script."""

from __future__ import annotations

import hashlib
import json
import stat
import sys
from pathlib import Path

import pytest

from console.cli import main
from core import store
from core.store import prereg as rows

TESTS = [{"id": "H1", "kind": "delta_bound", "condition": "none", "bound": "upper",
          "threshold": 0.06}]


def _editor(tmp_path: Path, body: str) -> str:
    """An executable that runs `body` (Python) with `text` = the file's text, then writes
    `text` back."""
    script = tmp_path / "editor.py"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom pathlib import Path\n"
                      f"p = Path(sys.argv[1])\ntext = p.read_text(encoding='utf-8')\n"
                      f"{body}\np.write_text(text, encoding='utf-8')\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _dump_hash(path: Path) -> str:
    db = store.connect(path, create=False)
    try:
        return hashlib.sha256("\n".join(db.conn.iterdump()).encode()).hexdigest()
    finally:
        db.conn.close()


@pytest.fixture
def draft(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    path = tmp_path / "lab.db"
    assert main(["--db", str(path), "init"]) == 0
    assert main(["--db", str(path), "prereg", "new", "--title", "Old title"]) == 0
    return path


def _row(path: Path) -> dict:
    db = store.connect(path, create=False)
    try:
        return rows.amendment(db, "A1")
    finally:
        db.conn.close()


def test_edit_round_trips_through_the_editor(draft: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    edit = ("text = text.replace('title: Old title', 'title: New title')\n"
            f"text = text.replace('--- tests (JSON list) ---\\n[]', "
            f"'--- tests (JSON list) ---\\n' + {json.dumps(TESTS)!r})\n"
            "text = text.replace('--- tests', 'Why it matters.\\n--- tests')")
    monkeypatch.setenv("EDITOR", _editor(tmp_path, edit))
    assert main(["--db", str(draft), "prereg", "edit", "A1"]) == 0
    assert "A1 updated" in capsys.readouterr().out
    row = _row(draft)
    assert row["title"] == "New title"
    assert row["tests"] == TESTS
    assert row["body"].endswith("Why it matters.")


def test_edit_with_broken_markers_changes_nothing(draft: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EDITOR", _editor(tmp_path, "text = 'scribbled over'"))
    before = _dump_hash(draft)
    assert main(["--db", str(draft), "prereg", "edit", "A1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lost its section markers" in err
    assert _dump_hash(draft) == before


def test_edit_without_an_editor_is_one_line(draft: Path, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    before = _dump_hash(draft)
    assert main(["--db", str(draft), "prereg", "edit", "A1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "set $EDITOR" in err
    assert _dump_hash(draft) == before


def test_new_in_the_editor(draft: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VISUAL", _editor(tmp_path, "text = text.replace('title: ', "
                                                   "'title: Written in the editor')"))
    assert main(["--db", str(draft), "prereg", "new", "--edit"]) == 0
    assert capsys.readouterr().out.strip() == "A2"
    db = store.connect(draft, create=False)
    assert rows.amendment(db, "A2")["title"] == "Written in the editor"


def test_new_needs_a_title(draft: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _dump_hash(draft)
    assert main(["--db", str(draft), "prereg", "new"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs a title" in err
    assert _dump_hash(draft) == before
