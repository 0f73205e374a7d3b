"""The arms of the main paper (docs/conditions.md) as frozen spec dataclasses.

A condition is data: its name and knobs serialise to canonical JSON, whose sha256
travels with every cell and episode. What each arm adds to the prompt and what the
harness enforces is derived from the name through `ARMS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from core.canonical import canonical_json, sha256_hex
from core.errors import ConfigError
from core.judges import JUDGE_PARSE_CONTAINS, JUDGE_PARSES
from core.prompt_set import PromptSet

LAMBDA = 0.05
"""λ, the cost of one tool call in utility = success − λ·calls (docs/results.md); also
call_cost's default stated price."""

EXECUTE = "execute"
REFUSE = "refuse"
FORCED_TOOL_CALLS: tuple[str, ...] = (EXECUTE, REFUSE)
"""Values of `forced_tool_call`: what a tool call in a forced turn does. The authors'
harness executes it (the main paper's code; the paper itself is silent); "refuse"
answers it with the finish instruction instead."""
PROTOCOL_OPTIONS: tuple[str, ...] = ("forced_tool_call", "format_retries")
"""Options of the episode loop where lab can differ from the main paper's protocol. At
their defaults (the paper's protocol) they are left out of the spec, so the hashes of
conditions that do not set them are unchanged; set, they enter the spec and the label."""


@dataclass(frozen=True)
class Arm:
    """What one condition changes (paper Table 1, App. B.1).

    Attributes:
        permit: may answer from own knowledge.
        budget: states the budget and shows `[Actions remaining: n]`.
        stated_rule: the stopping rule in words.
        call_cost: the per-call price in words.
        decide: judgment and useless count written into the history each step.
        rule: which signal the harness enforces the rule on (None: agent stops):
            "side_channel", "random", "lexical", or "stated" (the judgment read from
            the agent's own thought; a tool call proposed once the run reaches k is
            discarded and re-asked with the forced-finish instruction).
        two_source: offers backup_search, an intact copy of the KB that never fails
            (the failure schedule applies to the primary search only).
        switch: disables the primary search after k consecutive side-channel USELESS
            judgments of its results (two-source arms only).
        knobs: the parameters that belong to this arm's spec.
    """

    permit: bool = False
    budget: bool = False
    stated_rule: bool = False
    call_cost: bool = False
    decide: bool = False
    rule: str | None = None
    two_source: bool = False
    switch: bool = False
    knobs: tuple[str, ...] = ()


ARMS: Mapping[str, Arm] = MappingProxyType({
    "none": Arm(),
    "permit": Arm(permit=True),
    "budget": Arm(permit=True, budget=True),
    "stated_rule": Arm(permit=True, stated_rule=True, knobs=("k",)),
    "call_cost": Arm(permit=True, budget=True, call_cost=True, knobs=("price",)),
    "decide": Arm(decide=True),
    "enforced_rule": Arm(rule="side_channel", knobs=("k",)),
    "combo": Arm(permit=True, budget=True, rule="side_channel", knobs=("k",)),
    "random_rule": Arm(rule="random", knobs=("k", "rate")),
    "lexical_rule": Arm(rule="lexical", knobs=("k", "tau")),
    "stated_judgment_rule": Arm(rule="stated", knobs=("k",)),
    "stated_judgment_combo": Arm(permit=True, budget=True, rule="stated", knobs=("k",)),
    "two_source": Arm(two_source=True, knobs=("backup_price",)),
    "switch_rule": Arm(two_source=True, switch=True, knobs=("k", "backup_price")),
})
"""Read-only table of arms."""
TWO_SOURCE_ARMS = frozenset(name for name, arm in ARMS.items() if arm.two_source)
"""Conditions that offer backup_search (the only ones with backup steps or leaving)."""


@dataclass(frozen=True)
class Condition:
    """One arm with its knobs.

    Attributes:
        name: arm name (a key of ARMS).
        k: useless-run length that fires a rule (stated or enforced).
        tau: lexical threshold (share of question content words).
        price: per-call price stated by call_cost.
        backup_price: what utility charges per backup_search call (two-source arms;
            a primary call costs the analysis's λ, 0.05 by default). The prompt says
            only that the backup is slower and costlier, never this number.
        rate: USELESS rate of random_rule's draws (resolved before a run).
        judge: ask side-channel judgments after every observation even when the arm
            does not act on them (stored, never fed back).
        judge_parse: how side-channel replies are read (`core.judges.parse_side_channel`):
            "contains" (default, as the paper's released harness) or "first_word". In
            the spec and the label only when it is not the default, so the specs of
            conditions at the default keep their hashes.
        forced_tool_call: rule arms only: "execute" (default, the authors' harness)
            runs a search or lookup proposed in a forced turn, returns its observation
            and judges it like any other; "refuse" answers it with the finish
            instruction and forces every later turn.
        format_retries: format reminders allowed in a row. 0 (default, the main
            paper's runs): a turn with no readable action ends the episode
            (end_reason "format_failure"); 1: one reminder (the paper's A20 prompt
            arms), and a second failed turn in a row ends it. A failed turn uses up
            an action. Both are protocol options (`PROTOCOL_OPTIONS`).
    """

    name: str
    k: int = 5
    tau: float = 0.25
    price: float = LAMBDA
    backup_price: float = 0.10
    rate: float | None = None
    judge: bool = False
    judge_parse: str = JUDGE_PARSE_CONTAINS
    forced_tool_call: str = EXECUTE
    format_retries: int = 0
    _arm: Arm = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name not in ARMS:
            raise ConfigError(
                f"unknown condition '{self.name}'; choose one of: {', '.join(ARMS)}"
            )
        if self.k < 1:
            raise ConfigError(f"condition {self.name}: k must be >= 1, got {self.k}")
        if not 0.0 <= self.tau <= 1.0:
            raise ConfigError(f"condition {self.name}: tau must be in [0, 1], got {self.tau}")
        if not self.price >= 0 or math.isinf(self.price):
            raise ConfigError(f"condition {self.name}: price must be a finite number >= 0, "
                              f"got {self.price}")
        if not self.backup_price >= 0 or math.isinf(self.backup_price):
            raise ConfigError(f"condition {self.name}: backup_price must be a finite number "
                              f">= 0, got {self.backup_price}")
        if self.rate is not None and not 0.0 <= self.rate <= 1.0:
            raise ConfigError(f"condition {self.name}: rate must be in [0, 1], got {self.rate}")
        if self.judge_parse not in JUDGE_PARSES:
            raise ConfigError(f"condition {self.name}: judge_parse must be one of "
                              f"{', '.join(JUDGE_PARSES)}, got {self.judge_parse!r}")
        if self.forced_tool_call not in FORCED_TOOL_CALLS:
            raise ConfigError(f"condition {self.name}: forced_tool_call must be one of "
                              f"{', '.join(FORCED_TOOL_CALLS)}, got {self.forced_tool_call!r}")
        if (isinstance(self.format_retries, bool) or not isinstance(self.format_retries, int)
                or self.format_retries < 0):
            raise ConfigError(f"condition {self.name}: format_retries must be an integer "
                              f">= 0, got {self.format_retries!r}")
        if self.forced_tool_call != EXECUTE and ARMS[self.name].rule is None:
            raise ConfigError(f"condition {self.name}: forced_tool_call applies only to arms "
                              f"with a rule (this arm never forces a turn)")
        object.__setattr__(self, "_arm", ARMS[self.name])

    @property
    def arm(self) -> Arm:
        """The arm's features."""
        return self._arm

    @property
    def asks_judgments(self) -> bool:
        """Whether the harness asks the side-channel question after each observation."""
        return self.judge or self.arm.rule == "side_channel" or self.arm.decide

    @property
    def judges_primary(self) -> bool:
        """Whether the harness asks the side-channel question after primary results
        only (switch_rule's own signal; `asks_judgments` asks after every result)."""
        return self.arm.switch

    def spec(self) -> dict[str, Any]:
        """The canonical parameters: the name, the arm's knobs, the judge option, and
        `judge_parse` and each protocol option (`PROTOCOL_OPTIONS`) when it is not the
        default."""
        out: dict[str, Any] = {"name": self.name, "judge": self.judge}
        for knob in self.arm.knobs:
            out[knob] = getattr(self, knob)
        if self.judge_parse != JUDGE_PARSE_CONTAINS:
            out["judge_parse"] = self.judge_parse
        for option in PROTOCOL_OPTIONS:
            if getattr(self, option) != _DEFAULTS[option]:
                out[option] = getattr(self, option)
        return out

    def label(self) -> str:
        """The arm label: the name plus every knob that differs from its default.

        `enforced_rule`, `enforced_rule:k=7`, `none:judge=true`,
        `random_rule:rate=0.42`. Two conditions with different specs never share a
        label (knobs are printed with `repr`-exact precision).
        """
        parts = [f"{knob}={_knob_text(getattr(self, knob))}" for knob in self.arm.knobs
                 if getattr(self, knob) != _DEFAULTS[knob]]
        if self.judge:
            parts.append("judge=true")
        if self.judge_parse != JUDGE_PARSE_CONTAINS:
            parts.append(f"judge_parse={self.judge_parse}")
        parts += [f"{option}={_knob_text(getattr(self, option))}" for option in PROTOCOL_OPTIONS
                  if getattr(self, option) != _DEFAULTS[option]]
        return self.name + (":" + ",".join(parts) if parts else "")

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces)."""
        return canonical_json(self.spec())

    def spec_hash(self) -> str:
        """sha256 hex of the canonical JSON."""
        return sha256_hex(self.to_json())

    def system_prompt(self, budget: int, forced: bool = False,
                      prompt_set: PromptSet = PromptSet()) -> str:
        """The system prompt for this arm; `forced` adds the finish-only sentence.

        Args:
            budget: the episode's action budget (stated by budget arms).
            forced: add the finish-only sentence of a forced turn.
            prompt_set: which task's and prompt format's files to read (default:
                HotpotQA in the ReAct format).

        Returns:
            The base system prompt with this arm's additions appended, joined as the
            paper's released harness joins them: the permission after a blank line,
            then the budget, the stated rule and the call cost each on the next line
            (one paragraph with the permission); the backup tool and the finish-only
            sentence each after a blank line.
        """
        arm = self.arm
        text = prompt_set.load("system")
        if arm.permit:
            text += "\n\n" + prompt_set.load("permit")
        if arm.budget:
            text += "\n" + prompt_set.load("budget").format(budget=budget)
        if arm.stated_rule:
            text += "\n" + prompt_set.load("stated_rule").format(k=_number_word(self.k))
        if arm.call_cost:
            text += "\n" + prompt_set.load("call_cost").format(price=f"{self.price:g}")
        if arm.two_source:
            text += "\n\n" + prompt_set.load("two_source")
        if forced:
            text += "\n\n" + prompt_set.load("forced_system")
        return text


_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {f.name: f.default for f in fields(Condition) if f.init and f.name != "name"})
"""Default value of every knob (a knob at its default is left out of the arm label)."""


def _knob_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value).removesuffix(".0") if value.is_integer() else repr(value)
    return str(value)


def condition_from_spec(spec: Mapping[str, Any] | str) -> Condition:
    """Rebuild a Condition from its canonical spec (a dict, or its JSON as stored in cells).

    Raises:
        ConfigError: an unknown name or knob.
    """
    data = json.loads(spec) if isinstance(spec, str) else dict(spec)
    known = {f.name for f in fields(Condition) if f.init}
    unknown = sorted(set(data) - known)
    if unknown or "name" not in data:
        raise ConfigError(f"condition spec {data!r}: unknown key "
                          f"'{unknown[0] if unknown else 'name'}'")
    return Condition(**data)


def arm_label(spec: Mapping[str, Any] | str) -> str:
    """The arm label of a stored condition spec (see `Condition.label`)."""
    return condition_from_spec(spec).label()


def _number_word(n: int) -> str:
    words = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    return words[n] if 0 <= n < len(words) else str(n)


def parse_condition(text: str) -> Condition:
    """Parse `name` or `name:knob=value,knob=value` (e.g. `random_rule:rate=0.6`).

    Only the condition's own knobs (`Arm.knobs`), `judge` and its protocol options
    (`Condition.options`: `format_retries=1`, and `forced_tool_call=refuse` on rule
    arms) are accepted, each once, with a finite value: a knob the arm ignores would
    otherwise make a separate cell that runs exactly the same episodes.

    Raises:
        ConfigError: unknown name, a knob the condition does not have, a repeated
            knob, a knob without a value, or a value of the wrong type.
    """
    name, _, rest = text.strip().partition(":")
    name = name.strip()
    if name not in ARMS:
        raise ConfigError(f"unknown condition '{name}'; choose one of: {', '.join(ARMS)}")
    own = (*ARMS[name].knobs, "judge", "judge_parse", "format_retries",
           *(("forced_tool_call",) if ARMS[name].rule is not None else ()))
    kwargs: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = (part.strip() for part in item.partition("="))
        if key not in own:
            raise ConfigError(f"condition '{text}': {name} has no knob '{key}' (its knobs: "
                              f"{', '.join(own)}; e.g. {_example(name, own[0])})")
        if not eq or not value:
            raise ConfigError(f"condition '{text}': knob {key} needs a value, e.g. "
                              f"{_example(name, key)}")
        if key in kwargs:
            raise ConfigError(f"condition '{text}': knob {key} is given twice; give it once")
        try:
            kwargs[key] = _coerce(key, value)
        except ValueError:
            kind = ("an integer" if key in ("k", "format_retries")
                    else "true or false" if key == "judge"
                    else " or ".join(JUDGE_PARSES) if key == "judge_parse"
                    else " or ".join(FORCED_TOOL_CALLS) if key == "forced_tool_call"
                    else "a finite number")
            raise ConfigError(f"condition '{text}': {key} must be {kind}, got '{value}' "
                              f"(e.g. {_example(name, key)})") from None
    return Condition(name=name, **kwargs)


def _example(name: str, knob: str) -> str:
    """`name:knob=value` with a value that parses (the knob's default where it has one)."""
    default = _DEFAULTS.get(knob)
    value = ("true" if knob == "judge" else JUDGE_PARSES[-1] if knob == "judge_parse"
             else REFUSE if knob == "forced_tool_call" else "1" if knob == "format_retries"
             else "0.5" if default is None else _knob_text(default))
    return f"{name}:{knob}={value}"


def _coerce(key: str, value: str) -> Any:
    if key in ("k", "format_retries"):
        return int(value)
    if key == "forced_tool_call":
        if value.lower() not in FORCED_TOOL_CALLS:
            raise ValueError(value)
        return value.lower()
    if key == "judge_parse":
        if value not in JUDGE_PARSES:
            raise ValueError(value)
        return value
    if key == "judge":
        if value.lower() in ("1", "true", "yes"):
            return True
        if value.lower() in ("0", "false", "no"):
            return False
        raise ValueError(value)
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(value)
    return number


def with_rate(condition: Condition, rate: float) -> Condition:
    """Return the condition with random_rule's rate resolved."""
    return replace(condition, rate=rate)
