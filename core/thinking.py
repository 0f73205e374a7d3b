"""The `<think>…</think>` reasoning markup: its one regex and tags.

Used where a reply's reasoning is split off (core.models.reasoning), where actions are
parsed outside it (core.parser) and where a judge's verdict is read after it (core.judges).
"""

from __future__ import annotations

import re

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
THINK_BLOCK_RE = re.compile(r"<think>(.*?)</think>", re.IGNORECASE | re.DOTALL)
"""A closed reasoning block; group 1 is the reasoning inside it."""
THINK_TAG_RE = re.compile(r"</?think>", re.IGNORECASE)
"""A lone opening or closing tag."""
