"""What one start of the console costs in CPU, against a bare Textual app of its size
(docs/performance.md, "What is left of the suite's time"): the console tests start it
hundreds of times, so its start is a large share of the suite.

Both are started headless with `App.run_test` at 120 × 40 and given one pause, first once
(imports, caches), then `--boots` times; it prints the CPU of this process per start
(user + system, the mean), for:

- the console (`console.app.make_app`) on the console tests' small lab.db (built once
  through the real queue by `tests.helpers.console`, as the tests build it), with the
  tests' settings: a frozen clock, no endpoint checks, no warm-up;
- a bare app with a header, a scrolling column of 14 static lines and 4 data tables,
  and a footer (about the Dashboard's number of widgets, of the same kinds).

Usage: python bench/console_boot.py [--boots 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from textual.app import App, ComposeResult  # noqa: E402
from textual.containers import VerticalScroll  # noqa: E402
from textual.widgets import DataTable, Footer, Header, Static  # noqa: E402


class Bare(App[None]):
    """A Textual app with about the Dashboard's widgets and nothing of lab's."""

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            for i in range(14):
                yield Static(f"line {i}")
            for _ in range(4):
                yield DataTable()
        yield Footer()


async def _start(make: object, n: int) -> float:
    """CPU seconds per start of `n` apps made by `make`."""
    begin = time.process_time()
    for _ in range(n):
        app = make()  # type: ignore[operator]
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
    return (time.process_time() - begin) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boots", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests.helpers.console import build, console_app, freeze_times

    folder = Path(tempfile.mkdtemp(prefix="lab-boot-"))
    os.chdir(folder)
    freeze_times(build(folder / "lab.db"))
    makers = {"console": lambda: console_app(Path("lab.db")), "bare Textual app": Bare}
    for make in makers.values():
        asyncio.run(_start(make, 1))
    got: dict[str, list[float]] = {name: [] for name in makers}
    for _ in range(args.rounds):  # alternating, so both see the same machine
        for name, make in makers.items():
            got[name].append(asyncio.run(_start(make, args.boots)))
    for name, values in got.items():
        print(f"{name:18s} {statistics.median(values):.3f} s of CPU per start (median of "
              f"{args.rounds} rounds of {args.boots}: "
              + ", ".join(f"{v:.3f}" for v in values) + ")")


if __name__ == "__main__":
    main()
