"""Apply each mutation of the science to a copy of the code and show the tests catch it.

Each mutation below is a wrong piece of science that once passed, or could pass, the
whole suite: π abstaining before its budget is spent, the trace study's pooled row
reading only its first dataset, the calibration map fitted on every depth, the
Adaptive proxy's thresholds off by one, the paper's C4 test without its regime, its
A5 amendment on six regimes instead of three, and a Holm family of one (in the
registered tests and in the results tables); and three more of the verdict layer's
(exact ties compared as the floats came out, an n.a. condition overriding a decided
one in `classify`, the proxy's marker threshold); and Δ pooling clean with the five
failure regimes (in the delta table, the replication table or a registered test) or
the results cache serving one --delta-regimes for the other. For each, this script copies the
checkout (the files git tracks or would track) to a temporary folder, replaces one
exact piece of text in one file (refusing when the text is not there exactly once,
so a mutation never silently stops applying), runs the tests named for it there, and
reports whether they failed (caught) or passed (survived).

Usage:
    python bench/mutations.py            # every mutation; exit 1 if one survives
    python bench/mutations.py --list     # the mutations and the tests that catch them
    python bench/mutations.py holm-tests proxy-18   # only these

Each run is a fresh copy and a `pytest -n 0 -x -q` of the named tests (about a
minute in all on two cores). `tests/test_mutations.py` checks that every mutation
still applies to today's code and names tests that exist.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    """One wrong piece of science.

    Attributes:
        name: short name.
        what: what the mutation gets wrong.
        path: the file it changes, relative to the checkout.
        old: the exact text replaced (must occur once).
        new: its replacement.
        tests: pytest node ids (files or file::test) that must fail with it.
    """

    name: str
    what: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]

    def apply(self, text: str) -> str:
        """The file's text with the mutation applied.

        Raises:
            ValueError: `old` does not occur exactly once.
        """
        count = text.count(self.old)
        if count != 1:
            raise ValueError(f"{self.name}: the text to replace occurs {count} times in "
                             f"{self.path}, not once; update the mutation")
        return text.replace(self.old, self.new)


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "pi-abstains-early",
        "π abstains at any depth when κ ≤ τ_lo, instead of retrieving while budget remains",
        "analysis/replay/controllers.py",
        "np.where(commit, COMMIT, np.where(b > 0, RETRIEVE,\n"
        "                                             np.where(low, ABSTAIN, ESCALATE)))",
        "np.where(commit, COMMIT, np.where(low, ABSTAIN,\n"
        "                                             np.where(b > 0, RETRIEVE, ESCALATE)))",
        ("tests/test_controllers.py", "tests/test_trace_tables.py")),
    Mutation(
        "pooled-first-dataset",
        "the trace tables' pooled row (hotpotqa+musique) reads only the first dataset",
        "analysis/replay/trace_tables.py",
        'yield "+".join(names), traces\n',
        'yield "+".join(names), traces.take(traces.dataset == names[0])\n',
        ("tests/test_trace_pooled.py", "tests/test_trace_tables.py")),
    Mutation(
        "map-all-depths",
        "the calibration map is fitted on every depth although depth 0 is asked for",
        "analysis/replay/traces.py",
        'if fit_depths == "0":\n        ok[:, 1:] = False',
        'if fit_depths == "never":\n        ok[:, 1:] = False',
        ("tests/test_trace_tables.py",)),
    Mutation(
        "proxy-18",
        "the Adaptive proxy's long-question threshold is 19 tokens, not 18",
        "analysis/replay/traces.py",
        "if tokens >= 18 or markers >= 2:",
        "if tokens >= 19 or markers >= 2:",
        ("tests/test_trace_pooled.py", "tests/test_trace_tables.py")),
    Mutation(
        "proxy-9",
        "the Adaptive proxy's medium threshold is 10 tokens, not 9",
        "analysis/replay/traces.py",
        "if tokens >= 9 or markers >= 1:",
        "if tokens >= 10 or markers >= 1:",
        ("tests/test_trace_pooled.py", "tests/test_trace_tables.py")),
    Mutation(
        "proxy-markers",
        "the Adaptive proxy wants three markers for depth 3, not two",
        "analysis/replay/traces.py",
        "if tokens >= 18 or markers >= 2:",
        "if tokens >= 18 or markers >= 3:",
        ("tests/test_trace_pooled.py",)),
    Mutation(
        "c4-without-regime",
        "the paper's C4 compares tool calls on every regime, not on persistent",
        "tests/fixtures/paper_table4.json",
        '"threshold": 4,\n         "budget": 16,\n         "regime": "persistent"\n',
        '"threshold": 4,\n         "budget": 16\n',
        ("tests/test_outcomes.py::test_paper_fixture_tests_are_encoded_as_the_paper_ran_them",)),
    Mutation(
        "a5-six-regimes",
        "the paper's A5 (16 actions) is scoped to six regimes, not its three",
        "tests/fixtures/paper_table4.json",
        '"regimes": [\n     "clean",\n     "persistent",\n     "recover_after_2"\n    ],',
        '"regimes": [\n     "clean",\n     "persistent",\n     "recover_after_1",\n'
        '     "recover_after_2",\n     "recover_after_3",\n     "late_onset_from_3"\n    ],',
        ("tests/test_outcomes.py::test_paper_fixture_tests_are_encoded_as_the_paper_ran_them",)),
    Mutation(
        "holm-tests",
        "a registered test's Holm family is each model alone (m = 1)",
        "analysis/prereg/outcome_kinds.py",
        "families.setdefault((u.dataset, u.question_set), []).append(i)",
        "families.setdefault((u.model, u.dataset, u.question_set), []).append(i)",
        ("tests/test_registered.py", "tests/test_classify.py")),
    Mutation(
        "ties-as-written",
        "a paired difference's resampled ties are compared as the floats came out",
        "analysis/measures/success.py",
        "        res = bootstrap_intervals(stat, len(common), n_boot, seed, with_p=True, "
        "ties=ties)",
        "        res = bootstrap_intervals(stat, len(common), n_boot, seed, with_p=True)",
        ("tests/test_ties.py",)),
    Mutation(
        "classify-na-wins",
        "an all with a false condition is n.a. when another condition is n.a.",
        "analysis/prereg/outcomes.py",
        "return False if False in held else (None if None in held else True)",
        "return None if None in held else (False if False in held else True)",
        ("tests/test_classify.py",)),
    Mutation(
        "holm-tables",
        "a results table's Holm family is each model alone (m = 1)",
        "analysis/base/rows.py",
        "    return (row.measure, row.label, row.condition_hash, row.budget, row.dataset,",
        "    return (row.model, row.measure, row.label, row.condition_hash, row.budget, "
        "row.dataset,",
        ("tests/test_holm_family.py",)),
    Mutation(
        "replication-overlap-flipped",
        "the replication table says two intervals overlap exactly when they do not",
        "analysis/tables/replication.py",
        "    return low_a <= high_b and low_b <= high_a",
        "    return not (low_a <= high_b and low_b <= high_a)",
        ("tests/test_replication.py::test_each_line_beside_its_published_value",)),
    Mutation(
        "replication-difference-sign",
        "the replication table's difference is reference − lab, not lab − reference",
        "analysis/tables/replication.py",
        "estimate=own.estimate - est))",
        "estimate=est - own.estimate))",
        ("tests/test_replication.py::test_each_line_beside_its_published_value",)),
    Mutation(
        "replication-delta-with-clean",
        "lab's Δ set beside the published one pools clean with the five failure regimes",
        "analysis/tables/replication.py",
        "replace(spec, delta_regimes=DELTA_FAILURE)",
        "replace(spec, delta_regimes=\"mean6\")",
        ("tests/test_replication.py::test_delta_is_on_the_five_failure_regimes_as_published",)),
    Mutation(
        "delta-with-clean",
        "the delta table's Δ pools clean with the main family's five failure regimes (the "
        "paper's Δ leaves it out)",
        "analysis/measures/delta.py",
        "        return tuple(r for r in present if r in FAILURE_REGIMES)",
        "        return tuple(present)",
        ("tests/test_replication.py::test_delta_is_on_the_five_failure_regimes_as_published",
         "tests/test_scale_equivalence.py::"
         "test_delta_rows_equal_those_of_the_five_failure_regimes_alone")),
    Mutation(
        "options-not-in-cache-key",
        "the results cache serves Δ computed under one --delta-regimes for the other",
        "analysis/base/cache.py",
        "{**spec, **{o: chosen[o] for o in options}}",
        "spec",
        ("tests/test_replication.py::test_delta_is_on_the_five_failure_regimes_as_published",)),
    Mutation(
        "delta-bound-with-clean",
        "a registered Δ test pools clean with the main family's five failure regimes",
        "analysis/prereg/outcome_kinds.py",
        "    if named_regimes(test) or dec.empty:\n        return dec\n    present",
        "    if True:\n        return dec\n    present",
        ("tests/test_registered.py::test_delta_bound_leaves_clean_out_as_the_paper_does",)),
    Mutation(
        "beliefs-prior-by-size",
        "the ideal observer's prior weighs each regime by its decision points, not equally",
        "analysis/replay/beliefs.py",
        "weight[r] = prior * float",
        "weight[r] = prior * values[(r, k)][1] * float",
        ("tests/test_beliefs.py::test_the_ideal_observer_is_the_hand_computed_posterior_mean",)),
    Mutation(
        "beliefs-k-off-by-one",
        "the ideal observer after k failed results updates on only k − 1 of them",
        "analysis/replay/beliefs.py",
        "for i in range(1, k + 1)]))",
        "for i in range(1, k)]))",
        ("tests/test_beliefs.py::test_the_ideal_observer_is_the_hand_computed_posterior_mean",)),
)


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line and (ROOT / line).is_file()]


def copy_checkout(dest: Path) -> None:
    """Copy the checkout's files (tracked, or untracked and not ignored) to `dest`."""
    for rel in _tracked_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)


def run_mutation(m: Mutation, workdir: Path) -> tuple[bool, float, str]:
    """Apply `m` in a fresh copy under `workdir` and run its tests.

    Returns:
        (caught: the tests failed, seconds, the last lines pytest printed).
    """
    copy = workdir / m.name
    copy_checkout(copy)
    target = copy / m.path
    target.write_text(m.apply(target.read_text(encoding="utf-8")), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p",
                           "no:cacheprovider", *m.tests], cwd=copy, env=env,
                          capture_output=True, text=True)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    shutil.rmtree(copy, ignore_errors=True)
    return done.returncode != 0, time.monotonic() - start, tail


def main(argv: list[str] | None = None) -> int:
    """Run the mutations named (default: all); exit 1 if one survives."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation {sorted(unknown)[0]!r}; one of: "
                     f"{', '.join(m.name for m in MUTATIONS)}")
    if args.list:
        for m in chosen:
            print(f"{m.name:<22} {m.what}\n{'':<22} {m.path}; caught by {', '.join(m.tests)}")
        return 0
    survived = []
    with tempfile.TemporaryDirectory(prefix="lab-mutations-") as tmp:
        for m in chosen:
            caught, seconds, tail = run_mutation(m, Path(tmp))
            print(f"{'caught  ' if caught else 'SURVIVED'} {m.name:<22} {seconds:5.1f} s  "
                  f"{m.what}", flush=True)
            if not caught:
                survived.append(m.name)
                print("    " + tail.replace("\n", "\n    "), flush=True)
    print(f"{len(chosen) - len(survived)}/{len(chosen)} mutations caught"
          + (f"; survived: {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
