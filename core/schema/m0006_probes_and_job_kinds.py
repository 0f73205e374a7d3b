"""lab.db migration 0006: probes (replayed judgments, beliefs, answer-now branches,
repairs) and replay jobs."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0006_probes_and_job_kinds"


def migrate(db: Database) -> None:
    """Probes (docs/replay.md) and replay jobs on the same ledger.

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
