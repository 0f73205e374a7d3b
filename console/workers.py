"""Local workers the console starts, pauses and stops: `lab worker` processes of its own.

Each is the command line's `lab worker` (same code, same bounded stop) in a process
group of its own, started with `--log-file` into the console's log folder
(`console.logs.log_dir`: `worker-<n>.log`), its output appended there too. Pausing
sends SIGSTOP to its group and resuming SIGCONT: a worker paused for longer than the
lease loses its jobs to other workers, as any silent worker does (they are re-run, never
lost). Stopping sends SIGTERM, which `lab worker` answers by releasing its jobs within
its grace. The console stops the workers it started when it quits, unless they were
started to outlive it. No Textual here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jobs.settings import STOP_MARGIN_S

GRACE_S = 5.0
"""`lab worker --grace`'s default: how long calls in flight may still answer on a stop."""
LOG_LINES = 20
"""Lines of each worker's log the console shows."""
LOG_PREFIX = "worker-"


@dataclass
class LocalWorker:
    """One `lab worker` process the console started.

    Attributes:
        process: the process.
        log: its log file.
        concurrency: its `--concurrency` (None: each model's own).
        keep: keep it running after the console quits.
        paused: SIGSTOPped by the console.
    """

    process: subprocess.Popen[bytes]
    log: Path
    concurrency: int | None
    keep: bool = False
    paused: bool = False

    @property
    def pid(self) -> int:
        """Its process id (the worker id is `host:pid`)."""
        return self.process.pid

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None


@dataclass
class LocalWorkers:
    """The workers this console started on one lab.db.

    Args:
        db_path: lab.db.
        config_path: the model registry (passed on only when the file exists).
        log_dir: the folder of their logs (called when the first starts).
    """

    db_path: Path
    config_path: Path
    log_dir: Callable[[], Path]
    started: list[LocalWorker] = field(default_factory=list)

    def command(self, concurrency: int | None, log: Path) -> list[str]:
        """The `lab worker` command line of one worker (no `--concurrency` for None)."""
        head = [sys.executable, "-m", "console.cli", "--db", str(self.db_path)]
        if self.config_path.exists():
            head += ["--config", str(self.config_path)]
        bound = ["--concurrency", str(concurrency)] if concurrency is not None else []
        return head + ["worker", *bound, "--grace", str(GRACE_S), "--log-file", str(log)]

    def start(self, processes: int, concurrency: int | None, keep: bool
              ) -> list[LocalWorker]:
        """Start `processes` workers, each with `concurrency` episodes in flight at most
        (None: each model's own concurrency).

        Raises:
            OSError: a process or its log file could not be made.
        """
        folder = self.log_dir()
        out = []
        for _ in range(processes):
            log = _next_log(folder)
            with log.open("ab") as sink:
                process = subprocess.Popen(self.command(concurrency, log),
                                           stdin=subprocess.DEVNULL, stdout=sink,
                                           stderr=subprocess.STDOUT, start_new_session=True)
            worker = LocalWorker(process, log, concurrency, keep)
            self.started.append(worker)
            out.append(worker)
        return out

    def running(self) -> list[LocalWorker]:
        """The started workers whose process still runs."""
        return [w for w in self.started if w.alive()]

    def pause(self, paused: bool) -> list[LocalWorker]:
        """SIGSTOP (or SIGCONT) every running worker not already so; returns them."""
        moved = [w for w in self.running() if w.paused != paused]
        for w in moved:
            _signal(w, signal.SIGSTOP if paused else signal.SIGCONT)
            w.paused = paused
        return moved

    def stop(self, workers: list[LocalWorker] | None = None) -> list[LocalWorker]:
        """Ask workers (default: every running one) to stop, as Ctrl-C does to
        `lab worker`: no new work, calls in flight get the grace, jobs are released."""
        targets = self.running() if workers is None else [w for w in workers if w.alive()]
        for w in targets:
            if w.paused:  # a stopped process cannot act on SIGTERM
                _signal(w, signal.SIGCONT)
                w.paused = False
            _signal(w, signal.SIGTERM)
        return targets

    def stop_on_quit(self, wait_s: float = GRACE_S + STOP_MARGIN_S + 2.0) -> list[LocalWorker]:
        """Stop the workers not started to outlive the console and wait for them (at most
        `wait_s`; then they are killed with their group). Returns the ones stopped."""
        targets = self.stop([w for w in self.started if not w.keep])
        deadline = time.monotonic() + wait_s
        for w in targets:
            try:
                w.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(w, signal.SIGKILL)
                w.process.wait()
        return targets


def _signal(worker: LocalWorker, signum: int) -> None:
    """Send `signum` to a worker's process group (its Huey children too)."""
    try:
        os.killpg(worker.pid, signum)
    except ProcessLookupError:
        pass


def _next_log(folder: Path) -> Path:
    """The first `worker-<n>.log` not yet in `folder`."""
    n = 1
    while (folder / f"{LOG_PREFIX}{n}.log").exists():
        n += 1
    return folder / f"{LOG_PREFIX}{n}.log"


def worker_logs(folder: Path, lines: int = LOG_LINES) -> list[tuple[Path, list[str]]]:
    """The last `lines` lines of every worker log in `folder`, newest log first."""
    logs = sorted(folder.glob(f"{LOG_PREFIX}*.log"), key=lambda p: p.stat().st_mtime,
                  reverse=True)
    return [(path, tail(path, lines)) for path in logs]


def tail(path: Path, lines: int) -> list[str]:
    """The last `lines` lines of a text file (undecodable bytes replaced)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError as exc:
        return [f"(cannot read: {exc})"]
    return data.decode("utf-8", errors="replace").splitlines()[-lines:]
