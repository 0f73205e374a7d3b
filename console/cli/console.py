"""`lab` and `lab console`: open the Textual console on lab.db (docs/console.md).

A missing lab.db is created only after a yes on the terminal; without a terminal
`lab console` fails with one line, and `lab` alone prints its help.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from console.cli.output import echo
from core.errors import ConfigError, LabError

NEEDS_TERMINAL = ("the console needs a terminal (stdout is not a tty): run `lab` in a "
                  "terminal, or use the commands above")


def is_tty(stream: str) -> bool:
    """Whether sys.stdin / sys.stdout is a terminal (looked up at call time)."""
    return bool(getattr(sys, stream).isatty())


def ensure_db(db_path: Path, ask: bool) -> None:
    """Make sure lab.db exists, creating it (with the demo set) only after a yes.

    Args:
        db_path: the lab.db to open.
        ask: whether a person can answer on the terminal.

    Raises:
        ConfigError: the file is missing and nobody can be asked, or the answer was no.
    """
    if db_path.exists():
        return
    if not ask:
        raise ConfigError(f"{db_path} does not exist; create it with `lab --db {db_path} init` "
                          f"or open the console in a terminal to be asked")
    if not click.confirm(f"{db_path} does not exist; create it?", default=False):
        raise ConfigError(f"{db_path} not created; nothing to open")
    from core import store
    from core.demo_set import ensure_demo_set

    db = store.connect(db_path)
    ensure_demo_set(db)
    db.conn.close()
    echo(f"created {db_path} with the demo questions and the demo question set")


def open_console(db_path: Path, config_path: Path, export_dir: Path,
                 run: Callable[[object], None] | None = None) -> None:
    """Ask about a missing lab.db, then run the console until it quits.

    Args:
        db_path: lab.db.
        config_path: the model registry.
        export_dir: where the console writes CSVs.
        run: runs the app (default: `app.run()`); tests pass their own.

    Raises:
        LabError: the console ended on an error (its one line; the traceback is in the
            console's error log, `console.logs`).
    """
    ensure_db(db_path, ask=is_tty("stdin"))
    from console.app import ConsoleConfig, make_app

    app = make_app(db_path, ConsoleConfig(db_path=db_path, config_path=config_path,
                                          export_dir=export_dir))
    from console import logs

    try:
        (run or (lambda a: a.run()))(app)  # type: ignore[attr-defined]
    except Exception as exc:  # the terminal itself failed: one line, the rest in the log
        line = logs.one_line(exc)
        logs.record_error(app.log_dir(), line, exc)
        raise LabError(f"the console stopped: {line} (details in "
                       f"{app.log_dir() / logs.ERROR_LOG})") from None
    if app.fatal is not None or app.return_code:
        raise LabError(f"the console stopped: {app.fatal or 'an error'} (details in "
                       f"{app.log_dir() / logs.ERROR_LOG})")


def open_from_group(ctx: click.Context) -> None:
    """`lab` with no command: the console on a terminal, else the help and one line."""
    if not is_tty("stdout"):
        echo(ctx.get_help())
        echo(f"\n{NEEDS_TERMINAL}")
        return
    open_console(Path(ctx.obj["db"]), Path(ctx.obj["config"]), Path("lab-exports"))


@click.command("console")
@click.option("--export-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("lab-exports"), show_default=True,
              help="Where `e` on a table writes its CSV.")
@click.pass_context
def console_cmd(ctx: click.Context, export_dir: Path) -> None:
    """Open the lab console (the same as `lab` with no command).

    Keys: 1–7 screens, ? help, ctrl+p palette, p pause refresh, q quit.

    \b
    Example:
      lab --db runs/lab.db console --export-dir paper/tables
    """
    if not is_tty("stdout"):
        raise ConfigError("the console needs a terminal (stdout is not a tty); use `lab status`, "
                          "`lab tail` or `lab results` instead")
    open_console(Path(ctx.obj["db"]), Path(ctx.obj["config"]), export_dir)


COMMANDS = (console_cmd,)
"""The commands to register on the `lab` group."""
