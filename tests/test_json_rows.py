"""`core.json_text.dumps_rows`: the text of ``json.dumps(rows, ensure_ascii=False,
indent=1)``, written by json's C encoder for flat rows (`lab results --format json`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.json_text import dumps_rows


def _indented(rows: Any) -> str:
    return json.dumps(rows, ensure_ascii=False, indent=1)


FLAT: list[dict[str, Any]] = [
    {"table": "success", "model": "sim-own3", "arm": "enforced_rule:k=7", "budget": 8,
     "estimate": 0.78, "ci_low": 0.7333333333333333, "p": None, "ok": True, "no": False,
     "detail": 'quote " back\\slash\nnewline\ttab \x01 é 中 \u2028 😀'},
    {"table": "hazard", "estimate": float("nan"), "ci_low": float("-inf"),
     "ci_high": float("inf"), "n": -3, "big": 10**30, "tiny": 5e-324, "": ""},
    {"only": 1},
]


@pytest.mark.parametrize("rows", [
    FLAT,
    FLAT[:1],
    [],
    [{}],
    [{"a": 1}, {}, {"b": 2}],
    [{"nested": [1, 2, {"x": None}]}, {"a": 1}],
    [{"nested": {"x": 1}}],
    [{"t": (1, 2)}],
    [{3: "int key", 2.5: "float key", False: "bool key", None: "none key"}],
], ids=["flat", "one", "empty", "empty-row", "empty-among", "list-value", "dict-value",
        "tuple-value", "other-keys"])
def test_the_same_text_as_json_dumps(rows: list[dict[str, Any]]) -> None:
    assert dumps_rows(rows) == _indented(rows)


def test_flat_rows_do_not_go_through_the_python_encoder(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The point of it: flat rows are written without json's Python encoder (which an
    indent forces) — taken away here, the rows still come out."""
    def no_python_encoder(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("json's Python encoder was used")

    monkeypatch.setattr(json.encoder, "_make_iterencode", no_python_encoder)
    with pytest.raises(AssertionError):
        _indented(FLAT)
    text = dumps_rows(FLAT)
    assert text.startswith('[\n {\n  "table": "success",\n  "model": "sim-own3",\n')
    assert text.endswith('\n },\n {\n  "only": 1\n }\n]')
    assert json.loads(text)[0] == FLAT[0]


def test_a_value_json_cannot_write_still_fails() -> None:
    with pytest.raises(TypeError):
        unwritable: list[dict[str, Any]] = [{"a": object()}]
        dumps_rows(unwritable)
