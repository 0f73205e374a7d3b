"""The console's Results screen with no results cache (docs/performance.md): its first
visit and each tab, on the real screen driven by Textual's Pilot.

Each round runs in a fresh process (nothing imported or computed by an earlier one),
with `<lab.db>.results/` removed first, so every table is computed as on a lab.db
whose results cache was never written (a new study, an upgraded lab, a deleted
folder). The console starts headless at 80×24 on the Dashboard, as `lab` starts it
(garbage collector frozen once warm), waits for its warm-up, then:

- ``--mode tour`` (default): presses 7 (Results; its first tab, Success, computed and
  drawn) and then ``]`` through every tab in order, each measured from its key until
  the tab shows its tables (its thread worker done, what it posted drawn). Frames read
  by an earlier tab are reused, as in a researcher's session.
- ``--mode each``: for every tab a fresh process whose Results screen, once it shows
  Success, forgets what it read and computed and opens that tab (so the tab reads its
  own frames and computes its table from nothing), measured from the tab's switch; the
  worst case for that tab.

For each visit it prints the wall time and the CPU time of the console's process (all
its threads, and any forked children: user + system) spent in that visit: on a
shared, loaded machine the CPU time is the figure that compares runs; the wall time
on idle cores is about the CPU time when one thread does the work. Target: first
visit ≤ 2 s, no tab over 2 s, at 200,000 episodes.

The lab.db is any existing one (``--db``; e.g. the 198,000-episode study that
`bench/scale.py` builds and caches); only its results cache folder is removed.

Usage: python bench/results_nocache.py --db PATH [--mode tour|each] [--repeat 1]
       [--views success,cost] [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.pilot import Pilot

ROOT = Path(__file__).resolve().parents[1]
POLL_S = 0.05
"""How often the bench looks whether a tab is drawn. Its looking runs in the console's
process and counts in the CPU time: every 5 ms it cost the Δ tab 0.5 s of CPU at 198k
(2.55 s against 2.0 s), a researcher's console does not pay it; the wall time is then
late by up to 50 ms."""
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    """CPU seconds of this process (every thread) and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


async def _drawn(pilot: Pilot[None], view: str) -> bool:
    """Wait until the Results screen shows `view` computed (True), or its computation
    ended without a table (False: its status line shows an error, e.g. no trace states
    stored); what the worker posted is handled and drawn."""
    from textual.widgets import Static

    from console.screens.results.screen import ResultsScreen

    app = pilot.app
    while True:
        screen = app.screen
        if isinstance(screen, ResultsScreen) and screen.view == view:
            if view in screen._computed:
                await pilot.pause()
                return True
            status = str(screen.query_one("#results-status", Static).render())
            if not status.startswith(("computing", "reading")):
                await pilot.pause()
                return False
        await pilot.pause(POLL_S)


async def visits(db_path: Path, first_view: str | None, views: list[str] | None,
                 profile: Path | None) -> list[tuple[str, float, float, bool]]:
    """(view, wall s, CPU s, whether it showed a table) of the Results screen's first
    visit and then each tab.

    Args:
        db_path: the lab.db.
        first_view: the tab measured first, from nothing (None: Success, the first).
        views: the tabs to visit after the first, in order (None: every tab).
        profile: write a cProfile of each visit here (`<view>.prof`).
    """
    from textual.widgets import Tabs

    from console.app import ConsoleConfig, make_app
    from console.screens.results import screen as results_screen
    from console.screens.results.screen import ResultsScreen

    if profile is not None:
        import cProfile
        import threading

        profile.mkdir(parents=True, exist_ok=True)
        compute = results_screen.ResultsScreen._compute.__wrapped__  # type: ignore[attr-defined]

        def profiled(self: ResultsScreen, view: str, *args: Any) -> None:
            prof = cProfile.Profile()
            prof.enable()
            try:
                return compute(self, view, *args)
            finally:
                prof.disable()
                prof.dump_stats(profile / f"{view}-{threading.get_ident()}.prof")

        from textual import work

        ResultsScreen._compute = work(thread=True, exclusive=True,  # type: ignore[method-assign]
                                      group="results-compute")(profiled)
    from analysis.tables.registry import views as all_views

    order = [v.id for v, _ in all_views()]
    app = make_app(db_path, ConsoleConfig(db_path=db_path, check_endpoints=False,
                                          freeze_gc=True))
    out = []
    async with app.run_test(size=(80, 24)) as pilot:
        while "stored" not in str(app.screen.query_one("#queue-text").render()):
            await pilot.pause(0.005)
        while not app.warm:
            await pilot.pause(0.005)
        first = first_view or order[0]
        wall, cpu = time.perf_counter(), _cpu()
        await pilot.press("7")
        shown = await _drawn(pilot, order[0])
        if first != order[0]:  # forget what was read and computed, then open `first`
            screen = app.screen
            assert isinstance(screen, ResultsScreen)
            screen._forget()
            wall, cpu = time.perf_counter(), _cpu()
            screen.query_one("#results-tabs", Tabs).active = f"tab-{first}"
            shown = await _drawn(pilot, first)
        out.append((first, time.perf_counter() - wall, _cpu() - cpu, shown))
        print(out[-1], file=sys.stderr, flush=True)
        here = order.index(first)
        for view in (views if views is not None else order[here + 1:]):
            screen = app.screen
            assert isinstance(screen, ResultsScreen)
            if view == screen.view:
                continue
            wall, cpu = time.perf_counter(), _cpu()
            if order.index(view) == (order.index(screen.view) + 1) % len(order):
                await pilot.press("right_square_bracket")
            else:
                screen.query_one("#results-tabs").active = f"tab-{view}"  # type: ignore
            shown = await _drawn(pilot, view)
            out.append((view, time.perf_counter() - wall, _cpu() - cpu, shown))
            print(out[-1], file=sys.stderr, flush=True)
    return out


def one_round(db_path: Path, first_view: str | None, views: list[str] | None,
              profile: Path | None) -> list[tuple[str, float, float, bool]]:
    """`visits` in a fresh process, the results cache removed first."""
    from analysis.base.cache import SUFFIX

    shutil.rmtree(f"{db_path}{SUFFIX}", ignore_errors=True)
    args = [sys.executable, __file__, "--db", str(db_path), "--one-round",
            json.dumps([first_view, views, str(profile) if profile else None])]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    from console.cli.environment import set_defaults

    set_defaults(env)  # as `lab` starts the console
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
    shutil.rmtree(f"{db_path}{SUFFIX}", ignore_errors=True)
    return [tuple(v) for v in json.loads(out.strip().splitlines()[-1])]


def main() -> None:
    """Print each visit's wall and CPU time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--mode", choices=("tour", "each"), default="tour")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--views", default=None,
                        help="comma-separated tabs (default: every tab)")
    parser.add_argument("--profile", type=Path, default=None,
                        help="write a cProfile of each tab's computation in this folder")
    parser.add_argument("--one-round", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_round:
        first, views, profile = json.loads(args.one_round)
        result = asyncio.run(visits(args.db, first, views, Path(profile) if profile else None))
        print(json.dumps(result))
        return
    if not args.db.exists():
        sys.exit(f"error: {args.db}: no such lab.db")
    import sqlite3

    from analysis.tables.registry import views as all_views

    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    *(str(ROOT / p) for p in ("analysis", "core", "console", "jobs"))],
                   check=True)  # the module cache an installed lab has
    conn = sqlite3.connect(args.db)
    n = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
    conn.close()
    wanted = args.views.split(",") if args.views else [v.id for v, _ in all_views()]
    print(f"{n:,} episodes, results cache removed; load {os.getloadavg()[0]:.1f} "
          f"{os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} on {os.cpu_count()} cores",
          flush=True)
    rounds: list[dict[str, tuple[float, float, bool]]] = []
    for _ in range(max(1, args.repeat)):
        if args.mode == "tour":
            first = wanted[0] if args.views else None
            got = one_round(args.db, first, wanted[1:], args.profile)
        else:
            got = [one_round(args.db, view, [], args.profile)[0] for view in wanted]
        rounds.append({v: (w, c, shown) for v, w, c, shown in got})
    for i, view in enumerate(wanted):
        wall = [r[view][0] for r in rounds if view in r]
        cpu = [r[view][1] for r in rounds if view in r]
        if not wall:
            continue
        what = "first visit" if (i == 0 or args.mode == "each") else "tab"
        print(f"  {what:<11} {view:<18} wall {statistics.median(wall):6.2f} s "
              f"({min(wall):.2f}–{max(wall):.2f})  CPU {statistics.median(cpu):6.2f} s "
              f"({min(cpu):.2f}–{max(cpu):.2f})"
              + ("" if all(r[view][2] for r in rounds if view in r) else
                 "  (no table: the screen showed an error line)"), flush=True)
    print(f"  (load after {os.getloadavg()[0]:.1f}; target: first visit ≤ 2 s, no tab "
          f"over 2 s at 200,000 episodes)")


if __name__ == "__main__":
    main()
