"""Which episodes one result row covers: arms by their full spec, never pooled by name.

A row's group is (model, arm, condition_hash, budget, dataset, question_set, run,
seed, replicate): an arm is its label (`core.conditions.arm_label`, every
non-default knob shown) and its condition hash, so ``enforced_rule:k=2`` and
``enforced_rule:k=7``, ``none`` and ``none:judge=true``, or two ``random_rule`` rates
are always different rows. `Grouping.pool` may merge runs, seeds, replicates or
question sets; the row then lists the values it covers ("0,1", "dev100+test300").
Tables whose measures read decisions across regimes also split by regime family
(`core.regimes.regime_family`), so the main study's six regimes never pool with
``plausible`` or ``answerless``.

`Grouping.groups` yields each group's ArmKey and sub-frame; `Grouping.codes` gives the
same ArmKeys and one integer group code per row, for tables that compute every group
at once (``np.bincount(codes, weights)``, one ``argsort``) instead of looping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd

from analysis.stats.codes import column_changes, first_rows, sorted_codes
from core.pack_labels import split_pack
from core.regimes import MEAN6, regime_family

GROUP_KEYS = ("model", "arm", "condition_hash", "budget", "dataset", "question_set", "run",
              "seed", "replicate")
"""The columns that split rows by default."""
POOL_COLUMNS = MappingProxyType({"runs": "run", "seeds": "seed", "replicates": "replicate",
                                 "sets": "question_set"})
"""`--pool` names and the column each merges."""
EXPLORATORY = "exploratory"
_SEPARATOR = MappingProxyType({"question_set": "+"})


def with_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every grouping column present (defaults for hand-built frames).

    Frames read from lab.db have them all; a frame without `arm` takes the bare
    condition name, without a hash "" , without dataset/set/run "", seed and
    replicate 0, amendment None.

    Args:
        frame: an episode or decision frame.

    Returns:
        The frame itself when nothing is missing, else a copy with the columns added.
    """
    defaults = {"condition_hash": "", "dataset": "", "question_set": "", "run": "", "seed": 0,
                "replicate": 0, "amendment": None}
    missing = [c for c in ("arm", *defaults) if c not in frame]
    if not missing:
        return frame
    out = frame.copy()
    for column in missing:
        if column == "arm":
            out["arm"] = out["condition"] if "condition" in out else ""
        else:
            out[column] = defaults[column]
    return out


def regime_order(regimes: Iterable[str]) -> tuple[str, ...]:
    """Regimes for display: the mean6 ones in the paper's order, then the others sorted."""
    present = set(regimes)
    return tuple(r for r in MEAN6 if r in present) + tuple(sorted(present - set(MEAN6)))


@dataclass(frozen=True, order=True)
class ArmKey:
    """Identity of one group of episodes (one line of a table).

    Attributes:
        model: model name.
        arm: arm label, e.g. "enforced_rule:k=7".
        budget: action budget.
        dataset: dataset of the questions.
        question_set: question set, or the sets covered joined by "+".
        runs: run, or the runs covered joined by ",".
        seeds: seed, or the seeds covered.
        replicates: replicate, or the replicates covered.
        family: regime family when the table splits by family, else "".
        condition_hash: sha256 of the condition spec.
        condition: bare condition name.
        amendment: governing amendment(s) of the runs, or "exploratory".
        regimes: regimes present in the group.
        errored: (regime, count) of the group's errored episodes that have no complete
            retry.
        apart: (regime, end reason, count) of the group's complete episodes that ended
            with a truncated generation or a refusal (`core.end_reasons.APART`): in
            every estimate, as not answering, and counted apart on each row.
    """

    model: str
    arm: str
    budget: int
    dataset: str
    question_set: str
    runs: str
    seeds: str
    replicates: str
    family: str
    condition_hash: str
    condition: str
    amendment: str = field(default="", compare=False)
    regimes: tuple[str, ...] = field(default=(), compare=False)
    errored: tuple[tuple[str, int], ...] = field(default=(), compare=False)
    apart: tuple[tuple[str, str, int], ...] = field(default=(), compare=False)

    def pair_key(self) -> tuple[object, ...]:
        """What a paired comparison must share: all but the arm, except the prompt pack
        in its label (`core.pack_labels`): an arm is compared with the reference that
        ran with the same wording."""
        return (self.model, self.budget, self.dataset, self.question_set, self.runs,
                self.seeds, self.replicates, self.family, split_pack(self.arm)[1])

    def is_arm(self, label: str) -> bool:
        """Whether this is the arm `label` names: its label, or its label without the
        prompt pack's marker (so "none" names the unaided arm under any wording)."""
        return self.arm == label or split_pack(self.arm)[0] == label

    def errored_in(self, regimes: Iterable[str] | None = None) -> int:
        """Errored episodes of the group in `regimes` (default: all of them)."""
        if regimes is None:
            return sum(n for _, n in self.errored)
        wanted = set(regimes)
        return sum(n for r, n in self.errored if r in wanted)

    def apart_in(self, reason: str, regimes: Iterable[str] | None = None) -> int:
        """Complete episodes of the group in `regimes` (default: all of them) that ended
        with `reason`, one of `core.end_reasons.APART`."""
        wanted = None if regimes is None else set(regimes)
        return sum(n for r, why, n in self.apart
                   if why == reason and (wanted is None or r in wanted))


def _families(frame: pd.DataFrame, split: bool) -> pd.Series:
    if not split:
        return pd.Series("", index=frame.index, dtype=object)
    names = {r: regime_family(str(r)) for r in frame["regime"].unique()}
    return frame["regime"].map(names).astype(object)


def _run_starts(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """The first row of each run of rows holding equal values in `columns` (a NaN starts
    a run of its own: runs are only ever cut too often, never joined wrongly).

    Args:
        frame: the rows.
        columns: the columns compared.

    Returns:
        Row positions, ascending, starting with 0 (empty for an empty frame).
    """
    n = len(frame)
    change = np.zeros(max(n - 1, 0), dtype=bool)
    for column in columns:
        change |= column_changes(frame[column])
    return np.flatnonzero(np.concatenate(([n > 0], change)))


def _group_codes(keys: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Dense group code per row from (codes, distinct values) of each key, numbered in
    the sorted order of the key tuples; and each group's first row."""
    combined = np.zeros(len(keys[0][0]), dtype=np.int64)
    span = 1
    for codes, size in keys:
        size = max(size, 1)
        if span * size >= 2 ** 62:
            combined = np.unique(combined, return_inverse=True)[1].astype(np.int64).reshape(-1)
            span = int(combined.max()) + 1
        combined = combined * size + codes
        span *= size
    if span <= max(4 * len(combined), 1 << 16):  # few possible keys: count, do not sort
        present = np.bincount(combined, minlength=span) > 0
        inverse = (np.cumsum(present) - 1)[combined]
        return inverse, first_rows(inverse, int(present.sum()))
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), first


def _values_per_group(groups: np.ndarray, n_groups: int, codes: np.ndarray,
                      uniques: np.ndarray) -> list[set]:
    """The distinct values of a column (codes into uniques) within each group."""
    width = max(len(uniques), 1)
    pairs = np.flatnonzero(np.bincount(groups * width + codes, minlength=n_groups * width))
    out: list[set] = [set() for _ in range(n_groups)]
    for group, which in zip((pairs // width).tolist(), (pairs % width).tolist()):
        out[group].add(uniques[which])
    return out


def _joined(values: set, column: str) -> str:
    present = [v for v in values if not pd.isna(v)]
    return _SEPARATOR.get(column, ",").join(str(v) for v in sorted(present))


@dataclass(frozen=True, eq=False)
class Grouping:
    """How rows are formed: what is pooled, and the errored episodes to count per row.

    Attributes:
        pool: dimensions merged, among POOL_COLUMNS ("runs", "seeds", "replicates",
            "sets"); never the arm, model, budget or dataset.
        errored: errored episodes without a complete retry (`analysis.measures.decisions.
            errored_episodes`), counted on the row of their group; None: none.
        apart: complete episodes that ended truncated or refused (`apart_episodes`),
            counted on the row of their group by end reason; None: none.
    """

    pool: tuple[str, ...] = ()
    errored: pd.DataFrame | None = None
    apart: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        bad = [p for p in self.pool if p not in POOL_COLUMNS]
        if bad:
            raise ValueError(f"cannot pool {bad[0]!r}; choose from {', '.join(POOL_COLUMNS)}")

    @property
    def pooled(self) -> str:
        """What rows pool, e.g. "seeds, runs" ("" when nothing is pooled)."""
        return ", ".join(p for p in POOL_COLUMNS if p in self.pool)

    def columns(self) -> list[str]:
        """The grouping columns left after pooling."""
        merged = {POOL_COLUMNS[p] for p in self.pool}
        return [c for c in GROUP_KEYS if c not in merged]

    def _errored_counts(self, by: list[str], families: bool
                        ) -> dict[tuple[object, ...], tuple[tuple[str, int], ...]]:
        if self.errored is None or self.errored.empty:
            return {}
        err = with_keys(self.errored)
        err = err.assign(_family=_families(err, families))
        counts: dict[tuple[object, ...], Counter[str]] = {}
        for key, sub in err.groupby(by, sort=False, dropna=False):
            counts[tuple(key)] = Counter(sub["regime"].astype(str))
        return {k: tuple(sorted(c.items())) for k, c in counts.items()}

    def _apart_counts(self, by: list[str], families: bool
                      ) -> dict[tuple[object, ...], tuple[tuple[str, str, int], ...]]:
        if self.apart is None or self.apart.empty:
            return {}
        ended = with_keys(self.apart)
        ended = ended.assign(_family=_families(ended, families))
        counts: dict[tuple[object, ...], Counter[tuple[str, str]]] = {}
        for key, sub in ended.groupby(by, sort=False, dropna=False):
            counts[tuple(key)] = Counter(zip(sub["regime"].astype(str),
                                             sub["end_reason"].astype(str)))
        return {k: tuple((r, why, n) for (r, why), n in sorted(c.items()))
                for k, c in counts.items()}

    def codes(self, frame: pd.DataFrame, families: bool = False
              ) -> tuple[list[ArmKey], np.ndarray]:
        """Every group's ArmKey, and the group of each row, without splitting the frame.

        For vectorising across groups: ``keys[codes[i]]`` is the group of row ``i``;
        ``keys`` is in `groups`' order and equals the ArmKeys it yields, and
        ``frame.iloc[np.flatnonzero(codes == g)]`` is the sub-frame `groups` yields
        for ``keys[g]``.

        Signature: ``keys, codes = Grouping(pool=("seeds",)).codes(decisions, True)``.

        Args:
            frame: an episode or decision frame.
            families: also split by regime family (Δ, design contrast, I, hazard).

        Returns:
            (ArmKey per group, int64 group code per frame row).
        """
        if frame.empty:
            return [], np.zeros(0, dtype=np.int64)
        frame = with_keys(frame)
        starts = _run_starts(frame, self._factor_columns())
        if len(starts) * 4 > len(frame):
            return self._codes_of(frame, families)
        # rows come in runs holding the same values (a cell's episodes, an episode's
        # decisions): the groups of the runs' first rows, each spread over its run
        keys, codes = self._codes_of(frame.iloc[starts], families)
        return keys, np.repeat(codes, np.diff(np.append(starts, len(frame))))

    def _factor_columns(self) -> list[str]:
        """The columns `codes` reads: the grouping columns, those pooled, the regime,
        the condition and the amendment."""
        cols = self.columns()
        pooled = [c for c in ("question_set", "run", "seed", "replicate") if c not in cols]
        return list(dict.fromkeys([*cols, *pooled, "regime", "condition", "amendment"]))

    def _codes_of(self, frame: pd.DataFrame, families: bool
                  ) -> tuple[list[ArmKey], np.ndarray]:
        """`codes` computed row by row (on a frame with every grouping column)."""
        cols = self.columns()
        pooled = [c for c in ("question_set", "run", "seed", "replicate") if c not in cols]
        factors = {c: sorted_codes(frame[c]) for c in self._factor_columns()}
        regime_codes, regimes = factors["regime"]
        names = [regime_family(str(r)) if families else "" for r in regimes]
        family_codes, family_names = pd.factorize(np.asarray(names, dtype=object), sort=True)
        factors["_family"] = (family_codes.astype(np.int64)[regime_codes],
                              np.asarray(family_names, dtype=object))
        by = [*cols, "_family"]
        codes, first = _group_codes([(factors[c][0], len(factors[c][1])) for c in by])
        n_groups = len(first)
        seen = {c: _values_per_group(codes, n_groups, *factors[c])
                for c in [*pooled, "regime", "amendment"]}
        errored = self._errored_counts(by, families)
        apart = self._apart_counts(by, families)
        keys: list[ArmKey] = []
        for g, at in enumerate(first.tolist()):
            key = {c: factors[c][1][factors[c][0][at]] for c in [*by, "condition"]}

            def cover(column: str, g: int = g, key: dict = key) -> str:
                return str(key[column]) if column in key else _joined(seen[column][g], column)

            amendments = {EXPLORATORY if pd.isna(a) else a for a in seen["amendment"][g]}
            keys.append(ArmKey(
                str(key["model"]), str(key["arm"]), int(key["budget"]), str(key["dataset"]),
                cover("question_set"), cover("run"), cover("seed"), cover("replicate"),
                str(key["_family"]), str(key["condition_hash"]), str(key["condition"]),
                _joined(amendments, "amendment"),
                regime_order(str(r) for r in seen["regime"][g]),
                errored.get(tuple(key[c] for c in by), ()),
                apart.get(tuple(key[c] for c in by), ())))
        return keys, codes

    def groups(self, frame: pd.DataFrame, families: bool = False
               ) -> Iterator[tuple[ArmKey, pd.DataFrame]]:
        """Split a frame into its groups, in a stable order.

        The groups are sorted by their key values (as ``groupby(sort=True)``); each
        sub-frame keeps the frame's rows in their order and their index labels.

        Args:
            frame: an episode or decision frame.
            families: also split by regime family (Δ, design contrast, I, hazard).

        Yields:
            (ArmKey, sub-frame) pairs.
        """
        keys, codes = self.codes(frame, families)
        if not keys:
            return
        frame = with_keys(frame)
        order = np.argsort(codes, kind="stable")
        ends = np.cumsum(np.bincount(codes, minlength=len(keys))).tolist()
        ordered = frame.take(order)
        start = 0
        for key, end in zip(keys, ends):
            yield key, ordered.iloc[start:end]
            start = end
