"""Text from outside is inert: a model answer holding an OSC title set (ESC ] 0 ; … BEL)
and a screen clear (ESC [ 2 J), or a model name holding one, is printed escaped
(`\\x1b`) by `lab try`, `lab tail` and `lab results`, never as the bytes a terminal
would run; every CLI printer goes through `console.cli.output.echo`."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from core.inert import inert, plain
from core.models.backends import BACKENDS, Backend, register
from tests.helpers.cli import lab
from tests.helpers.toy_backend import OracleClient, OracleConfig

HOSTILE = "\x1b]0;pwned\x07 \x1b[2J"
SHOWN = "\\x1b]0;pwned\\x07 \\x1b[2J"
NAME = "or\x1b[2Jacle"
TOML = """
[models."or\\u001b[2Jacle"]
backend = "oracle"
searches = 0
hedge = "\\u001b]0;pwned\\u0007 \\u001b[2J"
"""
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


@pytest.fixture()
def oracle() -> Iterator[Backend]:
    backend = register(Backend("oracle", OracleConfig, OracleClient))
    yield backend
    del BACKENDS["oracle"]


@pytest.fixture()
def lab_db(tmp_path: Path, oracle: Backend, capsys: pytest.CaptureFixture[str]
           ) -> tuple[Path, Path]:
    """A lab.db with one grid of the hostile oracle run (two demo questions)."""
    config = tmp_path / "lab.toml"
    config.write_text(TOML, encoding="utf-8")
    db = tmp_path / "lab.db"
    for args in (("init",), ("sets", "create", "d", "--dataset", "demo", "--n", "2",
                             "--seed", "1"),
                 ("enqueue", "--models", NAME, "--conditions", "none", "--regimes", "clean",
                  "--set", "d", "--run", "r"),
                 ("worker", "--until-idle")):
        code, _, err = lab(capsys, "--db", db, "--config", config, *args)
        assert code == 0, err
    return db, config


def _raw_free(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, text
    assert not RAW.search(text), text


def test_inert_shows_controls_and_keeps_layout() -> None:
    assert inert(f"a{HOSTILE}\r\nb\tc\u202e") == f"a{SHOWN}\\r\nb\tc\\u202e"
    assert inert("plain text, ünïcode ✓\n") == "plain text, ünïcode ✓\n"
    assert plain(f"m{HOSTILE}\nx") == "m]0;pwned [2J x"


def test_lab_try_prints_the_answer_escaped(lab_db: tuple[Path, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    db, config = lab_db
    code, out, err = lab(capsys, "--db", db, "--config", config, "try", "--model", NAME,
                         "--condition", "none", "--regime", "clean", "--question", "demo-001")
    assert code == 0, err
    _raw_free(out + err)
    assert SHOWN in out


def test_lab_tail_prints_the_answer_escaped(lab_db: tuple[Path, Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db, config = lab_db
    conn = sqlite3.connect(db)
    episode = conn.execute("SELECT id FROM episodes ORDER BY id LIMIT 1").fetchone()[0]
    conn.close()
    code, out, err = lab(capsys, "--db", db, "--config", config, "tail", episode)
    assert code == 0, err
    _raw_free(out + err)
    assert SHOWN in out


def test_lab_results_prints_the_model_name_escaped(lab_db: tuple[Path, Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    db, config = lab_db
    code, out, err = lab(capsys, "--db", db, "--config", config, "results", "success")
    assert code == 0, err
    _raw_free(out + err)
    assert "or\\x1b[2Jacle" in out


def test_an_error_line_is_one_inert_line(lab_db: tuple[Path, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db, config = lab_db
    code = main(["--db", str(db), "--config", str(config), "enqueue", "--models", "nope",
                 "--conditions", "none", "--regimes", "clean", "--set", "d"])
    err = capsys.readouterr().err
    assert code != 0
    assert len(err.strip().splitlines()) == 1 and "or\\x1b[2Jacle" in err, err
    _raw_free(err)


def test_no_command_prints_around_echo() -> None:
    """Every printer of the command line goes through `console.cli.output.echo`."""
    root = Path(__file__).resolve().parents[1] / "console" / "cli"
    offenders = [p.name for p in root.glob("*.py") if p.name != "output.py"
                 and re.search(r"click\.(echo|secho)\(|\bprint\(", p.read_text())]
    assert not offenders
