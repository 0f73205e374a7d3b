"""Text from outside shown inert: the one sanitizer of everything lab prints.

Model answers, imported question text and ids, set, run and model names, amendment
titles and server errors can hold terminal control sequences (an OSC title set,
`ESC[2J` clearing the screen, a carriage return rewriting a line, bidirectional
overrides). Every CLI printer (`console.cli.output.echo`) and every console widget
that shows stored text passes it through `inert`, which shows each control or format
character escaped (`\\x1b`, `\\u202e`) instead of letting the terminal interpret it;
newlines and tabs stay where the layout needs them. `plain` strips them instead, for
text that must stay well-formed elsewhere (SVG/PDF figure text).
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Any, TypeVar

T = TypeVar("T")


def inert(text: str, keep: str = "\n\t") -> str:
    """`text` safe to print on a terminal: control and format characters other than
    those in `keep` (newline and tab) are shown escaped (`\\x1b`), never interpreted.

    Args:
        text: any text (a non-string is shown by its `str`).
        keep: control characters left as they are ("" on a one-line field).
    """
    text = text if isinstance(text, str) else str(text)
    if text.isprintable() or _printable_but(text, keep):
        return text
    return "".join(_shown_char(c) if _is_unsafe(c, keep) else c for c in text)


def _printable_but(text: str, keep: str) -> bool:
    """Whether `text` is printable once the characters in `keep` are taken out: then it
    holds no control or format character to escape (each is unprintable). A table's
    JSON or text (megabytes, newlines in it) is checked in C, not a character at a time."""
    for c in keep:
        text = text.replace(c, "")
    return text.isprintable()


def _is_unsafe(c: str, keep: str) -> bool:
    return c not in keep and unicodedata.category(c) in ("Cc", "Cf", "Cs")


def _shown_char(c: str) -> str:
    return c.encode("unicode_escape", "backslashreplace").decode("ascii")


def plain(text: str) -> str:
    """`text` without control or format characters (newline and tab become spaces): for
    figure text, where they would make an SVG or PDF malformed."""
    text = text if isinstance(text, str) else str(text)
    return "".join(" " if c in "\n\t" else c for c in text
                   if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Cs"))


def inert_fields(value: T) -> T:
    """`value` with every string in it shown `inert` (newlines and tabs kept): a string,
    a dataclass's fields, the items of a tuple or list and a dict's keys and values,
    recursively; anything else is returned as it is. For a record read from lab.db that
    a console screen shows: one call where it enters the screen covers every field.

    Args:
        value: the record (it is not changed; a changed copy is returned).
    """
    return _inert_any(value)


def _inert_any(value: Any) -> Any:
    if isinstance(value, str):
        return inert(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _inert_any(getattr(value, f.name))
                   for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_inert_any(v) for v in value)
    if isinstance(value, list):
        return [_inert_any(v) for v in value]
    if isinstance(value, dict):
        return {_inert_any(k): _inert_any(v) for k, v in value.items()}
    return value
