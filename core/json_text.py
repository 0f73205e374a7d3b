"""JSON text from outside, read with one rule for nesting: `loads`.

`json.loads` recurses once per nested list or object, so a file, tests document or
model reply nested a few thousand levels deep (`[[[[…]]]]`) raised RecursionError
instead of the `JSONDecodeError` every reader turns into its one error line. `loads`
is `json.loads` whose too-deep nesting is a `JSONDecodeError` ("nested too deeply")
at the bracket where the nesting passed `SHOWN_DEPTH` levels, so each caller's
message names the line and column as for any other malformed JSON.

`dumps_rows` writes the other way: a list of flat rows, the text
``json.dumps(rows, ensure_ascii=False, indent=1)`` gives, from json's C encoder.
"""

from __future__ import annotations

import json
from typing import Any

SHOWN_DEPTH = 500
"""Nesting depth whose bracket a too-deep document's error points at (the parser's own
limit is Python's recursion limit, less what the caller's stack already uses)."""


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)`, nesting past the recursion limit included.

    Raises:
        json.JSONDecodeError: malformed JSON, or JSON nested too deeply to parse.
    """
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError("nested too deeply", doc, _deep_at(doc)) from None


_SCALARS = frozenset((str, int, float, bool, type(None)))
"""The value types a row written by `dumps_rows`' C path may hold (exact types: a
subclass, as a list or dict, goes through `json.dumps` itself)."""

_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",\n  ", ": "))
"""One flat row as `json.dumps(..., indent=1)` prints it inside a list, but for the
line breaks after ``{`` and before ``}``: no indent, so json's C encoder writes it,
with the indented item separator. Keys are written as the Python encoder writes them
(text as it is; numbers, booleans and None as their JSON text; others a TypeError)."""


def dumps_rows(rows: list[dict[str, Any]]) -> str:
    """``json.dumps(rows, ensure_ascii=False, indent=1)``, the very same text.

    With an indent, json encodes in Python (its C encoder takes no indent): `lab
    results --format json` spent 0.1-0.2 s of a table's second there. A list of rows
    whose values are all strings, numbers, booleans or None is written row by row by
    the C encoder with the indented separators instead; any other list goes through
    `json.dumps` itself.

    Args:
        rows: the rows (dicts).

    Returns:
        The JSON text (no trailing newline).
    """
    if (type(rows) is not list or not rows
            or any(type(row) is not dict or not row for row in rows)
            or not {type(v) for row in rows for v in row.values()} <= _SCALARS):
        return json.dumps(rows, ensure_ascii=False, indent=1)
    encode = _ROW_ENCODER.encode
    return "[\n " + ",\n ".join("{\n  " + encode(row)[1:-1] + "\n }" for row in rows) + "\n]"


def _deep_at(doc: str) -> int:
    """Where the nesting of `doc` first passes SHOWN_DEPTH (its deepest bracket when it
    never does), brackets inside strings not counted."""
    depth, deepest, at, in_string, escaped = 0, 0, 0, False, False
    for i, c in enumerate(doc):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, i
            if depth > SHOWN_DEPTH:
                return i
        elif c in "]}":
            depth -= 1
    return at
