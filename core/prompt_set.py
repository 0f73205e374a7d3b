"""Which prompt file an episode uses for each piece: by task and by prompt format.

The one place that maps (task, prompt format, piece) to a file under prompts/.
HotpotQA in the ReAct format uses the base files (system, question, …). FEVER
replaces the pieces that speak of the question or the answer with prompts/fever_*
(paper App. B.1: "Verify this claim", the verdict line, "claim"/"verdict" in the
judgment, answer-now and action prompts); the budget, cost and counter pieces stay.
The Search-R1 format (registry `prompt_format = "search_r1"`) replaces the pieces
that name the action syntax with prompts/search_r1_* (its system prompt has a FEVER
version too); every other piece follows the task.
"""

from __future__ import annotations

from dataclasses import dataclass

import prompts
from core.data import TASK_FEVER, TASK_HOTPOTQA, TASKS
from core.errors import ConfigError

REACT = "react"
SEARCH_R1 = "search_r1"
PROMPT_FORMATS: tuple[str, ...] = (REACT, SEARCH_R1)
"""Values of a model's `prompt_format` (lab.toml)."""

FEVER_PIECES = frozenset({"system", "question", "permit", "stated_rule", "side_channel",
                          "forced_observation", "decide", "decide_act", "format_reminder"})
"""Pieces with a prompts/fever_<piece>.txt version."""
SEARCH_R1_PIECES = frozenset({"system", "observation", "format_reminder", "forced_observation",
                              "forced_system", "permit", "stated_rule", "budget",
                              "two_source", "switch_notice", "decide_act"})
"""Pieces with a prompts/search_r1_<piece>.txt version."""
SEARCH_R1_FEVER_PIECES = frozenset({"system"})
"""Search-R1 pieces with a prompts/search_r1_fever_<piece>.txt version."""


@dataclass(frozen=True)
class PromptSet:
    """The prompt files of one task in one prompt format.

    Attributes:
        task: "hotpotqa" or "fever" (a question's `task`).
        format: "react" or "search_r1".
    """

    task: str = TASK_HOTPOTQA
    format: str = REACT

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ConfigError(f"unknown task {self.task!r}; tasks: {', '.join(TASKS)}")
        if self.format not in PROMPT_FORMATS:
            raise ConfigError(f"unknown prompt_format {self.format!r}; "
                              f"one of: {', '.join(PROMPT_FORMATS)}")

    def name(self, piece: str) -> str:
        """The prompt file stem used for `piece` (e.g. "fever_system" for FEVER's system).

        Args:
            piece: the base file stem, e.g. "system", "side_channel", "budget".

        Returns:
            The stem to load; `piece` itself when neither task nor format replaces it.
        """
        fever = self.task == TASK_FEVER
        if self.format == SEARCH_R1 and piece in SEARCH_R1_PIECES:
            return f"search_r1_fever_{piece}" if fever and piece in SEARCH_R1_FEVER_PIECES \
                else f"search_r1_{piece}"
        if fever and piece in FEVER_PIECES:
            return f"fever_{piece}"
        return piece

    def load(self, piece: str) -> str:
        """The text of `piece` in this set (see `prompts.load`)."""
        return prompts.load(self.name(piece))
