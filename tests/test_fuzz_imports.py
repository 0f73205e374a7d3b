"""Fuzz every data import through the real command line: `lab data import` of each kind
(hotpotqa as a JSON list, JSONL and the column format; fever's folder; musique; the
main paper's released episodes; its paper_values.json) and `lab sets import`. Each
generated file loads or is refused in one line, with no traceback, no hang and nothing
stored (the property of tests/helpers/fuzz.py).

A generated file is a valid one with fields dropped, changed to values of any type or
added, written in the format's layout, or garbage, or JSON nested past any limit."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.cli import main
from core import json_text
from tests.helpers.cli import lab, one_error
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
from tests.helpers.released import HAND

DATA = Path(__file__).parent / "data"
HOTPOT = json.loads((DATA / "hotpotqa" / "dev_distractor_small.json").read_text("utf-8"))[0]
HOTPOT_KEYS = ["_id", "id", "question", "answer", "supporting_facts", "context", "type",
               "level", "title", "sentences", "sent_id", "answer_aliases"]
MUSIQUE = {"id": "2hop__1_2", "question": "Where was the founder born?", "answer": "Orrin",
           "answer_aliases": ["Lake Orrin"], "answerable": True,
           "paragraphs": [{"idx": 0, "title": "Ada Brun", "paragraph_text": "Born in Orrin.",
                           "is_supporting": True},
                          {"idx": 1, "title": "Quartet", "paragraph_text": "Founded by Ada.",
                           "is_supporting": True}]}
MUSIQUE_KEYS = [*MUSIQUE, "idx", "title", "paragraph_text", "is_supporting",
                "question_decomposition"]
CLAIMS = [json.loads(line) for line in
          (DATA / "fever" / "claims.jsonl").read_text("utf-8").splitlines() if line]
PAGES = json.loads((DATA / "fever" / "pages.json").read_text("utf-8"))
CLAIM_KEYS = [*CLAIMS[0], "lines", "unplaced"]
EPISODE = dict(HAND[0])
EPISODE_KEYS = [*EPISODE]
VALUES = {"s1/m1__enforced_rule": {"delta": 0.75, "ci_low": 0.7, "ci_high": 0.8, "mean6": 0.6}}
VALUE_KEYS = ["delta", "ci_low", "ci_high", "mean6", "s1/m1__unaided", "s1/m2__budget"]
SET_IDS = ["demo-001", "demo-002", "demo-003"]
SET_KEYS = ["question_ids", "version", "seed_tag", "dataset_sha256", "excluded"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with the demo data (ids demo-001 …)."""
    path = tmp_path_factory.mktemp("fuzz-imports") / "template.db"
    assert main(["--db", str(path), "init"]) == 0
    return path


def _work(tmp_path_factory: pytest.TempPathFactory, name: str, template: Path
          ) -> tuple[Path, Path]:
    work = tmp_path_factory.getbasetemp() / f"fuzz-{name}"
    work.mkdir(exist_ok=True)
    return work, fresh_db(template, work / "lab.db")


def records(valid: dict[str, Any], keys: list[str]) -> st.SearchStrategy[list[Any]]:
    """One to three records near `valid`, sometimes with a value of any type among them."""
    return st.lists(st.one_of(near(valid, keys), near(valid, keys), values(keys)),
                    min_size=1, max_size=3)


def as_jsonl(items: list[Any]) -> bytes:
    """One JSON value a line."""
    return "".join(json_dump(r) + "\n" for r in items).encode("utf-8", "surrogatepass")


def as_json(value: Any) -> bytes:
    return json_dump(value).encode("utf-8", "surrogatepass")


def _files(layouts: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(layouts, layouts, garbage(), nested())


def _columns(items: list[Any]) -> Any:
    """Records in the column format: a dict of lists (the Hugging Face layout)."""
    dicts = [r for r in items if isinstance(r, dict)]
    return {k: [r.get(k) for r in dicts] for k in {k for r in dicts for k in r}}


HOTPOT_FILES = _files(st.one_of(records(HOTPOT, HOTPOT_KEYS).map(as_json),
                                records(HOTPOT, HOTPOT_KEYS).map(as_jsonl),
                                records(HOTPOT, HOTPOT_KEYS).map(_columns).map(as_json)))


@fuzz_settings(default=40)
@given(data=HOTPOT_FILES, suffix=st.sampled_from([".json", ".jsonl"]))
def test_fuzz_hotpotqa_import(template: Path, tmp_path_factory: pytest.TempPathFactory,
                              capsys: pytest.CaptureFixture[str], data: bytes, suffix: str) -> None:
    work, db = _work(tmp_path_factory, "hotpotqa", template)
    path = work / f"hotpot{suffix}"
    path.write_bytes(data)
    loads_or_refuses(capsys, db, "data", "import", "hotpotqa", path, "--dataset", "fz")


@fuzz_settings(default=30)
@given(data=_files(st.one_of(records(MUSIQUE, MUSIQUE_KEYS).map(as_jsonl),
                             records(MUSIQUE, MUSIQUE_KEYS).map(as_json))))
def test_fuzz_musique_import(template: Path, tmp_path_factory: pytest.TempPathFactory,
                             capsys: pytest.CaptureFixture[str], data: bytes) -> None:
    work, db = _work(tmp_path_factory, "musique", template)
    path = work / "musique.jsonl"
    path.write_bytes(data)
    loads_or_refuses(capsys, db, "data", "import", "musique", path)


PAGE_VALUES = st.one_of(
    st.just(PAGES),
    st.dictionaries(st.sampled_from(sorted(PAGES)), values(["lines", "unplaced", "0", "3"]),
                    max_size=3).map(lambda changed: {**PAGES, **changed}),
    values(["lines", "unplaced", *PAGES]))


@fuzz_settings(default=30)
@given(claims=_files(st.lists(st.one_of(st.sampled_from(CLAIMS), near(CLAIMS[0], CLAIM_KEYS),
                                        values(CLAIM_KEYS)), min_size=1, max_size=4)
                     .map(as_jsonl)),
       pages=st.one_of(PAGE_VALUES.map(as_json), garbage(), nested()))
def test_fuzz_fever_import(template: Path, tmp_path_factory: pytest.TempPathFactory,
                           capsys: pytest.CaptureFixture[str], claims: bytes, pages: bytes) -> None:
    work, db = _work(tmp_path_factory, "fever", template)
    folder = work / "fever"
    folder.mkdir(exist_ok=True)
    (folder / "claims.jsonl").write_bytes(claims)
    (folder / "pages.json").write_bytes(pages)
    loads_or_refuses(capsys, db, "data", "import", "fever", folder, "--dataset", "fz")


@fuzz_settings(default=40)
@given(data=_files(records(EPISODE, EPISODE_KEYS).map(as_jsonl)), packed=st.booleans())
def test_fuzz_episodes_import(template: Path, tmp_path_factory: pytest.TempPathFactory,
                              capsys: pytest.CaptureFixture[str], data: bytes, packed: bool
                             ) -> None:
    """The main paper's released episode format (JSONL, plain or gzipped)."""
    work, db = _work(tmp_path_factory, "episodes", template)
    path = work / ("cell.jsonl.gz" if packed else "cell.jsonl")
    path.write_bytes(gzip.compress(data, mtime=0) if packed else data)
    loads_or_refuses(capsys, db, "data", "import", "episodes", path)


@fuzz_settings(default=30)
@given(data=_files(st.one_of(
    near(VALUES, VALUE_KEYS).map(as_json),
    st.dictionaries(st.sampled_from(sorted(VALUES) + ["s2/m9__none", "x", "a/b__c"]),
                    near(VALUES["s1/m1__enforced_rule"], VALUE_KEYS), max_size=3)
    .map(as_json))))
def test_fuzz_paper_values_import(template: Path, tmp_path_factory: pytest.TempPathFactory,
                                  capsys: pytest.CaptureFixture[str], data: bytes) -> None:
    work, db = _work(tmp_path_factory, "paper-values", template)
    path = work / "paper_values.json"
    path.write_bytes(data)
    loads_or_refuses(capsys, db, "data", "import", "paper-values", path)


SET_FILES = st.one_of(
    st.lists(st.one_of(st.sampled_from(SET_IDS), values([])), max_size=4).map(as_json),
    st.lists(st.sampled_from([*SET_IDS, "nope", "", " demo-001", "demo-001\x1b"]),
             max_size=4).map(lambda ids: "\n".join(ids).encode("utf-8")),
    near({"question_ids": SET_IDS[:2], "version": "v1"}, SET_KEYS).map(as_json))


@fuzz_settings(default=30)
@given(data=_files(SET_FILES))
def test_fuzz_sets_import(template: Path, tmp_path_factory: pytest.TempPathFactory,
                          capsys: pytest.CaptureFixture[str], data: bytes) -> None:
    work, db = _work(tmp_path_factory, "sets", template)
    path = work / "fz_v1.json"
    path.write_bytes(data)
    loads_or_refuses(capsys, db, "sets", "import", path, "--dataset", "demo")


@pytest.mark.parametrize(("kind", "name", "data"), [
    ("hotpotqa", "h.json", as_json([HOTPOT])),
    ("musique", "m.jsonl", as_jsonl([MUSIQUE])),
    ("episodes", "e.jsonl", as_jsonl([EPISODE])),
    ("paper-values", "p.json", as_json(VALUES)),
])
def test_each_seed_loads(template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         kind: str, name: str, data: bytes) -> None:
    """The valid records the fuzzer varies load, so a refusal is the change's."""
    db = fresh_db(template, tmp_path / "lab.db")
    path = tmp_path / name
    path.write_bytes(data)
    assert loads_or_refuses(capsys, db, "data", "import", kind, path, *(
        ("--dataset", "fz") if kind == "hotpotqa" else ()))


DEEP_LIST = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(("args", "name"), [
    (("data", "import", "hotpotqa"), "h.json"),
    (("data", "import", "hotpotqa"), "h.jsonl"),
    (("data", "import", "musique"), "m.jsonl"),
    (("data", "import", "episodes"), "e.jsonl"),
    (("data", "import", "paper-values"), "p.json"),
    (("sets", "import"), "s.json"),
])
def test_deeply_nested_json_is_one_line(template: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                        name: str) -> None:
    """Found by the fuzzer: json.loads recursed past Python's limit (RecursionError)."""
    db = fresh_db(template, tmp_path / "lab.db")
    path = tmp_path / name
    path.write_bytes(DEEP_LIST)
    extra = ("--dataset", "demo") if args[0] == "sets" else ()
    code, _, err = lab(capsys, "--db", db, *args, path, *extra)
    one_error(code, err, "nested too deeply")


def test_deeply_nested_fever_claims_are_one_line(template: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db = fresh_db(template, tmp_path / "lab.db")
    folder = tmp_path / "fever"
    folder.mkdir()
    (folder / "claims.jsonl").write_bytes(DEEP_LIST)
    (folder / "pages.json").write_text(json.dumps(PAGES), encoding="utf-8")
    code, _, err = lab(capsys, "--db", db, "data", "import", "fever", folder)
    one_error(code, err, "nested too deeply")


def test_too_deep_json_is_a_decode_error_at_its_deep_bracket() -> None:
    text = '{"a": "[[[[", "b": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(json.JSONDecodeError, match="nested too deeply") as caught:
        json_text.loads(text)
    # the object is the first level, the string's brackets are not counted
    assert caught.value.pos == text.index("[[[[[") + json_text.SHOWN_DEPTH - 1
    assert json_text.loads(b'{"a": [[1]]}') == {"a": [[1]]}
