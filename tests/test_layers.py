"""The packages' imports flow one way (SPEC §3): console → jobs, analysis → core.

Read from the source with `ast` (every import, including those inside functions), so a
lazy import that breaks the layering fails here too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("console", "jobs", "analysis", "core", "prompts")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every lab module `path` imports (absolute names, at any depth of the file)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    return {name: {m for m in _imports(path) if m in modules and m != name}
            for name, path in modules.items()}


def test_no_screen_or_widget_imports_the_command_line():
    graph = _graph()
    bad = {name: sorted(m for m in deps if m.startswith("console.cli"))
           for name, deps in graph.items()
           if name.startswith(("console.screens", "console.widgets", "console.app"))}
    assert not {k: v for k, v in bad.items() if v}


def test_lower_layers_never_import_higher_ones():
    above = {"core": ("analysis", "jobs", "console"), "analysis": ("jobs", "console"),
             "jobs": ("console",)}
    graph = _graph()
    bad = [f"{name} -> {dep}" for name, deps in graph.items() for dep in deps
           if dep.split(".")[0] in above.get(name.split(".")[0], ())]
    assert bad == []


def test_the_command_line_holds_only_commands():
    """Library code lives below console/cli: what a screen needs is never defined there."""
    for path in (ROOT / "console" / "cli").glob("*.py"):
        tree = ast.parse(path.read_text())
        public = [n.name for n in tree.body
                  if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
                  and not any(isinstance(d, ast.Call | ast.Attribute | ast.Name)
                              and "command" in ast.unparse(d) for d in n.decorator_list)]
        users = [name for name, deps in _graph().items()
                 if not name.startswith("console.cli") and name != "console.cli"
                 and any(d.startswith(_module_name(path)) for d in deps)]
        assert not users or path.name == "__init__.py", (path.name, public, users)
