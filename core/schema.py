"""lab.db schema as an ordered list of migrations (SPEC §10).

Each migration runs once, in a transaction, and is recorded in
`_sqlite_migrations`; `PRAGMA user_version` holds the number applied, which is the
schema version. A file with a newer version than this code knows is refused.
Change the schema only by appending a migration.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from core.errors import StoreError

MIGRATIONS = Migrations("lab")


@MIGRATIONS(name="0001_initial")
def _initial(db: Database) -> None:
    db.executescript(
        """
        CREATE TABLE questions (
            id TEXT PRIMARY KEY,
            dataset TEXT NOT NULL,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            type TEXT NOT NULL DEFAULT '',
            level TEXT NOT NULL DEFAULT '',
            record TEXT NOT NULL,            -- the official-format JSON record
            imported_at TEXT NOT NULL
        );
        CREATE INDEX questions_dataset ON questions(dataset);

        CREATE TABLE question_sets (
            name TEXT PRIMARY KEY,
            dataset TEXT NOT NULL,
            n INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            exclude TEXT NOT NULL,           -- JSON list of set names
            ids TEXT NOT NULL,               -- JSON list of question ids, in draw order
            sha256 TEXT NOT NULL,            -- of the ids joined by newlines
            held_out INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );

        CREATE TABLE amendments (
            id TEXT PRIMARY KEY,             -- A1, A2, ...
            seq INTEGER NOT NULL UNIQUE,
            title TEXT NOT NULL,
            body TEXT NOT NULL DEFAULT '',
            tests TEXT NOT NULL DEFAULT '[]',
            scope TEXT NOT NULL DEFAULT '{}',
            state TEXT NOT NULL DEFAULT 'draft',
            created_at TEXT NOT NULL,
            frozen_at TEXT,
            content_sha256 TEXT,
            prev_sha256 TEXT,
            pins TEXT,
            version TEXT,
            data_existed TEXT
        );

        CREATE TABLE deviations (
            id INTEGER PRIMARY KEY,
            amendment_id TEXT NOT NULL REFERENCES amendments(id),
            text TEXT NOT NULL,
            created_at TEXT NOT NULL
        );

        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            amendment_id TEXT REFERENCES amendments(id),
            exploratory INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL
        );

        CREATE TABLE cells (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            model TEXT NOT NULL,
            model_spec TEXT NOT NULL,
            condition TEXT NOT NULL,
            condition_spec TEXT NOT NULL,
            condition_hash TEXT NOT NULL,
            regime TEXT NOT NULL,
            regime_hash TEXT NOT NULL,
            question_set TEXT,
            budget INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            replicate INTEGER NOT NULL DEFAULT 0,
            spec_hash TEXT NOT NULL,         -- sha256 of model+condition+regime+set+budget+seed+replicate
            created_at TEXT NOT NULL,
            UNIQUE (run_id, spec_hash)
        );

        CREATE TABLE grids (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            spec TEXT NOT NULL,              -- the enqueue request as JSON
            created_at TEXT NOT NULL
        );

        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            grid_id INTEGER NOT NULL REFERENCES grids(id),
            cell_id INTEGER NOT NULL REFERENCES cells(id),
            question_ids TEXT NOT NULL,      -- JSON list (at most 50)
            state TEXT NOT NULL DEFAULT 'queued',   -- queued, running, done, failed, cancelled, paused
            priority INTEGER NOT NULL DEFAULT 0,
            lease_until REAL,
            heartbeat_at REAL,
            worker TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX jobs_state ON jobs(state);
        CREATE INDEX jobs_cell ON jobs(cell_id);

        CREATE TABLE workers (
            id TEXT PRIMARY KEY,             -- host:pid
            started_at TEXT NOT NULL,
            heartbeat_at REAL NOT NULL,
            state TEXT NOT NULL,             -- running, stopped
            episodes INTEGER NOT NULL DEFAULT 0
        );

        CREATE TABLE episodes (
            id INTEGER PRIMARY KEY,
            cell_id INTEGER NOT NULL REFERENCES cells(id),
            question_id TEXT NOT NULL,
            answered INTEGER NOT NULL,
            answer TEXT,
            answer_action INTEGER,
            em INTEGER NOT NULL,
            f1 REAL NOT NULL,
            correct INTEGER NOT NULL,
            placeholder INTEGER NOT NULL,
            tool_calls INTEGER NOT NULL,
            extra_calls INTEGER NOT NULL,
            format_failures INTEGER NOT NULL,
            forced_turns INTEGER NOT NULL,
            refused_calls INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cache_read_tokens INTEGER NOT NULL,
            cache_write_tokens INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            wall_ms REAL NOT NULL,
            end_reason TEXT NOT NULL,        -- finish, budget, format_failure, error
            error TEXT,
            server TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL,
            UNIQUE (cell_id, question_id)
        );

        CREATE TABLE steps (
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
            PRIMARY KEY (episode_id, t)
        ) WITHOUT ROWID;

        CREATE TABLE live_episodes (
            id INTEGER PRIMARY KEY,
            cell_id INTEGER REFERENCES cells(id),
            question_id TEXT NOT NULL,
            label TEXT NOT NULL,             -- model / condition / regime, for display
            worker TEXT,
            started_at TEXT NOT NULL
        );

        CREATE TABLE live_steps (
            live_id INTEGER NOT NULL REFERENCES live_episodes(id) ON DELETE CASCADE,
            t INTEGER NOT NULL,
            step TEXT NOT NULL,              -- the step as JSON
            PRIMARY KEY (live_id, t)
        ) WITHOUT ROWID;

        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        """
    )


@MIGRATIONS(name="0002_servers")
def _servers(db: Database) -> None:
    db.executescript(
        """
        CREATE TABLE servers (
            id INTEGER PRIMARY KEY,
            model TEXT NOT NULL,             -- registry name
            served_model TEXT NOT NULL,      -- what the server loads (e.g. Qwen/Qwen3-8B)
            endpoint TEXT NOT NULL,          -- base URL, as in the registry's endpoints
            version TEXT,                    -- the server's /version
            command TEXT NOT NULL,           -- JSON list: the exact command line
            flags TEXT NOT NULL,             -- JSON object: the settings it was started with
            pid INTEGER,
            started_at TEXT NOT NULL,
            stopped_at TEXT
        );
        CREATE INDEX servers_endpoint ON servers(endpoint);
        """
    )


_EPISODES_0003 = """
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    question_id TEXT NOT NULL,
    answered INTEGER NOT NULL,
    answer TEXT,
    answer_action INTEGER,
    em INTEGER NOT NULL,
    f1 REAL NOT NULL,
    correct INTEGER NOT NULL,
    placeholder INTEGER NOT NULL,
    tool_calls INTEGER NOT NULL,
    extra_calls INTEGER NOT NULL,
    format_failures INTEGER NOT NULL,
    forced_turns INTEGER NOT NULL,
    refused_calls INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    wall_ms REAL NOT NULL,
    end_reason TEXT NOT NULL,        -- finish, budget, format_failure, error
    error TEXT,                      -- NULL: a complete episode
    server TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 1,  -- 1 + earlier (errored) records of the pair
    prompts_sha256 TEXT              -- prompt_sets.sha256 of the prompt files it used
)"""
_EPISODE_COLS_0002 = (
    "id, cell_id, question_id, answered, answer, answer_action, em, f1, correct, placeholder, "
    "tool_calls, extra_calls, format_failures, forced_turns, refused_calls, input_tokens, "
    "output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, wall_ms, end_reason, "
    "error, server, started_at, finished_at")


@MIGRATIONS(name="0003_errored_episodes_and_prompt_sets")
def _errored_episodes(db: Database) -> None:
    """Only complete episodes are unique per (cell, question); prompt provenance.

    An errored episode (refused connection, 5xx after retries, context overflow)
    keeps its row but no longer holds the (cell, question) key, so the pair can be
    retried; at most one complete episode per pair (a partial unique index).
    SQLite cannot drop a UNIQUE constraint in place, so `episodes` is rebuilt with
    SQLite's documented procedure (new table, copy, drop, rename), which needs
    foreign keys off: dropping the old table with them on would cascade-delete
    every step. `store.connect` runs migrations before turning them on; the
    foreign-key check at the end makes the transaction fail if any link broke.
    """
    conn = db.conn
    if conn.execute("PRAGMA foreign_keys").fetchone()[0]:
        raise StoreError("migration 0003 must run with foreign keys off "
                         "(dropping episodes would cascade to steps)")
    conn.execute(_EPISODES_0003.replace("CREATE TABLE episodes", "CREATE TABLE episodes_0003"))
    conn.execute(f"INSERT INTO episodes_0003 ({_EPISODE_COLS_0002}) "
                 f"SELECT {_EPISODE_COLS_0002} FROM episodes")
    conn.execute("DROP TABLE episodes")
    conn.execute("ALTER TABLE episodes_0003 RENAME TO episodes")
    db.executescript(
        """
        CREATE UNIQUE INDEX episodes_complete ON episodes(cell_id, question_id)
            WHERE error IS NULL;
        CREATE INDEX episodes_pair ON episodes(cell_id, question_id);

        CREATE TABLE prompt_sets (
            sha256 TEXT PRIMARY KEY,         -- of the sorted "file sha256" lines below
            files TEXT NOT NULL,             -- JSON object: prompts/<name>.txt -> sha256
            created_at TEXT NOT NULL
        );
        """
    )
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise StoreError(f"migration 0003 broke {len(broken)} foreign-key links: {broken[:3]}")


@MIGRATIONS(name="0004_protocol_columns")
def _protocol_columns(db: Database) -> None:
    """Columns for the rest of the paper's protocol (issue 11).

    - steps.reasoning / reasoning_tokens: thinking-mode text of that turn, stored
      apart from the thought and never fed back; episodes.reasoning_tokens totals it.
    - steps.discarded: a turn the stated-judgment rule discarded and re-asked with the
      forced-finish instruction (kept for the record, counted in extra calls).
    - steps.tool_source: which source a search ran on ("primary" or "backup" in
      two-source runs; NULL otherwise).
    """
    db.executescript(
        """
        ALTER TABLE steps ADD COLUMN reasoning TEXT;
        ALTER TABLE steps ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE steps ADD COLUMN discarded INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE steps ADD COLUMN tool_source TEXT;
        ALTER TABLE episodes ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
        """
    )


_STEP_COLS_0004 = (
    "episode_id, t, thought, action, argument, raw, obs_index, obs_failed, obs_source, "
    "obs_ref, obs_text, judgment, judgment_source, judgment_raw, rule_signal, "
    "stated_judgment, streak, forced, refused, format_failure, decision, input_tokens, "
    "output_tokens, latency_ms, reasoning, reasoning_tokens, discarded, tool_source")


@MIGRATIONS(name="0005_discarded_steps_keyed")
def _discarded_steps_keyed(db: Database) -> None:
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


@MIGRATIONS(name="0006_probes_and_job_kinds")
def _probes(db: Database) -> None:
    """Probes (issue 12, SPEC §8.3–§8.6) and replay jobs on the same ledger.

    - probes: one row per (episode, t, kind): a replayed side-channel judgment
      ("judgment"), a belief probe ("belief"), an answer-now branch ("answer_now") or an
      answer repair ("repair"). t is the step whose observation the decision point
      follows (the probe precedes action t + 1); a repair's t is the finish action.
      Nothing is written back into steps or episodes. A probe whose model call failed
      keeps its row with `error` set and is replaced when a later replay succeeds.
    - jobs.kind: "episodes" (run a cell's questions) or "replay" (probe the stored
      episodes of a cell's questions, `params` says which probe and where).
    """
    db.executescript(
        """
        CREATE TABLE probes (
            episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
            t INTEGER NOT NULL,
            kind TEXT NOT NULL,              -- judgment, belief, answer_now, repair
            model TEXT NOT NULL,             -- the model asked (the episode's own)
            source TEXT NOT NULL DEFAULT 'replay',
            judgment TEXT,                   -- judgment: USEFUL / USELESS / NULL
            answer TEXT,                     -- answer_now, repair
            em INTEGER,
            f1 REAL,
            correct INTEGER,
            placeholder INTEGER,
            confidence REAL,                 -- answer_now: verbalized 0-100 / 100, NULL if absent
            p_continue REAL,                 -- belief
            p_answer_now REAL,
            prefer TEXT,
            reason TEXT,
            parse_ok INTEGER NOT NULL DEFAULT 0,
            raw TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            latency_ms REAL NOT NULL DEFAULT 0,
            error TEXT,                      -- NULL: a complete probe
            prompts_sha256 TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (episode_id, t, kind)
        ) WITHOUT ROWID;
        CREATE INDEX probes_kind ON probes(kind);

        ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'episodes';
        ALTER TABLE jobs ADD COLUMN params TEXT;
        """
    )


@MIGRATIONS(name="0007_decisions_and_step_totals")
def _decisions(db: Database) -> None:
    """What analysis reads at paper scale without touching steps (issue 14).

    - decisions: one row of integers per decision point of an episode
      (`core.decisions`: the definitions), derived when the episode is stored and
      backfilled here from the stored steps; ``seq`` orders an episode's points.
    - episodes.acting_input_tokens / acting_output_tokens (the acting turns' tokens),
      discarded_turns, backup_calls (not refused) and primary_judgments (judged primary
      searches): sums over the episode's steps, filled when it is stored.
    - analysis_state.changes: bumped by triggers on every change to stored results
      that is not a new episode (an update or delete of episodes, steps, decisions,
      probes, cells or runs), so a results cache keyed by it and by the selection's
      episode count and largest id is never stale. The write path's own fill of the
      totals right after the insert (acting_input_tokens still NULL) does not count.
    """
    from core.store.decisions import derive_all

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
    derive_all(db.conn, packs=False)  # decision_packs come with 0008, packed from these rows
    bump = "BEGIN UPDATE analysis_state SET changes = changes + 1 WHERE id = 1; END"
    for table in ("episodes", "steps", "decisions", "probes", "cells", "runs"):
        db.conn.execute(f"CREATE TRIGGER {table}_deleted_0007 AFTER DELETE ON {table} {bump}")
        when = " WHEN OLD.acting_input_tokens IS NOT NULL" if table == "episodes" else ""
        db.conn.execute(f"CREATE TRIGGER {table}_updated_0007 AFTER UPDATE ON {table}"
                        f"{when} {bump}")
    db.conn.execute(f"CREATE TRIGGER probes_inserted_0007 AFTER INSERT ON probes {bump}")


@MIGRATIONS(name="0008_decision_packs")
def _decision_packs(db: Database) -> None:
    """Each episode's decision points as one BLOB, so analysis reads one value per episode.

    - decision_packs: per episode with decision points, ``n`` (its rows in
      `decisions`) and ``words``: those rows in ``seq`` order, each two little-endian
      int64 words (`core.store.decisions.PACKED_FIELDS`; the second also holds the
      episode id above bit 23). Written with the rows in the same transaction
      (episode store, `rederive`); backfilled here from `decisions`. `decisions`
      stays (SQL queries read it); a reader uses the packs only when their ``n`` add
      up to the rows of `decisions` in the range it reads.
    """
    from core.store.decisions import pack_all

    db.conn.execute(
        """
        CREATE TABLE decision_packs (
            episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
            n INTEGER NOT NULL,              -- decision points (rows of decisions)
            words BLOB NOT NULL              -- 2 little-endian int64 per point, seq order
        )
        """
    )
    pack_all(db.conn)


@MIGRATIONS(name="0009_judgment_packs")
def _judgment_packs(db: Database) -> None:
    """Each episode's judgment counts, so the judgments table reads no step (issue 14).

    - judgment_packs: one row per stored episode (errored ones and those without an
      observation step included, so a reader checks coverage by counting rows):
      ``words`` is its `core.store.judgment_counts.counts_sql` row as six
      little-endian int64 (id, observations, the four packed sums; zeros without an
      observation). Written with the episode and by `rederive` in the same
      transaction; backfilled here from the same query.
    - triggers drop an episode's row when its steps or judgment probes change
      outside those writers (e.g. probes stored before their `rederive`): a reader
      counts such episodes from the steps until they are rederived.
    """
    from core.store.judgment_counts import store_counts

    db.conn.execute(
        """
        CREATE TABLE judgment_packs (
            episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
            words BLOB NOT NULL              -- 6 little-endian int64: a counts_sql row
        )
        """
    )
    store_counts(db.conn)
    drop = "BEGIN DELETE FROM judgment_packs WHERE episode_id = {}.episode_id; END"
    for event, row in (("INSERT", "NEW"), ("UPDATE", "OLD"), ("UPDATE", "NEW"),
                       ("DELETE", "OLD")):
        name = f"{event.lower()}_{row.lower()}_0009"
        db.conn.execute(f"CREATE TRIGGER steps_{name} AFTER {event} ON steps "
                        + drop.format(row))
        db.conn.execute(f"CREATE TRIGGER probes_{name} AFTER {event} ON probes "
                        f"WHEN {row}.kind = 'judgment' " + drop.format(row))


@MIGRATIONS(name="0010_episode_packs")
def _episode_packs(db: Database) -> None:
    """Each episode's keys and integer values as one BLOB, so analysis reads a whole id
    range in one value instead of one Python object per value per episode (issue 14).

    - episode_packs: one row per stored episode (errored ones included, so a reader
      checks coverage by counting rows): ``words`` is its
      `core.store.episode_packs.PACK_SQL` row as little-endian 8-byte words: id,
      cell_id, the error flag, the `EPISODE_WORDS` words 1.. (−1 where a field does
      not fit its bits) and cost_usd as float64 (NaN where NULL). Written with the
      episode and by `derive_all` in the same transaction, after the episode's totals;
      backfilled here with the same function, so stored words equal a fresh computation.
    - a trigger drops an episode's row when the episode is updated or deleted outside
      those writers: a reader then reads the episodes' rows until they are repacked.
    """
    from core.store.episode_packs import store_packs

    db.conn.execute(
        """
        CREATE TABLE episode_packs (
            episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
            words BLOB NOT NULL              -- little-endian 8-byte words: a PACK_SQL row
        )
        """
    )
    store_packs(db.conn)
    for event in ("UPDATE", "DELETE"):
        db.conn.execute(f"CREATE TRIGGER episodes_{event.lower()}_0010 AFTER {event} ON "
                        "episodes BEGIN DELETE FROM episode_packs WHERE episode_id = OLD.id; "
                        "END")


@MIGRATIONS(name="0011_errored_episodes_index")
def _errored_episodes_index(db: Database) -> None:
    """An index of the errored episodes only (a few, usually none), so reading them
    (every analysis does, to show what errored) no longer scans every episode: 0.08 s
    -> 0.01 s at 198,000 episodes (issue 14)."""
    db.conn.execute("CREATE INDEX IF NOT EXISTS episodes_errored ON episodes(id) WHERE error IS NOT NULL")


@MIGRATIONS(name="0012_live_owner")
def _live_owner(db: Database) -> None:
    """Live rows belong to a worker (issue 25): indexes for the reconcile that removes
    those of dead workers, and the rows written before any had an owner dropped (no
    reader can tell whether one of them still runs; kill -9 left them for good)."""
    for sql in (
            "DELETE FROM live_steps WHERE live_id IN "
            "(SELECT id FROM live_episodes WHERE worker IS NULL)",
            "DELETE FROM live_episodes WHERE worker IS NULL",
            "CREATE INDEX IF NOT EXISTS live_episodes_worker ON live_episodes(worker)",
            "CREATE INDEX IF NOT EXISTS live_episodes_pair ON live_episodes(cell_id, question_id)"):
        db.conn.execute(sql)


SCHEMA_VERSION = 12
"""Number of migrations above (bump it with each one; a test checks the count); equals
`PRAGMA user_version` of an up-to-date lab.db."""
