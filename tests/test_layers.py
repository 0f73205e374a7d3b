"""The packages' imports flow one way (docs/architecture.md): console → jobs, analysis → core.

Read from the source with `ast` (every import, including those inside functions), so a
lazy import that breaks the layering fails here too.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("console", "jobs", "analysis", "core", "prompts")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(tree: ast.Module) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks (never imported at run time)."""
    return {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
            and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for stmt in block.body for n in ast.walk(stmt)}


def _imports(path: Path, runtime_only: bool = False) -> set[str]:
    """Every lab module `path` imports (absolute names, at any depth of the file);
    `runtime_only` leaves out imports made only for type checkers."""
    return _imports_both(path)[runtime_only]


def _imports_both(path: Path) -> dict[bool, set[str]]:
    """`_imports(path, runtime_only)` for both values of runtime_only, from one parse."""
    every: set[str] = set()
    typing_only: set[str] = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _type_only(tree)
    for node in ast.walk(tree):
        found = typing_only if id(node) in skip else every
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    ours = {name for name in every if name.split(".")[0] in PACKAGES}
    return {True: ours, False: ours | {name for name in typing_only
                                       if name.split(".")[0] in PACKAGES}}


def _graph(runtime_only: bool = False) -> dict[str, set[str]]:
    graph = _graphs()[runtime_only]
    return {name: set(deps) for name, deps in graph.items()}  # a copy the test may change


@functools.cache
def _graphs() -> dict[bool, dict[str, frozenset[str]]]:
    """The import graph of the tree with and without the imports made only for type
    checkers, each file read and parsed once for every test of the module (the tree
    does not change while they run)."""
    modules = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graphs: dict[bool, dict[str, frozenset[str]]] = {False: {}, True: {}}
    for name, path in modules.items():
        for runtime_only, found in _imports_both(path).items():
            graphs[runtime_only][name] = frozenset(m for m in found
                                                   if m in modules and m != name)
    return graphs


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    """No two modules import each other at run time, directly or around a loop (a lazy
    import inside a function counts; one made only for type checkers does not)."""
    cycles = _cycles(_graph(runtime_only=True))
    assert cycles == []


def test_no_screen_or_widget_imports_the_command_line() -> None:
    graph = _graph()
    bad = {name: sorted(m for m in deps if m.startswith("console.cli"))
           for name, deps in graph.items()
           if name.startswith(("console.screens", "console.widgets", "console.app"))}
    assert not {k: v for k, v in bad.items() if v}


def test_lower_layers_never_import_higher_ones() -> None:
    above = {"core": ("analysis", "jobs", "console"), "analysis": ("jobs", "console"),
             "jobs": ("console",)}
    graph = _graph()
    bad = [f"{name} -> {dep}" for name, deps in graph.items() for dep in deps
           if dep.split(".")[0] in above.get(name.split(".")[0], ())]
    assert bad == []


def _in_cli(module: str) -> bool:
    return module == "console.cli" or module.startswith("console.cli.")


def test_the_command_line_holds_only_commands() -> None:
    """Library code lives below console/cli: no module outside the command line imports
    console.cli or any of its modules (a screen, a job or the analysis finds what it needs
    in a lower module), so console/cli holds the commands and the helpers they share."""
    graph = _graph()  # read the tree once
    importers = {name: sorted(dep for dep in deps if _in_cli(dep))
                 for name, deps in graph.items() if not _in_cli(name)}
    assert {name: deps for name, deps in importers.items() if deps} == {}


ANALYSIS_ORDER: tuple[tuple[str, ...], ...] = (
    ("stats",), ("base",), ("measures",), ("replay", "prereg"), ("tables", "validate"),
    ("figures",), ("report",))
"""analysis/'s groups, lowest first: a group imports only groups of an earlier rank, so
two groups of one rank never import each other (docs/architecture.md, "Layers")."""
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _analysis_group(module: str) -> str | None:
    """The group of an analysis module (`analysis.measures.delta` → "measures",
    `analysis.validate` → "validate"); None for the package itself and other layers."""
    parts = module.split(".")
    return parts[1] if parts[0] == "analysis" and len(parts) > 1 else None


def _rank(group: str) -> int:
    return next(i for i, groups in enumerate(ANALYSIS_ORDER) if group in groups)


def _analysis_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import from an analysis group into one of the same or a later rank."""
    bad = []
    for name, deps in sorted(graph.items()):
        group = _analysis_group(name)
        for dep in sorted(deps):
            target = _analysis_group(dep)
            if group and target and target != group and _rank(target) >= _rank(group):
                bad.append(f"{name} -> {dep}")
    return bad


def test_every_analysis_module_has_a_place_in_the_order() -> None:
    groups = {_analysis_group(name) for name in _graph()} - {None}
    placed = {g for rank in ANALYSIS_ORDER for g in rank}
    assert groups - placed == set(), "add the new group to ANALYSIS_ORDER and architecture.md"


def test_analysis_groups_import_only_earlier_groups() -> None:
    """stats < base < measures < replay, prereg < tables, validate < figures < report:
    every import counts, lazy ones inside functions and type-only ones included."""
    assert _analysis_violations(_graph()) == []


def test_the_analysis_order_check_catches_a_lazy_upward_import(tmp_path: Path) -> None:
    """The check above fails on an import from a later group, even one inside a function."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from analysis.tables.text import render_results\n")
    known = set(_graph())
    graph = {"analysis.measures.m": _imports(module) & known}
    assert _analysis_violations(graph) == [
        "analysis.measures.m -> analysis.tables.text"]
    sibling = {"analysis.replay.m": {"analysis.prereg.outcomes"}}
    assert _analysis_violations(sibling) == ["analysis.replay.m -> analysis.prereg.outcomes"]


def _documented_imports() -> dict[str, set[str]]:
    """Per analysis group, the groups the "may import" column of architecture.md's layer
    table names (its backticked `analysis/…` rows)."""
    rows: dict[str, set[str]] = {}
    for line in ARCHITECTURE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`analysis/"):
            continue
        for layer in cells[0].split(","):
            group = layer.strip().strip("`").removeprefix("analysis/").split("/")[0]
            rows[group.removesuffix(".py")] = {
                word.strip("` ") for word in cells[2].split(",")
                if word.strip("` ") in {g for rank in ANALYSIS_ORDER for g in rank}}
    return rows


def test_architecture_md_says_what_each_analysis_group_may_import() -> None:
    """The docs' "may import" column is the order: every earlier group, nothing else."""
    expected = {group: {g for earlier in ANALYSIS_ORDER[:rank] for g in earlier}
                for rank, groups in enumerate(ANALYSIS_ORDER) for group in groups}
    assert _documented_imports() == expected
