"""The console's one threading style: a thread worker reads or writes lab.db
and posts what it found as a message; only the handlers, on the app's thread, change a
screen or a widget. Read from the source, so a new worker that slips is caught at once."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import cast

CONSOLE = Path(__file__).resolve().parents[1] / "console"
CALL_FROM_THREAD_ALLOWED: dict[str, str] = {}
"""`path: reason` for a use of `call_from_thread` that must block on the app's thread
(none: every worker posts a message)."""
WIDGET_CALLS = frozenset({"notify", "query_one", "query", "refresh", "refresh_bindings",
                          "update", "mount", "push_screen", "switch_mode", "set_timer"})
"""Methods a worker must never call on its screen (or app): they touch widgets."""


def _sources() -> list[Path]:
    return sorted(CONSOLE.rglob("*.py"))


def _thread_workers(tree: ast.AST) -> list[ast.FunctionDef]:
    """The functions decorated with `@work(thread=True, …)`."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "work"
                    and any(k.arg == "thread" and getattr(k.value, "value", None) is True
                            for k in dec.keywords)):
                out.append(node)
    return out


def _on_self(node: ast.expr) -> bool:
    """`self.x` or `self.app.x` (what a worker could change off the app's thread)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "self"


def test_no_call_from_thread_in_the_console() -> None:
    found = {str(p.relative_to(CONSOLE.parent)) for p in _sources()
             if "call_from_thread" in p.read_text()}
    assert found <= set(CALL_FROM_THREAD_ALLOWED), sorted(found - set(CALL_FROM_THREAD_ALLOWED))


def test_thread_workers_only_post_messages() -> None:
    """No worker assigns an attribute of its screen or app, or calls a widget method."""
    problems, workers = [], 0
    for path in _sources():
        tree = ast.parse(path.read_text())
        for fn in _thread_workers(tree):
            workers += 1
            where = f"{path.relative_to(CONSOLE.parent)}:{fn.name}"
            for node in ast.walk(fn):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                    targets = [node.target]
                for target in targets:
                    for t in ast.walk(target):
                        if isinstance(t, ast.Attribute) and _on_self(t):
                            line = cast(ast.stmt, node).lineno  # an assignment
                            problems.append(f"{where}:{line} assigns {ast.unparse(t)}")
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and _on_self(node.func) and node.func.attr in WIDGET_CALLS):
                    problems.append(f"{where}:{node.lineno} calls {ast.unparse(node.func)}")
    assert workers >= 30  # the scan found the workers (a rename of `work` would hide them)
    assert not problems, "\n".join(problems)
