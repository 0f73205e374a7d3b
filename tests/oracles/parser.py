"""The action parser's value cleaning as it ran before it skipped values that begin
with no wrapper or quote: the reference for `core.parser._clean`'s tests."""

from __future__ import annotations


def clean_every_time(value: str) -> str:
    """`_clean`'s wrapper loop as it ran before it was skipped for values that begin
    with no wrapper or quote (the test's reference)."""
    from core.parser import _QUOTE_PAIRS, _WRAPPERS

    value = value.strip()
    changed = True
    while changed and value:
        changed = False
        for opener, closer in _WRAPPERS:
            if (len(value) >= len(opener) + len(closer) and value.startswith(opener)
                    and value.endswith(closer)):
                value = value[len(opener):len(value) - len(closer)].strip()
                changed = True
                break
        if not changed and len(value) > 2 and value[-1] in ".,;":
            for opener, closer in _QUOTE_PAIRS:
                if value[0] == opener and value[-2] == closer:
                    value = value[:-1]
                    changed = True
                    break
    return value
