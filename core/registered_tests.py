"""Registered tests: JSON decision rules of a pre-registration amendment (SPEC §12).

Validated when a draft is saved, with a precise error for an unknown kind,
metric, condition or field. Evaluation lives in analysis (it needs the data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from core.conditions import parse_condition
from core.errors import ConfigError, LabError
from core.regimes import parse_regime

METRICS = ("mean6", "success", "utility", "tool_calls")
"""Episode-level metrics a paired test can compare (success needs a regime)."""

_COMMON = MappingProxyType({"id": str, "kind": str, "models": list, "note": str,
                           "prediction": str})
KINDS: Mapping[str, dict[str, Any]] = MappingProxyType({
    "paired_diff": {"required": {"metric": str, "a": str, "b": str},
                    "optional": {"alternative": str, "correction": str, "regime": str,
                                 "alpha": float}},
    "noninferiority": {"required": {"metric": str, "a": str, "b": str, "margin": float},
                       "optional": {"regime": str, "regimes": list}},
    "delta_bound": {"required": {"condition": str, "bound": str, "threshold": float},
                    "optional": {"judgments": str, "comparison": str}},
    "index_bound": {"required": {"condition": str, "bound": str, "threshold": float},
                    "optional": {"comparison": str}},
    "median_action": {"required": {"condition": str, "op": str, "value": float},
                      "optional": {"regime": str}},
    "answered_share": {"required": {"condition": str, "op": str, "value": float},
                       "optional": {"regime": str, "at_action": int}},
})
OPS = ("<", "<=", ">", ">=", "==")


def _type_ok(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def validate_test(test: Any, where: str) -> dict[str, Any]:
    """Check one registered test; returns it unchanged.

    Raises:
        ConfigError: one line naming the test and the problem.
    """
    if not isinstance(test, dict):
        raise ConfigError(f"{where}: a test must be a JSON object")
    tid = test.get("id")
    label = f"{where} ({tid})" if isinstance(tid, str) else where
    kind = test.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ConfigError(f"{label}: unknown kind {kind!r}; one of: {', '.join(KINDS)}")
    spec = KINDS[kind]
    allowed = dict(_COMMON) | spec["required"] | spec["optional"]
    for key in test:  # unknown fields first: a typo should be named as such
        if key not in allowed:
            raise ConfigError(f"{label}: unknown field '{key}' for kind {kind} "
                              f"(fields: {', '.join(sorted(allowed))})")
    for key in ("id", *spec["required"]):
        if key not in test:
            raise ConfigError(f"{label}: missing field '{key}' for kind {kind}")
    for key, value in test.items():
        if not _type_ok(value, allowed[key]):
            raise ConfigError(f"{label}: {key} must be {allowed[key].__name__}, got {value!r}")
    if "models" in test and not all(isinstance(m, str) for m in test["models"]):
        raise ConfigError(f"{label}: models must be a list of model names")
    if "metric" in test and test["metric"] not in METRICS:
        raise ConfigError(f"{label}: unknown metric {test['metric']!r}; one of: "
                          f"{', '.join(METRICS)}")
    if test.get("metric") == "success" and "regime" not in test:
        raise ConfigError(f"{label}: metric success needs a regime")
    for key in ("a", "b", "condition"):
        if key in test:
            try:
                parse_condition(test[key])
            except LabError as exc:
                raise ConfigError(f"{label}: {key}: {exc}") from None
    for regime in [test["regime"]] if "regime" in test else []:
        try:
            parse_regime(regime)
        except LabError as exc:
            raise ConfigError(f"{label}: regime: {exc}") from None
    checks = {"alternative": ("greater", "less", "two-sided"), "correction": ("holm", "none"),
              "bound": ("upper", "lower"), "op": OPS, "judgments": ("side_channel", "stated"),
              "comparison": ("<", ">")}
    for key, options in checks.items():
        if key in test and test[key] not in options:
            raise ConfigError(f"{label}: {key} must be one of {', '.join(options)}, "
                              f"got {test[key]!r}")
    return test


def validate_tests(tests: Any) -> list[dict[str, Any]]:
    """Validate a list of registered tests (ids unique).

    Raises:
        ConfigError: the first problem, naming the test.
    """
    if not isinstance(tests, list):
        raise ConfigError("registered tests must be a JSON list of test objects")
    seen: set[str] = set()
    for i, test in enumerate(tests):
        validate_test(test, f"tests[{i}]")
        if test["id"] in seen:
            raise ConfigError(f"tests[{i}]: duplicate test id {test['id']!r}")
        seen.add(test["id"])
    return tests


SCOPE_KEYS = ("models", "conditions", "regimes", "question_sets", "budgets")


def validate_scope(scope: Any) -> dict[str, list[Any]]:
    """Validate the scope of runs an amendment governs.

    All five keys are lists; models, conditions, regimes and question_sets must be
    non-empty; budgets defaults to [8].

    Raises:
        ConfigError: unknown key, wrong type, unknown condition or regime.
    """
    if not isinstance(scope, dict):
        raise ConfigError("scope must be a JSON object with models, conditions, regimes, "
                          "question_sets and budgets")
    unknown = set(scope) - set(SCOPE_KEYS)
    if unknown:
        raise ConfigError(f"scope: unknown key '{sorted(unknown)[0]}' "
                          f"(keys: {', '.join(SCOPE_KEYS)})")
    out: dict[str, list[Any]] = {"budgets": [8]} | {k: v for k, v in scope.items()}
    for key in SCOPE_KEYS:
        value = out.get(key)
        if not isinstance(value, list) or not value:
            raise ConfigError(f"scope: {key} must be a non-empty list")
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
    return out


def scope_condition_hashes(scope: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """sha256 of each scoped condition's spec, keyed by how the scope names it."""
    return {c: parse_condition(c).spec_hash() for c in scope["conditions"]}
