"""A scripted model for tests: replies come from lists, every call is recorded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.models.base import EpisodeView, Generation, Message


@dataclass
class ScriptedClient:
    """Replies to acting turns from `acts` and to judgment forks from `judgments`.

    When a list runs out, acting turns finish with "unknown" and judgments say USELESS.
    Every call's (kind, messages) is kept in `calls` so tests can inspect prompts.
    """

    acts: Sequence[str] = ()
    judgments: Sequence[str] = ()
    name: str = "scripted"
    concurrency: int = 1
    calls: list[tuple[str, list[Message]]] = field(default_factory=list)

    def start(self, view: EpisodeView) -> ScriptedSession:
        """Open a session that replays the scripts from the start."""
        return ScriptedSession(self, list(self.acts), list(self.judgments))


class ScriptedSession:
    """One episode of a ScriptedClient."""

    def __init__(self, client: ScriptedClient, acts: list[str], judgments: list[str]) -> None:
        self.client = client
        self.acts = acts
        self.judgments = judgments

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = ()) -> Generation:
        """Pop the next scripted reply of this kind."""
        self.client.calls.append((kind, [dict(m) for m in messages]))
        if kind == "judge":
            text = self.judgments.pop(0) if self.judgments else "USELESS"
        else:
            text = (self.acts.pop(0) if self.acts
                    else "Thought: done\nAction: finish\nAction Input: unknown")
        return Generation(text=text, input_tokens=10, output_tokens=5)
