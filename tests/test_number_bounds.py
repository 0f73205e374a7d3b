"""Every number lab reads goes through one check (`core.bounds`): lab.toml's fields, the
worker's settings and the command-line options each refuse NaN, infinity and values out
of range with one line naming the key and the allowed range, before anything runs."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import tracemalloc
import types
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from console.cli import main
from core.bounds import MAX_CONCURRENCY, Bounds
from core.errors import ConfigError
from core.models.backends import BACKENDS
from core.models.declared import _setting, field_bounds
from core.models.specs import SAMPLING_KEYS
from jobs.settings import WorkerSettings
from jobs.slots import CallSlots
from tests.helpers.cli import dump_hash, lab, one_error
from tests.helpers.console import copy_db

REQUIRED = {
    "openai": 'model = "m"\nendpoints = ["http://127.0.0.1:9/v1"]\n',
    "anthropic": 'model = "c"\n',
    "sim": 'policy = "never"\n',
}
"""The smallest valid table of each built-in backend (the fields it requires)."""


def _numeric(hint: object) -> bool:
    arms = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return any(arm in (int, float) for arm in arms)


def numeric_fields() -> list[tuple[str, str]]:
    """(backend, key) of every numeric field a built-in backend declares."""
    out = []
    for name in REQUIRED:
        cls = BACKENDS[name].config
        hints = typing.get_type_hints(cls)
        out += [(name, f.name) for f in fields(cls)  # type: ignore[arg-type]
                if _numeric(hints[f.name]) and _setting(f).check is None]
    return out


def test_every_backend_here_is_covered() -> None:
    assert set(REQUIRED) == set(BACKENDS)


def test_every_numeric_field_declares_an_upper_bound() -> None:
    missing = [(b, k) for b, k in numeric_fields()
               if field_bounds(BACKENDS[b].config, k).le is None]
    assert not missing
    for backend in BACKENDS.values():
        assert field_bounds(backend.config, "concurrency").le == MAX_CONCURRENCY


@pytest.fixture
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("t") / "lab.db"
    assert main(["--db", str(path), "init"]) == 0
    assert main(["--db", str(path), "sets", "create", "d", "--dataset", "demo", "--n", "2",
                 "--seed", "1"]) == 0
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def _toml(tmp_path: Path, backend: str, extra: str) -> Path:
    path = tmp_path / "lab.toml"
    path.write_text(f'[models.m]\nbackend = "{backend}"\n{REQUIRED[backend]}{extra}\n',
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_nan_and_inf_in_every_numeric_field_are_one_line(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         value: str) -> None:
    cases = [(b, k, f"{k} = {value}") for b, k in numeric_fields()]
    for backend in ("openai", "anthropic"):
        for price in ("input", "output", "cache_write", "cache_read"):
            table = {"input": "1", "output": "1", price: value}
            shown = ", ".join(f"{k} = {v}" for k, v in table.items())
            cases.append((backend, f"price_per_mtok.{price}", f"price_per_mtok = {{ {shown} }}"))
    cases += [("openai", f"sampling.{k}", f"sampling = {{ {k} = {value} }}")
              for k in sorted(SAMPLING_KEYS)]
    assert len(cases) > 40
    for backend, key, line in cases:
        config = _toml(tmp_path, backend, line)
        code, _, err = lab(capsys, "--config", config, "models")
        one_error(code, err, key, "models.m")
        assert "Traceback" not in err


@pytest.mark.parametrize("backend, line, words", [
    ("openai", "concurrency = 1000000000", ("concurrency", "[1, 4096]", "1000000000")),
    ("sim", "concurrency = 1000000000", ("concurrency", "[1, 4096]")),
    ("openai", "timeout_s = 0", ("timeout_s", "(0, 86400] seconds")),
    ("openai", "sampling = { temperature = 2.5 }", ("sampling.temperature", "[0, 2]")),
    ("anthropic", "sampling = { temperature = 1.5 }", ("sampling.temperature", "[0, 1]")),
    ("openai", "sampling = { top_k = 2.5 }", ("sampling.top_k", "an integer")),
    ("openai", "price_per_mtok = { input = -1, output = 1 }", ("price_per_mtok.input", "[0, ")),
    ("openai", "max_context = 100000000000", ("max_context", "[1, 10000000]")),
    ("sim", "hazard_slope = 5", ("hazard_slope", "[-1, 1]")),
    ("anthropic", 'base_url = "https://h:0"', ("base_url", "port")),
])
def test_values_out_of_range_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          backend: str, line: str, words: tuple[str, ...]) -> None:
    code, _, err = lab(capsys, "--config", _toml(tmp_path, backend, line), "models")
    one_error(code, err, *words)


@pytest.mark.parametrize("url, words", [
    ("http://127.0.0.1:99999/v1", ("endpoints[0]", "port", "[1, 65535]")),
    ("http://127.0.0.1:0/v1", ("endpoints[0]", "port", "[1, 65535]")),
    ("http://127.0.0.1:x/v1", ("endpoints[0]", "port")),
    ("http://127.0.0.1:8000/v1\\u0007", ("endpoints[0]", "control character")),
    ("http://a b/v1", ("endpoints[0]", "space")),
    ("http:///v1", ("endpoints[0]", "no host")),
])
def test_bad_endpoints_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str,
                                    words: tuple[str, ...]) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(f'[models.m]\nbackend = "openai"\nmodel = "m"\nendpoints = ["{url}"]\n',
                    encoding="utf-8")
    code, _, err = lab(capsys, "--config", path, "models")
    one_error(code, err, *words)


def test_a_bad_lab_toml_is_refused_before_anything_is_stored(template: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    db = tmp_path / "lab.db"
    copy_db(template, db)
    config = _toml(tmp_path, "openai", "price_per_mtok = { input = nan, output = 1 }")
    before = dump_hash(db)
    one_error(*lab(capsys, "--db", db, "--config", config, "enqueue", "--models", "m",
                   "--conditions", "none", "--regimes", "clean", "--set", "d")[::2],
              "price_per_mtok.input", "finite")
    assert dump_hash(db) == before


ENQUEUE = ("enqueue", "--models", "sim-own5", "--conditions", "none", "--regimes", "clean",
           "--set", "d")


@pytest.mark.parametrize("args, words", [
    (("worker", "--grace", "nan"), ("--grace", "finite", "[0, 600] seconds")),
    (("worker", "--grace", "inf"), ("--grace", "finite")),
    (("worker", "--grace", "-1"), ("--grace", "[0, 600]")),
    (("worker", "--concurrency", "1000000000"), ("--concurrency", "[1, 4096]")),
    (("worker", "--workers", "100000"), ("--workers", "[1, 256]")),
    (("worker", "--lease", "nan"), ("--lease", "finite", "[1, 86400]")),
    (("tail", "--timeout", "nan"), ("--timeout", "finite")),
    (("tail", "--timeout", "-inf"), ("--timeout", "finite")),
    (("try", "--model", "sim-own5", "--condition", "none", "--regime", "clean",
      "--question", "demo-001", "--budget", "1000000"), ("--budget", "[1, 64]")),
    (("prereg", "outcomes", "--resamples", "1000000000"), ("--resamples", "[100, 100000]")),
    (("models", "--timeout", "nan"), ("--timeout", "finite")),
    (("serve", "m", "--port", "99999"), ("--port", "[1, 65535]")),
    (("results", "policies", "--tau-lo", "nan"), ("--tau-lo", "finite", "[0, 1]")),
    (("data", "import", "hotpotqa", "x.json", "--warn-kb", "inf"), ("--warn-kb", "finite")),
    (("validate-measures", "--seeds", "1000000000"), ("--seeds", "[1, 1000]")),
    (("traces", "collect", "--threshold", "nan"), ("--threshold", "finite")),
    ((*ENQUEUE, "--seeds", "0,nan"), ("--seeds",)),
])
def test_option_values_out_of_range_are_one_line(template: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 args: tuple[str, ...], words: tuple[str, ...]
                                                ) -> None:
    db = tmp_path / "lab.db"
    copy_db(template, db)
    before = dump_hash(db)
    code, _, err = lab(capsys, "--db", db, *args)
    one_error(code, err, *words)
    assert "Traceback" not in err
    assert dump_hash(db) == before


@pytest.mark.parametrize("key, value", [
    ("grace_s", math.nan), ("grace_s", math.inf), ("concurrency", 10**9), ("lease_s", 0),
    ("heartbeat_s", math.nan), ("max_attempts", 0)])
def test_worker_settings_check_their_numbers(tmp_path: Path, key: str, value: float) -> None:
    setting: dict[str, Any] = {key: value}  # any one field, as lab.toml or an option sets it
    with pytest.raises(ConfigError, match=key):
        WorkerSettings(db_path=tmp_path / "lab.db", **setting)


def test_bounds_messages() -> None:
    b = Bounds(ge=1, le=4096, integer=True)
    assert b.error("concurrency", 1_000_000_000) == (
        "concurrency must be in [1, 4096], got 1000000000")
    assert b.error("concurrency", 4096) is None and b.error("concurrency", 1) is None
    assert b.error("concurrency", 2.5) == "concurrency must be an integer in [1, 4096], got 2.5"
    assert b.error("concurrency", True) is not None
    seconds = Bounds(gt=0, le=60, unit="seconds")
    assert seconds.error("t", math.nan) == "t must be a finite number in (0, 60] seconds, got nan"
    assert seconds.error("t", 0) == "t must be in (0, 60] seconds, got 0"
    assert seconds.error("t", 60) is None
    assert Bounds().error("x", -math.inf) == "x must be a finite number, got -inf"


def test_the_slot_pool_allocates_lazily(tmp_path: Path) -> None:
    """A cap of a million slots costs nothing until calls hold them: memory grows with
    the slots taken, never with the cap (a deque of every slot number was ~40 MB)."""
    tracemalloc.start()
    try:
        slots = CallSlots(tmp_path / "calls.lock", 1_000_000)

        async def take() -> list[int]:
            return [await slots.acquire() for _ in range(3)]

        taken = asyncio.run(take())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert taken == [0, 1, 2]
    assert peak < 1_000_000, peak
    for slot in taken:
        slots.release(slot)
    slots.close()


def test_the_slot_pool_refuses_a_cap_past_its_marker(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        CallSlots(tmp_path / "calls.lock", 2**31)
