"""Fuzz an amendment's registered tests and scope through the real command line:
`lab prereg new --tests FILE --scope FILE`, then `lab prereg freeze` of what was saved.
Each generated document loads or is refused in one line, with no traceback, no hang and
nothing stored (the property of tests/helpers/fuzz.py).

Tests documents are lists of tests near a valid one, their fields drawn from every
kind's declared fields (`core.registered_tests.KINDS`) with values of any type; scope
documents are objects near a valid scope with the names of what the lab.db holds; both
also come as garbage and as JSON nested past any limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.cli import main
from core.registered_tests import KINDS
from tests.helpers.cli import dump_hash, lab, one_error
from tests.helpers.fuzz import (
    fresh_db,
    fuzz_settings,
    garbage,
    json_dump,
    loads_or_refuses,
    near,
    nested,
    values,
)

TEST = {"id": "H2", "kind": "delta_bound", "condition": "none", "bound": "upper",
        "threshold": 0.06, "comparison": "<"}
TEST_KEYS = sorted({"id", "kind", "models", "note", "prediction", "budget", "datasets",
                    "question_sets", "runs", "descriptive", "condition", "conditions"}
                   | {k for spec in KINDS.values() for part in ("required", "optional")
                      for k in spec.get(part, {})})
NAMES = [*KINDS, "sim-own5", "none", "enforced_rule", "clean", "persistent", "d", "demo",
         "mean6", "success", "<", ">=", "estimate", "upper", "lower"]
SCOPE = {"models": ["sim-own5"], "conditions": ["none", "enforced_rule"],
         "regimes": ["clean"], "question_sets": ["d"]}
SCOPE_KEYS = [*SCOPE, "runs", "datasets", "budgets", "seeds"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with the demo data and a 2-question set `d`."""
    path = tmp_path_factory.mktemp("fuzz-prereg") / "template.db"
    assert main(["--db", str(path), "init"]) == 0
    assert main(["--db", str(path), "sets", "create", "d", "--dataset", "demo", "--n", "2",
                 "--seed", "1"]) == 0
    return path


def _doc(value: object) -> bytes:
    return json_dump(value).encode("utf-8", "surrogatepass")


LEAVES = st.one_of(values(NAMES), st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES),
                                                                   max_size=3))
TESTS = st.one_of(
    st.lists(st.one_of(near(TEST, TEST_KEYS), near({**TEST, "kind": "classify",
                                                    "outcomes": []}, TEST_KEYS),
                       st.dictionaries(st.sampled_from(TEST_KEYS), LEAVES, max_size=6)),
             max_size=3).map(_doc),
    values(TEST_KEYS).map(_doc), garbage(), nested())
SCOPES = st.one_of(
    st.dictionaries(st.sampled_from(SCOPE_KEYS), LEAVES, max_size=5)
    .map(lambda changed: _doc({**SCOPE, **changed})),
    near(SCOPE, SCOPE_KEYS).map(_doc), values(SCOPE_KEYS).map(_doc), garbage(), nested())


@fuzz_settings(default=60)
@given(tests=TESTS, scope=SCOPES)
def test_fuzz_amendment_tests_and_scope(template: Path, tmp_path_factory: pytest.TempPathFactory,
                                        capsys: pytest.CaptureFixture[str], tests: bytes,
                                        scope: bytes) -> None:
    work = tmp_path_factory.getbasetemp() / "fuzz-prereg"
    work.mkdir(exist_ok=True)
    db = fresh_db(template, work / "lab.db")
    (work / "tests.json").write_bytes(tests)
    (work / "scope.json").write_bytes(scope)
    (work / "body.md").write_text("why", encoding="utf-8")
    if loads_or_refuses(capsys, db, "prereg", "new", "--title", "t", "--body",
                        work / "body.md", "--tests", work / "tests.json", "--scope",
                        work / "scope.json"):
        loads_or_refuses(capsys, db, "prereg", "freeze", "A1", "--yes")


def test_the_valid_amendment_freezes(template: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The documents the fuzzer varies are saved and frozen, so a refusal is the change's."""
    db = fresh_db(template, tmp_path / "lab.db")
    (tmp_path / "tests.json").write_text(json.dumps([TEST]), encoding="utf-8")
    (tmp_path / "scope.json").write_text(json.dumps(SCOPE), encoding="utf-8")
    assert loads_or_refuses(capsys, db, "prereg", "new", "--title", "t", "--tests",
                            tmp_path / "tests.json", "--scope", tmp_path / "scope.json")
    assert loads_or_refuses(capsys, db, "prereg", "freeze", "A1", "--yes")


@pytest.mark.parametrize("part", ["tests", "scope"])
def test_deeply_nested_tests_or_scope_is_one_line(template: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str], part: str
                                                 ) -> None:
    """Found by the fuzzer: json.loads recursed past Python's limit (RecursionError)."""
    db = fresh_db(template, tmp_path / "lab.db")
    path = tmp_path / f"{part}.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    code, _, err = lab(capsys, "--db", db, "prereg", "new", "--title", "t", f"--{part}", path)
    one_error(code, err, "nested too deeply")


@pytest.mark.parametrize(("document", "words"), [
    (b"1", ("must be a JSON list",)),
    (b"null", ("must be a JSON list",)),
    (b"false", ("must be a JSON list",)),
    (b"{}", ("one object", "wrap it in [ ]")),
    (json.dumps(TEST).encode(), ("one object", "wrap it in [ ]")),
])
def test_a_tests_file_that_is_not_a_list_is_one_line(template: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     document: bytes, words: tuple[str, ...]
                                                    ) -> None:
    """Found by the fuzzer: a tests file holding `1` was a TypeError (the draft took
    `list(tests)`), a single object became its keys ('tests[0]: a test must be a JSON
    object') and `{}`, `false` or `null` were saved as no tests."""
    db = fresh_db(template, tmp_path / "lab.db")
    path = tmp_path / "tests.json"
    path.write_bytes(document)
    before = dump_hash(db)
    code, _, err = lab(capsys, "--db", db, "prereg", "new", "--title", "t", "--tests", path)
    one_error(code, err, *words)
    assert dump_hash(db) == before
