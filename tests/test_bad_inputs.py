"""Every bad input through the real CLI against a real lab.db ends with one
line on stderr, a non-zero exit and an unchanged database (`.dump` sha256)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from console.cli import main
from core.data import Paragraph, Question, question_to_record
from tests.helpers.builders import make_question
from tests.helpers.cli import dump_hash, lab, one_error


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with the demo data and a 3-question set `d`, built once per module."""
    path = tmp_path_factory.mktemp("template") / "lab.db"
    assert main(["--db", str(path), "init"]) == 0
    assert main(["--db", str(path), "sets", "create", "d", "--dataset", "demo", "--n", "3",
                 "--seed", "1"]) == 0
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the template lab.db for one test."""
    path = tmp_path / "lab.db"
    shutil.copy(template, path)
    return path


# --- prereg edit: one part at a time -------------------------------------------------------

SCOPE = {"models": ["sim-own5"], "conditions": ["none", "enforced_rule"],
         "regimes": ["clean"], "question_sets": ["d"]}
TESTS = [{"id": "H2", "kind": "delta_bound", "condition": "none", "bound": "upper",
          "threshold": 0.06, "comparison": "<"}]


def _amendment(db_path: Path) -> dict:
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT title, body, tests, scope FROM amendments").fetchone()
    conn.close()
    return {"title": row["title"], "body": row["body"], "tests": json.loads(row["tests"]),
            "scope": json.loads(row["scope"])}


def test_prereg_edit_one_part_at_a_time(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    (tmp_path / "scope.json").write_text(json.dumps(SCOPE), encoding="utf-8")
    (tmp_path / "body.md").write_text("why", encoding="utf-8")
    assert lab(capsys, "--db", db, "prereg", "new", "--title", "t", "--body",
               tmp_path / "body.md")[0] == 0
    code, _, err = lab(capsys, "--db", db, "prereg", "edit", "A1", "--scope",
                       tmp_path / "scope.json")
    assert code == 0, err
    assert _amendment(db)["scope"]["models"] == ["sim-own5"]
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps(TESTS), encoding="utf-8")
    code, _, err = lab(capsys, "--db", db, "prereg", "edit", "A1", "--tests", tests)
    assert code == 0, err
    code, _, err = lab(capsys, "--db", db, "prereg", "edit", "A1", "--title", "new title")
    assert code == 0, err
    row = _amendment(db)
    assert (row["title"], row["body"], len(row["tests"]), row["scope"]["models"]) == (
        "new title", "why", 1, ["sim-own5"])


# --- repeated names ------------------------------------------------------------------------

def test_repeated_names_queue_one_cell_with_a_note(db: Path, capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    code, out, err = lab(capsys, "--db", db, "enqueue", "--models", "sim-own5,sim-own5",
                         "--conditions", "none,none,enforced_rule,enforced_rule:k=5",
                         "--regimes", "clean,clean", "--set", "d", "--seeds", "0,0",
                         "--budget", "8,8", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["cells"], summary["jobs"], summary["new_episodes"]) == (2, 2, 6)
    for option in ("--models", "--conditions", "--regimes", "--seeds", "--budget"):
        assert f"note: {option}" in err
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM cells").fetchone()[0] == 2
    assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 2
    request = json.loads(conn.execute("SELECT spec FROM grids").fetchone()[0])
    conn.close()
    assert request["models"] == ["sim-own5"] and request["seeds"] == [0]


# --- tracebacks → one line -----------------------------------------------------------------

@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory whose mode the test changes (restored so pytest can clean it up)."""
    path = tmp_path / "ro"
    path.mkdir()
    try:
        yield path
    finally:
        path.chmod(0o755)


def _lab_readonly(db_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`lab --db DB ARGS` in a subprocess that file modes bind: as root (CI containers),
    without capabilities, so a 0444 file or 0555 directory cannot be written."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: file modes cannot be enforced")
        prefix = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]
    return subprocess.run([*prefix, sys.executable, "-m", "console.cli", "--db", str(db_path),
                           *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args", [
    ("sets", "create", "e", "--dataset", "demo", "--n", "2", "--seed", "1"),
    ("enqueue", "--models", "sim-own5", "--conditions", "none", "--regimes", "clean",
     "--set", "d"),
    ("worker", "--until-idle"),
])
def test_read_only_database_is_one_line(template: Path, shared_dir: Path, args: tuple[str, ...]
                                       ) -> None:
    path = shared_dir / "lab.db"
    shutil.copy(template, path)
    before = dump_hash(path)
    shared_dir.chmod(0o777)  # -wal/-shm and the queue file may be created, lab.db not written
    path.chmod(0o444)
    result = _lab_readonly(path, *args)
    one_error(result.returncode, result.stderr, str(path), "read-only")
    assert dump_hash(path) == before


def test_read_only_directory_status_is_one_line(template: Path, shared_dir: Path) -> None:
    path = shared_dir / "lab.db"
    shutil.copy(template, path)
    path.chmod(0o444)
    shared_dir.chmod(0o555)  # like a read-only mount: no -shm can be created
    result = _lab_readonly(path, "status")
    one_error(result.returncode, result.stderr, str(path), "writable")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("option", ["--body", "--tests", "--scope"])
def test_non_utf8_prereg_files_are_one_line(db: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str], option: str
                                           ) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe[]")
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "prereg", "new", "--title", "t", option, bad)[::2],
              str(bad), "UTF-8")
    assert lab(capsys, "--db", db, "prereg", "new", "--title", "t")[0] == 0
    edited = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "prereg", "edit", "A1", option, bad)[::2], "UTF-8")
    assert dump_hash(db) == edited != before


def test_binary_lab_toml_is_one_line(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    config = tmp_path / "lab.toml"
    config.write_bytes(bytes(range(256)))
    one_error(*lab(capsys, "--db", db, "--config", config, "models")[::2], str(config),
              "UTF-8")


def test_prereg_export_into_missing_directory_is_one_line(db: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "prereg", "export", "/nonexistent/dir/p.md")[::2],
              "/nonexistent/dir", "does not exist")
    assert dump_hash(db) == before


# --- lab.toml mistakes ---------------------------------------------------------------------

@pytest.mark.parametrize("text, words", [
    ('[modelz.q]\nbackend = "sim"\npolicy = "never"\n', ("modelz", "known: models")),
    ('[models.q]\nbackend = "openai"\nmodel = "m"\nendpoints = ["http://127.0.0.1:1/v1"]\n'
     'sampling = { topp = 0.8 }\n', ("models.q", "topp", "top_p")),
    ('[models.sim-own5]\nbackend = "sim"\npolicy = "never"\n', ("models.sim-own5", "built-in")),
])
def test_lab_toml_mistakes_name_file_table_and_key(db: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str], text: str,
                                                   words: tuple[str, ...]) -> None:
    config = tmp_path / "lab.toml"
    config.write_text(text, encoding="utf-8")
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "--config", config, "enqueue", "--models", "sim-own5",
                   "--conditions", "none", "--regimes", "clean", "--set", "d")[::2],
              str(config), *words)
    assert dump_hash(db) == before


@pytest.mark.parametrize("where", ["group", "command", "env"])
def test_missing_config_given_explicitly_is_refused(db: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch, where: str
                                                   ) -> None:
    args = {"group": ("--db", db, "--config", "nope.toml", "models"),
            "command": ("--db", db, "models", "--config", "nope.toml"),
            "env": ("--db", db, "models")}[where]
    if where == "env":
        monkeypatch.setenv("LAB_CONFIG", "nope.toml")
    one_error(*lab(capsys, *args)[::2], "nope.toml", "no such file")


def test_missing_default_config_is_fine(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = lab(capsys, "--db", db, "models")
    assert code == 0 and "sim-own5" in out


# --- condition knobs -----------------------------------------------------------------------

@pytest.mark.parametrize("condition, words", [
    ("budget:k=3", ("budget has no knob 'k'", "its knobs: judge")),
    ("none:tau=0.5", ("none has no knob 'tau'", "its knobs: judge")),
    ("call_cost:price=inf", ("price must be a finite number",)),
    ("call_cost:price=nan", ("price must be a finite number",)),
    ("enforced_rule:k=4,k=5", ("knob k is given twice",)),
    ("enforced_rule:k", ("knob k needs a value, e.g. enforced_rule:k=5",)),
])
def test_condition_knobs_are_validated_per_condition(db: Path, capsys: pytest.CaptureFixture[str],
                                                     condition: str, words: tuple[str, ...]
                                                    ) -> None:
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "enqueue", "--models", "sim-own5", "--conditions",
                   condition, "--regimes", "clean", "--set", "d")[::2], *words)
    assert dump_hash(db) == before


@pytest.mark.parametrize("condition", ["budget:judge=true", "lexical_rule:tau=0.3,judge=true",
                                       "call_cost:price=0.1", "enforced_rule:k=7,judge=true"])
def test_every_condition_takes_its_own_knobs_and_judge(db: Path, capsys: pytest.CaptureFixture[str],
                                                       condition: str) -> None:
    code, out, err = lab(capsys, "--db", db, "enqueue", "--models", "sim-own5",
                         "--conditions", condition, "--regimes", "clean", "--set", "d",
                         "--json", "--dry-run")
    assert code == 0, err
    assert json.loads(out)["cells"] == 1


# --- read-only commands create nothing -----------------------------------------------------

@pytest.mark.parametrize("args", [
    ("status",), ("results",), ("tail",), ("prereg", "show"), ("sets", "list"),
    ("sets", "show", "d"), ("export", "out"), ("prereg", "outcomes"), ("prereg", "verify"),
    ("prereg", "export"),
])
def test_read_only_commands_do_not_create_a_database(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     args: tuple[str, ...]) -> None:
    path = tmp_path / "lab.bd"
    one_error(*lab(capsys, "--db", path, *args)[::2], f"no lab database at {path}",
              "lab init")
    assert not path.exists()


def test_models_does_not_create_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    path = tmp_path / "lab.bd"
    assert lab(capsys, "--db", path, "models")[0] == 0
    assert not path.exists()


# --- --db / --config after the subcommand --------------------------------------------------

def test_db_and_config_after_the_subcommand(db: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path / "..")  # no lab.db in the working directory
    code, out, err = lab(capsys, "sets", "list", "--db", db)
    assert code == 0 and "d " in out, err
    code, out, err = lab(capsys, "prereg", "show", "--db", db)
    assert code == 0, err
    config = tmp_path / "mine.toml"
    config.write_text('[models.mine]\nbackend = "sim"\npolicy = "never"\n', encoding="utf-8")
    code, out, err = lab(capsys, "models", "--config", config)
    assert code == 0 and "mine" in out, err
    code, out, err = lab(capsys, "status", "--db", db, "--json")
    assert code == 0 and json.loads(out)["grids"] == []


# --- lab try / lab demo exit codes ---------------------------------------------------------

def test_try_exits_non_zero_when_the_episode_errors(db: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "lab.toml"
    config.write_text('[models.dead]\nbackend = "openai"\nmodel = "m"\n'
                      'endpoints = ["http://127.0.0.1:9/v1"]\nmax_retries = 0\ntimeout_s = 2\n',
                      encoding="utf-8")
    code, out, err = lab(capsys, "--db", db, "--config", config, "try", "--model", "dead",
                         "--condition", "none", "--regime", "clean", "--question", "demo-001")
    one_error(code, err, "the episode ended in an error")
    assert "ERROR" in out


def test_try_exits_zero_on_a_clean_episode(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = lab(capsys, "--db", db, "try", "--model", "sim-own5", "--condition", "none",
                       "--regime", "clean", "--question", "demo-001")
    assert code == 0, err


def test_demo_interrupted_exits_130_and_says_partial(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--db", str(path), "demo",
                             "--no-console", "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # interrupt once episodes are being stored
        time.sleep(0.2)
        if path.exists():
            try:
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
                n = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
                conn.close()
            except sqlite3.Error:
                continue
            if n:
                break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "partial" in err and "Registered tests" not in out


# --- set names -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["", "a/b", "a b", " "])
def test_bad_set_names_are_refused(db: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "sets", "create", name, "--dataset", "demo", "--n", "1",
                   "--seed", "0")[::2], "set name")
    assert dump_hash(db) == before


def test_exclude_accepts_commas(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lab(capsys, "--db", db, "sets", "create", "e", "--dataset", "demo", "--n", "3",
               "--seed", "2", "--exclude", "d")[0] == 0
    code, _, err = lab(capsys, "--db", db, "sets", "create", "f", "--dataset", "demo", "--n",
                       "4", "--seed", "3", "--exclude", "d,e")
    assert code == 0, err
    ids = {}
    for name in "def":
        code, out, _ = lab(capsys, "--db", db, "sets", "show", name)
        ids[name] = set(out.splitlines()[1:])
    assert not ids["f"] & (ids["d"] | ids["e"])
    one_error(*lab(capsys, "--db", db, "sets", "create", "g", "--dataset", "demo", "--n", "1",
                   "--seed", "0", "--exclude", "d,nothing")[::2], "nothing")


# --- help and wording ----------------------------------------------------------------------

@pytest.mark.parametrize("group", ["data", "sets", "prereg"])
def test_group_help_has_an_example(capsys: pytest.CaptureFixture[str], group: str) -> None:
    code, out, _ = lab(capsys, group, "--help")
    assert code == 0 and "Example:" in out and f"lab {group} " in out


@pytest.mark.parametrize("command", ["pause", "cancel", "resume", "retry"])
def test_control_targets_have_help(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = lab(capsys, command, "--help")
    assert code == 0
    options = out.split("Options:")[1].splitlines()
    for option in ("--run", "--grid", "--job"):
        line = next(x for x in options if x.strip().startswith(option))
        assert len(line.split()) > 2, line  # option, metavar and help text


def _hotpot_file(path: Path, questions: Iterable[Question]) -> Path:
    path.write_text(json.dumps([question_to_record(q) for q in questions]), encoding="utf-8")
    return path


def test_wording_for_one(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = lab(capsys, "--db", db, "data", "import", "hotpotqa",
                       _hotpot_file(tmp_path / "one.json", [make_question("w1")]))
    assert code == 0 and "imported 1 question from" in out
    assert lab(capsys, "--db", db, "prereg", "new", "--title", "t")[0] == 0
    code, out, _ = lab(capsys, "--db", db, "prereg", "export")
    assert "1 entry, 0 frozen" in out


# --- question size -------------------------------------------------------------------------

def _huge_question() -> Question:
    q = make_question("huge")
    page = Paragraph("Huge page", ("word " * 200_000,))  # ≈ 1 MB of context text
    return replace(q, paragraphs=q.paragraphs + (page,))


def test_huge_question_imports_with_a_warning(db: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    file = _hotpot_file(tmp_path / "big.json", [_huge_question(), make_question("small")])
    code, out, err = lab(capsys, "--db", db, "data", "import", "hotpotqa", file)
    assert code == 0 and "imported 2 questions" in out
    assert err.count("\n") == 1 and "warning: 1 question above 64 KB" in err and "huge" in err
    code, out, err = lab(capsys, "--db", db, "data", "import", "hotpotqa", file,
                         "--warn-kb", "2000")
    assert code == 0 and "already present" in out and err == ""


def test_enqueue_refuses_a_question_beyond_max_context(db: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    file = _hotpot_file(tmp_path / "big.json", [_huge_question(), make_question("small")])
    assert lab(capsys, "--db", db, "data", "import", "hotpotqa", file, "--dataset", "big")[0] == 0
    assert lab(capsys, "--db", db, "sets", "create", "big", "--dataset", "big", "--n", "2",
               "--seed", "0")[0] == 0
    config = tmp_path / "lab.toml"
    config.write_text('[models.real]\nbackend = "openai"\nmodel = "m"\nmax_context = 16384\n'
                      'endpoints = ["http://127.0.0.1:9/v1"]\n', encoding="utf-8")
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "--config", config, "enqueue", "--models", "real",
                   "--conditions", "none", "--regimes", "clean", "--set", "big")[::2],
              "question huge", "max_context 16,384", "characters / 4")
    assert dump_hash(db) == before
    code, out, err = lab(capsys, "--db", db, "--config", config, "enqueue", "--models",
                         "real,sim-own5", "--conditions", "none", "--regimes", "clean",
                         "--set", "d", "--dry-run")
    assert code == 0, err


# --- integers SQLite cannot store, bounds ---------------------------------------------------

BIG = str(2**63)
ENQUEUE = ("enqueue", "--models", "sim-own5", "--conditions", "none", "--regimes", "clean",
           "--set", "d")


@pytest.mark.parametrize("args, words", [
    ((*ENQUEUE, "--seeds", f"0,{BIG}"), ("--seeds", BIG)),
    ((*ENQUEUE, "--replicate", BIG), ("--replicate", BIG)),
    ((*ENQUEUE, "--priority", BIG), ("--priority", BIG)),
    ((*ENQUEUE, "--budgets", BIG), ("--budget", BIG)),
    ((*ENQUEUE, "--budgets", "8,65"), ("--budget", "1 to 64")),
    ((*ENQUEUE, "--run", ""), ("run name", "non-empty")),
    ((*ENQUEUE, "--run", "a\x07b"), ("run name", "control character")),
    (("sets", "create", "e", "--dataset", "demo", "--n", "1", "--seed", BIG), ("--seed", BIG)),
    (("retry", "--job", BIG), ("--job", BIG)),
    (("retry", "--grid", BIG, "--errored"), ("--grid", BIG)),
    (("replay", "answer-now", "--run", "x", "--priority", BIG), ("--priority", BIG)),
    (("results", "--seeds", BIG), ("--seeds", BIG)),
    (("results", "--resamples", "100001"), ("--resamples", "100001")),
    (("export", "out", "--resamples", "100001"), ("--resamples", "100001")),
    (("validate-measures", "--resamples", "100001"), ("--resamples", "100001")),
])
def test_numbers_beyond_bounds_are_one_line(db: Path, capsys: pytest.CaptureFixture[str],
                                            args: tuple[str, ...], words: tuple[str, str]) -> None:
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, *args)[::2], *words)
    assert dump_hash(db) == before


# --- lab export into a folder it cannot write ----------------------------------------------

@pytest.fixture(scope="module")
def with_episodes(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The template with one cell's three sim episodes stored."""
    path = tmp_path_factory.mktemp("episodes") / "lab.db"
    shutil.copy(template, path)
    for args in (ENQUEUE, ("worker", "--until-idle")):
        assert main(["--db", str(path), *args]) == 0
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.mark.parametrize("where, words", [
    ("file", ("exists and is not a directory",)),
    ("file/sub", ("is inside", "not a directory")),
])
def test_export_into_a_file_shadowed_folder_is_one_line(with_episodes: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        where: str, words: tuple[str, ...]) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    target = tmp_path / where
    one_error(*lab(capsys, "--db", with_episodes, "export", target, "--resamples", "5")[::2],
              str(target), *words)
    assert (tmp_path / "file").read_text(encoding="utf-8") == "x"


@pytest.mark.parametrize("sub", ["", "missing/deeper"])
def test_export_into_an_unwritable_folder_is_one_line(with_episodes: Path, shared_dir: Path,
                                                      sub: str) -> None:
    shared_dir.chmod(0o555)  # like a read-only mount
    target = shared_dir / sub if sub else shared_dir
    result = _lab_readonly(with_episodes, "export", str(target), "--resamples", "5")
    verb = "cannot create" if sub else "cannot write into"
    one_error(result.returncode, result.stderr, str(target), verb)
    assert list(shared_dir.iterdir()) == []


# --- a full disk ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["database or disk is full", "disk I/O error"])
def test_a_full_disk_while_enqueueing_is_one_line_and_writes_nothing(
        db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str
    ) -> None:
    from core.store import jobs as ledger

    def full(*_a: object, **_k: object) -> None:
        raise sqlite3.OperationalError(text)

    monkeypatch.setattr(ledger, "insert_jobs", full)  # mid-transaction: the grid row is in
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, *ENQUEUE)[::2], str(db), text, "free disk space")
    assert dump_hash(db) == before  # rolled back: no grid without its jobs


def test_a_full_disk_in_the_queue_file_is_one_line(db: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import jobs.queue

    def full(*_a: object, **_k: object) -> None:  # what Huey's SqliteStorage raises on a full disk
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(jobs.queue, "enqueue_job", full)
    one_error(*lab(capsys, "--db", db, *ENQUEUE)[::2], "queue file", "database or disk is full")
    # the grid and its jobs are whole in lab.db; any worker's reconcile queues them
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM jobs WHERE state = 'queued'").fetchone()[0] == 1
    conn.close()


def test_a_disk_io_error_on_a_read_is_one_line(db: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import jobs.control

    def broken(*_a: object, **_k: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(jobs.control.progress, "grid_progress", broken)
    one_error(*lab(capsys, "--db", db, "status")[::2], "disk I/O error")
