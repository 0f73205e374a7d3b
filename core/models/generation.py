"""Generation settings of a served model: max_tokens, sampling, seeds, stop strings.

The defaults are those of the main paper's runs as its authors' released harness sends
them (see docs/models.md, "Generation settings"); every one can be set per model in
lab.toml, and the resolved values enter the model's spec hash, so results under
different settings never pool.

- Acting max_tokens by model family, recognised from the served model's name
  (case-insensitive, ignoring "-", "_" and spaces): Qwen3 1,024; Llama-3.1 and
  Qwen2.5 400; any other served model 400 (the harness gives every non-Qwen3 model
  400); Claude 1,024. `max_tokens = N` overrides it.
- A thinking turn of a served model may generate 8,192 tokens in all (reasoning and
  action: the harness's thinking budget is the whole turn), i.e. a thinking budget of
  8,192 minus the acting max_tokens unless `thinking_budget` says otherwise.
- Sampling of a served model without a `sampling` table, sent explicitly (vLLM would
  otherwise apply its own defaults or the model's generation_config.json): a Qwen3
  model Qwen's recommended values (temperature 0.7, top_p 0.8, top_k 20; thinking 0.6,
  0.95, 20), any other model greedy (temperature 0.0, top_p 1.0), as the main paper ran
  them.
- A per-request seed: by default derived from the sha256 of the request's messages,
  mixed with the episode's seed and replicate, so one request is reproducible and a
  replicate draws new seeds; `seed = N` fixes it, `seed = "none"` sends none.
- Stop strings are not sent on a thinking turn (a stop string written inside the
  reasoning would cut the reply before its action); the visible text is cut at the
  first stop string instead (`cut_at_stop`), as the server would have cut it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from core.canonical import canonical_json
from core.models.request_json import MessageJSON

FAMILIES: tuple[tuple[str, str, int], ...] = (
    ("qwen3", "qwen3", 1024),
    ("qwen2.5", "qwen2.5", 400),
    ("llama-3.1", "llama3.1", 400),
)
"""(family, the normalised name fragment that identifies it, acting max_tokens)."""
DEFAULT_ACT_MAX_TOKENS = 400
"""Acting max_tokens of a served model of no known family (the harness's non-Qwen3 value)."""
CLAUDE_ACT_MAX_TOKENS = 1024
"""Acting max_tokens of a Claude model (anthropic backend)."""
THINKING_TURN_TOKENS = 8192
"""All tokens a served model's thinking turn may generate, reasoning and action together."""
GREEDY: Mapping[str, float] = MappingProxyType({"temperature": 0.0, "top_p": 1.0})
QWEN3_SAMPLING: Mapping[str, float] = MappingProxyType(
    {"temperature": 0.7, "top_p": 0.8, "top_k": 20})
"""Qwen's recommended non-thinking sampling, what a Qwen3 model without a table sends."""
QWEN3_THINKING_SAMPLING: Mapping[str, float] = MappingProxyType(
    {"temperature": 0.6, "top_p": 0.95, "top_k": 20})
"""Qwen's recommended thinking sampling (a Qwen3 thinking model without a table)."""
"""What a served model without a `sampling` table sends."""
CLAUDE_HAIKU_SAMPLING: Mapping[str, float] = MappingProxyType({"temperature": 0.0})
"""What a Claude Haiku model without a `sampling` table sends when not thinking (the
harness ran Haiku at temperature 0 and the other Claude models at the API's defaults)."""
THINKING_TIMEOUT_S = 600.0
"""Default per-call timeout of a thinking model (a non-streamed reply of thousands of
tokens under a full batch takes minutes); `timeout_s` overrides it."""
SEED_PROMPT = "prompt"
"""Seed policy: derived from the request's messages, the episode's seed and replicate."""
SEED_NONE = "none"
"""Seed policy: send no seed (for servers that refuse the parameter)."""
TOOLS_TEXT = "text"
"""Claude's default: text-only ReAct, no tools declared, as the paper ran Claude."""
TOOLS_NATIVE = "native"
"""Claude option: search, lookup and finish declared as native tools."""
TOOLS_MODES = (TOOLS_TEXT, TOOLS_NATIVE)
_SEPARATORS = re.compile(r"[-_\s]+")
_SEED_MOD = 2 ** 31


def normalised(model: str) -> str:
    """The model name lower-cased without "-", "_" or spaces ("Llama-3.1" → "llama3.1")."""
    return _SEPARATORS.sub("", model.lower())


def family(model: str) -> str | None:
    """The family of a served model's name ("qwen3", "qwen2.5", "llama-3.1"), or None.

    Examples: "Qwen/Qwen3-8B" → "qwen3"; "meta-llama/Llama-3.1-8B-Instruct" and
    "Meta-Llama-3.1-8B" → "llama-3.1"; "Qwen/Qwen2.5-7B-Instruct" → "qwen2.5".
    """
    name = normalised(model)
    for label, fragment, _ in FAMILIES:
        if fragment in name:
            return label
    return None


def default_act_max_tokens(backend: str, model: str) -> int:
    """Acting max_tokens when lab.toml gives none: by family, Claude 1,024, else 400."""
    if backend == "anthropic":
        return CLAUDE_ACT_MAX_TOKENS
    found = family(model)
    return next((n for label, _, n in FAMILIES if label == found), DEFAULT_ACT_MAX_TOKENS)


def default_sampling(backend: str, model: str, thinking: bool) -> dict[str, float]:
    """Sampling of a model without a `sampling` table, as the main paper ran each model
    ("the Qwen3 models' recommended sampling", "greedy decoding for the others"): a
    served Qwen3 model Qwen's recommended values (thinking or not), any other served
    model greedy; Claude temperature 0 on Haiku without thinking, else none (the API's
    defaults)."""
    if backend == "openai":
        if family(model) == "qwen3":
            return dict(QWEN3_THINKING_SAMPLING if thinking else QWEN3_SAMPLING)
        return dict(GREEDY)
    if "haiku" in model.lower() and not thinking:
        return dict(CLAUDE_HAIKU_SAMPLING)
    return {}


def default_thinking_budget(act_max_tokens: int) -> int:
    """A served thinking model's budget when lab.toml gives none: the rest of an
    8,192-token turn (at least 1)."""
    return max(1, THINKING_TURN_TOKENS - act_max_tokens)


def request_seed(messages: Sequence[Mapping[str, Any]], episode_seed: int,
                 replicate: int, encoded: MessageJSON | None = None) -> int:
    """A request's seed: sha256 of the episode's seed, replicate and messages, below 2**31.

    The same request in the same episode draws the same seed; another replicate (or
    cell seed) draws another. `encoded` keeps the episode's messages' canonical JSON
    for its later calls (the same text).
    """
    payload = (canonical_json([episode_seed, replicate, [dict(m) for m in messages]],
                              ensure_ascii=False) if encoded is None
               else encoded.canonical((episode_seed, replicate), messages))
    return int(hashlib.sha256(payload.encode("utf-8")).hexdigest()[:15], 16) % _SEED_MOD


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """`text` up to its first stop string (excluded, as a server cuts), and whether it cut."""
    found = [i for s in stop if s and (i := text.find(s)) >= 0]
    if not found:
        return text, False
    return text[:min(found)].rstrip(), True
