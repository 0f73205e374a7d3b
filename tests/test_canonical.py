"""core.canonical: the one canonical JSON, sha256 and keyed draw reproduce the known values.

The pinned digests below were computed by the code that each place used before it was
folded into core.canonical; a change here changes every stored spec hash and every
"same in every process" draw.
"""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.replay.calibration import calibration_split
from core.canonical import (
    canonical_hash,
    canonical_json,
    keyed_int,
    keyed_rng,
    keyed_uniform,
    sha256_hex,
)
from core.conditions import parse_condition
from core.judges import random_judgment
from core.models.registry import builtin_models
from core.prereg import CONTENT_FIELDS, FROZEN_FIELDS, entry_hash
from core.regimes import draw_rng, parse_regime
from core.store.runs import cell_hash


def test_canonical_json_form() -> None:
    obj = {"b": [1, 2.5, None], "a": "é"}
    assert canonical_json(obj) == '{"a":"\\u00e9","b":[1,2.5,null]}'
    assert canonical_json(obj, ensure_ascii=False) == '{"a":"é","b":[1,2.5,null]}'
    assert sha256_hex("abc") == hashlib.sha256(b"abc").hexdigest()
    assert canonical_hash(obj) == sha256_hex(canonical_json(obj))


def test_spec_hashes_are_the_known_ones() -> None:
    assert parse_condition("enforced_rule:k=7").spec_hash() == (
        "87d962f89955a8dfa196a3707f83bd514c26ffd00f9dabbb594706a14420b6f3")
    assert parse_condition("call_cost").to_json() == (
        '{"judge":false,"name":"call_cost","price":0.05}')
    assert parse_regime("clean").spec_hash() == (
        "68d98a5125e3eca1ba0b084dbc7a1036b5846863bfb27fc2c9255c22a8624a2b")
    assert builtin_models()["sim-own3"].spec_hash() == (
        "5c3e4701e01d82d2a14ed2a4f767d2af1fc4ca3a61a43787bdf86d7a03c7a784")
    assert cell_hash({"model": "sim-x", "é": "ü", "b": [1, 2.5, None]}) == (
        "bd1e59b2ee91fc2cb3868e1bbb65eaeb02531185febc3355fdef48ea7e2c526e")


def test_prereg_hash_keeps_utf8() -> None:
    row = {k: f"v{k}é" for k in CONTENT_FIELDS + FROZEN_FIELDS}
    assert entry_hash(row) == (
        "470d69bb11b0174697fa41eb671b2ee30b0cdb8f30e0a5fe7e2096f979789f91")
    assert entry_hash(row) == canonical_hash(row, ensure_ascii=False)
    assert entry_hash(row) != canonical_hash(row)


def test_keyed_draws_are_the_known_ones() -> None:
    expected = int.from_bytes(hashlib.blake2b(b"3|q1|1", digest_size=16).digest(), "big")
    assert keyed_int(3, "q1", 1, digest_size=16) == expected
    assert keyed_rng(3, "q1", 1).random() == random.Random(expected).random()
    assert draw_rng(3, "q1", 0).random() == 0.11542287104964588
    assert keyed_uniform("a", 1, 2.5, "qé") == 0.45120092464072453
    assert [random_judgment(s, "q", 2, 0.5) for s in range(4)] == [
        "USELESS", "USELESS", "USEFUL", "USELESS"]
    split = calibration_split(np.array(["a", "b", "c", "d", "e", "f"]), 0.5, 3)
    assert split.tolist() == [False, False, True, True, True, False]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans())
def test_canonical_json_is_json_dumps_with_sorted_keys_and_no_spaces(obj: object, escape: bool
                                                                    ) -> None:
    # the encoders are kept between calls: the text must still be json.dumps' own
    assert canonical_json(obj, ensure_ascii=escape) == json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=escape)
