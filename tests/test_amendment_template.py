"""The commented templates of an amendment's Tests and Scope, and reading them back.

The templates list every kind, field and allowed value the validators know (taken from
their tables, so a new field cannot be missing); what a person types is read with its
`//` notes dropped, and an error names the line it is about.
"""

from __future__ import annotations

import json
import re

import pytest

from core.amendment_template import (
    TextError,
    read_scope,
    read_tests,
    scope_template,
    strip_notes,
)
from core.amendment_template import tests_template as template_of_tests  # not test*: collected
from core.conditions import ARMS
from core.registered_tests import (
    CHOICES,
    KINDS,
    OPTIONAL_SCOPE_KEYS,
    SCOPE_KEYS,
    kind_fields,
    metric_choices,
)

SCOPE = {"models": ["sim-own5"], "conditions": ["none", "enforced_rule"],
         "regimes": ["clean"], "question_sets": ["demo"], "budgets": [8]}


def _kind_line(text: str, kind: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"//   {kind}: "))


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_tests_template_lists_every_field_and_value_of_each_kind(kind: str) -> None:
    text = template_of_tests()
    line = _kind_line(text, kind)
    head = next(line for line in text.splitlines() if line.startswith("// Every test:"))
    for field in kind_fields(kind):
        assert re.search(rf"\b{field}\*? \(", line + head), field
    for metric in metric_choices(kind):
        assert metric in line
    for field, words in CHOICES.items():
        if field in kind_fields(kind) and field != "metric":
            assert "|".join(words) in line, field
    for field in KINDS[kind].get("required", {}):
        assert f"{field}*" in line


def test_the_templates_read_back_as_empty_and_name_arms_and_scope_keys() -> None:
    assert read_tests(template_of_tests()) == []
    scope = scope_template(models=["sim-own5", "sim-never"], question_sets=["demo"])
    assert read_scope(scope) == {}
    for key in SCOPE_KEYS + OPTIONAL_SCOPE_KEYS:
        assert f"//   {key}: " in scope
    assert "sim-never" in scope and "demo" in scope
    assert all(arm in scope and arm in template_of_tests() for arm in ARMS)
    assert read_scope(scope_template(SCOPE)) == SCOPE
    tests = [{"id": "H1", "kind": "paired_diff", "metric": "mean6", "a": "enforced_rule",
              "b": "none"}]
    assert read_tests(template_of_tests(tests), SCOPE) == tests


def test_notes_become_empty_lines() -> None:
    assert strip_notes("// a\n  // b\n[1] // not a note line\n") == "\n\n[1] // not a note line\n"


BAD_TEST = """// my tests
[
  {"id": "H1", "kind": "paired_diff", "metric": "mean6",
   "a": "enforced_rule", "b": "none"},
  {"id": "H2", "kind": "paired_diff",
   "metric": "mean7",
   "a": "enforced_rule", "b": "none"}
]
"""


@pytest.mark.parametrize("text, scope, line, words", [
    (BAD_TEST, None, 6, "unknown metric 'mean7'"),
    (BAD_TEST.replace('"mean7"', '"mean6"').replace('"b": "none"}\n]', '"b": "none",\n'
                                                   '   "colour": 3}\n]'), None, 8,
     "unknown field 'colour'"),
    (BAD_TEST.replace('"mean7"', '"mean6"'), {**SCOPE, "conditions": ["none"]}, 4,
     "not among the amendment's scoped conditions"),
    ('[\n  {"id": "H1",\n  "kind": }\n]', None, 3, "invalid JSON"),
    ('[\n  {"id": "H1", "kind": "vibes"}\n]', None, 2, "unknown kind 'vibes'"),
])
def test_a_tests_error_names_its_line(text: str, scope: dict | None, line: int,
                                      words: str) -> None:
    with pytest.raises(TextError) as caught:
        read_tests(text, scope)
    assert caught.value.line == line, str(caught.value)
    assert str(caught.value).startswith(f"line {line}: ") and words in str(caught.value)


@pytest.mark.parametrize("body, line, words", [
    ({**SCOPE, "regimes": ["nope"]}, 5, "unknown regime 'nope'"),
    ({**SCOPE, "budgets": [0]}, 7, "budgets must be positive integers"),
    ({**SCOPE, "colour": ["red"]}, 8, "unknown key 'colour'"),
])
def test_a_scope_error_names_its_line(body: dict, line: int, words: str) -> None:
    text = "// scope\n{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}"
                                        for k, v in body.items()) + "\n}\n"
    with pytest.raises(TextError) as caught:
        read_scope(text)
    assert caught.value.line == line, str(caught.value)
    assert words in str(caught.value)


def test_empty_text_is_an_error_without_a_line() -> None:
    with pytest.raises(TextError) as caught:
        read_tests("// only notes\n")
    assert caught.value.line is None and "empty" in str(caught.value)
