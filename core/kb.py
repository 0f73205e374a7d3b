"""The per-question knowledge base and the agent's tools over it (docs/data.md).

Pure: no I/O, no randomness. Failure injection (which observations fail and what
replaces them) lives in `core.regimes`; this module only answers tool calls
against an intact (or answerless) knowledge base.

Search and lookup work as in the main paper's released harness, and their
observations are its strings (formats, not prose):

* search: an exact title match (case-insensitive), else the title most similar to
  the query (difflib's SequenceMatcher ratio, the first of the best, when it is above
  0.3), else the page whose text shares the most whitespace-separated words with the
  query (the first of the best); else a miss.
* search hit: ``"[{title}] {text}"``, the page's sentences joined by single spaces as
  stored; a page left with no sentence (answerless KB) reads
  ``"[{title}] (no further text on this page)"``.
* search miss: ``"No results found."``
* lookup hit: ``"(Result {i}/{n}) {sentence}"``: the *first* sentence of the current
  page that contains the keyword (case-insensitive), where the page's text is split
  into its n sentences at ".", "!" or "?" followed by whitespace and i counts from 1.
* lookup miss: ``"No results for '{keyword}' in current page."``
* lookup before any successful search: ``"No page loaded. Use search first."``

Two-source episodes (`Sources`): ``backup_search`` runs the same search on an intact
copy of the question's pages (never the answerless one, never failed by a regime),
with its own current page; ``lookup`` always reads the primary source's current page,
as in the harness, so it is a primary call (failed by the regime, refused once
switch_rule has switched the primary off).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from core.data import Paragraph, Question

_SPACE = re.compile(r"\s+")

NO_ARTICLE_TEXT = "No page loaded. Use search first."
SEARCH_MISS_TEXT = "No results found."
EMPTY_PAGE_TEXT = "(no further text on this page)"
FUZZY_TITLE_MIN = 0.3
"""A title's similarity to the query must exceed this for the fuzzy step to pick it."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
PRIMARY, BACKUP = "primary", "backup"
"""Values of steps.tool_source in two-source episodes."""

FOUND_KEPT = 256
"""Queries whose page one knowledge base remembers (`KnowledgeBase.search`)."""


def normalize_title(s: str) -> str:
    """Normalise a title for exact matching.

    Args:
        s: a title or query.

    Returns:
        `s` stripped, with internal whitespace runs collapsed to one space, casefolded.
    """
    return _SPACE.sub(" ", s.strip()).casefold()


def page_text(paragraph: Paragraph) -> str:
    """A page's text as the tools read it: its sentences joined by single spaces as
    stored (ends stripped), or EMPTY_PAGE_TEXT when nothing is left."""
    return " ".join(paragraph.sentences).strip() or EMPTY_PAGE_TEXT


def paragraph_observation(paragraph: Paragraph) -> str:
    """Format a page as a search observation: ``"[{title}] {text}"`` (see `page_text`).

    Used for intact pages and for pages injected by a failure regime alike, so a
    failed observation is indistinguishable in form from a real one.

    Args:
        paragraph: the page.

    Returns:
        The observation text.
    """
    return f"[{paragraph.title}] {page_text(paragraph)}"


def observation_title(observation: str) -> str | None:
    """The page title a search observation shows (``"[Title] text"``), else None."""
    if observation.startswith("["):
        title, bracket, _ = observation[1:].partition("] ")
        if bracket:
            return title
    return None


class KnowledgeBase:
    """Searchable pages of one question, with token sets precomputed once.

    Args:
        paragraphs: the pages, in KB order (indices refer to this order).
    """

    __slots__ = ("paragraphs", "_titles", "_first_by_title", "_words", "_texts",
                 "_sentences", "_found")

    def __init__(self, paragraphs: Sequence[Paragraph]) -> None:
        self.paragraphs: tuple[Paragraph, ...] = tuple(paragraphs)
        self._titles = tuple(p.title.lower() for p in self.paragraphs)
        first_by_title: dict[str, int] = {}
        for i, title in enumerate(self._titles):
            first_by_title.setdefault(title, i)
        self._first_by_title = first_by_title
        self._texts = tuple(paragraph_observation(p) for p in self.paragraphs)
        self._words = tuple(frozenset(page_text(p).lower().split()) for p in self.paragraphs)
        self._sentences = tuple(tuple(_SENTENCE_END.split(page_text(p)))
                                for p in self.paragraphs)
        self._found: dict[str, int | None] = {}
        """Pages found for queries already searched (a KB lives as long as its question's
        cache entry, and episodes of one question in other arms, regimes and seeds
        search it with the same queries again); at most FOUND_KEPT."""

    def __len__(self) -> int:
        return len(self.paragraphs)

    def search(self, query: str) -> int | None:
        """Find the page a search query selects, as the paper's harness does.

        1. exact title: the query (stripped, lower-cased) equals a title lower-cased
           (the first such page);
        2. fuzzy title: the title with the highest ``SequenceMatcher(None, query,
           title).ratio()`` (both lower-cased; ties to the lowest index), when that
           ratio is above FUZZY_TITLE_MIN;
        3. word overlap: the page whose text shares the most distinct
           whitespace-separated words with the query (lower-cased, punctuation kept;
           ties to the lowest index), when it shares at least one.

        Args:
            query: the agent's search input.

        Returns:
            The page index, or None when no step selects a page.
        """
        q = query.strip().lower()
        try:
            return self._found[q]
        except KeyError:
            pass
        found = self._search(q)
        if len(self._found) < FOUND_KEPT:  # a plain dict: threads may both add one
            self._found[q] = found
        return found

    def _search(self, q: str) -> int | None:
        """`search` of a stripped, lower-cased query, not remembered."""
        exact = self._first_by_title.get(q)
        if exact is not None:
            return exact
        best, best_ratio = None, 0.0
        for i, title in enumerate(self._titles):
            matcher = SequenceMatcher(None, q, title)
            # real_quick_ratio and quick_ratio bound ratio from above (difflib's own
            # bounds, the same formula on at least as many matches): a title they cannot
            # lift above the best is not matched in full. Same page, a fraction of the
            # CPU (ratio was 45% of a worker's CPU per model call)
            if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
                continue
            ratio = matcher.ratio()
            if ratio > best_ratio:  # strict: ties keep the lowest index
                best, best_ratio = i, ratio
        if best is not None and best_ratio > FUZZY_TITLE_MIN:
            return best
        words = frozenset(q.split())
        best, best_overlap = None, 0
        for i, page_words in enumerate(self._words):
            overlap = len(words & page_words)
            if overlap > best_overlap:
                best, best_overlap = i, overlap
        return best

    def paragraph_text(self, i: int) -> str:
        """The observation text of page `i`: ``"[{title}] {text}"`` (see module docstring).

        Args:
            i: page index.

        Returns:
            The formatted page.
        """
        return self._texts[i]

    def sentences(self, i: int) -> tuple[str, ...]:
        """Page `i`'s text split into the sentences lookup counts (see module docstring)."""
        return self._sentences[i]


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returned.

    Attributes:
        text: the observation text shown to the agent.
        paragraph: KB index of the page the text comes from; None when nothing was returned.
        found: whether the tool returned content (paragraph is not None).
    """

    text: str
    paragraph: int | None
    found: bool


@dataclass
class ToolState:
    """Per-episode tool state of one source: its current page.

    Attributes:
        article: index of the current page, None before any successful search.
    """

    article: int | None = None

    def search(self, kb: KnowledgeBase, query: str) -> ToolResult:
        """Run ``search[query]``; a hit becomes the current page.

        Args:
            kb: the knowledge base.
            query: the search input.

        Returns:
            The page text, or the miss observation (state unchanged).
        """
        i = kb.search(query)
        if i is None:
            return ToolResult(SEARCH_MISS_TEXT, None, False)
        self.article = i
        return ToolResult(kb.paragraph_text(i), i, True)

    def lookup(self, kb: KnowledgeBase, keyword: str) -> ToolResult:
        """Run ``lookup[keyword]`` on the current page.

        Returns the first sentence of the page that contains `keyword` (stripped;
        case-insensitive substring) with its position, ``"(Result i/n) sentence"``;
        the same keyword again returns the same sentence, as in the paper's harness.

        Args:
            kb: the knowledge base.
            keyword: the lookup input.

        Returns:
            The numbered sentence, or the "no page loaded" / lookup-miss observation
            (the current page is kept).
        """
        if self.article is None:
            return ToolResult(NO_ARTICLE_TEXT, None, False)
        key = keyword.strip()
        sentences = kb.sentences(self.article)
        for i, sentence in enumerate(sentences, start=1):
            if key.lower() in sentence.lower():
                return ToolResult(f"(Result {i}/{len(sentences)}) {sentence}", self.article,
                                  True)
        return ToolResult(f"No results for '{key}' in current page.", None, False)


class Sources:
    """The tools of one episode over its primary knowledge base and, in two-source
    arms, the backup copy.

    Each source keeps its own current page, as in the paper's harness: lookup reads
    the primary's (a backup_search never changes what lookup reads).

    Args:
        primary: the primary KB (answerless in that regime).
        backup: the intact KB behind backup_search (None: one source only).
    """

    def __init__(self, primary: KnowledgeBase, backup: KnowledgeBase | None = None) -> None:
        self.primary = primary
        self.backup = backup
        self.tools = ToolState()
        self.backup_tools = ToolState()

    def source_of(self, action: str) -> str:
        """Which source a tool call reads: PRIMARY or BACKUP.

        Args:
            action: "search", "lookup" or "backup_search".
        """
        return BACKUP if action == "backup_search" else PRIMARY

    def call(self, action: str, argument: str) -> ToolResult:
        """Run one tool call against its source.

        Args:
            action: "search", "lookup" or "backup_search".
            argument: the query or keyword.

        Returns:
            The tool result (see the module docstring for the texts).

        Raises:
            ValueError: backup_search in an episode without a backup source.
        """
        if self.source_of(action) == BACKUP:
            if self.backup is None:
                raise ValueError("backup_search needs a backup source (two-source arms)")
            return self.backup_tools.search(self.backup, argument)
        if action == "lookup":
            return self.tools.lookup(self.primary, argument)
        return self.tools.search(self.primary, argument)


def observation_source(question: Question, paragraph: int | None) -> str:
    """Classify where an observation from the question's own KB came from.

    Args:
        question: the episode's question.
        paragraph: KB index of the returned page, or None when nothing was returned.

    Returns:
        "gold" for a supporting page, "distractor" for another own page, "none" for
        no page. (Injected pages from other questions are "foreign"; the harness
        labels those itself.)
    """
    if paragraph is None:
        return "none"
    return "gold" if question.is_gold(paragraph) else "distractor"


def strip_supporting_facts(question: Question) -> tuple[Paragraph, ...]:
    """Build the answerless KB: every page loses its supporting-fact sentences.

    Titles and page order are kept, so KB indices (and gold/distractor labels) are
    unchanged; a page left with no sentences stays with empty text. Supporting
    facts naming an out-of-range sentence id are ignored.

    Args:
        question: the question whose KB to strip.

    Returns:
        The stripped pages, in KB order.
    """
    remove = frozenset(question.supporting_facts)
    return tuple(
        Paragraph(
            p.title, tuple(s for j, s in enumerate(p.sentences) if (p.title, j) not in remove)
        )
        for p in question.paragraphs
    )


KB_CACHE_SIZE = 4096
"""Questions whose knowledge bases one process keeps built (a few MB for HotpotQA)."""


@functools.lru_cache(maxsize=KB_CACHE_SIZE)
def knowledge_base(question: Question, answerless: bool = False) -> KnowledgeBase:
    """The question's knowledge base, built once per process and shared by its episodes.

    Tokenising every page for every episode was the largest cost of an episode's own
    CPU at 128 episodes in flight (py-spy, bench/concurrency.py). A KnowledgeBase is
    never changed once built, so episodes of the same question share one. The key is
    the whole question (its id, dataset and content: a frozen dataclass compared
    field by field), so a re-imported question with other pages gets its own.

    Args:
        question: the episode's question.
        answerless: the answerless regime's KB (`strip_supporting_facts`).

    Returns:
        The KnowledgeBase over the question's pages (stripped when `answerless`).
    """
    return KnowledgeBase(strip_supporting_facts(question) if answerless
                         else question.paragraphs)


def resolve_ref(ref: str, question_of: Callable[[str], Question | None]
                ) -> tuple[Question, int] | None:
    """The question and page index an observation reference ("question_id#p") names.

    Args:
        ref: a step's obs_ref, as the harness writes it (`f"{question.id}#{p}"`).
        question_of: looks up a question by id (None when it is not known).

    Returns:
        (question, page index), or None when the question is unknown or the index
        is not one of its pages.
    """
    qid, _, p = ref.rpartition("#")
    q = question_of(qid)
    if q is None or not p.isdigit() or int(p) >= len(q.paragraphs):
        return None
    return q, int(p)


def ref_title(ref: str, question_of: Callable[[str], Question | None]) -> str:
    """The page title an observation reference names, or the reference itself when
    it cannot be resolved (see `resolve_ref`)."""
    hit = resolve_ref(ref, question_of)
    return hit[0].paragraphs[hit[1]].title if hit else ref
