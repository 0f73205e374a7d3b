"""What a model is sent at one step of an episode, built on the real episode loop.

`render_request` runs `core.react.run_episode` with a session that records every
call and answers from a script: each acting turn searches again, each side-channel
question is answered USELESS when a forced turn is wanted (USEFUL otherwise), each
decision turn continues. When the loop makes the acting call asked for, the call is
turned into the model backend's own request body (the body an OpenAI-compatible
endpoint is posted, the keyword arguments of Anthropic's messages.create), so what
is printed is what the model would get, wording, sampling, stop strings, max_tokens
and seed included. Nothing is sent anywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import prompts
from core.errors import ConfigError
from core.models.base import EpisodeView, Generation, Message, ModelClient
from core.prompt_set import SEARCH_R1
from core.react import EpisodeSetup, run_episode

USELESS_REPLY = "USELESS"
USEFUL_REPLY = "USEFUL"
CONTINUE_REPLY = "DECISION: CONTINUE"


@dataclass(frozen=True)
class Call:
    """One call the episode loop made, as it handed it to the model session."""

    kind: str
    messages: list[Message]
    max_tokens: int
    stop: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    """Any further keyword arguments of `generate` (passed on to the body builder)."""


class _Reached(Exception):
    """The acting call asked for was made (ends the scripted episode)."""


class RecordingSession:
    """A model session that records each call and answers from a script.

    Args:
        question: the search query of every scripted acting turn.
        prompt_format: "react" or "search_r1": how the scripted replies are written.
        useless: answer side-channel questions USELESS (so rules force turns).
        target: a predicate on (acting-call number from 1, call): True raises `_Reached`
            once the call is recorded.
    """

    def __init__(self, question: str, prompt_format: str, useless: bool,
                 target: Any = None) -> None:
        self.query = " ".join(question.split())[:80]
        self.prompt_format = prompt_format
        self.useless = useless
        self.target = target
        self.calls: list[Call] = []
        self.acts = 0

    def reply(self, kind: str) -> str:
        """The scripted reply to a call of this kind."""
        if kind == "judge":
            return USELESS_REPLY if self.useless else USEFUL_REPLY
        if kind == "decide":
            return CONTINUE_REPLY
        if kind != "act":
            return USEFUL_REPLY
        judged = "useless" if self.useless else "useful"
        if self.prompt_format == SEARCH_R1:
            return (f"<think>The last result was {judged}; I search again.</think>\n"
                    f"<search>{self.query}</search>")
        return (f"Thought: The last observation was {judged}; I search again.\n"
                f"Action: search\nAction Input: {self.query}")

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = (), **extra: Any) -> Generation:
        """Record the call; raise `_Reached` at the target, else reply from the script."""
        call = Call(kind, [dict(m) for m in messages], max_tokens, tuple(stop), dict(extra))
        self.calls.append(call)
        if kind == "act":
            self.acts += 1
            if self.target is not None and self.target(self.acts, call):
                raise _Reached
        return Generation(text=self.reply(kind), input_tokens=0, output_tokens=0)


def is_forced(call: Call, setup: EpisodeSetup) -> bool:
    """Whether an acting call is a forced turn: its last message ends with the forced
    instruction (a later turn keeps it in the history, not in its last message)."""
    instruction = setup.prompts.load("forced_observation")
    return bool(call.messages) and call.messages[-1]["content"].rstrip().endswith(instruction)


async def record_step(setup: EpisodeSetup, step: int, forced: bool) -> tuple[Call, int]:
    """The acting call the loop makes at action `step` (with `forced`: the first forced
    acting call at or after it), and its number.

    Raises:
        ConfigError: the episode ended before such a call (budget spent, no forced turn
            on this arm).
    """
    def target(n: int, call: Call) -> bool:
        return n >= step and (not forced or is_forced(call, setup))

    session = RecordingSession(setup.question.question, setup.prompt_format, forced, target)
    try:
        await run_episode(setup, session, view=view_of(setup))
    except _Reached:
        return session.calls[-1], session.acts
    what = "forced acting turn" if forced else "acting turn"
    raise ConfigError(f"the episode made no {what} at step {step} or after "
                      f"({session.acts} acting turns within budget {setup.budget}"
                      + ("; this arm never forces a turn" if forced and
                         setup.condition.arm.rule is None else "") + ")")


def view_of(setup: EpisodeSetup) -> EpisodeView:
    """The EpisodeView a session of `setup`'s episode is started with."""
    return EpisodeView(question=setup.question, seed=setup.seed, budget=setup.budget,
                       replicate=setup.replicate)


def request_body(client: ModelClient | None, view: EpisodeView, call: Call) -> dict[str, Any]:
    """The backend's request body for a recorded call.

    A backend whose session or client builds its requests (`request`) is asked for the
    body without sending it; any other (a simulated agent, no model) gets the call as
    the loop handed it over: messages, max_tokens and stop.
    """
    plain = {"messages": call.messages, "max_tokens": call.max_tokens, "stop": list(call.stop)}
    if client is None:
        return plain
    session = client.start(view)
    build = getattr(session, "request", None)
    if callable(build):
        return dict(build(call.messages, call.kind, call.max_tokens, call.stop))
    build = getattr(client, "request", None)
    if callable(build):
        try:
            return dict(build(call.messages, call.kind, call.max_tokens, call.stop, view))
        except TypeError:  # a builder that takes no view
            return dict(build(call.messages, call.kind, call.max_tokens, call.stop))
    return plain


def render_request(setup: EpisodeSetup, client: ModelClient | None, step: int, forced: bool,
                   pack: dict[str, str] | None) -> dict[str, Any]:
    """What the model gets at action `step` of `setup`'s episode, with prompt pack `pack`.

    Returns:
        {"step", "forced", "kind", "body"}: the acting call's number, whether it is a
        forced turn, its kind and the backend's request body.
    """
    with prompts.using(pack):  # asyncio.run's task copies this context
        call, n = asyncio.run(record_step(setup, step, forced))
        body = request_body(client, view_of(setup), call)
        return {"step": n, "forced": is_forced(call, setup), "kind": call.kind, "body": body}
