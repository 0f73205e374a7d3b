"""Judgments of the latest observation: side-channel and stated (docs/results.md).

- side-channel: parse the agent's one-word USEFUL/USELESS reply (`parse_side_channel`);
- stated: a deterministic keyword reader over the first two sentences of the agent's
  thought (`read_stated_judgment`), built to agree with the
  reader the main paper's authors released (App. D.3);
- lexical: content-word overlap between the question and the observation's head;
- random: a seeded draw that says USELESS at a given rate.

Side-channel and rule judgments use "USEFUL"/"USELESS"; the stated reader returns
"useful"/"useless" (or None when the thought states neither).

The reader's precision and recall for "useless" are measured on a held-out labelled
file written before its patterns were read (tests/data/stated_judgments_heldout.tsv):
``python -m core.judges tests/data/stated_judgments_heldout.tsv``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from core.canonical import keyed_rng
from core.errors import DataError
from core.thinking import THINK_BLOCK_RE

USEFUL = "USEFUL"
USELESS = "USELESS"

JUDGE_PARSE_CONTAINS = "contains"
JUDGE_PARSE_FIRST_WORD = "first_word"
JUDGE_PARSES = (JUDGE_PARSE_CONTAINS, JUDGE_PARSE_FIRST_WORD)
"""How a side-channel reply is read (the condition knob `judge_parse`): "contains" is
the authors' released harness's reading and the default; "first_word" is stricter."""

_REPLY_PREFIX_RE = re.compile(
    r"^\W*(?:answer|judg(?:e)?ment|verdict|reply|response|final answer)\W*:", re.IGNORECASE
)
_WORD_RE = re.compile(r"[a-z]+")


def parse_side_channel(reply: str | None, rule: str = JUDGE_PARSE_CONTAINS) -> str | None:
    """Parse a side-channel judgment reply.

    "contains" (default, as the paper's released harness reads it): USELESS when the
    reply contains "useless" anywhere, in any case and even inside a longer word
    ("The LAST observation was USELESS.", "uselessness"); otherwise USEFUL when it
    contains "useful" ("Not useful" reads USEFUL, "USEFUL or USELESS" reads USELESS);
    otherwise None. A closed ``<think>`` block is dropped first.

    "first_word": the verdict is the reply's first word after markdown, punctuation
    and an optional "Answer:"/"Judgment:"/"Verdict:" label are stripped,
    case-insensitive ("**Useless**.", "useless - it is about a different film"). When
    the other verdict word also occurs among the first three words ("USEFUL or
    USELESS") the reply echoes the template and is not read; "not useless" or "I think
    it is useless" give None.

    Under either rule None is not useless: the streak resets (the main paper, App. A,
    amendment 2).

    Args:
        reply: the raw reply (at most a few tokens).
        rule: JUDGE_PARSE_CONTAINS or JUDGE_PARSE_FIRST_WORD.

    Returns:
        "USELESS", "USEFUL", or None.

    Raises:
        ValueError: an unknown rule.
    """
    if rule not in JUDGE_PARSES:
        raise ValueError(f"unknown judge_parse {rule!r}; choose one of: {', '.join(JUDGE_PARSES)}")
    if not reply:
        return None
    text = THINK_BLOCK_RE.sub(" ", reply)
    if rule == JUDGE_PARSE_CONTAINS:
        lowered = text.lower()
        if "useless" in lowered:
            return USELESS
        return USEFUL if "useful" in lowered else None
    text = _REPLY_PREFIX_RE.sub(" ", text, count=1)
    words = _WORD_RE.findall(text.lower())
    if not words or words[0] not in ("useful", "useless"):
        return None
    other = "useful" if words[0] == "useless" else "useless"
    if other in words[1:3]:
        return None
    return USELESS if words[0] == "useless" else USEFUL


def _any(*words: str) -> str:
    """A non-capturing alternation of the given regex pieces."""
    return "(?:" + "|".join(words) + ")"


_GOOD_ADJ = _any("relevant", "related", "helpful", "useful", "pertinent")
_DO_VERBS = _any("mention", "provide", "contain", "include", "give", "answer", "say", "show",
                 "have", "state", "specify", "address", "discuss", "relate", "help", "offer",
                 "list", "indicate", "confirm", "match", "reveal", "return", "yield", "lead",
                 "pertain")
_NOT_STATES = _any("about", "relevant", "related", "helpful", "useful", "mentioned", "provided",
                   "found", "available", "present", "listed", "given", "what")
_NT_STATES = _any("about", "relevant", "related", "helpful", "useful", "mentioned", "what")
_MISSING = _any("information", "mention", "details?", "results?", "data", "answer",
                "indication")
_PERFECT = _any("provided", "returned", "yielded", "given", "mentioned", "found", "shown",
                "revealed", "helped")
_TOPIC = _any("refer", "refers", "referred", "referring", "relate", "relates", "is about",
              "are about", "describes?", "focus(?:es)? on", "point to")
_REPORTS = _any("provides?", "gives?", "states?", "mentions?", "shows?", "indicates?",
                "reveals?", "lists?", "says?")

USELESS_PATTERNS: tuple[str, ...] = (
    rf"\bnot (?:(?:directly|really|very|at all) )?{_GOOD_ADJ}\b",
    r"\b(?:irrelevant|unrelated)\b",
    rf"\b(?:does|do|did)(?: not|n't) (?:(?:seem|appear) to )?"
    rf"(?:(?:explicitly|directly|specifically|clearly|actually) )?{_DO_VERBS}\b",
    rf"\b(?:is|are|was|were)(?: still)? not {_NOT_STATES}\b",
    rf"\b(?:is|are|was|were)n't {_NT_STATES}\b",
    rf"\bno (?:(?:relevant|useful|direct|specific) )?{_MISSING}\b",
    r"\bnothing (?:about|on|related|relevant|useful)\b",
    r"\b(?:still|again) (?:not|no|nothing)\b",
    r"\b(?:unable|failed) to (?:find|locate|get)\b",
    rf"\b(?:has|have|had)(?: not|n't)(?: (?:yet|still))? {_PERFECT}\b",
    rf"\b{_TOPIC}\b[^.;]{{0,90}}?,? (?:(?:and|but) )?not (?:(?:the|a|an|to|about) )?\w",
    r"\b(?:instead of|rather than) (?:(?:the|a|an) )?\w+",
    r"\b(?:could|can)(?: not|n't) find\b",
    r"\bnot (?:returning|finding|giving|providing|showing)\b",
    r"\bnot what (?:i|we) (?:was|were|am|are) looking for\b",
    r"\b(?:wrong|different|another|unrelated) (?:article|page|topic|person|entity|subject)\b",
    r"\b(?:off[- ]topic|not on topic)\b",
    r"\blacks? (?:(?:any|the) )?(?:information|mention|details?)\b",
)
"""Phrases of a stated "useless" judgment (case-insensitive), checked first: a thought
that says the result does not help reads as useless even when it also reports
something ("It mentions the depth but does not mention the year")."""

USEFUL_PATTERNS: tuple[str, ...] = (
    r"\b(?:the )?answer (?:is|to the question is)\b",
    r"\b(?:this|that|it) (?:answers|confirms)\b",
    r"\bconfirms? that\b",
    rf"\b{_REPORTS} (?:(?:that|the|a|an|his|her|their|its) )?(?!no\b)",
    r"\bnow (?:i|we) (?:know|have)\b",
    r"\baccording to (?:the|this)\b",
)
"""Phrases of a stated "useful" judgment: the thought reports something the result
gives ("It says he...", "The page lists the members", "According to the article")."""

_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
USELESS_FIRST = "acdfhilnoprsuw"
"""The letters a useless phrase can begin with (after its word boundary; any case)."""
USEFUL_FIRST = "acgilmnprst"
"""The letters a useful phrase can begin with (after its word boundary; any case)."""


def _phrases_re(patterns: Sequence[str], first: str) -> re.Pattern[str]:
    """One case-insensitive search for any of `patterns`, each beginning with \\b.

    A text holds some phrase exactly when the alternation matches in it (no phrase
    captures or refers back to a group), and one search is about twice as fast as a
    search per phrase. The alternation is tried only at a word start whose letter
    some phrase begins with (`first`, checked against the patterns by
    tests/test_judges.py): a search that finds nothing, most thoughts, no longer
    tries every phrase at every character, about twice as fast again.
    """
    return re.compile(rf"\b(?=[{first}])(?:" + "|".join(f"(?:{p})" for p in patterns) + ")",
                      re.IGNORECASE)


_USELESS_RE = (_phrases_re(USELESS_PATTERNS, USELESS_FIRST),)
_USEFUL_RE = (_phrases_re(USEFUL_PATTERNS, USEFUL_FIRST),)


def leading_sentences(thought: str | None, n: int = 2) -> str:
    """The first `n` sentences of a thought, joined by single spaces.

    A sentence ends at ".", "!" or "?" followed by whitespace; a line break alone does
    not end one. The text is read as written (a typographic apostrophe is not an
    ASCII one), as the authors' released reader reads it.
    """
    return " ".join(_SENTENCE_END_RE.split((thought or "").strip())[:n])


def _classify(text: str, useless_re: Sequence[re.Pattern[str]],
              useful_re: Sequence[re.Pattern[str]]) -> str | None:
    """Keyword classification: any useless phrase first, then any useful one."""
    if any(r.search(text) for r in useless_re):
        return "useless"
    if any(r.search(text) for r in useful_re):
        return "useful"
    return None


def read_stated_judgment(thought: str | None) -> str | None:
    """Read the agent's own judgment of the last observation from its thought.

    The reader of the main paper (App. D.3: a keyword reader on the first two
    sentences, no model call), built to agree with the authors' released reader: only
    the first two sentences are read; if any useless phrase occurs (`USELESS_PATTERNS`:
    "not relevant", "does not mention", "no information", "refers to X, not Y",
    "wrong article", …) the judgment is useless; otherwise, if any useful phrase occurs
    (`USEFUL_PATTERNS`: "the answer is", "confirms that", "mentions the", "according to
    the", "now I know", …), useful; otherwise none. Its agreement with the authors'
    reader is measured on tests/data/stated_thoughts.jsonl.

    Args:
        thought: the parsed thought (may be None or empty).

    Returns:
        "useless", "useful", or None when neither kind of phrase occurs.
    """
    if not thought:
        return None
    return _classify(leading_sentences(thought, 2), _USELESS_RE, _USEFUL_RE)


STATED_LABELS = ("useless", "useful", "none")


def read_labelled_thoughts(path: str | Path) -> list[tuple[str, str | None]]:
    """Labelled thoughts from a `label<TAB>thought` file (header line optional).

    Args:
        path: the file; label is useless, useful or none (none → None).

    Returns:
        (thought, label) pairs in file order.

    Raises:
        DataError: a missing file, or a line without a tab or with another label.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"{path}: cannot read labelled thoughts ({exc.strerror})") from None
    examples: list[tuple[str, str | None]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip() or (n == 1 and line.lower().startswith("label\t")):
            continue
        label, tab, thought = line.partition("\t")
        if not tab or label not in STATED_LABELS or not thought.strip():
            raise DataError(f"{path}:{n}: expected 'label<TAB>thought' with label one of "
                            f"{', '.join(STATED_LABELS)}, got {line[:60]!r}")
        examples.append((thought, None if label == "none" else label))
    return examples


def reader_precision_recall(
    examples: Sequence[tuple[str, str | None]] | str | Path,
    reader: Callable[[str], str | None] = read_stated_judgment,
) -> tuple[float, float]:
    """Precision and recall of a reader for the "useless" class on labelled thoughts.

    Args:
        examples: (thought, label) pairs, label "useless", "useful" or None; or the
            path of a `label<TAB>thought` file (``read_labelled_thoughts``).
        reader: the reader to evaluate.

    Returns:
        (precision, recall); a ratio with a zero denominator is 0.0.

    Raises:
        DataError: an unreadable or malformed file.
    """
    if isinstance(examples, (str, Path)):
        examples = read_labelled_thoughts(examples)
    tp = fp = fn = 0
    for thought, label in examples:
        predicted = reader(thought) == "useless"
        actual = label is not None and label.lower() == "useless"
        tp += predicted and actual
        fp += predicted and not actual
        fn += actual and not predicted
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return precision, recall


STOPWORDS: frozenset[str] = frozenset((
    # question words
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    # articles, determiners, pronouns
    "a", "an", "the", "this", "that", "these", "those", "it", "its", "he", "she", "his",
    "her", "him", "they", "them", "their", "we", "you", "i", "there", "some", "any",
    "each", "both", "either", "neither", "other", "another", "same", "such",
    # prepositions
    "of", "in", "on", "at", "to", "for", "from", "by", "with", "about", "into", "onto",
    "than", "as", "between", "during", "after", "before", "under", "over", "through",
    "against", "among", "within", "without", "upon", "via", "per", "across", "along",
    "around", "behind", "beyond", "near", "since", "until", "toward", "towards",
    # auxiliaries
    "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done",
    "has", "have", "had", "having", "will", "would", "shall", "should", "can", "could",
    "may", "might", "must",
    # conjunctions, negation, quantity words, contraction pieces
    "and", "or", "but", "nor", "so", "if", "then", "also", "not", "no", "many", "much",
    "more", "most", "s", "t", "d", "ll", "re", "ve", "m",
))
"""Words that are not content words of a question."""

_TOKEN_RE = re.compile(r"[^\W_]+")


def content_words(question: str) -> list[str]:
    """The question's distinct content words, lower-case, in order of first occurrence.

    Args:
        question: the question (or claim) text.

    Returns:
        Tokens (runs of letters/digits) that are not in STOPWORDS, without repeats.
    """
    seen: dict[str, None] = {}
    for token in _TOKEN_RE.findall(question.lower()):
        if token not in STOPWORDS:
            seen.setdefault(token, None)
    return list(seen)


def lexical_judgment(question: str, observation: str | None, tau: float = 0.25,
                     window: int = 400) -> str:
    """The lexical rule's judgment of an observation (the `lexical_rule` arm).

    A content word counts when it occurs as a whole token in the first `window`
    characters of the observation (case-insensitive); a word cut by the window edge
    counts only if its cut prefix is itself the word.

    Args:
        question: the question text.
        observation: the tool result (None or blank = the tool returned nothing).
        tau: USELESS when the fraction of distinct content words found is below this.
        window: how many leading characters of the observation are read.

    Returns:
        "USELESS" or "USEFUL"; "USEFUL" when the question has no content words.
    """
    if observation is None or not observation.strip():
        return USELESS
    words = content_words(question)
    if not words:
        return USEFUL
    present = set(_TOKEN_RE.findall(observation[:window].lower()))
    found = sum(1 for word in words if word in present)
    return USELESS if found / len(words) < tau else USEFUL


def random_judgment(seed: int, question_id: str, obs_index: int, rate: float) -> str:
    """The random rule's judgment: a seeded draw that says USELESS with probability `rate`.

    The draw depends only on (seed, question id, observation index), hashed with BLAKE2b
    (never Python's salted `hash`), so arms and reruns see the same sequence.

    Args:
        seed: the cell's seed.
        question_id: the question id.
        obs_index: 1-based index of the observation in the episode.
        rate: probability of USELESS, in [0, 1].

    Returns:
        "USELESS" or "USEFUL".

    Raises:
        ValueError: when rate is outside [0, 1].
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate}")
    rng = keyed_rng("random_rule", seed, question_id, obs_index, digest_size=8)
    return USELESS if rng.random() < rate else USEFUL


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reader's precision and recall for "useless" on labelled files.

    Usage: ``python -m core.judges FILE [FILE …]`` (one line per file).

    Returns:
        0, or 2 with one error line on bad input.
    """
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths:
        print("usage: python -m core.judges FILE [FILE …]  (label<TAB>thought lines)",
              file=sys.stderr)
        return 2
    try:
        for path in paths:
            examples = read_labelled_thoughts(path)
            precision, recall = reader_precision_recall(examples)
            useless = sum(label == "useless" for _, label in examples)
            print(f"{path}: {len(examples)} thoughts ({useless} useless): "
                  f"precision {precision:.3f}, recall {recall:.3f} (class useless)")
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
