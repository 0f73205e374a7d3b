"""A request's JSON made from each message's JSON, each message encoded once per episode.

An episode sends its whole history with every call, and its request seed hashes that
history too (`core.models.generation.request_seed`): encoding every message again for
the body and again, canonically, for the seed grew with each turn and was the largest
single cost of building a call. `MessageJSON` keeps each message's two encodings for
the episode's later calls. The text it makes is the text `json.dumps` (body) and
`core.canonical.canonical_json` (seed) make of the whole, byte for byte: a list's or an
object's JSON is its items' JSON joined by the separator (", " and ": " for `json.dumps`'
defaults, "," and ":" for canonical JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from core.canonical import canonical_json

MESSAGES = "messages"
"""The body key holding the conversation."""
_KEY = json.dumps(MESSAGES)


class MessageJSON:
    """The JSON of one episode's messages, each made the first time it is sent.

    A message is known by its items (role and content: the same text is the same
    message whichever dict holds it); one with a value that cannot be a key is encoded
    afresh each time.
    """

    def __init__(self) -> None:
        self._plain: dict[tuple[tuple[str, Any], ...], str] = {}
        self._canonical: dict[tuple[tuple[str, Any], ...], str] = {}

    def body(self, body: Mapping[str, Any]) -> str:
        """`json.dumps(body)`, its messages from the kept encodings."""
        messages = body.get(MESSAGES)
        if not isinstance(messages, list):
            return json.dumps(body)
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        side = before
        for key, value in body.items():
            if key == MESSAGES:
                side = after
            else:
                side[key] = value
        parts = [json.dumps(before)[1:-1]] if before else []
        listed = ", ".join(self._encoded(m, self._plain, _plain) for m in messages)
        parts.append(f"{_KEY}: [{listed}]")
        if after:
            parts.append(json.dumps(after)[1:-1])
        return "{" + ", ".join(parts) + "}"

    def canonical(self, head: Sequence[Any], messages: Sequence[Mapping[str, Any]]) -> str:
        """`canonical_json([*head, [dict(m) for m in messages]], ensure_ascii=False)`."""
        items = [str(x) if type(x) is int else canonical_json(x, ensure_ascii=False)
                 for x in head]  # an int's JSON is its str (json.dumps made an encoder)
        items.append("[" + ",".join(self._encoded(m, self._canonical, _canonical)
                                    for m in messages) + "]")
        return "[" + ",".join(items) + "]"

    @staticmethod
    def _encoded(message: Mapping[str, Any], kept: dict[tuple[tuple[str, Any], ...], str],
                 encode: Any) -> str:
        key = tuple(message.items())
        try:
            text = kept.get(key)
        except TypeError:  # a value that cannot be a key (a list of content parts)
            return str(encode(message))
        if text is None:
            text = kept[key] = encode(message)
        return text


def _plain(message: Mapping[str, Any]) -> str:
    return json.dumps(dict(message))


def _canonical(message: Mapping[str, Any]) -> str:
    return canonical_json(dict(message), ensure_ascii=False)
