"""A configurable stated-judgment reader (its defaults are the library's reader) and the
plain running count of stated useless judgments, references for the reader's tests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.judges import USEFUL_PATTERNS, USELESS_PATTERNS, _classify, leading_sentences


@dataclass(frozen=True)
class StatedJudgmentReader:
    """A configurable keyword reader; the defaults equal `read_stated_judgment`.

    Attributes:
        useless_patterns: regexes (case-insensitive) that mark a useless judgment
            (checked first).
        useful_patterns: regexes that mark a useful judgment.
        n_sentences: how many leading sentences of the thought are read.
    """

    useless_patterns: tuple[str, ...] = USELESS_PATTERNS
    useful_patterns: tuple[str, ...] = USEFUL_PATTERNS
    n_sentences: int = 2
    _useless_re: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _useful_re: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_useless_re", tuple(
            re.compile(p, re.IGNORECASE) for p in self.useless_patterns))
        object.__setattr__(self, "_useful_re", tuple(
            re.compile(p, re.IGNORECASE) for p in self.useful_patterns))

    def read(self, thought: str | None) -> str | None:
        """Classify a thought as "useless", "useful" or None (see read_stated_judgment)."""
        if not thought:
            return None
        return _classify(leading_sentences(thought, self.n_sentences), self._useless_re,
                         self._useful_re)

    def __call__(self, thought: str | None) -> str | None:
        return self.read(thought)


def update_stated_run(run: int, judgment: str | None) -> int:
    """Advance the stated-judgment run: consecutive observations the agent called useless.

    Args:
        run: the current number of consecutive observations judged useless.
        judgment: "useless"/"useful"/None (upper case accepted).

    Returns:
        run + 1 for useless, 0 for useful, `run` unchanged for None.

    This is the running count a harness can act on, as it runs. The analysis is
    stricter (paper A18): after a thought with no explicit judgment the run is
    unknown until the next useful one (``analysis.measures.decisions``).
    """
    if judgment is None:
        return run
    lowered = judgment.lower()
    if lowered == "useless":
        return run + 1
    if lowered == "useful":
        return 0
    raise ValueError(f"unknown stated judgment {judgment!r}")


