"""Tests for core.kb: search, lookup, observation sources and the answerless KB."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.data import Paragraph, Question
from core.kb import (
    BACKUP,
    NO_ARTICLE_TEXT,
    PRIMARY,
    KnowledgeBase,
    Sources,
    ToolResult,
    ToolState,
    normalize_title,
    observation_source,
    paragraph_observation,
    strip_supporting_facts,
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


def test_normalize_title() -> None:
    assert normalize_title("  Marrow \t Quill\nFESTIVAL ") == "marrow quill festival"


# Search and lookup as in the main paper's released harness: exact title, then the most
# similar title (difflib ratio > 0.3), then word overlap; lookup returns the first
# matching sentence with its position. These replace tests that pinned lab's earlier
# tools (overlap over title + text, cycling lookup, "Title: text" pages).


@pytest.mark.parametrize(("query", "page", "step"), [
    ("Marrow Quill Festival", 1, "exact"),
    ("marrow quill festival", 1, "exact"),  # case-insensitive
    ("  MARROW   quill\tFestival  ", 1, "fuzzy"),  # not exact (inner spaces), most similar
    ("otter lanterns", 2, "fuzzy"),
    ("velvet canol", 3, "fuzzy"),  # a misspelt title
    # the fuzzy step wins whenever a title is similar enough, even over a page whose
    # text holds every query word
    ("velvet canal grain mill", 3, "fuzzy"),  # ratio .686 (Velvet Canal) > .424 (Quiet Mill)
    ("sailors", 0, "fuzzy"),  # "harbor lights" .400; the word is in page 2's text
    ("zebra", 2, "fuzzy"),  # "otter lantern" .333 > 0.3: the fuzzy step rarely misses
    # every title at or below 0.3: the page sharing the most words
    ("grinds", 4, "overlap"),
    ("xyz grinds", 4, "overlap"),
    # no step selects a page; words keep their punctuation ("1902." is not "1902")
    ("1902", None, "miss"),
    ("", None, "miss"),
    ("!!!", None, "miss"),
])
def test_search_steps(kb: KnowledgeBase, query: str, page: int | None, step: str) -> None:
    assert kb.search(query) == page, step


def test_search_ties_and_the_fuzzy_threshold() -> None:
    twins = KnowledgeBase([PAGES[0], Paragraph("Twin", ("one.",)), Paragraph("twin", ("two.",))])
    assert twins.search("TWIN") == 1  # exact: the first of equal titles
    assert twins.search("twins") == 1  # fuzzy: ties go to the lowest index
    # "abc" against a 17-letter title sharing "abc": ratio 2·3/20 = 0.3, not above it,
    # so the overlap step picks the page whose text holds "abc"
    at = KnowledgeBase([Paragraph("abcdefghijklmnopq", ("nothing here.",)),
                        Paragraph("zzz", ("abc is here",))])
    assert at.search("abc") == 1
    above = KnowledgeBase([Paragraph("abcdefghijklmnop", ("nothing here.",)),
                           Paragraph("zzz", ("abc is here",))])  # 2·3/19 = 0.316
    assert above.search("abc") == 0
    # overlap: distinct words, ties to the lowest index
    words = KnowledgeBase([Paragraph("xxxxxxxxxxxx", ("red blue",)),
                           Paragraph("yyyyyyyyyyyy", ("red blue green",)),
                           Paragraph("zzzzzzzzzzzz", ("red blue green",))])
    assert words.search("green green red") == 1
    assert words.search("red red red") == 0


def test_observation_strings(kb: KnowledgeBase) -> None:
    assert kb.paragraph_text(1) == "[Marrow Quill Festival] A small festival. It began in 1931."
    assert paragraph_observation(Paragraph("Empty", ())) == \
        "[Empty] (no further text on this page)"
    # sentences are joined as stored (HotpotQA's later sentences start with a space)
    assert paragraph_observation(Paragraph("T", ("A b.", " C d."))) == "[T] A b.  C d."
    state = ToolState()
    assert state.search(kb, "1902") == ToolResult("No results found.", None, False)
    assert state.article is None
    assert state.lookup(kb, "otter") == ToolResult("No page loaded. Use search first.", None,
                                                   False)
    assert NO_ARTICLE_TEXT == "No page loaded. Use search first."
    assert state.search(kb, "otter lantern") == ToolResult(kb.paragraph_text(2), 2, True)
    assert state.article == 2


def test_lookup_returns_the_first_match_with_its_position(kb: KnowledgeBase) -> None:
    state = ToolState()
    state.search(kb, "Otter Lantern")
    assert state.lookup(kb, "otter") == ToolResult(
        "(Result 1/4) The otter lantern glows at night.", 2, True)
    # the same keyword again: the same sentence (no cursor)
    assert state.lookup(kb, "otter").text == "(Result 1/4) The otter lantern glows at night."
    assert state.lookup(kb, " built ").text == "(Result 3/4) Nobody knows who built it."
    assert state.lookup(kb, "OTTER lantern was").text == \
        "(Result 4/4) An OTTER lantern was found in 1902."
    assert state.lookup(kb, " zebra ") == ToolResult(
        "No results for 'zebra' in current page.", None, False)
    assert state.article == 2  # a miss keeps the page
    state.search(kb, "1902")  # a failed search keeps it too
    assert state.lookup(kb, "sailors").text == "(Result 2/4) Sailors carry an otter lantern."
    state.search(kb, "Velvet Canal")
    assert state.lookup(kb, "it").text == "(Result 2/2) It runs north."


def test_lookup_counts_the_sentences_of_the_page_text() -> None:
    # the page's text is split at ". ", "! " and "? ", not into the stored sentences
    kb = KnowledgeBase([Paragraph("Ann", ("Born in St. Louis, she moved.", "She died."))])
    state = ToolState()
    state.search(kb, "Ann")
    assert state.lookup(kb, "louis").text == "(Result 2/3) Louis, she moved."
    empty = KnowledgeBase([Paragraph("Void", ())])
    state = ToolState()
    state.search(empty, "Void")
    assert state.lookup(empty, "text").text == "(Result 1/1) (no further text on this page)"


def test_lookup_reads_the_primary_page_after_a_backup_search(kb: KnowledgeBase) -> None:
    sources = Sources(kb, KnowledgeBase(PAGES))
    assert sources.source_of("lookup") == PRIMARY
    assert sources.source_of("backup_search") == BACKUP
    sources.call("search", "Otter Lantern")
    assert sources.call("backup_search", "Velvet Canal").paragraph == 3
    # the backup's page is its own: lookup still reads the primary's Otter Lantern
    assert sources.call("lookup", "north").text == "No results for 'north' in current page."
    assert sources.call("lookup", "night").text == \
        "(Result 1/4) The otter lantern glows at night."
    with pytest.raises(ValueError, match="backup"):
        Sources(kb).call("backup_search", "x")


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
    # The answerless KB still searches by title; an emptied page says it has no text.
    kb = KnowledgeBase(stripped)
    assert kb.search("Marrow Quill Festival") == 1
    assert kb.paragraph_text(1) == "[Marrow Quill Festival] (no further text on this page)"
    assert "1931" not in " ".join(kb.paragraph_text(i) for i in range(len(kb)))


def _plain_search(kb: KnowledgeBase, query: str) -> int | None:
    """The search's definition, every title matched in full (the paper's harness)."""
    from difflib import SequenceMatcher

    from core.kb import FUZZY_TITLE_MIN

    q = query.strip().lower()
    titles = [p.title.lower() for p in kb.paragraphs]
    if q in titles:
        return titles.index(q)
    ratios = [SequenceMatcher(None, q, t).ratio() for t in titles]
    best = max(range(len(titles)), key=lambda i: (ratios[i], -i))
    if ratios[best] > FUZZY_TITLE_MIN:
        return best
    words = frozenset(q.split())
    overlaps = [len(words & frozenset(" ".join(p.sentences).strip().lower().split()))
                for p in kb.paragraphs]
    top = max(range(len(overlaps)), key=lambda i: (overlaps[i], -i))
    return top if overlaps[top] else None


_TITLES = [p.title for p in PAGES] + ["Otter Lanterns", "Quiet Mills of the Canal", "Velvet"]
_SHARED_KB = KnowledgeBase(PAGES + tuple(Paragraph(t, ("Filler text.",)) for t in _TITLES[5:]))
"""One KB for every example: its remembered pages are read by the later ones."""


@given(st.one_of(
    st.text(max_size=30),
    st.sampled_from(_TITLES).flatmap(lambda t: st.tuples(
        st.just(t), st.integers(0, len(t)), st.integers(0, len(t)), st.text(max_size=4)))
    .map(lambda x: x[0][:x[1]] + x[3] + x[0][x[2]:])))
@settings(max_examples=400, deadline=None, derandomize=True, database=None)
def test_search_is_its_definition(query: str) -> None:
    """Skipping titles whose difflib upper bounds cannot beat the best, and remembering
    what a query found, keep the page the full match picks, ties and threshold included
    (titles edited by cuts and insertions, and any text; case and outer spaces)."""
    want = _plain_search(_SHARED_KB, query)
    assert _SHARED_KB.search(query) == want  # found, or remembered from an earlier query
    assert _SHARED_KB.search(f"  {query.upper()} ") == _plain_search(_SHARED_KB, query.upper())
    assert KnowledgeBase(_SHARED_KB.paragraphs).search(query) == want  # a fresh one
