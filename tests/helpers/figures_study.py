"""A tiny study, built through the real queue on the sims, that feeds every figure the demo
cannot: two budgets (Figure 4), a two-source arm (leaving), answer-now branches (policies
and controllers), belief probes (Figure 6) and the second seed's trace states.

Eight demo questions, the unaided sims at budgets 8 and 16 in the main regimes and
`plausible`, a two-source sim at budget 8, branches and beliefs at every decision point,
and trace states on twelve questions: everything `lab figures` draws, built once per test
session and shared read-only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.report_study import lab

RUN = "study"
STEPS: tuple[tuple[str, ...], ...] = (
    ("init",),
    ("sets", "create", "d8", "--dataset", "demo", "--n", "8", "--seed", "1"),
    ("enqueue", "--models", "sim-own5,sim-never", "--conditions", "none", "--regimes",
     "mean6,plausible", "--budgets", "8,16", "--set", "d8", "--run", RUN),
    ("enqueue", "--models", "sim-backup-own3", "--conditions", "two_source", "--regimes",
     "mean6", "--set", "d8", "--run", RUN),
    ("worker", "--until-idle"),
    ("replay", "answer-now", "--run", RUN),
    ("replay", "beliefs", "--run", RUN, "--models", "sim-own5,sim-never"),
    ("sets", "create", "seed-demo", "--dataset", "demo", "--n", "12", "--seed", "1"),
    ("traces", "collect", "--set", "seed-demo", "--models", "sim-trace", "--run", "seed2"),
    ("worker", "--until-idle"),
)
"""The `lab` commands that build the study, in order."""
_BUILT: dict[str, Path] = {}


def figures_study(factory: pytest.TempPathFactory) -> Path:
    """The study's lab.db (built on first use in this session)."""
    if "db" not in _BUILT:
        db = factory.mktemp("figures_study") / "lab.db"
        for args in STEPS:
            code, _, err = lab(db, *args)
            assert code == 0, (args, err)
        _BUILT["db"] = db
    return _BUILT["db"]
