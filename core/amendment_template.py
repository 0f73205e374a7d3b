"""An amendment's Tests and Scope as text a person writes: the commented template and
reading it back with the line of an error (docs/prereg.md#writing-tests-and-scope).

The template lists every field and its allowed values from the tables the validators
use (`core.registered_tests.KINDS`, `CHOICES`, `metric_choices`, `SCOPE_KEYS`, the arms
of `core.conditions.ARMS`, the regime names `core.regimes.parse_regime` accepts), so a
new kind or field shows up in it without anyone editing it. Lines whose first
non-blank characters are `//` are notes: they become empty lines before the JSON is
read (so a JSON error keeps its line number) and are dropped when the draft is saved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from core.conditions import ARMS
from core.errors import ConfigError
from core.regimes import VALID_NAMES
from core.registered_tests import (
    CHOICES,
    KINDS,
    OPTIONAL_SCOPE_KEYS,
    SCOPE_KEYS,
    kind_fields,
    metric_choices,
    validate_scope,
    validate_tests,
)

NOTE = "//"
"""What starts a note line in the Tests and Scope text."""
_TYPES = {str: "text", int: "integer", float: "number", list: "list", bool: "true/false"}
_ARM_FIELDS = {"a": "arm", "b": "arm", "condition": "arm", "conditions": "list of arms",
               "regime": "regime", "regimes": "list of regimes",
               "budgets": "two budgets, e.g. [16, 8]", "outcomes": "list, see below"}
_NOTE_LINE = re.compile(r"^\s*//.*$", re.MULTILINE)


class TextError(ConfigError):
    """Tests or Scope text that cannot be saved, with the line it is about (1-based)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line
        self.reason = message


def _value_words(kind: str, field: str, ftype: type) -> str:
    if field == "metric":
        return "|".join(metric_choices(kind))
    if field in CHOICES:
        return "|".join(CHOICES[field])
    return _ARM_FIELDS.get(field, _TYPES[ftype])


def _kind_lines(kind: str) -> list[str]:
    """`kind: field* (values), …; optional: …` for one kind, its own fields only."""
    common = set(kind_fields("classify")) - set(KINDS["classify"].get("required", {}))
    fields = kind_fields(kind)
    required = [f for f in KINDS[kind].get("required", {}) if f in fields]
    own = [f for f in fields if f not in required and f not in common]
    if KINDS[kind].get("arm"):
        own = ["condition"] + [f for f in own if f not in ("condition", "conditions")]
    parts = [f"{f}* ({_value_words(kind, f, fields[f])})" for f in required]
    parts += [f"{f} ({_value_words(kind, f, fields[f])})" for f in own]
    if KINDS[kind].get("arm"):
        parts[len(required)] = "condition (arm) or conditions (list of arms), one of them*"
    return [f"{NOTE}   {kind}: {', '.join(parts)}"]


def tests_template(value: Sequence[Any] = ()) -> str:
    """The Tests editor's text: a short head, the JSON list, then every kind's fields.

    Args:
        value: the draft's registered tests (shown as indented JSON; `[]` when none).
    """
    common = kind_fields("classify")
    shared = [f for f in common if f not in KINDS["classify"].get("required", {})
              and f not in ("id", "kind")]
    lines = [f"{NOTE} Registered tests: a JSON list of test objects. Lines starting with "
             f"{NOTE} are notes,",
             f"{NOTE} dropped on save; every kind and field is listed below the list.",
             json.dumps(list(value), indent=2),
             NOTE,
             f"{NOTE} Every test: id* (text, unique), kind* (one of the kinds below); "
             f"optional: " + ", ".join(f"{f} ({_TYPES[common[f]]})" for f in shared) + ".",
             f"{NOTE} Kinds, * = required:"]
    for kind in KINDS:
        lines += _kind_lines(kind)
    lines += [f"{NOTE}   classify outcomes: [{{\"label\": …, \"all\" or \"any\": [tests "
              f"without id]}}, …, {{\"label\": \"else\"}}]",
              f"{NOTE} Arms: {', '.join(ARMS)}; with knobs as enforced_rule:k=7.",
              f"{NOTE} Regimes: {VALID_NAMES}.",
              f"{NOTE} Example: " + json.dumps({"id": "H1", "kind": "paired_diff",
                                                "metric": "mean6", "a": "enforced_rule",
                                                "b": "none"})]
    return "\n".join(lines) + "\n"


def scope_template(value: Mapping[str, Any] | None = None, models: Iterable[str] = (),
                   question_sets: Iterable[str] = ()) -> str:
    """The Scope editor's text: a short head, the JSON object, then every key.

    Args:
        value: the draft's scope (`{}` when none).
        models: the registry's model names, listed as examples.
        question_sets: lab.db's question sets, listed as examples.
    """
    known = {"models": ", ".join(models) or "none in lab.toml yet",
             "question_sets": ", ".join(question_sets) or "none yet: s on Enqueue makes one"}
    words = {"models": f"model names from lab.toml (here: {known['models']})",
             "conditions": f"arms: {', '.join(ARMS)}; with knobs as enforced_rule:k=7",
             "regimes": VALID_NAMES,
             "question_sets": f"question set names (here: {known['question_sets']})",
             "budgets": "positive integers (default [8])",
             "datasets": "dataset names", "seeds": "integers ≥ 0",
             "replicates": "integers ≥ 0"}
    lines = [f"{NOTE} Scope: the runs this amendment governs, a JSON object. Lines "
             f"starting with {NOTE}",
             f"{NOTE} are notes, dropped on save. ctrl+g fills it from the Enqueue grid.",
             json.dumps(dict(value or {}), indent=2),
             NOTE,
             f"{NOTE} Required keys, each a non-empty list:"]
    lines += [f"{NOTE}   {key}: {words.get(key, 'list')}" for key in SCOPE_KEYS]
    lines += [f"{NOTE} Optional keys, narrowing the data further:"]
    lines += [f"{NOTE}   {key}: {words.get(key, 'list')}" for key in OPTIONAL_SCOPE_KEYS]
    return "\n".join(lines) + "\n"


def strip_notes(text: str) -> str:
    """The text with every note line emptied (line numbers unchanged)."""
    return _NOTE_LINE.sub("", text)


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _members(text: str, start: int = 0) -> list[tuple[str | int, int, int]]:
    """The members of the JSON array or object at `start` of valid JSON `text`:
    (index or key, where the member starts, where its value starts)."""
    decoder = json.JSONDecoder()
    i = _ws(text, start)
    opening = text[i]
    out: list[tuple[str | int, int, int]] = []
    i = _ws(text, i + 1)
    while text[i] not in "]}":
        begin = i
        if opening == "{":
            key, i = decoder.raw_decode(text, i)
            i = _ws(text, _ws(text, i) + 1)  # past ':'
        else:
            key = len(out)
        value_at = i
        _, i = decoder.raw_decode(text, i)
        out.append((key, begin, value_at))
        i = _ws(text, i)
        if text[i] == ",":
            i = _ws(text, i + 1)
    return out


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _named_key(message: str, keys: Iterable[str | int]) -> str | None:
    """The first of `keys` an error line names ('key', or `key must`/`key:`/`key is`)."""
    names = [k for k in keys if isinstance(k, str)]
    for key in names:
        if f"'{key}'" in message:
            return key
    for key in names:
        if re.search(rf"(?:^|[:,]\s|\s){re.escape(key)}(?: must| is|:)", message):
            return key
    for key in names:  # "unknown metric 'x'": a longer field's name as a word
        if len(key) > 2 and key not in ("id", "kind") and re.search(rf"\b{key}\b", message):
            return key
    return None


def _error_line(text: str, value: Any, message: str) -> int | None:
    """The line an error of `validate_tests` / `validate_scope` is about."""
    if not text.strip():
        return None
    found = re.match(r"tests\[(\d+)\][^:]*: (.*)", message)
    if found and isinstance(value, list):
        members = _members(text)
        index = int(found.group(1))
        if index >= len(members):
            return None
        _, begin, value_at = members[index]
        if isinstance(value[index], dict):
            inner = {k: b for k, b, _ in _members(text, value_at)}
            key = _named_key(found.group(2), inner)
            if key is None:  # "condition 'x' is not …": the field holding that value
                key = next((k for k, v in value[index].items() if isinstance(v, str)
                            and f"'{v}'" in found.group(2) and k in inner), None)
            if key is not None:
                return _line(text, inner[key])
        return _line(text, begin)
    if message.startswith("scope: ") and isinstance(value, dict):
        keys = {k: b for k, b, _ in _members(text)}
        key = _named_key(message.removeprefix("scope: "), keys)
        return _line(text, keys[key]) if key is not None else _line(text, _ws(text, 0))
    return _line(text, _ws(text, 0))


def _load(text: str, what: str, kind: str) -> tuple[str, Any]:
    plain = strip_notes(text)
    if not plain.strip():
        raise TextError(f"{what}: empty; write a {kind} (or undo to the template)", None)
    try:
        return plain, json.loads(plain)
    except json.JSONDecodeError as exc:
        raise TextError(f"{what}: invalid JSON for a {kind}: {exc.msg}", exc.lineno) from None


def read_scope(text: str) -> dict[str, Any]:
    """The scope in `text` (notes allowed); `{}` stays `{}` (not yet written).

    Raises:
        TextError: invalid JSON or an invalid scope, with its line.
    """
    plain, value = _load(text, "scope", "JSON object")
    if value == {}:
        return {}
    try:
        return validate_scope(value)
    except ConfigError as exc:
        raise TextError(str(exc), _error_line(plain, value, str(exc))) from None


def read_tests(text: str, scope: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The registered tests in `text` (notes allowed), checked against `scope` when given.

    Raises:
        TextError: invalid JSON or an invalid test, with its line.
    """
    plain, value = _load(text, "tests", "JSON list")
    try:
        return validate_tests(value, scope or None)
    except ConfigError as exc:
        raise TextError(str(exc), _error_line(plain, value, str(exc))) from None


def parse_notes_json(text: str, what: str, kind: str) -> Any:
    """The JSON value of Tests or Scope text, notes dropped, not validated.

    Raises:
        TextError: empty or invalid JSON, with its line.
    """
    return _load(text, what, kind)[1]
