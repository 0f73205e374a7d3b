"""The per-question knowledge base and the agent's tools over it (SPEC §5.1).

Pure: no I/O, no randomness. Failure injection (which observations fail and what
replaces them) lives in `core.regimes`; this module only answers tool calls
against an intact (or answerless) knowledge base.

Observation formats (the exact strings an agent sees):

* search hit: ``"{title}: {text}"`` -- the page title, a colon and a space, then
  the page's sentences joined by single spaces (`Paragraph.text`). A page with no
  sentences left (answerless KB) is shown as its bare title.
* search miss: ``"No results for '{query}'."``
* lookup hit: the matching sentence itself, stripped of surrounding whitespace.
* lookup miss: ``"No more results for '{keyword}'."``
* lookup before any successful search: ``"No article selected. Use search[...] first."``

Two-source episodes (`Sources`): ``backup_search`` runs the same search on an intact
copy of the question's pages (never the answerless one, never failed by a regime);
``lookup`` reads the current article from whichever source selected it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.data import Paragraph, Question

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")

NO_ARTICLE_TEXT = "No article selected. Use search[...] first."
PRIMARY, BACKUP = "primary", "backup"
"""Values of steps.tool_source in two-source episodes."""


def normalize_title(s: str) -> str:
    """Normalise a title for exact matching.

    Args:
        s: a title or query.

    Returns:
        `s` stripped, with internal whitespace runs collapsed to one space, casefolded.
    """
    return _SPACE.sub(" ", s.strip()).casefold()


def tokenize(s: str) -> list[str]:
    """Split text into lower-case word tokens (regex ``\\w+``).

    Args:
        s: any text.

    Returns:
        The tokens in order, duplicates kept.
    """
    return _WORD.findall(s.lower())


def paragraph_observation(paragraph: Paragraph) -> str:
    """Format a page as a search observation: ``"{title}: {text}"`` (title alone if empty).

    Used for intact pages and for pages injected by a failure regime alike, so a
    failed observation is indistinguishable in form from a real one.

    Args:
        paragraph: the page.

    Returns:
        The observation text.
    """
    text = paragraph.text
    return f"{paragraph.title}: {text}" if text else paragraph.title


class KnowledgeBase:
    """Searchable pages of one question, with token sets precomputed once.

    Args:
        paragraphs: the pages, in KB order (indices refer to this order).
    """

    __slots__ = ("paragraphs", "_first_by_title", "_tokens", "_texts")

    def __init__(self, paragraphs: Sequence[Paragraph]) -> None:
        self.paragraphs: tuple[Paragraph, ...] = tuple(paragraphs)
        first_by_title: dict[str, int] = {}
        for i, p in enumerate(self.paragraphs):
            first_by_title.setdefault(normalize_title(p.title), i)
        self._first_by_title = first_by_title
        self._texts = tuple(paragraph_observation(p) for p in self.paragraphs)
        self._tokens = tuple(
            frozenset(tokenize(p.title)) | frozenset(tokenize(p.text)) for p in self.paragraphs
        )

    def __len__(self) -> int:
        return len(self.paragraphs)

    def search(self, query: str) -> int | None:
        """Find the page a search query selects.

        Exact normalised title match first (first such index); otherwise the page
        sharing the most distinct word tokens with the query (title + text), ties to
        the lowest index.

        Args:
            query: the agent's search input.

        Returns:
            The page index, or None when the query is empty or shares no token with
            any page.
        """
        norm = normalize_title(query)
        if not norm:
            return None
        exact = self._first_by_title.get(norm)
        if exact is not None:
            return exact
        q = frozenset(tokenize(query))
        best, best_overlap = None, 0
        for i, tokens in enumerate(self._tokens):
            overlap = len(q & tokens)
            if overlap > best_overlap:  # strict: ties keep the lowest index
                best, best_overlap = i, overlap
        return best

    def paragraph_text(self, i: int) -> str:
        """The observation text of page `i`: ``"{title}: {text}"`` (see module docstring).

        Args:
            i: page index.

        Returns:
            The formatted page.
        """
        return self._texts[i]


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
    """Per-episode tool state: the current article and the lookup cursor.

    Attributes:
        article: index of the current article, None before any successful search.
        lookup_keyword: casefolded keyword of the last lookup, None after a search.
        lookup_position: how many matches of `lookup_keyword` have been returned.
    """

    article: int | None = None
    lookup_keyword: str | None = None
    lookup_position: int = 0

    def search(self, kb: KnowledgeBase, query: str) -> ToolResult:
        """Run ``search[query]``; a hit becomes the current article and resets lookup.

        Args:
            kb: the knowledge base.
            query: the search input.

        Returns:
            The page text, or a "No results" observation (state unchanged).
        """
        i = kb.search(query)
        if i is None:
            return ToolResult(f"No results for '{query}'.", None, False)
        self.article = i
        self.lookup_keyword = None
        self.lookup_position = 0
        return ToolResult(kb.paragraph_text(i), i, True)

    def lookup(self, kb: KnowledgeBase, keyword: str) -> ToolResult:
        """Run ``lookup[keyword]`` on the current article.

        Returns the next sentence containing `keyword` (case-insensitive substring),
        cycling back to the first match after the last. A keyword different from the
        previous lookup's restarts at the first match.

        Args:
            kb: the knowledge base.
            keyword: the lookup input.

        Returns:
            The matching sentence, or a "no article selected" / "No more results"
            observation (the current article is kept).
        """
        if self.article is None:
            return ToolResult(NO_ARTICLE_TEXT, None, False)
        key = keyword.strip().casefold()
        if key != self.lookup_keyword:
            self.lookup_keyword = key
            self.lookup_position = 0
        matches = (
            [s.strip() for s in kb.paragraphs[self.article].sentences if key in s.casefold()]
            if key
            else []
        )
        if not matches:
            return ToolResult(f"No more results for '{keyword}'.", None, False)
        sentence = matches[self.lookup_position % len(matches)]
        self.lookup_position += 1
        return ToolResult(sentence, self.article, True)


class Sources:
    """The tools of one episode over its primary knowledge base and, in two-source
    arms, the backup copy.

    One `ToolState` is shared: a search on either source that finds a page makes it
    the current article, and `source_of("lookup")` is the source that selected it.

    Args:
        primary: the primary KB (answerless in that regime).
        backup: the intact KB behind backup_search (None: one source only).
    """

    def __init__(self, primary: KnowledgeBase, backup: KnowledgeBase | None = None) -> None:
        self.primary = primary
        self.backup = backup
        self.tools = ToolState()
        self.article_source = PRIMARY

    def source_of(self, action: str) -> str:
        """Which source a tool call reads: PRIMARY or BACKUP.

        Args:
            action: "search", "lookup" or "backup_search".
        """
        if action == "backup_search":
            return BACKUP
        return self.article_source if action == "lookup" else PRIMARY

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
        source = self.source_of(action)
        kb = self.primary
        if source == BACKUP:
            if self.backup is None:
                raise ValueError("backup_search needs a backup source (two-source arms)")
            kb = self.backup
        if action == "lookup":
            return self.tools.lookup(kb, argument)
        result = self.tools.search(kb, argument)
        if result.found:
            self.article_source = source
        return result


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
