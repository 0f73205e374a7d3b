"""Failure regimes: which observations fail, and the seeded draws that replace them
(docs/conditions.md).

A regime is a frozen spec (`Regime`) that serialises to canonical JSON. Whether
observation i (1-based, counting tool results) fails is `Regime.fails(i)`. A failed
observation's replacement page is drawn with `draw_rng`, keyed by (seed, question
id, observation index) through blake2b, so every condition and every rerun of a
cell sees the same draw: from another question's KB (`ForeignPool.draw`) or, for
`plausible`, from the question's own distractors (`ForeignPool.draw_own_distractor`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from core.canonical import canonical_json, keyed_rng, sha256_hex
from core.data import Paragraph, Question
from core.errors import ConfigError
from core.kb import normalize_title

MEAN6 = (
    "clean",
    "persistent",
    "recover_after_1",
    "recover_after_2",
    "recover_after_3",
    "late_onset_from_3",
)
FAILURE_REGIMES = MEAN6[1:]
MEAN3 = ("clean", "persistent", "recover_after_2")
"""The three regimes of the paper's 16-action runs (Table 16), averaged as mean3."""
MAIN_FAMILY = "main"
DELTA_FAILURE, DELTA_MEAN6 = "failure", "mean6"
DELTA_REGIMES = (DELTA_FAILURE, DELTA_MEAN6)
"""What the main family's time-matched Δ pools (``lab results --delta-regimes``): its
five failure regimes (the default, as the main paper pools Δ, App. C.1 and Table 13)
or all six mean6 regimes, clean included (lab's definition before it followed the
paper). Other families pool their own regime either way."""


def expand_mean6(names: Sequence[str]) -> tuple[str, ...]:
    """Regime names with ``mean6`` standing for its six regimes (`MEAN6`), as the
    commands read ``--regimes``; the other names as given, in order."""
    return tuple(r for name in names for r in (MEAN6 if name == "mean6" else (name,)))


def regime_family(name: str) -> str:
    """The family a regime belongs to; measures never pool regimes of different families.

    The six mean6 regimes form the main study's family ("main"); every other regime
    (plausible, answerless, recover_after_4, late_onset_from_2, …) is a family of
    its own (paper Table 8 reports plausible apart).

    Args:
        name: a regime name.

    Returns:
        "main" for a mean6 regime, else the name itself.
    """
    return MAIN_FAMILY if name in MEAN6 else name


KINDS = ("clean", "persistent", "recover_after", "late_onset_from", "plausible", "answerless")
DEFAULT_LATE_ONSET = 3
MAX_RECOVER_AFTER = 5


def regime_sort_key(name: str) -> tuple[int, int] | None:
    """Where a regime name goes in the canonical order of tables and lists: clean,
    persistent, recover_after_1…5, late_onset_from_k, plausible, answerless (`KINDS`,
    then the parameter); None for a name that is not a regime (mean6, a variant …).

    Args:
        name: a regime name, e.g. "recover_after_2".

    Returns:
        A sort key, or None.
    """
    if name in KINDS and name not in ("recover_after", "late_onset_from"):
        return KINDS.index(name), 0
    if name == "late_onset":
        return KINDS.index("late_onset_from"), DEFAULT_LATE_ONSET
    m = _PARAM_NAME.fullmatch(name)
    return (KINDS.index(m.group(1)), int(m.group(2))) if m else None


_SHORT = {"persistent": "pers.", "plausible": "plaus.", "answerless": "answerl."}


def short_regime(name: str) -> str:
    """The paper's short regime name (rec2, late3, pers., …), as tables and lists print it.

    Args:
        name: a regime name, e.g. "recover_after_2".

    Returns:
        The short form, or the name itself (clean, a variant, mean6 …).
    """
    m = re.fullmatch(r"(recover_after|late_onset_from)_(\d+)", name)
    if m:
        return ("rec" if m.group(1) == "recover_after" else "late") + m.group(2)
    return _SHORT.get(name, name)


VALID_NAMES = (
    "clean, persistent, recover_after_1..recover_after_5, late_onset_from_<k> (k >= 1), "
    "late_onset (= late_onset_from_3), plausible, answerless"
)
"""Every regime name `parse_regime` accepts, in words (error lines, the amendment template)."""
_PARAM_NAME = re.compile(r"(recover_after|late_onset_from)_([1-9][0-9]*)")
# Foreign pages whose title is also in the question's own KB are redrawn (from the
# same seeded stream), so a "failed" observation never shows the question's own page.
_MAX_FOREIGN_ATTEMPTS = 64
_DRAWS_KEPT = 1 << 16
"""Foreign draws a pool remembers (then it starts over): every arm and model of a grid
draws the same (seed, question, observation) pages, a seeded stream each."""


@dataclass(frozen=True)
class Regime:
    """A failure schedule.

    Attributes:
        name: canonical name, e.g. "recover_after_2" or "late_onset_from_3".
        kind: one of `KINDS`.
        param: c for recover_after, k for late_onset_from, else None.
    """

    name: str
    kind: str
    param: int | None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown regime kind {self.kind!r}; valid kinds: {', '.join(KINDS)}")
        expected = self.kind if self.param is None else f"{self.kind}_{self.param}"
        if self.kind == "recover_after":
            ok = self.param is not None and 1 <= self.param <= MAX_RECOVER_AFTER
        elif self.kind == "late_onset_from":
            ok = self.param is not None and self.param >= 1
        else:
            ok = self.param is None
        if not ok or self.name != expected:
            raise ConfigError(
                f"inconsistent regime (name={self.name!r}, kind={self.kind!r}, "
                f"param={self.param!r}); build regimes with parse_regime(name)"
            )

    def fails(self, i: int) -> bool:
        """Whether observation `i` (1-based) fails under this regime.

        Args:
            i: observation index, counting tool results 1, 2, 3, ...

        Returns:
            True when the real tool result is to be replaced.

        Raises:
            ValueError: if `i` < 1.
        """
        if i < 1:
            raise ValueError(f"observation index is 1-based, got {i}")
        if self.kind in ("persistent", "plausible"):
            return True
        if self.kind == "recover_after":
            return i <= self.param  # type: ignore[operator]
        if self.kind == "late_onset_from":
            return i >= self.param  # type: ignore[operator]
        return False  # clean, answerless

    @property
    def answerless(self) -> bool:
        """Whether the KB has its supporting-fact sentences removed."""
        return self.kind == "answerless"

    @property
    def plausible(self) -> bool:
        """Whether failed observations are the question's own distractor pages."""
        return self.kind == "plausible"

    def to_json(self) -> str:
        """Canonical JSON of the spec (sorted keys, no spaces)."""
        return canonical_json(asdict(self))

    def spec_hash(self) -> str:
        """sha256 hex digest of `to_json()`."""
        return sha256_hex(self.to_json())


def parse_regime(name: str) -> Regime:
    """Build a regime from its name.

    Args:
        name: "clean", "persistent", "recover_after_<c>" (c = 1..5),
            "late_onset_from_<k>" (k >= 1), "late_onset" (= late_onset_from_3),
            "plausible" or "answerless".

    Returns:
        The regime, with its canonical name.

    Raises:
        ConfigError: for any other name.
    """
    if not isinstance(name, str):
        raise ConfigError(f"regime name must be a string, got {name!r}; valid: {VALID_NAMES}")
    if name in ("clean", "persistent", "plausible", "answerless"):
        return Regime(name, name, None)
    if name == "late_onset":
        k = DEFAULT_LATE_ONSET
        return Regime(f"late_onset_from_{k}", "late_onset_from", k)
    m = _PARAM_NAME.fullmatch(name)
    if m is not None:
        kind, param = m.group(1), int(m.group(2))
        if kind == "late_onset_from" or param <= MAX_RECOVER_AFTER:
            return Regime(name, kind, param)
    raise ConfigError(f"unknown regime {name!r}; valid: {VALID_NAMES}")


@lru_cache(maxsize=4096)
def _normalized_titles(titles: tuple[str, ...]) -> frozenset[str]:
    """The normalized titles of a question's pages, computed once per question: every
    failed observation of its episodes redraws against them."""
    return frozenset(normalize_title(t) for t in titles)


def draw_rng(seed: int, question_id: str, obs_index: int) -> random.Random:
    """A random stream keyed by (seed, question id, observation index).

    Keyed through blake2b of ``f"{seed}|{question_id}|{obs_index}"`` (never Python's
    salted `hash()`), so the stream is identical across processes, conditions and reruns.

    Args:
        seed: the cell's seed.
        question_id: the question's id.
        obs_index: 1-based observation index.

    Returns:
        A fresh `random.Random` seeded from the key.
    """
    return keyed_rng(seed, question_id, obs_index)


class ForeignPool:
    """Source of replacement pages for failed observations.

    The pool is grouped by dataset and sorted by question id, so draws do not depend
    on construction order. Foreign draws come from other questions of the same
    dataset; questions with no pages are never drawn.

    Args:
        questions: the pool (e.g. the question set or the whole dataset).

    Raises:
        ConfigError: if two different questions share an id.
    """

    __slots__ = ("_by_dataset", "_position", "_draws")

    def __init__(self, questions: Sequence[Question]) -> None:
        by_id: dict[str, Question] = {}
        for q in questions:
            seen = by_id.setdefault(q.id, q)
            if seen != q:
                raise ConfigError(f"foreign pool has two different questions with id {q.id!r}")
        by_dataset: dict[str, list[Question]] = {}
        for qid in sorted(by_id):
            q = by_id[qid]
            if q.paragraphs:
                by_dataset.setdefault(q.dataset, []).append(q)
        self._by_dataset: dict[str, tuple[Question, ...]] = {
            d: tuple(qs) for d, qs in by_dataset.items()
        }
        self._position: dict[tuple[str, str], int] = {
            (d, q.id): i for d, qs in self._by_dataset.items() for i, q in enumerate(qs)
        }
        self._draws: dict[tuple[Any, ...], tuple[str, int, Paragraph]] = {}

    def draw(self, seed: int, question: Question, obs_index: int) -> tuple[str, int, Paragraph]:
        """Draw a page from another question's KB.

        A drawn page whose title is also a title in `question`'s own KB is redrawn
        from the same seeded stream.

        Args:
            seed: the cell's seed.
            question: the episode's question (never drawn itself).
            obs_index: 1-based observation index.

        Returns:
            (foreign question id, page index in its KB, page).

        Raises:
            ConfigError: if the pool has no other question of the same dataset, or
                every drawn page shares a title with the question's own KB.
        """
        titles = tuple(p.title for p in question.paragraphs)
        key = (seed, question.dataset, question.id, obs_index, titles)
        drawn = self._draws.get(key)
        if drawn is None:
            drawn = self._draw(seed, question, obs_index, titles)
            if len(self._draws) >= _DRAWS_KEPT:
                self._draws.clear()
            self._draws[key] = drawn
        return drawn

    def _draw(self, seed: int, question: Question, obs_index: int,
              titles: tuple[str, ...]) -> tuple[str, int, Paragraph]:
        """`draw` without the memory of earlier draws."""
        candidates = self._by_dataset.get(question.dataset, ())
        own = self._position.get((question.dataset, question.id))
        n_other = len(candidates) - (own is not None)
        if n_other <= 0:
            raise ConfigError(
                f"foreign pool has no question other than {question.id!r} "
                f"in dataset {question.dataset!r} to draw failed observations from"
            )
        own_titles = _normalized_titles(titles)
        rng = draw_rng(seed, question.id, obs_index)
        for _ in range(_MAX_FOREIGN_ATTEMPTS):
            j = rng.randrange(n_other)
            if own is not None and j >= own:
                j += 1  # skip the question itself
            foreign = candidates[j]
            k = rng.randrange(len(foreign.paragraphs))
            page = foreign.paragraphs[k]
            if normalize_title(page.title) not in own_titles:
                return foreign.id, k, page
        raise ConfigError(
            f"could not draw a foreign page for question {question.id!r}: "
            f"{_MAX_FOREIGN_ATTEMPTS} draws all shared a title with its own KB"
        )

    def draw_own_distractor(
        self, seed: int, question: Question, obs_index: int
    ) -> tuple[int, Paragraph]:
        """Draw one of the question's own non-gold pages (the `plausible` regime).

        Args:
            seed: the cell's seed.
            question: the episode's question.
            obs_index: 1-based observation index.

        Returns:
            (page index in the question's KB, page).

        Raises:
            ConfigError: if the question has no distractor page.
        """
        gold = question.gold_titles
        distractors = [i for i, p in enumerate(question.paragraphs) if p.title not in gold]
        if not distractors:
            raise ConfigError(f"question {question.id!r} has no distractor page to draw")
        k = distractors[draw_rng(seed, question.id, obs_index).randrange(len(distractors))]
        return k, question.paragraphs[k]
