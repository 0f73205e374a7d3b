"""The repository stands alone: no tracked file points at something a clone does not have.

A clone holds neither the product specification and style guide the code was first
written against, nor the folder beside the checkout they lived in, nor the tracker
whose issue numbers once named the work. A comment that says "see §7 of a file you
cannot open" or names an issue by its number tells its reader nothing; it says the
reason in words or links a docs/ page instead, and cites papers by title and section
(CONTRIBUTING.md).

Every tracked text file is scanned (`git ls-files`; binary files are skipped), so a
reference in code, a docstring, a test, a docs page, the CHANGELOG or a fixture fails
here with its file and line. The patterns below are spelled with character classes,
and the samples they must catch are joined from pieces, so that this file (tracked
like any other) does not match itself.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a section of the product specification or style guide",
     re.compile(r"\b(?:S[P]EC|S[T]YLE)(?:\s*§|\.md\b|:|\s+order\b)")),
    ("the folder beside the checkout", re.compile(r"\.\./s[h]ared\b|/work/s[h]ared\b")),
    ("an issue number", re.compile(r"\b[Ii][s]sues?\s*#?\d+")),
    ("an issue number", re.compile(r"\(#\d+\)|(?:^|[\s\[,;])#\d{1,4}(?![\w-])")),
)
"""(what it refers to, pattern): a line matching any pattern fails the test."""

SKIP_DIRS = {".git", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
             "build", "dist", "shared"}
"""Walked past only when the checkout is not a git work tree (an unpacked sdist)."""


def _tracked_files(root: Path) -> list[Path]:
    """Every file git tracks under `root`; without git, every file outside SKIP_DIRS."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return sorted(p for p in root.rglob("*") if p.is_file() and not any(
            part in SKIP_DIRS or part.endswith(".egg-info")
            for part in p.relative_to(root).parts))
    return [root / name for name in out.decode().split("\0") if name]


def _text(path: Path) -> str | None:
    """The file as text, or None for a binary file (or one that vanished)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def offending_lines(lines: Iterable[str]) -> Iterator[tuple[int, str, str]]:
    """(line number from 1, what it refers to, the line) for each forbidden reference."""
    for number, line in enumerate(lines, start=1):
        for what, pattern in FORBIDDEN:
            if pattern.search(line):
                yield number, what, line.strip()
                break


def test_no_tracked_file_refers_outside_the_repository() -> None:
    files = _tracked_files(ROOT)
    assert len(files) > 100, f"found only {len(files)} files under {ROOT}"
    found = []
    for path in files:
        text = _text(path)
        if text is None:
            continue
        for number, what, line in offending_lines(text.splitlines()):
            found.append(f"{path.relative_to(ROOT).as_posix()}:{number}: {what}: {line[:120]}")
    assert not found, ("write the reason, or link a docs/ page, instead of:\n"
                       + "\n".join(found))


S, ST, SH, IS, H = "SP" + "EC", "ST" + "YLE", "sh" + "ared", "Is" + "sue", "#"

MUST_FAIL = [
    f'"""The arms of {S} §7 as frozen spec dataclasses.',
    f"# the {S}§14 freshness rule",
    f"{S}.md (in the project's {SH} folder) is the specification",
    f"n_boot: resamples ({S}: 1,000).",
    f"mean6 regimes first in {S} order.",
    f"rederive(db)  # migrations never derive ({ST} §18)",
    f"The second seed (`../{SH}/seeds/matched-trajectory-replay.txt`) collects",
    f"see /work/{SH}/data/x.json",
    f"# ---- warm-up ({IS.lower()} 22: each screen's first visit) ----",
    f'"""{IS} 22\'s first visits: Results\' text',
    f"(`lab traces collect`, {IS.lower()} {H}21)",
    f"the console's figures ({IS.lower()}s 24 and 25)",
    f"Fixed in ({H}9).",
    f"as discussed in {H}12, the lease",
    f"- {H}7 the flush",
]

MUST_PASS = [
    'return Question(id="q#1", dataset="d", question="?")',
    'assert qs[0].id == base[0].id + "#1"',
    'Copies are "<id>#1", "<id>#2", … in dataset PAPER_DATASET',
    '  - [1 M episodes](#1-m-episodes)',
    'color="#555555", **kw)',
    ".terminal-r7 { fill: #495259 }",
    '_SPEC: Mapping[str, Mapping[str, Any]] = MappingProxyType({',
    'RESPECABLE = frozenset({"max_context"})',
    "TPC (tokens per correct answer, over-searching paper §3.2)",
    "the main paper, App. B.1 and §6 (FEVER)",
    "Δ on one arm's decisions (the main paper, §2 and App. C.1).",
    "an issue with the lease, found by the kill -9 test",
    "tissue 3 of the sample",
]


@pytest.mark.parametrize("line", MUST_FAIL)
def test_a_reference_outside_the_repository_is_found(line: str) -> None:
    assert [n for n, _, _ in offending_lines([line])] == [1]


@pytest.mark.parametrize("line", MUST_PASS)
def test_ids_colours_anchors_and_paper_sections_are_not_references(line: str) -> None:
    assert list(offending_lines([line])) == []
