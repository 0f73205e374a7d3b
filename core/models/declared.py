"""A backend's lab.toml table, declared once by its frozen dataclass.

Each backend's configuration class (`core.models.specs`, `core.models.sim`, or a new
backend's module) has one field per key its `[models.NAME]` table may hold: the
annotation is the value's type, the default its default, a field without one is
required, and `setting(…)` adds what a type cannot say — bounds, choices, a check of
its own (URLs, a sampling table) and whether the key only says where or how the model
is served (left out of the spec hash). Everything else is derived from the class:

- `table_keys`, `required_keys` and `serving_keys` (the registry's unknown-field,
  missing-field and hashing rules);
- `check_fields`, which each class's `__post_init__` calls: types, bounds and choices,
  each a one-line `ConfigError` naming the key, so a table is validated by building
  its configuration and a configuration built in code is checked the same way;
- `from_table`, which builds a class from a table (TOML lists become tuples).

`BackendConfig` is what every configuration answers, with the answers of a backend
that does not say otherwise: the registry and the queue ask these, never a backend's
name.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

from core.bounds import MAX_CONCURRENCY, Bounds, non_finite
from core.errors import ConfigError
from core.models.cost import Prices

Check = Callable[[str, Any], "str | None"]
"""A key's own check: (key, value) → an error line without the file and model, or None."""
_T = TypeVar("_T")


@dataclass(frozen=True)
class Setting:
    """What a field's type does not say about its lab.toml key.

    Attributes:
        ge: smallest value allowed (numbers).
        gt: the value must be greater than this (numbers).
        le: largest value allowed (numbers).
        choices: the only values allowed (strings).
        note: said after the choices when a value is not one of them.
        unit: the value's unit in messages ("seconds", "tokens").
        serving: where or how the model is served, not what it is: left out of the hash.
        check: replaces the type, bound and choice checks with the key's own.
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    note: str = ""
    unit: str = ""
    serving: bool = False
    check: Check | None = None

    def bounds(self) -> Bounds:
        """The field's numeric bounds (`core.bounds`, the one check of every number)."""
        return Bounds(ge=self.ge, gt=self.gt, le=self.le, unit=self.unit)


_PLAIN = Setting()


def setting(default: Any = MISSING, **declared: Any) -> Any:
    """A dataclass field with its `Setting` (keyword arguments); no default = required."""
    return field(default=default, metadata={"setting": Setting(**declared)})


def concurrency_setting(default: int) -> Any:
    """The `concurrency` field every backend declares: 1 to `MAX_CONCURRENCY`, serving."""
    return setting(default, ge=1, le=MAX_CONCURRENCY, serving=True)


def field_bounds(cls: type, key: str) -> Bounds:
    """A numeric field's bounds, whole numbers only when it is annotated `int`: what a
    command-line option setting the same value checks (`console.cli.options.number`)."""
    f = next(f for f in fields(cls) if f.name == key)
    integer = all(arm in (int, type(None)) for arm in _arms(_hints(cls)[key]))
    return replace(_setting(f).bounds(), integer=integer)


def _setting(f: Any) -> Setting:
    found = f.metadata.get("setting", _PLAIN)
    return found if isinstance(found, Setting) else _PLAIN


def table_keys(cls: type) -> frozenset[str]:
    """The keys a table of this configuration may hold (its fields)."""
    return frozenset(f.name for f in fields(cls))


def required_keys(cls: type) -> tuple[str, ...]:
    """The keys a table must hold (fields without a default), in declaration order."""
    return tuple(f.name for f in fields(cls)
                 if f.default is MISSING and f.default_factory is MISSING)


def serving_keys(cls: type) -> frozenset[str]:
    """The keys that say where or how a model is served: never hashed."""
    return frozenset(f.name for f in fields(cls) if _setting(f).serving)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _arms(hint: Any) -> tuple[Any, ...]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def _matches(value: Any, hint: Any) -> bool:
    """Whether a value read from TOML (or given in code) has the annotated type."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if len(_arms(hint)) > 1:
        return any(_matches(value, arm) for arm in _arms(hint))
    origin = typing.get_origin(hint)
    if origin in (tuple, list, Sequence):
        items = [a for a in typing.get_args(hint) if a is not Ellipsis]
        return isinstance(value, (list, tuple)) and (not items or all(
            _matches(v, items[0]) for v in value))
    if origin in (dict, Mapping):
        kv = typing.get_args(hint)
        return isinstance(value, Mapping) and (not kv or all(
            _matches(v, kv[1]) for v in value.values()))
    if hint is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):  # TOML's true is not a number
        return False
    if hint is float:
        return isinstance(value, (int, float))
    return isinstance(value, hint)


_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
_PLURALS = {int: "integers", float: "numbers", str: "strings", bool: "true or false values"}


def _kind(hint: Any) -> str:
    """How a message names a type: "an integer", "a list of strings", "a table of numbers"."""
    names = []
    for arm in _arms(hint):
        origin, args = typing.get_origin(arm), typing.get_args(arm)
        if arm is type(None):
            continue
        if origin in (tuple, list, Sequence):
            names.append(f"a list of {_PLURALS[args[0]]}" if args and args[0] in _PLURALS
                         else "a list")
        elif origin in (dict, Mapping):
            names.append(f"a table of {_PLURALS[args[1]]}" if len(args) == 2
                         and args[1] in _PLURALS else "a table")
        else:
            names.append(_KIND_NAMES.get(arm, getattr(arm, "__name__", str(arm))))
    return " or ".join(names)


def field_error(cls: type, key: str, value: Any) -> str | None:
    """The error line of one key's value (type, choices, bounds, or its own check).

    Every number, inside tables and lists too, must also be finite: NaN and infinity
    mean nothing in any key.
    """
    f = next(f for f in fields(cls) if f.name == key)
    error = _value_error(cls, f, key, value)
    if error is None and (bad := non_finite(value, key)) is not None:
        error = f"{bad[0]} must be a finite number, got {bad[1]}"
    return error


def _value_error(cls: type, f: Any, key: str, value: Any) -> str | None:
    s = _setting(f)
    if s.check is not None:
        return s.check(key, value)
    if value is None and (f.default is None):
        return None  # left unset
    hint = _hints(cls)[key]
    if not _matches(value, hint):
        shown = list(value) if isinstance(value, tuple) else value  # as TOML wrote it
        bounds = s.bounds()
        where = f" {bounds.range_text()}" if bounds.bounded else ""
        return f"{key} must be {_kind(hint)}{where}, got {shown!r}"
    if s.choices and value not in s.choices:
        return f"{key} must be one of {', '.join(s.choices)}{s.note}, got {value!r}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return s.bounds().error(key, value)
    return None


def check_fields(config: object) -> None:
    """Check every field of a configuration; call from its `__post_init__`.

    Raises:
        ConfigError: the first bad value, one line naming its key.
    """
    for f in fields(type(config)):  # type: ignore[arg-type]
        error = field_error(type(config), f.name, getattr(config, f.name))
        if error is not None:
            raise ConfigError(error)


def from_table(cls: type[_T], table: Mapping[str, Any]) -> _T:
    """The configuration of a table whose keys are known and complete (lists → tuples).

    Raises:
        ConfigError: a bad value (from the class's `__post_init__`).
    """
    hints = _hints(cls)  # type: ignore[arg-type]  # a class is hashable
    tuples = {f.name for f in fields(cls)  # type: ignore[arg-type]
              if typing.get_origin(hints[f.name]) is tuple}
    return cls(**{k: tuple(v) if k in tuples and isinstance(v, list) else v
                  for k, v in table.items()})


class BackendConfig:
    """What the registry and the queue ask of every backend's configuration.

    A backend's frozen dataclass derives from it and overrides what differs; the
    defaults are those of a served model that declares none of these.
    """

    concurrency: int
    """Concurrent episodes allowed against the model (a field of every backend)."""
    in_process: ClassVar[bool] = False
    """Computed in this process: bills no tokens, needs no host-wide call cap and is
    left out of cost estimates."""
    always_judge: ClassVar[bool] = False
    """Answers a judgment fork at every observation, whatever the condition asks."""
    batch_discount: ClassVar[float | None] = None
    """Price factor of calls sent through the backend's batch API; None: it has none."""
    max_context: int | None = None
    prompt_format: str = "react"

    @property
    def prices(self) -> Prices:
        """Dollars per million tokens (0 unless the table gives prices)."""
        return Prices()

    @property
    def act_max_tokens(self) -> int | None:
        """max_tokens of an acting turn; None: the episode loop's default."""
        return None

    @property
    def thinking_tokens(self) -> int:
        """Tokens an acting turn may think on top of `act_max_tokens`."""
        return 0

    @property
    def instant(self) -> bool:
        """Replies at once: a job tails only its first episode live."""
        return False

    @property
    def detail(self) -> str:
        """What `lab models` prints after the backend: the served model or the policy."""
        return ""

    server: ClassVar[str] = ""
    """What serves the model, as the dashboard names it ("vLLM", "Claude")."""
    check_needs_key: ClassVar[bool] = False
    """Checking its server spends the API key: only on request (`lab models --check-api`)."""

    def served_at(self) -> tuple[str, ...]:
        """Where the model is served: URLs as written (credentials included: redact them
        before printing); none for a model computed in this process."""
        return ()

    def check_server(self, url: str, timeout_s: float) -> str:
        """One line on whether the server at `url` answers (the `health` capability)."""
        return "not checked"

    def generation(self) -> dict[str, Any] | None:
        """Resolved generation settings hashed into the spec; None: none to hash."""
        return None

    def stored(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """The table as the registry keeps and hashes it (as written, by default)."""
        return dict(table)
