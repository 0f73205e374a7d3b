"""lab.db schema as an ordered list of migrations (docs/schema.md).

Each migration runs once, in a transaction, and is recorded in
`_sqlite_migrations`; `PRAGMA user_version` holds the number applied, which is the
schema version. A file with a newer version than this code knows is refused.
Change the schema only by appending a migration.

Migrations are frozen (Alembic's and Django's rule, so an old file always
migrates the same way): one module per
migration (``mNNNN_<name>.py``, a `NAME` and a `migrate(db)`), each plain SQL or a
little frozen code of its own, importing nothing but the standard library and
sqlite_utils (`tests/test_schema_frozen.py` checks), so today's application code
never changes how an old lab.db upgrades. Migrations create derived tables empty;
their rows (decision points, episode totals, the packed shadow tables) are derived
by `core.store.derived.rederive_stale`, which `core.store.connect` runs after every
upgrade and whenever the layouts recorded in ``derived_layouts`` differ from the
code's.
"""

from __future__ import annotations

from sqlite_utils.migrations import Migrations

from core.schema import (
    m0001_initial,
    m0002_servers,
    m0003_errored_episodes_and_prompt_sets,
    m0004_protocol_columns,
    m0005_discarded_steps_keyed,
    m0006_probes_and_job_kinds,
    m0007_decisions_and_step_totals,
    m0008_decision_packs,
    m0009_judgment_packs,
    m0010_episode_packs,
    m0011_errored_episodes_index,
    m0012_live_owner,
    m0013_derived_layouts,
    m0014_traces,
    m0015_trace_copies,
    m0016_prompt_packs,
    m0017_endpoint_health,
    m0018_decision_replies,
    m0019_imported_episodes,
    m0020_reference_values,
    m0021_draft_texts,
    m0022_apart_episodes_index,
    m0023_probe_count_indexes,
)

STEPS = (m0001_initial, m0002_servers, m0003_errored_episodes_and_prompt_sets,
         m0004_protocol_columns, m0005_discarded_steps_keyed, m0006_probes_and_job_kinds,
         m0007_decisions_and_step_totals, m0008_decision_packs, m0009_judgment_packs,
         m0010_episode_packs, m0011_errored_episodes_index, m0012_live_owner,
         m0013_derived_layouts, m0014_traces, m0015_trace_copies,
         m0016_prompt_packs, m0017_endpoint_health, m0018_decision_replies,
         m0019_imported_episodes, m0020_reference_values, m0021_draft_texts,
         m0022_apart_episodes_index, m0023_probe_count_indexes)
"""The migration modules, in the order they run."""

MIGRATIONS = Migrations("lab")
for _step in STEPS:
    MIGRATIONS(name=_step.NAME)(_step.migrate)

SCHEMA_VERSION = 23
"""Number of migrations above (bump it with each one; a test checks the count); equals
`PRAGMA user_version` of an up-to-date lab.db."""
