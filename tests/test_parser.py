"""Tests for core.parser: real-world ReAct output shapes, one exact expectation each."""

from __future__ import annotations

import dataclasses

import pytest

from core.parser import ACTION_NAMES, ParsedAction, parse_action, parse_decision
from tests.oracles.parser import clean_every_time

PA = ParsedAction

CASES: list[tuple[str, str, ParsedAction | None]] = [
    # --- canonical protocol -------------------------------------------------------
    ("canonical",
     "Thought: I need the director of Arrival.\nAction: search\nAction Input: Arrival",
     PA("search", "Arrival", "I need the director of Arrival.", None)),
    ("lowercase_keys",
     "thought: look it up\naction: lookup\naction input: born",
     PA("lookup", "born", "look it up", None)),
    ("uppercase_keys",
     "THOUGHT: done\nACTION: FINISH\nACTION INPUT: Paris",
     PA("finish", "Paris", "done", None)),
    ("capitalised_tool_name",
     "Thought: t\nAction: Search\nAction Input: Tyler Bates",
     PA("search", "Tyler Bates", "t", None)),
    ("backup_search",
     "Thought: primary fails\nAction: backup_search\nAction Input: Barlow",
     PA("backup_search", "Barlow", "primary fails", None)),
    ("backup_search_spaced_name",
     "Thought: t\nAction: Backup Search\nAction Input: Barlow",
     PA("backup_search", "Barlow", "t", None)),
    # --- markdown, quotes, fences ---------------------------------------------------
    ("bold_keys_colon_inside",
     "**Thought:** The page is about a band.\n**Action:** search\n**Action Input:** \"Barlow\"",
     PA("search", "Barlow", "The page is about a band.", None)),
    ("bold_keys_colon_outside",
     "**Thought**: t\n**Action**: lookup\n**Action Input**: *founded*",
     PA("lookup", "founded", "t", None)),
    ("bold_values",
     "Thought: t\nAction: **finish**\nAction Input: **1987**",
     PA("finish", "1987", "t", None)),
    ("whole_line_bold",
     "Thought: t\n**Action: search**\n**Action Input: Barlow**",
     PA("search", "Barlow", "t", None)),
    ("italic_keys",
     "*Thought:* t\n*Action:* search\n*Action Input:* Barlow",
     PA("search", "Barlow", "t", None)),
    ("code_fence_block",
     "```\nThought: t\nAction: search\nAction Input: Barlow\n```",
     PA("search", "Barlow", "t", None)),
    ("code_fence_with_language_and_backticks",
     "```text\nThought: t\nAction: `search`\nAction Input: `Barlow (band)`\n```",
     PA("search", "Barlow (band)", "t", None)),
    ("single_quotes_input",
     "Thought: t\nAction: search\nAction Input: 'Tyler Bates'",
     PA("search", "Tyler Bates", "t", None)),
    ("curly_quotes_input",
     "Thought: t\nAction: search\nAction Input: \u201cTyler Bates\u201d",
     PA("search", "Tyler Bates", "t", None)),
    ("quoted_input_trailing_period",
     "Thought: t\nAction: search\nAction Input: \"Tyler Bates\".",
     PA("search", "Tyler Bates", "t", None)),
    ("unmatched_quote_kept",
     "Thought: t\nAction: finish\nAction Input: 'Allo 'Allo!",
     PA("finish", "'Allo 'Allo!", "t", None)),
    # --- whitespace and newlines ------------------------------------------------------
    ("windows_newlines",
     "Thought: t\r\nAction: search\r\nAction Input: Barlow\r\n",
     PA("search", "Barlow", "t", None)),
    ("leading_spaces_trailing_whitespace",
     "   Thought: t   \n   Action: search   \n   Action Input: Barlow   \n\n",
     PA("search", "Barlow", "t", None)),
    ("multiline_input_first_nonempty_line",
     "Thought: t\nAction: finish\nAction Input:\n\n  Paris, France\nbecause it is the capital",
     PA("finish", "Paris, France", "t", None)),
    ("prose_before_and_after",
     "Sure, here is my next step.\nThought: t\nAction: search\nAction Input: Barlow\n"
     "I hope this helps!",
     PA("search", "Barlow", "t", None)),
    # --- bracket / call forms on the Action line -------------------------------------
    ("bracket_form_ignores_action_input",
     "Thought: t\nAction: search[Barlow]\nAction Input: something else",
     PA("search", "Barlow", "t", None)),
    ("paren_form_quoted",
     "Thought: t\nAction: search(\"Tyler Bates\")",
     PA("search", "Tyler Bates", "t", None)),
    ("paren_form_keyword_argument",
     "Thought: t\nAction: finish(answer=\"Paris\")",
     PA("finish", "Paris", "t", None)),
    ("empty_parens_fall_back_to_input",
     "Thought: t\nAction: search()\nAction Input: Barlow",
     PA("search", "Barlow", "t", None)),
    ("trailing_colon_on_tool_name",
     "Thought: t\nAction: search:\nAction Input: Barlow",
     PA("search", "Barlow", "t", None)),
    ("nested_brackets",
     "Thought: t\nAction: finish[Barlow [band]]",
     PA("finish", "Barlow [band]", "t", None)),
    ("input_on_same_line",
     "Thought: t\nAction: search Action Input: Barlow",
     PA("search", "Barlow", "t", None)),
    ("react_paper_numbered",
     "Thought 1: I need to search Milhouse.\nAction 1: Search[Milhouse]\n"
     "Observation 1: Milhouse Mussolini Van Houten is a character.",
     PA("search", "Milhouse", "I need to search Milhouse.", None)),
    ("react_paper_act_key",
     "Thought 2: Now look up the name.\nAct 2: Lookup[named after]",
     PA("lookup", "named after", "Now look up the name.", None)),
    ("thought_and_action_on_one_line",
     "Thought: I should search the band. Action: search[Barlow]",
     PA("search", "Barlow", "I should search the band.", None)),
    # --- one-liners without an Action key --------------------------------------------
    ("oneliner_in_prose",
     "I will now search[Tyler Bates]",
     PA("search", "Tyler Bates", "I will now", None)),
    ("oneliner_finish_capitalised",
     "Finish[Paris]",
     PA("finish", "Paris", "", None)),
    ("oneliner_first_wins",
     "First I'll lookup[born], then maybe search[Barlow].",
     PA("lookup", "born", "First I'll", None)),
    ("oneliner_unclosed_skipped",
     "Thought: maybe search[Barlow\nor rather lookup[born]",
     PA("lookup", "born", "maybe search[Barlow\nor rather", None)),
    # --- first action wins; the rest is discarded ------------------------------------
    ("two_actions_first_wins",
     "Thought: t\nAction: search\nAction Input: A\nThought: u\nAction: search\n"
     "Action Input: B",
     PA("search", "A", "t", None)),
    ("simulated_observation_discarded",
     "Thought: t\nAction: search\nAction Input: Barlow\nObservation: Barlow is a band.\n"
     "Thought: found it\nAction: finish\nAction Input: 1987",
     PA("search", "Barlow", "t", None)),
    ("inline_prose_action_key_skipped",
     "Thought: my next action: search for the band\nAction: search\nAction Input: Barlow",
     PA("search", "Barlow", "my next action: search for the band", None)),
    # --- empty finish, missing input, unknown tool -----------------------------------
    ("empty_finish_brackets",
     "Thought: no idea\nAction: finish[]",
     PA("finish", "", "no idea", None)),
    ("finish_missing_input",
     "Thought: no idea\nAction: finish",
     PA("finish", "", "no idea", None)),
    ("finish_empty_input",
     "Thought: no idea\nAction: finish\nAction Input:   ",
     PA("finish", "", "no idea", None)),
    ("search_missing_input", "Thought: t\nAction: search", None),
    ("search_input_after_observation_not_used",
     "Thought: t\nAction: search\nObservation: x\nAction Input: Barlow", None),
    ("lookup_empty_brackets", "Thought: t\nAction: lookup[]", None),
    ("unknown_tool", "Thought: t\nAction: wikipedia\nAction Input: Barlow", None),
    ("unknown_tool_before_valid_one",
     "Action: google\nAction Input: x\nAction: search\nAction Input: y", None),
    ("tool_name_on_line_without_brackets_ignored_as_argument",
     "Thought: t\nAction: search Barlow", None),
    # --- thinking blocks, JSON input, decisions --------------------------------------
    ("qwen_think_block_ignored",
     "<think>\nMaybe Action: finish\nAction Input: guess\n</think>\n\nThought: check first\n"
     "Action: search\nAction Input: Barlow",
     PA("search", "Barlow", "check first", None)),
    ("stray_think_close_tag",
     "reasoning that lost its opening tag</think>\nThought: t\nAction: lookup[born]",
     PA("lookup", "born", "t", None)),
    ("json_input_query_key",
     "Thought: t\nAction: search\nAction Input: {\"query\": \"Tyler Bates\"}",
     PA("search", "Tyler Bates", "t", None)),
    ("json_input_unknown_shape_kept",
     "Thought: t\nAction: search\nAction Input: {\"a\": 1, \"b\": 2}",
     PA("search", "{\"a\": 1, \"b\": 2}", "t", None)),
    ("decision_before_action",
     "Searching again is unlikely to help.\nDECISION: ANSWER_NOW\n"
     "Thought: I will answer from memory.\nAction: finish\nAction Input: 1950",
     PA("finish", "1950", "I will answer from memory.", "ANSWER_NOW")),
    ("decision_bold_lowercase_no_thought_key",
     "The next page may have it.\n**decision: continue**\nAction: search\nAction Input: X",
     PA("search", "X", "The next page may have it.", "CONTINUE")),
    ("decision_after_action_ignored",
     "Thought: t\nAction: search\nAction Input: X\nDECISION: ANSWER_NOW",
     PA("search", "X", "t", None)),
    ("decision_answer_now_spaced",
     "Thought: enough.\nDECISION: Answer Now\nAction: finish[Paris]",
     PA("finish", "Paris", "enough.", "ANSWER_NOW")),
    ("decision_value_bold",
     "Thought: keep going.\nDECISION: **CONTINUE**\nAction: lookup[born]",
     PA("lookup", "born", "keep going.", "CONTINUE")),
    ("decision_last_one_before_action_wins",
     "DECISION: CONTINUE\nOn reflection, no.\nDECISION: ANSWER_NOW\nAction: finish[Oslo]",
     PA("finish", "Oslo", "On reflection, no.", "ANSWER_NOW")),
    # --- nothing readable ------------------------------------------------------------
    ("empty_string", "", None),
    ("whitespace_only", "  \n\t ", None),
    ("only_a_thought", "Thought: I should search for the band Barlow next.", None),
    ("no_action_prose", "I think the answer is probably Paris.", None),
    ("action_only_in_think_block",
     "<think>Action: search\nAction Input: Barlow</think>", None),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse_action(text: str, expected: ParsedAction | None) -> None:
    assert parse_action(text) == expected


def test_case_count_and_unique_ids() -> None:
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 35


def test_parsed_action_is_frozen() -> None:
    action = PA("search", "x", "", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        action.name = "finish"  # type: ignore[misc]


def test_names_are_always_known_and_lowercase() -> None:
    for _, text, _expected in CASES:
        action = parse_action(text)
        if action is not None:
            assert action.name in ACTION_NAMES
            assert action.decision in (None, "CONTINUE", "ANSWER_NOW")


def test_search_and_lookup_never_have_empty_argument() -> None:
    for _, text, _expected in CASES:
        action = parse_action(text)
        if action is not None and action.name != "finish":
            assert action.argument


def test_long_reply_is_fast_enough_smoke() -> None:
    text = "Thought: " + "word " * 400 + "\nAction: search\nAction Input: Barlow\n"
    assert parse_action(text * 3) == PA("search", "Barlow", ("word " * 400).strip(), None)


@pytest.mark.parametrize(("reply", "decision"), [
    ("Unlikely to improve.\nDECISION: ANSWER_NOW", "ANSWER_NOW"),
    ("DECISION: CONTINUE\n(or answer now?)", "CONTINUE"),  # the DECISION line wins
    ("DECISION: ANSWER NOW", "ANSWER_NOW"),
    ("I will continue searching.", "CONTINUE"),  # no DECISION line: the later bare word
    ("Continue? No, I should answer now.", "ANSWER_NOW"),
    ("Answer_now would be premature; the search continues.", "CONTINUE"),
    ("I am not sure.", None),
    ("", None),
])
def test_a_decision_turn_is_read_as_the_harness_reads_it(reply: str, decision: str | None) -> None:
    assert parse_decision(reply) == decision


def test_clean_strips_what_it_stripped_when_it_tried_every_wrapper() -> None:
    from itertools import product

    from core.parser import _WRAPPERS, _clean

    pairs = [*_WRAPPERS, ("", ""), ("(", ")"), ("[", "]"), ("x", "x")]
    words = ["First for Women", "", " a ", "{\"query\": \"x\"}", "**", "*"]
    for (o1, c1), (o2, c2), word, end in product(pairs, pairs, words, ["", ".", ",", ";"]):
        value = f" {o1}{o2}{word}{c2}{c1}{end} "
        expected = clean_every_time(value)
        if expected.endswith("**"):
            expected = expected[:-2].rstrip()
        if expected.startswith("**"):
            expected = expected[2:].lstrip()
        assert _clean(value, json_value=False) == expected, value
