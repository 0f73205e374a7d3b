"""Rich text for the Trajectories screen: one episode's header, its step strip, one
step in full, and the cells of the matched-arms table.

Every mark is a sign or a word as well as a style, so the screen reads the same in
16 colours and with NO_COLOR: ✗ failed observation, ✓ real one, ⏎ answer, ! forced
turn, ⊘ refused call, ? format failure, ↺ discarded turn (re-asked), ≠ first divergence.
A two-source step names its source (primary or backup); thinking-mode reasoning is a
dim line of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from console.render import move_text, observation_label, reasoning_line
from console.widgets.hanging import hang
from core.end_reasons import end_text
from core.episode import Step
from core.regimes import short_regime
from core.scoring import score_note
from core.store.imports import NO_TEXT
from core.store.trajectories import EpisodeDetail

OUTCOME_MARK = {"correct": "✓ correct", "wrong": "✗ wrong", "unanswered": "– unanswered",
                "errored": "‼ errored"}
"""Outcome words with a sign, as listed."""
OUTCOME_STYLE = {"correct": "green", "wrong": "red", "unanswered": "yellow",
                 "errored": "bold red"}
USELESS_MARK, USEFUL_MARK = "U", "ok"
"""A matched-arms cell's judgment: `U3` judged useless, the third in a row; `ok` useful."""
MATCHED_KEY = (f"{USELESS_MARK}1, {USELESS_MARK}2 …: judged useless, the 1st, 2nd … in a "
               f"row · {USEFUL_MARK}: judged useful")
"""The matched-arms view's key line for the judgment marks."""
LEGEND = ("✗ failed obs  ✓ real obs  ⏎ answer  ! forced  ⊘ refused  ? format failure  "
          "↺ discarded")


def clip(text: str, width: int) -> str:
    """One line of at most `width` characters (whitespace collapsed, "…" when cut)."""
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def step_sign(step: Step) -> str:
    """A one- or two-character sign for a step (see the module docstring)."""
    if step.format_failure:
        sign = "?"
    elif step.discarded:
        sign = "↺"
    elif step.action == "invalid":  # an imported episode's turn with no valid action
        sign = "?"
    elif step.action == "finish":
        sign = "⏎"
    elif step.refused:
        sign = "⊘"
    elif step.obs_index is None:
        sign = "·"
    else:
        sign = "✗" if step.obs_failed else "✓"
    return ("!" if step.forced else "") + sign


def strip(steps: tuple[Step, ...], current: int) -> Text:
    """All steps of an episode on one line, the current one bracketed and reversed.

    Args:
        steps: the episode's steps.
        current: index into `steps` of the step shown.

    Returns:
        e.g. ``1✗ 2✗ [3✓] 4⏎``.
    """
    out = Text()
    for i, step in enumerate(steps):
        label = f"{step.t}{step_sign(step)}"
        style = "red" if step.obs_failed else ("green" if step.action == "finish" else "")
        if i == current:
            out.append(f"[{label}]", style="bold reverse")
        else:
            out.append(f" {label} ", style=style)
    return out


KEEP = "\u00a0"
"""A no-break space: `hang` does not break a line there."""


def units(*items: str) -> str:
    """`items` joined by " · ", each kept whole when the line wraps (its spaces are
    no-break spaces until wrapped), so `run traj` or `seed 0` never splits."""
    return " · ".join(item.replace(" ", KEEP) for item in items)


HEAD_VALUE = 120
"""The most characters of an answer, gold answer or error the episode head shows (the
step view shows the rest)."""


def episode_head(d: EpisodeDetail, width: int = 80) -> Text:
    """Who ran what, the question, and how it ended, in four lines, each wrapped under
    its text at `width` (never cut: at 80 columns the run, the end reason and the gold
    answer are still on screen).

    Args:
        d: the episode.
        width: the screen width.

    Returns:
        The text.
    """
    r = d.row
    w = max(width - 2, 20)
    out = Text()
    who = f"episode {r.id} · "
    ident = units(r.model, r.arm, r.regime, f"seed {r.seed}", f"budget {r.budget}",
                  f"run {r.run}")
    out.append_text(hang(Text(who + ident, style="bold"), w, len(who)))
    asked = f"Q {r.question_id}: "
    out.append("\n")
    out.append_text(hang(Text(asked + " ".join((d.question or "").split())), w, len(asked)))
    out.append("\n")
    mark = OUTCOME_MARK[r.outcome]
    if d.error:
        tail = f": {clip(d.error, HEAD_VALUE)}"
    elif d.imported:
        tail = (f"· {NO_TEXT} (actions, judgments and success only)"
                + (f" · answered at action {r.answer_action}" if r.answer_action else ""))
    elif d.answer is not None:
        score = score_note(d.f1, d.task)
        tail = (f"· {clip(repr(d.answer), HEAD_VALUE)} at action {r.answer_action}"
                f"{', ' + score if score else ''} · gold {clip(repr(d.gold), HEAD_VALUE)}")
    else:
        tail = (f"· no answer ({end_text(d.end_reason)}) · gold "
                f"{clip(repr(d.gold), HEAD_VALUE)}")
    ended = Text()
    ended.append(mark, style=OUTCOME_STYLE[r.outcome])
    ended.append(" " + " ".join(tail.split()))
    out.append_text(hang(ended, w, len(mark) + 1))
    out.append("\n")
    calls = units(f"{d.tool_calls} tool, {d.extra_calls} judgment/extra",
                  f"{d.forced_turns} forced", f"{d.refused_calls} refused",
                  tokens_text(d.input_tokens, d.output_tokens))
    out.append_text(hang(Text(f"calls: {calls}", style="dim"), w))
    out.plain = out.plain.replace(KEEP, " ")  # wrapped now: plain spaces on screen
    return out


def _observation(step: Step, text: str | None, title: str) -> Text:
    out = Text()
    if text == NO_TEXT:
        out.append(f"observation {step.obs_index}  {step_sign(step)} "
                   f"{observation_label(step)} · {NO_TEXT}",
                   style="red" if step.obs_failed else "")
        return out
    if step.obs_failed:
        page = f" {title!r}" if title else ""
        out.append(f"observation {step.obs_index}  ✗ FAILED → {step.obs_source} page{page}",
                   style="bold red")
    else:
        out.append(f"observation {step.obs_index}  ✓ real ({step.obs_source or 'none'})",
                   style="green")
    if step.obs_ref:
        out.append(f"  [{step.obs_ref}]", style="dim")
    if text:
        out.append("\n  " + text)
    return out


def latency_text(ms: float | None) -> str:
    """A step's model time: `812 ms`, or `– (no time recorded)` for a step that has none
    (imported episodes and built-in sims store 0)."""
    return f"{ms:.0f} ms" if ms is not None and ms > 0 else "– (no time recorded)"


def tokens_text(n_in: int | None, n_out: int | None) -> str:
    """A call's or an episode's tokens: `tokens 5,017 in / 40 out`, or `tokens – (none
    recorded)` where none were counted (imported episodes: the released files carry none;
    every call made here, a sim's included, counts its prompt)."""
    if not n_in and not n_out:
        return "tokens – (none recorded)"
    return f"tokens {n_in or 0:,} in / {n_out or 0:,} out"


def _num(value: object, places: int = 2) -> str:
    return "–" if value is None else f"{float(value):.{places}f}"  # type: ignore[arg-type]


def probe_line(probe: Mapping[str, Any]) -> str:
    """One replayed probe as a line: kind, answer, correct, confidence, belief.

    Args:
        probe: a probe of `EpisodeDetail.probes`.

    Returns:
        The line (an unparsed reply says so; a failed call shows its error).
    """
    kind = str(probe["kind"]).replace("_", "-")
    head = f"probe {kind} (replay): "
    if probe.get("error"):
        return head + f"call failed: {clip(str(probe['error']), 80)}"
    if not probe.get("parse_ok"):
        return head + "reply did not parse (missing, never coerced)"
    if probe["kind"] == "judgment":
        return head + str(probe["judgment"])
    if probe["kind"] == "belief":
        return head + (f"p_continue {_num(probe['p_continue'])} · p_answer_now "
                       f"{_num(probe['p_answer_now'])} · prefer {probe['prefer']}")
    mark = "correct" if probe.get("correct") else "wrong"
    conf = ("" if probe["kind"] not in ("answer_now", "answer_now_confidence") else
            f" · confidence {_num(probe['confidence'])}" if probe.get("confidence") is not None
            else " · confidence –")
    return head + f"answer {clip(str(probe['answer']), 60)!r} ({mark}){conf}"


def step_body(step: Step, text: str | None, title: str, total: int,
              legend: bool = False, probes: Sequence[Mapping[str, Any]] = ()) -> Text:
    """One step in full: thought, action, observation, judgment, streak, flags, tokens.

    Args:
        step: the step.
        text: the observation text the agent saw (None when none).
        title: the page title behind the observation.
        total: number of steps of the episode.
        legend: end with the legend of the step signs.
        probes: replayed probes at this step (`lab replay`, `lab repair`).

    Returns:
        The text.
    """
    out = Text()
    out.append(f"action {step.t} of {total}", style="bold")
    flags = [w for w, on in (("FORCED turn", step.forced), ("REFUSED: tool call not executed",
                                                             step.refused),
                             ("FORMAT FAILURE", step.format_failure),
                             ("DISCARDED: re-asked with the finish instruction",
                              step.discarded)) if on]
    if flags:
        out.append("  [" + ", ".join(flags) + "]", style="bold yellow")
    out.append("\n")
    if step.decision or step.decision_raw is not None:
        out.append(f"decision: {step.decision or 'unparsed'}\n")
    if step.decision_raw is not None and step.decision_raw.strip() != f"DECISION: {step.decision}":
        out.append("decision reply: ", style="bold")  # the decide arm's own turn, verbatim
        out.append(clip(step.decision_raw.strip(), 600) + "\n")
    reasoning = reasoning_line(step)
    if reasoning:
        out.append(reasoning.strip() + "\n", style="dim")
    if step.thought:
        out.append("thought: ", style="bold")
        out.append(step.thought.strip() + "\n")
    if step.format_failure:
        out.append("raw output: ", style="bold")
        out.append(clip(step.raw, 600) + "\n")
    else:
        out.append("action: ", style="bold")
        out.append(move_text(step))
        if step.tool_source:
            out.append(f"  ({step.tool_source} source)", style="bold" if
                       step.tool_source == "backup" else "")
        out.append("\n")
    if step.obs_index is not None:
        out.append_text(_observation(step, text, title))
        out.append("\n")
    judged = step.judgment or (f"unparsed {step.judgment_raw!r}" if step.judgment_raw else None)
    parts = [f"judgment: {judged} ({step.judgment_source or 'side channel'})" if judged else
             "judgment: –"]
    if step.stated_judgment:
        parts.append(f"stated: {step.stated_judgment}")
    if step.rule_signal:
        parts.append(f"rule signal: {step.rule_signal}")
    parts.append(f"useless streak: {step.streak}")
    out.append("  ·  ".join(parts) + "\n")
    for probe in probes:
        out.append(probe_line(probe) + "\n", style="cyan")
    out.append(f"{tokens_text(step.input_tokens, step.output_tokens)} · "
               f"{latency_text(step.latency_ms)}", style="dim")
    if legend:
        out.append("\n" + LEGEND, style="dim")
    return out


def matched_cell(step: Step | None, width: int) -> str:
    """One arm's step in a matched-arms row, e.g. ``✗ search[Drilell Ens…] U3``.

    Args:
        step: the step at this action, or None when the episode had ended.
        width: cell width.

    Returns:
        The cell text.
    """
    if step is None:
        return "(ended)"
    sign = step_sign(step)
    if step.format_failure:
        move = "format failure"
    else:
        move = move_text(step)
    judged = {"USELESS": f" {USELESS_MARK}{step.streak}",
              "USEFUL": f" {USEFUL_MARK}"}.get(step.judgment or "", "")
    return clip(f"{sign} {move}", max(width - len(judged), 4)) + judged


def codes_text(act_column: str) -> str:
    """What the Trajectories screen's short codes mean (its `?` help), from the names that
    make them: the list's `act` column, the regimes' short names (`core.regimes`) and the
    matched-arms judgment marks.

    Args:
        act_column: what the list's `act` column holds.
    """
    rec = [short_regime(f"recover_after_{k}") for k in (1, 5)]
    late = short_regime("late_onset_from_3")
    return (f"Codes: act = {act_column}; {short_regime('persistent')} = persistent, "
            f"{rec[0]}…{rec[1]} = recover_after_1…5 (the first 1…5 observations fail, then "
            f"real ones), {late} = late_onset_from_3 (observations 3 on fail); "
            f"{MATCHED_KEY}; signs: {LEGEND}; a step's time – : none recorded (imported "
            "episodes, built-in sims); tokens – : none recorded (imported episodes).")
