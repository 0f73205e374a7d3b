"""Tests for core.kb: search, lookup, observation sources and the answerless KB."""

from __future__ import annotations

import pytest

from core.data import Paragraph, Question
from core.kb import (
    NO_ARTICLE_TEXT,
    KnowledgeBase,
    ToolResult,
    ToolState,
    normalize_title,
    observation_source,
    paragraph_observation,
    strip_supporting_facts,
    tokenize,
)

# Invented pages. Page 0's text is full of words that also appear in page 1's title,
# so an overlap search for page 1's title would pick page 0 if exact matching failed.
PAGES = (
    Paragraph("Harbor Lights", ("Marrow Quill Festival Marrow Quill Festival is nearby.",)),
    Paragraph("Marrow Quill Festival", ("A small festival.", "It began in 1931.")),
    Paragraph(
        "Otter Lantern",
        (
            "The otter lantern glows at night.",
            "Sailors carry an otter lantern.",
            "Nobody knows who built it.",
            "An OTTER lantern was found in 1902.",
        ),
    ),
    Paragraph("Velvet Canal", ("A canal of velvet water.", "It runs north.")),
    Paragraph("Quiet Mill", ("A mill beside the canal.", "It grinds velvet grain.")),
)


def make_question(**overrides: object) -> Question:
    fields: dict[str, object] = dict(
        id="q1",
        dataset="demo",
        question="When did the Marrow Quill Festival begin?",
        answer="1931",
        type="bridge",
        level="easy",
        paragraphs=PAGES,
        supporting_facts=(("Marrow Quill Festival", 1), ("Otter Lantern", 3)),
    )
    fields.update(overrides)
    return Question(**fields)  # type: ignore[arg-type]


@pytest.fixture
def kb() -> KnowledgeBase:
    return KnowledgeBase(PAGES)


def test_normalize_and_tokenize() -> None:
    assert normalize_title("  Marrow \t Quill\nFESTIVAL ") == "marrow quill festival"
    assert tokenize("Otter-Lantern, 1902!") == ["otter", "lantern", "1902"]


@pytest.mark.parametrize(
    "query", ["Marrow Quill Festival", "marrow quill festival", "  MARROW   quill\tFestival  "]
)
def test_exact_title_beats_overlap(kb: KnowledgeBase, query: str) -> None:
    # Page 0 shares the same three tokens (and is earlier), so only exact matching picks 1.
    assert kb.search(query) == 1


def test_exact_title_takes_first_duplicate() -> None:
    kb = KnowledgeBase([PAGES[0], Paragraph("Twin", ("one",)), Paragraph("twin", ("two",))])
    assert kb.search("TWIN") == 1


def test_overlap_ranking(kb: KnowledgeBase) -> None:
    # "velvet canal grain mill": page 3 shares velvet+canal (2), page 4 shares
    # canal+velvet+grain+mill (4).
    assert kb.search("velvet canal grain mill") == 4
    assert kb.search("who built the otter thing") == 2
    assert kb.search("water north") == 3


def test_overlap_counts_distinct_tokens(kb: KnowledgeBase) -> None:
    # Repeating a token in the query does not add overlap: "north north north" (1 distinct
    # token, page 3) loses to "mill grain" (2 tokens, page 4).
    assert kb.search("north north north mill grain") == 4


def test_overlap_tie_goes_to_lowest_index(kb: KnowledgeBase) -> None:
    # "canal" is in pages 3 and 4 (one token each): lowest index wins.
    assert kb.search("canal") == 3
    # "velvet" also ties between 3 and 4.
    assert kb.search("velvet") == 3


@pytest.mark.parametrize("query", ["", "   ", "zebra xylophone", "!!!"])
def test_no_result(kb: KnowledgeBase, query: str) -> None:
    assert kb.search(query) is None
    state = ToolState()
    result = state.search(kb, query)
    assert result == ToolResult(f"No results for '{query}'.", None, False)
    assert state.article is None


def test_paragraph_text_title_first(kb: KnowledgeBase) -> None:
    assert kb.paragraph_text(1) == "Marrow Quill Festival: A small festival. It began in 1931."
    assert paragraph_observation(Paragraph("Empty", ())) == "Empty"


def test_search_result_sets_article(kb: KnowledgeBase) -> None:
    state = ToolState()
    result = state.search(kb, "otter lantern")
    assert result == ToolResult(kb.paragraph_text(2), 2, True)
    assert state.article == 2


def test_lookup_cycles_through_matches(kb: KnowledgeBase) -> None:
    state = ToolState()
    state.search(kb, "Otter Lantern")
    texts = [state.lookup(kb, "otter lantern").text for _ in range(5)]
    assert texts == [
        "The otter lantern glows at night.",
        "Sailors carry an otter lantern.",
        "An OTTER lantern was found in 1902.",
        "The otter lantern glows at night.",
        "Sailors carry an otter lantern.",
    ]
    assert state.lookup(kb, "Otter").paragraph == 2


def test_lookup_new_keyword_restarts(kb: KnowledgeBase) -> None:
    state = ToolState()
    state.search(kb, "Otter Lantern")
    assert state.lookup(kb, "otter").text == "The otter lantern glows at night."
    assert state.lookup(kb, "otter").text == "Sailors carry an otter lantern."
    assert state.lookup(kb, "lantern").text == "The otter lantern glows at night."
    assert state.lookup(kb, "LANTERN").text == "Sailors carry an otter lantern."
    assert state.lookup(kb, "otter").text == "The otter lantern glows at night."


def test_lookup_without_article(kb: KnowledgeBase) -> None:
    state = ToolState()
    assert state.lookup(kb, "otter") == ToolResult(NO_ARTICLE_TEXT, None, False)
    assert NO_ARTICLE_TEXT == "No article selected. Use search[...] first."
    state.search(kb, "zebra")  # a miss selects nothing
    assert state.lookup(kb, "otter").text == NO_ARTICLE_TEXT


def test_lookup_no_more_results_keeps_article(kb: KnowledgeBase) -> None:
    state = ToolState()
    state.search(kb, "Otter Lantern")
    assert state.lookup(kb, "zebra") == ToolResult("No more results for 'zebra'.", None, False)
    assert state.article == 2
    assert state.lookup(kb, "built").text == "Nobody knows who built it."


def test_search_resets_lookup_cursor(kb: KnowledgeBase) -> None:
    state = ToolState()
    state.search(kb, "Otter Lantern")
    state.lookup(kb, "otter")
    state.lookup(kb, "otter")
    state.search(kb, "Otter Lantern")
    assert state.lookup(kb, "otter").text == "The otter lantern glows at night."
    state.search(kb, "Velvet Canal")
    assert state.lookup(kb, "it").text == "It runs north."
    assert state.lookup(kb, "otter").text == "No more results for 'otter'."


def test_failed_search_keeps_article_and_cursor(kb: KnowledgeBase) -> None:
    state = ToolState()
    state.search(kb, "Otter Lantern")
    state.lookup(kb, "otter")
    state.search(kb, "zebra")
    assert state.article == 2
    assert state.lookup(kb, "otter").text == "Sailors carry an otter lantern."


def test_observation_source() -> None:
    q = make_question()
    assert observation_source(q, None) == "none"
    assert observation_source(q, 1) == "gold"
    assert observation_source(q, 2) == "gold"
    assert observation_source(q, 0) == "distractor"
    assert observation_source(q, 4) == "distractor"


def test_strip_supporting_facts() -> None:
    q = make_question(
        supporting_facts=(
            ("Marrow Quill Festival", 0),
            ("Marrow Quill Festival", 1),
            ("Otter Lantern", 3),
            ("Otter Lantern", 0),
            ("Velvet Canal", 99),  # out of range: ignored
        )
    )
    stripped = strip_supporting_facts(q)
    assert [p.title for p in stripped] == [p.title for p in PAGES]
    assert stripped[0] == PAGES[0]
    assert stripped[1] == Paragraph("Marrow Quill Festival", ())
    assert stripped[1].text == ""
    assert stripped[2].sentences == (
        "Sailors carry an otter lantern.",
        "Nobody knows who built it.",
    )
    assert stripped[3:] == PAGES[3:]
    # The answerless KB still searches by title; an emptied page shows its bare title.
    kb = KnowledgeBase(stripped)
    assert kb.search("Marrow Quill Festival") == 1
    assert kb.paragraph_text(1) == "Marrow Quill Festival"
    assert "1931" not in " ".join(kb.paragraph_text(i) for i in range(len(kb)))
