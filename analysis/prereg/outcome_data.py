"""The data one registered test is evaluated on (docs/prereg.md).

By default a test of amendment A reads only the episodes of runs enqueued under A
(the episode frame's ``amendment`` column), never exploratory runs or other
amendments' runs; a test that names ``runs`` reads exactly those runs instead (the
freeze check then says whether their episodes started after A was frozen). Inside
that, the amendment's scope (models, conditions, regimes, question sets, budgets,
and when named datasets, seeds, replicates) and the test's own narrowing (``budget``,
default 8, ``datasets``, ``question_sets``) select the episodes.

A test is evaluated per unit — model × dataset × question set — and never pools
units. Within a unit an arm is matched by its full label
(`core.registered_tests.arm_matches`), and seeds, replicates and the selected runs
of that arm are averaged per question as the success measures do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.measures.frames import Frames
from core.conditions import Condition, condition_from_spec, parse_condition
from core.errors import LabError
from core.regimes import regime_family
from core.registered_tests import DEFAULT_BUDGET, arm_matches, named_budgets


@dataclass(frozen=True)
class Unit:
    """What one part of a test's verdict is computed on: a model, dataset and set."""

    model: str
    dataset: str
    question_set: str

    def text(self, several: bool) -> str:
        """The model, plus dataset/set when the test covers more than one and the unit has
        them (a model the test names but no episode of has neither)."""
        if several and (self.dataset or self.question_set):
            return f"{self.model} ({self.dataset}/{self.question_set})"
        return self.model


def _specs(ep: pd.DataFrame) -> pd.Series:
    """Each episode's condition spec (or arm label, in frames without specs)."""
    return ep["condition_spec"] if "condition_spec" in ep else ep["arm"]


def _matching(specs: pd.Series, named: Sequence[Condition]) -> pd.Series:
    """Whether each row's condition matches one of `named`, parsed once per distinct spec."""
    parse = condition_from_spec if specs.name == "condition_spec" else parse_condition
    hits = {v for v in specs.unique() if any(arm_matches(n, parse(v)) for n in named)}
    return specs.isin(hits)


def _labels(specs: pd.Series) -> dict[str, str]:
    parse = condition_from_spec if specs.name == "condition_spec" else parse_condition
    return {v: parse(v).label() for v in specs.unique()}


def _scope_mask(ep: pd.DataFrame, scope: Mapping[str, Any]) -> pd.Series:
    named = [parse_condition(c) for c in scope.get("conditions", [])]
    arm_ok = _matching(_specs(ep), named)
    mask = (ep["model"].isin(scope.get("models", [])) & arm_ok
            & ep["regime"].isin(scope.get("regimes", []))
            & ep["question_set"].isin(scope.get("question_sets", []))
            & ep["budget"].isin(scope.get("budgets", [DEFAULT_BUDGET])))
    for key, column in (("datasets", "dataset"), ("seeds", "seed"),
                        ("replicates", "replicate")):
        if key in scope:
            mask &= ep[column].isin(scope[key])
    return mask


class TestData:
    """The episodes, decisions and steps one test may read; records what it used.

    Args:
        frames: analysis frames holding at least the relevant runs (episode frame
            with ``amendment``, ``dataset`` and ``condition_spec`` or ``arm`` columns).
        amendment: the amendment row (id, scope).
        test: the registered test (its scoping fields narrow the data).
    """

    __test__ = False  # not a pytest class

    def __init__(self, frames: Frames, amendment: Mapping[str, Any],
                 test: Mapping[str, Any]) -> None:
        ep = frames.episodes
        scope = amendment.get("scope") or {}
        if test.get("runs"):
            own = ep["run"].isin(test["runs"])
        else:
            own = ep["amendment"].astype(object).eq(amendment["id"]) if "amendment" in ep \
                else pd.Series(False, index=ep.index)
        mask = own & _scope_mask(ep, scope) & ep["budget"].isin(named_budgets(test))
        for key, column in (("datasets", "dataset"), ("question_sets", "question_set")):
            if test.get(key):
                mask &= ep[column].isin(test[key])
        self.episodes = ep.loc[mask]
        self.labels = _labels(_specs(self.episodes))
        keys = [self.episodes["model"], self.episodes["dataset"].astype(str),
                self.episodes["question_set"].astype(str), _specs(self.episodes)]
        self._rows = (self.episodes.groupby(keys, sort=False).indices
                      if len(self.episodes) else {})
        ids = self.episodes["episode_id"]
        self.decisions = frames.decisions.loc[frames.decisions["episode_id"].isin(ids)]
        self.steps = frames.steps.loc[frames.steps["episode_id"].isin(ids)]
        self.used: set[int] = set()

    def units(self, models: Sequence[str]) -> list[Unit]:
        """The units of the test: each model × (dataset, set) it has data in.

        A model without any data gets one unit with empty dataset and set, whose
        parts come out n.a.
        """
        out = []
        for model in models:
            ep = self.episodes.loc[self.episodes["model"] == model]
            pairs = sorted(set(zip(ep["dataset"].astype(str), ep["question_set"].astype(str))))
            out += [Unit(model, d, s) for d, s in pairs] or [Unit(model, "", "")]
        return out

    def arm(self, unit: Unit, condition: str, budget: int | None = None,
            regimes: Sequence[str] | None = None, mark: bool = True) -> pd.DataFrame:
        """Episodes of one arm in one unit (optionally one budget, some regimes).

        Marks them as used by the test unless `mark` is False (a kind that reads only
        some of them marks those with `read`).
        """
        named = parse_condition(condition)
        parse = condition_from_spec if "condition_spec" in self.episodes else parse_condition
        rows = [i for (m, d, s, spec), idx in self._rows.items()
                if (m, d, s) == (unit.model, unit.dataset, unit.question_set)
                and arm_matches(named, parse(spec)) for i in idx]
        sel = self.episodes.iloc[sorted(rows)]
        if budget is not None:
            sel = sel.loc[sel["budget"] == budget]
        if regimes:
            sel = sel.loc[sel["regime"].isin(regimes)]
        labels = sorted({self.labels[v] for v in _specs(sel).unique()})
        if len(labels) > 1:
            raise LabError(f"{condition} matches several arms of {unit.model} "
                           f"({', '.join(labels)}); name one, e.g. {labels[0]}")
        if mark:
            self.read(sel["episode_id"])
        return sel

    def read(self, episode_ids: Sequence[int] | pd.Series) -> None:
        """Mark episodes as read by the test's numbers."""
        self.used.update(int(i) for i in episode_ids)

    def arm_decisions(self, unit: Unit, condition: str, budget: int | None = None,
                      regimes: Sequence[str] | None = None, mark: bool = True
                      ) -> pd.DataFrame:
        """Decision-table rows of `arm`'s episodes (marked as `arm` marks them)."""
        ids = self.arm(unit, condition, budget, regimes, mark)["episode_id"]
        return self.decisions.loc[self.decisions["episode_id"].isin(ids)]

    def arm_steps(self, unit: Unit, condition: str, budget: int | None = None,
                  regimes: Sequence[str] | None = None) -> pd.DataFrame:
        """Steps of `arm`'s episodes."""
        ids = self.arm(unit, condition, budget, regimes)["episode_id"]
        return self.steps.loc[self.steps["episode_id"].isin(ids)]

    def used_episodes(self) -> pd.DataFrame:
        """The episodes the test's numbers were computed from."""
        return self.episodes.loc[self.episodes["episode_id"].isin(self.used)]


def families(regimes: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Group regimes by family (main first), so no measure pools two families.

    Args:
        regimes: regime names.

    Returns:
        (family, regimes of that family) pairs.
    """
    out: dict[str, list[str]] = {}
    for r in regimes:
        out.setdefault(regime_family(r), []).append(r)
    order = sorted(out, key=lambda f: (f != "main", f))
    return [(f, tuple(out[f])) for f in order]
