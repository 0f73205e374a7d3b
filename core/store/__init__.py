"""lab.db: connection, migrations and the project's reads and writes (docs/schema.md).

The only package that writes SQL, one module per area. Writers take
`BEGIN IMMEDIATE` so that several processes (workers, the console, `lab tail`)
share one file under WAL with a busy timeout instead of failing with
"database is locked".
"""

from core.store.base import BUSY_TIMEOUT_MS, schema_version, write
from core.store.connection import connect
from core.store.episodes import (
                                 complete_questions,
                                 count,
                                 episode_exists,
                                 episode_steps,
                                 live_end,
                                 live_start,
                                 live_step,
                                 live_steps,
                                 write_episodes,
)
from core.store.frames import episodes_frame, steps_frame
from core.store.questions import (
                                 dataset_labels,
                                 datasets,
                                 insert_questions,
                                 load_questions,
                                 question_ids,
                                 question_set,
                                 question_sets,
                                 save_question_set,
                                 useless_rate,
)
from core.store.runs import (
                                 cell_hash,
                                 cell_ids_by_hash,
                                 ensure_cell,
                                 ensure_run,
                                 next_replicate,
                                 run_id,
)

__all__ = [
    "BUSY_TIMEOUT_MS", "cell_hash", "cell_ids_by_hash", "complete_questions", "connect", "count",
    "dataset_labels", "datasets",
    "ensure_cell", "ensure_run",
    "episode_exists", "episode_steps", "episodes_frame", "insert_questions", "live_end",
    "live_start", "live_step", "live_steps", "load_questions", "next_replicate", "question_ids",
    "question_set", "question_sets", "run_id", "save_question_set", "schema_version",
    "steps_frame",
    "useless_rate", "write", "write_episodes",
]
