"""bench/mutations.py stays runnable: every mutation applies to today's code exactly
once, and the tests it names exist (the script itself applies each to a copy and
shows it caught; it takes about a minute, so the suite only checks it still fits)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # bench/mutations.py is a script, loaded from its file below
    from bench.mutations import Mutation

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_mutations",
                                               ROOT / "bench" / "mutations.py")
assert _spec and _spec.loader
mutations = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mutations  # dataclasses look their module up there
_spec.loader.exec_module(mutations)

REQUIRED = {"pi-abstains-early", "pooled-first-dataset", "map-all-depths", "proxy-18",
            "proxy-9", "c4-without-regime", "a5-six-regimes", "holm-tests", "holm-tables",
            "delta-with-clean"}
"""The mutations of the science that must each be caught."""


def test_every_required_mutation_is_listed() -> None:
    names = [m.name for m in mutations.MUTATIONS]
    assert len(names) == len(set(names)) and REQUIRED <= set(names)


@pytest.mark.parametrize("m", mutations.MUTATIONS, ids=lambda m: m.name)
def test_the_mutation_applies_once_and_changes_the_file(m: Mutation) -> None:
    text = (ROOT / m.path).read_text(encoding="utf-8")
    mutated = m.apply(text)
    assert mutated != text
    if m.path.endswith(".py"):
        ast.parse(mutated)  # still Python: the tests fail on the science, not on syntax


@pytest.mark.parametrize("m", mutations.MUTATIONS, ids=lambda m: m.name)
def test_the_catching_tests_exist(m: Mutation) -> None:
    for node in m.tests:
        path, _, name = node.partition("::")
        source = (ROOT / path).read_text(encoding="utf-8")
        assert not name or f"def {name}(" in source, node


def test_a_text_that_is_not_there_exactly_once_is_refused() -> None:
    m = mutations.Mutation("x", "", "f.py", "a", "b", ())
    with pytest.raises(ValueError, match="occurs 2 times"):
        m.apply("a a")
    with pytest.raises(ValueError, match="occurs 0 times"):
        m.apply("")
