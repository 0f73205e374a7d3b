"""A toy model backend, written as CONTRIBUTING.md's recipe for a backend says: one
module (its configuration dataclass and its client) and one `register` line.

An oracle that answers every question right after `searches` searches, computed in
this process. tests/test_backend_recipe.py registers it and runs episodes through lab.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from core.models.base import EpisodeView, Generation, Message
from core.models.declared import BackendConfig, check_fields, concurrency_setting, setting


@dataclass(frozen=True)
class OracleConfig(BackendConfig):
    """An `backend = "oracle"` table.

    Attributes:
        searches: searches before the answer (required).
        hedge: words put before the answer ("" for none).
        concurrency: concurrent episodes allowed.
    """

    searches: int = setting(ge=0, le=8)
    hedge: str = setting("")
    concurrency: int = concurrency_setting(8)

    in_process: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def detail(self) -> str:
        """What `lab models` prints."""
        return f"answers after {self.searches} searches"


class OracleClient:
    """The oracle's client: `Client(name, config)`, `start` a session per episode."""

    def __init__(self, name: str, config: OracleConfig) -> None:
        self.name = name
        self.config = config
        self.concurrency = config.concurrency

    def start(self, view: EpisodeView) -> OracleSession:
        """A session that knows the episode's question."""
        return OracleSession(self.config, view)


class OracleSession:
    """Searches `searches` times, then finishes with the question's answer."""

    def __init__(self, config: OracleConfig, view: EpisodeView) -> None:
        self.config = config
        self.view = view
        self.acts = 0

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = ()) -> Generation:
        """The next acting turn (a judgment fork says USELESS)."""
        if kind == "judge":
            return Generation(text="USELESS")
        self.acts += 1
        question = self.view.question
        if self.acts <= self.config.searches:
            text = f"Thought: look it up\nAction: search\nAction Input: {question.question}"
        else:
            answer = f"{self.config.hedge} {question.answer}".strip()
            text = f"Thought: I know it\nAction: finish\nAction Input: {answer}"
        return Generation(text=text, input_tokens=10, output_tokens=5)
