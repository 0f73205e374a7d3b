"""Text of the Enqueue screen: the form's request and the preview of what it would queue.

Pure functions: parse the form's fields into a `GridRequest` (with the CLI's
errors) and turn `GridPlan.summary()` or a refusal into Rich `Text`, the same
numbers `lab enqueue --dry-run` prints, names shown inert (`core.inert`). No lab.db here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from core.errors import ConfigError
from core.inert import inert
from core.wording import plural
from jobs.grid import GridRequest


def ints(text: str, what: str) -> tuple[int, ...]:
    """Comma-separated integers (the CLI's --budget / --seeds syntax).

    Raises:
        ConfigError: anything else, naming the field.
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"{what} must be comma-separated integers, got '{text}'") from None
    if not values:
        raise ConfigError(f"{what}: give at least one integer, e.g. 8 or 8,16")
    return values


def knob_variants(text: str) -> tuple[str, ...]:
    """Conditions typed with knobs, separated by spaces or semicolons.

    Commas stay inside one condition (`random_rule:rate=0.6,k=5`).
    """
    return tuple(p for p in re.split(r"[\s;]+", text.strip()) if p)


def build_request(*, models: Sequence[str], conditions: Sequence[str], knobs: str,
                  regimes: Sequence[str], question_set: str | None, budget: str, seeds: str,
                  run: str, amendment: str | None) -> GridRequest:
    """The GridRequest of the form's fields.

    Raises:
        ConfigError: no question set, an empty run name, or bad budget/seeds.
    """
    if not question_set:
        raise ConfigError("pick a question set (none exists yet: s opens Sets, where c "
                          "creates one)")
    if not run.strip():
        raise ConfigError("give the run a name, e.g. pilot")
    merged = tuple(dict.fromkeys([*conditions, *knob_variants(knobs)]))
    return GridRequest(models=tuple(models), conditions=merged, regimes=tuple(regimes),
                       question_set=question_set, budgets=ints(budget, "budget"),
                       seeds=ints(seeds, "seeds"), run=run.strip(), amendment=amendment)


def _count(n: float) -> str:
    return f"{n:,.0f}"


def _ints(values: Sequence[int]) -> str:
    return ",".join(map(str, values))


def preview_text(summary: Mapping[str, Any]) -> Text:
    """What `lab enqueue --dry-run` says, as lines: cells, episodes, jobs, calls, tokens, $."""
    mode = summary["mode"]
    amendment = summary["request"].get("amendment")
    out = Text()
    out.append("✓ can be queued", style="bold green")
    out.append(f" — {'governed by ' + amendment if mode == 'governed' else 'EXPLORATORY'}\n\n",
               style="bold")
    out.append_text(request_text(summary["request"]))
    out.append("\n")
    estimate: Mapping[str, Mapping[str, float]] = summary["estimate"]
    tokens = sum(e["input_tokens"] + e["output_tokens"] for e in estimate.values())
    dollars = sum(e["dollars"] for e in estimate.values())
    rows = (("cells", _count(summary["cells"])),
            ("episodes", f"{_count(summary['new_episodes'])} new"),
            ("", f"({_count(summary['already_stored_or_queued'])} stored/queued)"),
            ("jobs", _count(summary["jobs"])),
            ("calls", f"≤ {_count(summary['max_model_calls'])}"),
            ("", f"{_count(summary['sim_episodes'])} simulated, free"
             if summary["sim_episodes"] else ""),
            ("tokens", f"≈ {_count(tokens)}" if estimate else "none: sims only"),
            ("dollars", f"≈ ${dollars:,.2f}" if estimate else "$0.00"))
    for label, value in rows:
        if value:
            out.append(f"{label:<10}", style="bold")
            out.append(f"{value}\n")
    for model, est in estimate.items():
        out.append(f"\n{inert(model, keep='')}\n", style="bold")
        out.append(f"  ≤ {_count(est['calls'])} calls, ≈ {_count(est['input_tokens'])} input "
                   f"tokens ({_count(est['cache_read_tokens'])} cache reads, "
                   f"{_count(est['cache_write_tokens'])} cache writes), ≈ "
                   f"{_count(est['output_tokens'])} output tokens, ≈ ${est['dollars']:,.2f}\n")
    return out


def request_text(request: Mapping[str, Any]) -> Text:
    """The grid asked for, one line per axis (the lists may be scrolled out of view)."""
    out = Text()
    axes = (("models", request["models"]), ("arms", request["conditions"]),
            ("regimes", request["regimes"]),
            ("set", [request["question_set"]]), ("budgets", request["budgets"]),
            ("seeds", request["seeds"]), ("run", [request["run"]]))
    for label, values in axes:
        out.append(f"{label:<10}", style="bold")
        out.append(inert(", ".join(map(str, values)), keep="") + "\n")
    return out


def nothing_text(summary: Mapping[str, Any]) -> Text:
    """A grid whose every episode is already stored or queued."""
    cells = summary["cells"]
    which = "this cell" if cells == 1 else f"these {_count(cells)} cells"
    return Text(f"– nothing to queue: all {_count(summary['already_stored_or_queued'])} "
                f"episodes of {which} are already stored or queued\n", style="bold")


def refusal_text(message: str, gate: bool) -> Text:
    """A refusal in words: the pre-registration gate's or the input's one line."""
    out = Text("✗ REFUSED by the pre-registration\n\n" if gate else "✗ cannot queue yet\n\n",
               style="bold red")
    out.append(inert(message) + "\n")
    return out


def confirm_text(summary: Mapping[str, Any]) -> tuple[str, str, str]:
    """The confirmation before a grid is queued: what, for which run, and what it costs.

    Returns:
        (question, detail, the `y` label): the run and its amendment (or EXPLORATORY);
        cells, new episodes, jobs, model calls, tokens and dollars (per priced model
        too); the grid's axes.
    """
    request = summary["request"]
    governed = (f"governed by {request['amendment']}" if summary["mode"] == "governed"
                else "EXPLORATORY, no amendment")
    question = f"Queue this grid in run {inert(request['run'], keep='')} ({governed})?"
    estimate: Mapping[str, Mapping[str, float]] = summary["estimate"]
    tokens = sum(e["input_tokens"] + e["output_tokens"] for e in estimate.values())
    dollars = sum(e["dollars"] for e in estimate.values())
    episodes = summary["new_episodes"]
    lines = [f"Episodes: {_count(episodes)} new in {plural(summary['jobs'], 'job')}, "
             f"{plural(summary['cells'], 'cell')} "
             f"({_count(summary['already_stored_or_queued'])} already stored/queued)",
             f"Calls:    ≤ {_count(summary['max_model_calls'])}"
             + (f" ({_count(summary['sim_episodes'])} episodes simulated, free)"
                if summary["sim_episodes"] else ""),
             f"Tokens:   ≈ {_count(tokens)}" if estimate else "Tokens:   none (sims only)",
             f"Dollars:  ≈ ${dollars:,.2f}" if estimate else "Dollars:  $0.00 (sims only)"]
    lines += [f"  {inert(model, keep='')}: ≤ {_count(est['calls'])} calls, ≈ "
              f"{_count(est['input_tokens'] + est['output_tokens'])} tokens, ≈ "
              f"${est['dollars']:,.2f}" for model, est in estimate.items()]
    lines.append(f"Grid:     {plural(len(request['models']), 'model')} × "
                 f"{plural(len(request['conditions']), 'arm')} × "
                 f"{plural(len(request['regimes']), 'regime')}, set "
                 f"{inert(request['question_set'], keep='')}, budget {_ints(request['budgets'])}, "
                 f"seed {_ints(request['seeds'])}")
    yes = f"queue {_count(episodes)} episodes" + (f" (≈ ${dollars:,.2f})" if estimate else "")
    return question, "\n".join(lines), yes
