"""core.models.declared: a configuration dataclass's fields are its table's schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from core.errors import ConfigError
from core.models.declared import (
    check_fields,
    from_table,
    required_keys,
    serving_keys,
    setting,
    table_keys,
)


@dataclass(frozen=True, kw_only=True)
class Toy:
    name: str = setting()
    urls: tuple[str, ...] = setting(serving=True)
    wait_s: float = setting(1.0, gt=0, unit="seconds", serving=True)
    share: float | None = setting(None, ge=0, le=1)
    mode: str = setting("a", choices=("a", "b"), note=" (a: one, b: two)")
    weights: Mapping[str, float] | None = setting(None)
    odd: int = setting(1, check=lambda key, v: None if v % 2 else f"{key} must be odd, got {v}")

    def __post_init__(self) -> None:
        check_fields(self)


def test_keys_come_from_the_fields() -> None:
    assert table_keys(Toy) == {"name", "urls", "wait_s", "share", "mode", "weights", "odd"}
    assert required_keys(Toy) == ("name", "urls")
    assert serving_keys(Toy) == {"urls", "wait_s"}


def test_a_table_builds_a_typed_configuration() -> None:
    toy = from_table(Toy, {"name": "x", "urls": ["http://a"], "wait_s": 2, "weights": {"a": 1}})
    assert toy.urls == ("http://a",) and toy.wait_s == 2 and toy.share is None


@pytest.mark.parametrize("extra, message", [
    ({"urls": ["http://a", 3]}, "urls must be a list of strings, got ['http://a', 3]"),
    ({"wait_s": True}, "wait_s must be a number > 0 seconds, got True"),
    ({"wait_s": 0}, "wait_s must be a positive number of seconds, got 0"),
    ({"share": 1.5}, "share must be in [0, 1], got 1.5"),
    ({"share": "half"}, "share must be a number in [0, 1], got 'half'"),
    ({"mode": "c"}, "mode must be one of a, b (a: one, b: two), got 'c'"),
    ({"weights": {"a": "heavy"}}, "weights must be a table of numbers, got {'a': 'heavy'}"),
    ({"odd": 2}, "odd must be odd, got 2"),
])
def test_each_bad_value_is_one_line(extra: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_table(Toy, {"name": "x", "urls": ["http://a"], **extra})
    assert str(info.value) == message
