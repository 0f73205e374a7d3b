"""Registered tests: JSON decision rules of a pre-registration amendment (docs/registered-tests.md).

Validated when a draft is saved, with a precise error for an unknown kind,
metric, condition or field, and for a test that names a model, regime, set or
budget outside its amendment's scope. Evaluation lives in analysis (it needs the
data); the arm matching both sides share is `arm_matches`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from core.conditions import Condition, parse_condition
from core.errors import ConfigError, LabError
from core.regimes import parse_regime

METRICS = ("mean6", "mean3", "success", "utility", "utility_all", "tool_calls")
"""Episode-level metrics a paired test can compare (success needs a regime).

mean6 / mean3: success averaged with equal weight over the six mean6 regimes / the
three regimes of the paper's 16-action runs (clean, persistent, recover_after_2;
Table 16). utility = correct − λ·tool calls (Table 6's cost-adjusted success);
utility_all = correct − λ·(tool calls + the condition's own judgment calls)
(`analysis.measures.cost.charged_calls`). utility, utility_all and tool_calls average mean6
unless the test names a regime."""
LEAVING_METRICS = ("switched_by_4", "ever_switched", "median_first_switch", "answered_first",
                   "backup_first_share", "leave_delta")
"""What a `leaving` test reads (`analysis.measures.leaving`; two-source arms, paper A13–A14)."""
BUDGET_METRICS = ("median_action", "tool_calls", "answered_share")
"""What a `budget_contrast` compares between two budgets."""
OPS = ("<", "<=", ">", ">=", "==")
ON = ("estimate", "ci_low", "ci_high")
DEFAULT_BUDGET = 8

_COMMON = MappingProxyType({
    "id": str, "kind": str, "models": list, "note": str, "prediction": str,
    "budget": int, "datasets": list, "question_sets": list, "runs": list,
    "descriptive": bool})
"""Fields every kind takes: the scoping fields narrow the amendment's data;
``descriptive: true`` reports the test's numbers without a verdict (the paper's
"reported" rows)."""
_ARM = MappingProxyType({"condition": str, "conditions": list})
_BOUND = MappingProxyType({"bound": str, "on": str, "op": str, "comparison": str,
                           "threshold": float, "regimes": list})
_SPEC: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "paired_diff": {"required": {"metric": str, "a": str, "b": str},
                    "optional": {"alternative": str, "correction": str, "regime": str,
                                 "alpha": float, "lam": float, "on": str, "op": str,
                                 "threshold": float}},
    "noninferiority": {"required": {"metric": str, "a": str, "b": str, "margin": float},
                       "optional": {"regime": str, "regimes": list, "lam": float}},
    "delta_bound": {"arm": True, "optional": {**_BOUND, "judgments": str, "strata": str}},
    "index_bound": {"arm": True, "optional": dict(_BOUND)},
    "design_contrast_bound": {"arm": True, "optional": dict(_BOUND)},
    "median_action": {"arm": True, "required": {"op": str, "value": float},
                      "optional": {"regime": str}},
    "answered_share": {"arm": True, "required": {"op": str, "value": float},
                       "optional": {"regime": str, "at_action": int}},
    "budget_contrast": {"arm": True, "required": {"metric": str, "budgets": list, "op": str,
                                                  "threshold": float},
                        "optional": {"regime": str, "absolute": bool}},
    "dissociation": {"arm": True, "required": {"op": str, "threshold": float},
                     "optional": {"on": str, "judgments": str, "k": int, "regime": str,
                                  "min_questions": int}},
    "judgment_validity": {"arm": True, "optional": {"useless_on_failed": float,
                                                    "useless_on_real": float,
                                                    "kappa": float, "regimes": list}},
    "leaving": {"arm": True, "required": {"metric": str, "op": str, "threshold": float},
                "optional": {"on": str}},
    "classify": {"required": {"outcomes": list}},
})
KINDS: Mapping[str, Mapping[str, Any]] = MappingProxyType(_SPEC)
"""Kind → {"required", "optional" fields, "arm": takes condition(s)}."""

CHOICES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "alternative": ("greater", "less", "two-sided"), "correction": ("holm", "none"),
    "bound": ("upper", "lower"), "op": OPS, "comparison": OPS, "on": ON,
    "judgments": ("side_channel", "stated"), "strata": ("t", "question_action",
                                                        "regime_action")})
"""Fields whose value is one of a few words (any kind that takes the field)."""


def metric_choices(kind: str) -> tuple[str, ...]:
    """The metrics a test of `kind` may name (empty: the kind takes no metric)."""
    if "metric" not in KINDS[kind].get("required", {}):
        return ()
    return {"leaving": LEAVING_METRICS, "budget_contrast": BUDGET_METRICS}.get(kind, METRICS)


def _type_ok(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def kind_fields(kind: str) -> dict[str, type]:
    """Every field a test of `kind` may have, with its JSON type (required ones too)."""
    spec = KINDS[kind]
    out = dict(_COMMON) | spec.get("required", {}) | spec.get("optional", {})
    if spec.get("arm"):
        out |= _ARM
    if kind == "budget_contrast":
        del out["budget"]  # it names two budgets
    return out


def named_conditions(test: Mapping[str, Any]) -> list[str]:
    """The condition texts a single-arm test names (`condition` or `conditions`)."""
    if "conditions" in test:
        return list(test["conditions"])
    return [test["condition"]] if "condition" in test else []


def named_regimes(test: Mapping[str, Any]) -> list[str]:
    """The regimes a test names (`regime` or `regimes`), empty when it names none."""
    return [test["regime"]] if "regime" in test else list(test.get("regimes", []))


def named_budgets(test: Mapping[str, Any]) -> list[int]:
    """The budgets a test uses: `budgets` (budget_contrast), `budget` (default 8), or for
    a classify test every budget its conditions use."""
    if test.get("kind") == "budget_contrast":
        return list(test["budgets"])
    if test.get("kind") == "classify":
        return sorted({b for sub in subtests(test) for b in named_budgets(sub)})
    return [test.get("budget", DEFAULT_BUDGET)]


def inherit(parent: Mapping[str, Any], sub: Mapping[str, Any]) -> dict[str, Any]:
    """A classify condition with its parent's `budget` unless it names its own."""
    if "budget" in parent and "budget" not in sub and sub.get("kind") != "budget_contrast":
        return {**sub, "budget": parent["budget"]}
    return dict(sub)


def subtests(test: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every test inside a classify test's outcomes, as evaluated (`inherit`)."""
    return [inherit(test, sub) for o in test.get("outcomes", [])
            for sub in o.get("all", o.get("any", []))]


def bound_rule(test: Mapping[str, Any]) -> tuple[str, str]:
    """(on, op) of a threshold test: `on` + `op`, or the older `bound` + `comparison`.

    `bound: upper` reads the 95% upper bound (ci_high), `lower` the lower bound
    (ci_low); the comparison defaults to < for upper and > for lower.
    """
    if "on" in test:
        return test["on"], test.get("op") or test.get("comparison") or ">"
    upper = test["bound"] == "upper"
    return ("ci_high" if upper else "ci_low"), (
        test.get("op") or test.get("comparison") or ("<" if upper else ">"))


def _check_choices(test: Mapping[str, Any], label: str) -> None:
    for key, options in CHOICES.items():
        if key in test and test[key] not in options:
            raise ConfigError(f"{label}: {key} must be one of {', '.join(options)}, "
                              f"got {test[key]!r}")


def _check_names(test: Mapping[str, Any], label: str) -> None:
    for key in ("a", "b", "condition"):
        if key in test:
            try:
                parse_condition(test[key])
            except LabError as exc:
                raise ConfigError(f"{label}: {key}: {exc}") from None
    for key in ("conditions", "regimes", "models", "datasets", "question_sets", "runs"):
        if key in test and (not test[key] or not all(isinstance(v, str) for v in test[key])):
            raise ConfigError(f"{label}: {key} must be a non-empty list of names")
    for c in test.get("conditions", []):
        try:
            parse_condition(c)
        except LabError as exc:
            raise ConfigError(f"{label}: conditions: {exc}") from None
    for regime in named_regimes(test):
        try:
            parse_regime(regime)
        except LabError as exc:
            raise ConfigError(f"{label}: regime: {exc}") from None


def _check_kind_rules(test: Mapping[str, Any], kind: str, label: str) -> None:
    """The cross-field rules of each kind."""
    spec = KINDS[kind]
    if spec.get("arm") and ("condition" in test) == ("conditions" in test):
        raise ConfigError(f"{label}: give exactly one of 'condition' or 'conditions'")
    if "metric" in test and kind != "budget_contrast" \
            and test["metric"] not in metric_choices(kind):
        raise ConfigError(f"{label}: unknown metric {test['metric']!r}; one of: "
                          f"{', '.join(metric_choices(kind))}")
    if test.get("metric") == "success" and "regime" not in test and "regimes" not in test:
        raise ConfigError(f"{label}: metric success needs a regime")
    if "regime" in test and "regimes" in test:
        raise ConfigError(f"{label}: give 'regime' or 'regimes', not both")
    if "op" in test and "comparison" in test:
        raise ConfigError(f"{label}: give 'op' or the older 'comparison', not both")
    if kind.endswith("_bound") and ("bound" in test) == ("on" in test):
        raise ConfigError(f"{label}: give exactly one of 'on' (estimate, ci_low, ci_high) "
                          f"or 'bound' (upper, lower), with 'threshold'")
    if kind.endswith("_bound") and "threshold" not in test:
        raise ConfigError(f"{label}: missing field 'threshold' for kind {kind}")
    if kind == "paired_diff" and "on" in test:
        if "op" not in test or "threshold" not in test:
            raise ConfigError(f"{label}: a paired_diff with 'on' needs 'op' and 'threshold'")
        for key in ("alternative", "correction", "alpha"):
            if key in test:
                raise ConfigError(f"{label}: '{key}' belongs to the p-value rule; a "
                                  f"paired_diff with 'on' decides by its threshold")
    elif kind == "paired_diff" and ("op" in test or "threshold" in test):
        raise ConfigError(f"{label}: 'op'/'threshold' need 'on' (estimate, ci_low, ci_high)")
    if kind == "budget_contrast":
        if test["metric"] not in metric_choices(kind):
            raise ConfigError(f"{label}: metric must be one of {', '.join(BUDGET_METRICS)}, "
                              f"got {test['metric']!r}")
        budgets = test["budgets"]
        if (len(budgets) != 2 or not all(_type_ok(b, int) and b > 0 for b in budgets)
                or budgets[0] == budgets[1]):
            raise ConfigError(f"{label}: budgets must be two different positive integers, "
                              f"e.g. [16, 8] (estimate = value at 16 − value at 8)")
    if kind == "judgment_validity" and not any(
            k in test for k in ("useless_on_failed", "useless_on_real", "kappa")):
        raise ConfigError(f"{label}: judgment_validity needs at least one of "
                          f"useless_on_failed (≥), useless_on_real (≤), kappa (≥)")
    for key in ("budget", "k", "min_questions", "at_action"):
        if key in test and test[key] < 1:
            raise ConfigError(f"{label}: {key} must be ≥ 1, got {test[key]}")


_SHARES = ("useless_on_failed", "useless_on_real")
"""Fields that are shares, so in [0, 1] (also `value` of answered_share and the
threshold of dissociation and of a share-valued leaving metric)."""
_SHARE_LEAVING = ("switched_by_4", "ever_switched", "answered_first", "backup_first_share")


def check_numbers(test: Mapping[str, Any], label: str) -> None:
    """Refuse a number that cannot mean anything: alpha outside (0, 1), a threshold,
    margin, value or λ that is NaN or infinite, a share outside [0, 1], κ outside
    [−1, 1], a negative λ, an action beyond the budget.

    Called when a test is saved and again before a stored test is evaluated (an
    amendment frozen by an older version is then n.a. with this reason, never pass).

    Raises:
        ConfigError: one line naming the test, the field and the allowed range.
    """
    for key in ("threshold", "margin", "value", "alpha", "lam", "kappa", *_SHARES):
        if key in test and _type_ok(test[key], float) and not math.isfinite(test[key]):
            raise ConfigError(f"{label}: {key} must be a finite number, got {test[key]!r}")
    if "alpha" in test and not 0 < test["alpha"] < 1:
        raise ConfigError(f"{label}: alpha must be in (0, 1), e.g. 0.05, got {test['alpha']!r}")
    if "lam" in test and test["lam"] < 0:
        raise ConfigError(f"{label}: lam (price per call) must be ≥ 0, got {test['lam']!r}")
    kind = test.get("kind")
    shares = [k for k in _SHARES if k in test]
    if kind == "answered_share":
        shares.append("value")
    if kind == "dissociation" or (kind == "leaving" and test.get("metric") in _SHARE_LEAVING):
        shares.append("threshold")
    for key in shares:
        if not 0 <= test[key] <= 1:
            raise ConfigError(f"{label}: {key} is a share and must be in [0, 1], "
                              f"got {test[key]!r}")
    if "kappa" in test and not -1 <= test["kappa"] <= 1:
        raise ConfigError(f"{label}: kappa must be in [-1, 1], got {test['kappa']!r}")
    budgets = named_budgets(test) if kind != "classify" else []
    for key in ("at_action", "k"):
        if key in test and _type_ok(test[key], int) and any(test[key] > b for b in budgets):
            raise ConfigError(f"{label}: {key} {test[key]} is beyond the budget of "
                              f"{max(budgets)} actions")
    if kind == "median_action" and _type_ok(test.get("value"), float) and any(
            not 1 <= test["value"] <= b for b in budgets):
        raise ConfigError(f"{label}: value (an answering action) must be within 1…"
                          f"{max(budgets)}, got {test['value']!r}")


def _check_outcomes(test: Mapping[str, Any], label: str) -> None:
    outcomes = test["outcomes"]
    if len(outcomes) < 2:
        raise ConfigError(f"{label}: outcomes needs at least two entries, e.g. "
                          f'[{{"label": "support", "all": [...]}}, {{"label": "inconclusive"}}]')
    seen: set[str] = set()
    for i, o in enumerate(outcomes):
        where = f"{label}: outcomes[{i}]"
        if not isinstance(o, dict) or not isinstance(o.get("label"), str) or not o["label"]:
            raise ConfigError(f"{where}: each outcome is an object with a non-empty 'label'")
        if o["label"] in seen or o["label"] == "n.a.":
            raise ConfigError(f"{where}: label {o['label']!r} is repeated or reserved")
        seen.add(o["label"])
        unknown = set(o) - {"label", "all", "any"}
        if unknown:
            raise ConfigError(f"{where}: unknown field '{sorted(unknown)[0]}' "
                              f"(fields: label, all, any)")
        if "all" in o and "any" in o:
            raise ConfigError(f"{where}: give 'all' or 'any', not both")
        conds = o.get("all", o.get("any"))
        if conds is None:
            if i != len(outcomes) - 1:
                raise ConfigError(f"{where}: only the last outcome may have no condition "
                                  f"(it is the 'else')")
            continue
        if not isinstance(conds, list) or not conds:
            raise ConfigError(f"{where}: 'all'/'any' must be a non-empty list of tests")
        for j, sub in enumerate(conds):
            validate_test(inherit(test, sub) if isinstance(sub, dict) else sub,
                          f"{where}.{'all' if 'all' in o else 'any'}[{j}]", nested=True)


def validate_test(test: Any, where: str, nested: bool = False) -> dict[str, Any]:
    """Check one registered test; returns it unchanged.

    Args:
        test: the test object.
        where: how to name it in an error (e.g. "tests[2]").
        nested: a condition inside a `classify` test's outcomes (no id needed; no
            models of its own: it is evaluated for its parent's models).

    Raises:
        ConfigError: one line naming the test and the problem.
    """
    if not isinstance(test, dict):
        raise ConfigError(f"{where}: a test must be a JSON object")
    tid = test.get("id")
    label = f"{where} ({tid})" if isinstance(tid, str) else where
    kind = test.get("kind")
    allowed_kinds = [k for k in KINDS if not (nested and k == "classify")]
    if not isinstance(kind, str) or kind not in allowed_kinds:
        raise ConfigError(f"{label}: unknown kind {kind!r}; one of: {', '.join(allowed_kinds)}")
    allowed = kind_fields(kind)
    if nested:  # a condition reads its parent's units and data
        for key in ("models", "runs", "datasets", "question_sets", "descriptive"):
            del allowed[key]
    for key in test:  # unknown fields first: a typo should be named as such
        if key not in allowed:
            raise ConfigError(f"{label}: unknown field '{key}' for kind {kind} "
                              f"(fields: {', '.join(sorted(allowed))})")
    for key in (() if nested else ("id",)) + tuple(KINDS[kind].get("required", {})):
        if key not in test:
            raise ConfigError(f"{label}: missing field '{key}' for kind {kind}")
    for key, value in test.items():
        if not _type_ok(value, allowed[key]):
            raise ConfigError(f"{label}: {key} must be {allowed[key].__name__}, got {value!r}")
    _check_choices(test, label)
    _check_names(test, label)
    _check_kind_rules(test, kind, label)
    check_numbers(test, label)
    if kind == "classify":
        _check_outcomes(test, label)
    return test


def _check_within_scope(test: Mapping[str, Any], scope: Mapping[str, Any], label: str) -> None:
    """A test may only name models, regimes, sets, datasets and budgets of its scope."""
    for t in [test, *subtests(test)]:
        named = {"models": t.get("models", []), "regimes": named_regimes(t),
                 "question_sets": t.get("question_sets", []),
                 "datasets": t.get("datasets", []), "budgets": named_budgets(t)}
        for key, values in named.items():
            if key not in scope:  # datasets: only checked when the scope names them
                continue
            outside = [v for v in values if v not in scope[key]]
            if outside:
                raise ConfigError(
                    f"{label}: {key[:-1].replace('_', ' ')} {outside[0]!r} is outside the "
                    f"amendment's scope ({', '.join(map(str, scope[key]))})"
                    + ("; name the test's budget" if key == "budgets" and "budget" not in t
                       and t.get("kind") != "budget_contrast" else ""))
        for c in named_conditions(t) + [t[k] for k in ("a", "b") if k in t]:
            cond = parse_condition(c)
            if not any(arm_matches(cond, parse_condition(s)) for s in scope["conditions"]):
                raise ConfigError(f"{label}: condition {c!r} is not among the amendment's "
                                  f"scoped conditions ({', '.join(scope['conditions'])})")


def validate_tests(tests: Any, scope: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Validate a list of registered tests (ids unique), against the scope when given.

    Args:
        tests: the JSON list.
        scope: the amendment's validated scope; a test may not name a model,
            condition, regime, question set, dataset or budget outside it.

    Raises:
        ConfigError: the first problem, naming the test.
    """
    if isinstance(tests, dict):
        raise ConfigError("registered tests must be a JSON list of test objects; this holds "
                          "one object: wrap it in [ ]")
    if not isinstance(tests, list):
        raise ConfigError("registered tests must be a JSON list of test objects")
    seen: set[str] = set()
    for i, test in enumerate(tests):
        validate_test(test, f"tests[{i}]")
        if test["id"] in seen:
            raise ConfigError(f"tests[{i}]: duplicate test id {test['id']!r}")
        seen.add(test["id"])
        if scope:
            _check_within_scope(test, scope, f"tests[{i}] ({test['id']})")
    return tests


SCOPE_KEYS = ("models", "conditions", "regimes", "question_sets", "budgets")
OPTIONAL_SCOPE_KEYS = ("datasets", "seeds", "replicates")


def validate_scope(scope: Any) -> dict[str, list[Any]]:
    """Validate the scope of runs an amendment governs.

    The five SCOPE_KEYS are lists; models, conditions, regimes and question_sets must
    be non-empty; budgets defaults to [8]. datasets, seeds and replicates are
    optional lists that narrow the data further.

    Raises:
        ConfigError: unknown key, wrong type, unknown condition or regime.
    """
    if not isinstance(scope, dict):
        raise ConfigError("scope must be a JSON object with models, conditions, regimes, "
                          "question_sets and budgets")
    known = SCOPE_KEYS + OPTIONAL_SCOPE_KEYS
    unknown = set(scope) - set(known)
    if unknown:
        raise ConfigError(f"scope: unknown key '{sorted(unknown)[0]}' "
                          f"(keys: {', '.join(known)})")
    out: dict[str, list[Any]] = {"budgets": [8]} | {k: v for k, v in scope.items()}
    for key in SCOPE_KEYS + tuple(k for k in OPTIONAL_SCOPE_KEYS if k in out):
        value = out.get(key)
        if not isinstance(value, list) or not value:
            raise ConfigError(f"scope: {key} must be a non-empty list")
    for key in ("models", "conditions", "regimes", "question_sets", "datasets"):
        if key in out and not all(isinstance(v, str) and v for v in out[key]):
            raise ConfigError(f"scope: {key} must be a list of names")
    for c in out["conditions"]:
        try:
            parse_condition(c)
        except LabError as exc:
            raise ConfigError(f"scope: conditions: {exc}") from None
    for r in out["regimes"]:
        try:
            parse_regime(r)
        except LabError as exc:
            raise ConfigError(f"scope: regimes: {exc}") from None
    if not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in out["budgets"]):
        raise ConfigError("scope: budgets must be positive integers")
    for key in ("seeds", "replicates"):
        if key in out and not all(_type_ok(v, int) and v >= 0 for v in out[key]):
            raise ConfigError(f"scope: {key} must be non-negative integers")
    return out


def scope_condition_hashes(scope: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """sha256 of each scoped condition's spec, keyed by how the scope names it."""
    return {c: parse_condition(c).spec_hash() for c in scope["conditions"]}


def arm_matches(named: Condition, cell: Condition) -> bool:
    """Whether a condition as a test or scope names it matches a cell's condition.

    Arms match by their full label: `enforced_rule:k=7` only matches k=7, and a
    bare `enforced_rule` only the default-knob arm. One exception: a `random_rule`
    named without a rate matches that arm at any rate, because the rate is resolved
    per model (its dev-set USELESS rate) when the grid is planned.
    """
    if named.label() == cell.label():
        return True
    return (named.arm.rule == "random" and named.rate is None and cell.name == named.name
            and replace(cell, rate=None).label() == named.label())
