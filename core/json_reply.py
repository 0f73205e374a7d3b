"""Reading a JSON object a model was asked to reply with: the object may stand inside
other text (a code fence, a sentence), and nothing in it is coerced."""

from __future__ import annotations

import math
import re
from typing import Any

from core import json_text

_JSON_RE = re.compile(r"\{.*\}", re.DOTALL)


def json_object(text: str | None) -> dict[str, Any] | None:
    """The reply's JSON object (from its first "{" to its last "}"), or None when there is
    none or it is not an object."""
    m = _JSON_RE.search(text or "")
    if m is None:
        return None
    try:
        data = json_text.loads(m.group(0))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def number_between(value: Any, low: float, high: float) -> bool:
    """Whether `value` is a finite number (not a boolean, not a string) in [low, high]."""
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value) and low <= value <= high)
