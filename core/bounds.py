"""The one check of every number lab reads: lab.toml, command-line options and files.

A number is refused unless it is finite and within its `Bounds`, with one line that
names the key and the allowed range ("concurrency must be in [1, 4096], got
1000000000"), before anything runs or is paid. The bounds themselves live where the
value is declared: a backend's configuration field (`core.models.declared.setting`),
the worker's settings (`jobs.settings.WorkerSettings`), or an option's type
(`console.cli.options.number`); the largest values allowed are the constants below
(docs/models.md and docs/queue.md list them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_CONCURRENCY = 4096
"""The most concurrent episodes (or calls) a model, or a worker's job, may be given."""
MAX_WORKERS = 256
"""The most Huey workers (threads or processes) one `lab worker` starts."""
MAX_TOKENS = 10_000_000
"""The largest token count a context window, max_tokens or thinking budget may say."""
MAX_TIMEOUT_S = 86_400.0
"""The longest timeout, lease, grace or wait in seconds (one day)."""
MAX_PRICE = 100_000.0
"""The largest price in dollars per million tokens."""
MAX_RETRIES = 100
"""The most retries of one model call (and attempts of one job)."""
MAX_BUDGET = 64
"""The largest action budget an episode may have (the paper's grids use 8 and 16)."""
MAX_RESAMPLES = 100_000
"""Bootstrap resamples `--resamples` takes at most (the paper uses 2,000)."""
MAX_SEEDS = 1000
"""The most simulations per question `lab validate-measures --seeds` runs."""


def format_number(value: float) -> str:
    """A bound as a message shows it: integral values without a fraction (4096, 0.5)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class Bounds:
    """Where a number must lie.

    Attributes:
        ge: smallest value allowed.
        gt: the value must be greater than this.
        le: largest value allowed.
        integer: only whole numbers (a bool is never a number).
        unit: the value's unit in messages ("seconds", "tokens").
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    integer: bool = False
    unit: str = ""

    @property
    def bounded(self) -> bool:
        """Whether any bound is set."""
        return (self.ge, self.gt, self.le) != (None, None, None)

    def describe(self) -> str:
        """The allowed range as messages say it after "must be": "in [1, 4096]",
        "in (0, 86400] seconds", ">= 0", "a positive number of seconds"."""
        if self.gt == 0 and self.le is None:
            return f"a positive number{' of ' + self.unit if self.unit else ''}"
        return self.range_text()

    def range_text(self) -> str:
        """The allowed range after a kind ("an integer …"): "in [1, 4096]", "> 0
        seconds", ">= 0"."""
        unit = f" {self.unit}" if self.unit else ""
        low = self.ge if self.ge is not None else self.gt
        if low is not None and self.le is not None:
            opening = "[" if self.ge is not None else "("
            return f"in {opening}{format_number(low)}, {format_number(self.le)}]{unit}"
        if self.gt is not None:
            return f"> {format_number(self.gt)}{unit}"
        if self.ge is not None:
            return f">= {format_number(self.ge)}{unit}"
        if self.le is not None:
            return f"<= {format_number(self.le)}{unit}"
        return f"a finite number{unit}"

    def kind_text(self, finite: bool = False) -> str:
        """"an integer in [1, 4096]", "a finite number > 0 seconds", "a number"."""
        kind = "an integer" if self.integer else ("a finite number" if finite else "a number")
        return f"{kind} {self.range_text()}" if self.bounded else kind

    def error(self, key: str, value: Any) -> str | None:
        """The error line of `value` under `key`, or None when it is allowed.

        A value of the wrong kind (text, a bool, a fraction where an integer is asked),
        a NaN or an infinity, or one outside the bounds is refused.
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                self.integer and not isinstance(value, int)):
            return f"{key} must be {self.kind_text()}, got {value!r}"
        if not math.isfinite(value):
            return f"{key} must be {self.kind_text(finite=True)}, got {value}"
        if ((self.ge is not None and value < self.ge) or (self.gt is not None and value <= self.gt)
                or (self.le is not None and value > self.le)):
            return f"{key} must be {self.describe()}, got {value}"
        return None


def non_finite(value: Any, key: str) -> tuple[str, float] | None:
    """The first NaN or infinity inside a value (a number, a table, a list) with its
    dotted key ("price_per_mtok.input"), or None when every number in it is finite."""
    if isinstance(value, float) and not math.isfinite(value):
        return key, value
    if isinstance(value, dict) or hasattr(value, "items"):
        for k, v in value.items():
            found = non_finite(v, f"{key}.{k}")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = non_finite(v, f"{key}[{i}]")
            if found is not None:
                return found
    return None
