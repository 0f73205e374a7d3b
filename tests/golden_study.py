"""A small fixed sim study and its `lab results all --format json`, kept as a golden file.

`tests/test_results_golden.py` builds this study in a fresh lab.db and checks that the
command prints exactly the bytes of `tests/data/results_all.golden.json` (moves
and refactors must keep every results table byte-identical); the upgrade test
(`tests/test_schema_upgrade.py`) stores the same episodes in lab.db files of every
earlier schema version.

The study: the built-in sims (deterministic per cell and question) on six arms chosen so
that every table of `lab results all` has rows: own-judgment stopping at budgets 8 and
12 (budgets), an enforced rule, a judged arm (judgments), stated judgments with
discarded turns and a two-source arm (leaving); the six mean6 regimes, the first
`N_QUESTIONS` demo questions, seed 0, and one errored episode. 50 resamples keep it fast.

The golden file was written from the code before the CLI, the store and analysis were
split into folders. Regenerate it only for a change of results that is intended and
named in the commit, never to make the test pass: ``python tests/golden_study.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "data" / "results_all.golden.json"
GRID: tuple[tuple[str, str, int], ...] = (
    ("sim-own5", "none", 8), ("sim-own5", "none", 12), ("sim-own5", "enforced_rule:k=3", 8),
    ("sim-own5", "none:judge=true", 8), ("sim-stated-own3", "stated_rule", 8),
    ("sim-backup-own3", "two_source", 8))
"""(model, arm, budget) cells, each run on every regime of `REGIMES`."""
REGIMES = ("clean", "persistent", "recover_after_1", "recover_after_2", "recover_after_3",
           "late_onset_from_3")
N_QUESTIONS = 6
RESAMPLES = 50
RUN = "golden"
VERSION_MARK = "<version>"
"""Stands for the installed lab version in the golden file (a release changes the
version field of every row, not the results)."""


def build_study(path: Path, grid: tuple[tuple[str, str, int], ...] = GRID) -> None:
    """Store the study's episodes (the cells of `grid` × `REGIMES`) in lab.db at `path`.

    Args:
        path: lab.db to create or extend.
        grid: the (model, arm, budget) cells to run, a subset of `GRID` for a lab.db
            whose schema cannot hold every arm's steps.
    """
    from core import store
    from core.conditions import parse_condition
    from core.demo_data import demo_questions
    from core.episode import EpisodeResult
    from core.models.registry import builtin_models, make_client
    from core.regimes import ForeignPool, parse_regime
    from core.runner import CellSpec
    from jobs.kinds.episodes import run_questions

    db = store.connect(path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    pool, specs = ForeignPool(questions), builtin_models()
    run_id = store.ensure_run(db, RUN)
    cell_ids: list[int] = []

    async def go() -> None:
        for model, arm, budget in grid:
            for regime in REGIMES:
                cell = CellSpec(specs[model], parse_condition(arm), parse_regime(regime),
                                None, budget, 0)
                cell_ids.append(store.ensure_cell(db, run_id, cell.columns()))
                await run_questions(db, cell_ids[-1], cell, questions[:N_QUESTIONS], pool,
                                    make_client(cell.model))

    asyncio.run(go())
    store.write_episodes(db, [(cell_ids[0], EpisodeResult(
        questions[N_QUESTIONS].id, error="model error: connection refused",
        end_reason="error", started_at="2026-01-01T00:00:00",
        finished_at="2026-01-01T00:00:01"), None)])
    db.conn.close()


def results_all(path: Path) -> str:
    """What `lab --db PATH results all --format json --resamples 50` prints, with the
    installed version replaced by `VERSION_MARK`.

    Raises:
        AssertionError: the command exited non-zero.
    """
    from console.cli import main
    from core.version import project_version

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--db", str(path), "results", "all", "--format", "json",
                     "--resamples", str(RESAMPLES)])
    assert code == 0, f"lab results all exited {code}"
    return out.getvalue().replace(f'"version": "{project_version()}"',
                                  f'"version": "{VERSION_MARK}"')


def main() -> None:
    """Write the golden file (see the module docstring for when)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lab.db"
        build_study(path)
        text = results_all(path)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(text, encoding="utf-8")
    print(f"wrote {GOLDEN} ({len(text):,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
