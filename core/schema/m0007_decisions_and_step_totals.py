"""lab.db migration 0007: the decisions table, the episodes' step totals and the analysis
change counter."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0007_decisions_and_step_totals"


def migrate(db: Database) -> None:
    """What analysis reads at paper scale without touching steps.

    - decisions: one row of integers per decision point of an episode
      (`core.decisions`: the definitions), derived when the episode is stored;
      ``seq`` orders an episode's points.
    - episodes.acting_input_tokens / acting_output_tokens (the acting turns' tokens),
      discarded_turns, backup_calls (not refused) and primary_judgments (judged primary
      searches): sums over the episode's steps, filled when it is stored.
    - analysis_state.changes: bumped by triggers on every change to stored results
      that is not a new episode (an update or delete of episodes, steps, decisions,
      probes, cells or runs), so a results cache keyed by it and by the selection's
      episode count and largest id is never stale. The write path's own fill of the
      totals right after the insert (acting_input_tokens still NULL) does not count.

    The rows and totals of episodes already stored are derived after the upgrade by
    `core.store.derived.rederive_stale` (this migration once called the live
    `derive_all`, so today's code decided how an old lab.db upgraded).
    """
    db.executescript(
        """
        CREATE TABLE decisions (
            episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,            -- 0, 1, ... in step order within the episode
            t INTEGER NOT NULL,              -- the step whose observation it follows
            n_obs INTEGER NOT NULL,          -- observations seen (obs_index)
            action INTEGER NOT NULL,         -- t of the next valid action
            answer INTEGER NOT NULL,         -- 1: that action is finish
            final INTEGER NOT NULL,          -- 1: action >= budget
            design_run INTEGER NOT NULL,     -- consecutive failed observations (design)
            own_run INTEGER NOT NULL,        -- consecutive USELESS side-channel judgments
            own_latest INTEGER NOT NULL,
            own_earlier INTEGER NOT NULL,
            stated_run INTEGER NOT NULL,     -- -1: unknown (a silent observation)
            stated_known INTEGER NOT NULL,
            stated_latest INTEGER NOT NULL,
            stated_earlier INTEGER NOT NULL,
            PRIMARY KEY (episode_id, seq)
        ) WITHOUT ROWID;

        ALTER TABLE episodes ADD COLUMN acting_input_tokens INTEGER;
        ALTER TABLE episodes ADD COLUMN acting_output_tokens INTEGER;
        ALTER TABLE episodes ADD COLUMN discarded_turns INTEGER;
        ALTER TABLE episodes ADD COLUMN backup_calls INTEGER;
        ALTER TABLE episodes ADD COLUMN primary_judgments INTEGER;

        CREATE TABLE analysis_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            changes INTEGER NOT NULL
        );
        INSERT INTO analysis_state (id, changes) VALUES (1, 0);
        """
    )
    bump = "BEGIN UPDATE analysis_state SET changes = changes + 1 WHERE id = 1; END"
    for table in ("episodes", "steps", "decisions", "probes", "cells", "runs"):
        db.conn.execute(f"CREATE TRIGGER {table}_deleted_0007 AFTER DELETE ON {table} {bump}")
        when = " WHEN OLD.acting_input_tokens IS NOT NULL" if table == "episodes" else ""
        db.conn.execute(f"CREATE TRIGGER {table}_updated_0007 AFTER UPDATE ON {table}"
                        f"{when} {bump}")
    db.conn.execute(f"CREATE TRIGGER probes_inserted_0007 AFTER INSERT ON probes {bump}")
