"""Episodes in the format the main paper's authors released, read and turned into lab's.

A released file holds one JSON object per line (plain, or gzipped when its name ends in
``.gz``): ``question_id``, ``regime``, ``actions`` (``search``, ``lookup``, ``finish``
or ``invalid``: a turn with no valid action), ``judgments`` (``judgments[k]`` judges
the observation ``actions[k]`` returned: ``USELESS``, ``USEFUL``, ``UNPARSED`` or null)
and ``success`` (token F1 ≥ 0.6); the full files add ``model``, ``condition`` and
``split``. `read_released` validates a whole file and never touches lab.db;
`episode_result` turns one record into the `EpisodeResult` that
`core.store.episodes.write_episodes` stores, so Δ, success and the hazard read it
exactly as they read an episode run here.

How a record becomes steps (one step per action, t = k + 1):

- every action but ``finish`` returned an observation (``obs_index`` counts them):
  the authors' harness answered an invalid turn too, and their Δ counts it as a
  decision that did not answer, with the observation after it judged like any other;
  an ``invalid`` step keeps the action name ``invalid`` so that
  `core.decisions.episode_decisions` reads it exactly so (a format failure would be
  skipped there);
- ``obs_failed`` is the regime's design label of search and lookup results (counted
  over them only), None for an invalid turn;
- ``judgment`` is ``judgments[k]``; ``streak`` the useless run after it; in the arms
  that asked for the judgment in the run (decide, enforced_rule, combo) each judgment
  given, UNPARSED included, was a judgment call ("one judgment call after each
  observation"), counted in ``extra_calls``, the condition's own calls;
- the episode answered when its last action is ``finish``; it is correct when
  ``success``; it ended on ``finish``, on the ``budget``, or before it without an
  answer (recorded as ``format_failure``: the release does not say why).

No text is carried (thoughts, arguments, observations, answers): ``raw`` is empty.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from core import json_text
from core.conditions import ARMS
from core.data import other_kind
from core.end_reasons import END_BUDGET, END_FINISH, END_FORMAT_FAILURE
from core.episode import EpisodeResult, Step
from core.errors import ConfigError, DataError
from core.regimes import parse_regime

LICENSE = "CC BY 4.0 (the main paper's released episodes)"
"""The license line recorded with every imported file."""
IMPORTED_SOURCE = "imported"
"""What an imported episode records as its server (`episodes.server`)."""
DEFAULT_BUDGET = 8
"""The action budget of the main paper's runs (every released file)."""
ACTIONS = ("search", "lookup", "finish", "invalid")
"""The actions a released record may hold."""
TOOLS = ("search", "lookup")
INVALID = "invalid"
JUDGMENTS = ("USELESS", "USEFUL", "UNPARSED")
"""A released judgment, or null."""
CONDITIONS: Mapping[str, str] = MappingProxyType({
    "unaided": "none", "permit": "permit", "budget": "budget", "stated_rule": "stated_rule",
    "call_cost": "call_cost", "decide": "decide", "enforced_rule": "enforced_rule",
    "combo": "combo"})
"""The released condition names and lab's arm for each (a lab arm name is taken as is)."""
IN_RUN_JUDGMENTS = ("decide", "enforced_rule", "combo")
"""Arms whose released judgments were asked in the run; the others' were replayed by
the authors on the recorded trajectories."""
_FIELDS = ("question_id", "regime", "actions", "judgments", "success")


@dataclass(frozen=True)
class ReleasedEpisode:
    """One validated record of a released file.

    Attributes:
        line: its line number in the file (1-based).
        question_id: the question.
        regime: lab's canonical regime name.
        actions: one action per turn (`ACTIONS`).
        judgments: ``judgments[k]`` judges the observation of ``actions[k]``, or None.
        success: the answer was correct (token F1 ≥ 0.6).
        model: the model's name.
        condition: lab's arm name (``unaided`` is ``none``).
        split: the released split (e.g. test300), "" when neither file nor flag says.
    """

    line: int
    question_id: str
    regime: str
    actions: tuple[str, ...]
    judgments: tuple[str | None, ...]
    success: bool
    model: str
    condition: str
    split: str

    @property
    def cell(self) -> tuple[str, str, str]:
        """(model, condition, regime): the lab cell the episode belongs to."""
        return self.model, self.condition, self.regime


@dataclass(frozen=True)
class ReleasedFile:
    """A whole released file, validated, nothing stored.

    Attributes:
        path: the file read.
        sha256: of its bytes as stored on disk (compressed when gzipped).
        episodes: every record, in file order.
    """

    path: Path
    sha256: str
    episodes: tuple[ReleasedEpisode, ...]

    @property
    def splits(self) -> tuple[str, ...]:
        """The splits its records name, in order of appearance."""
        return tuple(dict.fromkeys(e.split for e in self.episodes))


def arm_of(condition: str) -> str | None:
    """Lab's arm for a released condition name (or a lab arm name); None if neither."""
    if condition in CONDITIONS:
        return CONDITIONS[condition]
    return condition if condition in ARMS else None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            yield from enumerate(f, 1)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read: {exc}") from None


class _Line:
    """The error line of one record: '<file>: line <n>: <field>: <what>'."""

    def __init__(self, path: Path, line: int) -> None:
        self.where = f"{path}: line {line}"

    def error(self, field: str, what: str) -> DataError:
        return DataError(f"{self.where}: {field}: {what}")


def _text(record: Mapping[str, Any], field: str, at: _Line, given: str | None) -> str:
    """A string field, or the flag that fills it where the file lacks it."""
    value = record.get(field)
    if value is None:
        if given is None:
            raise at.error(field, f"missing; give --{field} for files without it")
        return given
    if not isinstance(value, str) or not value.strip():
        raise at.error(field, f"must be a non-empty string, got {value!r}")
    if given is not None and value != given:
        raise at.error(field, f"the file says {value!r} but --{field} says {given!r}")
    return value


def _episode(record: Any, at: _Line, line: int, flags: Mapping[str, str | None],
             budget: int) -> ReleasedEpisode:
    if not isinstance(record, dict):
        first = record[0] if isinstance(record, list) and record else None
        kind = other_kind(first, "episodes")
        raise at.error("record", f"must be a JSON object, got {type(record).__name__}"
                       + (f" (its first item is {kind})" if kind else ""))
    for field in _FIELDS:
        if field not in record:
            raise at.error(field, other_kind(record, "episodes") or "missing")
    qid = record["question_id"]
    if not isinstance(qid, str) or not qid.strip():
        raise at.error("question_id", f"must be a non-empty string, got {qid!r}")
    try:
        regime = parse_regime(record["regime"]).name
    except ConfigError as exc:
        raise at.error("regime", str(exc)) from None
    actions, judgments = record["actions"], record["judgments"]
    if not isinstance(actions, list) or not actions:
        raise at.error("actions", f"must be a non-empty list, got {actions!r}")
    for k, action in enumerate(actions):
        if action not in ACTIONS:
            raise at.error("actions", f"actions[{k}] is {action!r}; one of {', '.join(ACTIONS)}")
        if action == "finish" and k != len(actions) - 1:
            raise at.error("actions", f"actions[{k}] is finish but actions follow it")
    if len(actions) > budget:
        raise at.error("actions", f"{len(actions)} actions, above the budget of {budget} "
                                  f"(--budget)")
    if not isinstance(judgments, list) or len(judgments) not in (len(actions),
                                                                  len(actions) - 1):
        got = f"{len(judgments)} judgments" if isinstance(judgments, list) else repr(judgments)
        raise at.error("judgments", f"must be a list of one judgment per action "
                                    f"({len(actions)}, or {len(actions) - 1} without the "
                                    f"last), got {got}")
    for k, judgment in enumerate(judgments):
        if judgment is not None and judgment not in JUDGMENTS:
            raise at.error("judgments", f"judgments[{k}] is {judgment!r}; one of "
                                        f"{', '.join(JUDGMENTS)} or null")
        if judgment is not None and actions[k] == "finish":
            raise at.error("judgments", f"judgments[{k}] judges finish, which returns no "
                                        f"observation; it must be null")
    success = record["success"]
    if not isinstance(success, bool):
        raise at.error("success", f"must be true or false, got {success!r}")
    if success and actions[-1] != "finish":
        raise at.error("success", "true, but the episode never finished (no answer)")
    condition = _text(record, "condition", at, flags.get("condition"))
    arm = arm_of(condition)
    if arm is None:
        raise at.error("condition", f"{condition!r} is no released condition ("
                                    f"{', '.join(CONDITIONS)}) nor lab arm")
    split = record.get("split")
    if split is not None and (not isinstance(split, str) or not split.strip()):
        raise at.error("split", f"must be a non-empty string, got {split!r}")
    return ReleasedEpisode(line=line, question_id=qid, regime=regime, actions=tuple(actions),
                           judgments=tuple(judgments), success=success,
                           model=_text(record, "model", at, flags.get("model")),
                           condition=arm, split=split or "")


def read_released(path: Path | str, model: str | None = None, condition: str | None = None,
                  budget: int = DEFAULT_BUDGET) -> ReleasedFile:
    """Read and validate a whole released file; nothing is stored.

    Args:
        path: a ``.jsonl`` or ``.jsonl.gz`` file (`~` is expanded).
        model: fills ``model`` where the file lacks it (must agree where it has it).
        condition: fills ``condition`` likewise (a released name or a lab arm name).
        budget: the action budget the episodes ran under (no record may exceed it).

    Returns:
        The validated file.

    Raises:
        ConfigError: no such file, or a folder.
        DataError: the first malformed record, as one line naming the file, the line
            and the field; or a file with no record, or one episode twice.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory; give the released .jsonl or .jsonl.gz files")
    flags = {"model": model, "condition": condition}
    episodes: list[ReleasedEpisode] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for line, text in _lines(path):
        if not text.strip():
            continue
        at = _Line(path, line)
        try:
            record = json_text.loads(text)
        except json.JSONDecodeError as exc:
            raise at.error("record", f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        episode = _episode(record, at, line, flags, budget)
        key = (*episode.cell, episode.question_id)
        if key in seen:
            raise at.error("question_id", f"{episode.question_id} in {episode.regime} again "
                                          f"(first on line {seen[key]})")
        seen[key] = line
        episodes.append(episode)
    if not episodes:
        raise DataError(f"{path}: no records")
    return ReleasedFile(path, hashlib.sha256(path.read_bytes()).hexdigest(), tuple(episodes))


def episode_result(episode: ReleasedEpisode, budget: int, started_at: str) -> EpisodeResult:
    """The lab episode a released record stands for (see the module's docstring).

    Args:
        episode: a validated record.
        budget: the action budget it ran under.
        started_at: the time to record as its start and end (the import's).

    Returns:
        An `EpisodeResult` with one step per action and no text.
    """
    regime = parse_regime(episode.regime)
    judged_in_run = episode.condition in IN_RUN_JUDGMENTS
    steps: list[Step] = []
    observations = tool_results = run = 0
    for k, action in enumerate(episode.actions):
        if action == "finish":
            steps.append(Step(t=k + 1, raw="", action=action))
            continue
        observations += 1
        tool = action in TOOLS
        tool_results += tool
        judgment = episode.judgments[k] if k < len(episode.judgments) else None
        run = run + 1 if judgment == "USELESS" else 0
        steps.append(Step(
            t=k + 1, raw="", action=action, obs_index=observations,
            obs_failed=regime.fails(tool_results) if tool else None, judgment=judgment,
            judgment_source=None if judgment is None else
            ("side_channel" if judged_in_run else "released"), streak=run))
    answered = episode.actions[-1] == "finish"
    if answered:
        end = END_FINISH
    elif len(episode.actions) >= budget:
        end = END_BUDGET
    else:
        end = END_FORMAT_FAILURE
    return EpisodeResult(
        question_id=episode.question_id, answered=answered,
        answer_action=len(episode.actions) if answered else None, correct=episode.success,
        em=False, f1=0.0, tool_calls=sum(a in TOOLS for a in episode.actions),
        extra_calls=sum(step.judgment_source == "side_channel" for step in steps),
        format_failures=sum(a == INVALID for a in episode.actions), end_reason=end,
        server=IMPORTED_SOURCE, started_at=started_at, finished_at=started_at, steps=steps)


