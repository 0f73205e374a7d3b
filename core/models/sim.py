"""Simulated agents with known stopping behaviour (the main paper, App. C.1, Table 7).

They exist to validate the measures and to make the whole pipeline run with no
model: each reply is real ReAct text that goes through the same parser. A sim
agent judges each observation from its design label (a failed one USELESS w.p.
0.99, a real one w.p. 0.45), answers after a real observation it judged useful
w.p. 0.3, and otherwise stops by its policy. It reads the answer from the
real observations it saw when the answer is there and guesses otherwise. All
randomness is keyed by (seed, question id, observation index).

Two-source sims (the system prompt offers backup_search) leave the primary search
by their `switch` policy: "own" after `switch_k` consecutive own USELESS judgments
of primary results, "clock" at action `switch_at` whatever they judged; once on
the backup they stay there. Any sim moves to the backup when the harness says the
primary is switched off (switch_rule's notice). Stated sims (`stated`) write their
judgment in the thought with phrases the keyword reader knows ("This result does
not mention …" / "This paragraph states that …"), and with probability `p_silent`
a thought that states none.

A trace sim (policy "trace", `sim-trace`) answers the second seed's depth-wise
answer-state calls by a known model (`core.models.sim_trace`); in a ReAct episode it
acts as a "never" sim.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, ClassVar

import prompts
from core.canonical import keyed_uniform
from core.data import TASK_FEVER, Question
from core.kb import observation_title
from core.models.base import EpisodeView, Generation, Message
from core.models.declared import BackendConfig, check_fields, concurrency_setting, setting
from core.models.sim_trace import TRACE_POLICY, trace_reply

POLICIES = ("never", "deadline", "clock", "hazard_time", "own_count", "design_count",
            "hazard_own", TRACE_POLICY)
SWITCHES = ("none", "own", "clock")
"""When a sim offered backup_search leaves the primary search (see the module docstring)."""


_SHARE = {"ge": 0, "le": 1}
MAX_ACTIONS = 1000
"""The largest action count a sim's policy or switch may name (budgets are far lower)."""
MAX_LATENCY_MS = 60_000.0
"""The longest simulated latency of one call (a minute)."""


@dataclass(frozen=True)
class SimSpec(BackendConfig):
    """Parameters of one simulated agent: its lab.toml table (`backend = "sim"`).

    Attributes:
        policy: one of POLICIES.
        k: run length for own_count / design_count.
        c: action at which the clock policy answers.
        p_useless_failed: P(judged USELESS | failed observation).
        p_useless_real: P(judged USELESS | real observation).
        p_answer_useful: P(answer | latest real observation judged useful).
        hazard_slope: per-action (hazard_time) or per-useless (hazard_own) slope.
        p_guess: P(a guess is right) when the answer was not seen.
        latency_ms: simulated latency of every call (0: answer at once); lets the
            queue, the live tail and crash tests see episodes in flight.
        switch: when backup_search is offered, leave the primary: "none" (only when
            the harness switches it off), "own" or "clock".
        switch_k: own USELESS judgments of primary results in a row that make an
            "own" sim switch.
        switch_at: action at which a "clock" sim switches.
        stated: state each judgment in the thought in the reader's phrases.
        p_silent: P(a stated sim's thought states no judgment).
        concurrency: concurrent episodes allowed.
    """

    policy: str = setting(choices=POLICIES)
    k: int = setting(5, ge=1, le=MAX_ACTIONS)
    c: int = setting(6, ge=1, le=MAX_ACTIONS)
    p_useless_failed: float = setting(0.99, **_SHARE)
    p_useless_real: float = setting(0.45, **_SHARE)
    p_answer_useful: float = setting(0.3, **_SHARE)
    hazard_slope: float = setting(0.06, ge=-1, le=1)
    p_guess: float = setting(0.15, **_SHARE)
    latency_ms: float = setting(0.0, ge=0, le=MAX_LATENCY_MS, serving=True)
    switch: str = setting("none", choices=SWITCHES)
    switch_k: int = setting(3, ge=1, le=MAX_ACTIONS)
    switch_at: int = setting(4, ge=1, le=MAX_ACTIONS)
    stated: bool = setting(False)
    p_silent: float = setting(0.0, **_SHARE)
    concurrency: int = concurrency_setting(1024)

    in_process: ClassVar[bool] = True
    always_judge: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def instant(self) -> bool:
        """Without a simulated latency a sim answers at once."""
        return not self.latency_ms

    @property
    def detail(self) -> str:
        """The policy."""
        return self.policy

    def spec(self) -> dict[str, object]:
        """All parameters as a dict (canonical JSON is built from it).

        The two-source and stated parameters and the concurrency appear only when they
        differ from their defaults, so the sims that existed before them keep their
        spec hashes.
        """
        out = asdict(self)
        for name, default in _LATER_DEFAULTS.items():
            if out[name] == default:
                del out[name]
        return out

    def stored(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter, defaults included (a sim's table hashes as the built-in one
        with the same parameters)."""
        return self.spec()


_LATER_DEFAULTS: Mapping[str, object] = MappingProxyType(
    {"switch": "none", "switch_k": 3, "switch_at": 4, "stated": False, "p_silent": 0.0,
     "concurrency": 1024})
"""Parameters added after the first sims, left out of a spec at these values."""


BUILTIN_SIMS: Mapping[str, SimSpec] = MappingProxyType({
    "sim-never": SimSpec("never"),
    "sim-deadline": SimSpec("deadline"),
    "sim-clock4": SimSpec("clock", c=4),
    "sim-clock6": SimSpec("clock", c=6),
    "sim-hazard-time": SimSpec("hazard_time", hazard_slope=0.06),
    "sim-own3": SimSpec("own_count", k=3),
    "sim-own5": SimSpec("own_count", k=5),
    "sim-own7": SimSpec("own_count", k=7),
    "sim-design3": SimSpec("design_count", k=3),
    "sim-design5": SimSpec("design_count", k=5),
    "sim-hazard-own": SimSpec("hazard_own", hazard_slope=0.12),
    "sim-backup-own3": SimSpec("deadline", switch="own", switch_k=3),
    "sim-backup-clock4": SimSpec("deadline", switch="clock", switch_at=4),
    "sim-stated": SimSpec("never", stated=True, p_silent=0.2),
    "sim-stated-own3": SimSpec("own_count", k=3, stated=True, p_silent=0.2),
    "sim-trace": SimSpec(TRACE_POLICY),
})
"""The simulated models available without any registry file, so `lab demo` runs anywhere."""


@lru_cache(maxsize=1 << 16, typed=True)
def _draw(*key: object) -> float:
    """A sim's draw in [0, 1) for `key` (`keyed_uniform`). Remembered: the cells of a
    grid that share a seed draw the same keys (each of its conditions and regimes, and a
    turn's decision and its act) and need not hash them again."""
    return keyed_uniform(*key)


def _shows_answer(question: Question, text: str) -> bool:
    """Whether an observation shows the answer: the answer string (HotpotQA) or one of
    the claim's evidence sentences (FEVER, whose answer is a label)."""
    if question.task != TASK_FEVER:
        return question.answer.lower() in text.lower()
    pages = {p.title: p.sentences for p in question.paragraphs}
    return any(j < len(pages.get(title, ())) and pages[title][j].strip() in text
               for title, j in question.supporting_facts)


class SimClient:
    """A simulated model; `start` opens a session per episode."""

    always_judge = True

    def __init__(self, name: str, spec: SimSpec) -> None:
        self.name = name
        self.spec = spec
        self.concurrency = spec.concurrency

    def start(self, view: EpisodeView) -> SimSession | TraceSimSession:
        """Open a session for one episode (or one trace state)."""
        if self.spec.policy == TRACE_POLICY:
            return TraceSimSession(self.name, self.spec, view)
        return SimSession(self.spec, view)


class TraceSimSession:
    """A trace sim's session: trace and judge calls by `core.models.sim_trace`, any other
    call (a ReAct episode) by a "never" sim's session, made on the first such call."""

    def __init__(self, name: str, spec: SimSpec, view: EpisodeView) -> None:
        self.name = name
        self.spec = spec
        self.view = view
        self._episode: SimSession | None = None

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = ()) -> Generation:
        """Reply to a trace state or judge call with its JSON (else as sim-never)."""
        text = trace_reply(self.name, self.view, messages, kind)
        if text is None:
            if self._episode is None:
                self._episode = SimSession(self.spec, self.view)
            return await self._episode.generate(messages, kind=kind, max_tokens=max_tokens,
                                                stop=stop)
        if self.spec.latency_ms:
            await asyncio.sleep(self.spec.latency_ms / 1000)
        chars = sum([len(m["content"]) for m in messages])
        return Generation(text=text, input_tokens=chars // 4, output_tokens=len(text) // 4 + 1)


class SimSession:
    """One simulated agent's episode."""

    def __init__(self, spec: SimSpec, view: EpisodeView) -> None:
        self.spec = spec
        self.view = view
        self.acts = 0
        self.judgments: list[bool] = []  # True = judged USELESS, per observation
        self.forced_marker = prompts.load("forced_system")
        self.decide_marker = prompts.load("decide").split("{", 1)[0]
        self.switch_marker = prompts.load("switch_notice")
        self._targets: list[str] | None = None  # the pages `target` walks, once known

    def useless(self, i: int) -> bool:
        """The agent's own judgment of observation i (1-based), drawn once."""
        while len(self.judgments) < i:
            n = len(self.judgments) + 1
            label = self.view.observations[n - 1]
            p = self.spec.p_useless_failed if label.failed else self.spec.p_useless_real
            self.judgments.append(_draw("judge", self.view.seed, self.view.question.id, n) < p)
        return self.judgments[i - 1]

    async def generate(self, messages: Sequence[Message], *, kind: str, max_tokens: int,
                       stop: Sequence[str] = ()) -> Generation:
        """Reply to an acting turn or a side-channel fork with real ReAct text."""
        if self.spec.latency_ms:
            await asyncio.sleep(self.spec.latency_ms / 1000)
        if kind == "judge":
            n = len(self.view.observations)
            text = "USELESS" if n and self.useless(n) else "USEFUL"
        elif kind in PROBE_REPLIES:
            text = PROBE_REPLIES[kind](self)
        elif kind == "decide":  # the decide arm's decision turn, before action acts + 1
            verdict = "ANSWER_NOW" if self.wants_to_stop(self.acts + 1) else "CONTINUE"
            text = f"Weighing my options, I choose this.\nDECISION: {verdict}"
        else:
            self.acts += 1
            text = self.act(messages)
        chars = sum([len(m["content"]) for m in messages])
        return Generation(text=text, input_tokens=chars // 4, output_tokens=len(text) // 4 + 1)

    def runs(self) -> tuple[int, int]:
        """Current own-judgment useless run and design-label failed run."""
        own = design = 0
        n = len(self.view.observations)
        for i in range(n, 0, -1):
            if not self.useless(i):
                break
            own += 1
        for label in reversed(self.view.observations):
            if not label.failed:
                break
            design += 1
        return own, design

    def wants_to_stop(self, t: int) -> bool:
        """Whether the policy answers at action t."""
        spec, view = self.spec, self.view
        n = len(view.observations)
        key = (view.seed, view.question.id, n)
        if n and not view.observations[-1].failed and not self.useless(n):
            if _draw("useful", *key) < spec.p_answer_useful:
                return True
        own, design = self.runs()
        policy = spec.policy
        if policy == "deadline":
            return t >= view.budget
        if policy == "clock":
            return t >= spec.c
        if policy == "hazard_time":
            return _draw("hazard", *key) < min(1.0, spec.hazard_slope * (t - 1))
        if policy == "own_count":
            return own >= spec.k
        if policy == "design_count":
            return design >= spec.k
        if policy == "hazard_own":
            return _draw("hazard", *key) < min(1.0, spec.hazard_slope * own)
        return False

    def on_backup(self, t: int, messages: Sequence[Message]) -> bool:
        """Whether this turn searches the backup (only when backup_search is offered)."""
        if "backup_search[" not in messages[0]["content"]:
            return False
        if any(o.tool == "backup" for o in self.view.observations):
            return True  # once on the backup, stay there
        if any(self.switch_marker in m["content"] for m in messages[1:]):
            return True
        if self.spec.switch == "own":
            run = 0
            for i in range(len(self.view.observations), 0, -1):
                if self.view.observations[i - 1].tool != "primary" or not self.useless(i):
                    break
                run += 1
            return run >= self.spec.switch_k
        return self.spec.switch == "clock" and t >= self.spec.switch_at

    def judged(self, n: int) -> str:
        """The sentence of the thought that judges observation n (none before the first)."""
        if n == 0:
            return "I need to find the relevant articles."
        if not self.spec.stated:
            if self.useless(n):
                return "The last result is not relevant: it does not mention what I need."
            return "The last result mentions useful information."
        view = self.view
        if _draw("silent", view.seed, view.question.id, n) < self.spec.p_silent:
            return "Let me think about where to look next."
        if self.useless(n):
            return f"This result does not mention {self.target()}."
        title = observation_title(view.observations[n - 1].text) or "this page"
        return f"This paragraph states that {title} is the article I needed."

    def answer(self) -> str:
        """The gold answer (a FEVER claim's label) when a real observation showed it
        (for a claim: one of its evidence sentences), else a seeded guess.

        Failed observations never teach the answer, even when a foreign page happens
        to contain the string: the simulated reader knows which pages were real.
        """
        q = self.view.question
        gold = q.answer
        needle = gold.lower()
        if any(not o.failed and _shows_answer(q, o.text) for o in self.view.observations):
            return gold
        if _draw("guess", self.view.seed, q.id) < self.spec.p_guess:
            return gold
        if q.task == TASK_FEVER:  # the wrong verdict
            return "REFUTES" if gold == "SUPPORTS" else "SUPPORTS"
        wrong = [p.title for p in q.paragraphs if needle not in p.title.lower()]
        return wrong[int(_draw("wrong", self.view.seed, q.id) * len(wrong))] if wrong else "no"

    def target(self) -> str:
        """The page to search next: the gold pages in order, moving on after a useful one."""
        titles = self._targets
        if titles is None:
            q = self.view.question
            titles = self._targets = list(dict.fromkeys(
                title for title, _ in q.supporting_facts)) or [p.title for p in q.paragraphs]
        n = len(self.view.observations)
        useful = sum(1 for i in range(1, n + 1) if not self.useless(i))
        return titles[min(useful, len(titles) - 1)]

    def act(self, messages: Sequence[Message]) -> str:
        """Compose one acting turn."""
        t = self.acts
        n = len(self.view.observations)
        forced = self.forced_marker in messages[0]["content"]
        stop = forced or self.wants_to_stop(t)
        judged = self.judged(n)
        decide = ""
        if self.decide_marker in messages[-1]["content"]:
            verdict = "ANSWER_NOW" if stop else "CONTINUE"
            decide = f"Weighing my options, I choose this.\nDECISION: {verdict}\n"
        if stop:
            answer = self.answer()
            return (f"{decide}Thought: {judged} I will answer now.\nAction: finish\n"
                    f"Action Input: {answer}")
        target = self.target()
        if self.on_backup(t, messages):
            return (f"{decide}Thought: {judged} I will use backup_search for {target}.\n"
                    f"Action: backup_search\nAction Input: {target}")
        return (f"{decide}Thought: {judged} I will search for {target}.\n"
                f"Action: search\nAction Input: {target}")


SIM_OVERCONFIDENCE = 0.25
"""How much a sim's verbalized confidence exceeds its true chance of being right (probes)."""
SIM_CONFIDENCE_NOISE = 0.10
"""Half-width of the seeded uniform jitter on a sim's verbalized confidence."""


def sim_true_confidence(session: SimSession) -> float:
    """A sim's true chance that its answer now is right: 1 when a real page showed the
    answer, else its guess rate (the guess is right w.p. p_guess across questions)."""
    q = session.view.question
    needle = q.answer.lower()
    seen = any(not o.failed and needle in o.text.lower() for o in session.view.observations)
    return 1.0 if seen else session.spec.p_guess


def sim_confidence(session: SimSession) -> int:
    """The verbalized confidence (0–100): the true chance plus SIM_OVERCONFIDENCE plus a
    seeded jitter, clipped — a known miscalibration that isotonic calibration can undo."""
    view = session.view
    jitter = (_draw("confidence", view.seed, view.question.id, len(view.observations)) * 2 - 1)
    value = sim_true_confidence(session) + SIM_OVERCONFIDENCE + jitter * SIM_CONFIDENCE_NOISE
    return round(100 * min(1.0, max(0.0, value)))


def _answer_now(session: SimSession) -> str:
    return (f"Thought: I will answer now.\nAction: finish\nAction Input: {session.answer()}\n"
            f"Confidence: {sim_confidence(session)}")


def _belief(session: SimSession) -> str:
    now = sim_confidence(session) / 100
    cont = min(1.0, now + 0.1)
    return json.dumps({"p_continue": round(cont, 2), "p_answer_now": round(now, 2),
                       "prefer": "continue" if cont > now else "unsure",
                       "reason": "more searching might still help"})


def _repair(session: SimSession) -> str:
    return f"Thought: my actual answer.\nAction: finish\nAction Input: {session.answer()}"


PROBE_REPLIES = MappingProxyType({"answer_now": _answer_now, "belief": _belief,
                                  "repair": _repair})
"""Replies of a sim session to the probes of core.probes (docs/replay.md), by probe kind."""
