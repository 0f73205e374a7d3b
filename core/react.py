"""Prompt assembly and the ReAct episode loop (docs/conditions.md, docs/prompts.md).

The loop is pure apart from the model session it is given: it builds the acting
conversation, runs tools against the question's knowledge base, injects failed
observations per the regime, asks side-channel judgments on forks that share the
acting conversation's exact prefix, enforces rules, and returns an EpisodeResult.
Persistence is the caller's (an optional `on_step` callback sees each step).

The protocol is the main paper's (App. B.1) and, where the paper is silent, that of
its authors' released harness; what lab can do differently is a named condition
option (docs/conditions.md, "Protocol options"):

- Forced turn (rule arms, once the run reaches k): the system message is replaced
  once by the arm's prompt plus the finish-only sentence, and the forced-finish
  instruction is appended, after a blank line, to the latest observation; both stay
  in the history for the rest of the episode, and neither is ever added twice. A
  search or lookup proposed in a forced turn is executed (its observation returned,
  judged, and the next turn forced again while the run stays at k or above);
  `forced_tool_call=refuse` answers it with the instruction instead and forces every
  later turn.
- Format failure: a turn with no readable action ends the episode
  (end_reason "format_failure"); `format_retries=n` sends a reminder instead, up to
  n failed turns in a row. A failed turn uses up an action.
- A turn whose generation stopped at max_tokens (Generation.finish "length") ends
  the episode as "generation_truncated", a refused one as "refusal": the step keeps
  its raw text, has no action, is neither a format failure nor ever an answer. A
  side-channel reply cut at JUDGE_MAX_TOKENS is the judgment's normal limit.
- decide: after each observation (before the last action) the side-channel question
  and the parsed judgment (UNPARSED when the reply did not parse) enter the history
  as a user and an assistant turn; the decision prompt (judgment and useless run) is
  answered in its own turn (DECIDE_MAX_TOKENS, no stop strings), whose last
  `DECISION:` line is the decision (stored on the next acting step); then a user
  message asks to act consistently with it, and the normal acting turn follows. A
  decision turn cut at its limit is kept as it is (the harness does the same); a
  refused one ends the episode.
- Search-R1 (`prompt_format = "search_r1"`): no system message; the arm's prompt and
  the question share the first user message, as the model was trained.

Stated-judgment rule (stated_judgment_rule, stated_judgment_combo):
the first parsed thought after an observation is read by
`core.judges.read_stated_judgment`; the run counts useless +1, useful resets it to
0, no judgment leaves it unchanged. No judgment call is made. When the run has
reached k and the turn proposes a tool call, that turn is stored with
``discarded`` set (same t, never added to the history, one extra call) and action t
is asked again as a forced turn. From then on every turn that proposes a tool call
is discarded and re-asked the same way (the forced lines stay in the history); a
tool call in the re-asked turn is executed (`forced_tool_call=refuse`: refused, and
every later turn is forced).

Two sources (two_source, switch_rule): backup_search searches an intact
copy of the question's pages and never fails. The failure schedule applies to the
primary only: its index i counts the primary's results (search, and lookups on an
article the primary returned), so interleaved backup results neither advance nor
reset a regime's schedule; failed draws are keyed by that index. ``tool_source``
records "primary" or "backup" per tool call. switch_rule asks the side-channel
question after each primary result (not after backup results); after k
consecutive USELESS replies it switches the primary off, appends
prompts/switch_notice.txt to that observation, and refuses every later primary
call (the notice is the reply). In other arms backup_search is a format failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import prompts
from core.conditions import REFUSE, Condition
from core.data import Question
from core.episode import EpisodeResult, Step, utc_now
from core.errors import ConfigError, ModelError
from core.judges import lexical_judgment, parse_side_channel, random_judgment, read_stated_judgment
from core.kb import (
    BACKUP,
    PRIMARY,
    Sources,
    knowledge_base,
    observation_source,
    paragraph_observation,
)
from core.models.base import (
    END_REFUSAL,
    END_TRUNCATED,
    FINISH_LENGTH,
    FINISH_REFUSAL,
    EpisodeView,
    Generation,
    Message,
    ModelSession,
    ObservationLabel,
)
from core.parser import parse_decision, parse_reply
from core.prompt_set import SEARCH_R1, PromptSet
from core.regimes import ForeignPool, Regime
from core.scoring import score_for_task

USELESS = "USELESS"
ACT_MAX_TOKENS = 512
"""Acting max_tokens when the setup does not say (runs take the model spec's)."""
JUDGE_MAX_TOKENS = 8
"""The side-channel judgment's limit (the main paper, App. B.1: at most 8 tokens); a
reply cut there is normal, never an episode end."""
DECIDE_MAX_TOKENS = 160
"""The decide arm's decision turn (the authors' harness: 160 tokens, no stop strings)."""
UNPARSED = "UNPARSED"
"""What the decide arm writes into the history for a judgment that did not parse."""
STOP = ("Observation:", "observation:")
"""Stop strings of a non-thinking acting turn, as the authors' harness sends them."""
STOP_SEARCH_R1 = ("</search>", "</backup_search>", "<information>")
"""Search-R1 stops after its query (results come back in <information>)."""
TOOLS = ("search", "lookup", "backup_search")
STATED_SIGNAL = {"useless": USELESS, "useful": "USEFUL"}
"""The stated reading as the rule signal, spelled like the side channel's replies."""


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
    replicate: int = 0
    """The cell's replicate; a served model mixes it into its sampling seeds."""

    @property
    def prompts(self) -> PromptSet:
        """The prompt files for this question's task in the model's prompt format."""
        return _prompt_set(self.question.task, self.prompt_format)

    @property
    def stop(self) -> tuple[str, ...]:
        """Stop sequences of acting turns in the model's prompt format."""
        return STOP_SEARCH_R1 if self.prompt_format == SEARCH_R1 else STOP


@lru_cache(maxsize=64)
def _prompt_set(task: str, prompt_format: str) -> PromptSet:
    """The (immutable) PromptSet of a task and format, built and checked once: an
    episode asks for it a dozen times, and each build re-ran its checks."""
    return PromptSet(task, prompt_format)


def counter(remaining: int) -> str:
    """The `[Actions remaining: n]` line of budget arms."""
    return prompts.load("counter").format(remaining=remaining)


def question_message(setup: EpisodeSetup) -> str:
    """The first user message: the question (and the counter on budget arms)."""
    text = setup.prompts.load("question").format(question=setup.question.question)
    if setup.condition.arm.budget:
        text += "\n\n" + counter(setup.budget)
    return text


def observation_message(setup: EpisodeSetup, observation: str, t: int) -> str:
    """The user message carrying the observation of action t."""
    text = setup.prompts.load("observation").format(observation=observation)
    if setup.condition.arm.budget:
        text += "\n\n" + counter(setup.budget - t)
    return text


def side_channel_fork(messages: Sequence[Message],
                      prompt_set: PromptSet = PromptSet()) -> list[Message]:
    """The scratch copy for the side-channel question: the acting prefix plus one turn."""
    return [*messages, {"role": "user", "content": prompt_set.load("side_channel")}]


def opening_messages(setup: EpisodeSetup) -> list[Message]:
    """The conversation before action 1.

    ReAct: the arm's system prompt, then the question as the first user message.
    Search-R1 was trained with its instructions and the question in one user message
    and no system message (the chat template then adds the model's default one), so
    there the arm's prompt and the question share the first user message, a blank
    line apart, and no system message is sent.
    """
    system = setup.condition.system_prompt(setup.budget, prompt_set=setup.prompts)
    question = question_message(setup)
    if setup.prompt_format == SEARCH_R1:
        return [{"role": "user", "content": f"{system}\n\n{question}"}]
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def forced_messages(setup: EpisodeSetup, messages: Sequence[Message]) -> list[Message]:
    """`messages` as a forced turn sees them (a new list; `messages` is left as it is).

    The system prompt gains the finish-only sentence (ReAct only: Search-R1 has no
    system message) and the last message the forced-finish instruction after a blank
    line, each unless it is already there: the episode loop keeps both in the history
    from the first forced turn on (the main paper, App. B.1; the authors' harness), so
    neither is ever added twice.
    """
    out = [dict(m) for m in messages]
    if setup.prompt_format != SEARCH_R1 and out and out[0]["role"] == "system":
        system = setup.condition.system_prompt(setup.budget, True, setup.prompts)
        if out[0]["content"] != system:
            out[0] = {"role": "system", "content": system}
    instruction = setup.prompts.load("forced_observation")
    if out and instruction not in out[-1]["content"]:
        out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{instruction}"}
    return out


class _Run:
    """Mutable state of one episode while it runs."""

    def __init__(self, setup: EpisodeSetup, session: ModelSession,
                 on_step: Callable[[Step], None] | None, view: EpisodeView | None) -> None:
        self.setup = setup
        self.session = session
        self.on_step = on_step
        q = setup.question
        backup = knowledge_base(q) if setup.condition.arm.two_source else None
        self.sources = Sources(knowledge_base(q, setup.regime.answerless), backup)
        self.primary_results = 0
        self.primary_off = False
        self.view = view or EpisodeView(question=q, seed=setup.seed, budget=setup.budget,
                                        replicate=setup.replicate)
        self.result = EpisodeResult(question_id=q.id, started_at=utc_now())
        self.messages: list[Message] = opening_messages(setup)
        self.streak = 0
        self.forced_next = False
        self.fired = False  # the stated-judgment rule has fired (execute: re-ask each tool call)
        self.decision: tuple[str | None, str] | None = None  # decide: (decision, raw reply)
        self.holds = setup.condition.arm.rule == "stated"
        self.held: Step | None = None

    def account(self, gen: Generation) -> None:
        r = self.result
        r.input_tokens += gen.input_tokens
        r.output_tokens += gen.output_tokens
        r.cache_read_tokens += gen.cache_read_tokens
        r.cache_write_tokens += gen.cache_write_tokens
        r.reasoning_tokens += gen.reasoning_tokens
        r.cost_usd += gen.cost_usd

    def emit(self, step: Step) -> None:
        """Record a step and pass it to `on_step`. On a stated-judgment arm an
        observation's step is passed on when the next step is emitted (or the episode
        ends): its stated judgment, and the rule's streak, come from the next thought."""
        self.result.steps.append(step)
        if self.on_step is None:
            return
        self.release()
        if self.holds and step.obs_index is not None:
            self.held = step
        else:
            self.on_step(step)

    def release(self) -> None:
        """Pass a held step to `on_step`."""
        if self.held is not None and self.on_step is not None:
            step, self.held = self.held, None
            self.on_step(step)

    def observe(self, step: Step) -> str:
        """Run the tool of `step`, inject a failure if the regime says so."""
        setup, q = self.setup, self.setup.question
        source = self.sources.source_of(step.action or "search")
        real = self.sources.call(step.action or "search", step.argument or "")
        i = len(self.view.observations) + 1
        step.obs_index = i
        if setup.condition.arm.two_source:
            step.tool_source = source
        fails = False
        if source == PRIMARY:
            self.primary_results += 1
            fails = setup.regime.fails(self.primary_results)
        if fails:
            j = self.primary_results  # the schedule's index keys the draw
            if setup.regime.plausible:
                p, page = setup.pool.draw_own_distractor(setup.seed, q, j)
                step.obs_source, step.obs_ref = "distractor", f"{q.id}#{p}"
            else:
                fid, p, page = setup.pool.draw(setup.seed, q, j)
                step.obs_source, step.obs_ref = "foreign", f"{fid}#{p}"
            step.obs_failed = True
            text = paragraph_observation(page)
        else:
            step.obs_failed = False
            step.obs_source = observation_source(q, real.paragraph)
            text = real.text
            if real.paragraph is not None and step.action != "lookup":
                step.obs_ref = f"{q.id}#{real.paragraph}"
                if source == BACKUP and setup.regime.answerless:
                    step.obs_text = text  # the intact page: obs_ref alone would read stripped
            else:
                step.obs_text = text
        step.shown = text
        self.view.observations.append(ObservationLabel(i, bool(step.obs_failed),
                                                       step.obs_source or "none", text, source))
        return text

    def refuses(self, step: Step) -> bool:
        """Whether switch_rule has switched off the source this tool call reads."""
        return self.primary_off and self.sources.source_of(step.action or "") == PRIMARY

    def read_stated(self, obs_step: Step, thought: str) -> None:
        """Store the stated judgment of `obs_step` read from the next thought; on the
        stated-judgment arms, update the rule's run (useless +1, useful 0, none: kept)."""
        judgment = read_stated_judgment(thought)
        obs_step.stated_judgment = judgment
        if self.setup.condition.arm.rule != "stated":
            return
        obs_step.rule_signal = STATED_SIGNAL.get(judgment or "")
        if judgment == "useless":
            self.streak += 1
        elif judgment == "useful":
            self.streak = 0
        obs_step.streak = self.streak

    async def judge(self, step: Step, observation: str | None) -> None:
        """Side-channel judgment and rule signal for the observation of `step`."""
        setup, cond = self.setup, self.setup.condition
        switch_asks = (cond.judges_primary and step.tool_source == PRIMARY
                       and not self.primary_off)
        if cond.asks_judgments or setup.always_judge or switch_asks:
            gen = await self.session.generate(
                side_channel_fork(self.messages, setup.prompts), kind="judge",
                max_tokens=JUDGE_MAX_TOKENS
            )
            self.account(gen)
            self.result.extra_calls += 1
            step.judgment_raw = gen.text
            step.judgment = parse_side_channel(gen.text, cond.judge_parse)
            step.judgment_source = "side_channel"
        rule = cond.arm.rule
        if rule == "stated":
            return  # its run is read from the next thought (read_stated)
        if cond.arm.switch:
            if switch_asks:
                step.rule_signal = step.judgment
                self.streak = self.streak + 1 if step.judgment == USELESS else 0
                self.primary_off = self.streak >= cond.k
            step.streak = self.streak
            return
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

    async def decide(self, step: Step) -> bool:
        """The decide arm's exchange after the observation of `step` (the main paper,
        App. B.1; the authors' harness): the side-channel question and the judgment as
        a user and an assistant turn (UNPARSED when the reply did not parse), the
        decision prompt answered in its own turn (DECIDE_MAX_TOKENS, no stop strings),
        then the instruction to act consistently with it. The decision is parsed from
        that turn's reply and stored on the next acting step.

        Returns:
            False when the decision turn was refused (the episode ends).
        """
        pieces = self.setup.prompts
        self.messages += [
            {"role": "user", "content": pieces.load("side_channel")},
            {"role": "assistant", "content": step.judgment or UNPARSED},
            {"role": "user", "content": pieces.load("decide").format(
                judgment=step.judgment or UNPARSED, streak=self.streak)},
        ]
        gen = await self.session.generate(self.messages, kind="decide",
                                          max_tokens=DECIDE_MAX_TOKENS, stop=())
        self.account(gen)
        self.result.extra_calls += 1
        if gen.finish == FINISH_REFUSAL:
            self.result.end_reason = END_REFUSAL
            return False
        decision = parse_decision(gen.text)
        self.decision = (decision, gen.text)
        self.messages += [
            {"role": "assistant", "content": gen.text.strip() or UNPARSED},
            {"role": "user", "content": pieces.load("decide_act")},
        ]
        return True

    def force(self) -> None:
        """Put the forced-finish sentence and instruction into the history (kept there)."""
        self.messages[:] = forced_messages(self.setup, self.messages)

    async def act(self, t: int, forced: bool) -> Step:
        """Generate and parse action t (a forced turn first puts the forced lines into
        the history). A reply cut at max_tokens or refused is recorded with its raw
        text and no action: never a format failure, never an answer."""
        if forced:
            self.force()
        gen = await self.session.generate(
            self.messages, kind="act", max_tokens=self.setup.act_max_tokens,
            stop=self.setup.stop
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
        if self.decision is not None:
            step.decision, step.decision_raw = self.decision
            self.decision = None
        if gen.finish in (FINISH_LENGTH, FINISH_REFUSAL):
            step.cut = END_TRUNCATED if gen.finish == FINISH_LENGTH else END_REFUSAL
            return step
        parsed = parse_reply(text, self.setup.prompt_format)
        if parsed is None or (parsed.name == "backup_search"
                              and not self.setup.condition.arm.two_source):
            step.format_failure = True
        else:
            step.thought, step.action, step.argument = parsed.thought, parsed.name, parsed.argument
            if not self.setup.condition.arm.decide:
                step.decision = parsed.decision
        return step

    def end_cut(self, step: Step) -> EpisodeResult:
        """End the episode on a turn cut at max_tokens or refused (`step.cut`)."""
        self.messages.append({"role": "assistant", "content": step.raw})
        self.emit(step)
        self.result.end_reason = step.cut or END_TRUNCATED
        return self.result

    async def run(self) -> EpisodeResult:
        setup, r = self.setup, self.result
        cond = setup.condition
        pending: Step | None = None  # the latest observation's step, until a thought reads it
        failed_in_row = 0
        stated_rule = cond.arm.rule == "stated"
        refuse = cond.forced_tool_call == REFUSE
        for t in range(1, setup.budget + 1):
            forced = self.forced_next
            step = await self.act(t, forced)
            if step.cut:
                return self.end_cut(step)
            if pending is not None and step.thought:
                self.read_stated(pending, step.thought)
                pending = None
            if (stated_rule and not forced and (self.fired or self.streak >= cond.k)
                    and step.action in TOOLS and not step.format_failure):
                # the turn is discarded and asked again forced; "refuse" forces every
                # later turn, "execute" (the harness) re-asks each later tool call
                self.fired = True
                step.discarded = True
                r.extra_calls += 1
                self.emit(step)
                forced = True
                self.forced_next = refuse
                step = await self.act(t, forced)
                if step.cut:
                    return self.end_cut(step)
            r.forced_turns += forced
            self.messages.append({"role": "assistant", "content": step.raw})
            if step.format_failure:
                r.format_failures += 1
                self.emit(step)
                failed_in_row += 1
                if failed_in_row > cond.format_retries:
                    r.end_reason = "format_failure"
                    return r
                self.messages.append({"role": "user",
                                      "content": setup.prompts.load("format_reminder")})
                continue
            failed_in_row = 0
            if step.action == "finish":
                self.emit(step)
                r.answered, r.answer, r.answer_action = True, step.argument or "", t
                r.end_reason = "finish"
                return r
            if (forced and refuse) or self.refuses(step):
                step.refused = True
                r.refused_calls += 1
                if cond.arm.two_source and step.action in TOOLS:
                    step.tool_source = self.sources.source_of(step.action or "")
                self.emit(step)
                # the refusal is the instruction itself: the next forced turn finds it
                # there and does not add it again
                text = setup.prompts.load("forced_observation" if forced else "switch_notice")
                if cond.arm.budget:
                    text += "\n\n" + counter(setup.budget - t)
                self.messages.append({"role": "user", "content": text})
                continue
            observation = self.observe(step)
            r.tool_calls += 1
            self.messages.append(
                {"role": "user", "content": observation_message(setup, observation, t)}
            )
            if t < setup.budget:
                was_on = not self.primary_off
                await self.judge(step, observation if step.obs_source != "none" else None)
                if was_on and self.primary_off:
                    self.messages[-1]["content"] += "\n" + setup.prompts.load("switch_notice")
                if cond.arm.decide and not await self.decide(step):
                    self.emit(step)
                    return r
            self.emit(step)
            pending = step
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
        on_step: called with each step as soon as it is complete (live tail); on a
            stated-judgment arm an observation's step once the next step has stated
            its judgment (read from that step's thought), or at the end.
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
        run.release()
    result.prompts = used.hashes()
    result.wall_ms = (time.perf_counter() - start) * 1000
    result.finished_at = utc_now()
    if result.answered and result.error is None:
        s = score_for_task(result.answer, setup.question.answer, setup.question.task)
        result.em, result.f1, result.correct, result.placeholder = (
            s.em, s.f1, s.correct, s.placeholder)
    return result
