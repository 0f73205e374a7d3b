"""The controllers' parameters (`Gate`: τ_lo, τ_hi and the retrieval budget), apart from
the controllers themselves (`analysis.replay.controllers`).

Every `lab results`, `lab figures` and `lab report` builds a Gate from its options, so
this module imports nothing heavy: a table that runs no controller does not load the
replay machinery (branches, calibration, probes) to read three numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import ConfigError

TAU_HI = 0.7
TAU_LO = 0.3
MAX_RETRIEVALS = 3


@dataclass(frozen=True)
class Gate:
    """The controller's parameters (the seed's §4.2).

    Attributes:
        tau_lo: abstain at or below this once the budget is spent.
        tau_hi: commit at or above this.
        max_retrievals: the retrieval budget at the first state.
    """

    tau_lo: float = TAU_LO
    tau_hi: float = TAU_HI
    max_retrievals: int = MAX_RETRIEVALS

    def __post_init__(self) -> None:
        if not (0.0 <= self.tau_lo <= 1.0 and 0.0 <= self.tau_hi <= 1.0):
            raise ConfigError(f"thresholds must lie in [0, 1]: τ_lo={self.tau_lo:g}, "
                              f"τ_hi={self.tau_hi:g} (e.g. --tau-lo 0.3 --tau-hi 0.7)")
        if self.max_retrievals < 0:
            raise ConfigError(f"--max-retrievals must be ≥ 0, not {self.max_retrievals}")

    @property
    def text(self) -> str:
        """What every row says about the controller, e.g. "τ_lo=0.3, τ_hi=0.7, budget 3"."""
        return f"τ_lo={self.tau_lo:g}, τ_hi={self.tau_hi:g}, budget {self.max_retrievals}"
