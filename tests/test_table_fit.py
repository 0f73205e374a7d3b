"""Text tables that fit a width (analysis/tables/fit.py): canonical regime order, blocks
that repeat the key columns, abbreviations spelled out, lines wrapped under their indent."""

from __future__ import annotations

from analysis.tables.fit import abbreviation_lines, blocks, canonical_columns, wrap_line
from analysis.tables.text import fit
from core.regimes import regime_sort_key


def test_canonical_regime_order_with_aggregates_last() -> None:
    given = ["persistent", "mean6", "late_onset_from_3", "clean", "answerless",
             "recover_after_3", "plausible", "recover_after_1", "late_onset_from_2"]
    assert canonical_columns(given) == [
        "clean", "persistent", "recover_after_1", "recover_after_3", "late_onset_from_2",
        "late_onset_from_3", "plausible", "answerless", "mean6"]
    assert canonical_columns(["own judgments, by t", "design"]) == [
        "own judgments, by t", "design"]  # not regimes: as given
    assert regime_sort_key("late_onset") == regime_sort_key("late_onset_from_3")
    assert regime_sort_key("mean6") is None and regime_sort_key("recover_after") is None


def test_blocks_repeat_the_key_columns() -> None:
    widths = [10, 20, 30, 30, 30]
    assert blocks(widths, 2, None) == [[0, 1, 2, 3, 4]]
    assert blocks(widths, 2, 200) == [[0, 1, 2, 3, 4]]
    assert blocks(widths, 2, 100) == [[0, 1, 2, 3], [0, 1, 4]]
    assert blocks([10, 20, 90], 2, 60) == [[0, 1, 2]]  # one wide column: a block of its own
    # an interval and its p and Holm stay in one block
    assert blocks([10, 20, 30, 20, 5, 5], 2, 70) == [[0, 1, 2], [0, 1, 3, 4, 5]]
    assert blocks([10, 20, 30, 20, 5, 5], 2, 70, [(3, 4, 5)]) == [[0, 1, 2], [0, 1, 3, 4, 5]]
    assert blocks([10, 20, 20, 14, 5, 5], 2, 70) == [[0, 1, 2, 3], [0, 1, 4, 5]]
    assert blocks([10, 20, 20, 14, 5, 5], 2, 70, [(3, 4, 5)]) == [[0, 1, 2], [0, 1, 3, 4, 5]]
    header = ["model", "arm", "a", "b"]
    body = [["m" * 10, "x" * 20, "1" * 30, "2" * 30]]
    lines = fit(header, body, (2, 3), 2, 70).lines
    assert [line.split()[:2] for line in lines if line.startswith("model")] == [
        ["model", "arm"], ["model", "arm"]]
    assert max(len(line) for line in lines) <= 70 and "" in lines


def test_abbreviations_and_wrapping() -> None:
    lines = abbreviation_lines([("pers.", "persistent"), ("clean", "clean"),
                                ("pers.", "persistent"), ("med.act", "median action")], 40)
    assert " ".join(" ".join(lines).split()) == (
        "abbreviations: pers. = persistent, med.act = median action")
    assert all(len(line) <= 40 and line.startswith("  ") for line in lines)
    assert abbreviation_lines([("clean", "clean")], 40) == []
    wrapped = wrap_line("    3/3: " + "word " * 30, 50)
    assert all(len(line) <= 50 for line in wrapped)
    assert wrapped[0].startswith("    3/3") and wrapped[1].startswith("      w")
