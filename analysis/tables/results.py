"""One results table (or every episode table) of a selection, whatever its family: the
one dispatch `lab results`, `lab export`, the figures and the console's Results screen
share.

- ``traces`` tables read the selection's stored trace states (`trace_results`) and no
  episode frames: the models' splits and maps are prepared once, then each table's
  registered function takes them (`analysis.replay.trace_tables.TraceInput`);
- ``probes`` tables read the frames; each table's registered function takes them
  (`analysis.replay.probe_tables.ProbeInput`) and reads the stored branches it needs;
- the ``replication`` table sets the selection's Δ and mean6 beside a reference's
  (`analysis.tables.replication`: ``ResultsSpec.against``);
- ``episodes`` tables are computed by `analysis.tables.compute.compute`, through the
  results cache.

With `ResultsSpec.repaired`, stored answer repairs (`lab repair`) replace the raw
answers of the episode and probe tables first (`analysis.measures.repairs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from analysis.measures.results import Results
from analysis.stats.bootstrap import N_BOOT
from analysis.stats.lpm import HAZARD_BOOT
from analysis.tables.registry import EPISODES, PROBES, REPLICATION, TRACES, table_def, table_names
from core.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd
    from sqlite_utils import Database

    from analysis.base.arms import Grouping
    from analysis.base.rows import Table
    from analysis.measures.frames import Frames
    from analysis.replay.gate import Gate
    from analysis.replay.trace_tables import TraceSettings
    from core.store.selection import Selection

ALL = "all"
"""The name that asks for every episode table (`lab results all`)."""


@dataclass(frozen=True)
class ResultsSpec:
    """How the tables are computed (`lab results`' options).

    Attributes:
        n_boot: question-level resamples.
        hazard_boot: resamples for the hazard model.
        seed: bootstrap seed.
        gate: the controllers' and trace tables' π (None: its defaults).
        fit_depths: isotonic fit on depth-zero records ("0") or on every depth ("all").
        split_seed: seed of the calibration/test split of questions.
        judge: trace tables read the LLM judge's labels, not the dataset scorer's.
        repaired: stored answer repairs replace the raw answers.
        against: the replication table's reference (``NAME``, ``NAME/SPLIT`` or
            ``run:OTHER``; None: the first imported reference set).
        delta_regimes: what the main family's Δ pools: "failure" (its five failure
            regimes, as the main paper) or "mean6" (clean too;
            `core.regimes.DELTA_REGIMES`).
    """

    n_boot: int = N_BOOT
    hazard_boot: int = HAZARD_BOOT
    seed: int = 0
    gate: Gate | None = None
    fit_depths: str = "0"
    split_seed: int = 0
    judge: bool = False
    repaired: bool = False
    against: str | None = None
    delta_regimes: str = "failure"

    def trace_settings(self) -> TraceSettings:
        """How the trace tables replay the traces under this spec (π, fit, split,
        labels)."""
        from analysis.replay.gate import Gate
        from analysis.replay.trace_tables import TraceSettings as Settings

        return Settings(self.gate or Gate(), self.fit_depths, self.split_seed,
                             "judge_correct" if self.judge else "correct")


def family_of(name: str) -> str:
    """The family of table `name` (ALL: the episode tables).

    Raises:
        ValueError: no such table.
    """
    if name == ALL:
        return EPISODES
    try:
        return table_def(name).family
    except KeyError:
        raise ValueError(f"unknown results table {name!r}") from None


def results_for(db: Database, selection: Selection, name: str,
                spec: ResultsSpec = ResultsSpec(), frames: Frames | None = None) -> Results:
    """Table `name` (or ALL) of `selection`.

    Args:
        db: an open lab.db.
        selection: filters and pooling.
        name: a registered table, or ALL for every episode table.
        spec: resamples, seed, π and the rest.
        frames: the selection's frames when already loaded (episode and probe tables).

    Returns:
        The Results; `Results.repaired` counts the episodes whose answer was repaired
        (None unless `spec.repaired`); a trace table's runs are those its rows cover.

    Raises:
        ValueError: an unknown name.
        ConfigError: no traces match (a trace table).
    """
    family = family_of(name)
    if family == TRACES:
        return _trace_results(db, selection, name, spec)
    if family == REPLICATION:
        result: Results = table_def(name).function()(db, selection, spec, frames)
        return result
    from analysis.measures.frames import load_frames

    frames = frames if frames is not None else load_frames(db, selection)
    repaired = None
    if spec.repaired:
        from analysis.measures.repairs import repaired_frames

        frames, repaired = repaired_frames(db, frames)
    if family == PROBES:
        from analysis.base.arms import Grouping

        grouping = Grouping(frames.selection.pool, frames.errored_episodes,
                            frames.apart_episodes)
        table = _probe_table(db, frames, grouping, name, spec)
        res = Results((table,), (), (), (), frames.errored, frames.runs, grouping.pooled)
    else:
        from analysis.tables.compute import compute

        res = compute(frames, None if name == ALL else (name,), spec.n_boot,
                      spec.hazard_boot, spec.seed, delta_regimes=spec.delta_regimes)
    return replace(res, repaired=repaired)


def _probe_table(db: Database, frames: Frames, grouping: Grouping, name: str,
                 spec: ResultsSpec) -> Table:
    """Probe table `name`, read from the results cache when it was computed on the same
    data with the same parameters (`analysis.base.cache`: a stored probe, like an
    episode, changes the selection's fingerprint), else computed and kept there."""
    from dataclasses import asdict

    from analysis.base.cache import ResultsCache
    from analysis.replay.probe_tables import ProbeInput

    def computed() -> Table:
        table: Table = table_def(name).function()(ProbeInput(
            db, frames, grouping, spec.n_boot, spec.seed, spec.gate, spec.fit_depths,
            spec.split_seed))
        return table

    source = frames.source
    if source is None:  # frames with repaired answers: never kept
        return computed()
    cache = ResultsCache(source.path)
    key = cache.key(source, name, {
        "n_boot": spec.n_boot, "seed": spec.seed,
        "gate": asdict(spec.gate) if spec.gate is not None else None,
        "fit_depths": spec.fit_depths, "split_seed": spec.split_seed})
    kept: Table | None = cache.get(key)
    if kept is not None:
        return kept
    table = computed()
    cache.put(key, table)
    return table


def _trace_results(db: Database, selection: Selection, name: str, spec: ResultsSpec
                   ) -> Results:
    (table,) = trace_results(db, (name,), selection, spec.trace_settings(), spec.n_boot,
                             spec.seed)
    runs = tuple(sorted({run for r in table.rows for run in r.runs.split(",") if run}))
    return Results((table,), (), (), (), 0, runs)


def trace_results(db: Database, names: Sequence[str], selection: Selection,
                  settings: TraceSettings | None = None, n_boot: int = N_BOOT, seed: int = 0
                  ) -> tuple[Table, ...]:
    """The named trace tables on the stored traces of the selection's runs, sets, models.

    Args:
        db: an open lab.db.
        names: ``traces`` tables of the registry.
        selection: filters (runs, sets, models are read).
        settings: π, split, fit and label.
        n_boot: question resamples.
        seed: bootstrap seed.

    Raises:
        ConfigError: an unknown name, or no traces match.
    """
    from analysis.replay.probe_tables import load_trace_frame

    frame, questions = load_trace_frame(db, selection)
    return trace_tables(frame, names, questions, settings, n_boot, seed)


def trace_tables(frame: pd.DataFrame, names: Sequence[str],
                 questions: Mapping[str, str] | None = None,
                 settings: TraceSettings | None = None, n_boot: int = N_BOOT, seed: int = 0
                 ) -> tuple[Table, ...]:
    """The named trace tables of trace states, each computed by its registered function
    from the models' splits and maps, prepared once.

    Args:
        frame: `core.store.traces.load_traces` rows (with ``new_evidence`` when known).
        names: ``traces`` tables of the registry.
        questions: question id → text (the Adaptive proxy); None leaves it out.
        settings: controller, split, fit and label.
        n_boot: question resamples.
        seed: bootstrap seed.

    Returns:
        The tables, in the order asked.

    Raises:
        ConfigError: an unknown name, or no traces.
    """
    from analysis.replay.trace_tables import TraceInput, TraceSettings, prepare

    known = table_names(TRACES)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown trace table {unknown[0]!r}; choose from {', '.join(known)}")
    if frame.empty:
        raise ConfigError("no traces match this selection; collect them with `lab traces "
                          "collect --set S --models M`")
    settings = settings or TraceSettings()
    inp = TraceInput(prepare(frame, settings), settings, questions or {}, n_boot, seed)
    return tuple(table_def(n).function()(inp) for n in names)
