"""The judgments table from per-episode counts (SPEC §13.5, issue 14).

Every judgment rate is k of n over the observation steps of a group's error-free
episodes, so the table needs only each episode's counts (`core.store.judgment_counts.
COUNTS`): SQLite sums them per episode (`judgment_counts`), or, for frames built in
memory, `observation_counts` derives the same counts from the observation steps. The
groups' rates are sums of their episodes' counts; the dissociation count comes from
the decision table, one pass for all groups. The definitions are those of
`analysis.cost.judgment_rates` (one arm) and `analysis.dissociation`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from analysis.arms import ArmKey, Grouping
from analysis.blas import worker_threads
from analysis.cost import JUDGMENT_MEASURES, JudgmentRates, Rate
from analysis.decisions import judgment_columns
from analysis.dissociation import DISSOCIATION_REGIME, DISSOCIATION_RUN
from analysis.frames import Frames
from analysis.rows import Row, Table, make_row
from core.store.judgment_counts import COUNTS, JudgmentCounts, judgment_counts

_SHORT = ("USELESS|fail", "USELESS|real", "USEFUL|gold1", "USEFUL|gold+", "USEFUL|distr1",
          "USEFUL|distr+", "stated useless|fail", "ans@5 own", "ans@5 stated")
"""Short column names of the wide table, in JUDGMENT_MEASURES order."""
_RATES = (("useless_on_failed", "useless_failed", "judged_failed"),
          ("useless_on_real", "useless_real", "judged_real"),
          ("useful_gold_first", "useful_gold_first", "gold_first"),
          ("useful_gold_repeat", "useful_gold_repeat", "gold_repeat"),
          ("useful_distractor_first", "useful_distractor_first", "distractor_first"),
          ("useful_distractor_repeat", "useful_distractor_repeat", "distractor_repeat"),
          ("stated_useless_on_failed", "stated_useless_failed", "stated_failed"))
"""(JudgmentRates field, k counter, n counter) of the rates counted on observations."""
_NOTES = (("Side-channel judgments on observations (real: not failed by design; gold/"
           "distractor: real search results, first or repeated page in the episode)."),
          ("answered after 5 own (stated) useless: in persistent, among episodes whose own "
           "side-channel (stated) useless run reached 5, the share that answered at any "
           "later action, the final one included (k/n in detail; each seed's episode of a "
           "question counts once; a stated run is unknown after a silent observation)."))


def frame_counts(frames: Frames, parts: int | None = None) -> JudgmentCounts:
    """The judgment counts of the frames' error-free episodes.

    Frames read from lab.db are counted by SQLite (no step is read into memory), in
    `parts` ranges of episode ids at once, each on its own connection and thread
    (SQLite runs them in parallel); frames built in memory are counted from their
    observation steps.

    Args:
        frames: loaded frames.
        parts: id ranges counted in parallel (default: one per CPU core, at most 4).

    Returns:
        The JudgmentCounts, ordered by episode id.
    """
    src = frames.source
    if src is None:
        return observation_counts(frames.steps)
    parts = parts or worker_threads()
    ids = np.sort(frames.episode_keys["episode_id"].to_numpy(dtype=np.int64))
    cuts = [int(ids[len(ids) * i // parts]) for i in range(1, parts) if len(ids)]
    ranges = list(zip([None, *cuts], [*cuts, src.fingerprint.max_id]))

    def count(bounds: tuple[int | None, int]) -> JudgmentCounts:
        db = src.connect()
        try:
            return judgment_counts(db, src.selection, bounds[1], bounds[0])
        finally:
            db.conn.close()

    with ThreadPoolExecutor(len(ranges)) as pool:
        done = list(pool.map(count, ranges))
    return JudgmentCounts(np.concatenate([d.episode_ids for d in done]),
                          np.concatenate([d.counts for d in done]))


def observation_counts(steps: pd.DataFrame) -> JudgmentCounts:
    """The COUNTS of each episode from a step frame (the in-memory twin of SQL's).

    Without an ``obs_ref`` column (hand-built frames) no page is known, so the
    gold and distractor counts are 0.

    Args:
        steps: steps (or only the observation steps) of error-free episodes, in
            episode, t order (a discarded turn before its re-ask).

    Returns:
        The JudgmentCounts of the episodes that have an observation step.
    """
    obs = steps.loc[steps["obs_index"].notna()]
    judgment = obs["judgment"]
    judged = judgment.notna().to_numpy()
    useless = (judgment == "USELESS").to_numpy()
    useful = (judgment == "USEFUL").to_numpy()
    failed = obs["obs_failed"].fillna(0).astype(bool).to_numpy()
    if "obs_ref" in obs:
        ref = obs["obs_ref"]
        page = judged & ~failed & (obs["action"] == "search").to_numpy()
        repeat = ref.notna().to_numpy() & obs.assign(_r=ref).duplicated(
            ["episode_id", "_r"]).to_numpy()
    else:
        page = repeat = np.zeros(len(obs), dtype=bool)
    stated = obs["stated_judgment"]
    stated_failed = stated.notna().to_numpy() & failed
    masks = {
        "judged_failed": judged & failed, "useless_failed": judged & failed & useless,
        "judged_real": judged & ~failed, "useless_real": judged & ~failed & useless,
        "stated_failed": stated_failed,
        "stated_useless_failed": stated_failed & (stated == "useless").to_numpy(),
    }
    for source in ("gold", "distractor"):
        shown = page & (obs["obs_source"] == source).to_numpy()
        for when, mask in (("first", shown & ~repeat), ("repeat", shown & repeat)):
            masks[f"{source}_{when}"] = mask
            masks[f"useful_{source}_{when}"] = mask & useful
    ids, inverse = np.unique(obs["episode_id"].to_numpy(dtype=np.int64), return_inverse=True)
    counts = np.zeros((len(ids), len(COUNTS)), dtype=np.int64)
    for j, name in enumerate(COUNTS):
        counts[:, j] = np.bincount(inverse, weights=masks[name], minlength=len(ids))
    return JudgmentCounts(ids, counts)


def _episode_groups(episodes: pd.DataFrame, codes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The group of each episode id (−1: not among `episodes`)."""
    known = episodes["episode_id"].to_numpy(dtype=np.int64)
    if not len(known):
        return np.full(len(ids), -1, dtype=np.int64)
    order = np.argsort(known, kind="stable")
    found = order[np.minimum(np.searchsorted(known, ids, sorter=order), len(known) - 1)]
    return np.where(known[found] == ids, codes[found], -1)


def _dissociations(decisions: pd.DataFrame, episodes: pd.DataFrame, codes: np.ndarray,
                   groups: int) -> dict[str, list[Rate]]:
    """`analysis.dissociation.dissociation` of every group at once (k = DISSOCIATION_RUN
    in DISSOCIATION_REGIME): per judgment source, the Rate (answered of reached) of
    each group."""
    rows = (decisions["regime"] == DISSOCIATION_REGIME).to_numpy()

    def column(name: str) -> np.ndarray:
        return decisions[name].to_numpy()[rows]

    action = column("action").astype(np.int64)
    answer = column("answer").astype(bool)
    episode, inverse = np.unique(column("episode_id").astype(np.int64), return_inverse=True)
    group = _episode_groups(episodes, codes, episode)
    never = np.iinfo(np.int64).max
    out: dict[str, list[Rate]] = {}
    for judgments in ("side_channel", "stated"):
        reached = column(judgment_columns(judgments)[0]) >= DISSOCIATION_RUN
        first = np.full(len(episode), never, dtype=np.int64)
        np.minimum.at(first, inverse[reached], action[reached])
        answered = np.zeros(len(episode), dtype=bool)
        answered[inverse[answer & (action >= first[inverse])]] = True
        keep = (group >= 0) & (first < never)
        k = np.bincount(group[keep & answered], minlength=groups)
        n = np.bincount(group[keep], minlength=groups)
        out[judgments] = [Rate(int(a), int(b)) for a, b in zip(k, n)]
    return out


def group_rates(counts: JudgmentCounts, decisions: pd.DataFrame, episodes: pd.DataFrame,
                grouping: Grouping | None = None) -> list[tuple[ArmKey, JudgmentRates]]:
    """Judgment rates and dissociation counts of every group and regime family.

    Args:
        counts: the episodes' judgment counts (`frame_counts`).
        decisions: the decision table.
        episodes: error-free episodes (they form the groups).
        grouping: what rows pool and the errored episodes they count.

    Returns:
        (group, JudgmentRates) in table order; the same rates as
        `analysis.cost.judgment_rates` of each group's steps and decisions.
    """
    keys, codes = (grouping or Grouping()).codes(episodes, families=True)
    if not keys:
        return []
    group = _episode_groups(episodes, codes, np.asarray(counts.episode_ids, dtype=np.int64))
    keep = group >= 0
    sums = np.zeros((len(keys), len(COUNTS)), dtype=np.int64)
    np.add.at(sums, group[keep], np.asarray(counts.counts)[keep])
    dissociated = _dissociations(decisions, episodes, codes, len(keys))
    out = []
    for i, key in enumerate(keys):
        c = dict(zip(COUNTS, (int(v) for v in sums[i])))
        rates = {field: Rate(c[k], c[n]) for field, k, n in _RATES}
        out.append((key, JudgmentRates(
            **rates, dissociation=dissociated["side_channel"][i],
            stated_dissociation=dissociated["stated"][i])))
    return out


def judgments_table(counts: JudgmentCounts, decisions: pd.DataFrame, episodes: pd.DataFrame,
                    grouping: Grouping | None = None) -> Table:
    """Judgment rates and the dissociation count of every group and regime family.

    Signature: ``judgments_table(frame_counts(frames), frames.decisions,
    frames.episode_keys, grouping)``.

    Args:
        counts: the episodes' judgment counts (`frame_counts`).
        decisions: the decision table.
        episodes: error-free episodes (they form the groups; their key columns,
            `Frames.episode_keys`, suffice).
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "judgments" (estimate = share, n = judgments or episodes).
    """
    grouping = grouping or Grouping()
    rows: list[Row] = []
    for arm, rates in group_rates(counts, decisions, episodes, grouping):
        for attr, label in JUDGMENT_MEASURES:
            r: Rate = getattr(rates, attr)
            unit = "episodes" if attr.endswith("dissociation") else "judgments"
            rows.append(make_row(arm, label, "", r.share, r.n, unit, f"{r.k}/{r.n}"))
    return Table("judgments", "Judgment rates and dissociation", tuple(rows), _NOTES, "wide",
                 (), (), tuple((label, short) for (_, label), short in zip(JUDGMENT_MEASURES,
                                                                           _SHORT)),
                 grouping.pooled)
