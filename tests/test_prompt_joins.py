"""How an arm's prompt pieces are joined, as the paper's released harness joins them.

The permission follows the base prompt after a blank line; the budget, the stated rule
and the call cost each follow on the next line (one paragraph with the permission); the
backup tool and the forced turn's finish-only sentence each after a blank line. The
`[Actions remaining: n]` counter follows the question and each observation after a
blank line.
"""

from __future__ import annotations

import prompts
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.react import EpisodeSetup, observation_message, question_message
from core.regimes import ForeignPool, parse_regime

SYSTEM = prompts.load("system")
PERMIT = prompts.load("permit")
BUDGET = prompts.load("budget").format(budget=8)
RULE = prompts.load("stated_rule").format(k="five")
COST = prompts.load("call_cost").format(price="0.05")
BACKUP = prompts.load("two_source")
FORCED = prompts.load("forced_system")


def test_system_prompt_joins() -> None:
    def system(condition: str, forced: bool = False) -> str:
        return parse_condition(condition).system_prompt(8, forced=forced)

    assert system("none") == SYSTEM
    assert system("permit") == SYSTEM + "\n\n" + PERMIT
    assert system("budget") == SYSTEM + "\n\n" + PERMIT + "\n" + BUDGET
    assert system("stated_rule") == SYSTEM + "\n\n" + PERMIT + "\n" + RULE
    assert system("call_cost") == SYSTEM + "\n\n" + PERMIT + "\n" + BUDGET + "\n" + COST
    assert system("two_source") == SYSTEM + "\n\n" + BACKUP
    assert system("enforced_rule", forced=True) == SYSTEM + "\n\n" + FORCED
    assert system("combo", forced=True) == (SYSTEM + "\n\n" + PERMIT + "\n" + BUDGET
                                            + "\n\n" + FORCED)


def test_counter_follows_the_question_and_observations_after_a_blank_line() -> None:
    questions = demo_questions()
    setup = EpisodeSetup(question=questions[0], condition=parse_condition("budget"),
                         regime=parse_regime("clean"), budget=8, seed=0,
                         pool=ForeignPool(questions))
    question = prompts.load("question").format(question=questions[0].question)
    assert question_message(setup) == question + "\n\n[Actions remaining: 8]"
    shown = prompts.load("observation").format(observation="[T] text.")
    assert observation_message(setup, "[T] text.", 3) == shown + "\n\n[Actions remaining: 5]"
    plain = EpisodeSetup(question=questions[0], condition=parse_condition("none"),
                         regime=parse_regime("clean"), budget=8, seed=0,
                         pool=ForeignPool(questions))
    assert question_message(plain) == question
