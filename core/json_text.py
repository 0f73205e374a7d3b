"""JSON text from outside, read with one rule for nesting: `loads`.

`json.loads` recurses once per nested list or object, so a file, tests document or
model reply nested a few thousand levels deep (`[[[[…]]]]`) raised RecursionError
instead of the `JSONDecodeError` every reader turns into its one error line. `loads`
is `json.loads` whose too-deep nesting is a `JSONDecodeError` ("nested too deeply")
at the bracket where the nesting passed `SHOWN_DEPTH` levels, so each caller's
message names the line and column as for any other malformed JSON.
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
