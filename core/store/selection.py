"""A Selection from the text a researcher types: comma-separated runs, sets, seeds,
models, arms, regimes and pooling (`lab results`, `lab export`, the Results screen)."""

from __future__ import annotations

from core.errors import ConfigError
from core.limits import INT64_MAX
from core.store.frames import Selection


def _names(text: str | None, option: str, example: str) -> tuple[str, ...]:
    if text is None:
        return ()
    names = tuple(m.strip() for m in text.split(",") if m.strip())
    if not names:
        raise ConfigError(f"{option} needs at least one name, e.g. {option} {example}")
    return names


def _conditions(text: str | None) -> tuple[str, ...]:
    """Arm labels or bare names; a label's own commas (`x:k=7,judge=true`) stay inside it."""
    out: list[str] = []
    for part in _names(text, "--conditions", "none,enforced_rule:k=7"):
        if out and "=" in part and ":" not in part:
            out[-1] += "," + part
        else:
            out.append(part)
    return tuple(out)


def _seeds(text: str | None) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in _names(text, "--seeds", "0,1"))
        if all(0 <= s <= INT64_MAX for s in seeds):
            return seeds
    except ValueError:
        pass
    raise ConfigError(f"--seeds takes comma-separated integers from 0 to {INT64_MAX:,}, "
                      f"e.g. --seeds 0,1; got '{text}'")


def selection_from(runs: tuple[str, ...], sets: tuple[str, ...], seeds: str | None,
                   models: str | None, conditions: str | None, regimes: str | None,
                   pool: str | None) -> Selection:
    """A Selection from the command-line options.

    Raises:
        ConfigError: an empty list, a seed that is not an integer or an unknown --pool.
    """
    set_names = tuple(n for s in sets for n in _names(s, "--set", "dev100"))
    return Selection(tuple(runs), set_names, _seeds(seeds),
                     _names(models, "--models", "sim-own5,sim-clock6"),
                     _conditions(conditions), _names(regimes, "--regimes", "persistent,clean"),
                     _names(pool, "--pool", "seeds,runs"))
