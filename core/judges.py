"""Judgments of the latest observation (SPEC §7, §8.1, §8.2).

- side-channel: parse the agent's one-word USEFUL/USELESS reply (`parse_side_channel`);
- stated: a deterministic keyword reader over the first two sentences of the agent's
  thought (`read_stated_judgment`, `StatedJudgmentReader`); a thought that calls the
  result partly useful ("partly useful", "partially relevant", "some useful
  information", "somewhat helpful") reads as "useful", so it resets the run (paper
  A18), even when it also says what the result lacks;
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
from dataclasses import dataclass, field
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
    """Parse a side-channel judgment reply (§8.1).

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


USELESS_PATTERNS: tuple[str, ...] = (
    r"(?:\bnot|n't|\bcannot|\bnever)\s+(?:\w+\s+){0,2}?(?:mention|state|contain|include"
    r"|provide|give|say|tell|confirm|indicate|reveal|show|help|answer|list|discuss|cover"
    r"|specify|address|describe|refer|talk|match|find|found|locate|seem|appear)\w*",
    r"(?:\bnot|n't)\s+(?:\w+\s+){0,3}?(?:relevant|related|useful|helpful|what\b|about\b"
    r"|the (?:right|correct|same)\b|pertinent|applicable)",
    r"\bno\s+(?:\w+\s+){0,2}?(?:information|info|mention|details?|data|results?|answers?"
    r"|clues?|evidence|references?|indication|relevant|useful|help|luck|match|article"
    r"|page|entry|such|relation|connection|link)\b",
    r"\b(?:irrelevant|unrelated|unhelpful|useless|off[- ]topic|nothing|none of)\b",
    r"\b(?:something|someone|somebody) else\b",
    r"\babout (?:a |an |the |some )?(?:different|another|other|unrelated)\b",
    r"\b(?:a|an|the|entirely|completely|totally) (?:different|unrelated) "
    r"(?:person|people|topic|subject|article|page|entity|film|movie|band|book|place|thing)",
    r"\bwrong\b",
    r"\b(?:fail(?:ed|s)?|unable|dead end|lacks?|lacking|empty|unclear|not clear|instead)\b",
    r"\bstill (?:no|not|nothing|don't|do not|haven't|have not|can't|unclear|unknown)\b",
)
"""Regexes for a stated "useless" judgment; checked before the useful ones."""

USEFUL_PATTERNS: tuple[str, ...] = (
    r"\b(?:mention(?:s|ed)?|states that|stated|found|according to|confirm(?:s|ed)?"
    r"|shows that|showed|tells us|indicat(?:es|ed)|reveal(?:s|ed)|this gives|gives us"
    r"|provides|provided|says|said|notes that|describes|explains|lists|listed|contains"
    r"|identif(?:y|ies|ied)|learn(?:ed|t)|answer is|is the answer)\b",
    r"\b(?:this|it|which|that) (?:shows|means)\b",
    r"\b(?:i|we) (?:now )?know\b",
    r"\bnow (?:i|we) know\b",
    r"\b(?:is|are|was|seems|looks) (?:\w+ )?(?:relevant|useful|helpful)\b",
    r"\b(?:great|perfect|excellent)\b",
)
"""Regexes for a stated "useful" judgment."""

_DEGREE = (r"(?:partly|partially|somewhat|slightly|moderately|marginally|a bit|a little"
           r"|in part|to some (?:extent|degree))")
_GOOD = r"(?:useful|relevant|helpful|informative|pertinent)"
PARTLY_USEFUL_PATTERNS: tuple[str, ...] = (
    rf"\b{_DEGREE}\s+(?:\w+\s+)?{_GOOD}\b",
    rf"\b(?:some|a bit of|a little|a few|partial)\s+(?:\w+\s+)?{_GOOD}\b",
    r"\bpartial(?:ly)? (?:answer|information|match)\b",
    r"\b(?:part|some) of (?:the|an|my) answer\b",
    r"\bhelps? (?:a little|a bit|somewhat|partly|partially|in part)\b",
    r"\bof some (?:use|help|relevance|value)\b",
)
"""Regexes for a "partly useful" judgment: read as useful, checked before the useless
ones (a partly useful result resets the run, paper A18)."""

_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_PARTLY_RE = re.compile("|".join(PARTLY_USEFUL_PATTERNS), re.IGNORECASE)
_USELESS_RE = re.compile("|".join(USELESS_PATTERNS), re.IGNORECASE)
_USEFUL_RE = re.compile("|".join(USEFUL_PATTERNS), re.IGNORECASE)


def _leading_sentences(thought: str, n: int) -> str:
    """The first `n` non-empty sentences of a thought, joined by spaces."""
    text = thought.replace("\u2019", "'")
    sentences = [s.strip() for s in _SENTENCE_SPLIT_RE.split(text) if s and s.strip()]
    return " ".join(sentences[:n])


_NEGATIONS = frozenset(("not", "no", "never", "hardly", "barely", "nor", "neither"))


def _negated(before: str) -> bool:
    """Whether one of the three words before a phrase negates it ("not even partly")."""
    words = re.findall(r"[a-z']+", before.lower())[-3:]
    return any(w in _NEGATIONS or w.endswith("n't") for w in words)


def _classify(text: str, useless_re: re.Pattern[str], useful_re: re.Pattern[str],
              partly_re: re.Pattern[str] | None = _PARTLY_RE) -> str | None:
    """Keyword classification: partly-useful phrases first, then useless, then useful."""
    if partly_re is not None and any(not _negated(text[:m.start()])
                                     for m in partly_re.finditer(text)):
        return "useful"
    if useless_re.search(text):
        return "useless"
    if useful_re.search(text):
        return "useful"
    return None


def read_stated_judgment(thought: str | None) -> str | None:
    """Read the agent's own judgment of the last observation from its thought (§8.2).

    Only the first two sentences are read. A "partly useful" phrase ("partially
    relevant", "some useful information") wins: the result reads as useful even when
    the thought also says what it lacks. Otherwise useless phrases are checked first,
    so a negated useful phrase ("does not mention", "couldn't find") reads as useless,
    and a thought mixing both ("It mentions X but not Y's birth date") reads as useless.

    Args:
        thought: the parsed thought (may be None or empty).

    Returns:
        "useless", "useful", or None when neither kind of phrase occurs.
    """
    if not thought:
        return None
    return _classify(_leading_sentences(thought, 2), _USELESS_RE, _USEFUL_RE)


@dataclass(frozen=True)
class StatedJudgmentReader:
    """A configurable keyword reader; the defaults equal `read_stated_judgment`.

    Attributes:
        useless_patterns: regexes (case-insensitive) that mark a useless judgment.
        useful_patterns: regexes that mark a useful judgment (checked last).
        n_sentences: how many leading sentences of the thought are read.
        partly_useful_patterns: regexes that mark a partly useful judgment, read as
            useful and checked first (empty: none).
    """

    useless_patterns: tuple[str, ...] = USELESS_PATTERNS
    useful_patterns: tuple[str, ...] = USEFUL_PATTERNS
    n_sentences: int = 2
    partly_useful_patterns: tuple[str, ...] = PARTLY_USEFUL_PATTERNS
    _useless_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _useful_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _partly_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_partly_re", re.compile(
            "|".join(self.partly_useful_patterns), re.IGNORECASE)
            if self.partly_useful_patterns else None)
        object.__setattr__(self, "_useless_re",
                           re.compile("|".join(self.useless_patterns), re.IGNORECASE))
        object.__setattr__(self, "_useful_re",
                           re.compile("|".join(self.useful_patterns), re.IGNORECASE))

    def read(self, thought: str | None) -> str | None:
        """Classify a thought as "useless", "useful" or None (see read_stated_judgment)."""
        if not thought:
            return None
        text = _leading_sentences(thought, self.n_sentences)
        return _classify(text, self._useless_re, self._useful_re, self._partly_re)

    def __call__(self, thought: str | None) -> str | None:
        return self.read(thought)


def update_stated_run(run: int, judgment: str | None) -> int:
    """Advance the stated-judgment run (§8.2).

    Args:
        run: the current number of consecutive observations judged useless.
        judgment: "useless"/"useful"/None (upper case accepted).

    Returns:
        run + 1 for useless, 0 for useful, `run` unchanged for None.

    This is the running count a harness can act on (SPEC §8.2). The analysis is
    stricter (paper A18): after a thought with no explicit judgment the run is
    unknown until the next useful one (``analysis.measures.decisions``).
    """
    if judgment is None:
        return run
    lowered = judgment.lower()
    if lowered == "useless":
        return run + 1
    if lowered == "useful":
        return 0
    raise ValueError(f"unknown stated judgment {judgment!r}")


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
    """The lexical rule's judgment of an observation (§7 lexical_rule).

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
