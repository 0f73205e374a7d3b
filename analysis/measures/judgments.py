"""The judgments table from per-episode counts (docs/results.md).

Every judgment rate is k of n over the observation steps of a group's error-free
episodes, so the table needs only each episode's counts (`core.store.judgment_counts.
COUNTS`): SQLite sums them per episode (`judgment_counts`), or, for frames built in
memory, `observation_counts` derives the same counts from the observation steps. The
groups' rates are sums of their episodes' counts; the dissociation count comes from
the decision table, one pass for all groups. The definitions are those of
`tests.oracles.measures.judgment_rates` (one arm) and `analysis.measures.dissociation`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping
from analysis.base.rows import Row, Table, make_row
from analysis.measures.cost import JUDGMENT_MEASURES, JudgmentRates, Rate
from analysis.measures.decisions import REPLAYED, judgment_columns, judgment_sources
from analysis.measures.dissociation import (
    DISSOCIATION_REGIME,
    DISSOCIATION_RUN,
    group_dissociations,
)
from analysis.measures.frames import Frames
from analysis.measures.results import TableInput, TablePart
from analysis.stats.blas import worker_threads
from analysis.stats.codes import in_rows
from core.store.judgment_counts import COUNTS, JudgmentCounts, judgment_counts
from core.store.packs import run_positions

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
          ("answered after 5 own (stated) useless: in persistent, among questions whose own "
           "side-channel (stated) useless run reached 5 in some episode, the share that "
           "answered at any later action, the final one included (k/n questions in detail; "
           "a question's seeds are averaged, so k may be fractional; a stated run is "
           "unknown after a silent observation)."),
          ("judgments (side-channel measures): each n split by where its judgments came "
           "from: side_channel (asked in-run) or replay (lab replay judgments); for "
           "'answered after 5 own useless', the questions whose run reached 5, by the "
           "judgment that made it reach 5 (a question reached by both, runs pooled, "
           "counts under both)."))


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
    return start_frame_counts(frames, parts)()


def start_frame_counts(frames: Frames, parts: int | None = None
                       ) -> Callable[[], JudgmentCounts]:
    """`frame_counts` started: SQLite counts on its threads while the caller goes on (the
    judgments table builds the decision frame meanwhile); the function returned waits
    for the counts and returns them. Frames built in memory are counted when it is called.

    Args:
        frames: loaded frames.
        parts: id ranges counted in parallel (default: one per CPU core, at most 4).

    Returns:
        A function that returns `frame_counts(frames, parts)`.
    """
    src = frames.source
    if src is None:
        return lambda: observation_counts(frames.steps)
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

    pool = ThreadPoolExecutor(len(ranges))
    futures = [pool.submit(count, r) for r in ranges]
    pool.shutdown(wait=False)  # its threads end once the ranges are counted
    return lambda: _joined([f.result() for f in futures])


def _joined(done: list[JudgmentCounts]) -> JudgmentCounts:
    """The counts of consecutive id ranges as one JudgmentCounts."""
    replayed = None
    if any(d.replayed is not None for d in done):
        replayed = np.concatenate([np.zeros_like(d.counts) if d.replayed is None else d.replayed
                                   for d in done])
    return JudgmentCounts(np.concatenate([d.episode_ids for d in done]),
                          np.concatenate([d.counts for d in done]), replayed)


def observation_counts(steps: pd.DataFrame) -> JudgmentCounts:
    """The COUNTS of each episode from a step frame (the in-memory twin of SQL's).

    Without an ``obs_ref`` column (hand-built frames) no page is known, so the
    gold and distractor counts are 0.

    Args:
        steps: steps (or only the observation steps) of error-free episodes, in
            episode, t order (a discarded turn before its re-ask).

    Returns:
        The JudgmentCounts of the episodes that have an observation step (with the
        replayed ones where ``judgment_source`` says "replay").
    """
    obs = steps.loc[steps["obs_index"].notna()]
    ids, counts = _observation_counts(obs, obs["judgment"])
    replayed = None
    if "judgment_source" in obs and (obs["judgment_source"] == "replay").any():
        _, replayed = _observation_counts(obs, obs["judgment"].where(
            obs["judgment_source"] == "replay"))
    return JudgmentCounts(ids, counts, replayed)


def _observation_counts(obs: pd.DataFrame, judgment: pd.Series
                        ) -> tuple[np.ndarray, np.ndarray]:
    """`observation_counts` of observation steps with the given judgments: (episode ids,
    counts)."""
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
    return ids, counts


def _episode_groups(episodes: pd.DataFrame, codes: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The group of each episode id (−1: not among `episodes`)."""
    known = episodes["episode_id"].to_numpy(dtype=np.int64)
    if not len(known):
        return np.full(len(ids), -1, dtype=np.int64)
    if (known[1:] > known[:-1]).all():  # the keys' order (by id): no sort, and a decision
        # frame's ids in runs of one episode are searched once per run
        found = np.minimum(run_positions(known, ids), len(known) - 1)
    else:
        order = np.argsort(known, kind="stable")
        found = order[np.minimum(np.searchsorted(known, ids, sorter=order), len(known) - 1)]
    return np.where(known[found] == ids, codes[found], -1)


def _dissociations(decisions: pd.DataFrame, episodes: pd.DataFrame, codes: np.ndarray,
                   groups: int) -> dict[str, list[Rate]]:
    """`analysis.measures.dissociation.group_dissociations` of every group at once (k =
    DISSOCIATION_RUN in DISSOCIATION_REGIME): per judgment source, the Rate (questions
    answered, seeds averaged, of questions that reached the run) of each group."""
    rows = _episode_groups(episodes, codes, decisions["episode_id"].to_numpy(dtype=np.int64))
    return {j: [Rate(d.answered, d.questions)
                for d in group_dissociations(decisions, rows, groups, j)]
            for j in ("side_channel", "stated")}


def _dissociation_sources(decisions: pd.DataFrame, episodes: pd.DataFrame,
                          codes: np.ndarray, groups: int) -> list[str]:
    """Each group's ``judgments`` text of the side-channel dissociation, in its unit
    (questions): the questions in DISSOCIATION_REGIME whose own useless run reached
    DISSOCIATION_RUN, by where the judgment that made an episode reach the run (at its
    first such decision) came from. A question whose episodes reached it by both (runs
    pooled) counts under both, so the two counts may add up to more than n."""
    rows = (in_rows(decisions["regime"], [DISSOCIATION_REGIME])
            & (decisions[judgment_columns("side_channel")[0]].to_numpy() >= DISSOCIATION_RUN))
    episode, first = np.unique(decisions["episode_id"].to_numpy(dtype=np.int64)[rows],
                               return_index=True)  # rows are in episode, step order
    replayed = (decisions[REPLAYED].to_numpy(dtype=bool)[rows][first] if REPLAYED in decisions
                else np.zeros(len(episode), dtype=bool))
    question = decisions["question_id"].to_numpy()[rows][first].astype(str)
    group = _episode_groups(episodes, codes, episode)
    keep = group >= 0
    out = []
    for g in range(groups):
        mine = keep & (group == g)
        side = len(set(question[mine & ~replayed]))
        replay = len(set(question[mine & replayed]))
        out.append(judgment_sources(side, replay))
    return out


def _group_rates(counting: JudgmentCounts | Callable[[], JudgmentCounts],
                 decisions: pd.DataFrame, episodes: pd.DataFrame,
                 grouping: Grouping | None = None
                 ) -> list[tuple[ArmKey, JudgmentRates, dict[str, str]]]:
    """Judgment rates and dissociation counts of every group and regime family, each with
    the ``judgments`` text of its side-channel measures (by JudgmentRates attribute; the
    n of each split by where its judgments came from). Counts still being made
    (`start_frame_counts`) are waited for once the dissociations are counted."""
    keys, codes = (grouping or Grouping()).codes(episodes, families=True)
    if not keys:
        return []
    dissociated = _dissociations(decisions, episodes, codes, len(keys))
    dissociation_sources = _dissociation_sources(decisions, episodes, codes, len(keys))
    counts = counting() if callable(counting) else counting
    group = _episode_groups(episodes, codes, np.asarray(counts.episode_ids, dtype=np.int64))
    keep = group >= 0

    def summed(values: np.ndarray | None) -> np.ndarray:
        if values is None:
            return np.zeros((len(keys), len(COUNTS)), dtype=np.int64)
        # a bincount per count: whole numbers far below 2**53, so the float sums are
        # exact (np.add.at over the rows took twice as long)
        at, kept = group[keep], np.asarray(values)[keep]
        return np.stack([np.bincount(at, weights=kept[:, j], minlength=len(keys))
                         for j in range(len(COUNTS))], axis=1).astype(np.int64)

    sums, replayed = summed(counts.counts), summed(counts.replayed)
    out = []
    for i, key in enumerate(keys):
        c = dict(zip(COUNTS, (int(v) for v in sums[i])))
        r = dict(zip(COUNTS, (int(v) for v in replayed[i])))
        rates = {field: Rate(c[k], c[n]) for field, k, n in _RATES}
        sources = {field: judgment_sources(c[n] - r[n], r[n]) for field, _, n in _RATES
                   if not field.startswith("stated")}
        sources["dissociation"] = dissociation_sources[i]
        out.append((key, JudgmentRates(
            **rates, dissociation=dissociated["side_channel"][i],
            stated_dissociation=dissociated["stated"][i]), sources))
    return out


def judgments_table(counts: JudgmentCounts | Callable[[], JudgmentCounts],
                    decisions: pd.DataFrame, episodes: pd.DataFrame,
                    grouping: Grouping | None = None) -> Table:
    """Judgment rates and the dissociation count of every group and regime family.

    Signature: ``judgments_table(frame_counts(frames), frames.decisions,
    frames.episode_keys, grouping)``.

    Args:
        counts: the episodes' judgment counts (`frame_counts`), or the function
            `start_frame_counts` returned (waited for once the dissociations are counted).
        decisions: the decision table.
        episodes: error-free episodes (they form the groups; their key columns,
            `Frames.episode_keys`, suffice).
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "judgments" (estimate = share, n = judgments or episodes).
    """
    grouping = grouping or Grouping()
    rows: list[Row] = []
    for arm, rates, sources in _group_rates(counts, decisions, episodes, grouping):
        for attr, label in JUDGMENT_MEASURES:
            r: Rate = getattr(rates, attr)
            dissociation = attr.endswith("dissociation")
            unit = "questions" if dissociation else "judgments"
            rows.append(replace(make_row(arm, label, "", r.share, r.n, unit, f"{r.k:g}/{r.n}",
                                         regimes=_read_regimes(arm, dissociation)),
                                judgments=sources.get(attr, "")))
    return Table("judgments", "Judgment rates and dissociation", tuple(rows), _NOTES, "wide",
                 (), (), tuple((label, short) for (_, label), short in zip(JUDGMENT_MEASURES,
                                                                           _SHORT)),
                 grouping.pooled)


def _read_regimes(arm: ArmKey, dissociation: bool) -> tuple[str, ...] | None:
    """The regimes a judgments row reads: a dissociation row only DISSOCIATION_REGIME
    (when the group ran it; else, with no number to show, the group's), every other
    row all of the group's (None)."""
    if dissociation and DISSOCIATION_REGIME in arm.regimes:
        return (DISSOCIATION_REGIME,)
    return None


def judgments_results(inp: TableInput) -> TablePart:
    """The "judgments" results table (`analysis.tables.registry`)."""
    counts = start_frame_counts(inp.frames)  # SQLite counts while the decision frame is built
    return TablePart((judgments_table(counts, inp.decisions, inp.episodes, inp.grouping),))
