"""A lab.db whose stored text holds terminal escapes: a model named with `ESC[2J`
whose answers hold an OSC title set (ESC ] 0 ; … BEL) and a screen clear, questions
whose text holds both, and a question set named with them; each also holds `[/]`,
which Textual would read as markup (and fail on) where a widget is handed a str."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.models.backends import BACKENDS, Backend, register
from tests.helpers.cli import ReadsOutput, lab
from tests.helpers.toy_backend import OracleClient, OracleConfig

NAME = "or\x1b[2Jacle[/]"
NAME_SHOWN = "or\\x1b[2Jacle[/]"
QUESTION = "Which\x1b]0;pwned\x07 [/]city\x1b[2J?"
SET = "s\x1b]0;pwned\x07et[/]"
TOML = """
[models."or\\u001b[2Jacle[/]"]
backend = "oracle"
searches = 0
hedge = "\\u001b]0;pwned\\u0007 \\u001b[2J"
"""


@contextmanager
def hostile_lab(tmp_path: Path, capsys: ReadsOutput) -> Iterator[tuple[Path, Path]]:
    """(lab.db, lab.toml): one grid of the hostile oracle model on two demo questions
    (run `r`, set `d`), every question's text hostile, and a second set named `SET`.
    The oracle backend is registered while the context is open."""
    register(Backend("oracle", OracleConfig, OracleClient))
    try:
        config = tmp_path / "lab.toml"
        config.write_text(TOML, encoding="utf-8")
        db = tmp_path / "lab.db"
        for args in (("init",), ("sets", "create", "d", "--dataset", "demo", "--n", "2",
                                 "--seed", "1"),
                     ("sets", "create", "e", "--dataset", "demo", "--n", "2", "--seed", "2"),
                     ("enqueue", "--models", NAME, "--conditions", "none", "--regimes",
                      "clean", "--set", "d", "--run", "r"),
                     ("worker", "--until-idle")):
            code, _, err = lab(capsys, "--db", db, "--config", config, *args)
            assert code == 0, err
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE question_sets SET name = ? WHERE name = 'e'", (SET,))
            for qid, record in conn.execute("SELECT id, record FROM questions").fetchall():
                data = json.loads(record)
                data["question"] = QUESTION
                conn.execute("UPDATE questions SET question = ?, record = ? WHERE id = ?",
                             (QUESTION, json.dumps(data), qid))
        conn.close()
        yield db, config
    finally:
        del BACKENDS["oracle"]
