"""What the fuzz suite (tests/test_fuzz_*.py) shares: its hypothesis settings, the
strategies that build inputs near each format, and the one property every input must
keep through the real command line.

The property: `lab …` on a generated file either loads it (exit 0) or refuses it with
one line on stderr (`error: …`, exit ≠ 0) and stores nothing (the SQL dump of lab.db
is the same before and after); it never ends on an exception (a traceback for a user)
and never hangs (pytest-timeout ends a test that would).

Quick by default: each target tries `default` inputs, the same ones on every run
(derandomized, so CI is reproducible). `LAB_FUZZ_EXAMPLES=N` tries N fresh random
inputs per target instead (the deep run docs/queue.md quotes).
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from tests.helpers.cli import dump_hash, lab

DEEP = int(os.environ.get("LAB_FUZZ_EXAMPLES", "0") or 0)
"""Inputs per target of a deep run (0: the quick, derandomized run)."""


def fuzz_settings(default: int) -> settings:
    """hypothesis settings of one target: `default` inputs, or LAB_FUZZ_EXAMPLES."""
    return settings(max_examples=DEEP or default, deadline=None, derandomize=not DEEP,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           # capsys: each run reads (and so clears) it
                                           HealthCheck.function_scoped_fixture])


# ── strategies ───────────────────────────────────────────────────────────────────────

CONTROL = "\x00\x01\x07\x08\x0b\x1b\x7f\x85\u202e\ufeff"
WEIRD_TEXT = st.text(alphabet=st.one_of(st.characters(exclude_categories=["Cs"]),
                                        st.sampled_from(list(CONTROL + "\n\t\"\\[]{}=#'"))),
                     max_size=40)
"""Short text with control characters, quotes and brackets among any other (any
character UTF-8 encodes: all but the surrogates, category Cs; the same characters as
`codec="utf-8"`, whose table hypothesis builds by encoding every code point, about 5 s
in each test process before its first cached run)."""

NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31, 2**63, 10**9, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 1e-300, 1e300, math.inf, -math.inf, math.nan]))

SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, WEIRD_TEXT)


def values(keys: list[str]) -> st.SearchStrategy[Any]:
    """Any JSON-like value: scalars, lists and objects whose keys are mostly `keys`."""
    names = st.one_of(st.sampled_from(keys), WEIRD_TEXT) if keys else WEIRD_TEXT
    return st.recursive(SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(names, inner, max_size=5)),
        max_leaves=12)


def near(valid: dict[str, Any], keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """`valid` with some fields dropped, replaced by any value or added."""
    pool = sorted(set(keys) | set(valid))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        record = dict(valid)
        for key in draw(st.lists(st.sampled_from(pool), max_size=4, unique=True)):
            action = draw(st.sampled_from(["drop", "replace", "replace"]))
            if action == "drop":
                record.pop(key, None)
            else:
                record[key] = draw(values(keys))
        return record

    return build()


def nested() -> st.SearchStrategy[bytes]:
    """Deeply nested JSON (`[[[…]]]`, `{"a": {"a": …}}`), past any recursion limit at
    its deepest."""
    depth = st.one_of(st.integers(1, 100), st.integers(900, 1100), st.integers(1, 200_000))
    return st.one_of(depth.map(lambda n: b"[" * n + b"]" * n),
                     depth.map(lambda n: b'{"a": ' * n + b"1" + b"}" * n))


def json_dump(value: Any) -> str:
    """`value` as JSON text (NaN and infinity as Python writes them: not strict JSON)."""
    return json.dumps(value, ensure_ascii=False)


def garbage() -> st.SearchStrategy[bytes]:
    """Bytes that are rarely any format: random bytes, random text, truncated JSON."""
    return st.one_of(st.binary(max_size=200),
                     WEIRD_TEXT.map(lambda s: s.encode("utf-8", "surrogatepass")),
                     st.sampled_from([b"", b"{", b"[", b'{"a": ', b"\xff\xfe", b"null",
                                      b"5", b"true", b'"text"', b"[]", b"{}"]))


# ── the property ─────────────────────────────────────────────────────────────────────

_COPIES = itertools.count()
COLLECT_EVERY = 32
"""Copies made between two collections (and removals of the copies before them)."""
_LAST_TEMPLATE: list[Path | None] = [None]
_DUMPS: dict[str, str] = {}
"""SQL dump hashes of the lab.db states seen before a refusal, by their bytes' sha256."""


def fresh_db(template: Path, target: Path) -> Path:
    """A new copy of `template` beside `target` (`target`'s name with a serial number).

    Commands run in this process leave their lab.db connections to the garbage
    collector; SQLite keeps locks and shared memory per file (per inode) in the
    process, and a connection closed after its file was removed or rewritten under it
    made the next example's command see an empty lab.db ("disk I/O error", or no
    tables). So each example gets a file of its own, and a file is removed only after a
    full collection has closed the connections left on it. A full collection costs a
    quarter of a second in a test process (its heap is large), more than the example
    itself, so it runs once every COLLECT_EVERY copies, which then removes the copies
    made before it (with their -wal and -shm)."""
    serial = next(_COPIES)
    if serial % COLLECT_EVERY == 0 or _LAST_TEMPLATE[0] != template:
        # also before a new template's first copy: the command that made it may have
        # left its last writes in its -wal, which a copy of the file alone would lack
        _LAST_TEMPLATE[0] = template
        gc.collect()  # close the connections earlier commands left to the collector
        for old in target.parent.glob(f"{target.stem}-*{target.suffix}*"):
            old.unlink(missing_ok=True)
    copy = target.with_name(f"{target.stem}-{serial}{target.suffix}")
    shutil.copy(template, copy)
    return copy


def _file_state(db: Path) -> tuple[bytes, ...]:
    """lab.db's bytes and its -wal's: equal bytes are certainly equal contents."""
    wal = db.with_name(db.name + "-wal")
    return (db.read_bytes(), wal.read_bytes() if wal.exists() else b"")


def loads_or_refuses(capsys: pytest.CaptureFixture[str], db: Path, *args: object) -> bool:
    """Run `lab --db DB ARGS`; True when it loaded, False when it refused in one line
    with lab.db unchanged. Anything else fails the example (an exception escapes
    `main` as it would reach the user as a traceback)."""
    state = _file_state(db)
    code, _, err = lab(capsys, "--db", db, *args)
    assert "Traceback" not in err, err
    _count(f"{args[0]}: " + ("loaded" if code == 0 else "refused"))
    if code == 0:
        return True
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    # Same bytes: nothing stored, without dumping. Changed bytes (a command may write a
    # page without changing a row) are judged by the SQL dump against the same bytes'.
    if _file_state(db) != state:
        assert dump_hash(db) == _dump_of(state), f"stored on refusal: {lines[0]}"
    return False


def _dump_of(state: tuple[bytes, ...]) -> str:
    """The SQL dump hash of lab.db as it was in `state` (written to a scratch file; the
    same state's, most often the template's, is dumped once)."""
    key = hashlib.sha256(b"".join(hashlib.sha256(part).digest() for part in state)).hexdigest()
    if key in _DUMPS:
        return _DUMPS[key]
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "lab.db"
        db.write_bytes(state[0])
        if state[1]:
            db.with_name("lab.db-wal").write_bytes(state[1])
        _DUMPS[key] = dump_hash(db)
    return _DUMPS[key]


def _count(outcome: str) -> None:
    """Tally an outcome in hypothesis's statistics (`--hypothesis-show-statistics`)."""
    try:
        event(outcome)
    except InvalidArgument:
        pass  # called outside a generated example
