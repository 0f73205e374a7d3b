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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

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
    """Regimes for display: the mean6 ones in SPEC order, then the others sorted."""
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

    def pair_key(self) -> tuple[object, ...]:
        """What a paired comparison must share: all but the arm."""
        return (self.model, self.budget, self.dataset, self.question_set, self.runs,
                self.seeds, self.replicates, self.family)

    def errored_in(self, regimes: Iterable[str] | None = None) -> int:
        """Errored episodes of the group in `regimes` (default: all of them)."""
        if regimes is None:
            return sum(n for _, n in self.errored)
        wanted = set(regimes)
        return sum(n for r, n in self.errored if r in wanted)


def _covered(values: pd.Series, column: str) -> str:
    uniq = sorted(values.dropna().unique().tolist())
    return _SEPARATOR.get(column, ",").join(str(v) for v in uniq)


def _families(frame: pd.DataFrame, split: bool) -> pd.Series:
    if not split:
        return pd.Series("", index=frame.index, dtype=object)
    names = {r: regime_family(str(r)) for r in frame["regime"].unique()}
    return frame["regime"].map(names).astype(object)


@dataclass(frozen=True, eq=False)
class Grouping:
    """How rows are formed: what is pooled, and the errored episodes to count per row.

    Attributes:
        pool: dimensions merged, among POOL_COLUMNS ("runs", "seeds", "replicates",
            "sets"); never the arm, model, budget or dataset.
        errored: errored episodes without a complete retry (`analysis.decisions.
            errored_episodes`), counted on the row of their group; None: none.
    """

    pool: tuple[str, ...] = ()
    errored: pd.DataFrame | None = None

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

    def groups(self, frame: pd.DataFrame, families: bool = False
               ) -> Iterator[tuple[ArmKey, pd.DataFrame]]:
        """Split a frame into its groups, in a stable order.

        Args:
            frame: an episode or decision frame.
            families: also split by regime family (Δ, design contrast, I, hazard).

        Yields:
            (ArmKey, sub-frame) pairs.
        """
        if frame.empty:
            return
        frame = with_keys(frame)
        cols = self.columns()
        by = [*cols, "_family"]
        family = _families(frame, families).rename("_family")
        errored = self._errored_counts(by, families)
        # the family is a key beside the columns, not a column: no group is copied to drop it
        for values, sub in frame.groupby([*cols, family], sort=True, dropna=False):
            key = dict(zip(by, values))

            def covered(column: str, sub: pd.DataFrame = sub, key: dict = key) -> str:
                return str(key[column]) if column in key else _covered(sub[column], column)

            amendments = sub["amendment"].where(sub["amendment"].notna(), EXPLORATORY)
            yield ArmKey(
                str(key["model"]), str(key["arm"]), int(key["budget"]), str(key["dataset"]),
                covered("question_set"), covered("run"), covered("seed"), covered("replicate"),
                str(key["_family"]), str(key["condition_hash"]), str(sub["condition"].iloc[0]),
                _covered(amendments, "amendment"),
                regime_order(str(r) for r in sub["regime"].unique()),
                errored.get(tuple(values), ())), sub
