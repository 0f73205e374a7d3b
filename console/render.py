"""Plain-text rendering of episodes for the terminal (`lab try`, `lab tail`)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from core.data import TASK_HOTPOTQA
from core.end_reasons import end_text
from core.episode import EpisodeResult, Step
from core.scoring import score_note
from core.store.imports import NO_TEXT

TitleOf = Callable[[str], str]
REASONING_WIDTH = 160
"""Characters of thinking-mode text shown per step (the full text is in lab.db)."""


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def step_lines(step: Step, title_of: TitleOf | None = None, width: int = 100,
               imported: bool = False) -> list[str]:
    """Readable lines for one step: thought, action, observation, judgment, streak.

    Args:
        step: the step.
        title_of: maps an obs_ref ("qid#p") to the page title, for failed observations.
        width: wrap width.
        imported: the step is of an imported episode (no text): its observation shows
            its design label only.
    """
    flags = []
    if step.forced:
        flags.append("FORCED")
    if step.refused:
        flags.append("REFUSED: tool call not executed")
    if step.discarded:
        flags.append("DISCARDED: re-asked with the finish instruction")
    head = f"── step {step.t}" + (f"  [{', '.join(flags)}]" if flags else "")
    lines = [head]
    line = reasoning_line(step)
    if line:  # plain: printers show every line inert, so a style's escape would show as text
        lines.append(line)
    if step.decision:
        lines.append(f"  decision: {step.decision}")
    if step.thought:
        lines += textwrap.wrap(f"thought: {step.thought}", width, initial_indent="  ",
                               subsequent_indent="    ")
    if step.format_failure:
        lines.append(f"  format failure: {_clip(step.raw, width - 20)!r}")
        return lines
    source = f"  ({step.tool_source})" if step.tool_source else ""
    lines.append(f"  action: {move_text(step)}{source}")
    if step.obs_index is not None:
        if imported:
            mark = f"[{observation_label(step)}; {NO_TEXT}]"
        elif step.obs_failed:
            title = title_of(step.obs_ref) if (title_of and step.obs_ref) else "?"
            mark = f"[FAILED → {step.obs_source}: {title!r}]"
        else:
            mark = f"[real: {step.obs_source}]"
        lines.append(f"  observation {step.obs_index} {mark}")
        if step.shown:
            lines.append("    " + _clip(step.shown, width - 4))
    if step.judgment is not None or step.judgment_raw is not None or step.rule_signal:
        j = step.judgment or f"unparsed {step.judgment_raw!r}"
        extra = f"  rule signal: {step.rule_signal}" if step.rule_signal else ""
        stated = f"  stated: {step.stated_judgment}" if step.stated_judgment else ""
        lines.append(f"  judgment: {j}{extra}{stated}  streak: {step.streak}")
    elif step.stated_judgment:
        lines.append(f"  stated: {step.stated_judgment}  streak: {step.streak}")
    return lines


def move_text(step: Step) -> str:
    """The action as the agent wrote it, ``search[query]``; the bare action name where
    it has no argument (an imported step: its text was not released)."""
    if step.argument is None and step.action is not None:
        return step.action
    return f"{step.action}[{step.argument or ''}]"


def observation_label(step: Step) -> str:
    """An observation by its design label alone: "failed", "real", or "after an invalid
    turn" (an imported episode's observation, whose text was not released)."""
    if step.action == "invalid":
        return "after an invalid turn"
    return "failed" if step.obs_failed else "real"


def imported_summary(result: EpisodeResult) -> list[str]:
    """An imported episode's outcome: its success and counts (no answer text)."""
    if result.answered:
        head = (f"══ answered at action {result.answer_action} ({NO_TEXT})   "
                f"{'correct' if result.correct else 'incorrect'} (released success)")
    else:
        head = f"══ unanswered ({end_text(result.end_reason)})   incorrect"
    return [head, f"   tool calls {result.tool_calls}, invalid turns {result.format_failures}"]


def reasoning_line(step: Step, width: int = REASONING_WIDTH) -> str:
    """The step's thinking-mode text on one truncated line ("" without reasoning).

    The console screens render steps with their own widgets; they call this for the
    same line (and dim it themselves).

    Args:
        step: the step.
        width: characters of reasoning shown.

    Returns:
        e.g. "  reasoning (412 tokens): The search returned a page about …".
    """
    if not step.reasoning:
        return ""
    tokens = f" ({step.reasoning_tokens} tokens)" if step.reasoning_tokens else ""
    return f"  reasoning{tokens}: {_clip(step.reasoning, width)}"


def summary_lines(result: EpisodeResult, gold: str, task: str = TASK_HOTPOTQA) -> list[str]:
    """The episode's outcome: answer, its score (`core.scoring.score_note`: HotpotQA's F1;
    none for a FEVER verdict), correctness and counts."""
    if result.error:
        return [f"══ ERROR: {result.error}"]
    if result.answered:
        verdict = "correct" if result.correct else "incorrect"
        flag = "  (placeholder answer)" if result.placeholder else ""
        score = score_note(result.f1, task)
        head = (f"══ answer: {result.answer!r} at action {result.answer_action}   gold: {gold!r}"
                f"   {score + '   ' if score else ''}{verdict}{flag}")
    else:
        head = f"══ unanswered ({end_text(result.end_reason)})   gold: {gold!r}   incorrect"
    counts = (f"   tool calls {result.tool_calls}, judgment calls {result.extra_calls}, "
              f"forced turns {result.forced_turns}, refused {result.refused_calls}, "
              f"format failures {result.format_failures}, tokens {result.input_tokens:,} in / "
              f"{result.output_tokens:,} out"
              + (f" ({result.reasoning_tokens:,} reasoning)" if result.reasoning_tokens else ""))
    return [head, counts]


