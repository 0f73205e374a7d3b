"""Canonical JSON, its sha256, and keyed random draws: the one definition of each.

Spec hashes (conditions, regimes, models, cells), the pre-registration's hash chain and
every "same draw in every process" stream go through here, so a change to how one of
them is written changes all of them together (and the tests on known hashes fail).
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any


def canonical_json(obj: Any, *, ensure_ascii: bool = True) -> str:
    """Canonical JSON: sorted keys, no spaces.

    Args:
        obj: a JSON-serialisable value.
        ensure_ascii: escape non-ASCII characters (spec hashes, as they were first
            written); the pre-registration keeps UTF-8 (False).

    Returns:
        The JSON text.
    """
    return _ENCODERS[bool(ensure_ascii)].encode(obj)


_ENCODERS = {escape: json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=escape)
             for escape in (True, False)}
"""The encoders `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=…)`
would build on every call (an encoder keeps no state between calls)."""


def sha256_hex(text: str) -> str:
    """sha256 hex digest (64 lowercase characters) of `text` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_hash(obj: Any, *, ensure_ascii: bool = True) -> str:
    """sha256 hex digest of `canonical_json(obj)`."""
    return sha256_hex(canonical_json(obj, ensure_ascii=ensure_ascii))


def keyed_int(*key: object, digest_size: int = 8) -> int:
    """An integer drawn from blake2b of the key's parts joined by "|".

    Never Python's salted `hash()`: the value is the same in every process and rerun.

    Args:
        *key: the parts of the key (each written with `str`).
        digest_size: blake2b digest bytes (the integer has 8 × this many bits).

    Returns:
        The digest read as a big-endian unsigned integer.
    """
    text = "|".join(map(str, key))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"),
                                          digest_size=digest_size).digest(), "big")


def keyed_uniform(*key: object) -> float:
    """A number in [0, 1) drawn from the key (8-byte blake2b over 2**64)."""
    return keyed_int(*key, digest_size=8) / 2**64


def keyed_rng(*key: object, digest_size: int = 16) -> random.Random:
    """A fresh `random.Random` seeded by `keyed_int(*key, digest_size=digest_size)`."""
    return random.Random(keyed_int(*key, digest_size=digest_size))
