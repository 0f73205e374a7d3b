"""Prompt assembly and the ReAct episode loop (SPEC §5, §6, §7, §8.1).

The loop is pure apart from the model session it is given: it builds the acting
conversation, runs tools against the question's knowledge base, injects failed
observations per the regime, asks side-channel judgments on forks that share the
acting conversation's exact prefix, enforces rules, and returns an EpisodeResult.
Persistence is the caller's (an optional `on_step` callback sees each step).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import prompts
from core.conditions import Condition
from core.data import Question
from core.episode import EpisodeResult, Step, utc_now
from core.errors import ConfigError, ModelError
from core.judges import lexical_judgment, parse_side_channel, random_judgment, read_stated_judgment
from core.kb import KnowledgeBase, ToolState, observation_source, paragraph_observation
from core.kb import strip_supporting_facts
from core.models.base import EpisodeView, Generation, Message, ModelSession, ObservationLabel
from core.parser import parse_reply
from core.prompt_set import SEARCH_R1, PromptSet
from core.regimes import ForeignPool, Regime
from core.scoring import score_for_task

USELESS = "USELESS"
ACT_MAX_TOKENS = 512
JUDGE_MAX_TOKENS = 8
STOP = ("Observation:", "\nObservation")
STOP_SEARCH_R1 = ("</search>", "</backup_search>", "<information>")
"""Search-R1 stops after its query (results come back in <information>)."""


@dataclass(frozen=True)
class EpisodeSetup:
    """Everything that defines one episode besides the model session."""

    question: Question
    condition: Condition
    regime: Regime
    budget: int
    seed: int
    pool: ForeignPool
    always_judge: bool = False
    act_max_tokens: int = ACT_MAX_TOKENS
    prompt_format: str = "react"

    @property
    def prompts(self) -> PromptSet:
        """The prompt files for this question's task in the model's prompt format."""
        return PromptSet(self.question.task, self.prompt_format)

    @property
    def stop(self) -> tuple[str, ...]:
        """Stop sequences of acting turns in the model's prompt format."""
        return STOP_SEARCH_R1 if self.prompt_format == SEARCH_R1 else STOP


def counter(remaining: int) -> str:
    """The `[Actions remaining: n]` line of budget arms."""
    return prompts.load("counter").format(remaining=remaining)


def question_message(setup: EpisodeSetup) -> str:
    """The first user message: the question (and the counter on budget arms)."""
    text = setup.prompts.load("question").format(question=setup.question.question)
    if setup.condition.arm.budget:
        text += "\n" + counter(setup.budget)
    return text


def observation_message(setup: EpisodeSetup, observation: str, t: int) -> str:
    """The user message carrying the observation of action t."""
    text = setup.prompts.load("observation").format(observation=observation)
    if setup.condition.arm.budget:
        text += "\n" + counter(setup.budget - t)
    return text


def side_channel_fork(messages: Sequence[Message],
                      prompt_set: PromptSet = PromptSet()) -> list[Message]:
    """The scratch copy for the side-channel question: the acting prefix plus one turn."""
    return [*messages, {"role": "user", "content": prompt_set.load("side_channel")}]


def forced_messages(setup: EpisodeSetup, messages: Sequence[Message]) -> list[Message]:
    """Acting messages for a forced turn: finish-only system prompt, instruction at the end."""
    out = [dict(m) for m in messages]
    out[0] = {"role": "system",
              "content": setup.condition.system_prompt(setup.budget, True, setup.prompts)}
    last = out[-1]
    last["content"] = last["content"] + "\n" + setup.prompts.load("forced_observation")
    return out


class _Run:
    """Mutable state of one episode while it runs."""

    def __init__(self, setup: EpisodeSetup, session: ModelSession,
                 on_step: Callable[[Step], None] | None, view: EpisodeView | None) -> None:
        self.setup = setup
        self.session = session
        self.on_step = on_step
        q = setup.question
        pages = strip_supporting_facts(q) if setup.regime.answerless else q.paragraphs
        self.kb = KnowledgeBase(pages)
        self.tools = ToolState()
        self.view = view or EpisodeView(question=q, seed=setup.seed, budget=setup.budget)
        self.result = EpisodeResult(question_id=q.id, started_at=utc_now())
        self.messages: list[Message] = [
            {"role": "system",
             "content": setup.condition.system_prompt(setup.budget, prompt_set=setup.prompts)},
            {"role": "user", "content": question_message(setup)},
        ]
        self.streak = 0
        self.forced_next = False

    def account(self, gen: Generation) -> None:
        r = self.result
        r.input_tokens += gen.input_tokens
        r.output_tokens += gen.output_tokens
        r.cache_read_tokens += gen.cache_read_tokens
        r.cache_write_tokens += gen.cache_write_tokens
        r.reasoning_tokens += gen.reasoning_tokens
        r.cost_usd += gen.cost_usd

    def emit(self, step: Step) -> None:
        self.result.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def observe(self, step: Step) -> str:
        """Run the tool of `step`, inject a failure if the regime says so."""
        setup, q = self.setup, self.setup.question
        if step.action == "lookup":
            real = self.tools.lookup(self.kb, step.argument or "")
        else:
            real = self.tools.search(self.kb, step.argument or "")
        i = len(self.view.observations) + 1
        step.obs_index = i
        if setup.regime.fails(i):
            if setup.regime.plausible:
                p, page = setup.pool.draw_own_distractor(setup.seed, q, i)
                step.obs_source, step.obs_ref = "distractor", f"{q.id}#{p}"
            else:
                fid, p, page = setup.pool.draw(setup.seed, q, i)
                step.obs_source, step.obs_ref = "foreign", f"{fid}#{p}"
            step.obs_failed = True
            text = paragraph_observation(page)
        else:
            step.obs_failed = False
            step.obs_source = observation_source(q, real.paragraph)
            text = real.text
            if real.paragraph is not None and step.action != "lookup":
                step.obs_ref = f"{q.id}#{real.paragraph}"
            else:
                step.obs_text = text
        step.shown = text
        self.view.observations.append(ObservationLabel(i, bool(step.obs_failed),
                                                       step.obs_source or "none", text))
        return text

    async def judge(self, step: Step, observation: str | None) -> None:
        """Side-channel judgment and rule signal for the observation of `step`."""
        setup, cond = self.setup, self.setup.condition
        if cond.asks_judgments or setup.always_judge:
            gen = await self.session.generate(
                side_channel_fork(self.messages, setup.prompts), kind="judge",
                max_tokens=JUDGE_MAX_TOKENS
            )
            self.account(gen)
            self.result.extra_calls += 1
            step.judgment_raw = gen.text
            step.judgment = parse_side_channel(gen.text)
            step.judgment_source = "side_channel"
        rule = cond.arm.rule
        signal: str | None
        if rule == "random":
            signal = random_judgment(setup.seed, setup.question.id, step.obs_index or 0,
                                     _rate(cond))
        elif rule == "lexical":
            signal = lexical_judgment(setup.question.question, observation, cond.tau)
        else:
            signal = step.judgment
        if rule is not None:
            step.rule_signal = signal
        self.streak = self.streak + 1 if signal == USELESS else 0
        step.streak = self.streak
        self.forced_next = rule is not None and self.streak >= cond.k

    async def act(self, t: int, forced: bool) -> Step:
        """Generate and parse action t."""
        messages = forced_messages(self.setup, self.messages) if forced else self.messages
        gen = await self.session.generate(
            messages, kind="act", max_tokens=self.setup.act_max_tokens, stop=self.setup.stop
        )
        self.account(gen)
        text = gen.text
        if self.setup.prompt_format == SEARCH_R1 and gen.reasoning:
            # Search-R1's <think> is its thought and part of the trajectory it was trained
            # on: it stays in the reply (and the history) and the parser reads it
            text = f"<think>{gen.reasoning}</think>\n{text}"
        step = Step(t=t, raw=text, forced=forced, input_tokens=gen.input_tokens,
                    output_tokens=gen.output_tokens, latency_ms=gen.latency_ms,
                    reasoning=gen.reasoning or None, reasoning_tokens=gen.reasoning_tokens)
        parsed = parse_reply(text, self.setup.prompt_format)
        if parsed is None:
            step.format_failure = True
        else:
            step.thought, step.action, step.argument = parsed.thought, parsed.name, parsed.argument
            step.decision = parsed.decision
        return step

    async def run(self) -> EpisodeResult:
        setup, r = self.setup, self.result
        last_obs: Step | None = None
        reminded = False
        for t in range(1, setup.budget + 1):
            forced = self.forced_next
            step = await self.act(t, forced)
            r.forced_turns += forced
            if last_obs is not None and step.thought:
                last_obs.stated_judgment = read_stated_judgment(step.thought)
            self.messages.append({"role": "assistant", "content": step.raw})
            if step.format_failure:
                r.format_failures += 1
                self.emit(step)
                if reminded:
                    r.end_reason = "format_failure"
                    return r
                reminded = True
                self.messages.append({"role": "user",
                                      "content": setup.prompts.load("format_reminder")})
                continue
            reminded = False
            if step.action == "finish":
                self.emit(step)
                r.answered, r.answer, r.answer_action = True, step.argument or "", t
                r.end_reason = "finish"
                return r
            if forced:
                step.refused = True
                r.refused_calls += 1
                self.emit(step)
                text = setup.prompts.load("forced_observation")
                if setup.condition.arm.budget:
                    text += "\n" + counter(setup.budget - t)
                self.messages.append({"role": "user", "content": text})
                continue
            observation = self.observe(step)
            r.tool_calls += 1
            self.messages.append(
                {"role": "user", "content": observation_message(setup, observation, t)}
            )
            if t < setup.budget:
                await self.judge(step, observation if step.obs_source != "none" else None)
                if setup.condition.arm.decide:
                    decide = setup.prompts.load("decide")
                    self.messages.append({"role": "user", "content": decide.format(
                        judgment=step.judgment or "UNCLEAR", streak=self.streak)})
            self.emit(step)
            last_obs = step
        r.end_reason = "budget"
        return r


def _rate(condition: Condition) -> float:
    """random_rule's USELESS rate; never a default (lab enqueue resolves it from lab.db).

    Raises:
        ConfigError: the rate was never resolved.
    """
    if condition.rate is None:
        raise ConfigError(f"condition {condition.name}: no rate; give one (e.g. "
                          f"random_rule:rate=0.6) or enqueue it, which takes the model's "
                          f"dev-set USELESS rate from lab.db")
    return condition.rate


async def run_episode(setup: EpisodeSetup, session: ModelSession,
                      on_step: Callable[[Step], None] | None = None,
                      view: EpisodeView | None = None) -> EpisodeResult:
    """Run one episode to finish, budget end, format failure or model error.

    Args:
        setup: question, condition, regime, budget, seed and the foreign pool.
        session: the model session for this episode.
        on_step: called with each step as soon as it is complete (live tail).
        view: the EpisodeView the session was started with; the loop appends each
            observation's design label to it.

    Returns:
        The finished EpisodeResult with the sha256 of each prompt file it used; a
        model error is recorded in `error` and `end_reason` = "error", never raised.

    Raises:
        ConfigError: random_rule without a resolved rate (before any model call).
    """
    if setup.condition.arm.rule == "random":
        _rate(setup.condition)
    start = time.perf_counter()
    with prompts.recording() as used:
        run = _Run(setup, session, on_step, view)
        try:
            result = await run.run()
        except ModelError as exc:
            result = run.result
            result.end_reason, result.error = "error", f"{exc.reason}: {exc}"
    result.prompts = used.hashes()
    result.wall_ms = (time.perf_counter() - start) * 1000
    result.finished_at = utc_now()
    if result.answered and result.error is None:
        s = score_for_task(result.answer, setup.question.answer, setup.question.task)
        result.em, result.f1, result.correct, result.placeholder = (
            s.em, s.f1, s.correct, s.placeholder)
    return result
