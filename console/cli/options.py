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
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from core.bounds import Bounds
from core.errors import ConfigError, StoreError
from core.limits import INT64_MAX

if TYPE_CHECKING:
    from sqlite_utils import Database

DB_HELP = "lab.db path (env LAB_DB)."
CONFIG_HELP = "Model registry file (env LAB_CONFIG)."
GLOBAL_NAMES = ("db", "config")


def bounded(lo: int | None = 0, hi: int = INT64_MAX) -> Number:
    """An integer option type bounded to what lab.db stores (and to `lo`…`hi`): a value
    beyond is one `error:` line naming the option and the range, never an SQLite
    overflow.

    Args:
        lo: the smallest value (None: -2**63).
        hi: the largest value.
    """
    return Number(Bounds(ge=-INT64_MAX - 1 if lo is None else lo, le=hi, integer=True))


class Number(click.ParamType):
    """A number option checked by `core.bounds` (finite, within its bounds): "nan",
    "inf" or a value out of range is one `error:` line naming the option and the range.

    Args:
        bounds: the allowed range; whole numbers only when `bounds.integer`.
    """

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.name = "integer" if bounds.integer else "number"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | float:
        """The number, or a one-line failure naming the allowed range."""
        number: Any = value
        if isinstance(value, str):
            try:
                number = int(value) if self.bounds.integer else float(value)
            except ValueError:
                number = value
        error = self.bounds.error("the value", number)
        if error is not None:
            self.fail(error.replace("the value must be", "must be", 1), param, ctx)
        return number


def number(bounds: Bounds | None = None, cls: type | None = None, key: str = "",
           **narrowed: Any) -> Number:
    """An option type for one number: `bounds`, or those of the field `key` of the
    declared dataclass `cls` (`core.models.declared.field_bounds`), the option being a
    second way to set it; `narrowed` replaces some of them (e.g. ge=1).

    Args:
        bounds: the allowed range.
        cls, key: a dataclass field whose declared bounds the option takes.
        narrowed: Bounds fields replaced (a stricter option than the field).
    """
    if cls is not None:
        from core.models.declared import field_bounds

        bounds = field_bounds(cls, key)
    if bounds is None:
        raise TypeError("number() needs bounds or a dataclass field")
    return Number(replace(bounds, **narrowed))


class TableChoice(click.Choice):
    """A results table's name among `analysis.tables.registry`'s, read each time it is
    parsed or listed, so a table registered after this module was loaded is offered too.

    Args:
        families: only the tables of these families (default every one).
        extra: names offered after the tables (e.g. "all").
    """

    def __init__(self, *families: str, extra: tuple[str, ...] = ()) -> None:
        self.families, self.extra = families, extra
        super().__init__(self.choices)

    @property
    def choices(self) -> tuple[str, ...]:
        """The names offered now."""
        from analysis.tables.registry import table_names

        return (*table_names(*self.families), *self.extra)

    @choices.setter
    def choices(self, value: object) -> None:
        """Ignored: the names come from the registry."""


class IntList(click.ParamType):
    """Comma-separated integers, each within `lo`…`hi` (`--seeds 0,1`, `--budgets 8,16`);
    the value is a tuple.

    Args:
        lo, hi: the bounds of every integer.
        example: a right input, shown in the error.
    """

    name = "ints"

    def __init__(self, lo: int = 0, hi: int = INT64_MAX, example: str = "0,1") -> None:
        self.lo, self.hi, self.example = lo, hi, example

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> tuple[int, ...]:
        """The tuple of integers, or a one-line failure naming the option and the value."""
        if isinstance(value, tuple):
            return value
        parts = [p.strip() for p in str(value).split(",") if p.strip()]
        try:
            out = tuple(int(p) for p in parts)
        except ValueError:
            out = ()
        if not parts or len(out) != len(parts) or any(not self.lo <= v <= self.hi for v in out):
            self.fail(f"{value!r}: give comma-separated integers from {self.lo:,} to "
                      f"{self.hi:,}, e.g. {self.example}", param, ctx)
        return out


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
        The open database, closed when the command ends (not left to the collector:
        `console.cli.collector`).
    """
    from core import store  # here: `lab --help` and the group need no SQLite or pandas

    db = store.connect(ctx.obj["db"], create=create)
    ctx.call_on_close(db.close)
    return db


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
        """Run the command; an SQLite file that cannot be opened or written (read-only,
        unable to open, disk full, I/O error: lab.db or the queue file beside it) and an
        integer SQLite cannot store become one StoreError/ConfigError line."""
        try:
            return super().invoke(ctx)
        except sqlite3.OperationalError as exc:
            error = storage_error((ctx.obj or {}).get("db", "lab.db"), exc)
            if error is exc:
                raise
            raise error from None
        except sqlite3.DatabaseError as exc:  # damaged pages: quick_check, then one line
            raise _corrupt_or(ctx, exc) from None
        except OverflowError as exc:
            if "SQLite INTEGER" not in str(exc):
                raise
            raise ConfigError(f"a number is too large to store ({exc}); integers must be "
                              f"at most {INT64_MAX:,}") from None


def _corrupt_or(ctx: click.Context, exc: Exception) -> Exception:
    """The one-line error of a corrupt lab.db (`core.store.base.corruption_error`), or
    `exc` itself when the file checks out (then it is a bug, shown with its traceback)."""
    from core.store.base import corruption_error

    error = corruption_error((ctx.obj or {}).get("db", "lab.db"), exc)
    if error is None:
        raise exc
    return error


DISK_ERRORS = ("database or disk is full", "disk I/O error")


def storage_error(db: Path | str, exc: sqlite3.OperationalError) -> Exception:
    """The one-line error for an SQLite failure of lab.db or its queue file (Huey's
    storage raises the same `sqlite3.OperationalError`); anything else is returned as
    is, to be raised with its traceback (a bug, not bad input)."""
    text = str(exc)
    if any(d in text for d in DISK_ERRORS):
        return StoreError(f"{db} (or its queue file beside it): {text}; free disk space, "
                          f"then run the command again (a write that failed was rolled "
                          f"back: nothing stored is lost or half-written)")
    if "readonly" in text or "unable to open" in text:
        from core.store.base import access_error

        return access_error(db, exc)
    return exc
