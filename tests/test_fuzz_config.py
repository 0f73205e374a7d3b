"""Fuzz lab.toml and the worker's settings through the real command line: each generated
input loads or is refused in one line, with no traceback, no hang and nothing stored
(the property of tests/helpers/fuzz.py).

lab.toml documents are built from the declared fields' names (every backend's table,
the price and sampling tables inside them) with values of any type, plus garbage; the
worker's options take any text."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.cli import main
from core.models.backends import BACKENDS
from core.models.declared import table_keys
from tests.helpers.cli import lab, one_error
from tests.helpers.fuzz import (
    WEIRD_TEXT,
    fresh_db,
    fuzz_settings,
    garbage,
    loads_or_refuses,
    values,
)

FIELDS = sorted({k for b in BACKENDS.values() for k in table_keys(b.config)} | {"backend"})
INNER = ["input", "output", "cache_read", "cache_write", "temperature", "top_p", "top_k",
         "min_p", "presence_penalty", "repetition_penalty", "url"]
"""Keys of the tables inside a model's table (prices, sampling) and of endpoint tables."""
VALID: dict[str, dict[str, Any]] = {"openai": {"backend": "openai", "model": "m", "endpoints": ["http://127.0.0.1:9/v1"]},
         "anthropic": {"backend": "anthropic", "model": "claude"},
         "sim": {"backend": "sim", "policy": "own_count", "k": 5}}
"""A valid table of each built-in backend, the seed the generated tables vary."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with the demo data and a 2-question set `d`."""
    path = tmp_path_factory.mktemp("fuzz-config") / "template.db"
    assert main(["--db", str(path), "init"]) == 0
    assert main(["--db", str(path), "sets", "create", "d", "--dataset", "demo", "--n", "2",
                 "--seed", "1"]) == 0
    return path


def toml_value(value: Any) -> str:
    """`value` as a TOML value (None, which TOML lacks, as the bare word null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                           for k, v in value.items()) + "}"


def toml_document(models: dict[str, dict[str, Any]], top: dict[str, Any]) -> str:
    """A lab.toml: top-level keys, then a [models.NAME] table per model."""
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in top.items()]
    for name, table in models.items():
        lines.append(f"[models.{json.dumps(name)}]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


@st.composite
def model_tables(draw: st.DrawFn) -> dict[str, Any]:
    """A model's table: a valid one with fields changed, or any fields at all."""
    if draw(st.booleans()):
        table = dict(VALID[draw(st.sampled_from(sorted(VALID)))])
    else:
        table = {"backend": draw(st.one_of(st.sampled_from(sorted(BACKENDS)), WEIRD_TEXT))}
    for key in draw(st.lists(st.sampled_from(FIELDS), max_size=4, unique=True)):
        if draw(st.integers(0, 4)) == 0:
            table.pop(key, None)
        else:
            table[key] = draw(values(INNER))
    return table


documents = st.one_of(
    st.builds(toml_document,
              st.dictionaries(st.one_of(st.sampled_from(["m", "sim-own5", "q"]), WEIRD_TEXT),
                              model_tables(), max_size=3),
              st.dictionaries(st.sampled_from(["models", "workers", "x"]), values(FIELDS),
                              max_size=1)).map(lambda s: s.encode("utf-8", "surrogatepass")),
    garbage(),
    st.integers(1, 100_000).map(lambda n: b"a = " + b"[" * n + b"]" * n),
    st.integers(1, 100_000).map(lambda n: b"a = " + b"{b = " * n + b"1" + b"}" * n))


@fuzz_settings(default=60)
@given(document=documents)
def test_fuzz_lab_toml(template: Path, tmp_path_factory: pytest.TempPathFactory,
                       capsys: pytest.CaptureFixture[str], document: bytes) -> None:
    work = tmp_path_factory.getbasetemp() / "fuzz-toml"
    work.mkdir(exist_ok=True)
    db = fresh_db(template, work / "lab.db")
    config = work / "lab.toml"
    config.write_bytes(document)
    loads_or_refuses(capsys, db, "--config", config, "enqueue", "--models", "sim-own5",
                     "--conditions", "none", "--regimes", "clean", "--set", "d",
                     "--dry-run")


OPTION_VALUES = st.one_of(WEIRD_TEXT, st.sampled_from(
    ["0", "-1", "1", "nan", "inf", "-inf", "1e309", "4096", "4097", "1000000000", "0.5",
     "600", "601", "thread", "process", "", " ", "1_000", "0x10"]))


@fuzz_settings(default=12)
@given(options=st.dictionaries(
    st.sampled_from(["--workers", "--concurrency", "--type", "--lease", "--grace"]),
    OPTION_VALUES, min_size=1, max_size=3))
def test_fuzz_worker_options(template: Path, tmp_path_factory: pytest.TempPathFactory,
                             capsys: pytest.CaptureFixture[str], options: dict[str, str]) -> None:
    """An idle worker with any option values: it starts and ends, or is refused."""
    work = tmp_path_factory.getbasetemp() / "fuzz-worker"
    work.mkdir(exist_ok=True)
    db = fresh_db(template, work / "lab.db")
    args = [a for option, value in options.items() for a in (option, value)]
    loads_or_refuses(capsys, db, "worker", "--until-idle", *args)


def test_the_toml_writer_writes_what_tomllib_reads() -> None:
    """The generator's TOML is TOML: a valid registry written by it loads."""
    import tomllib

    text = toml_document({"m": {"backend": "sim", "policy": "own", "p": [1.5, math.inf],
                                "t": {"a": "x\x1b\x7f"}}}, {})
    assert tomllib.loads(text)["models"]["m"]["t"]["a"] == "x\x1b\x7f"


def test_lab_toml_fuzz_sees_a_loaded_registry(template: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The command the fuzzer runs loads a valid lab.toml (so a refusal is the file's)."""
    config = tmp_path / "lab.toml"
    config.write_text(toml_document({"m": VALID["sim"]}, {}), encoding="utf-8")
    db = fresh_db(template, tmp_path / "lab.db")
    code, _, err = lab(capsys, "--db", db, "--config", config, "enqueue", "--models", "m",
                       "--conditions", "none", "--regimes", "clean", "--set", "d",
                       "--dry-run")
    assert code == 0, err


@pytest.mark.parametrize("nesting", [b"a = " + b"[" * 100_000 + b"]" * 100_000,
                                     b"a = " + b"{b = " * 5_000 + b"1" + b"}" * 5_000])
def test_deeply_nested_toml_is_one_line(template: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str], nesting: bytes) -> None:
    """Found by the fuzzer: tomllib recursed past Python's limit (a RecursionError)."""
    config = tmp_path / "lab.toml"
    config.write_bytes(nesting)
    db = fresh_db(template, tmp_path / "lab.db")
    code, _, err = lab(capsys, "--db", db, "--config", config, "enqueue", "--models",
                       "sim-own5", "--conditions", "none", "--regimes", "clean", "--set", "d",
                       "--dry-run")
    one_error(code, err, "nested too deeply")
