"""Where a `lab` command's wall time goes (docs/performance.md, "Where the main thread
waits"): the command run in this process, with a timer around each named function.

Each function is wrapped when the command itself first imports its module (an import
hook), so every import happens where it would without the timers (wrapping a module
imported earlier would import pandas before the command starts and move everything
after it). For each call it prints the start and end (seconds since this script began,
after the interpreter's own start-up), its wall and thread CPU time and the thread; the
module imports the hook saw, and the command's end. Properties cannot be wrapped.

Usage: python bench/timeline.py MODULE:FUNCTION[,MODULE:CLASS.METHOD…] -- LAB ARGS…
e.g.   python bench/timeline.py analysis.measures.frames:load_frames,\
analysis.tables.compute:_compute_one -- --db lab.db results delta --format json
The command's own output goes to stdout, the timeline to stderr.
"""

from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.machinery
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

T0 = time.perf_counter()
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

Mark = tuple[float, float, float, str, str]
"""(start, end, thread CPU seconds, thread name, what)."""


def _wrap(module: ModuleType, name: str, attr: str, marks: list[Mark]) -> None:
    """Put a timer around `module`'s `attr` (a function, or Class.method)."""
    owner: Any = module
    *path, last = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    function: Callable[..., Any] = getattr(owner, last)

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            marks.append((start - T0, time.perf_counter() - T0, time.thread_time() - cpu,
                          threading.current_thread().name, f"{name.rsplit('.', 1)[-1]}.{attr}"))

    setattr(owner, last, timed)


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Finds the named modules with the other finders and wraps their functions once
    the module has run."""

    def __init__(self, targets: dict[str, list[str]], marks: list[Mark]) -> None:
        self.targets, self.marks = targets, marks

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.targets:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            for attr in self.targets[fullname]:
                _wrap(module, fullname, attr, self.marks)
            now = time.perf_counter() - T0
            self.marks.append((now, now, 0.0, threading.current_thread().name,
                               f"imported {fullname}"))

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def main() -> None:
    if "--" not in sys.argv[1:] or sys.argv[1] == "--":
        sys.exit(__doc__)
    names, args = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    targets: dict[str, list[str]] = {}
    for item in names.split(","):
        module, _, attr = item.partition(":")
        if not attr:
            sys.exit(f"error: {item!r} is not MODULE:FUNCTION")
        targets.setdefault(module, []).append(attr)
    marks: list[Mark] = []
    sys.meta_path.insert(0, _WrapOnImport(targets, marks))

    def report() -> None:
        for start, end, cpu, thread, what in sorted(marks):
            print(f"{start:6.3f}-{end:6.3f} ({end - start:5.3f} wall, {cpu:5.3f} cpu) "
                  f"{thread[:12]:12s} {what}", file=sys.stderr)
        print(f"end {time.perf_counter() - T0:.3f}", file=sys.stderr)

    atexit.register(report)
    from console.cli import main as lab

    now = time.perf_counter() - T0
    marks.append((now, now, 0.0, "MainThread", "console.cli imported"))
    sys.exit(lab(args))


if __name__ == "__main__":
    main()
