"""Tests for core.judges: side-channel parsing, stated keyword reader, lexical, random."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import DataError
from core.judges import (
    JUDGE_PARSE_CONTAINS,
    JUDGE_PARSE_FIRST_WORD,
    STOPWORDS,
    content_words,
    lexical_judgment,
    main,
    parse_side_channel,
    random_judgment,
    read_labelled_thoughts,
    read_stated_judgment,
    reader_precision_recall,
)
from tests.oracles.judges import StatedJudgmentReader, update_stated_run

HELDOUT = Path(__file__).parent / "data" / "stated_judgments_heldout.tsv"

# --- side-channel ------------------------------------------------------------------


# (reply, reading under "contains" = the paper's harness, reading under "first_word")
SIDE_CHANNEL_REPLIES: list[tuple[str, str | None, str | None]] = [
    ("USELESS", "USELESS", "USELESS"),
    ("useless", "USELESS", "USELESS"),
    ("**Useless**.", "USELESS", "USELESS"),
    ("useless - it is about a different film", "USELESS", "USELESS"),
    ("  USELESS\n", "USELESS", "USELESS"),
    ("`USELESS`", "USELESS", "USELESS"),
    ("Answer: USELESS", "USELESS", "USELESS"),
    ("Judgment: **useless**", "USELESS", "USELESS"),
    ("<think>\n\n</think>\n\nUSELESS", "USELESS", "USELESS"),
    ("<think>Useless or not?</think>USEFUL", "USEFUL", "USEFUL"),  # reasoning is not read
    ("USELESS. It is not useful.", "USELESS", "USELESS"),
    ("USEFUL", "USEFUL", "USEFUL"),
    ("Useful!", "USEFUL", "USEFUL"),
    ("**USEFUL**", "USEFUL", "USEFUL"),
    # a sentence around the word: the harness counts it, the first-word rule does not
    ("The LAST observation was USELESS.", "USELESS", None),
    ("Thought: USELESS", "USELESS", None),
    ("I'd say USELESS", "USELESS", None),
    ("I think it is useless", "USELESS", None),
    ("It was useful for the question.", "USEFUL", None),
    # both words: USELESS wins under the harness's reading
    ("USEFUL or USELESS", "USELESS", None),
    ("Useless/useful", "USELESS", None),
    ("USEFUL, not USELESS", "USELESS", None),
    ("not useless", "USELESS", None),
    # substring, as the harness: "useful" inside a longer word counts
    ("Not useful", "USEFUL", None),
    ("usefulness", "USEFUL", None),
    ("uselessness", "USELESS", None),
    # neither word
    ("", None, None),
    ("   ", None, None),
    ("Thought: the last observation", None, None),
    ("UNUSABLE", None, None),
    ("use less", None, None),
]


@pytest.mark.parametrize(("reply", "contains", "first_word"), SIDE_CHANNEL_REPLIES)
def test_parse_side_channel(reply: str, contains: str | None, first_word: str | None) -> None:
    assert parse_side_channel(reply) == contains  # the default is the harness's reading
    assert parse_side_channel(reply, JUDGE_PARSE_CONTAINS) == contains
    assert parse_side_channel(reply, JUDGE_PARSE_FIRST_WORD) == first_word


def test_parse_side_channel_none_reply_and_unknown_rule() -> None:
    assert parse_side_channel(None) is None
    assert parse_side_channel(None, JUDGE_PARSE_FIRST_WORD) is None
    with pytest.raises(ValueError, match="judge_parse"):
        parse_side_channel("USELESS", "anywhere")


# --- stated judgment reader ----------------------------------------------------------

# (thought, label): labels written by reading each thought as a researcher would, for
# the question "was the LAST observation useful for answering the question?".
LABELLED_THOUGHTS: list[tuple[str, str | None]] = [
    ("The article is about a 19th-century painter, which is not relevant to the question. "
     "I should search for the film instead.", "useless"),
    ("This observation does not mention the director of the film. Let me try another "
     "search.", "useless"),
    ("The search result doesn't mention where Barlow was born. I'll look up 'born'.",
     "useless"),
    ("There is no information about the album's release date here. I need to search "
     "for the album directly.", "useless"),
    ("The returned paragraph is about a football club in Spain, which is unrelated to "
     "the band.", "useless"),
    ("That result is irrelevant; it describes a river in Germany.", "useless"),
    ("The page says nothing about the author's nationality.", "useless"),
    ("This does not contain the year the company was founded. Maybe the founder's page "
     "has it.", "useless"),
    ("The observation isn't relevant to the question. Searching again.", "useless"),
    ("Hmm, this is about something else entirely. Let me search for Tyler Bates.",
     "useless"),
    ("The lookup didn't help. I still don't know the population of the town.", "useless"),
    ("This paragraph is not helpful for determining who was older.", "useless"),
    ("The result does not provide the birth date of either director.", "useless"),
    ("I couldn't find anything about the 1998 season in this article. Let me try "
     "another query.", "useless"),
    ("Again the search returned a page about a different person with the same name.",
     "useless"),
    ("The observation seems to be the wrong article. I should search using the full "
     "name.", "useless"),
    ("Still no mention of the stadium's capacity. Perhaps lookup will work.", "useless"),
    ("This article doesn't tell us which network aired the show.", "useless"),
    ("The search failed to return the novel's page.", "useless"),
    ("The observation mentions that Barlow was formed in 1987 in Seattle. Now I need "
     "the lead singer's name.", "useful"),
    ("The article states that the film was directed by Denis Villeneuve. Next I will "
     "search for Villeneuve's birthplace.", "useful"),
    ("According to the observation, the magazine was first published in 1923.", "useful"),
    ("I found that Tyler Bates composed the score. So the answer is Tyler Bates.",
     "useful"),
    ("This confirms that both bands are from Australia.", "useful"),
    ("The paragraph shows that the river is 320 km long, longer than the other one.",
     "useful"),
    ("Great, this tells us the author was born in Dublin.", "useful"),
    ("The result reveals that the company was acquired by Sony in 2005.", "useful"),
    ("Now I know the director; the article indicates he was born in Quebec.", "useful"),
    ("This gives the founding year as 1891, which answers the first part.", "useful"),
    ("I need to find the director of the film first. Let me search for it.", None),
    ("Let me search for the album to see who produced it.", None),
    ("Tyler Bates is an American composer. He scored several Zack Snyder films.", None),
    ("I will look up the keyword 'born' in this article.", None),
    ("I should compare the birth years of the two directors. Searching the second one "
     "now.", None),
    ("The question asks which band formed first. I'll start with Barlow.", None),
    ("Let me answer now.", None),
    ("Based on my own knowledge, the answer is probably 1950.", "useful"),
    # Known misses, kept so the measured numbers stay honest:
    # a negative fact read as a negative judgment (false positive) ...
    ("The cast list does not include Meg Ryan, so she was not in the film. The answer "
     "is no.", "useful"),
    # ... and a useless judgment with no keyword (false negative).
    ("The knowledge base returned an article on medieval castles, not the musician. "
     "I'll rephrase the query.", "useless"),
]


def test_reader_precision_and_recall_on_labelled_thoughts() -> None:
    # The reader is the authors' keyword reader (agreement: test_stated_reader.py), not
    # one tuned to these labels: it misses judgments without its keywords ("something
    # else entirely", "doesn't tell us", "failed to return", "this tells us"). Measured:
    # precision 16/17, recall 16/20.
    assert len(LABELLED_THOUGHTS) >= 30
    precision, recall = reader_precision_recall(LABELLED_THOUGHTS)
    assert (precision, recall) == (16 / 17, 16 / 20)


def test_reader_on_the_held_out_file() -> None:
    # The file was written before the reader's patterns were read and is not used to
    # tune them. Measured for the authors' reader: precision 0.906 (58/64), recall 0.795
    # (58/73), as docs/results.md reports.
    examples = read_labelled_thoughts(HELDOUT)
    assert len(examples) >= 150
    assert {label for _, label in examples} == {"useless", "useful", None}
    precision, recall = reader_precision_recall(HELDOUT)
    assert (precision, recall) == reader_precision_recall(examples)
    assert (precision, recall) == (58 / 64, 58 / 73)


def test_labelled_file_errors_and_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("label\tthought\nuseless\tIt is irrelevant.\nmaybe\tHmm.\n")
    with pytest.raises(DataError, match="bad.tsv:3"):
        read_labelled_thoughts(bad)
    with pytest.raises(DataError, match="cannot read"):
        read_labelled_thoughts(tmp_path / "missing.tsv")
    good = tmp_path / "good.tsv"
    good.write_text("useless\tIt is irrelevant.\nnone\tLet me search.\n"
                    "useful\tIt mentions the year.\n")
    assert read_labelled_thoughts(good) == [("It is irrelevant.", "useless"),
                                            ("Let me search.", None),
                                            ("It mentions the year.", "useful")]
    assert main([str(good)]) == 0
    assert "3 thoughts (1 useless): precision 1.000, recall 1.000" in capsys.readouterr().out
    assert main([str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    out = subprocess.run([sys.executable, "-m", "core.judges", str(HELDOUT)], text=True,
                         capture_output=True, check=True).stdout
    assert "190 thoughts (73 useless): precision 0.906, recall 0.795" in out


def test_reader_precision_recall_arithmetic() -> None:
    examples = [
        ("It is not relevant.", "useless"),   # predicted useless: TP
        ("It mentions the year.", "useless"),  # predicted useful: FN
        ("Irrelevant page.", None),            # predicted useless: FP
        ("It mentions the year.", "useful"),   # predicted useful: TN
    ]
    # precision = TP/(TP+FP) = 1/2, recall = TP/(TP+FN) = 1/2
    assert reader_precision_recall(examples) == (0.5, 0.5)
    assert reader_precision_recall([]) == (0.0, 0.0)


@pytest.mark.parametrize(("thought", "expected"), [
    ("The article does not mention his birth year.", "useless"),  # negated useful verb
    # read as written, as the authors' reader: a typographic apostrophe is not "n't",
    # and "mention the" is then a report
    ("It doesn\u2019t mention the band.", "useful"),
    ("The page mentions the band but does not mention the year.", "useless"),  # mixed
    ("The article mentions the band's debut album.", "useful"),
    ("Tyler Bates states that he began in 1993.", "useful"),
    ("Nothing about the year. The page mentions the actor.", "useless"),
    ("Nothing here. The page mentions the actor.", "useful"),  # "nothing" alone is no phrase
    ("The page is about the\nbassist, not the singer.", "useless"),  # a line break is no end
    # only the first two sentences are read
    ("Let me think. I will search next. The article does not mention it.", None),
    ("", None),
])
def test_read_stated_judgment_cases(thought: str, expected: str | None) -> None:
    assert read_stated_judgment(thought) == expected


def test_read_stated_judgment_none() -> None:
    assert read_stated_judgment(None) is None


def test_reader_class_defaults_match_function_and_are_configurable() -> None:
    reader = StatedJudgmentReader()
    for thought, _label in LABELLED_THOUGHTS:
        assert reader(thought) == read_stated_judgment(thought)
    three = StatedJudgmentReader(n_sentences=3)
    assert three.read("Let me think. I will search next. The article does not mention it.") \
        == "useless"
    custom = StatedJudgmentReader(useless_patterns=(r"\bbogus\b",), useful_patterns=(r"\bok\b",))
    assert custom.read("This is bogus.") == "useless"
    assert custom.read("Looks ok.") == "useful"
    assert custom.read("It is irrelevant.") is None


@pytest.mark.parametrize(("run", "judgment", "expected"), [
    (0, "useless", 1),
    (4, "useless", 5),
    (4, "USELESS", 5),
    (4, "useful", 0),
    (4, None, 4),
    (0, None, 0),
])
def test_update_stated_run(run: int, judgment: str | None, expected: int) -> None:
    assert update_stated_run(run, judgment) == expected


def test_update_stated_run_rejects_unknown() -> None:
    with pytest.raises(ValueError):
        update_stated_run(0, "maybe")


def test_stated_run_over_a_trajectory() -> None:
    thoughts = ["It is irrelevant.", "No information here.", "Let me search again.",
                "Unrelated page.", "It mentions the year.", "Not helpful."]
    run, runs = 0, []
    for thought in thoughts:
        run = update_stated_run(run, read_stated_judgment(thought))
        runs.append(run)
    assert runs == [1, 2, 2, 3, 0, 1]


# --- lexical judge ------------------------------------------------------------------

QUESTION = "Which year was the Barlow band founded in Seattle?"
# content words: year, barlow, band, founded, seattle (5); "which", "was", "the",
# "in" are stopwords


def test_content_words() -> None:
    assert content_words(QUESTION) == ["year", "barlow", "band", "founded", "seattle"]
    assert content_words("Who is the Who's drummer of The Who?") == ["drummer"]
    assert content_words("What is it?") == []
    assert {"what", "the", "of", "was", "did"} <= STOPWORDS


def test_lexical_quarter_exactly_is_useful() -> None:
    question = "Where was Tyler Bates born?"  # content words: tyler, bates, born (3)
    question4 = "Where was Tyler Bates born musician?"  # tyler, bates, born, musician (4)
    assert len(content_words(question4)) == 4
    # 1 of 4 in the window: 1/4 = 0.25, not < 0.25 -> USEFUL
    assert lexical_judgment(question4, "A musician from Texas.") == "USEFUL"
    # 0 of 4: 0/4 = 0.0 < 0.25 -> USELESS
    assert lexical_judgment(question4, "A river in Germany.") == "USELESS"
    # 1 of 3 = 0.333 >= 0.25 -> USEFUL; with tau 0.5, 0.333 < 0.5 -> USELESS
    assert lexical_judgment(question, "Bates Motel is a series.") == "USEFUL"
    assert lexical_judgment(question, "Bates Motel is a series.", tau=0.5) == "USELESS"


def test_lexical_word_after_window_not_counted() -> None:
    question = "Where was Tyler Bates born musician?"  # 4 content words
    filler = "x" * 398 + " "  # 399 characters of filler
    late = filler + " musician"  # "musician" starts at char 400: outside [0, 400)
    assert lexical_judgment(question, late) == "USELESS"  # 0/4 in window
    early = "musician " + filler  # inside the window: 1/4 = 0.25 -> USEFUL
    assert lexical_judgment(question, early) == "USEFUL"
    assert lexical_judgment(question, late, window=500) == "USEFUL"


def test_lexical_case_insensitive_whole_words() -> None:
    question = "Where was Tyler Bates born musician?"
    assert lexical_judgment(question, "MUSICIAN") == "USEFUL"
    assert lexical_judgment(question, "musicianship and tylers") == "USELESS"  # 0/4


def test_lexical_tool_returned_nothing_is_useless() -> None:
    assert lexical_judgment(QUESTION, None) == "USELESS"
    assert lexical_judgment(QUESTION, "") == "USELESS"
    assert lexical_judgment(QUESTION, "   \n") == "USELESS"


def test_lexical_no_content_words_is_useful() -> None:
    assert lexical_judgment("What is it?", "Anything at all.") == "USEFUL"


# --- random judge -------------------------------------------------------------------


def test_random_judgment_is_deterministic_and_keyed() -> None:
    draws = [random_judgment(7, "q1", i, 0.5) for i in range(1, 41)]
    assert draws == [random_judgment(7, "q1", i, 0.5) for i in range(1, 41)]
    assert draws != [random_judgment(8, "q1", i, 0.5) for i in range(1, 41)]
    assert draws != [random_judgment(7, "q2", i, 0.5) for i in range(1, 41)]


PINNED_SEQUENCE = "XX..XX.X.X..XXXX..XX"


def test_random_judgment_pinned_sequence() -> None:
    # Pinned so that reruns and other machines see the same draws (blake2b, not hash()).
    draws = "".join("X" if random_judgment(1, "demo-001", i, 0.5) == "USELESS" else "."
                    for i in range(1, 21))
    assert draws == PINNED_SEQUENCE


def test_random_judgment_rate() -> None:
    n = 4000
    useless = sum(random_judgment(3, f"q{i}", 1, 0.3) == "USELESS" for i in range(n))
    # binomial sd = sqrt(4000*0.3*0.7) = 29; allow about 4 sd around 1200
    assert 1080 <= useless <= 1320
    assert all(random_judgment(3, "q", i, 0.0) == "USEFUL" for i in range(1, 50))
    assert all(random_judgment(3, "q", i, 1.0) == "USELESS" for i in range(1, 50))


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_random_judgment_rejects_bad_rate(rate: float) -> None:
    with pytest.raises(ValueError):
        random_judgment(1, "q", 1, rate)


def _first_letters(items: list) -> set[str] | None:
    """The characters a parsed pattern's match can begin with (None: unknown or empty)."""
    from re import _constants as sre  # type: ignore[attr-defined]

    for at, (op, arg) in enumerate(items):
        if op is sre.AT:  # \b: zero-width
            continue
        if op is sre.LITERAL:
            return {chr(arg)}
        if op is sre.IN and all(o is sre.LITERAL for o, _ in arg):
            return {chr(a) for _, a in arg}
        if op is sre.SUBPATTERN:
            return _first_letters(list(arg[3]))
        if op is sre.BRANCH:
            letters: set[str] = set()
            for branch in arg[1]:
                first = _first_letters(list(branch))
                if first is None:
                    return None
                letters |= first
            return letters
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            item = _first_letters(list(arg[2]))
            if item is None or arg[0] >= 1:
                return item
            rest = _first_letters(items[at + 1:])  # optional: what follows may begin it
            return None if rest is None else item | rest
        return None
    return None


def test_the_phrase_searches_start_at_every_letter_a_phrase_can_begin_with() -> None:
    import re
    from re import _parser  # type: ignore[attr-defined]

    from core.judges import USEFUL_FIRST, USEFUL_PATTERNS, USELESS_FIRST, USELESS_PATTERNS

    for patterns, first in ((USELESS_PATTERNS, USELESS_FIRST), (USEFUL_PATTERNS, USEFUL_FIRST)):
        for pattern in patterns:
            assert pattern.startswith(r"\b"), pattern
            letters = _first_letters(list(_parser.parse(pattern, re.IGNORECASE)))
            assert letters is not None and {c.lower() for c in letters} <= set(first), pattern


def test_the_phrase_searches_read_as_a_search_per_phrase() -> None:
    import re

    from core.judges import _USEFUL_RE, _USELESS_RE, USEFUL_PATTERNS, USELESS_PATTERNS, _classify

    per_phrase = ([re.compile(p, re.IGNORECASE) for p in USELESS_PATTERNS],
                  [re.compile(p, re.IGNORECASE) for p in USEFUL_PATTERNS])
    texts = ["This result does not mention Arthur's Magazine.", "NOT RELEVANT at all",
             "This paragraph states that Radio City is the article I needed.",
             "Let me think about where to look next.", "It refers to the band, not the film",
             "The answer is 1923.", "According to the page, he was born there.",
             "Lacks any details.", "Still nothing.", "Off-topic page", "I couldn't find it",
             "Now I know the year.", "This confirms the claim.", "", "unrelated", "x" * 300,
             "It mentions useful information.", "Instead of the film, the novel."]
    texts += [t.upper() for t in texts] + [t.lower() for t in texts]
    for text in texts:
        assert _classify(text, _USELESS_RE, _USEFUL_RE) == _classify(text, *per_phrase), text
