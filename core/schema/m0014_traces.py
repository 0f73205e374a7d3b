"""lab.db migration 0014: the second seed's fixed evidence plans and depth-wise answer states."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0014_traces"


def migrate(db: Database) -> None:
    """The second seed's protocol (matched trajectory replay, its §3 and App. A).

    - evidence_plans: one fixed evidence plan per (dataset, question, similarity): the
      question's supporting passages in source order interleaved with its ranked
      distractors, each with its slice (passage i → slice 1 + i mod 3) and whether it
      is supporting (`plan`, canonical JSON, hashed in `plan_sha256`). `similarity`
      names the lexical similarity that ranked the distractors (e.g. "tfidf").
    - traces: one answer state per (run, model, question, depth 0–3): the answer and
      stated confidence (0–100) when the reply parsed as the required JSON (`parsed`
      1), else both NULL and `parsed` 0 (never coerced); `correct` by the dataset's
      scorer, `judge_correct` by an optional LLM judge. A state whose model call failed
      keeps its row with `error` set and is replaced when a later collection succeeds.
    - jobs.kind gains "traces": a job asks a cell's questions at every depth (`params`
      says which run, plan similarity and judge).
    """
    db.executescript(
        """
        CREATE TABLE evidence_plans (
            question_id TEXT NOT NULL,
            dataset TEXT NOT NULL,
            plan_sha256 TEXT NOT NULL,       -- sha256 of `plan`
            similarity TEXT NOT NULL,        -- distractor similarity term, e.g. tfidf
            plan TEXT NOT NULL,              -- JSON: passages in order with slice, supporting
            created_at TEXT NOT NULL,
            PRIMARY KEY (dataset, question_id, similarity)
        );
        CREATE INDEX evidence_plans_sha ON evidence_plans(plan_sha256);

        CREATE TABLE traces (
            id INTEGER PRIMARY KEY,
            run TEXT NOT NULL,
            model TEXT NOT NULL,
            dataset TEXT NOT NULL,
            set_name TEXT NOT NULL,
            question_id TEXT NOT NULL,
            depth INTEGER NOT NULL CHECK (depth BETWEEN 0 AND 3),
            answer TEXT,                     -- NULL: unparseable reply or failed call
            confidence REAL,                 -- stated, 0-100; NULL as answer
            parsed INTEGER NOT NULL DEFAULT 0,
            correct INTEGER,                 -- dataset scorer; NULL when not parsed
            f1 REAL,
            judge_correct INTEGER,           -- LLM judge's label, NULL when not asked/parsed
            judge_model TEXT,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            latency_ms REAL NOT NULL DEFAULT 0,
            plan_sha256 TEXT NOT NULL,
            raw TEXT,                        -- the reply as received
            error TEXT,                      -- NULL: a complete state
            prompts_sha256 TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (run, model, question_id, depth)
        );
        CREATE INDEX traces_run ON traces(run, model);
        """
    )
