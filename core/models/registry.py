"""The model registry: lab.toml plus the built-in simulated models (docs/models.md).

A model is a frozen spec; its canonical JSON (minus endpoints, which say where
it is served rather than what it is) is hashed into every cell.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.canonical import canonical_json, sha256_hex
from core.errors import ConfigError
from core.models.backends import BACKENDS, backend_named
from core.models.base import ModelClient
from core.models.cost import Prices
from core.models.declared import BackendConfig, from_table, required_keys, serving_keys, table_keys
from core.models.sim import BUILTIN_SIMS

TOP_LEVEL = ("models",)
"""The tables lab.toml may have at its top level."""


@dataclass(frozen=True)
class ModelSpec:
    """One registered model.

    Attributes:
        name: registry name (the `[models.NAME]` key).
        backend: a registered backend's name (`core.models.backends`).
        params: the validated table from lab.toml, minus `backend`.
    """

    name: str
    backend: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def config(self) -> BackendConfig:
        """The table typed by its backend's configuration class, parsed once: what
        readers use."""
        return from_table(backend_named(self.backend).config, self.params)

    @property
    def prices(self) -> Prices:
        """Dollars per million tokens (0 for sims and unpriced models)."""
        return self.config.prices

    @property
    def max_context(self) -> int | None:
        """The context window in tokens, when the registry gives it (never for sims)."""
        return self.config.max_context

    @property
    def prompt_format(self) -> str:
        """"react", or "search_r1" for an OpenAI-compatible model that asks for it."""
        return self.config.prompt_format

    @property
    def act_max_tokens(self) -> int | None:
        """max_tokens of an acting turn (`core.models.generation`); None for sims, which
        generate no tokens (the episode loop's default applies)."""
        return self.config.act_max_tokens

    @property
    def thinking_budget(self) -> int:
        """Tokens an acting turn may think on top of `act_max_tokens` (0 without thinking)."""
        return self.config.thinking_tokens

    @property
    def concurrency(self) -> int:
        """Concurrent episodes allowed against this model."""
        return self.config.concurrency

    @property
    def in_process(self) -> bool:
        """Computed in this process (a sim): no tokens billed, no host-wide call cap."""
        return backend_named(self.backend).config.in_process

    @property
    def batch_discount(self) -> float | None:
        """Price factor through the backend's batch API; None: it has none."""
        return backend_named(self.backend).config.batch_discount

    def spec(self) -> dict[str, Any]:
        """What the model is (not where it is served): hashed into every cell.

        A served model's resolved generation settings (max_tokens, thinking budget,
        sampling, seed policy, Claude's tools mode) are part of it under "generation",
        defaults included, so a change of default never pools with older results.
        """
        serving = serving_keys(backend_named(self.backend).config)
        out = {k: v for k, v in self.params.items() if k not in serving}
        out.update(name=self.name, backend=self.backend)
        generation = self.config.generation()
        if generation is not None:
            out["generation"] = generation
        return out

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces)."""
        return canonical_json(self.spec())

    def spec_hash(self) -> str:
        """sha256 hex of the canonical JSON."""
        return sha256_hex(self.to_json())


def builtin_models() -> dict[str, ModelSpec]:
    """The simulated models available without any registry file."""
    return {name: ModelSpec(name, "sim", spec.spec()) for name, spec in BUILTIN_SIMS.items()}


def _validate(where: str, name: str, table: Mapping[str, Any]) -> ModelSpec:
    """A table checked against its backend's configuration class, one line per error."""
    if "backend" not in table:
        raise ConfigError(f"{where}: missing field 'backend' (one of: {', '.join(BACKENDS)})")
    try:
        backend = backend_named(table["backend"])
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    cls = backend.config
    known = table_keys(cls) | {"backend"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown field '{unknown[0]}' for backend '{backend.name}' "
                          f"(known: {', '.join(sorted(known))})")
    required = required_keys(cls)
    for key in required:
        if key not in table:
            raise ConfigError(f"{where}: missing field '{key}' (backend '{backend.name}' needs "
                              f"{', '.join(required)})")
    params = {k: v for k, v in table.items() if k != "backend"}
    try:
        config = from_table(cls, params)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return ModelSpec(name, backend.name, config.stored(params))


def load_registry(path: Path | None, data: bytes | None = None) -> dict[str, ModelSpec]:
    """Built-in sim models plus the models of `path` (lab.toml) when it exists.

    Args:
        path: the registry file; None or a missing default file means built-ins only.
        data: the file's bytes when the caller read them already (read as the file
            would be: UTF-8, any line ending a newline).

    Raises:
        ConfigError: unreadable or non-UTF-8 TOML, an unknown top-level table, a
            model that redefines a built-in sim, unknown backend, missing field or
            bad value, naming the file and the model.
    """
    models = builtin_models()
    if path is None or (data is None and not path.exists()):
        return models
    try:
        text = (path.read_text(encoding="utf-8") if data is None else
                data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"))
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib parses arrays and inline tables recursively
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too "
                          "deeply") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file (byte {exc.start}); lab.toml "
                          f"must be TOML text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    unknown = sorted(set(document) - set(TOP_LEVEL))
    if unknown:
        raise ConfigError(f"{path}: unknown top-level table or key '{unknown[0]}' (known: "
                          f"{', '.join(TOP_LEVEL)}; a model is [models.NAME])")
    tables = document.get("models", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: [models] must be a table of [models.NAME] tables")
    for name, table in tables.items():
        where = f"{path}: models.{name}"
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: must be a table")
        if name in BUILTIN_SIMS:
            raise ConfigError(f"{where}: '{name}' is a built-in sim model and cannot be "
                              f"redefined; give your entry another name (built-ins: "
                              f"{', '.join(BUILTIN_SIMS)})")
        models[name] = _validate(where, name, table)
    return models


_READ: dict[str, tuple[bytes | None, dict[str, ModelSpec]]] = {}
"""The registry last read from each path, with the file's bytes then (None: no file)."""


def registry_now(path: Path | None) -> dict[str, ModelSpec]:
    """`load_registry(path)`, parsed and validated again only when the file's bytes
    changed since the last read in this process: a worker rebuilds each job's cell from
    it, and parsing and validating lab.toml per job cost as much as a few model calls.

    Raises:
        ConfigError: as `load_registry` (an invalid file is read, and refused, each time).
    """
    try:
        data = None if path is None else path.read_bytes()
    except FileNotFoundError:
        data = None
    except OSError:  # unreadable: refused in load_registry's words
        return load_registry(path)
    key = str(path)
    kept = _READ.get(key)
    if kept is None or kept[0] != data:
        kept = _READ[key] = (data, load_registry(path, data))
    return dict(kept[1])


def resolve_model(models: Mapping[str, ModelSpec], name: str) -> ModelSpec:
    """Look a model up by name with an error that lists what exists."""
    try:
        return models[name]
    except KeyError:
        raise ConfigError(f"unknown model '{name}'; known: {', '.join(sorted(models))}") from None


def make_client(spec: ModelSpec) -> ModelClient:
    """Build the client for a model spec (its backend's client class).

    Raises:
        ConfigError: an unknown backend, or an anthropic model without
            ANTHROPIC_API_KEY in the environment.
    """
    return backend_named(spec.backend).make_client(spec.name, spec.config)
