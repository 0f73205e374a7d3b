"""Prompt files: a long-lived process serves the text on disk now, and every episode
records the sha256 of the files it used."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from pathlib import Path

import pytest

import prompts
from core import store
from core.conditions import parse_condition
from core.data import Question
from core.models.registry import builtin_models
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from core.store.episodes import prompt_set
from jobs.kinds.episodes import run_questions
from tests.helpers.builders import make_pool
from tests.helpers.scripted import ScriptedClient

FINISH = "Thought: I know it\nAction: finish\nAction Input: Lake 1"


@pytest.fixture
def prompt_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of prompts/ that load() reads (the real files are never touched)."""
    copy = tmp_path / "prompts"
    shutil.copytree(prompts.PROMPT_DIR, copy, ignore=shutil.ignore_patterns("*.py", "__*"))
    monkeypatch.setattr(prompts, "PROMPT_DIR", copy)
    return copy


def _rewrite(path: Path, text: str) -> None:
    """Replace a file's content and move its mtime on (as any later edit would)."""
    st = path.stat()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_load_serves_the_text_on_disk_now(prompt_dir: Path) -> None:
    path = prompt_dir / "question.txt"
    old = prompts.load("question")
    assert old == path.read_text(encoding="utf-8").rstrip("\n")
    assert prompts.load("question") is prompts.load("question")  # cached while unchanged
    new = old.replace("Question", "Problems")
    assert len(new) == len(old)  # same size: the stat stamp still sees the change
    _rewrite(path, new + "\n")
    assert prompts.load("question") == new
    assert prompts.current("question").sha256 == _sha(path)


def test_load_reads_under_the_prompt_dir_of_the_moment(prompt_dir: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    shutil.copytree(prompt_dir, other)
    (other / "question.txt").write_text("Elsewhere: {question}\n", encoding="utf-8")
    first = prompts.load("question")
    monkeypatch.setattr(prompts, "PROMPT_DIR", other)
    assert prompts.load("question") == "Elsewhere: {question}"
    monkeypatch.setattr(prompts, "PROMPT_DIR", prompt_dir)
    assert prompts.load("question") == first


def test_an_episode_keeps_the_version_it_read_first(prompt_dir: Path) -> None:
    path = prompt_dir / "counter.txt"
    first = prompts.load("counter")
    with prompts.recording() as rec:
        assert prompts.load("counter") == first
        _rewrite(path, "[Left: {remaining}]\n")
        assert prompts.load("counter") == first  # mid-episode: one version per file
    assert prompts.load("counter") == "[Left: {remaining}]"
    assert set(rec.hashes()) == {"prompts/counter.txt"}


def test_prompt_changed_between_two_episodes_in_one_process(prompt_dir: Path, db_path: Path
                                                           ) -> None:
    db = store.connect(db_path)
    pool = make_pool(2)
    store.insert_questions(db, pool)
    cell = CellSpec(builtin_models()["sim-own5"], parse_condition("none"),
                    parse_regime("clean"), None, 4, 0)
    cell_id = store.ensure_cell(db, store.ensure_run(db, "p"), cell.columns())
    client = ScriptedClient(acts=[FINISH])
    system = prompt_dir / "system.txt"
    old_sha = _sha(system)

    def one(question: Question) -> tuple[str, str]:
        asyncio.run(run_questions(db, cell_id, cell, [question], ForeignPool(pool), client))
        sent = client.calls[-1][1][0]["content"]  # the system message the model saw
        (sha,) = db.conn.execute("SELECT prompts_sha256 FROM episodes WHERE question_id = ?",
                                 (question.id,)).fetchone()
        return sent, sha

    sent1, set1 = one(pool[0])
    _rewrite(system, system.read_text(encoding="utf-8") + "Answer in as few words as you can.\n")
    sent2, set2 = one(pool[1])
    assert "as few words" not in sent1 and "as few words" in sent2
    assert prompt_set(db, set1)["prompts/system.txt"] == old_sha
    assert prompt_set(db, set2)["prompts/system.txt"] == _sha(system) != old_sha
    assert set1 != set2
    unchanged = {k: v for k, v in prompt_set(db, set2).items() if k != "prompts/system.txt"}
    assert unchanged.items() <= prompt_set(db, set1).items()
