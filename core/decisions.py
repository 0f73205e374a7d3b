"""Decision points of one episode: the one definition behind Δ, I, the hazard and the
dissociation (docs/results.md), as a pure function of the episode's steps.

A decision point follows a step that returned an observation (``obs_index`` not
null). It belongs to the next VALID action of the episode: the next step whose
action was parsed and either executed (a tool call) or ``finish``. Format-failure
turns, refused turns and turns the stated-judgment rule discarded are skipped, so
they are never "did not answer" decisions. The decision's ``action`` is that valid
action's ``t`` and its outcome
``answer`` is whether it is ``finish``; an observation with no valid action after
it (the episode ended on the budget, a format failure or refused turns) has no
decision point. After it, ``n_obs`` observations have been seen (``obs_index``).
``final`` marks decisions at the budget's final action.

Runs are counted over observations only (format failures and refused forced turns
neither extend nor reset them):

- ``design_run`` (j): consecutive failed observations (design labels) ending here;
- ``own_run`` (s, side channel): USELESS extends the run, anything else resets it;
- ``stated_run`` (stated judgments, paper A18): "useless" extends, "useful" (which
  includes "partly useful") resets. The run is KNOWN at a decision only if every
  observation since the last reset (the latest "useful"), or since the episode
  start when there was none, has an explicit stated judgment; ``stated_known``
  says so, and where it is 0 ``stated_run`` is −1 (unknown), so such points fall
  out of every group of Δ and never reach a threshold. Worked example, stated
  judgments of observations 1–5: useless, none, useless, useful, useless →
  stated_run 1, −1, −1, 0, 1; useless, none, useless, none → 1, −1, −1, −1;
  useless, useless, useless → 1, 2, 3.

``*_latest`` says the latest observation was judged useless; ``*_earlier`` says an
earlier observation of the episode was judged not useless (side channel: any other
reply; stated: "useful").

Every column is an integer, so lab.db stores the table compactly (`decisions`, one
row per decision point, derived when the episode is stored). The columns that
depend on judgments (JUDGMENT_COLUMNS) are recomputed from the steps whenever an
episode's judgments change (judgment replay): the function is the whole definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

STEP_FIELDS = ("t", "action", "obs_index", "obs_failed", "judgment", "stated_judgment",
               "format_failure", "refused", "discarded")
"""What `episode_decisions` reads of each step, in this order."""
COLUMNS = ("t", "n_obs", "action", "answer", "final", "design_run", "own_run", "own_latest",
           "own_earlier", "stated_run", "stated_known", "stated_latest", "stated_earlier")
"""One decision point, in this order: ``t`` is the step of the observation it follows."""
JUDGMENT_COLUMNS = ("own_run", "own_latest", "own_earlier", "stated_run", "stated_known",
                    "stated_latest", "stated_earlier")
"""The columns that change when the episode's judgments change."""
UNKNOWN = -1
"""``stated_run`` where the stated run is unknown (a silent observation since the reset)."""


def _missing(value: Any) -> bool:
    """None, or a float NaN (a missing cell of a pandas frame)."""
    return value is None or (isinstance(value, float) and value != value)


def _flag(value: Any) -> bool:
    return not _missing(value) and bool(value)


def episode_decisions(steps: Sequence[Sequence[Any]], budget: int) -> list[tuple[int, ...]]:
    """The decision points of one episode.

    Args:
        steps: the episode's steps, each a sequence of the STEP_FIELDS values (any
            order of t; a discarded turn comes before the re-ask sharing its t;
            missing values as None or NaN).
        budget: the episode's action budget (for ``final``).

    Returns:
        One tuple of COLUMNS values (all integers) per decision point, in step order.
    """
    rows = sorted(steps, key=lambda s: (s[0], not _flag(s[8])))
    n = len(rows)
    following: list[int | None] = [None] * n
    after: int | None = None
    for i in range(n - 1, -1, -1):
        following[i] = after
        _, action, _, _, _, _, format_failure, refused, discarded = rows[i]
        if isinstance(action, str) and not (_flag(format_failure) or _flag(refused)
                                            or _flag(discarded)):
            after = i
    design = own = stated = silent = 0
    own_earlier = stated_earlier = False
    out: list[tuple[int, ...]] = []
    for i, (t, _, obs_index, obs_failed, judgment, stated_judgment, *_) in enumerate(rows):
        if _missing(obs_index):
            continue
        useless = judgment == "USELESS"
        said_useless, said_useful = stated_judgment == "useless", stated_judgment == "useful"
        design = design + 1 if _flag(obs_failed) else 0
        own = own + 1 if useless else 0
        if said_useful:
            stated = silent = 0
        elif said_useless:
            stated += 1
        else:
            silent += 1
        nxt = following[i]
        if nxt is not None:
            action_t = int(rows[nxt][0])
            out.append((int(t), int(obs_index), action_t, int(rows[nxt][1] == "finish"),
                        int(action_t >= budget), design, own, int(useless), int(own_earlier),
                        stated if silent == 0 else UNKNOWN, int(silent == 0), int(said_useless),
                        int(stated_earlier)))
        own_earlier = own_earlier or not useless
        stated_earlier = stated_earlier or said_useful
    return out
