"""lab.db migration 0001: the initial tables (questions, sets, amendments, runs, cells,
grids, jobs, workers, episodes, steps, live rows and events)."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0001_initial"


def migrate(db: Database) -> None:
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
