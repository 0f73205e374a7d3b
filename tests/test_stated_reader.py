"""Agreement of the stated-judgment reader with the reader the main paper's authors
released (the keyword reader on the first two sentences, App. D.3).

tests/data/stated_thoughts.jsonl holds realistic thoughts written for this test, each
with the label the authors' reader gives it ("useless", "useful" or "none"), worked out
by hand from that reader's rules, and the rule that decides it ("why"). The set covers
every useless and useful phrase family, the order of the checks (a useless phrase wins),
the two-sentence window, and the reader's quirks that a paraphrase would get "right"
and so disagree with the paper ("can't find" and "cannot find" are no phrase, a
typographic apostrophe is not "n't", "United States" reads as a report). The reader
searches each kind's phrases as one alternation; a property test checks it against a
search per phrase (the oracle) on texts made of the phrases' words.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.judges import leading_sentences, read_stated_judgment
from tests.oracles.judges import StatedJudgmentReader

THOUGHTS = Path(__file__).parent / "data" / "stated_thoughts.jsonl"


def labelled() -> list[dict[str, str]]:
    return [json.loads(line) for line in THOUGHTS.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def test_the_reader_agrees_with_the_authors_reader_on_every_labelled_thought() -> None:
    rows = labelled()
    assert len(rows) >= 50
    assert {r["label"] for r in rows} == {"useless", "useful", "none"}
    disagreements = [(r["thought"], r["label"], read_stated_judgment(r["thought"]) or "none")
                     for r in rows if (read_stated_judgment(r["thought"]) or "none") != r["label"]]
    agreement = 1 - len(disagreements) / len(rows)
    print(f"stated reader vs the authors' reader: {len(rows) - len(disagreements)}/"
          f"{len(rows)} agree ({agreement:.1%})")
    assert disagreements == []


def test_the_default_reader_object_is_the_function() -> None:
    reader = StatedJudgmentReader()
    for row in labelled():
        assert reader(row["thought"]) == read_stated_judgment(row["thought"])


def test_two_sentences_are_read_and_a_line_break_does_not_end_one() -> None:
    assert leading_sentences("One. Two! Three? Four.") == "One. Two!"
    assert leading_sentences("  First line\nsecond line. Next.  ", 1) == \
        "First line\nsecond line."
    assert leading_sentences(None) == ""
    assert read_stated_judgment("Okay. Next. It is irrelevant.") is None
    assert StatedJudgmentReader(n_sentences=3).read("Okay. Next. It is irrelevant.") == \
        "useless"


WORDS = ("not", "no", "is", "was", "are", "does", "didn't", "doesn't", "do", "has", "hasn't",
         "relevant", "related", "useful", "mention", "mentions", "provide", "information",
         "about", "refers", "to", "the", "a", "answer", "confirms", "that", "says", "it",
         "this", "now", "i", "know", "according", "instead", "of", "rather", "than",
         "wrong", "article", "off-topic", "lacks", "details", "unable", "find", "could",
         "can't", "still", "nothing", "on", "returning", "what", "looking", "for", "we",
         "page", "lists", "irrelevant", "yet", "found", "directly", "seem", "to")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from([".", ",", "!", "?", "\n"]),
                          st.text(max_size=6)), max_size=30))
def test_the_reader_is_each_phrase_searched_alone(pieces: list[str]) -> None:
    thought = " ".join(pieces)
    assert read_stated_judgment(thought) == StatedJudgmentReader().read(thought)
