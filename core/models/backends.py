"""The model backends: one line each, naming its configuration class and its client.

A backend is its configuration class (a frozen dataclass whose fields are its lab.toml
table: `core.models.declared`) and its client class, constructed as
`Client(name, config)`. The client is named "module:Class" and imported only when a
client is made, so reading lab.toml (`lab results`, the console) never loads an SDK.
Adding a backend is one module and one `register` line here (CONTRIBUTING.md, "A
backend").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.errors import ConfigError
from core.models.base import ModelClient
from core.models.declared import BackendConfig
from core.models.sim import SimSpec
from core.models.specs import AnthropicSpec, OpenAISpec


@dataclass(frozen=True)
class Backend:
    """One backend.

    Attributes:
        name: what a table's `backend = "…"` says.
        config: the configuration class (validates and types the table).
        client: the client class, or "module:Class" to import it on first use; called
            as `client(name, config)`.
    """

    name: str
    config: type[BackendConfig]
    client: str | Callable[[str, Any], ModelClient]

    def make_client(self, name: str, config: BackendConfig) -> ModelClient:
        """A client of this backend for the model `name`."""
        make = self.client
        if isinstance(make, str):
            module, _, attr = make.partition(":")
            make = getattr(importlib.import_module(module), attr)
        return make(name, config)


BACKENDS: dict[str, Backend] = {}
"""The registered backends by name, in registration order."""


def register(backend: Backend) -> Backend:
    """Add a backend (a name registered twice is a mistake).

    Raises:
        ValueError: the name is taken.
    """
    if backend.name in BACKENDS:
        raise ValueError(f"backend '{backend.name}' is registered already")
    BACKENDS[backend.name] = backend
    return backend


def backend_named(name: str) -> Backend:
    """The backend of a table's `backend = "…"`.

    Raises:
        ConfigError: no such backend, listing the known ones.
    """
    try:
        return BACKENDS[name]
    except KeyError:
        raise ConfigError(f"unknown backend '{name}' (one of: {', '.join(BACKENDS)})") from None


register(Backend("openai", OpenAISpec, "core.models.openai_compat:OpenAIClient"))
register(Backend("anthropic", AnthropicSpec, "core.models.anthropic:AnthropicClient"))
register(Backend("sim", SimSpec, "core.models.sim:SimClient"))
