"""lab.db migration 0005: steps keyed by (episode, t, discarded): a discarded turn beside its re-ask."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0005_discarded_steps_keyed"


_STEP_COLS_0004 = (
    "episode_id, t, thought, action, argument, raw, obs_index, obs_failed, obs_source, "
    "obs_ref, obs_text, judgment, judgment_source, judgment_raw, rule_signal, "
    "stated_judgment, streak, forced, refused, format_failure, decision, input_tokens, "
    "output_tokens, latency_ms, reasoning, reasoning_tokens, discarded, tool_source")


def migrate(db: Database) -> None:
    """A discarded turn and its forced re-ask share the action index t.

    The stated-judgment rule stores the turn it discards (steps.discarded = 1) beside
    the re-asked turn of the same action, so the steps' key becomes
    (episode_id, t, discarded). SQLite cannot change a primary key in place: `steps`
    is rebuilt (new table, copy, drop, rename). Nothing references steps, so the drop
    cascades nowhere.
    """
    conn = db.conn
    conn.execute(
        """
        CREATE TABLE steps_0005 (
            episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
            t INTEGER NOT NULL,              -- 1-based action index
            thought TEXT,
            action TEXT,
            argument TEXT,
            raw TEXT,
            obs_index INTEGER,
            obs_failed INTEGER,
            obs_source TEXT,                 -- gold, distractor, foreign, none
            obs_ref TEXT,                    -- question_id#paragraph of the page shown
            obs_text TEXT,                   -- only when not reconstructible from obs_ref
            judgment TEXT,                   -- USEFUL / USELESS / NULL (unparseable or not asked)
            judgment_source TEXT,
            judgment_raw TEXT,
            rule_signal TEXT,
            stated_judgment TEXT,
            streak INTEGER NOT NULL,
            forced INTEGER NOT NULL,
            refused INTEGER NOT NULL,
            format_failure INTEGER NOT NULL,
            decision TEXT,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            latency_ms REAL NOT NULL,
            reasoning TEXT,
            reasoning_tokens INTEGER NOT NULL DEFAULT 0,
            discarded INTEGER NOT NULL DEFAULT 0,  -- 1: discarded by the stated-judgment rule
            tool_source TEXT,                -- primary / backup (two-source arms)
            PRIMARY KEY (episode_id, t, discarded)
        ) WITHOUT ROWID
        """
    )
    conn.execute(f"INSERT INTO steps_0005 ({_STEP_COLS_0004}) "
                 f"SELECT {_STEP_COLS_0004} FROM steps")
    conn.execute("DROP TABLE steps")
    conn.execute("ALTER TABLE steps_0005 RENAME TO steps")
