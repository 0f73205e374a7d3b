"""Options every `lab` command shares, and the group that loads a command's module only
when that command runs and turns SQLite access errors into one line.

`--db` and `--config` are options of the `lab` group (`lab --db x status`) and, with the
same meaning, of every subcommand (`lab status --db x`): `add_global_options` appends
them to each command as it is loaded, so command modules need not repeat them.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from core.errors import ConfigError

if TYPE_CHECKING:
    from sqlite_utils import Database

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
    from core import store  # here: `lab --help` and the group need no SQLite or pandas

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


def add_global_options(command: click.Command) -> None:
    """Give `command` and every command under it --db and --config (once)."""
    for sub in _walk(command):
        if not {p.name for p in sub.params} & set(GLOBAL_NAMES):
            sub.params.extend(_options())


def config_explicit(ctx: click.Context) -> bool:
    """Whether the group's --config came from the command line or LAB_CONFIG."""
    return ctx.get_parameter_source("config") in (ParameterSource.COMMANDLINE,
                                                  ParameterSource.ENVIRONMENT)


class LabGroup(click.Group):
    """The `lab` group. Its commands live in modules imported only when the command runs
    (or help lists it), so `lab results` does not pay for the worker's or the console's
    imports; an SQLite file that cannot be opened or written is one error line.

    Args:
        modules: module name -> the names of the commands it holds in its ``COMMANDS``
            tuple.
        **kwargs: as `click.Group`.
    """

    def __init__(self, *args: Any, modules: Mapping[str, tuple[str, ...]] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modules = {name: module for module, names in (modules or {}).items()
                        for name in names}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, loaded or not, sorted."""
        return sorted({*self.commands, *self.modules})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command called `cmd_name`, importing its module on first use."""
        if cmd_name not in self.commands and cmd_name in self.modules:
            for command in importlib.import_module(self.modules[cmd_name]).COMMANDS:
                if command.name not in self.commands:
                    add_global_options(command)
                    self.add_command(command)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; `sqlite3.OperationalError` (read-only, unable to open) becomes
        a StoreError naming --db."""
        try:
            return super().invoke(ctx)
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "readonly" not in text and "unable to open" not in text:
                raise
            from core.store.base import access_error

            raise access_error((ctx.obj or {}).get("db", "lab.db"), exc) from None
