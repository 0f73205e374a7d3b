"""Small builders shared by tests (invented content only)."""

from __future__ import annotations

from core.data import Paragraph, Question


def make_question(qid: str = "q1", answer: str = "Lake Orrin") -> Question:
    """A two-hop question with 2 gold and 8 distractor pages."""
    gold = (
        Paragraph("Vellmore Quartet", ("The Vellmore Quartet is a string band.",
                                       "It was founded by Ada Brun.")),
        Paragraph("Ada Brun", ("Ada Brun is a violinist.", f"She was born in {answer}.")),
    )
    distractors = tuple(
        Paragraph(f"Page {qid} {i}", (f"Page {i} is about the town of Marrow {i}.",
                                      "It has a river and a mill."))
        for i in range(8)
    )
    return Question(
        id=qid, dataset="unit", question="Where was the founder of the Vellmore Quartet born?",
        answer=answer, type="bridge", level="hard", paragraphs=gold + distractors,
        supporting_facts=(("Vellmore Quartet", 1), ("Ada Brun", 1)),
    )


def make_pool(n: int = 5) -> list[Question]:
    """n questions with distinct ids and pages."""
    return [make_question(f"q{i}", answer=f"Lake {i}") for i in range(1, n + 1)]
