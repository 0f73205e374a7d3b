"""Options every `lab` command shares, and the group that turns SQLite access errors into
one line.

`--db` and `--config` are options of the `lab` group (`lab --db x status`) and, with the
same meaning, of every subcommand (`lab status --db x`): `add_global_options` appends
them to each command once the tree is built, so command modules need not repeat them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from sqlite_utils import Database

from core import store
from core.errors import ConfigError
from core.store.base import access_error

DB_HELP = "lab.db path (env LAB_DB)."
CONFIG_HELP = "Model registry file (env LAB_CONFIG)."
GLOBAL_NAMES = ("db", "config")


def check_config(path: Path, explicit: bool) -> None:
    """Refuse a registry file that was named (option or LAB_CONFIG) but does not exist.

    The default ./lab.toml may be missing (built-in sims only); a file the user named
    must not be silently ignored.

    Raises:
        ConfigError: an explicitly given --config that does not exist.
    """
    if explicit and not path.exists():
        raise ConfigError(f"--config {path}: no such file (leave --config out to use only "
                          f"the built-in sim models)")


def open_db(ctx: click.Context, create: bool = True) -> Database:
    """The lab.db named by --db / LAB_DB, for any `lab` command.

    Args:
        ctx: the command's context (its `obj["db"]` holds the path).
        create: create and migrate the file when it is missing; read-only commands
            (status, results, tail, prereg show …) pass False so a wrong --db creates
            nothing and says so.

    Returns:
        The open database.
    """
    return store.connect(ctx.obj["db"], create=create)


def _set_global(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """Store a subcommand's --db/--config where the group put its own (ctx.obj)."""
    if value is None:
        return
    ctx.ensure_object(dict)
    ctx.obj[str(param.name)] = value
    if param.name == "config":
        check_config(value, explicit=True)


def _options() -> list[click.Option]:
    path = click.Path(dir_okay=False, path_type=Path)
    return [click.Option(["--db"], type=path, default=None, expose_value=False,
                         callback=_set_global, help=DB_HELP + " Same as `lab --db`."),
            click.Option(["--config"], type=path, default=None, expose_value=False,
                         callback=_set_global, help=CONFIG_HELP + " Same as `lab --config`.")]


def _walk(command: click.Command) -> Iterator[click.Command]:
    yield command
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _walk(sub)


def add_global_options(group: click.Group) -> None:
    """Give every command under `group` (not the group itself) --db and --config."""
    for command in _walk(group):
        if command is group or {p.name for p in command.params} & set(GLOBAL_NAMES):
            continue
        command.params.extend(_options())


def config_explicit(ctx: click.Context) -> bool:
    """Whether the group's --config came from the command line or LAB_CONFIG."""
    return ctx.get_parameter_source("config") in (ParameterSource.COMMANDLINE,
                                                  ParameterSource.ENVIRONMENT)


class LabGroup(click.Group):
    """The `lab` group: an SQLite file that cannot be opened or written is one error line."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; `sqlite3.OperationalError` (read-only, unable to open) becomes
        a StoreError naming --db."""
        try:
            return super().invoke(ctx)
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "readonly" not in text and "unable to open" not in text:
                raise
            raise access_error((ctx.obj or {}).get("db", "lab.db"), exc) from None
