"""Thinking-mode text: split it from a reply and count its tokens (docs/models.md).

Reasoning is stored per step (steps.reasoning) and never goes back into the acting
history: backends return it in `Generation.reasoning`, apart from `Generation.text`.
Its tokens are part of a reply's output tokens; where the API does not report them
separately they are estimated by `estimate_reasoning_tokens`.
"""

from __future__ import annotations

from core.thinking import THINK_BLOCK_RE as _THINK_RE
from core.thinking import THINK_CLOSE as _CLOSE
from core.thinking import THINK_OPEN as _OPEN


def split_reasoning(text: str) -> tuple[str, str]:
    """(text without <think> blocks, the reasoning inside them).

    A reply that opens with reasoning but whose `<think>` tag was part of the prompt
    (Qwen3's template) has only a closing `</think>`: everything before it is
    reasoning. A `<think>` that is never closed (generation cut inside the reasoning)
    makes everything after it reasoning, so no reasoning reaches the acting history.

    Args:
        text: the reply's content.

    Returns:
        (the reply without reasoning, the reasoning parts joined by a blank line).
    """
    parts = [m.strip() for m in _THINK_RE.findall(text)]
    text = _THINK_RE.sub("", text)
    lower = text.lower()
    if _CLOSE in lower:
        i = lower.index(_CLOSE)
        parts.insert(0, text[:i].strip())
        text = text[i + len(_CLOSE):]
        lower = text.lower()
    if _OPEN in lower:
        i = lower.index(_OPEN)
        parts.append(text[i + len(_OPEN):].strip())
        text = text[:i]
    return text.strip(), "\n\n".join(p for p in parts if p)


def estimate_reasoning_tokens(output_tokens: int, reasoning: str, text: str) -> int:
    """The reasoning's share of a reply's output tokens, split by characters.

    Used where the API reports only the total (vLLM without
    `completion_tokens_details`, Anthropic): the output tokens are divided between
    reasoning and visible text in proportion to their lengths.

    Args:
        output_tokens: the reply's output tokens as reported (reasoning included).
        reasoning: the reasoning text.
        text: the visible reply text.

    Returns:
        The estimate, 0 without reasoning, at most `output_tokens`.
    """
    if not reasoning or output_tokens <= 0:
        return 0
    share = len(reasoning) / (len(reasoning) + len(text))
    return min(output_tokens, max(1, round(output_tokens * share)))
