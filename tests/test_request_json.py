"""A request's JSON made from kept message encodings is `json.dumps` of the body, byte for
byte, and the seed's canonical text is `canonical_json`'s (`core.models.request_json`).

One `MessageJSON` serves a whole episode, so each example grows a history call by call
through the same one, as the episode loop does (a forced turn rewrites its last
messages: new dicts with other text), and compares every call's text with the plain
definition. tests/test_golden_requests.py checks the bodies real episodes send.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.canonical import canonical_json
from core.models.generation import request_seed
from core.models.request_json import MessageJSON

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]),
                                 "content": TEXT})
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                   st.floats(allow_nan=True, allow_infinity=True), TEXT)
EXTRA = st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k != "messages"),
                        st.one_of(SCALAR, st.lists(SCALAR, max_size=3),
                                  st.dictionaries(TEXT, SCALAR, max_size=2)), max_size=4)


@settings(max_examples=300, deadline=None)
@given(turns=st.lists(st.lists(MESSAGE, min_size=1, max_size=3), min_size=1, max_size=6),
       before=EXTRA, after=EXTRA, seed=st.integers(0, 2**31), replicate=st.integers(0, 9),
       rewrite=st.booleans())
def test_the_kept_encodings_make_the_plain_json(turns: list[list[dict[str, str]]],
                                                before: dict[str, Any], after: dict[str, Any],
                                                seed: int, replicate: int, rewrite: bool) -> None:
    kept = MessageJSON()
    history: list[dict[str, str]] = []
    for turn in turns:
        history += turn
        if rewrite and len(history) > 1:  # a forced turn: the last message, another text
            history[-1] = {**history[-1], "content": history[-1]["content"] + "\n\nFinish."}
        body = {**before, "messages": [dict(m) for m in history],
                **{k: v for k, v in after.items() if k not in before}}
        assert kept.body(body) == json.dumps(body)
        assert kept.canonical((seed, replicate), history) == canonical_json(
            [seed, replicate, [dict(m) for m in history]], ensure_ascii=False)
        assert (request_seed(history, seed, replicate, kept)
                == request_seed(history, seed, replicate))


def test_a_message_that_cannot_be_a_key_is_encoded_each_time() -> None:
    kept = MessageJSON()
    parts = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    body: dict[str, Any] = {"model": "m", "messages": [parts, {"role": "user", "content": "é"}],
                            "seed": 1}
    for _ in range(2):
        assert kept.body(body) == json.dumps(body)
        assert kept.canonical((0, 0), body["messages"]) == canonical_json(
            [0, 0, body["messages"]], ensure_ascii=False)


def test_a_body_without_messages_is_plain_json() -> None:
    body = {"model": "m", "prompt": "x", "n": [1, 2]}
    assert MessageJSON().body(body) == json.dumps(body)
    assert MessageJSON().body({}) == "{}"
    assert MessageJSON().body({"messages": []}) == json.dumps({"messages": []})
