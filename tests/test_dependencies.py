"""Every third-party import of lab's packages is declared in pyproject.toml, and every
declared runtime dependency is imported by them (test-only ones live in the extras)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("console", "jobs", "analysis", "core", "prompts")
DISTRIBUTION = {"sqlite_utils": "sqlite-utils"}
"""Import name -> distribution name, where they differ."""


def _third_party_imports() -> set[str]:
    found: set[str] = set()
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module.split(".")[0])
    return {DISTRIBUTION.get(n, n) for n in found
            if n not in sys.stdlib_module_names and n not in PACKAGES and n != "__future__"}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_every_import_is_declared_and_every_dependency_used() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _names(project["dependencies"])
    optional = set().union(*(_names(v) for v in project["optional-dependencies"].values()))
    imported = _third_party_imports()
    assert imported - runtime - optional == set(), "imported but not declared"
    assert runtime - imported == set(), "declared as a runtime dependency but never imported"


PINNED = ("textual", "huey", "sqlite-utils")
"""Libraries whose private methods lab overrides, or whose unwritten behaviour it relies on
(sqlite_utils' pandas import and in-transaction scripts): a new release may break lab
silently."""


def test_libraries_lab_reaches_into_are_bounded_above_and_installed_within() -> None:
    from importlib.metadata import version

    from packaging.requirements import Requirement

    requirements = {r.name: r for r in map(Requirement, tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["project"]["dependencies"])}
    for name in PINNED:
        spec = requirements[name].specifier
        assert any(s.operator in ("<", "<=", "~=", "==") for s in spec), \
            f"{name} has no upper bound: {spec}"
        assert version(name) in spec, f"installed {name} {version(name)} is outside {spec}"


def test_tests_import_lab_plainly() -> None:
    """`pytest.importorskip` is for optional third-party packages: a test that skips when
    one of lab's own modules fails to import would hide the breakage it should show."""
    own = re.compile(r"importorskip\(\s*[\"']({})\b".format("|".join(PACKAGES)))
    skipping = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").rglob("*.py"))
                if own.search(p.read_text(encoding="utf-8"))]
    assert skipping == []
