"""The Results screen's selection line (`/`): the options of `lab results`, typed as
``key=value`` words."""

from __future__ import annotations

from core.errors import ConfigError
from core.store.selection import Selection

SELECTION_KEYS = ("run", "set", "seeds", "models", "conditions", "regimes", "pool")
"""What `/` accepts: the options of `lab results` (`--run`, `--set`, … `--pool`)."""
_SINGULAR = {"runs": "run", "sets": "set", "seed": "seeds", "model": "models",
             "condition": "conditions", "regime": "regimes"}


def parse_selection(text: str) -> tuple[str, Selection]:
    """Read a selection typed as `lab results` options: `run=a,b models=x pool=seeds`.

    Args:
        text: the selection text ("" selects everything, nothing pooled).

    Returns:
        (the text normalised, the Selection `lab results` builds from the same options).

    Raises:
        ConfigError: an unknown key, a word without `=`, or what `lab results` refuses.
    """
    from core.store.selection import selection_from

    values: dict[str, str] = {}
    for word in text.split():
        key, eq, value = word.partition("=")
        key = key.strip().lower().lstrip("-")
        key = _SINGULAR.get(key, key)
        if not eq or key not in SELECTION_KEYS:
            raise ConfigError(f"selection: '{word}' is not one of "
                              f"{', '.join(k + '=…' for k in SELECTION_KEYS)} "
                              "(e.g. run=main models=sim-own5,sim-never pool=seeds)")
        values[key] = ",".join(filter(None, [values.get(key, ""), value.strip()]))
    selection = selection_from(
        tuple(v for v in values.get("run", "").split(",") if v),
        (values["set"],) if values.get("set") else (), values.get("seeds"),
        values.get("models"), values.get("conditions"), values.get("regimes"),
        values.get("pool"))
    return " ".join(f"{k}={v}" for k, v in values.items()), selection
